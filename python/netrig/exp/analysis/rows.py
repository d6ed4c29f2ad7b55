"""The rows every reader shows: one flow at one sweep point, over its repetitions. The one
averaging step (the mean and its 95 % CI of the metric theory predicts), graded against
theory once with the tolerance the point's runs were graded with, and the runs'
own grades counted (`flagged`). A point the campaign never ran (interrupted, or
failed before its runs) gives one row per flow that says so (`ran == 0`), so a partial
result is never read as a whole one. The headline, the report, the CSV's readers and
`compare` all read these rows.

A row far from theory carries why (exp/analysis/why.py), from the evidence its runs
recorded (`evidence`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from netrig import units
from netrig.exp.analysis import why
from netrig.exp.analysis.results import Results
from netrig.exp.analysis.stats import is_number, mean_ci
from netrig.exp.analysis.words import MEASURED
from netrig.exp.grade.verdict import Versus, versus
from netrig.exp.kinds.registry import also as also_of
from netrig.exp.kinds.registry import plain_metric
from netrig.exp.spec.model import LOAD_KINDS, overlaps


@dataclass
class Row:
    """One flow at one sweep point, over its repetitions."""

    label: str  # the point's sweep values
    params: dict[str, Any]
    flow: str
    metric: str
    values: list[float]  # the metric in each repetition that measured it
    expected: float | None
    hi: float | None
    limit: str
    detail: str
    ran: int  # repetitions that ran the flow (0: its point never ran)
    flagged: int  # of them, graded outside the tolerance when they ran
    also: list[tuple[str, float]]  # what else is worth a glance: (summary column, its mean)
    tol: float = 0.1  # the tolerance the point's runs were graded with
    here: float | None = None  # theory's point for the runs' own queue (an RTT range)
    why: list[str] = field(default_factory=list)  # why it is far (netrig.exp.analysis.why)
    kind: str = ""

    @property
    def not_run(self) -> bool:
        return self.ran == 0

    @property
    def versus(self) -> Versus:
        """The mean against theory: the one ratio and verdict (netrig.exp.grade.verdict)."""
        return versus(self.mean, self.expected, self.hi, self.tol)

    @property
    def far(self) -> bool:
        """Outside the tolerance on average, or in some repetition."""
        return self.versus.flag or self.flagged > 0

    @property
    def mean(self) -> float | None:
        return mean_ci(self.values)[0] if self.values else None

    @property
    def ci(self) -> float | None:
        return mean_ci(self.values)[1] if self.values else None

    @property
    def position(self) -> float | None:
        """Where the mean sits in an expected range (0 its low end, 1 its top)."""
        return self.versus.position

    @property
    def ratio(self) -> float | None:
        return self.versus.ratio


def summary(res: Results) -> list[Row]:
    """Every flow at every sweep point, in point then scenario order; a point with no
    finished run gives each flow a row that says so (`not_run`)."""
    rows = []
    flows = res.flows()
    for p in res.points:
        i = p["index"]
        if not res.runs_of(i):
            rows += [Row(res.label(i), p["params"], flow, plain_metric(first["kind"]), [], None, None,
                         "", "", 0, 0, [], res.tolerance_of(i), kind=first["kind"]) for flow, first in flows.items()]
            continue
        for flow, first in flows.items():
            entries = [r["flows"][flow] for r in res.runs_of(i) if flow in r.get("flows", {})]
            if not entries:
                continue
            e = next((x["expected"] for x in entries if x.get("expected")), {})
            m = e.get("metric") or plain_metric(first["kind"])
            also = [(k, got[0]) for k in also_of(first["kind"]) if (got := res.mean(i, flow, k))]
            flagged = sum(bool((x.get("expected") or {}).get("flag")) for x in entries
                          if (x.get("summary") or {}).get("status", "ok") in MEASURED)
            heres = [h for r in res.runs_of(i) if flow in r.get("flows", {})
                     if (h := res.here(r, flow)) is not None]
            row = Row(res.label(i), p["params"], flow, m, res.values(i, flow, m),
                      e.get("value"), e.get("hi"), e.get("limit") or "",
                      e.get("detail") or "", len(entries), flagged, also, res.tolerance_of(i),
                      sum(heres) / len(heres) if heres else None, kind=first["kind"])
            if row.far:
                row.why = why.explain(evidence(res, i, row))
            rows.append(row)
    return rows


def missing_points(res: Results) -> int:
    """How many sweep points have no finished run (an interrupted or failed campaign)."""
    return sum(1 for p in res.points if not res.runs_of(p["index"]))


def evidence(res: Results, point: int, r: Row) -> why.Evidence:
    """What the point's runs recorded about a row's flow, for the why-rules."""
    runs = [x for x in res.runs_of(point) if r.flow in x.get("flows", {})]
    entries = [x["flows"][r.flow] for x in runs]
    first = entries[0]
    nums: dict[str, list[float]] = {}
    for f in entries:
        for k, v in (f.get("summary") or {}).items():
            if is_number(v):
                nums.setdefault(k, []).append(float(v))
    summary = {k: sum(v) / len(v) for k, v in nums.items()}
    queues: dict[tuple[str, str], why.QueueSeen] = {}
    sojourns: dict[tuple[str, str], list[float]] = {}
    for run in runs:
        for q in res.queues(run, r.flow):
            key = (q.link, q.dir)
            if q.sojourn_ms is not None:
                sojourns.setdefault(key, []).append(q.sojourn_ms)
            if key not in queues:
                queues[key] = q
            else:
                t = queues[key]
                t.overflow, t.aqm_drops, t.lost, t.ecn = (t.overflow + q.overflow, t.aqm_drops + q.aqm_drops,
                                                          t.lost + q.lost, t.ecn + q.ecn)
    for key, q in queues.items():
        q.sojourn_ms = sum(sojourns[key]) / len(sojourns[key]) if key in sojourns else None
    acks: dict[tuple[str, str], list[why.QueueSeen]] = {}
    for run in runs:
        for q in res.queues(run, r.flow, acks=True):
            acks.setdefault((q.link, q.dir), []).append(q)
    ack_queues = [replace(qs[0], sojourn_ms=sum(s) / len(s) if (s := [q.sojourn_ms for q in qs
                                                                       if q.sojourn_ms is not None])
                          else None, packets_max=max(q.packets_max for q in qs))
                  for qs in acks.values()]
    late, worst = 0.0, 0.0
    for run in runs:
        emu = run.get("emulator") or {}
        if emu.get("packets"):
            late = max(late, (emu.get("over_budget") or 0) / emu["packets"])
            worst = max(worst, (emu.get("late_max_us") or 0) / 1e3)
    others = _beside(first, runs[0], r.flow)
    spec = first.get("spec") or {}  # the flow's keys as it ran
    tcp = [r.flow] + [n for n, k in others if k == "tcp"]
    jain = None
    if len(tcp) > 1:
        xs = [m for n in tcp if (v := res.values(point, n, "throughput_bps")) for m in [sum(v) / len(v)]]
        jain = sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if xs and any(xs) else None
    extra = (first.get("expected") or {}).get("extra") or {}
    return why.Evidence(
        r.flow, first["kind"], r.metric, r.versus, r.limit,
        cc=spec.get("cc") or (res.meta.get("host") or {}).get("tcp_congestion_control_default"),
        parallel=int(spec.get("parallel") or 1), window_bytes=summary.get("window_bytes"),
        run_s=sum((f.get("end_s") or 0) - (f.get("start_s") or 0) for f in entries) / len(entries),
        omit_s=units.seconds(spec["omit"]) if spec.get("omit") is not None else 0.0,
        base_rtt_ms=extra.get("base_rtt_ms"),
        bottleneck_bps=extra.get("bottleneck_bps"), summary=summary, queues=list(queues.values()),
        ack_queues=ack_queues,
        late_share=late, late_worst_ms=worst, others=others, here=r.here, jain=jain,
        path=next((p for f in entries if (p := f.get("path")) and why.path_differs(r.flow, p)),
                  first.get("path")), outages=_outages(runs, r.flow),
        timed_out=[(f.get("summary") or {}).get("error", "") for f in entries
                   if (f.get("summary") or {}).get("status") == "timed_out"],
        runs=len(entries), connect_chance=extra.get("connect_chance"), crossing=crossing(runs[0]))


def crossing(run: dict[str, Any]) -> dict[str, list[str]]:
    """Each link direction (`h2→s0`) and the traffic of the run's flows that crosses it,
    from their recorded hops: a tcp/udp flow's data, a fetch's or web flow's responses
    (its `back`), then a tcp flow's ACKs (pings are too few to fill a queue)."""
    out: dict[str, list[str]] = {}
    for what, way, kinds in (("data", "data", ("tcp", "udp")), ("responses", "back", ("fetch", "web")),
                             ("ACKs", "acks", ("tcp",))):
        for name, f in (run.get("flows") or {}).items():
            if f.get("kind") not in kinds:
                continue
            for h in (f.get("hops") or {}).get(way) or []:
                out.setdefault(f"{h.get('from')}→{h.get('to')}", []).append(f"{name}'s {what}")
    return out


def _outages(runs: list[dict[str, Any]], flow: str) -> list[tuple[str, float, float, str]]:
    """Each event's outage of `flow`, its mean over the runs (why.event_outage)."""
    seen: dict[tuple[str, float], list[tuple[float, str]]] = {}
    for run in runs:
        for e in run.get("events") or []:
            o = (e.get("outage") or {}).get(flow)
            if o and o.get("outage_s") is not None:
                th = (f"{o['theory_low_s']:.3g}–{o['theory_high_s']:.3g} s, {o.get('theory', '')}"
                      if o.get("theory_low_s") is not None and o.get("theory_high_s") is not None else "")
                seen.setdefault((e.get("what", "?"), e.get("planned_s", 0.0)), []).append((o["outage_s"], th))
    return [(what, at, sum(x for x, _ in v) / len(v), v[0][1]) for (what, at), v in seen.items()]


def _beside(f: dict[str, Any], run: dict[str, Any], name: str) -> list[tuple[str, str]]:
    """The load flows of a run (tcp, udp) that overlap this flow for more than half of it."""
    mine = (f.get("start_s") or 0.0, f.get("end_s") or 0.0)
    return [(n, g["kind"]) for n, g in run.get("flows", {}).items()
            if n != name and g.get("kind") in LOAD_KINDS
            and overlaps(mine, (g.get("start_s") or 0.0, g.get("end_s") or 0.0))]
