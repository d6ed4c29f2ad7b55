"""Why a row is far from theory: small rules over a run's own evidence.

Each rule is a function `rule(ev: Evidence) -> str | None`: one sentence when its cause
fits the row, else None. `explain(ev)` runs them all (`RULES`, in order). The physics
is what the examples' headers name (delayed ACKs, CUBIC's slow convergence in a short
run, a FIFO queue that is not max-min fair, PIE at a low rate, slow start); the
evidence is the run's (the link emulator's lateness, drops by cause from the queue
monitor, retransmissions, the window the receiver advertised).

`queue_seen` reads the queue monitor's rows of one run (netrig-link's 100 Hz samples:
per-interval drop counts, the mean sojourn of the packets that left in the interval);
`path_differs` flags a flow whose kernel path was not theory's (run.json's `path`);
`rtt_here` is the RTT theory gives for a run's own queue (base RTT + the mean sojourn
measured on the path both ways), the point inside theory's range for that run.

Pure: no files, no clock; `netrig.exp.render.report` gathers an `Evidence` per row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from netrig.exp.grade.verdict import Versus
from netrig.link import spec as linkspec

FRAME_BYTES = 1514  # a full Ethernet frame (MTU 1500 + 14)
MSS = 1448  # TCP payload of a full segment with timestamps
IW = 10  # Linux's initial window, segments
RETRANS_PCT = 1.0  # retransmissions that cost a loss-based TCP visibly
SLOW_START_SHARE = 0.05  # slow start counted in the mean beyond this share of the run
PIE_STEP_SHARE = 0.25  # one packet's transmission beyond this share of PIE's target


@dataclass
class QueueSeen:
    """One monitored link direction on a flow's path, during the flow."""

    link: str
    dir: str  # a_to_b or b_to_a
    where: str  # `s0→h2`
    aqm: str = "droptail"
    rate_bps: float | None = None
    target_s: float | None = None
    sojourn_ms: float | None = None  # mean over the packets that left (None: none left)
    overflow: int = 0  # dropped arriving at a full queue
    aqm_drops: int = 0  # dropped by the discipline's decision
    lost: int = 0  # random loss the link applies
    ecn: int = 0
    packets_max: int = 0  # the longest the queue was


def queue_seen(rows: Iterable[dict[str, Any]], link: str, d: str, t0: float, t1: float,
               **known: Any) -> QueueSeen | None:
    """A link direction's queue monitor rows from t0 to t1 summed: drops by cause, and
    the mean sojourn weighted by the packets that left (an interval with no departure
    has no sojourn; it is not 0 ms). None when the monitor has no row of it."""
    mine = [r for r in rows if r.get("link") == link and r.get("dir") == d
            and t0 <= (r.get("t") or 0) <= t1]
    if not mine:
        return None
    left = [(r.get("dequeued") or 0, r.get("sojourn_ms") or 0.0) for r in mine]
    n = sum(k for k, _ in left)
    return QueueSeen(link, d, known.pop("where", f"{link} {d}"),
                     sojourn_ms=sum(k * s for k, s in left) / n if n else None,
                     overflow=sum(r.get("drops_overflow") or 0 for r in mine),
                     aqm_drops=sum(r.get("drops_aqm") or 0 for r in mine),
                     lost=sum(r.get("lost") or 0 for r in mine),
                     ecn=sum(r.get("ecn_marks") or 0 for r in mine),
                     packets_max=max((r.get("queue_packets") or 0 for r in mine), default=0), **known)


def rtt_here(base_ms: float | None, queues: list[QueueSeen]) -> float | None:
    """Theory's RTT for the queues a run measured: base + the mean sojourns on the
    path out and back (None without a base or a measured queue)."""
    seen = [q.sojourn_ms for q in queues if q.sojourn_ms is not None]
    if base_ms is None or not seen:
        return None
    return base_ms + sum(seen)


@dataclass
class Evidence:
    """One row of the report (a flow at a sweep point) and what its runs recorded."""

    flow: str
    kind: str  # tcp, udp, ping, probe, fetch, web
    metric: str
    versus: Versus
    limit: str = ""  # what theory says limits it (`link`, `window (W/RTT)`, ...)
    cc: str | None = None  # congestion control as run (the flow's, else the host's)
    parallel: int = 1
    window_bytes: float | None = None  # advertised by the receiver (tcp)
    run_s: float = 0.0  # the flow's length
    omit_s: float = 0.0  # left out of its mean at the start
    base_rtt_ms: float | None = None
    bottleneck_bps: float | None = None
    summary: dict[str, float] = field(default_factory=dict)  # means over the runs
    queues: list[QueueSeen] = field(default_factory=list)  # on its path, summed over runs
    ack_queues: list[QueueSeen] = field(default_factory=list)  # on its ACKs' way back (tcp)
    late_share: float = 0.0  # the worst run's share of packets released late
    late_worst_ms: float = 0.0
    others: list[tuple[str, str]] = field(default_factory=list)  # concurrent (name, kind)
    here: float | None = None  # theory's point for the runs' own queue (RTT rows)
    jain: float | None = None  # Jain's index over the concurrent TCP flows' throughputs
    path: dict[str, Any] | None = None  # run.json's `path` of the flow (netrig.lab.paths)
    # Events that cut the flow off: (what, at s, mean outage s over the runs, theory's text).
    outages: list[tuple[str, float, float, str]] = field(default_factory=list)
    timed_out: list[str] = field(default_factory=list)  # why, per run that timed out
    runs: int = 0
    connect_chance: float | None = None  # theory's, that the connection is made in time
    # Each queue's other traffic (`s0→h2`: ["bulk's data", "web's responses"]): the flows
    # whose data (tcp, udp), responses (fetch, web) or ACKs (tcp) cross it.
    crossing: dict[str, list[str]] = field(default_factory=dict)

    @property
    def side(self) -> str:
        return self.versus.verdict


Rule = Callable[[Evidence], str | None]


def num(x: float, sig: int = 3) -> str:
    """A number for people: `sig` significant digits in plain decimals, never in
    exponent notation (1234.5 -> "1230", 0.00232 -> "0.00232"), trailing zeros dropped."""
    if not math.isfinite(x):
        return "∞" if x > 0 else "-∞" if x < 0 else "not a number"
    if x == 0:
        return "0"
    digits = sig - 1 - math.floor(math.log10(abs(x)))
    text = f"{round(x, digits):.{max(digits, 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def ms(x: float, sig: int = 3) -> str:
    """A time given in ms, in the unit it reads best in: "807 ms", "8.1 ms", "2.3 µs",
    "under 1 µs" (a sojourn of a few ns is no delay anyone can see), "0 ms"."""
    if x <= 0:
        return "0 ms"
    if x < 1e-3:
        return "under 1 µs"
    if x < 1:
        return f"{num(x * 1e3, sig)} µs"
    return f"{num(x, sig)} ms"


def _pct(x: float) -> str:
    return f"{num(x, 2)} %" if x < 10 else f"{x:.0f} %"


CARRY_MS = 1.0  # a queue's mean sojourn below this carries no delay worth naming
CARRY_SHARE = 0.1  # ... nor below this share of the delay measured beyond the base RTT


def carrying(ev: Evidence, queues: Iterable[QueueSeen] | None = None) -> list[QueueSeen]:
    """The queues (of `queues`, else the row's path) whose measured mean sojourn carries
    the delay: at least CARRY_MS, and at least CARRY_SHARE of what an RTT row measured
    beyond its base RTT. A queue packets crossed in microseconds is not where they waited."""
    mean = ev.summary.get(ev.metric)
    excess = mean - ev.base_rtt_ms if (ev.metric.startswith("rtt_ms") and mean is not None
                                        and ev.base_rtt_ms is not None) else 0.0
    least = max(CARRY_MS, CARRY_SHARE * excess)
    return [q for q in (ev.queues if queues is None else queues)
            if q.sojourn_ms is not None and q.sojourn_ms >= least]


def _filled_by(ev: Evidence, q: QueueSeen) -> str:
    """` (filled by web's responses)`: the other flows whose traffic crosses q."""
    names = [n for n in ev.crossing.get(q.where, []) if not n.startswith(f"{ev.flow}'s")]
    return f" (filled by {_and(names)})" if names else ""


def _and(xs: list[str]) -> str:
    return xs[0] if len(xs) == 1 else f"{', '.join(xs[:-1])} and {xs[-1]}"


def late_emulator(ev: Evidence) -> str | None:
    """The host was too busy for the emulator to keep time: delays and rates moved."""
    if ev.late_share <= linkspec.LATE_SHARE:
        return None
    return (f"The link emulator released {_pct(100 * ev.late_share)} of its packets more than "
            f"{linkspec.LATE_BUDGET_S * 1e3:g} ms late (the worst {ms(ev.late_worst_ms)}): "
            "the host was too busy for exact delays and rates, which moves every number of this "
            "run; run it again on a quieter host.")


def drops(ev: Evidence) -> str | None:
    """Drops on the path, by cause, when a rate is below or a delay above theory."""
    if not ev.versus.flag:
        return None
    parts = []
    for q in ev.queues:
        causes = [f"{n} {what}" for n, what in (
            (q.overflow, "arriving at a full queue"), (q.aqm_drops, f"by {q.aqm}'s decision"),
            (q.lost, "to the link's random loss"), (q.ecn, "ECN-marked")) if n]
        if causes:
            parts.append(f"{q.where}: {', '.join(causes)}")
    if not parts:
        return None
    tcp = " (each loss halves or cuts a loss-based TCP's window)" if ev.kind == "tcp" else ""
    return f"Packets dropped on its path{tcp}: {'; '.join(parts)}."


def retransmissions(ev: Evidence) -> str | None:
    """A TCP flow below theory that retransmitted a visible share of its segments."""
    pct = ev.summary.get("retrans_pct")
    if ev.kind != "tcp" or ev.side != "below" or pct is None or pct < RETRANS_PCT:
        return None
    return (f"It retransmitted {_pct(pct)} of its segments: each loss costs it a round of "
            "recovery and a smaller window, time theory's fluid share does not count.")


def delayed_acks(ev: Evidence) -> str | None:
    """A window-limited TCP flow below W/RTT: a window of few segments waits on the
    receiver's delayed ACKs."""
    if ev.kind != "tcp" or not ev.limit.startswith("window") or ev.side != "below":
        return None
    w = ev.window_bytes
    segs = f" of {num(w / MSS)} segments ({num(w / 1e3, 4)} KB)" if w else ""
    return (f"Its window{segs} limits it: W/RTT assumes each segment is acknowledged one RTT "
            "after it left, but Linux's receiver delays ACKs (one per two segments, up to 40 ms "
            "for a lone one), so a window's last segments wait and it sends less than W/RTT.")


def cubic_unfair(ev: Evidence) -> str | None:
    """CUBIC beside other TCP flows, off its fair share in a short run."""
    tcp = [n for n, k in ev.others if k == "tcp"]
    if ev.kind != "tcp" or (ev.cc or "").lower() != "cubic" or not tcp or not ev.versus.flag:
        return None
    jain = f"; Jain's index over the flows was {ev.jain:.3f}" if ev.jain is not None else ""
    return (f"CUBIC beside {', '.join(tcp)}: its window grows with the cube of the time since its "
            f"last loss, so flows that start or lose at different moments converge to equal shares "
            f"only over many loss epochs, and a {num(ev.run_s)} s run need not see them meet"
            f"{jain}.")


def fifo_not_fair(ev: Evidence) -> str | None:
    """A FIFO (drop-tail) queue shared with TCP: not max-min fair to the others. Only a
    queue that did hold the flow's packets (its sojourn carries the delay: `carrying`) or
    dropped them arriving full."""
    held = carrying(ev)
    fifo = [q for q in ev.queues if q.aqm == "droptail" and q.rate_bps
            and (q in held or q.overflow > 0)]
    tcp = [n for n, k in ev.others if k == "tcp"]
    hurt = (ev.kind == "udp" and (ev.side == "below" or ev.summary.get("loss_pct", 0) > 0)) or \
        (ev.kind in ("ping", "probe", "fetch", "web") and ev.side == "above")
    if not (fifo and tcp and hurt and ev.versus.flag):
        return None
    return (f"{fifo[0].where} is a FIFO (drop-tail) queue, and FIFO is not max-min fair: "
            f"{', '.join(tcp)} keep{'s' * (len(tcp) == 1)} it full, so this flow's packets wait "
            "behind that queue and are dropped when they arrive at it full, although its rate is "
            "below its fair share; theory's share is a fluid, fair split.")


def pie_low_rate(ev: Evidence) -> str | None:
    """PIE at a rate where one packet takes a sizable share of its target to send."""
    if not ev.versus.flag:
        return None
    for q in ev.queues:
        if q.aqm != "pie" or not q.rate_bps or not q.target_s:
            continue
        tx = FRAME_BYTES * 8 / q.rate_bps
        if tx < PIE_STEP_SHARE * q.target_s:
            continue
        held = f" (it held the queue at {ms(q.sojourn_ms)} on average)" if q.sojourn_ms else ""
        return (f"PIE at {num(q.rate_bps / 1e6)} Mbit/s on {q.where}: one packet takes "
                f"{ms(tx * 1e3, 2)} to send, {tx / q.target_s:.0%} of its "
                f"{ms(q.target_s * 1e3)} target, so its delay estimate moves a packet at a "
                "time and its drop probability in jumps: the queue swings between empty (the link "
                f"idles, throughput falls) and several packets (delay above the target){held}."
                ).replace("%", " %")
    return None


def slow_start(ev: Evidence) -> str | None:
    """A short TCP run whose mean counts slow start."""
    if ev.kind != "tcp" or ev.side != "below" or not ev.bottleneck_bps or not ev.base_rtt_ms:
        return None
    rtt = ev.base_rtt_ms / 1e3
    bdp = ev.bottleneck_bps * rtt / 8
    if bdp <= IW * MSS or ev.run_s <= 0:
        return None
    rounds = math.ceil(math.log2(bdp / (IW * MSS)))
    t = rounds * rtt
    counted = max(0.0, t - ev.omit_s)
    if counted < SLOW_START_SHARE * max(ev.run_s - ev.omit_s, 1e-9):
        return None
    return (f"Slow start: from {IW} segments it needs about {rounds} RTTs ({num(t, 2)} s) to reach the "
            f"path's BDP of {num(bdp / 1e3)} KB, {counted / (ev.run_s - ev.omit_s):.0%} of the "
            f"{num(ev.run_s - ev.omit_s)} s its mean counts (omit: {num(ev.omit_s)} s)."
            ).replace("%", " %")


def sender_short(ev: Evidence) -> str | None:
    """A paced sender that could not keep its rate."""
    short = ev.summary.get("sender_short_pct")
    if short is None or short <= 1.0:
        return None
    return (f"Its sender fell {_pct(short)} short of its rate (stalled by the host): the path was "
            "offered less than the scenario says.")


ACK_WAIT = 0.25  # of the base RTT: ACKs waiting this long in a queue slow the sender


def ack_queue(ev: Evidence) -> str | None:
    """A TCP flow below theory whose ACKs waited in a queue on their way back (other
    traffic the other way filled it): theory counts a free ACK path."""
    if ev.kind != "tcp" or ev.side != "below" or not ev.base_rtt_ms:
        return None
    slow = [q for q in ev.ack_queues if q.sojourn_ms and q.sojourn_ms >= ACK_WAIT * ev.base_rtt_ms]
    if not slow:
        return None
    where = "; ".join(f"{q.where} a mean of {ms(q.sojourn_ms)}, up to "
                      f"{q.packets_max} packets" for q in slow)
    fillers = list(dict.fromkeys(n for q in slow for n in ev.crossing.get(q.where, [])
                                 if not n.startswith(f"{ev.flow}'s")))
    beside = [n for n, _ in ev.others]  # a record without hops: the flows beside it
    by = (f": {_and(fillers)} filled that queue" if fillers else
          f" (what {', '.join(beside)} sent that way)" if beside and not ev.crossing else "")
    return (f"Its ACKs waited in a queue on their way back{by}: {where}, against a base RTT "
            f"of {ms(ev.base_rtt_ms)}. ACKs that come late and in bunches leave the sender "
            "idle, then bursting; theory's share assumes a free way back.")


def queue_measured(ev: Evidence) -> str | None:
    """An RTT row: theory's point for the queue the monitor measured in these runs."""
    if ev.here is None or ev.kind not in ("ping", "probe") or not ev.versus.flag:
        return None
    mean = ev.summary.get(ev.metric)
    carry = carrying(ev)
    if not carry or ev.base_rtt_ms is None:
        return None
    held = ", ".join(f"{ms(q.sojourn_ms)} on {q.where}{_filled_by(ev, q)}" for q in carry)
    rest = [q for q in ev.queues if q.sojourn_ms is not None and q not in carry]
    also = (f"; its other queues held packets {ms(max(q.sojourn_ms or 0.0 for q in rest))} at most"
            if rest else "")
    ratio = f"; measured is {num(mean / ev.here)} × that" if mean else ""
    those = "that queue" if len(carry) == 1 else "those queues"
    return (f"The queue monitor measured a mean sojourn of {held}{also}: for {those} theory's "
            f"RTT is {num(ev.base_rtt_ms, 4)} + that = {num(ev.here, 4)} ms{ratio}.")


def path_differs(flow: str, rec: dict[str, Any] | None) -> str | None:
    """A flow whose kernel path is not the one theory predicted (run.json's `path`:
    netrig.lab.paths.flow_paths), unless ECMP explains it (the kernel's leg is one of
    the equal paths theory lists)."""
    if not rec:
        return None
    pred, kern = rec.get("predicted"), rec.get("kernel")
    if not pred or not kern or pred == kern:
        return None
    if rec.get("ecmp") and kern in (rec.get("equal") or []):
        return None
    a, b = rec.get("predicted_cost") or "", rec.get("kernel_cost") or ""
    if a and b:
        head = a.rsplit(" ", 1)[0]
        costs = f" ({a} vs {b.removeprefix(head + ' ')})" if b.startswith(head + " ") else f" ({a} vs {b})"
    else:
        costs = ""
    return (f"flow {flow} took {' '.join(kern)}, theory expected {' '.join(pred)}{costs}: its "
            "figures are compared with the wrong path.")


def event_outage(ev: Evidence) -> str | None:
    """Scheduled events (a link down, a router stopped) cut the flow off for a visible
    share of its run: theory's rate or delay holds only while its path is up."""
    cut = sum(o for _, _, o, _ in ev.outages)
    if not ev.versus.flag or not ev.run_s or cut < 0.05 * ev.run_s:
        return None
    parts = [f"{what} at {num(at)} s cut it off for {num(o)} s" + (f" (theory: {th})" if th else "")
             for what, at, o, th in ev.outages if o > 0]
    up = ev.run_s - cut
    rate = ev.summary.get("throughput_bps") if ev.metric == "throughput_bps" else None
    while_up = (f"; over the {num(up)} s its path was up it averaged {num(rate * ev.run_s / up / 1e6, 4)} Mbit/s"
                if rate and up > 0 else "")
    return (f"Events stopped it for {num(cut)} s of its {num(ev.run_s)} s: {'; '.join(parts)}{while_up}. "
            "Theory's value holds only while the path is up.")


def time_outs(ev: Evidence) -> str | None:
    """A tcp/udp flow that timed out (never connected, or moved no data) where theory
    expected data: its mean counts those runs' zeros."""
    if not ev.timed_out or ev.side != "below":
        return None
    k, n = len(ev.timed_out), max(ev.runs, len(ev.timed_out))
    chance = (f"; theory gave its connection a {ev.connect_chance:.0%} chance to be made and set up "
              "in time" if ev.connect_chance is not None else "; theory expected it to connect")
    return (f"It timed out in {k} of {n} run{'s' * (n > 1)} ({ev.timed_out[0]}), counted as 0"
            f"{chance}.").replace("%", " %")


def wrong_path(ev: Evidence) -> str | None:
    """The kernel took another path than theory's: every number theory gave is for that
    other path."""
    return path_differs(ev.flow, ev.path)


RULES: tuple[Rule, ...] = (wrong_path, time_outs, event_outage, queue_measured, ack_queue, pie_low_rate, fifo_not_fair, cubic_unfair,
                           delayed_acks, slow_start, retransmissions, drops, sender_short,
                           late_emulator)


def explain(ev: Evidence, rules: Iterable[Rule] = RULES) -> list[str]:
    """Every rule's sentence that fits the row, in RULES' order."""
    return [s for rule in rules if (s := rule(ev))]
