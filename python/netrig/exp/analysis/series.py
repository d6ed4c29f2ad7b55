"""A run's recorded time series, from the best source the run has, and theory's
reference lines beside each: what the time-series figures and `netrig plot` draw.

    throughput  a tcp/udp flow's rate over time: what its bottleneck link DELIVERED
                (netrig-link's 10 ms stats samples, averaged in bins wide enough that
                one packet more or less moves a bin's rate by at most 2 %: `bin_for`)
                when the
                run recorded that link direction and the flow is the only bulk flow on
                it; else what the receiver counted per report interval; else (older
                results) what the sender wrote, said so in the label
    delivered   every recorded link direction's delivered rate (all its traffic)
    cwnd, tcp_rtt   from TCP_INFO of each of the flow's connections (`bulk #3`: the third
                of -P's), a line each
    rtt         ping/probe RTT, one sample per reply
    queue, sojourn, drops   each recorded link direction, per 10 ms sample

A 10 ms sample in which no packet left the queue has no sojourn time: it is NaN, drawn
as a gap, never as 0. References come from theory (`netrig.theory.analyse`) on the
point's own topology, rebuilt from the results directory's scenario.yaml: BDP and
BDP + queue on cwnd, idle and full-queue RTT (and base + the AQM's target) on RTTs,
the queue limit and the AQM's target on queue plots, link rate and TCP goodput on
throughput. A run's events (`marks`): when each happened and the outage it caused, which
every time-series figure marks. This module draws nothing (figures.py and plot.py do).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from netrig.errors import NetrigError
from netrig.exp.analysis.results import Results
from netrig.exp.analysis.stats import is_number
from netrig.exp.spec.model import Point
from netrig.theory import analyse
from netrig.theory.path import HopInfo, bottleneck, hops
from netrig.topo.plan import Plan, make_plan

BULK = ("tcp", "udp")
RTT_KINDS = ("ping", "probe")
BIN_S = 0.1  # delivered rate: 10 ms samples averaged over 100 ms (at least)
WITHIN = 0.02  # a rate bin holds enough packets that one more or less moves it by at most this
NICE_BINS = (0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 5.0)  # s: the widths a rate is binned in
FRAME_BYTES = 1514  # a full-size Ethernet frame (MTU 1500 + 14), before a link's overhead


def bin_for(rate_bps: float | None, packet_bytes: float = FRAME_BYTES,
            within: float = WITHIN) -> tuple[float, float | None]:
    """The bin (s) a rate series of a `rate_bps` link is averaged in, and its
    quantisation: a bin holds whole packets, so one packet more or less moves its rate
    by 8 × packet / (rate × width). The narrowest of NICE_BINS (from BIN_S) that keeps
    that within `within` (a 1.5 Mbit/s link of 1514-byte frames: 0.5 s, 1.6 %; 100 ms
    would hold 12–13 packets, ±8 %); the widest when none does, its quantisation then
    above `within` (a caption says it). Without a rate: BIN_S, quantisation unknown."""
    if not rate_bps or rate_bps <= 0 or packet_bytes <= 0:
        return BIN_S, None
    need = 8 * packet_bytes / (within * rate_bps)
    width = next((w for w in NICE_BINS if w >= need * (1 - 1e-9)), NICE_BINS[-1])
    return width, 8 * packet_bytes / (rate_bps * width)


@dataclass(frozen=True)
class Quantity:
    what: str  # "throughput"
    ylabel: str  # "throughput (Mbit/s)"
    how: str  # a caption's sentence on where the numbers come from


QUANTITIES: dict[str, Quantity] = {
    "throughput": Quantity("throughput", "throughput (Mbit/s)",
                            "Delivered: the bottleneck link's delivered rate (netrig-link's 10 ms "
                           "samples averaged in bins that hold enough packets for ±2 % of the "
                           "link's rate, wire bits, all traffic of that link direction); "
                           "received: the receiver's report intervals (merged into such bins "
                           "when they are shorter)."),
    "delivered": Quantity("delivered rate", "delivered rate (Mbit/s)",
                          "What each recorded link direction delivered (wire bits, all its "
                          "traffic): netrig-link's 10 ms samples averaged in bins that hold "
                          "enough packets for ±2 % of the link's rate."),
    "cwnd": Quantity("congestion window", "cwnd (KB)",
                     "From TCP_INFO of each of the flow's connections, a line each (segments "
                     "× MSS; 1 KB = 1000 bytes of payload)."),
    "tcp_rtt": Quantity("TCP RTT", "smoothed RTT (ms)",
                        "TCP's smoothed RTT from TCP_INFO of each of the flow's connections."),
    "rtt": Quantity("RTT", "RTT (ms)", "One sample per reply."),
    "queue": Quantity("queue length", "queue (packets)", "netrig-link's queue, sampled at 100 Hz."),
    "sojourn": Quantity("queue sojourn time", "sojourn (ms)",
                        "The mean time packets leaving the queue spent in it, per 10 ms sample; "
                        "a sample in which no packet left is a gap."),
    "drops": Quantity("drops", "packets dropped per second",
                      "Packets the link dropped (queue overflow, AQM, random loss), counted in "
                      "100 ms bins."),
}


@dataclass
class Trace:
    label: str  # legend: "bulk: delivered by s0→h2"
    t: list[float]  # s from the run's start
    y: list[float]  # in the quantity's unit; NaN: no sample (a gap)
    steps: bool = False  # report intervals, drawn as steps
    bin_s: float | None = None  # a rate averaged in bins of this width (bin_for)
    quant: float | None = None  # one packet's share of a bin's rate (0.016: ±1.6 %)


@dataclass(frozen=True)
class Ref:
    label: str  # legend: "BDP + queue 152 KB"
    value: float  # in the quantity's unit
    style: str | tuple = "--"  # a matplotlib line style
    of: str | None = None  # the trace (link direction) it belongs to; None: every trace


@dataclass(frozen=True)
class Mark:
    """An event on a time axis: when it happened (s from the run's start), its short
    label, and the outage it caused (the longest any flow measured; 0: none)."""

    t: float
    label: str  # "r2-r3 down"
    outage_s: float = 0.0
    failed: bool = False
    # Theory's outage window after the event (s), for the flows drawn; None: no theory.
    theory_s: tuple[float, float] | None = None


def marks(run: dict[str, Any], flows: Iterable[str] | None = None) -> list[Mark]:
    """A run's events, as a time-series figure marks them; the outage of the `flows`
    the figure draws (the longest), of every flow when it draws none of them."""
    want = set(flows or ())
    out = []
    for e in run.get("events") or []:
        t = e.get("actual_s", e.get("planned_s"))
        if not is_number(t):
            continue
        measured = {n: o["outage_s"] for n, o in (e.get("outage") or {}).items()
                    if is_number(o.get("outage_s"))}
        mine = [v for n, v in measured.items() if n in want] or list(measured.values())
        windows = [(o["theory_low_s"], o["theory_high_s"]) for n, o in (e.get("outage") or {}).items()
                   if (n in want or not want) and is_number(o.get("theory_low_s"))
                   and is_number(o.get("theory_high_s"))]
        theory = (min(w[0] for w in windows), max(w[1] for w in windows)) if windows else None
        out.append(Mark(float(t), e.get("what", ""), max(mine, default=0.0), not e.get("ok", True),
                        theory))
    return sorted(out, key=lambda m: m.t)


def _nan(v: Any, scale: float = 1.0) -> float:
    return float(v) * scale if is_number(v) else math.nan


def _intervals(rows: list[dict[str, Any]], col: str, scale: float) -> tuple[list[float], list[float]]:
    """Report intervals as steps: each value held from the interval's start to its end
    (the first start one interval before its end)."""
    picked = [r for r in rows if col in r and "t" in r]
    t, y = [r["t"] for r in picked], [_nan(r[col], scale) for r in picked]
    if len(t) < 2:
        return t, y
    return [max(0.0, 2 * t[0] - t[1]), *t], [y[0], *y]


def binned(rows: list[dict[str, Any]], col: str, scale: float, width: float = BIN_S,
           total: bool = False) -> tuple[list[float], list[float]]:
    """Samples in bins of `width` s, at each bin's middle: a rate averaged over the time
    its samples cover (each sample spans from the one before: a late, long sample
    weighs more), or (`total`) counts summed per second; a bin without a sample is NaN
    (a gap)."""
    picked = sorted((r["t"], r[col]) for r in rows
                    if is_number(r.get("t")) and is_number(r.get(col)))
    if not picked:
        return [], []
    gaps = sorted(b[0] - a[0] for a, b in zip(picked, picked[1:], strict=False))
    usual = gaps[len(gaps) // 2] if gaps else width
    bins: dict[int, list[tuple[float, float]]] = {}
    prev = picked[0][0] - usual
    for t, v in picked:
        bins.setdefault(int(t // width), []).append((v, max(t - prev, 0.0)))
        prev = t
    t_out, y_out = [], []
    for k in range(min(bins), max(bins) + 1):
        vs = bins.get(k)
        t_out.append((k + 0.5) * width)
        span = sum(dt for _, dt in vs) if vs else 0.0
        if not vs:
            y_out.append(math.nan)
        elif total:
            y_out.append(sum(v for v, _ in vs) / width * scale)
        else:
            y_out.append(sum(v * dt for v, dt in vs) / span * scale if span > 0
                         else sum(v for v, _ in vs) / len(vs) * scale)
    return t_out, y_out


# The run's topology, for theory.
class Theory:
    """Each point's plan, rebuilt from the results directory's scenario.yaml (None when
    it cannot be: then figures go without references)."""

    def __init__(self, res: Results) -> None:
        self.res = res
        self._points: dict[int, tuple[Point, Plan] | None] = {}
        self._all: list[Point] | None = None

    def point(self, index: int) -> tuple[Point, Plan] | None:
        if index not in self._points:
            self._points[index] = self._load(index)
        return self._points[index]

    def _load(self, index: int) -> tuple[Point, Plan] | None:
        if self._all is None:
            self._all = self.res.scenario_points()  # (read as Results reads: through safefs)
        params = next((p["params"] for p in self.res.points if p["index"] == index), None)
        for p in self._all:
            if p.params == params or (params is None and p.index == index):
                try:
                    return p, make_plan(p.topology)
                except NetrigError:
                    return None
        return None


def _dir_name(hop: HopInfo, plan: Plan) -> tuple[str, str]:
    link = plan.topo.link_named(hop.link)
    return hop.link, "a_to_b" if hop.frm == link.a else "b_to_a"


def _route(th: Theory, point: int, flow: dict[str, Any]) -> tuple[Plan, str, str] | None:
    got = th.point(point)
    if got is None or not flow.get("to"):
        return None
    _, plan = got
    return plan, flow.get("sender") or flow["from"], flow.get("receiver") or flow["to"]  # (the record's)


def link_rows(res: Results, run: dict[str, Any]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """A run's recorded link directions: (link, dir) -> its 10 ms samples (the queue
    monitors' rows, and a series/link-stats.jsonl a runner wrote in their form)."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for name in [*run.get("monitors", []), "link-stats"]:
        for r in res.series(run["run"], name):
            if r.get("kind", "queue") == "queue" and "link" in r and "dir" in r:
                out.setdefault((r["link"], r["dir"]), []).append(r)
    return out


# Traces.
def traces(res: Results, run: dict[str, Any], q: str, th: Theory | None = None) -> list[Trace]:
    """One run's series of quantity q: a trace per flow or link direction."""
    th = th or Theory(res)
    flows = run.get("flows", {})
    links = link_rows(res, run)
    out: list[Trace] = []
    if q == "throughput":
        mine = _delivered_by(res, run, th, links)
        for name, f in flows.items():
            if f["kind"] not in BULK:
                continue
            rows = res.series(run["run"], name)
            if name in mine:
                key = mine[name]
                width, quant = _bin_of(th, run, key)
                t, y = binned(links[key], "rate_bps", 1e-6, width)
                out.append(Trace(f"{name}: delivered by {res.direction(*key)}", t, y,
                                 bin_s=width, quant=quant))
            elif any("recv_bps" in r for r in rows):
                out.append(_received(name, rows, _flow_bin(th, run, name, f)))
            elif any("bps" in r for r in rows):
                out.append(Trace(f"{name}: sent (sender's writes)",
                                 *_intervals(rows, "bps", 1e-6), True))
    elif q == "delivered":
        for key, rows in links.items():
            width, quant = _bin_of(th, run, key)
            out.append(Trace(f"{res.direction(*key)} delivered", *binned(rows, "rate_bps", 1e-6, width),
                             bin_s=width, quant=quant))
    elif q in ("cwnd", "tcp_rtt"):
        col, scale = ("cwnd_bytes", 1e-3) if q == "cwnd" else ("rtt_ms", 1.0)
        for name, f in flows.items():
            if f["kind"] != "tcp":
                continue
            info = [r for r in res.series(run["run"], name) if is_number(r.get("cwnd_bytes"))]
            socks = sorted({r.get("socket") or 0 for r in info})
            for k, sock in enumerate(socks, 1):  # each connection of -P its own line
                mine = [r for r in info if (r.get("socket") or 0) == sock]
                out.append(Trace(name if len(socks) == 1 else f"{name} #{k}", [r["t"] for r in mine],
                                 [_nan(r.get(col), scale) for r in mine]))
    elif q == "rtt":
        for name, f in flows.items():
            if f["kind"] in RTT_KINDS:
                rows = [r for r in res.series(run["run"], name) if is_number(r.get("rtt_ms"))]
                if rows:
                    out.append(Trace(name, [r["t"] for r in rows], [r["rtt_ms"] for r in rows]))
    elif q in ("queue", "sojourn", "drops"):
        for key, rows in links.items():
            rows = sorted(rows, key=lambda r: r["t"])
            if q == "queue":
                t, y = [r["t"] for r in rows], [_nan(r.get("queue_packets")) for r in rows]
            elif q == "sojourn":  # no departure in the sample: no sojourn time
                t = [r["t"] for r in rows]
                y = [math.nan if r.get("dequeued") == 0 else _nan(r.get("sojourn_ms")) for r in rows]
            else:
                dropped = [{"t": r["t"], "n": sum(r.get(k) or 0 for k in
                                                  ("drops_overflow", "drops_aqm", "lost"))}
                           for r in rows]
                t, y = binned(dropped, "n", 1.0, total=True)
            out.append(Trace(res.direction(*key), t, y))
    else:
        raise KeyError(q)
    return [tr if tr.steps else replace(tr, t=(g := gaps(tr.t, tr.y))[0], y=g[1]) for tr in out if tr.t]


def _bin_of(th: Theory, run: dict[str, Any], key: tuple[str, str]) -> tuple[float, float | None]:
    """bin_for a recorded link direction, from its rate and frame (with its overhead)."""
    got = th.point(run.get("point", 0))
    h = _hop(got[1], *key) if got else None
    return bin_for(h.rate_bps if h else None, FRAME_BYTES + (h.overhead_bytes if h else 0))


def _flow_bin(th: Theory, run: dict[str, Any], name: str, f: dict[str, Any]) -> tuple[float, float | None]:
    """bin_for a flow's bottleneck (BIN_S when theory has none)."""
    r = _report(th, run, name, f) if f["kind"] in BULK else None
    b = r.bottleneck if r is not None else None
    return bin_for(b.rate_bps if b else None, FRAME_BYTES + (b.overhead_bytes if b else 0))


def _received(name: str, rows: list[dict[str, Any]], chosen: tuple[float, float | None]) -> Trace:
    """A receiver's report intervals: as steps when each is at least the bin bin_for
    chose; else merged into such bins (a 100 ms interval of a slow link holds too few
    packets to read as a rate)."""
    width, quant = chosen
    t, y = _intervals(rows, "recv_bps", 1e-6)
    steps = sorted(b - a for a, b in zip(t, t[1:]) if b > a)
    every = steps[len(steps) // 2] if steps else width
    if every >= width * (1 - 1e-9):
        return Trace(f"{name}: received", t, y, True, every, quant * width / every if quant else None)
    bt, by = binned(rows, "recv_bps", 1e-6, width)
    return Trace(f"{name}: received", bt, by, False, width, quant)


def gaps(t: list[float], y: list[float], factor: float = 3.0) -> tuple[list[float], list[float]]:
    """A gap (NaN) where no sample came for `factor` times the series' usual spacing (a
    stalled emulator, pings without reply), so that a line does not join across it."""
    steps = sorted(b - a for a, b in zip(t, t[1:]) if b > a)
    if len(steps) < 2:
        return t, y
    usual = steps[len(steps) // 2]
    out_t, out_y = t[:1], y[:1]
    for i in range(1, len(t)):
        if t[i] - t[i - 1] > factor * usual:
            out_t.append((t[i - 1] + t[i]) / 2)
            out_y.append(math.nan)
        out_t.append(t[i])
        out_y.append(y[i])
    return out_t, out_y


def _delivered_by(res: Results, run: dict[str, Any], th: Theory,
                  links: dict[tuple[str, str], list[dict[str, Any]]]) -> dict[str, tuple[str, str]]:
    """Bulk flows whose bottleneck direction the run recorded, when no other bulk flow
    crosses it: flow -> (link, dir)."""
    where: dict[str, tuple[str, str]] = {}
    for name, f in run.get("flows", {}).items():
        if f["kind"] not in BULK:
            continue
        got = _route(th, run.get("point", 0), {**f, "name": name})
        if got is None:
            continue
        plan, src, dst = got
        h = bottleneck(hops(plan, src, dst))
        if h is not None and _dir_name(h, plan) in links:
            where[name] = _dir_name(h, plan)
    shared = [k for k in where.values() if list(where.values()).count(k) > 1]
    return {n: k for n, k in where.items() if k not in shared}


# References from theory.
def _ms(s: float) -> str:
    return f"{s * 1e3:.4g} ms"


def refs(res: Results, run: dict[str, Any], q: str, th: Theory | None = None) -> list[Ref]:
    """Theory's reference lines for quantity q in this run, in the quantity's unit."""
    th = th or Theory(res)
    got = th.point(run.get("point", 0))
    if got is None:
        return []
    point, plan = got
    out: list[Ref] = []
    flows = run.get("flows", {})
    if q in ("throughput", "delivered"):
        seen: set[str] = set()
        for name, f in flows.items():
            r = _report(th, run, name, f)
            if f["kind"] not in BULK or r is None or r.bottleneck is None:
                continue
            b = r.bottleneck
            rate = b.rate_bps or 0.0
            # on a flow's throughput, its own bottleneck and expectation (`of`: the flow)
            mine = name if q == "throughput" else None
            if q == "throughput" or b.link not in seen:
                seen.add(b.link)
                out.append(Ref(f"link rate of {b.frm}→{b.to} {rate / 1e6:.4g} Mbit/s", rate / 1e6, ":",
                               mine))
            if q == "throughput" and r.tcp_goodput_bps and f["kind"] == "tcp":
                out.append(Ref(f"TCP goodput there {r.tcp_goodput_bps / 1e6:.4g} Mbit/s",
                               r.tcp_goodput_bps / 1e6, "--", mine))
            e = f.get("expected") or {}
            v = e.get("value")
            if q == "throughput" and e.get("metric") == "throughput_bps" and is_number(v) and \
                    not math.isclose(v, r.tcp_goodput_bps or 0.0, rel_tol=1e-3):
                limit = f", limited by its {e['limit']}" if e.get("limit") else ""
                out.append(Ref(f"{name} expected {v / 1e6:.4g} Mbit/s{limit}",
                               v / 1e6, "-.", mine))
    elif q in ("cwnd", "tcp_rtt"):
        for name, f in flows.items():
            r = _report(th, run, name, f) if f["kind"] == "tcp" else None
            if r is None or r.bottleneck is None or not r.bottleneck.rate_bps:
                continue
            b, rate, frame, mss = r.bottleneck, r.bottleneck.rate_bps, r.data_frame, r.tcp.payload
            queue = _queue_packets(b, frame)
            target = _target(plan, b)
            if q == "cwnd":
                bdp = (r.bdp_bytes or 0.0) / frame  # segments the idle path holds
                out.append(Ref(f"BDP {bdp * mss / 1e3:.4g} KB ({bdp:.3g} segments)", bdp * mss / 1e3, ":"))
                if queue is not None:
                    out.append(Ref(f"BDP + queue {(bdp + queue) * mss / 1e3:.4g} KB "
                                   f"({bdp + queue:.4g} segments)", (bdp + queue) * mss / 1e3, "--"))
                if target is not None:
                    held = bdp + rate * target / 8 / frame
                    out.append(Ref(f"BDP + {b.aqm}'s target queue {held * mss / 1e3:.4g} KB",
                                   held * mss / 1e3, "-."))
                n = len({x.get("socket") for x in res.series(run["run"], name) if "cwnd_bytes" in x})
                top = held if target is not None else bdp + queue if queue is not None else None
                if n > 1 and top is not None:  # what each of -P's connections holds, sharing
                    out.append(Ref(f"{name}'s share per connection, 1/{n} of that: "
                                   f"{top * mss / 1e3 / n:.3g} KB ({top / n:.2g} segments)",
                                   top * mss / 1e3 / n, (0, (1, 3))))
            else:
                out += _rtt_refs(r.data_rtt_s, r.queue_delay_s, target, b.aqm)
    elif q == "rtt":
        for name, f in flows.items():
            if f["kind"] not in RTT_KINDS:
                continue
            r = _report(th, run, name, f)
            if r is None:
                continue
            b = r.bottleneck
            out += _rtt_refs(r.base_rtt_s, r.queue_delay_s, _target(plan, b) if b else None,
                             b.aqm if b else "")
    elif q in ("queue", "sojourn"):
        for key in link_rows(res, run):
            h = _hop(plan, *key)
            if h is None or not h.rate_bps:
                continue
            where = res.direction(*key)
            frame = 1514 + h.overhead_bytes
            target = _target(plan, h)
            queue = _queue_packets(h, frame)
            if q == "queue" and queue is not None:
                out.append(Ref(f"queue limit of {where} {queue:.4g} packets", queue, "--", where))
            if q == "queue" and target is not None:
                out.append(Ref(f"{h.aqm}'s target as packets {h.rate_bps * target / 8 / frame:.3g}",
                               h.rate_bps * target / 8 / frame, "-.", where))
            if q == "sojourn" and target is not None:
                out.append(Ref(f"{h.aqm}'s target {_ms(target)}", target * 1e3, "-.", where))
            if q == "sojourn" and queue is not None:
                full = queue * frame * 8 / h.rate_bps
                out.append(Ref(f"a full queue of {where} {_ms(full)}", full * 1e3, "--", where))
    return _unique(out)


def _rtt_refs(base: float, queue_s: float | None, target: float | None, aqm: str) -> list[Ref]:
    out = [Ref(f"idle RTT {_ms(base)}", base * 1e3, ":")]
    if queue_s:
        out.append(Ref(f"full-queue RTT {_ms(base + queue_s)}", (base + queue_s) * 1e3, "--"))
    if target is not None:
        out.append(Ref(f"idle RTT + {aqm}'s target {_ms(base + target)}", (base + target) * 1e3, "-."))
    return out


def _unique(refs_: Iterable[Ref]) -> list[Ref]:
    seen: dict[tuple[str, str | None], Ref] = {}
    for r in refs_:
        seen.setdefault((r.label, r.of), r)
    return list(seen.values())


def _report(th: Theory, run: dict[str, Any], name: str, f: dict[str, Any]):
    got = _route(th, run.get("point", 0), {**f, "name": name})
    if got is None:
        return None
    plan, src, dst = got
    point, _ = th.point(run.get("point", 0)) or (None, None)
    spec = point.spec.flows.get(name) if point else None
    size = spec.nbytes("size") if spec is not None and f["kind"] in RTT_KINDS else None
    try:
        if size is not None:
            return analyse(plan, src, dst, ping_size=size)
        return analyse(plan, src, dst)
    except NetrigError:
        return None


def _hop(plan: Plan, link: str, d: str) -> HopInfo | None:
    from netrig.theory.path import hop_info
    from netrig.topo.plan import Hop

    try:
        lk = plan.topo.link_named(link)
    except NetrigError:
        return None
    k = 0 if d == "a_to_b" else 1
    return hop_info(Hop(lk, lk.a if k == 0 else lk.b, lk.b if k == 0 else lk.a, k))


def _queue_packets(h: HopInfo, frame: float) -> float | None:
    """The hop's queue limit in packets (a limit in bytes as full-size frames)."""
    if h.queue_packets is not None:
        return float(h.queue_packets)
    if h.queue_bytes is not None:
        return h.queue_bytes / frame
    return None


def _target(plan: Plan, h: HopInfo | None) -> float | None:
    if h is None:
        return None
    link = plan.topo.link_named(h.link)
    return link.direction(0 if h.frm == link.a else 1).aqm.target_s
