"""A running lab as `netrig status` shows it, for people: its nodes and addresses, its
links as they run now (live changes included) with each emulated direction's queue and
drops, its FRR routers' daemons and neighbours, and what of it is dead; and its drawing
(`graph`: netrig.topo.graph's, from the lab state's plan rather than a file). Every
line fits 80 columns (`fit`): a direction is named in its ends' order (`r3→r4`).

Shared by `netrig status` and the `mininet>` prompt's `status` and `graph`. Reads the
lab's state and asks its emulator and routers; changes nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from netrig import safefs
from netrig.errors import NetrigError
from netrig.lab.state import LabState, alive
from netrig.topo import graph
from netrig.topo.model import Topology

WIDTH = 80  # a line of `netrig status` at most (a terminal's usual width)


def fit(parts: list[str], first: str, indent: int, width: int = WIDTH, sep: str = ", ") -> list[str]:
    """`first` then `parts` joined by `sep`, in lines of at most `width` columns (a part
    is never split; one longer than a line has its line to itself), the lines after the
    first indented by `indent`."""
    lines, line = [], first
    for k, part in enumerate(parts):
        joined = line + (sep if k else "") + part
        if line.strip() and len(joined) > width:
            lines.append(line + sep.rstrip() if k else line.rstrip())
            line = " " * indent + part
        else:
            line = joined
    return lines + [line]


def node_lines(plan: dict, width: int = WIDTH) -> list[str]:
    """A line per node (more when its addresses do not fit): its kind and addresses."""
    out = []
    for name, n in plan["nodes"].items():
        head = f"  {name:<10} {n['kind']:<7} "
        addrs = [f"{i['name']} {i['addr']}" for i in n["ifaces"]] or ["-"]
        out += fit(addrs, head, len(head), width)
    return out


def print_nodes(plan: dict) -> None:
    """A line per node: its kind and its interfaces' addresses."""
    print("\n".join(node_lines(plan)))


def shaping_text(s: dict) -> str:
    """A direction's shaping as its keys (`rate=10Mbit delay=5ms aqm=pie`), or `unshaped`."""
    keys = ("rate", "delay", "jitter", "loss", "queue", "aqm")
    parts = [f"{k}={s[k]['type'] if isinstance(s[k], dict) and 'type' in s[k] else s[k]}"
             for k in keys if k in s]
    return " ".join(parts) or "unshaped"


def size_text(n: float) -> str:
    """Bytes for people, decimal: `0 B`, `950 B`, `18.0 kB`, `1.85 MB`."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}" if n < 100 * scale else f"{n / scale:.0f} {unit}"
    return f"{n:.0f} B"


def link_lines(plan: dict, stats: dict, width: int = WIDTH) -> list[str]:
    """`netrig status`'s links: a link's name and ends, its shaping (each direction
    named in the ends' order, `r3→r4`, when they differ), then each emulated direction's
    queue, deliveries, drops and lateness, in lines of at most `width` columns."""
    out = []
    for l in plan["links"]:
        a, b = l["a"], l["b"]
        head = f"  {l['name']:<10} {a}-{b:<8} "
        there, back = shaping_text(l["a_to_b"]), shaping_text(l["b_to_a"])
        said = [there] if there == back else [f"{a}→{b}: {there}", f"{b}→{a}: {back}"]
        out += fit(said, head, len(head) if len(head) + max(map(len, said)) <= width else 6, width, "; ")
        live = stats.get(l["name"])
        for d, (x, y) in (("a_to_b", (a, b)), ("b_to_a", (b, a))) if live else ():
            v = live.get(d, {})
            first = f"      {x}→{y}: "
            parts = [f"queue {v.get('queue_packets', 0)} p ({size_text(v.get('queue_bytes', 0))})",
                     f"delivered {v.get('delivered', 0)} p ({size_text(v.get('delivered_bytes', 0))})",
                     f"drops {v.get('drops_overflow', 0)} queue full, {v.get('drops_aqm', 0)} aqm, "
                     f"{v.get('lost', 0)} loss",
                     f"late p99 {v.get('lateness', {}).get('p99_us', 0):.0f} µs"]
            out += fit(parts, first, len(first), width, "; ")
    return out


def show(prefix: str, as_json: bool = False) -> int:
    """Prints `netrig status` of lab `prefix` (as JSON with `as_json`); 1 when part of
    it is dead, gone or not up yet, else 0."""
    from netrig.lab import frr, netns
    from netrig.lab.network import routing_status
    from netrig.link import userspace

    st = LabState.load(prefix)
    pid = st.pids.get("netrig-link", 0)
    emu_alive = alive(pid, "netrig-link")
    stats = {}
    if st.control and emu_alive:
        try:
            stats = {l["link"]: l for l in userspace.request(st.control, {"cmd": "stats"})["links"]}
        except NetrigError as e:
            print(f"netrig: {e}", file=sys.stderr)
    missing = [ns for ns in st.namespaces if not netns.exists(ns)]
    dead = not_up(st, missing)
    routing = routing_status(st) if st.frr or frr.daemons_dir(st.dir).is_dir() else {}
    if as_json:
        print(json.dumps({"prefix": st.prefix, "status": st.status, "topology": st.topology,
                          "missing_namespaces": missing, "netrig_link": {"pid": pid, "alive": emu_alive},
                          "dead": dead, **st.plan, "live": stats, "routing": routing}, indent=1))
        return 1 if dead else 0
    print(f"lab '{st.prefix}' ({st.topology}): {'NOT ALL UP' if dead else st.status}, "
          f"backend {st.backend}")
    for line in dead:
        print(f"  {line}")
    if st.topology_sha256 and _file_sha256(st.topology) != st.topology_sha256:
        print(f"  CHANGED: {st.topology} is no longer the file the lab was built from "
              "(link set refuses it)")
    if st.control and emu_alive:
        print(f"  netrig-link pid {pid}: running")
    print("nodes:")
    print_nodes(st.plan)
    print("links:")
    print("\n".join(link_lines(st.plan, stats)))
    if routing:
        print("routing (FRR):")
        print(routing_text(routing))
    return 1 if dead else 0


def routing_text(routing: dict) -> str:
    """`netrig status`'s routing section: a router per line, then its neighbours."""
    out = []
    for r, s in routing.items():
        daemons = [f"{n} {d['pid']}{'' if d['running'] else ' DEAD'}" for n, d in s["daemons"].items()]
        routes = "?" if s["routes"] is None else s["routes"]
        head = f"  {r:<10} "
        out += fit([*(daemons or ["stopped"]), f"{routes} kernel routes"], head, len(head))
        for n in s["ospf"]:
            out.append(f"      ospf neighbour {n['id']:<15} {n['state']:<16} on {n['iface']}")
        for p in s["bgp"]:
            out.append(f"      bgp peer {p['address']:<15} AS {p['as']:<10} {p['state']:<12} "
                       f"{p['received']} prefixes received")
        out += [f"      ? {e}" for e in s["errors"]]
    return "\n".join(out)


def _file_sha256(path: str) -> str | None:
    from netrig.lab.state import read_topology

    try:
        return read_topology(path)[2]
    except NetrigError:
        return None


def not_up(st: LabState, missing: list[str]) -> list[str]:
    """What of lab `st` is dead, gone or not up yet, one line each (none when all is up)."""
    dead = []
    for role, pid in st.pids.items():  # the lab's emulators
        if not alive(pid, role):
            dead.append(f"DEAD: {role} (pid {pid}) is NOT RUNNING: the links it emulates pass nothing")
    from netrig.lab.frr import running

    for router, procs in st.frr.items():  # FRR's daemons
        for name, (p, started) in procs.items():
            if not running(p, started):
                dead.append(f"DEAD: FRR's {name} on {router} (pid {p}) is NOT RUNNING: "
                            "its routes are stale or gone")
    dead += [f"DEAD: namespace {ns} is gone" for ns in missing]
    if st.owner_pid and not alive(st.owner_pid):
        who = "the netrig building it" if st.status == "building" else "the netrig running it"
        dead.append(f"DEAD: {who} (pid {st.owner_pid}) is gone; 'netrig clean' removes the lab")
    elif st.status != "up":
        dead.append(f"BUILDING: pid {st.owner_pid} is still building it; it is not up yet")
    return dead



def topology_of(plan: dict) -> Topology:
    """The topology a lab runs now, from its state's plan summary (`build.summary`, its
    links' directions as the last live change left them): for drawing, not building, so
    it is not checked as a file is (a Mininet lab may join two nodes twice)."""
    topo = Topology(plan.get("name") or "lab")
    add = {"host": topo.host, "switch": topo.switch, "router": topo.router}
    for name, node in plan.get("nodes", {}).items():
        if node.get("kind") not in add:
            raise NetrigError(f"the lab's plan has node {name} of kind '{node.get('kind')}' "
                              "(netrig knows host, switch and router)")
        add[node["kind"]](name)
    for link in plan.get("links", []):
        topo.link(link["a"], link["b"], name=link["name"], a_to_b=link.get("a_to_b") or None,
                  b_to_a=link.get("b_to_a") or None)
    return topo


def drawing(st: LabState, out: str | None = None) -> str:
    """Lab `st` drawn as it runs now (netrig.topo.graph): text for a terminal without
    `out`, else written to `out` (.svg or .png, by its suffix), whose path is returned."""
    topo = topology_of(st.plan)
    title = f"{topo.name} (lab {st.prefix}, as it runs)"
    if out is None:
        return graph.text(topo, title=title)
    path = Path(out)
    kind = path.suffix.lstrip(".").lower()
    if kind not in ("svg", "png"):
        raise NetrigError(f"graph {out}: draws .svg or .png files (give one of those suffixes)")
    where = path.resolve().parent
    safefs.check_owner(where)
    return str(safefs.write(where, path.name, graph.draw(topo, fmt=kind, title=title)))
