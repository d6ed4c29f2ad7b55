"""What the schema cannot see: a scenario's flows, monitors and events against its
topology (or its real hosts). Pure: what this machine must have to run a scenario (nginx,
curl, a congestion control module, tcpdump) is exp/preflight's.
"""

from __future__ import annotations

from netrig import suggest, units
from netrig.exp.spec.model import (
    COMMON,
    EVENT_ACTIONS,
    LOAD_KINDS,
    MEASURING_KINDS,
    TAKES,
    TOOL_LACKS,
    FlowSpec,
    Key,
    MonitorSpec,
    ScenarioFile,
    find_link,
    length_s,
)
from netrig.remote import hosts as rhosts
from netrig.topo.model import Problem, Topology, TopologyError

MAX_OBJECT = 100 * 10**6  # bytes: a web flow's object lives in /run (tmpfs, memory)


def _check_hosts(spec: ScenarioFile, d: dict) -> list[Problem]:
    """A scenario runs on an emulated lab (topology:) or on real machines (hosts:, with
    path:), not both; on real machines, only what needs no lab."""
    has_topo = d.get("topology") is not None
    if spec.hosts is None:
        out = [] if has_topo else [Problem((), "a scenario needs topology: (an emulated lab) or hosts: "
                                               "(real machines reached over SSH)")]
        out += [Problem((k,), f"{k}: describes real hosts (hosts:); an emulated lab's path is its "
                              "links' rate, delay and loss") for k in ("path", "clocks") if k in d]
        return out
    if has_topo:
        return [Problem(("hosts",), "give topology: (an emulated lab) or hosts: (real machines over "
                                    "SSH), not both")]
    out: list[Problem] = []
    for name in spec.hosts:
        if (why := rhosts.name_problem(name)) is not None:
            out.append(Problem(("hosts", name), why))
    if len(spec.hosts) < 2:
        out.append(Problem(("hosts",), "at least two hosts: flows run between them"))
    if spec.path is None:
        out.append(Problem(("hosts",), "real hosts need path: {rate: ..., rtt: ...}: what you know of "
                                       "the path between them, which theory reads (e.g. the Wi-Fi "
                                       "link's rate and the RTT ping shows)"))
    for name, f in spec.flows.items():
        if f.kind == "web":
            out.append(Problem(("flows", name, "kind"), "a web flow runs nginx inside an emulated lab, "
                               "not on real hosts: use kind: fetch (netrig-perf's request/response)"))
        if f.tool != "netrig-perf":
            out.append(Problem(("flows", name, "tool"), f"tool: {f.tool} runs in an emulated lab "
                               "(topology:); on real hosts netrig runs netrig-perf (tool: netrig-perf)"))
    for i, m in enumerate(spec.monitors):
        if m.kind != "tcp_info":
            out.append(Problem(("monitors", i, "kind"), f"a {m.kind} monitor watches an emulated lab's "
                               "links or namespaces, which real hosts (hosts:) do not have; only "
                               "tcp_info (a tcp flow's own samples) works there"))
    if spec.events:
        out.append(Problem(("events",), "events change an emulated lab while flows run: real hosts "
                           "(hosts:) have no lab for netrig to change"))
    return out


def _real_sweep_problem(d: dict, key: str) -> str | None:
    """Why a sweep key cannot be swept on real hosts (None: it can)."""
    if d.get("hosts") is None:
        return None
    for k in key.split(","):
        head = k.strip().split(".")[0]
        if head in ("path", "clocks", "hosts"):
            return (f"{head}: is what you declare about real machines: sweeping it would change "
                    "theory, not the network (sweep flows.* instead)")
    return None


def _cross_check(spec: ScenarioFile, topo: Topology) -> list[Problem]:
    """What the schema cannot see: flows and monitors against the topology."""
    out: list[Problem] = []
    nodes = topo.nodes
    for name, f in spec.flows.items():
        given = set(f.model_fields_set) - COMMON
        for k in sorted(given - TAKES[f.kind]):
            out.append(Problem(("flows", name, k), f"'{k}' does not apply to a {f.kind} flow "
                                                  f"(it takes {', '.join(sorted(TAKES[f.kind]))})"))
        for end, node in (("from", f.src), ("to", f.to)):
            if node is None:
                continue
            if node not in nodes:
                out.append(Problem(("flows", name, end), f"no node named '{node}' in the topology"))
            elif nodes[node] == "switch":
                out.append(Problem(("flows", name, end), f"'{node}' is a switch: it has no address "
                                                         "(flows run between hosts and routers)"))
        if f.kind != "command" and f.to is None:
            out.append(Problem(("flows", name), f"a {f.kind} flow needs to: (its destination)"))
        if f.kind == "command" and not f.command:
            out.append(Problem(("flows", name), "a command flow needs command: (what to run)"))
        if f.to is not None and f.to == f.src:
            out.append(Problem(("flows", name, "to"), "a flow from a node to itself"))
        if f.bytes is not None and f.duration is not None:
            out.append(Problem(("flows", name, "bytes"), "give duration or bytes, not both"))
        if f.kind in ("tcp", "udp") and f.omit is not None and f.seconds("omit") % 1:
            out.append(Problem(("flows", name, "omit"), "whole seconds (netrig-perf -O)"))
        elif f.omit is not None and f.bytes is None and \
                f.seconds("duration", units.seconds(spec.duration)) - f.seconds("omit") < 1:
            out.append(Problem(("flows", name, "omit"), f"{f.omit} leaves less than 1 s of the "
                               "flow's duration to measure (omit is the duration's first part)"))
        for k in sorted(k for k in given & set(TOOL_LACKS.get(f.tool, {})) if getattr(f, k) not in (None, False)):
            out.append(Problem(("flows", name, k), f"{f.tool} cannot do '{k}': {TOOL_LACKS[f.tool][k]} "
                                                  "(use tool: netrig-perf or iperf3 for it)"))
        if f.kind == "udp" and f.rate is None:
            out.append(Problem(("flows", name), "a udp flow needs rate: (e.g. 10Mbit)"))
        if f.kind == "web":
            out += _check_web(name, f)
    if not 0.1 <= units.seconds(spec.interval) <= 10:
        out.append(Problem(("interval",), "between 100ms and 10s (the flows' report interval)"))
    if not any(f.count for f in spec.flows.values()):
        out.append(Problem(("flows",), "no flows: a scenario runs at least one"
                           + (" (every count: is 0)" if spec.flows else "")))
    out += _check_events(spec, topo)
    for i, m in enumerate(spec.monitors):
        if m.kind == "queue":
            if m.link is None:
                out.append(Problem(("monitors", i), "a queue monitor needs link: (a link's name, or a-b)"))
            else:
                try:
                    link = find_link(topo, m.link)
                except TopologyError:
                    out.append(Problem(("monitors", i, "link"), f"no link '{m.link}' in the topology"))
                else:
                    if topo.backend != "userspace" or not link.emulated:
                        out.append(Problem(("monitors", i, "link"),
                                           f"link {link.name} is not emulated by netrig-link (give it a "
                                           "rate, delay or loss, or emulated: true): its queue cannot "
                                           "be watched"))
        elif m.kind == "tcp_info":
            fl = spec.flows.get(m.flow or "")
            if fl is None:
                out.append(Problem(("monitors", i, "flow"), f"no flow named '{m.flow}'"))
            elif fl.kind != "tcp":
                out.append(Problem(("monitors", i, "flow"), f"flow '{m.flow}' is {fl.kind}: "
                                                            "TCP_INFO is a tcp flow's"))
            elif fl.tool != "netrig-perf":
                out.append(Problem(("monitors", i, "flow"), f"flow '{m.flow}' is made by {fl.tool}: "
                                                            "TCP_INFO samples are netrig-perf's"))
        elif m.kind == "iface":
            if m.node not in nodes:
                out.append(Problem(("monitors", i, "node"), f"no node named '{m.node}'"))
        elif m.kind == "capture":
            out += _check_capture(m, ("monitors", i), topo)
        if m.kind != "capture":
            out += [Problem(("monitors", i, k), f"{k}: is a capture's key, not a {m.kind} monitor's")
                    for k in CAPTURE_KEYS if getattr(m, k) is not None]
    return out


CAPTURE_KEYS = ("filter", "snaplen", "size", "files", "drops")


def _check_capture(m: MonitorSpec, where: Key, topo: Topology) -> list[Problem]:
    """A capture: of a link the topology has, or of a node and (if it has several) one
    of its interfaces; files of at least 10 kB each (its filter is compiled by
    exp/preflight, with this machine's tcpdump)."""
    out: list[Problem] = []
    if (m.link is None) == (m.node is None):
        out.append(Problem(where, "a capture needs link: (a link's name, or a-b), or node: "
                                  "(and iface: if it has several)"))
    elif m.link is not None:
        try:
            find_link(topo, m.link)
        except TopologyError:
            out.append(Problem((*where, "link"), f"no link '{m.link}' in the topology"))
    elif m.node not in topo.nodes:
        out.append(Problem((*where, "node"), f"no node named '{m.node}'"))
    elif m.dir != "both":
        out.append(Problem((*where, "dir"), "a node's interface is captured both ways "
                                            "(name a link to capture one direction)"))
    size, files = units.size_bytes(m.size or "1GB"), m.files or 1
    if size < 10_000 * files:
        out.append(Problem((*where, "size"), f"{m.size} over {files} files leaves under 10 kB a file"))
    return out


def _check_web(name: str, f: FlowSpec) -> list[Problem]:
    """A web flow's object: one nginx serves from memory (the programs it needs are
    exp/preflight's to find)."""
    size = f.nbytes("size")
    if size is not None and not 1 <= size <= MAX_OBJECT:
        return [Problem(("flows", name, "size"), f"{f.size} is not an object nginx serves here: from 1 B to "
                        f"{MAX_OBJECT // 10**6} MB (it is written in the lab's directory, in memory)")]
    return []


def _check_events(spec: ScenarioFile, topo: Topology) -> list[Problem]:
    """Each event: one action, on something the topology has that can do it, before
    the scenario ends."""
    out: list[Problem] = []
    end = length_s(spec)
    nodes = topo.nodes
    for i, ev in enumerate(spec.events):
        where = ("events", i)
        acts = ev.actions
        if len(acts) != 1:
            out.append(Problem(where, ("no action: give one of " if not acts else
                                       f"{len(acts)} actions ({', '.join(acts)}): give one of ")
                               + "down: true, up: true, carrier: down|up, set: {...}, stop: true, "
                               "start: true, command: \"...\""))
            continue
        act = acts[0]
        needs = EVENT_ACTIONS[act]
        for other in ("link", "router", "node"):
            if other != needs and getattr(ev, other) is not None:
                out.append(Problem((*where, other), f"a {act} event acts on a {needs}, not a {other}"))
        name = getattr(ev, needs)
        if act in ("down", "up", "stop", "start") and getattr(ev, act) is not True:
            out.append(Problem((*where, act), f"write {act}: true (or leave the event out)"))
            continue
        if ev.timeout is not None and act != "command":
            out.append(Problem((*where, "timeout"), "only a command event takes timeout"))
        if ev.dir is not None and act != "set":
            out.append(Problem((*where, "dir"), "only a set event takes dir"))
        if ev.at_s >= end:
            out.append(Problem((*where, "at"), f"{ev.at} is not before the scenario's end ({end:g} s, "
                               "when the last flow ends): an event happens while flows run"))
        if name is None:
            out.append(Problem(where, f"a {act} event needs {needs}: (the {needs} it acts on)"))
            continue
        if needs == "link":
            try:
                link = find_link(topo, name)
            except TopologyError:
                names = [lk.name for lk in topo.links]
                out.append(Problem((*where, "link"), f"no link '{name}' in the topology"
                                   f"{suggest.did_you_mean(name, names)}"))
                continue
            if act in ("down", "up", "set") and (topo.backend != "userspace" or not link.emulated):
                how = ("set backend: userspace in the topology, and " if topo.backend != "userspace"
                       else "")
                out.append(Problem((*where, "link"), f"link {link.name} is not emulated by netrig-link, "
                                   f"so it cannot be {'changed live' if act == 'set' else 'taken ' + act}"
                                   f": {how}give the link a delay, rate or loss, or emulated: true"
                                   + ("" if act == "set" else " (or use carrier: down|up, which "
                                      "takes its interfaces down)")))
            if act == "set":
                if not ev.set_:
                    out.append(Problem((*where, "set"), "set: names what changes ({delay: 50ms, ...})"))
                else:
                    try:
                        link.changed(ev.set_, ev.dir)
                    except TopologyError as e:
                        out.append(Problem((*where, "set"), "; ".join(e.problems)))
        elif needs == "router":
            if name in nodes and nodes[name] != "router":
                out.append(Problem((*where, "router"), f"'{name}' is a {nodes[name]}, not a router: "
                                   "only a router's daemons stop and start"))
            elif nodes.get(name) != "router":
                out.append(Problem((*where, "router"), f"no router named '{name}'"
                                   f"{suggest.did_you_mean(name, [n for n, k in nodes.items() if k == 'router'])}"))
            elif not topo.routing_of(name).dynamic:
                out.append(Problem((*where, "router"), f"router {name} runs no FRR (static routes): "
                                   "there are no daemons to stop or start (give it ospf: or bgp:)"))
        else:
            if name not in nodes:
                out.append(Problem((*where, "node"), f"no node named '{name}'"
                                   f"{suggest.did_you_mean(name, list(nodes))}"))
            elif nodes[name] == "switch":
                out.append(Problem((*where, "node"), f"'{name}' is a switch: a command runs in a "
                                   "host or a router"))
            if not (ev.command or "").strip():
                out.append(Problem((*where, "command"), "an empty command"))
    return out




def timing_flags(spec: ScenarioFile) -> list[str]:
    """What in a point's timing makes a measurement answer another question than the
    scenario asks, with the numbers: a flow with its own duration that runs past the
    end of every flow that takes the scenario's duration, and a measuring flow (ping, probe,
    fetch, web) that runs beside the load for part of its time and on an idle path for
    much of the rest. Flags, not refusals: a scenario may mean it."""
    said: dict[str, str] = {}  # flow -> its flag (the second kind says more: it wins)
    scen_s = units.seconds(spec.duration)
    spans = {n: (f.seconds("start"), f.seconds("start") + (
        f.seconds("timeout", 60.0) if f.kind == "command" and f.duration is None
        else f.seconds("duration", scen_s))) for n, f in spec.flows.items() if f.count and f.bytes is None}
    takes_default = [n for n, f in spec.flows.items() if f.count and f.duration is None and f.bytes is None
                     and f.kind != "command"]
    main_end = max((spans[n][1] for n in takes_default if n in spans), default=None)
    for n, f in spec.flows.items():
        if n not in spans or f.duration is None or main_end is None:
            continue
        a, b = spans[n]
        if b > main_end + 1e-9:
            said[n] = (f"flows.{n} ({f.kind}) runs {a:g}–{b:g} s, past the end of every flow that "
                       f"takes the scenario's duration of {scen_s:g} s ({', '.join(takes_default[:3])}: "
                       f"the last ends at {main_end:g} s)")
    loads = [spans[n] for n, f in spec.flows.items() if f.kind in LOAD_KINDS and n in spans]
    for n, f in spec.flows.items():
        if f.kind not in MEASURING_KINDS or n not in spans or not loads:
            continue
        a, b = spans[n]
        beside = _overlap((a, b), loads)
        idle = (b - a) - beside
        if beside > 0 and idle > max(1.0, 0.25 * (b - a)):
            last = max(e for _, e in loads)
            said[n] = (f"flows.{n} ({f.kind}) runs {a:g}–{b:g} s, but the load beside it stops at "
                       f"{last:g} s: {idle:g} of its {b - a:g} s measure a path without that load")
    return list(said.values())


def _overlap(span: tuple[float, float], others: list[tuple[float, float]]) -> float:
    """Seconds of `span` during which at least one of `others` runs."""
    cuts = sorted({span[0], span[1], *(x for o in others for x in o if span[0] < x < span[1])})
    return sum(hi - lo for lo, hi in zip(cuts, cuts[1:])
               if any(s <= lo and hi <= e for s, e in others))
