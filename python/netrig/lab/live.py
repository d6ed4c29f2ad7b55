"""A lab that grows while it runs: nodes and links added (and links removed) one call at
a time, as Mininet's API builds a network; what `netrig mininet` runs scripts on.

It is the same lab as `netrig.lab.build` makes (a namespace per host, every switch a
Linux bridge in the lab's switch namespace `PREFIX--sw`, a shaped link carried by
netrig-link through `PREFIX--emu`, a state file naming everything before it is
created, `build.teardown` to take it down), with names chosen by the caller (Mininet's
`h1-eth0`, `s1-eth1`) instead of netrig's plan. What is asked before `realize()` is made
at once in batches (namespaces, one `ip -batch` for the veth pairs, one per namespace);
what is asked after is made immediately.

    lab = LiveLab("mn")
    lab.add_node("h1", "host"); lab.add_node("s1", "switch")
    lab.add_link("h1", "h1-eth0", "s1", "s1-eth1", shaping=({"delay": "5ms"}, {"delay": "5ms"}))
    lab.realize()          # namespaces, veths, bridges, netrig-link
    lab.stop()             # build.teardown: processes, netrig-link, namespaces
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from netrig import procs
from netrig.lab import build as builder
from netrig.lab import netns
from netrig.lab.state import LabError, LabState, alive, check_prefix, labs
from netrig.link import spec as linkspec
from netrig.link import userspace

IFNAMSIZ = 15


@dataclass
class LiveLink:
    name: str
    a: str
    a_dev: str
    b: str
    b_dev: str
    # Each direction's shaping in the topology's keys, or None for a plain veth pair.
    shaping: tuple[dict[str, Any], dict[str, Any]] | None
    made: bool = False
    emu: tuple[str, str] | None = None  # netrig-link's two devices in PREFIX--emu
    control: str | None = None  # the netrig-link carrying it
    pid: int = 0  # that netrig-link's pid
    extra: dict[str, Any] = field(default_factory=dict)


def free_prefix(base: str = "mn") -> str:
    """The first of base, base2, base3, ... that no lab uses."""
    taken = set(labs())
    for k in range(1, 1000):
        p = base if k == 1 else f"{base}{k}"
        if p not in taken and not netns.exists(f"{p}-{builder.SW}"):
            return check_prefix(p)
    raise LabError(f"no free lab prefix {base}..{base}999: 'netrig status' lists the labs")


class LiveLab:
    def __init__(self, prefix: str, source: str = "<mininet>") -> None:
        self.prefix = check_prefix(prefix)
        self.sw_ns = f"{prefix}-{builder.SW}"
        self.emu_ns = f"{prefix}-{builder.EMU}"
        if (LabState(prefix, "").dir / "state.json").exists():
            raise LabError(f"a lab '{prefix}' exists; 'netrig down --prefix {prefix}' removes it, "
                           "or choose another prefix")
        self.st = LabState(prefix, source, owner_pid=os.getpid(), backend="userspace",
                           plan={"name": prefix, "nodes": {}, "links": []})
        self.st.egress, self.st.controls = {}, {}
        self.st.save()
        self.kinds: dict[str, str] = {}
        self.links: dict[str, LiveLink] = {}
        self.pending_ns: list[str] = []
        self.pending_links: list[LiveLink] = []
        self.realized = False
        self._k = 0

    def _fresh(self) -> None:
        """What other processes changed in the lab's state since we saved it (`tc` lines
        in the nodes change links' shaping): taken in before we change and save it."""
        try:
            disk = LabState.load(self.prefix)
        except LabError:
            return
        runs = {e["name"]: e for e in disk.plan.get("links", [])}
        for e in self.st.plan.get("links", []):
            now = runs.get(e["name"])
            if now is not None:
                e["a_to_b"], e["b_to_a"] = now.get("a_to_b") or {}, now.get("b_to_a") or {}
                l = self.links.get(e["name"])
                if l is not None and l.shaping is not None:
                    l.shaping = (dict(e["a_to_b"]), dict(e["b_to_a"]))
        self.st.link_changes = disk.link_changes
        self.st.tc_htb = disk.tc_htb

    # What is asked.
    def ns(self, node: str) -> str | None:
        """A node's namespace: its own, the switches' shared one, or None for a node of
        the root namespace (Mininet's inNamespace=False, e.g. sshd's `root` node)."""
        kind = self.kinds[node]
        return self.sw_ns if kind == "switch" else None if kind == "root" else f"{self.prefix}-{node}"

    def add_node(self, name: str, kind: str) -> str:
        """A host or router (a namespace of its own) or a switch (a bridge named as the
        node in the switch namespace); returns the node's namespace."""
        if self.realized:
            self._fresh()
        if name in self.kinds:
            raise LabError(f"a node named '{name}' exists")
        if kind == "switch" and len(name) > IFNAMSIZ:
            raise LabError(f"switch '{name}': a bridge's name has at most {IFNAMSIZ} characters")
        self.kinds[name] = kind
        ns = self.ns(name)
        self.st.node_ns[name] = ns
        self.st.plan["nodes"][name] = {"kind": kind, "ns": ns, "ifaces": []}
        if ns is not None and ns not in self.st.namespaces:
            self.st.namespaces.append(ns)  # named before it is made
            self.pending_ns.append(ns)
        if kind == "switch":
            self._switch_lines = getattr(self, "_switch_lines", [])
            self._switch_lines.append(name)
        if self.realized:  # else _make saves once, before it makes anything
            self._make()
        return ns

    def add_link(self, a: str, a_dev: str, b: str, b_dev: str,
                 shaping: tuple[dict[str, Any], dict[str, Any]] | None = None) -> LiveLink:
        """A link between two nodes' devices; `shaping` (a_to_b, b_to_a) puts it on
        netrig-link (an empty dict: carried, unshaped), None makes it a plain veth pair."""
        if self.realized:
            self._fresh()
        for node, dev in ((a, a_dev), (b, b_dev)):
            if node not in self.kinds:
                raise LabError(f"link {a}-{b}: no node named '{node}'")
            if len(dev) > IFNAMSIZ:
                raise LabError(f"link {a}-{b}: interface name '{dev}' is longer than {IFNAMSIZ} "
                               "characters (Linux's limit)")
            if dev in self._devs(self.ns(node)):
                raise LabError(f"link {a}-{b}: {node} has an interface named '{dev}' already")
        if shaping is not None:
            for d in shaping:
                linkspec.resolve(d)  # refused here, naming the key, before anything is made
        self._k += 1
        link = LiveLink(f"{a}-{b}" if f"{a}-{b}" not in self.links else f"{a}-{b}.{self._k}",
                        a, a_dev, b, b_dev, shaping)
        self.links[link.name] = link
        self.pending_links.append(link)
        self.st.plan["links"].append({"name": link.name, "a": a, "b": b, "a_dev": a_dev, "b_dev": b_dev,
                                      "emulated": shaping is not None,
                                      "a_to_b": dict(shaping[0]) if shaping else {},
                                      "b_to_a": dict(shaping[1]) if shaping else {}})
        self.st.egress.setdefault(self.ns(a) or "", {})[a_dev] = [link.name, "a_to_b"]
        self.st.egress.setdefault(self.ns(b) or "", {})[b_dev] = [link.name, "b_to_a"]
        if self.realized:  # else _make saves once, before it makes anything
            self._make()
        return link

    def del_node(self, name: str) -> None:
        """Removes a node whose links are gone (Mininet's delNode): a host's processes and
        namespace, or a switch's bridge; its name may be used again."""
        if self.realized:
            self._fresh()
        kind = self.kinds.pop(name, None)
        if kind is None:
            raise LabError(f"no node named '{name}'")
        ns = self.st.node_ns.pop(name, None)
        self.st.plan["nodes"].pop(name, None)
        if kind == "switch":
            self._switch_lines = [n for n in getattr(self, "_switch_lines", []) if n != name]
            if self.realized and self.sw_ns not in self.pending_ns:
                self.log(self.sw_ns, [f"link del {name}"])
                netns.ip_batch([f"link del {name}"], self.sw_ns)
        elif ns is not None and ns != self.sw_ns:
            if ns in self.pending_ns:
                self.pending_ns.remove(ns)
            elif netns.exists(ns):
                procs.stop(builder._in_namespaces(netns.inodes([ns])), grace_s=builder.OTHERS_STOP_S)
                self.say(None, f"ip netns delete {ns}")
                errors = netns.delete([ns])
                if errors:
                    raise LabError(f"node {name}: {'; '.join(errors)}")
            if ns in self.st.namespaces:
                self.st.namespaces.remove(ns)
            self.st.egress.pop(ns, None)
        self.st.save()

    def log(self, ns: str | None, lines: list[str]) -> None:
        """Each `ip` line the lab runs, for a caller that shows them (Mininet's debug
        level); nothing by default."""

    def say(self, ns: str | None, command: str) -> None:
        """Any other step the lab takes, as the command that would do it where there is
        one (`ip netns add X`, `ethtool -K ...`), for the same caller; nothing by default."""

    def _devs(self, ns: str | None) -> set[str]:
        return set(self.st.egress.get(ns or "", {}))

    # Making it.
    def realize(self) -> None:
        """Makes everything asked so far (idempotent); from now on each call makes what
        it asks at once."""
        self._make()
        self.realized = True
        self.st.status = "up"
        self.st.save()

    def _make(self) -> None:
        if self.pending_ns or self.pending_links:
            self.st.save()  # everything is named in the state before it is made
        if self.pending_ns:
            todo, self.pending_ns = self.pending_ns, []
            if any(netns.exists(ns) for ns in todo):
                raise LabError(f"namespace {next(ns for ns in todo if netns.exists(ns))} exists "
                               f"(another lab's?): 'netrig down --prefix {self.prefix}'")
            for ns in todo:
                self.say(None, f"ip netns add {ns}")
            # (the switches' namespace reports no link-local group: as lab.build's, there
            # every bridge's IGMP reports would flood every bridge and host)
            netns.add(todo, {self.sw_ns: {"net.ipv4.igmp_link_local_mcast_reports": "0"}})
            per_ns = {ns: ["link set lo up"] for ns in todo}
            for node in getattr(self, "_switch_lines", []):
                per_ns.setdefault(self.sw_ns, []).append(
                    f"link add {node} type bridge stp_state 0 forward_delay 0")
                per_ns[self.sw_ns].append(f"link set {node} up")
            self._switch_lines = []
            self._batches(per_ns)
        if self.pending_links:
            todo_links, self.pending_links = self.pending_links, []
            self._make_links(todo_links)

    def _make_links(self, todo: list[LiveLink]) -> None:
        root: list[str] = []
        per_ns: dict[str, list[str]] = {}
        devs: dict[str, list[str]] = {}
        carried = [l for l in todo if l.shaping is not None]
        if carried and self.emu_ns not in self.st.namespaces:
            self.st.namespaces.append(self.emu_ns)
            self.st.save()
            self.say(None, f"ip netns add {self.emu_ns}")
            netns.add([self.emu_ns])
            netns.ip_batch(["link set lo up"], self.emu_ns)
        for link in todo:
            ends = [(self.ns(link.a), link.a_dev), (self.ns(link.b), link.b_dev)]
            if link.shaping is not None:
                k = len(self.st.plan.get("emu_devs", [])) + 1
                self.st.plan.setdefault("emu_devs", []).append(link.name)
                link.emu = (f"l{k}a", f"l{k}b")
                pairs = [(ends[0], (self.emu_ns, link.emu[0])), (ends[1], (self.emu_ns, link.emu[1]))]
            else:
                pairs = [(ends[0], ends[1])]
            for (xn, xd), (yn, yd) in pairs:
                # A node of the root namespace (Mininet's inNamespace=False) keeps its end here.
                at_x = f" netns {xn}" if xn else ""
                at_y = f" netns {yn}" if yn else ""
                root.append(f"link add name {xd}{at_x} type veth peer name {yd}{at_y}")
                for ns, dev in ((xn, xd), (yn, yd)):
                    devs.setdefault(ns, []).append(dev)
            for node, (ns, dev) in zip((link.a, link.b), ends):
                if self.kinds[node] == "switch":
                    per_ns.setdefault(ns, []).append(f"link set {dev} master {node}")
        self.log(None, root)
        netns.ip_batch(root)
        for ns, ds in devs.items():
            per_ns.setdefault(ns, []).extend(f"link set {d} up" for d in ds)
            if ns is not None:  # the root namespace's devices keep the host's settings
                for d in ds:
                    self.say(ns, f"ethtool -K {d} rx off tx off sg off tso off gso off gro off")
                netns.offloads_off(ns, ds)
        self._batches(per_ns)
        for link in todo:
            link.made = True
        if carried:
            self._start_emulator(carried)
        sw = [l for l in todo if "switch" in (self.kinds[l.a], self.kinds[l.b])]
        if sw:
            self.say(self.sw_ns, "waiting until every bridge port forwards")
            builder._wait_bridges([self.sw_ns])

    def _batches(self, per_ns: dict[str | None, list[str]]) -> None:
        """One `ip -batch` per namespace, four at a time (most of their time is process
        start)."""
        for ns, lines in per_ns.items():
            self.log(ns, lines)
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda item: netns.ip_batch(item[1], item[0]), per_ns.items()))

    def _start_emulator(self, links: list[LiveLink]) -> None:
        """One netrig-link for these links (the links of a build share one; each link
        added to a running lab gets its own)."""
        n = len({l.pid for l in self.links.values() if l.pid})
        name = "link" if n == 0 else f"link{n + 1}"
        control = str(self.st.dir / f"{name}.sock")
        cfg = {"spec_version": linkspec.VERSION, "control_path": control, "stats_interval_ms": 10,
               "stats_path": str(self.st.dir / f"{name}-stats.jsonl"), "seed": 1,
               "links": [{"name": l.name, "a": l.emu[0], "b": l.emu[1],
                          "a_to_b": linkspec.resolve(l.shaping[0]).spec(),
                          "b_to_a": linkspec.resolve(l.shaping[1]).spec()} for l in links]}
        sub = self.st.dir / name if n else self.st.dir
        if n:
            sub.mkdir(mode=0o700, exist_ok=True)
        proc = userspace.start(self.emu_ns, cfg, sub)
        self.say(self.emu_ns, f"netrig-link (pid {proc.pid}) carries {', '.join(l.name for l in links)}")
        for l in links:
            l.control, l.pid = control, proc.pid
            if n:
                self.st.controls[l.name] = control
        if n == 0:
            self.st.control = control
            self.st.pids["netrig-link"] = proc.pid
        else:
            self.st.pids[f"netrig-link{n + 1}"] = proc.pid
        self.st.save()

    # Changing it.
    def control_of(self, link: str) -> str:
        l = self.links[link]
        if l.shaping is None:
            raise LabError(f"link {link} is a plain veth pair: use a TCLink (or give it bw=, "
                           "delay=, loss=...) to shape it")
        if not alive(l.pid, "netrig-link"):
            raise LabError(f"link {link}: its netrig-link (pid {l.pid}) is not running")
        return l.control  # type: ignore[return-value]

    def set_direction(self, link: str, direction: int, shaping: dict[str, Any]) -> dict[str, Any]:
        """Replaces one direction's shaping (the whole of it) live; returns netrig-link's
        answer."""
        self._fresh()
        l = self.links[link]
        both = list(l.shaping or ({}, {}))
        both[direction] = dict(shaping)
        specs = {"a_to_b": linkspec.resolve(both[0]).spec(), "b_to_a": linkspec.resolve(both[1]).spec()}
        answer = userspace.request(self.control_of(link), {"cmd": "set", "link": link,
                                                           "version": linkspec.VERSION, "specs": specs})
        l.shaping = (both[0], both[1])
        entry = next(e for e in self.st.plan["links"] if e["name"] == link)
        entry["a_to_b"], entry["b_to_a"] = both
        self.st.link_changes[link] = {"a_to_b": both[0], "b_to_a": both[1]}
        self.st.save()
        return answer

    def del_link(self, link: str) -> None:
        """Removes a link: its veth pairs (a carried link is cut where netrig-link's
        devices were; the daemon keeps forwarding nothing on them)."""
        self._fresh()
        l = self.links.pop(link)
        if l.made and l.shaping is None:
            netns.ip_batch([f"link del {l.a_dev}"], self.ns(l.a))  # its peer goes with it
        elif l.made:
            # Deleting a device netrig-link reads would take its other links with it: the
            # link is cut (down, both ends renamed out of the way) and goes with the lab.
            userspace.request(self.control_of(link), {"cmd": "down", "link": link})
            self._k += 1
            for end, (ns, dev) in enumerate(((self.ns(l.a), l.a_dev), (self.ns(l.b), l.b_dev))):
                netns.ip_batch([f"link set dev {dev} down", f"link set dev {dev} name gone{self._k}{'ab'[end]}"], ns)
        self.st.plan["links"] = [e for e in self.st.plan["links"] if e["name"] != link]
        for ns, dev in ((self.ns(l.a), l.a_dev), (self.ns(l.b), l.b_dev)):
            self.st.egress.get(ns or "", {}).pop(dev, None)
        self.st.save()

    def stats(self, link: str) -> dict[str, Any]:
        return userspace.request(self.control_of(link), {"cmd": "stats"})

    def stop(self, notes: list[str] | None = None) -> list[str]:
        """Takes the lab down (build.teardown): every process in its namespaces, its
        netrig-links, the namespaces; returns problems."""
        return builder.teardown(self.st, notes)
