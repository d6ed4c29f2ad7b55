"""Building a lab from its plan, and taking it down.

A namespace per host and router (`PREFIX-NODE`); the switches share one, `PREFIX--sw`,
a Linux bridge each (named as the switch, ports `SWITCH-pK`; a bridge needs no namespace
of its own, and namespaces are what a lab's set-up and teardown cost); routers forward, with reverse-path filtering off; veth pairs for links,
created straight into their namespaces; offloads off; `lo` up; `/etc/netns/NS/hosts`
so names resolve inside the lab. A shaped link under the user-space backend is two veth
pairs meeting in `PREFIX--emu`, where netrig-link forwards between them.

Routers that run OSPF or BGP get FRR's daemons last, once every link carries frames
(`netrig.lab.frr`; a routed lab without FRR installed is refused before anything is
built).

The state file names every namespace before it is created; teardown kills FRR's
daemons (SIGKILL: the namespaces' deletion removes their routes), stops netrig-link, then the processes inside the lab's
namespaces (they are the lab's) and any process whose command line names the lab's
routers' directories (a daemon a killed netrig never recorded), looking again until
none is left; it waits for each to exit (netrig.procs), then deletes the namespaces. A lab
built from a file records the file's absolute path and bytes; `topology_of` gives a
later command that topology again, or refuses if the file is no longer what was built.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from netrig import procs, safefs
from netrig.errors import NetrigError
from netrig.lab import frr, netns, qdiscs
from netrig.lab.state import LabError, LabState, alive, check_prefix, labs, read_topology, sha256
from netrig.link import kernel, userspace
from netrig.link import spec as linkspec
from netrig.topo.model import Link, Topology, TopologyError
from netrig.topo.plan import Plan

EMU = "-emu"  # namespace suffix: PREFIX--emu (node names cannot contain '-')
SW = "-sw"  # all of a lab's switches: PREFIX--sw
IFNAMSIZ = 15
LINK_STOP_S = 5.0  # netrig-link's grace after SIGTERM
OTHERS_STOP_S = 2.0  # the grace of whatever else runs in the lab
SWEEPS = 10  # looks for processes left in the lab's namespaces (the first: SIGTERM, then SIGKILL)


@dataclass(frozen=True)
class End:
    ns: str
    dev: str


def ns_of(prefix: str, node: str) -> str:
    return f"{prefix}-{node}"


def node_namespaces(plan: Plan, prefix: str) -> dict[str, str]:
    return {n: prefix + "-" + SW if k == "switch" else ns_of(prefix, n)
            for n, k in plan.topo.nodes.items()}


def bridge_names(plan: Plan) -> dict[str, str]:
    """Each switch's bridge: its own name where `NAME-pK` port names fit in IFNAMSIZ, else
    `sw.J` (a '.' no node name has)."""
    switches = [n for n, k in plan.topo.nodes.items() if k == "switch"]
    return {n: n if len(n) <= IFNAMSIZ - 5 else f"sw.{j}" for j, n in enumerate(switches)}


def _ends(plan: Plan, prefix: str) -> dict[int, tuple[End, End]]:
    """Each link's two interfaces: the node's ethN, or a switch port pK."""
    ports: dict[str, int] = {}
    ends: dict[int, tuple[End, End]] = {}
    node_ns = node_namespaces(plan, prefix)
    bridges = bridge_names(plan)
    for i, link in enumerate(plan.topo.links):
        pair = []
        for e, node in enumerate((link.a, link.b)):
            if plan.topo.nodes[node] == "switch":
                k = ports.get(node, 0)
                ports[node] = k + 1
                pair.append(End(node_ns[node], f"{bridges[node]}-p{k}"))
            else:
                iface = plan.iface(link, e)
                assert iface is not None
                pair.append(End(node_ns[node], iface.name))
        ends[i] = (pair[0], pair[1])
    return ends


def egress(plan: Plan, prefix: str) -> dict[str, dict[str, list[str]]]:
    """namespace -> device -> [link, direction]: the link direction each link end's
    egress feeds (end a's device sends a_to_b; a switch port is in the switches'
    namespace). What tc's shim (netrig.lab.tcshim) looks a device up in."""
    out: dict[str, dict[str, list[str]]] = {}
    for i, (a, b) in _ends(plan, prefix).items():
        name = plan.topo.links[i].name
        out.setdefault(a.ns, {})[a.dev] = [name, "a_to_b"]
        out.setdefault(b.ns, {})[b.dev] = [name, "b_to_a"]
    return out


def _uses_emulator(plan: Plan, link: Link) -> bool:
    return plan.topo.backend == "userspace" and link.emulated


def summary(plan: Plan, prefix: str) -> dict:
    """What `netrig status` shows without asking the system."""
    nodes = {}
    node_ns = node_namespaces(plan, prefix)
    for node, kind in plan.topo.nodes.items():
        nodes[node] = {"kind": kind, "ns": node_ns[node], "ifaces": [
            {"name": i.name, "addr": str(i.addr), "link": i.link.name} for i in plan.ifaces[node]]}
    links = [{"name": l.name, "a": l.a, "b": l.b, "emulated": _uses_emulator(plan, l),
              "a_to_b": l.shaping(0).model_dump(exclude_none=True),
              "b_to_a": l.shaping(1).model_dump(exclude_none=True)} for l in plan.topo.links]
    return {"name": plan.topo.name, "nodes": nodes, "links": links}


def build(plan: Plan, prefix: str | None = None, progress=None, seed: int = 1,
          topology_text: str | None = None) -> LabState:
    """Builds the lab; on any failure removes whatever it made and re-raises. `seed`
    seeds the link emulator's random elements (loss, jitter, ...). `topology_text` is
    the text of the file `plan.topo.source` the topology was read from (see
    `state.read_topology`): recorded, it lets later commands use that file again."""
    topo = plan.topo
    prefix = check_prefix(prefix or topo.lab_prefix)
    frr.check_installed(topo)
    say = progress or (lambda msg: None)
    node_ns = node_namespaces(plan, prefix)
    emulated = [i for i, l in enumerate(topo.links) if _uses_emulator(plan, l)]
    emu_ns = prefix + EMU
    names = list(dict.fromkeys(node_ns.values())) + ([emu_ns] if emulated else [])
    source = topo.source or "<python>"
    st = LabState(prefix, source if source.startswith("<") else os.path.abspath(source),
                  namespaces=names, node_ns=node_ns, owner_pid=os.getpid(), backend=topo.backend,
                  plan=summary(plan, prefix), egress=egress(plan, prefix))
    if topology_text is not None and not source.startswith("<"):
        st.topology_text = topology_text
        st.topology_sha256 = sha256(topology_text.encode("utf-8"))
    taken = [ns for ns in names if netns.exists(ns)]
    if taken or (st.dir / "state.json").exists():
        raise LabError(f"a lab '{prefix}' (or namespaces of that name: {', '.join(taken[:3])}) exists; "
                       f"'netrig down --prefix {prefix}' removes it, or choose another prefix")
    if topo.backend == "kernel":
        qdiscs.check(topo, prefix + "-probe")
    st.save()
    try:
        _build(plan, st, node_ns, emu_ns, emulated, say, seed)
    except BaseException:
        teardown(st)
        raise
    st.status = "up"
    st.save()
    return st


def topology_of(st: LabState) -> Topology:
    """The topology lab `st` was built from, read again from its file by absolute path;
    LabError if the lab was built from no file, or if the file's bytes are no longer the
    ones it was built from (edited, replaced, removed): a command must act on the lab
    that is up, never on another topology of the same name."""
    from netrig.topo.load import loads

    p = st.prefix
    if st.topology.startswith("<"):
        raise LabError(f"lab '{p}' was built from Python, not a file: use it from there")
    again = (f"'netrig down --prefix {p}' then 'netrig up {st.topology} --prefix {p}' "
             "rebuilds it from the file as it is now")
    if not st.topology_sha256:
        raise LabError(f"lab '{p}' records no hash of its topology {st.topology} (an older netrig "
                       f"built it), so netrig cannot tell that the file is still the lab's; {again}")
    try:
        _, text, digest = read_topology(st.topology)
    except TopologyError as e:
        raise LabError(f"lab '{p}' was built from {st.topology}, which cannot be read now "
                       f"({'; '.join(e.problems)}); "
                       f"restore the file, or {again}") from None
    if digest != st.topology_sha256:
        raise LabError(f"lab '{p}' was built from {st.topology}, which has changed since "
                       f"({_difference(st.topology_text, text)}; sha256 {st.topology_sha256[:12]} "
                       f"when built, {digest[:12]} now); netrig acts only on the topology a lab "
                       f"was built from: restore the file, or {again}")
    return loads(text, source=st.topology)


def _difference(old: str, new: str) -> str:
    """Where two texts of a file first differ, in a few words."""
    a, b = old.splitlines(), new.splitlines()
    for i in range(max(len(a), len(b))):
        was = a[i] if i < len(a) else None
        now = b[i] if i < len(b) else None
        if was != now:
            def show(line: str | None) -> str:
                return "(nothing)" if line is None else repr(line.strip()[:80])
            return f"line {i + 1} was {show(was)}, is now {show(now)}"
    return f"{len(old.encode())} bytes then, {len(new.encode())} now"  # line endings only


def _build(plan: Plan, st: LabState, node_ns: dict[str, str], emu_ns: str, emulated: list[int],
           say, seed: int) -> None:
    topo = plan.topo
    t0 = time.monotonic()
    settings = {}
    for ns, kind in {node_ns[n]: k for n, k in topo.nodes.items()}.items():
        # Before any device exists: the devices made in the namespace take `default`.
        settings[ns] = {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1",
                        "net.ipv4.conf.all.rp_filter": "0", "net.ipv4.conf.default.rp_filter": "0"}
        if kind == "router":
            settings[ns]["net.ipv4.ip_forward"] = "1"
        if kind == "switch":
            # A bridge (multicast snooping on, the default) joins 224.0.0.106 when it goes
            # up, and the switches' namespace, which has no address, would report it: two
            # IGMPv3 reports per bridge, each flooded through every bridge they reach and
            # to every host on them (1,000 switches in a chain: ~4 million frames, ~0.75
            # CPU-s as the lab comes up). Link-local groups are not reported from here.
            settings[ns]["net.ipv4.igmp_link_local_mcast_reports"] = "0"
    netns.add(st.namespaces, settings)
    say(f"{len(st.namespaces)} namespaces")
    ends = _ends(plan, st.prefix)
    root: list[str] = []
    per_ns: dict[str, list[str]] = {ns: ["link set lo up"] for ns in st.namespaces}
    devs: dict[str, list[str]] = {ns: [] for ns in st.namespaces}
    emu_links = []
    ports: dict[str, list[str]] = {n: [] for n, k in topo.nodes.items() if k == "switch"}
    for i, link in enumerate(topo.links):
        a, b = ends[i]
        for node, end in ((link.a, a), (link.b, b)):
            if node in ports:
                ports[node].append(end.dev)
        if i in emulated:
            ea, eb = End(emu_ns, f"l{i}a"), End(emu_ns, f"l{i}b")
            pairs = [(a, ea), (b, eb)]
            d0, d1 = link.direction(0), link.direction(1)
            emu_links.append({"name": link.name, "a": ea.dev, "b": eb.dev,
                              "a_to_b": d0.spec(), "b_to_a": d1.spec()})
        else:
            pairs = [(a, b)]
        for x, y in pairs:
            root.append(f"link add name {x.dev} netns {x.ns} type veth peer name {y.dev} netns {y.ns}")
            for e in (x, y):
                devs[e.ns].append(e.dev)
    bridges = bridge_names(plan)
    # Every bridge made before any port joins one: the ports' requests then follow each
    # other without a wait for a new bridge's index between them.
    joins: dict[str, list[str]] = {}
    for node, kind in topo.nodes.items():
        if kind == "switch":
            br = bridges[node]
            per_ns[node_ns[node]].append(f"link add {br} type bridge stp_state 0 forward_delay 0")
            joins.setdefault(node_ns[node], []).extend(f"link set {d} master {br}" for d in ports[node])
    for node, kind in topo.nodes.items():
        if kind == "switch":
            joins[node_ns[node]].append(f"link set {bridges[node]} up")
    for ns, lines in joins.items():
        per_ns[ns] += lines
    for node, kind in topo.nodes.items():
        ns = node_ns[node]
        for iface in plan.ifaces[node]:
            per_ns[ns].append(f"addr add {iface.addr} dev {iface.name}")
        if node in plan.loopbacks:
            per_ns[ns].append(f"addr add {plan.loopbacks[node]} dev lo")
    for ns, ds in devs.items():
        per_ns[ns] += [f"link set {d} up" for d in ds]
    for node, routes in plan.routes.items():
        per_ns[node_ns[node]] += [
            f"route add {'default' if r.dest.prefixlen == 0 else r.dest} via {r.via} dev {r.dev}"
            for r in routes]
    # /etc/netns/NS/hosts written while `ip` makes the veths (a process of its own,
    # waited for here): file work that needs no rtnl lock, on the core ip leaves idle.
    with ThreadPoolExecutor(1, thread_name_prefix="hosts") as pool:
        hosts = pool.submit(netns.write_hosts, list(dict.fromkeys(node_ns.values())), plan.hosts_file())
        netns.ip_batch(root)
        hosts.result()
    say(f"{len(root)} veth pairs")
    # The switches' namespace first: it has most of the work (every bridge and port).
    order = sorted(per_ns, key=lambda ns: -len(per_ns[ns]))
    work = {ns: (devs[ns] if ns in settings else [], per_ns[ns]) for ns in order}
    netns.configure(work)
    netns.sync_links({ns: ds for ns, ds in devs.items()})
    _wait_bridges(sorted({node_ns[n] for n, k in topo.nodes.items() if k == "switch"}))
    say(f"addresses, bridges and routes ({time.monotonic() - t0:.2f} s)")
    if topo.backend == "kernel":
        for i, link in enumerate(topo.links):
            if link.plain:
                continue
            for d, end in enumerate(ends[i]):
                at = f"link {link.name} {kernel.DIRS[d]}"
                netns.ip_batch(kernel.tc_lines(end.dev, link.direction(d), at), end.ns, what="tc")
        say("tc qdiscs")
    if emu_links:
        st.control = str(st.dir / "link.sock")
        cfg = {"spec_version": linkspec.VERSION, "links": emu_links, "stats_interval_ms": 10, "control_path": st.control,
               "stats_path": str(st.dir / "link-stats.jsonl"), "seed": seed}
        st.save()
        proc = userspace.start(emu_ns, cfg, st.dir)
        st.pids["netrig-link"] = proc.pid
        st.save()
        say(f"netrig-link (pid {proc.pid}) emulating {len(emu_links)} links")
    if topo.dynamic:
        _start_frr(plan, st, node_ns)
        say(f"FRR on {len(topo.dynamic)} routers ({time.monotonic() - t0:.2f} s)")


def _start_frr(plan: Plan, st: LabState, node_ns: dict[str, str], every_s: float = 0.5,
               every: int = 50) -> None:
    """Starts FRR on the lab's routers, recording each router's daemons in the lab's
    state as they run. The state file (which grows with the lab) is saved once `every_s`
    seconds or `every` routers have passed since its last save, and at the end, not
    once per router (N saves of an O(N) file): a netrig killed in between leaves
    daemons the file does not name, which `down` and `clean` still find by their command
    lines (`frr.strays`: each names its router's directory), as they find one killed
    before it was recorded."""
    lock = threading.Lock()
    saved = {"at": time.monotonic(), "routers": 0}

    def record(router: str, procs: dict) -> None:
        with lock:
            st.frr[router] = procs
            if len(st.frr) - saved["routers"] >= every or time.monotonic() - saved["at"] >= every_s:
                st.save()
                saved.update(at=time.monotonic(), routers=len(st.frr))

    frr.start(plan, st.dir, node_ns, record)
    with lock:
        st.save()


def _bridge_ports(ns: str) -> list[tuple[str, str, str]]:
    """(port, its operstate, its bridge port state) of every bridge port in `ns`."""
    p = subprocess.run(["ip", "-n", ns, "-j", "-d", "link", "show", "type", "bridge_slave"],
                       capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        raise LabError(f"cannot list the bridge ports of {ns}: {p.stderr.strip()[:200]}")
    try:
        rows = json.loads(p.stdout or "[]")
    except ValueError as e:
        raise LabError(f"cannot read the bridge ports of {ns}: {e}") from None
    return [(r["ifname"], r.get("operstate", "?"), r.get("linkinfo", {}).get("info_slave_data", {}).get("state", "?"))
            for r in rows if "ifname" in r]


def _wait_bridges(namespaces: list[str], timeout: float = 5.0) -> None:
    """Until every bridge port forwards. A port forwards once the kernel's linkwatch has
    taken in its carrier (netns.sync_links has it done at once) and told its bridge; a
    frame sent before is lost (a first ping then waits a second for ARP to retry). The
    wait grows with the ports (the kernel does this under its rtnl lock, shared with
    everything else on the host): `timeout` plus 5 ms per port."""
    pending = set(namespaces)
    t0 = time.monotonic()
    deadline = t0 + timeout
    waiting: list[tuple[str, str, str]] = []
    grown = False
    while pending:
        for ns in sorted(pending):
            ports = _bridge_ports(ns)
            waiting = [p for p in ports if p[2] != "forwarding"]
            if not waiting:
                pending.discard(ns)
            elif not grown:
                deadline += 0.005 * len(ports)
                grown = True
        if not pending:
            return
        if time.monotonic() > deadline:
            name, oper, state = waiting[0] if waiting else ("?", "?", "?")
            raise LabError(f"bridge ports of {', '.join(sorted(pending)[:3])} did not start "
                           f"forwarding within {time.monotonic() - t0:.0f} s ({len(waiting)} not "
                           f"yet, e.g. {name}: {state}, its link {oper.lower()})")
        time.sleep(0.05)


def teardown(st: LabState, notes: list[str] | None = None) -> list[str]:
    """Stops the lab's processes and deletes its namespaces; returns problems (if any).

    Returns once every process of the lab has exited (netrig.procs: each waited for
    through a pidfd): FRR's daemons, netrig-link, then whatever runs in the lab's
    namespaces or names its routers' directories, looked for again until none is left (a
    process that starts another when told to stop leaves nothing behind). FRR's daemons
    are killed outright: told to stop, each withdraws what it announced (ospfd flushes
    its LSAs, which every other router floods and runs SPF for; zebra deletes its routes
    under the kernel's rtnl lock), work the namespaces' deletion does for them at once
    (their routes) as the lab's tmpfs does (their /var/tmp/frr). The others get SIGTERM,
    then SIGKILL after a grace; `notes` gets a line for each that had to be killed."""
    errors: list[str] = []
    said = notes if notes is not None else []
    stuck: set[procs.Proc] = set()  # still there after SIGKILL (said once)
    ended: list[procs.Proc] = []  # every process told to stop (waited for until collected)

    def stop(group: list[procs.Proc], grace_s: float, sig: int = signal.SIGTERM, told: bool = True) -> None:
        """`told`: a process SIGKILLed is said in `notes` (not when killing is the way)."""
        ended.extend(group)
        done = procs.stop([p for p in group if p not in stuck], grace_s=grace_s, sig=sig)
        why = f"it had not exited {grace_s:g} s after SIGTERM" if sig != signal.SIGKILL \
            else "it started after the lab was told to stop"
        said.extend(f"killed {p.name} (pid {p.pid}): {why}" for p in done.killed if told)
        errors.extend(f"{p.name} (pid {p.pid}) is still there {procs.KILL_WAIT_S:g} s after SIGKILL"
                      + (f" (in the kernel: {w})" if (w := procs.in_kernel(p.pid)) else "")
                      for p in done.left)
        stuck.update(done.left)

    daemons = [(d, procs.Proc(p, s, f"{d} of {r}")) for r, ds in st.frr.items() for d, (p, s) in ds.items()]
    stop([p for _, p in daemons], 0.0, signal.SIGKILL, told=False)
    pid = st.pids.get("netrig-link", 0)
    link = procs.here(pid, "netrig-link") if alive(pid, "netrig-link") else None
    if link is not None:
        stop([link], LINK_STOP_S)
    userspace.forget(pid)
    # The switches' namespace goes first: the kernel frees its bridges one RCU grace
    # period each (~16 ms; netns.kernel_ready) while the rest is stopped and deleted. Its
    # processes, if any, are still found (by the namespace's inode) and stopped.
    inodes = netns.inodes(st.namespaces)
    errors += netns.delete([ns for ns in st.namespaces if ns == f"{st.prefix}-{SW}"])
    # Whatever still runs inside the lab's namespaces belongs to the lab; so does a
    # daemon no state recorded (its command line names the lab's routers' directories).
    for round in range(SWEEPS):
        found = [p for p in _in_namespaces(inodes) + frr.strays(st.dir) if p not in stuck]
        if not found:
            break
        if round == 0:
            stop(found, OTHERS_STOP_S)
        else:
            stop(found, 0, signal.SIGKILL)
    else:
        errors.append(f"processes kept starting in the lab's namespaces after {SWEEPS} rounds of "
                      "SIGKILL: " + ", ".join(f"{p.name} (pid {p.pid})" for p in found[:5]))
    # Exited is not yet gone for `ps`: FRR's daemons are orphans, collected by whoever
    # adopted them: this process if it started them (procs.adopt_orphans), else PID 1.
    procs.collect([p for _, p in daemons])
    zombies = procs.reaped([p for p in ended if p not in stuck])
    if zombies:
        said.append(f"{len(zombies)} of the lab's processes have exited but PID 1 has not "
                    f"collected them after {procs.REAP_WAIT_S:g} s (ps lists them as <defunct>): "
                    + ", ".join(f"{p.name} (pid {p.pid})" for p in zombies[:5]))
    errors += frr.remove(st.dir)  # (and its FRR mount namespace: netrig.lab.frrmount)
    safefs.remove_tree(st.dir, "bin", safefs.PRIVATE)  # tc's shim (netrig.lab.tcshim), if installed
    web = st.dir / "web"  # web flows' nginx files (exp/execute/webserver.py), if a killed run left them
    if web.is_dir() and not web.is_symlink():
        shutil.rmtree(web, ignore_errors=True)
    safefs.remove_tree(st.dir.parent.parent, f"www/{st.prefix}")  # and their objects (daemon_dir)
    errors += netns.delete(st.namespaces)
    for ns in st.namespaces:
        netns.remove_etc(ns)
    if not errors:
        for f in ("link.json", "link.log", "link.sock", "link-stats.jsonl"):
            (st.dir / f).unlink(missing_ok=True)
        for f in st.dir.glob(".state.json.*.tmp"):  # a save cut short by SIGKILL
            if f.is_file() and not f.is_symlink():
                f.unlink(missing_ok=True)
        st.remove()
        try:
            st.dir.rmdir()
        except OSError:
            pass
    return errors


def _in_namespaces(inodes: dict[str, tuple[int, int]]) -> list[procs.Proc]:
    """The processes in these namespaces (by name: their inodes; this one left out), each
    named by its program and namespace."""
    me = os.getpid()
    out = []
    for ns, pids in netns.pids(inodes).items():
        for pid in pids:
            if pid == me:
                continue
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            p = procs.here(pid, f"{comm} in {ns}")
            if p is not None:
                out.append(p)
    return out


def clean(everything: bool = False, orphans_only: bool = False,
          notes: list[str] | None = None) -> list[tuple[str, str, list[str]]]:
    """Tears down the labs whose builder was killed or whose netrig-link died (every
    lab with `everything`; only those whose builder died with `orphans_only`, as a
    cluster worker does: a live builder tears its own down): (prefix, why, problems)
    for each lab looked at that had a problem or was removed (why is "" for a lab whose
    state could not be read); `notes`, as teardown's, each line after its lab's prefix.
    What `netrig clean` does."""
    done = []
    for prefix in labs():
        try:
            st = LabState.load(prefix)
        except NetrigError as e:
            done.append((prefix, "", [str(e)]))
            continue
        crashed = st.owner_pid and not alive(st.owner_pid)
        emu_dead = "netrig-link" in st.pids and not alive(st.pids["netrig-link"], "netrig-link")
        why = ("--all" if everything else "its builder died" if crashed
               else "its netrig-link died" if emu_dead and not orphans_only else "")
        if why:
            said: list[str] = []
            done.append((prefix, why, teardown(st, said)))
            if notes is not None:
                notes.extend(f"lab '{prefix}': {x}" for x in said)
    return done


def lab_dir(prefix: str) -> Path:
    return LabState(prefix, "").dir
