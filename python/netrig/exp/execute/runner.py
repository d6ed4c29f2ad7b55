"""One run of one sweep point in a lab of this machine's namespaces (`run_one`); the
campaign of every point and repetition is campaign.py's, handed out by executor.py.

A run: build the point's network (seeded), start a one-off netrig-perf server for each
flow that needs one, start each flow at its `start` in its own thread, sample the
monitors, wait for the flows (the network is torn down whatever happens), then write
the run's files and, last, its record (recorder.py, exp/record/run.py). Whatever the monitors, a run keeps what
throughput over time is drawn from: netrig-link's 100 Hz samples of every link
direction with a rate (series/link-stats.jsonl) and the receiver's own intervals (the
server runs with -J and the client fetches its output). Ctrl-C or SIGTERM stops the
flows, tears the network down and writes what was measured (the run marked
"interrupted"); a resumed campaign runs only the runs that lack a finished run.json.

A run's link emulators (the netrig-link processes its lab's state names) are watched
while it runs and once more before teardown: a run whose emulator died measured a
broken network, so it is stopped and marked "failed" with the reason (which process,
how it ended, when that was noticed), and a resume runs it again.

A scenario's `events:` fire on the flows' clock (`_EventFirer`, each in its own thread
at its time); each is recorded (planned and actual time, how long it took, its result
or error) and a failing one does not stop the run. In a lab with FRR routers the run
first waits for routing to converge (`Network.converge`, its time in run.json), and a
route monitor (`ip -ts monitor route` in every FRR router, stopped by PID) records each
route change on the same clock (series/routes.jsonl). After the run, each event's
outage per flow and how long routing took to settle are measured (exp/analysis/events.py) beside
theory's window (theory/outage.py) and written into run.json.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from netrig import safefs, units
from netrig.capture import lab as capture
from netrig.errors import NetrigError
from netrig.exp.analysis import events as evs
from netrig.exp.analysis import words
from netrig.exp.execute import recorder, webserver
from netrig.exp.execute.captures import analyse_captures, capture_entry
from netrig.exp.execute.monitors import (  # noqa: F401 (route_changes, queue_rows: tests use them from here)
    _IfaceMonitor,
    _LinkRecorder,
    _RouteMonitor,
    queue_rows,
    route_changes,
)
from netrig.exp.execute.tally import RunFailed
from netrig.exp.grade.expect import expectations
from netrig.exp.kinds import ping, web
from netrig.exp.kinds.base import (
    Call,
    connect_timeout_s,
    flow_key,
    keyed_env,
    run_process,
    server_lifetime_s,
    wait_for_flows,
)
from netrig.exp.kinds.registry import Outcome, kind_of, tool_of
from netrig.exp.record import files as rec
from netrig.exp.record.run import write_run
from netrig.exp.spec.model import Point, find_link
from netrig.lab import netns, paths
from netrig.lab.network import Network, _tcp_listening
from netrig.lab.state import alive
from netrig.link import userspace
from netrig.theory import analyse, outage
from netrig.theory.connect import ARP_TRIES, arp_tries, max_link_rtt
from netrig.topo.plan import Plan, make_plan

BASE_PORT = 5301


def _lab_prefix() -> str:
    return f"nx{os.getpid() % 100000}"


def run_one(point: Point, rep: int, seed: int, out: Path, rid: str, tick=None) -> dict[str, Any]:
    """One run of one point in a lab of this machine's namespaces; writes out/runs/rid
    (run.json last) and returns run.json's content."""
    assert not point.hosts, "real hosts are remote.run_one's (executor.run_one picks)"
    rdir = recorder.fresh(out, rid)
    plan = make_plan(point.topology)
    spec = point.spec
    interval = units.seconds(spec.interval)
    # Every TCP flow samples TCP_INFO (theory needs the window it was given); a tcp_info
    # monitor sets how often.
    tcp_info = {n: 100 for n, f in spec.flows.items() if f.kind == "tcp"}
    tcp_info.update({m.flow: int(units.seconds(m.interval or "100ms") * 1e3)
                     for m in spec.monitors if m.kind == "tcp_info"})
    outcomes: dict[str, Outcome] = {}
    monitors: list[dict[str, Any]] = []
    link_stats: list[dict[str, Any]] = []
    started_wall = time.time()
    interrupted = False
    emulator: dict[str, Any] | None = None
    net = Network(point.topology, prefix=_lab_prefix(), seed=seed)
    net.start()
    watch = _EmulatorWatch(net)
    t0 = time.monotonic()  # again when the flows start: what "noticed N s into it" counts from
    servers = []
    assert net.state is not None
    webs = webserver.WebServers(net.state.dir, out, f"runs/{rid}")  # nginx, for web flows
    send_buffers: dict[str, float] = {}
    routing: dict[str, Any] = {}
    t0_wall = time.time()  # the flows' t0 on the wall clock (again when they start)
    firer: _EventFirer | None = None
    routes: _RouteMonitor | None = None
    captures: list[tuple[int, capture.Capture]] = []
    cap_dir: safefs.Held | None = None  # held open while its captures run
    try:
        neigh = neighbour_patience(net, point)
        if neigh:
            routing["neighbour_solicit"] = neigh
        if point.topology.dynamic:
            routing = {**routing, **converge(net, point)}
            # Each flow's way as the kernel routes it, beside theory's (the report flags
            # a flow whose path is not the predicted one).
            routing["paths"] = paths.flow_paths(net, net.plan, spec.flows)
            routes = _RouteMonitor(net, point.topology.dynamic)
        wmem: dict[str, float] = {}  # by sending namespace: one read each
        for name, f in spec.flows.items():
            if f.kind == "tcp" and f.window is None and f.to is not None:
                ns = net[f.to if f.reverse else f.src].ns
                if ns not in wmem:
                    wmem[ns] = _tcp_wmem_max(ns)
                send_buffers[name] = wmem[ns]
        ports, keys = {}, {}
        for i, (name, f) in enumerate(spec.flows.items()):
            if kind_of(f).served:
                port, tool = BASE_PORT + i, tool_of(f)
                ports[name], keys[name] = port, flow_key()
                # Its output (netrig-perf's -J document: the receiver's own intervals,
                # which the client also fetches) beside its log: what it said, whatever
                # the client got.
                argv = tool.server(Call(f, net.addr(f.to), port, point.flow_duration(f), interval),
                                   net.addr(f.to), connect_timeout_s(f),
                                   server_lifetime_s(f, client_timeout_s(net.plan, point, f)))
                with safefs.open_new(out, f"runs/{rid}/server-{name}.log") as log, \
                        safefs.open_new(out, f"runs/{rid}/server-{name}.{tool.server_output}") as doc:
                    servers.append((name, port, net[f.to].popen(
                        argv, env=keyed_env(keys[name]) if tool.keyed else None, stdout=doc, stderr=log)))
        deadline = time.monotonic() + 10
        for name, port, p in servers:
            f = spec.flows[name]
            udp = f.kind == "udp" and tool_of(f).udp_server
            while not (_udp_bound(p.pid, port) if udp else _tcp_listening(p.pid, port)):
                if p.poll() is not None or time.monotonic() > deadline:
                    said = " ".join(x for x in (rec.log_tail(out, f"runs/{rid}/server-{name}.{e}")
                                                for e in ("log", tool_of(f).server_output)) if x)
                    raise RunFailed(f"the {tool_of(f).name} server for flow {name} did not start ({said})")
                time.sleep(0.01)
        for node, (sizes, tls) in web.servers_needed(spec.flows).items():
            webs.start(node, net[node].ns, sizes, tls)  # one per destination node
        if any(m.kind == "capture" for m in spec.monitors):
            cap_dir = safefs.Held(out, f"runs/{rid}/capture")
            captures = capture.for_monitors(net, spec.monitors, cap_dir)
            for _, c in captures:
                c.start()
        stop = threading.Event()
        links = _LinkRecorder(net, point, spec.monitors)
        imon = [_IfaceMonitor(net, m, i) for i, m in enumerate(spec.monitors) if m.kind == "iface"]
        if routes is not None:
            routes.start()
        t0 = time.monotonic()
        t0_wall = time.time()
        links.mark()
        for m in imon:
            m.start(t0, stop)
        if spec.events:
            firer = _EventFirer(net, evs.timeline(spec, point.topology, point.length_s), t0, stop)
            firer.start()
        threads = []
        for name, f in spec.flows.items():
            o = Outcome(name, f, f.seconds("start"))
            o.planned_s = point.flow_duration(f)
            outcomes[name] = o
            threads.append(threading.Thread(target=_flow, daemon=True, args=(
                net, point, o, ports.get(name), keys.get(name), interval, tcp_info.get(name), t0, stop,
                _server_reader(out, rid, name, f) if name in ports else None)))
        for t in threads:
            t.start()
        limit = point.length_s + 30 + max((setup_s(plan, f) for f in spec.flows.values()), default=0.0)
        interrupted = wait_for_flows(threads, t0, limit + 15, stop, tick, point.length_s,
                                     lambda: watch.check(t0, "while its flows ran; they were stopped then"))
        stop.set()
        for m in imon:
            m.join()
        if firer is not None:
            firer.join()
        if routes is not None:
            routing["changes"] = routes.stop(t0_wall)
        queues, link_stats = links.collect(time.monotonic() - t0)
        capture.stop_all(captures)
        monitors = queues + [row for m in imon for row in m.rows]
        emulator = _emulator_timing(net)
    finally:
        if routes is not None:
            routes.stop(None)  # stopped by its PIDs whatever happened (a second stop: nothing)
        for _, c in captures:
            c.stop()  # (a second stop: the first one's summary)
        if cap_dir is not None:
            cap_dir.close()
        for _, _, p in servers:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=5)
        webs.stop()
        watch.check(t0, "after its flows ended")  # the last look, before teardown stops it
        errors = net.stop()
    seen = {n: w for n, o in outcomes.items() if (w := o.advertised_window()) is not None}
    bufs = {n: (s["sndbuf_bytes"], s["rcvbuf_bytes"]) for n, o in outcomes.items() if o.spec.window is not None
            and "sndbuf_bytes" in (s := o.summary()) and "rcvbuf_bytes" in s}
    expected = expectations(point, plan, seen, {n: b for n, b in send_buffers.items() if b},
                            _default_cc(), bufs)
    events = measure_events(point, plan, firer.records if firer else [], outcomes,
                            routing.get("changes"), interval, t0_wall) if spec.events else []
    if spec.events:
        routing["t0_unix_s"] = round(t0_wall, 6)
    entries = [capture_entry(i, c.stop(), rdir) for i, c in captures]
    captured = analyse_captures(entries, rdir, out, spec, ports, plan) if captures else {}
    record = recorder.build(out, rid, point, rep, seed, outcomes, expected, monitors, started_wall,
                            "failed" if watch.died else "interrupted" if interrupted else "ok", errors,
                            emulator, watch.died, link_stats, events, routing, entries, captured)
    doc = write_run(out, record)
    if interrupted:
        raise KeyboardInterrupt
    return doc


def converge(net: Network, point: Point) -> dict[str, Any]:
    """Waits for a routed lab's routing to converge before the flows start (when the
    lab can tell: Network.converge); {"converge_s": how long it took} or why it was not
    waited for."""
    wait = getattr(net, "converge", None)
    if wait is None:
        return {"converge_s": None, "converge": "not waited for: this netrig's labs cannot tell"}
    ospf = point.topology.routing.ospf
    limit = 3 * ospf.dead_s + 30
    t = time.monotonic()
    took = wait(limit)
    return {"converge_s": round(float(took if isinstance(took, (int, float)) else time.monotonic() - t), 3)}


class _EventFirer:
    """Fires each planned event at t0 + its time, each in a thread of its own (a long
    command delays no other event); records what happened."""

    def __init__(self, net: Network, planned: list[evs.Planned], t0: float,
                 stop: threading.Event) -> None:
        self.net, self.planned, self.t0, self.stop = net, planned, t0, stop
        self.records: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._main = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._main.start()

    def join(self) -> None:
        self._main.join(timeout=5)
        for t in list(self._threads):
            t.join(timeout=30)

    def _loop(self) -> None:
        for p in self.planned:
            if self.stop.wait(max(0.0, self.t0 + p.spec.at_s - time.monotonic())):
                with self._lock:
                    self.records.append({"index": p.index, "what": p.label, "action": p.spec.action,
                                         "target": p.spec.target, "planned_s": p.spec.at_s,
                                         "ok": False, "error": "not fired: the run was stopped"})
                continue
            t = threading.Thread(target=self._fire, args=(p,), daemon=True)
            self._threads.append(t)
            t.start()

    def _fire(self, p: evs.Planned) -> None:
        rec: dict[str, Any] = {"index": p.index, "what": p.label, "action": p.spec.action,
                               "target": p.spec.target, "planned_s": p.spec.at_s}
        started = time.monotonic()
        rec["actual_s"] = round(started - self.t0, 6)
        try:
            rec.update(fire(self.net, p.spec))
            rec.setdefault("ok", True)
        except Exception as e:  # recorded; the run goes on
            rec.update({"ok": False, "error": str(e) or type(e).__name__})
        rec["took_s"] = round(time.monotonic() - started, 6)
        with self._lock:
            self.records.append(rec)


def fire(net: Network, ev) -> dict[str, Any]:
    """Does what one event says, now; what it returned (an exception: it failed)."""
    a = ev.action
    if a in ("down", "up"):
        st = net.state
        assert st is not None
        link = find_link(net.topo, ev.link)
        userspace.request(st.control, {"cmd": a, "link": link.name})
        return {}
    if a in ("carrier_down", "carrier_up"):
        net.link_carrier(find_link(net.topo, ev.link).name, a == "carrier_up")
        return {}
    if a == "set":
        link = find_link(net.topo, ev.link)
        net.set_link(link.name, dir=ev.dir, **(ev.set_ or {}))
        return {}
    if a == "stop":
        net.stop_routing(ev.router)
        return {}
    if a == "start":
        net.start_routing(ev.router)
        return {}
    r = net[ev.node].run(ev.command, timeout=units.seconds(ev.timeout or "60s"))
    tail = (r.stdout + r.stderr)[-500:]
    out: dict[str, Any] = {"exit_code": r.code, "output_tail": tail}
    if r.code != 0:
        out.update({"ok": False, "error": f"exit code {r.code}" + (f": {tail.strip()[-200:]}" if tail.strip() else "")})
    return out


def measure_events(point: Point, plan: Plan, fired: list[dict[str, Any]],
                   outcomes: dict[str, Outcome], changes: list[dict[str, Any]] | None,
                   interval: float, t0_wall: float) -> list[dict[str, Any]]:
    """Each event's record with the outage it caused in each probe, ping and bulk flow,
    beside theory's window. Probe and ping samples go on the flows' clock by their wall
    time (netrig-perf's start_unix_ns, ping -D), not by when the process started (a
    probe's first sample leaves tens of ms later, after its handshake)."""
    flows: dict[str, evs.FlowSeries] = {}
    for name, o in outcomes.items():
        f = o.spec
        if f.to is None:
            continue
        src, dst = (f.to, f.src) if f.reverse else (f.src, f.to)
        if f.kind == "probe" and o.doc:
            p = o.end.get("probe") or {}
            cols = p.get("samples_columns") or ["seq", "t", "rtt_ms"]
            rows = [dict(zip(cols, r)) for r in p.get("samples") or []]
            start = p.get("start_unix_ns")
            zero = start / 1e9 - t0_wall if isinstance(start, (int, float)) else o.start_s
            flows[name] = evs.FlowSeries("probe", src, dst, [
                (zero + d["t"], d.get("rtt_ms")) for d in rows if d.get("t") is not None],
                resolution_s=f.seconds("interval", 0.01))
        elif f.kind == "ping":
            flows[name] = evs.FlowSeries("ping", src, dst, ping.probes(o, t0_wall),
                                         resolution_s=f.seconds("interval", 1.0))
        elif f.kind in ("tcp", "udp"):
            rows = o.series()
            col = "recv_bps" if any("recv_bps" in r for r in rows) else "bps"
            picked = [r for r in rows if r.get(col) is not None]
            flows[name] = evs.FlowSeries(f.kind, src, dst, intervals=(
                [r["t"] for r in picked], [float(r[col]) for r in picked]), resolution_s=interval)
    planned = evs.timeline(point.spec, point.topology, point.length_s)

    def expect(ev, src, dst, both):
        return outage.expect(plan, ev, src, dst, both)

    return evs.measure(planned, fired, flows, changes, expect)




class _EmulatorWatch:
    """Whether the run's link emulators (the PIDs its lab's state records) still run."""

    def __init__(self, net: Network) -> None:
        st = net.state
        assert st is not None
        self.pids = dict(st.pids)
        self.log = st.dir / "link.log"
        self.died: dict[str, Any] | None = None

    def check(self, t0: float, when: str) -> bool:
        """True once an emulator is found dead (its death described in `died`)."""
        if self.died is not None:
            return True
        for role, pid in self.pids.items():
            if alive(pid, role):
                continue
            code = userspace.exit_status(pid, wait=1.0)
            how = ("how it ended is unknown" if code is None
                   else f"killed by signal {-code} ({_signame(-code)})" if code < 0
                   else f"it exited with status {code}")
            noticed = time.monotonic() - t0
            last = _last_line(self.log)
            self.died = {"process": role, "pid": pid, "exit_status": code,
                         "noticed_s": round(noticed, 3), "noticed": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                         "log_last_line": last}
            self.died["reason"] = (
                f"the link emulator {role} (pid {pid}) died during the run ({how}); noticed "
                f"{noticed:.1f} s into it, {when}" + (f"; its log ends: {last}" if last else ""))
            return True
        return False


def _signame(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return "?"


def _last_line(path: Path) -> str:
    """The last line of netrig-link's log, unless it is only its "ready" greeting."""
    try:
        lines = [x for x in path.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return ""
    return "" if not lines or '"ready"' in lines[-1] else lines[-1][-300:]


def _emulator_timing(net: Network) -> dict[str, Any] | None:
    """How late netrig-link released the run's packets (None without an emulator)."""
    try:
        late = net.link_stats().get("lateness")
    except NetrigError:
        return None
    if not isinstance(late, dict):
        return None
    return {"packets": late.get("count", 0), "late_p50_us": late.get("p50_us"),
            "late_p99_us": late.get("p99_us"), "late_max_us": late.get("max_us"),
            "over_budget": late.get("over_budget", 0), "budget_ms": words.LATE_BUDGET_MS}


def _default_cc() -> str | None:
    """The congestion control a socket gets without asking: the host's, which every new
    namespace inherits (None if it cannot be read)."""
    try:
        return Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip() or None
    except OSError:
        return None


def _tcp_wmem_max(ns: str) -> float:
    """The largest send buffer TCP autotuning gives a socket in a namespace (bytes;
    0 if it cannot be read)."""
    def read() -> float:
        return float(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])

    try:
        return netns.run_in(ns, read)
    except (OSError, ValueError, IndexError, NetrigError):
        return 0.0


def neighbour_patience(net: Network, point: Point) -> int | None:
    """Linux gives up resolving a neighbour after 3 requests 1 s apart: over a link
    whose RTT is longer no packet would ever leave (connect fails: no route to host),
    whatever the connect timeout. Where a link's RTT exceeds that, every node asks
    until an answer can be back (theory/connect.py's `arp_tries`, which its theory
    counts too); the number of requests (None: the kernel's own 3 kept)."""
    tries = arp_tries(max_link_rtt(point.topology))
    if tries <= ARP_TRIES:
        return None

    def ask() -> None:
        for f in Path("/proc/sys/net/ipv4/neigh").glob("*/mcast_solicit"):
            f.write_text(str(tries))

    for name in point.topology.nodes:
        netns.run_in(net[name].ns, ask)
    return tries


def setup_s(plan: Plan, f) -> float:
    """How much longer than its duration a netrig-perf flow may take beyond the usual 30 s:
    a connect timeout past the default, and its setup and end exchanges (ARP, two
    connections, the parameters, the start, the results: about ten round trips, 60 s of
    setup and 30 s of end were seen at a 10 s RTT) on a path whose RTT is seconds long."""
    if not kind_of(f).served or f.to is None:
        return 0.0
    try:
        rtt = analyse(plan, f.src, f.to).base_rtt_s
    except NetrigError:
        rtt = 0.0
    return max(0.0, connect_timeout_s(f) - 5.0) + 10 * rtt


def client_timeout_s(plan: Plan, point: Point, f) -> float:
    """How long a netrig-perf flow's client may run: its duration (an hour for a
    flow of bytes), 30 s, and its setup on a long path (`setup_s`)."""
    return (point.flow_duration(f) if f.bytes is None else 3600) + 30 + setup_s(plan, f)


def _udp_bound(pid: int, port: int) -> bool:
    """Whether a process's namespace has a UDP socket bound to the port (a server that
    listens on UDP only: iperf2's of a udp flow)."""
    want = f":{port:04X}"
    for table in ("udp", "udp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        if any(x.split()[1].endswith(want) for x in lines):
            return True
    return False


def _server_reader(out: Path, rid: str, name: str, f):
    """How a flow whose tool's parser reads its server's output gets it (None: it does
    not), read from the run's directory through safefs."""
    tool = tool_of(f)
    if not tool.reads_server:
        return None
    return lambda: rec.log_tail(out, f"runs/{rid}/server-{name}.{tool.server_output}", 1 << 20)


SERVER_WAIT_S = 5.0  # how long a flow waits for its server's last report after its client ended


def _server_output(read, f, interval: float) -> str:
    """The server's output once it holds what the flow's parser reads (its totals), or
    as it is after SERVER_WAIT_S."""
    done = tool_of(f).server_done
    limit = time.monotonic() + SERVER_WAIT_S
    while True:
        text = read()
        if done is None or done(text, f, interval) or time.monotonic() > limit:
            return text
        time.sleep(0.05)


def _flow(net: Network, point: Point, o: Outcome, port: int | None, key: str | None, interval: float,
          tcp_info_ms: int | None, t0: float, stop: threading.Event, server_out=None) -> None:
    f = o.spec
    if stop.wait(max(0.0, t0 + f.seconds("start") - time.monotonic())):
        o.error = "not started: the run was stopped"
        return
    dur = point.flow_duration(f)
    node = net[f.src]
    kind = kind_of(f)
    if kind.argv is None:  # it runs itself: web
        o.start_s = time.monotonic() - t0
        lines, o.error = web.run(node.ns, web.url(net.addr(f.to), web.object_size(f), f.http, f.tls), f.http,
                                 f.tls, f.new_conn, dur, f.seconds("interval", 1.0), t0 + o.start_s, stop)
        o.end_s, o.stdout = time.monotonic() - t0, "".join(x + "\n" for x in lines)
        o.parse()
        return
    argv = kind.argv(Call(f, net.addr(f.to) if f.to else "", port or 0, dur, interval, tcp_info_ms))
    env = None
    if kind.served:
        timeout = client_timeout_s(net.plan, point, f)
        env = keyed_env(key) if key and tool_of(f).keyed else None
    else:
        assert kind.limit_s is not None
        timeout = kind.limit_s(f, dur)
    run_process(o, ["ip", "netns", "exec", node.ns, *argv], timeout, t0, stop, env=env)
    if server_out is not None:
        o.server_out = _server_output(server_out, f, interval)
    o.parse()
