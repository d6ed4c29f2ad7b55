"""`Network`: a lab you build, use and always tear down, in Mininet's spirit.

    with Network(topo) as net:            # or Network("portfolio.yaml")
        code, out = net["h1"].run("ping -c 3 h9")
        r = net.perf("h1", "h4", seconds=5)  # PerfResult: r.received_bps, r.retransmits
        p = net.ping("h1", "h9", count=10)   # PingResult: p.rtts_ms, p.loss

`Network.attach(prefix)` opens a lab that `netrig up` left running (what the CLI uses).

Routed labs (routers running OSPF or BGP through FRR): `net.converge()` waits until
every router routes every prefix it should and every host reaches every host;
`net.stop_routing("r2")` / `net.start_routing("r2")` stop and start a router's
daemons (stopping zebra withdraws every route its protocols installed: the router then
forwards on its connected subnets only); `net.link_carrier("r1-r2", False)` takes both
ends of a link down, as a pulled cable does (the protocols see the carrier go).
"""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netrig._bins import binary
from netrig.errors import NetrigError
from netrig.lab import build as builder
from netrig.lab import frr
from netrig.lab.converge import converge
from netrig.lab.state import LabError, LabState, alive
from netrig.link import spec as linkspec
from netrig.link import userspace
from netrig.topo.model import DIRS, Link, LinkSpec, Topology, TopologyError
from netrig.topo.plan import Plan, make_plan


class RunError(NetrigError):
    pass


@dataclass
class CmdResult:
    code: int
    stdout: str
    stderr: str

    def __iter__(self):  # `code, out = node.run(...)`
        return iter((self.code, self.stdout))


@dataclass
class PerfResult:
    """A netrig-perf run: its JSON, and the figures people ask for first."""

    json: dict[str, Any]

    @property
    def end(self) -> dict[str, Any]:
        return self.json.get("end", {})

    @property
    def udp(self) -> bool:
        return self.json.get("start", {}).get("test_start", {}).get("protocol") == "UDP"

    @property
    def received_bps(self) -> float:
        key = "sum" if self.udp else "sum_received"
        return float(self.end.get(key, {}).get("bits_per_second", 0.0))

    @property
    def sent_bps(self) -> float:
        key = "sum" if self.udp else "sum_sent"
        return float(self.end.get(key, {}).get("bits_per_second", 0.0))

    @property
    def retransmits(self) -> int:
        return int(self.end.get("sum_sent", {}).get("retransmits", 0) or 0)

    @property
    def lost_percent(self) -> float:
        return float(self.end.get("sum", {}).get("lost_percent", 0.0))

    @property
    def jitter_ms(self) -> float:
        return float(self.end.get("sum", {}).get("jitter_ms", 0.0))


_RTT = re.compile(r"time=([0-9.]+) ms")
_REPLY = re.compile(r"icmp_seq=(\d+)\b[^\n]*?time=([0-9.]+) ms")


@dataclass
class PingResult:
    sent: int
    rtts_ms: list[float] = field(default_factory=list)

    @classmethod
    def parse(cls, output: str, sent: int, warmup: int = 0) -> PingResult:
        """The replies in ping's output, for sent echo requests; the replies to the first
        `warmup` requests (icmp_seq 1 to warmup: they paid for ARP) are not counted."""
        if not warmup:
            return cls(sent, [float(x) for x in _RTT.findall(output)])
        return cls(sent, [float(t) for seq, t in _REPLY.findall(output) if int(seq) > warmup])

    @property
    def received(self) -> int:
        return len(self.rtts_ms)

    @property
    def loss(self) -> float:
        return 1 - self.received / self.sent if self.sent else 0.0

    @property
    def median_ms(self) -> float:
        s = sorted(self.rtts_ms)
        if not s:
            return float("nan")
        n = len(s)
        return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


class Node:
    def __init__(self, net: Network, name: str, ns: str) -> None:
        self.net, self.name, self.ns = net, name, ns

    def _argv(self, cmd: str | list[str]) -> list[str]:
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        return ["ip", "netns", "exec", self.ns, *argv]

    def run(self, cmd: str | list[str], timeout: float = 60) -> CmdResult:
        """Runs cmd (a shell line, or argv) in the node; waits at most timeout."""
        try:
            p = subprocess.run(self._argv(cmd), capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise RunError(f"{self.name}: '{cmd}' did not finish in {timeout:g} s") from e
        return CmdResult(p.returncode, p.stdout, p.stderr)

    def popen(self, cmd: str | list[str], **kw: Any) -> subprocess.Popen:
        return subprocess.Popen(self._argv(cmd), **kw)

    def __repr__(self) -> str:
        return f"<Node {self.name} ns={self.ns}>"


def _tcp_listening(pid: int, port: int) -> bool:
    want = f":{port:04X}"
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        if any(f.split()[1].endswith(want) and f.split()[3] == "0A" for f in lines):
            return True
    return False


class Network:
    def __init__(self, topo: Topology | str | Path, prefix: str | None = None, progress=None,
                 seed: int = 1, topology_text: str | None = None) -> None:
        """`topology_text`: with a Topology read from a file, the text it was read from
        (recorded in the lab's state, so later commands can check the file is the same)."""
        if not isinstance(topo, Topology):
            from netrig.lab.state import read_topology
            from netrig.topo.load import loads

            _, topology_text, _ = read_topology(topo)
            topo = loads(topology_text, source=str(topo))
        self.topology_text = topology_text
        self.topo = topo.check()
        self.prefix = prefix or topo.lab_prefix
        self.progress = progress
        self.seed = seed
        self.routes_in_s: float | None = None  # set by converge: every route in the kernel
        self.plan: Plan = make_plan(topo)
        self.state: LabState | None = None
        self._port = 5201

    # Life.
    def start(self) -> Network:
        self.state = builder.build(self.plan, self.prefix, self.progress, self.seed, self.topology_text)
        return self

    def stop(self) -> list[str]:
        if self.state is None:
            return []
        errors = builder.teardown(self.state)
        self.state = None
        return errors

    def __enter__(self) -> Network:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def detach(self) -> LabState:
        """Leaves the lab running (for `netrig up`): nobody owns it until `down`."""
        st = self._lab()
        st.owner_pid = 0
        st.save()
        self.state = None
        return st

    @classmethod
    def attach(cls, prefix: str) -> Network:
        st = LabState.load(prefix)
        net = cls(builder.topology_of(st), prefix=prefix)
        net.state = st
        return net

    def _lab(self) -> LabState:
        if self.state is None:
            raise LabError("the network is not up")
        return self.state

    # Use.
    def __getitem__(self, name: str) -> Node:
        if name not in self.topo.nodes:
            raise TopologyError([f"no node named '{name}'"])
        return Node(self, name, self._lab().node_ns[name])

    def addr(self, name: str) -> str:
        return str(self.plan.addr(name))

    def hosts(self) -> list[str]:
        return [n for n, k in self.topo.nodes.items() if k == "host"]

    def ping(self, src: str, dst: str, count: int = 5, interval: float = 0.2,
             size: int | None = None, timeout: float = 2.0, warmup: int = 0) -> PingResult:
        """`count` echo requests from src to dst, after `warmup` more that are sent but
        not counted (the first pays for ARP: on a fresh lab, a round trip more)."""
        argv = ["ping", "-n", "-c", str(count + warmup), "-i", str(interval), "-W", str(timeout)]
        if size is not None:
            argv += ["-s", str(size)]
        r = self[src].run([*argv, self.addr(dst)], timeout=(count + warmup) * interval + timeout + 10)
        return PingResult.parse(r.stdout, count, warmup)

    def pingall(self, count: int = 1) -> dict[tuple[str, str], PingResult]:
        """Every host pings every other `count` times, after one echo request not
        counted: the RTTs are the path's, not ARP's (a lab just up has resolved no
        neighbour, and its first ping waits a round trip more for ARP)."""
        hosts = self.hosts()
        pairs = [(a, b) for a in hosts for b in hosts if a != b]
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = pool.map(lambda p: self.ping(p[0], p[1], count=count, interval=0.2, timeout=2,
                                                   warmup=1), pairs)
            return dict(zip(pairs, results))

    def perf(self, src: str, dst: str, *args: str, seconds: float = 5, timeout: float | None = None) -> PerfResult:
        """netrig-perf from src to a one-off server on dst; args are netrig-perf's own
        options (`-u`, `-b 10M`, `-P 2`, `-C cubic`, `-R`, ...)."""
        self._port += 1
        port = self._port
        exe = str(binary("netrig-perf"))
        server = self[dst].popen([exe, "-s", "-1", "-p", str(port)], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 5
            while not _tcp_listening(server.pid, port):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RunError(f"netrig-perf server on {dst} did not start: "
                                   f"{server.stderr.read() if server.poll() is not None else 'timeout'}")
                time.sleep(0.01)
            argv = [exe, "-c", self.addr(dst), "-p", str(port), "-J", "-t", f"{seconds:g}", *args]
            r = self[src].run(argv, timeout=timeout or seconds + 30)
            try:
                doc = json.loads(r.stdout)
            except json.JSONDecodeError:
                raise RunError(f"netrig-perf {src}->{dst} failed: {(r.stderr or r.stdout)[-500:]}") from None
            if r.code != 0 or "error" in doc:
                raise RunError(f"netrig-perf {src}->{dst}: {doc.get('error') or r.stderr[-500:]}")
            return PerfResult(doc)
        finally:
            if server.poll() is None:
                server.kill()
            server.wait(timeout=5)

    # Links.
    def link_stats(self) -> dict[str, Any]:
        st = self._lab()
        if not st.control:
            return {}
        if not alive(st.pids.get("netrig-link", 0), "netrig-link"):
            raise LabError(f"lab '{st.prefix}': its link emulator (netrig-link pid "
                           f"{st.pids.get('netrig-link')}) is not running; its links pass nothing")
        return userspace.request(st.control, {"cmd": "stats"})

    def set_link(self, a: str, b: str | None = None, *, dir: str | None = None,
                 **params: Any) -> dict[str, Any]:
        """Changes a link's shaping live: set_link("r2", "r3", delay="50ms"), in both
        directions (overriding a direction's own value), or in one with
        dir="a_to_b"/"b_to_a". Each direction's whole new shaping replaces the old: a
        key set to its neutral value (loss="0%", delay="0ms", aqm="droptail") turns
        that stage off, and any discipline can follow any other. Both directions are
        checked (here, and again by netrig-link) before either changes."""
        link = self.topo.link_named(a, b)
        st = self._lab()
        if st.backend != "userspace" or not st.control:
            raise LabError(f"link {link.name}: live link changes need the user-space backend "
                           "(netrig-link); this lab uses backend: kernel")
        entry = next((x for x in st.plan.get("links", []) if x["name"] == link.name), None)
        if entry is None or not entry["emulated"]:
            raise LabError(f"link {link.name} is a plain veth pair (it was built unshaped), so "
                           "nothing can shape it live: add `emulated: true` to it in the topology "
                           "(netrig-link then carries it, unshaped until you change it) and bring "
                           "the lab up again")
        # The link as it runs (as built, or as the last change left it), with the change.
        running = st.link_changes.get(link.name) or {}
        if "a" not in running:  # a lab of an older netrig kept only the keys it changed
            running = {**link.spec.model_dump(exclude_unset=True), **running}
        changed = Link(LinkSpec.model_validate(running), link.defaults, link.base).changed(params, dir)
        specs = {name: changed.direction(d).spec() for d, name in enumerate(DIRS)}
        answer = userspace.request(st.control, {"cmd": "set", "link": link.name,
                                                "version": linkspec.VERSION, "specs": specs})
        self.topo.links[self.topo.links.index(link)] = changed
        for d, name in enumerate(DIRS):
            entry[name] = changed.shaping(d).text()
        st.link_changes[link.name] = changed.spec.model_dump(exclude_unset=True)
        st.save()
        return answer


    # Routing (FRR).
    def _router(self, router: str) -> str:
        if router not in self.topo.nodes:
            raise TopologyError([f"no node named '{router}'"])
        if not self.topo.routing_of(router).dynamic:
            raise LabError(f"{router} runs no FRR (it is a {self.topo.nodes[router]} "
                           "without ospf:, bgp: or frr:)")
        return router

    def kernel_routes(self, router: str) -> set[ipaddress.IPv4Network]:
        """The destinations of a node's kernel routes (main table; an ECMP route once)."""
        return kernel_routes(self._lab().node_ns[router])

    def converge(self, timeout: float | None = None, poll_s: float = 0.2) -> float:
        """Waits until every FRR router has a kernel route to every prefix it should
        (`frr.expected_routes`), its OSPF neighbours are Full (`frr.expected_adjacencies`),
        its BGP sessions are Established (`frr.expected_bgp_peers`: a route learnt over
        the first session up is not yet the best one) and no routing table changes for a
        moment, then until every host reaches every host (one ping a pair, retried);
        returns the seconds that took. Route changes are watched, not polled
        (netrig.lab.converge); `poll_s` is how often a router whose protocols were not
        yet up is asked again, and failing pings are retried. LabError after `timeout`
        (default `frr.default_wait_s`: enough for the topology's timers), naming which
        router lacks which prefixes and which hosts do not reach each other.
        `routes_in_s` is then how long after the call every expected route was first in
        the kernel (the rest is the protocols settling and the pings)."""
        return converge(self, timeout, poll_s)

    def stop_routing(self, router: str) -> None:
        """Stops the router's FRR daemons (protocols, then zebra, which withdraws every
        route they installed: the router forwards on its connected subnets only)."""
        st = self._lab()
        procs = st.frr.pop(self._router(router), None)
        if procs:
            frr.stop(procs)
        st.save()

    def start_routing(self, router: str) -> None:
        """Starts the router's FRR daemons again (with the configuration it was built
        with); LabError if they run."""
        st = self._lab()
        self._router(router)
        now = st.frr.get(router) or {}
        if any(frr.running(p, s) for p, s in now.values()):
            raise LabError(f"{router}: FRR runs already (stop_routing first)")
        ns = st.node_ns[router]
        if not frr.router_dir(st.dir, router).is_dir():
            frr.write(self.plan, st.dir, router, ns)
        st.frr[router] = frr.start_router(self.topo, st.dir, router, ns)
        st.save()

    def link_carrier(self, link: str, up: bool) -> None:
        """Sets both ends of a link down (up: True, up again), as a pulled cable does:
        each end node's interface, or a switch's bridge port. Static routes of the
        hosts (and static routers) at its ends come back with the carrier."""
        st = self._lab()
        l = self.topo.link_named(link)
        ends = builder._ends(self.plan, st.prefix)[self.topo.links.index(l)]
        for e in ends:
            _ip(["-n", e.ns, "link", "set", "dev", e.dev, "up" if up else "down"])
        if not up:
            return
        for end, node in enumerate((l.a, l.b)):
            iface = self.plan.iface(l, end)
            if iface is None:
                continue
            for r in self.plan.routes.get(node, []):
                if r.dev == iface.name:
                    dest = "default" if r.dest.prefixlen == 0 else str(r.dest)
                    _ip(["-n", st.node_ns[node], "route", "replace", dest, "via", str(r.via), "dev", r.dev])

    def routing_status(self) -> dict[str, dict[str, Any]]:
        """Per FRR router: its daemons, OSPF neighbours, BGP peers and route count."""
        st = self._lab()
        return routing_status(st)


def _route_list(ns: str, timeout: float = 10.0) -> list[dict]:
    try:
        p = subprocess.run(["ip", "-n", ns, "-j", "route", "show"], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise LabError(f"ip -n {ns} route show gave no answer in {timeout:g} s") from None
    if p.returncode != 0:
        raise LabError(f"ip -n {ns} route show: {p.stderr.strip()}")
    return json.loads(p.stdout or "[]")


def kernel_routes(ns: str) -> set[ipaddress.IPv4Network]:
    """The destinations of the routes in a namespace's main table (an ECMP route, one
    entry with several next hops, counts once; `default` is 0.0.0.0/0)."""
    out = set()
    for r in _route_list(ns):
        if r.get("type", "unicast") != "unicast":
            continue
        dst = r.get("dst", "")
        out.add(ipaddress.IPv4Network("0.0.0.0/0" if dst == "default" else dst))
    return out


def _ip(args: list[str]) -> None:
    p = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    if p.returncode != 0:
        raise LabError(f"ip {' '.join(args)}: {p.stderr.strip()}")


def routing_status(st: LabState, timeout: float = 3.0) -> dict[str, dict[str, Any]]:
    """Per FRR router of lab `st`: its daemons (pid, running), OSPF neighbours (router
    ID, state), BGP peers (address, AS, state, prefixes received) and kernel route
    count, each router asked at most `timeout` seconds a question."""
    routers = sorted(set(st.frr) | {n for n in st.node_ns if frr.router_dir(st.dir, n).is_dir()})

    def one(r: str) -> tuple[str, dict[str, Any]]:
        return r, frr.router_status(st.node_ns[r], frr.router_dir(st.dir, r), st.frr.get(r) or {}, timeout)

    with ThreadPoolExecutor(max_workers=8) as pool:
        return dict(pool.map(one, routers))
