"""Events in time, measured: the outage each caused and how long routing took to settle.

Pure (no clock, no process): the runner fires the events (runner.py) and records the
flows' samples and the routers' route changes; this module reads those.

    timeline(spec)            the events in time order, as theory sees them (when the
                              same link or router comes back, whether an SPF ran shortly
                              before)
    probe_outage(samples, at) a probe's outage: samples are (send time, RTT ms or None
                              when no answer came); from the event to the send time of
                              the first probe answered after the run of losses the event
                              started (0 when none started)
    bulk_outage(t, bps, at)   a bulk flow's: from the event to the end of the run of
                              empty report intervals it started (0 when none)
    routing_stable(changes, at, until)   the last route change in any router after the
                              event (before the next one), minus the event's time
    measure(...)              each event's outage per flow, beside theory's window

A run of losses is the event's when it starts no earlier than one RTT before the event
(packets already on the wire when a link goes silent are lost with it), within WITHIN_S
after it and before the next event (less that one RTT); a hole that started earlier is
another cause's. A TCP flow's outage runs to its first non-empty report interval: it
includes TCP's retransmission backoff after the path is back, and the interval's
resolution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from netrig.exp.spec.model import EventSpec, ScenarioFile
from netrig.theory import outage as theory
from netrig.topo.model import Topology

WITHIN_S = 1.0  # a run of losses starting later than this after an event is not its own
EMPTY = 0.05  # a report interval below 5 % of the flow's usual rate carried nothing


@dataclass(frozen=True)
class Planned:
    index: int  # in the scenario's list
    spec: EventSpec
    event: theory.Event

    @property
    def label(self) -> str:
        return self.spec.label


def timeline(spec: ScenarioFile, topo: Topology, end_s: float) -> list[Planned]:
    """The scenario's events in time order (ties in file order); end_s: the run's end."""
    order = sorted(range(len(spec.events)), key=lambda i: (spec.events[i].at_s, i))
    spf_hold_max = topo.ospf_ms("spf_max_hold") / 1e3
    out = []
    for k, i in enumerate(order):
        ev = spec.events[i]
        back = _back(spec, order[k + 1:], ev)
        prev = [spec.events[j] for j in order[:k] if spec.events[j].action not in ("command", "set")]
        recent = any(ev.at_s - p.at_s < spf_hold_max for p in prev)
        out.append(Planned(i, ev, theory.Event(ev.action, ev.at_s, ev.link if ev.link else None,
                                               ev.router, back, end_s, recent)))
    return out


def _back(spec: ScenarioFile, later: list[int], ev: EventSpec) -> float | None:
    """When what the event takes away comes back: the next up (carrier up, start) of
    the same link (router)."""
    undo = {"down": ("up",), "carrier_down": ("carrier_up",), "stop": ("start",)}.get(ev.action)
    if undo is None:
        return None
    for j in later:
        e = spec.events[j]
        if e.action in undo and e.target == ev.target:
            return e.at_s
    return None


# Measuring.
def _slack(s: list[tuple[float, float | None]], at: float) -> float:
    """How long before `at` a packet may have been sent and still be lost by what
    happened at `at`: the RTT of the last answer before it (at most 1 s), + 5 ms."""
    before = [r for t, r in s if t < at and r is not None]
    return min((before[-1] if before else 0.0) / 1e3, 1.0) + 0.005


def probe_outage(samples: list[tuple[float, float | None]], at: float,
                 within: float = WITHIN_S, until: float = math.inf) -> tuple[float, bool]:
    """(outage s, recovered): samples (send time, RTT ms or None: lost) of one probe;
    `until`: the next event (a run of losses it started is not this one's)."""
    s = sorted(samples, key=lambda x: x[0])
    slack = _slack(s, at)
    latest = min(at + within, until - _slack(s, until)) if until < math.inf else at + within
    i = 0
    while i < len(s):
        t, r = s[i]
        if r is not None:
            i += 1
            continue
        j = i
        while j < len(s) and s[j][1] is None:
            j += 1
        # losses s[i:j]
        if t >= at - slack:
            if t >= latest:
                return 0.0, True
            if j < len(s):
                return max(0.0, s[j][0] - at), True
            return max(0.0, s[-1][0] - at), False
        i = j
    return 0.0, True


def bulk_outage(t: list[float], bps: list[float], at: float,
                within: float = WITHIN_S, until: float = math.inf) -> tuple[float, bool]:
    """(outage s, recovered): a flow's report intervals (t: each interval's end, bps:
    its rate; a missing interval, a gap in t, counts as empty). Resolution: the
    interval."""
    pts = sorted((a, b) for a, b in zip(t, bps, strict=False) if b == b)
    if len(pts) < 2:
        return 0.0, True
    steps = sorted(b[0] - a[0] for a, b in zip(pts, pts[1:], strict=False) if b[0] > a[0])
    width = steps[len(steps) // 2] if steps else 1.0
    usual = sorted(v for tt, v in pts if tt <= at) or sorted(v for _, v in pts)
    floor = EMPTY * usual[len(usual) // 2]
    # Intervals as (start, end, empty), gaps in the series as empty intervals.
    ivs: list[tuple[float, float, bool]] = []
    prev = pts[0][0] - width
    for tt, v in pts:
        if tt - prev > 1.5 * width:
            ivs.append((prev, tt - width, True))
        ivs.append((tt - width, tt, v <= floor))
        prev = tt
    k = 0
    while k < len(ivs):
        start, _, empty = ivs[k]
        if not empty:
            k += 1
            continue
        m = k
        while m < len(ivs) and ivs[m][2]:
            m += 1
        if ivs[k][1] > at and start >= at - width:
            if start > min(at + within, until):
                return 0.0, True
            end = ivs[m - 1][1]
            return max(0.0, end - at), m < len(ivs)
        k = m
    return 0.0, True


def routing_stable(changes: list[dict[str, Any]], at: float, until: float = math.inf) -> float | None:
    """Seconds from the event to the last route change (any router) after it and before
    `until` (the next event); None when no route changed."""
    ts = [c["t"] for c in changes if at <= c.get("t", -1) < until]
    return max(ts) - at if ts else None


@dataclass
class FlowSeries:
    """What a flow left that an outage is measured from."""

    kind: str  # probe, ping, tcp, udp
    src: str
    dst: str
    probes: list[tuple[float, float | None]] | None = None  # probe/ping: (send t, RTT or None)
    intervals: tuple[list[float], list[float]] | None = None  # bulk: (t, bps)
    resolution_s: float = 0.0


def measure(planned: list[Planned], fired: list[dict[str, Any]], flows: dict[str, FlowSeries],
            changes: list[dict[str, Any]] | None, expect) -> list[dict[str, Any]]:
    """Each fired event (runner's records, by index) with its outage per flow, theory's
    window beside (`expect(event, src, dst, both_ways)` -> Window or None) and how long
    routing took to settle (None without a route monitor)."""
    by_index = {f["index"]: f for f in fired}
    out = []
    for k, p in enumerate(planned):
        rec = dict(by_index.get(p.index) or {"index": p.index, "what": p.label, "planned_s": p.spec.at_s})
        at = rec.get("actual_s", p.spec.at_s)
        nxt = planned[k + 1].spec.at_s if k + 1 < len(planned) else math.inf
        if changes is not None:
            st = routing_stable(changes, at, nxt)
            rec["routing_stable_s"] = None if st is None else round(st, 3)
        per: dict[str, Any] = {}
        for name, fs in flows.items():
            if fs.probes is not None:
                got, ok = probe_outage(fs.probes, at, until=nxt)
            elif fs.intervals is not None:
                got, ok = bulk_outage(*fs.intervals, at, until=nxt)
            else:
                continue
            w = expect(p.event, fs.src, fs.dst, fs.kind in ("probe", "ping"))
            if w is not None and fs.kind == "tcp":
                w = theory.after_backoff(w)
            slack = fs.resolution_s + 0.05
            entry: dict[str, Any] = {"outage_s": round(got, 3), "recovered": ok,
                                     "resolution_s": fs.resolution_s}
            if w is not None:
                entry.update({"theory_low_s": w.low_s,
                              "theory_high_s": None if math.isinf(w.high_s) else w.high_s,
                              "theory": w.why, "verdict": theory.judge(got, w, slack)})
            per[name] = entry
        rec["outage"] = per
        out.append(rec)
    return out


def sentence(name: str, o: dict[str, Any], verdict: bool = True) -> str:
    """`probe: outage 3.62 s; theory 3–4.05 s (OSPF dead 4 s, hello 1 s, SPF 0 ms): within`
    (without `: within` when not `verdict`)."""
    got = f"outage {o['outage_s']:.3g} s" + ("" if o.get("recovered", True) else " (not back by the end)")
    if "theory_low_s" not in o:
        return f"{name}: {got}"
    hi = o["theory_high_s"] if o.get("theory_high_s") is not None else math.inf
    return (f"{name}: {got}; theory {theory.span(o['theory_low_s'], hi)} ({o['theory']})"
            + (f": {o.get('verdict', '')}" if verdict else ""))


def note(run: dict[str, Any]) -> str:
    """A sentence when an event of the run failed (the run went on without it)."""
    bad = [e for e in run.get("events") or [] if not e.get("ok", True)]
    if not bad:
        return ""
    return (f"run {run.get('run')}: event(s) failed (the run went on): "
            + "; ".join(f"{e.get('what')} at {e.get('planned_s', 0):g} s: {e.get('error', '')[:200]}"
                        for e in bad))
