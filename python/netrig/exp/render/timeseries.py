"""Time-series figures: each run's throughput, cwnd, RTTs, queue and sojourn over time,
with the events of the scenario as vertical lines and theory's values as reference
lines; one directory's runs, or two directories' runs side by side.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from matplotlib.axes import Axes

from netrig.exp.analysis import series
from netrig.exp.analysis.results import Results
from netrig.exp.render.draw import _chunks, _color, _from_zero, _Plan


# Time series.
def _timeseries(res: Results) -> list[_Plan]:
    """One figure per quantity for a single point (a line per flow or link direction);
    with several points, one per quantity and flow (a line per point). Theory's
    references (series.refs) on each, labelled in the legend."""
    th = series.Theory(res)
    plans = []
    for chunk in _chunks([p["index"] for p in res.points if res.first_run(p["index"])]):
        runs = [(i, res.first_run(i) or {}) for i in chunk]
        got = {q: [(i, series.traces(res, run, q, th), series.refs(res, run, q, th))
                   for i, run in runs] for q in TIMESERIES}
        one = len(runs) == 1
        queued = {tr.label for _, trs, _ in got["queue"] for tr in trs
                  if max((y for y in tr.y if y == y), default=0) > 1}
        for q, per_run in got.items():
            info = series.QUANTITIES[q]
            items = list(dict.fromkeys(tr.label for _, trs, _ in per_run for tr in trs
                                       if q not in ("queue", "sojourn") or tr.label in queued))
            # a flow's connections (`bulk #2`) share its figure when there are several points:
            # each point's in its colour, named once
            flow_of = {x: x.split(" #")[0] for x in items}
            groups = [items] if one else [[x for x in items if flow_of[x] == f]
                                          for f in dict.fromkeys(flow_of.values())]
            for group in groups:
                named: set[int] = set()
                lines = [(tr.label if one else _named_once(named, i, res.label(i) or flow_of[tr.label]),
                          _color(items.index(tr.label) if one else i), tr)
                         for i, trs, _ in per_run for tr in trs if tr.label in group]
                if not lines:
                    continue
                refs = [(ref, None if one else res.label(i), _color(i) if not one else "k")
                        for i, _, rs in per_run for ref in rs if ref.of in (None, *group)]
                of = ", ".join(dict.fromkeys(flow_of[x] for x in group))
                where = f" ({res.label(chunk[0])})" if one and res.label(chunk[0]) else ""
                every = "the point" if one else "each point, one line per point"
                drawn = {tr.label.split(":")[0] for _, _, tr in lines}  # "bulk: delivered by ..."
                shown = [(m, "0.25" if one else _color(i)) for i, run in runs
                         for m in series.marks(run, drawn)]
                plans.append(_Plan(
                    f"ts-{q}-{'all' if one else flow_of[group[0]].split(':')[0]}-p{chunk[0]:03d}",
                    f"{info.what} of {of}{where}",
                    f"{info.what[0].upper()}{info.what[1:]} of {of} against time since the run's "
                    f"start, in the first repetition of {every}. {info.how} Theory's references "
                    "dashed or dotted, named in the legend." + (MARKS_CAPTION if shown else ""),
                    "timeseries", _lines(lines, refs, info.ylabel, shown), [m for m, _ in shown]))
        if not one:
            plans += _connections(res, got["cwnd"])
    return plans


def _connections(res: Results, per_run: list[tuple[int, list[series.Trace], list[series.Ref]]]) -> list[_Plan]:
    """Where several points share a cwnd figure, a figure of its own for each point
    whose flow has several connections (-P): each connection its own line and colour,
    beside its share of the path (as the seed drew its 10 flows)."""
    plans = []
    info = series.QUANTITIES["cwnd"]
    for i, trs, refs in per_run:
        by_flow: dict[str, list[series.Trace]] = {}
        for tr in trs:
            if " #" in tr.label:
                by_flow.setdefault(tr.label.split(" #")[0], []).append(tr)
        for flow, conns in by_flow.items():
            lines = [(tr.label, _color(k), tr) for k, tr in enumerate(conns)]
            top = max((y for tr in conns for y in tr.y if y == y), default=0.0)
            # references far above every line (a full drop-tail queue an AQM never lets
            # build) would squash them: left to the flow's shared figure
            mine = [(r, None, "k") for r in refs if r.of in (None, flow) and r.value <= 2 * top]
            where = f" ({res.label(i)})" if res.label(i) else ""
            plans.append(_Plan(
                f"ts-cwnd-{flow}-connections-p{i:03d}", f"congestion window of each connection of {flow}{where}",
                f"The congestion window of each of {flow}'s {len(conns)} connections against time since "
                f"the run's start, in the first repetition of the point. {info.how} Theory's references "
                "dashed or dotted, named in the legend.", "timeseries", _lines(lines, mine, info.ylabel)))
    return plans


def _named_once(named: set[int], point: int, label: str) -> str:
    """A point's legend label for its first line; matplotlib leaves out the rest."""
    if point in named:
        return f"_{label}"
    named.add(point)
    return label


MARKS_CAPTION = (" Each event of the scenario is a vertical line at the time it happened, "
                 "labelled at the top; the shaded span after it is the outage it caused (the "
                 "longest of the flows drawn, else of any flow).")


TIMESERIES = ("throughput", "cwnd", "tcp_rtt", "rtt", "queue", "sojourn")


def _lines(lines: list[tuple[str, str, series.Trace]],
           refs: list[tuple[series.Ref, str | None, str]], ylabel: str,
           shown: list[tuple[series.Mark, str]] | None = None) -> Callable[[Axes], None]:
    def draw(ax: Axes) -> None:
        for label, color, tr in lines:
            ax.plot(tr.t, tr.y, color=color, lw=1.1, label=label,
                    drawstyle="steps-pre" if tr.steps else "default")
        draw_refs(ax, refs)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(ylabel)
        _from_zero(ax)
        draw_marks(ax, shown or [])

    return draw


def draw_marks(ax: Axes, shown: list[tuple[series.Mark, str]]) -> None:
    """Each event: a vertical line at its time, its label written along it at the top
    of the axes, its measured outage shaded after it, and theory's window for that
    outage as a bar along the bottom (one legend entry each)."""
    from matplotlib.transforms import blended_transform_factory

    on_top = blended_transform_factory(ax.transData, ax.transAxes)
    said = told = False
    placed: list[float] = []
    span = max(ax.get_xlim()[1] - ax.get_xlim()[0], 1e-9)
    # Several runs on one figure: each run's outage and theory in its own colour, the
    # theory bars stacked; an event several runs share is labelled once.
    several = len({c for _, c in shown}) > 1
    labels: dict[tuple[float, str], int] = {}
    for k, (m, color) in enumerate(shown):
        ax.axvline(m.t, color=color, lw=1.0, ls="-" if not m.failed else ":", alpha=0.9, zorder=1.5)
        if m.outage_s > 0:
            ax.axvspan(m.t, m.t + m.outage_s, color=color if several else "tab:red", alpha=0.1, lw=0,
                       zorder=0.5, label=None if said else
                       "outage after an event (measured" + (", in its run's colour)" if several else ")"))
            said = True
        if m.theory_s is not None and m.theory_s[1] > 0:
            lo, hi = m.theory_s
            width = max(hi - lo, 0.004 * span)
            bottom = 0.035 * k if several else 0.0
            ax.axvspan(m.t + lo, m.t + lo + width, ymin=bottom, ymax=bottom + 0.03,
                       color=color if several else "tab:green", alpha=0.85, lw=0, zorder=2.5,
                       label=None if told else "theory: traffic back by then")
            told = True
        text = m.label + (" (failed)" if m.failed else "")
        key = (round(m.t, 1), text)
        labels[key] = labels.get(key, 0) + 1
        if labels[key] > 1:
            continue  # said already, by another run's mark at that time
        # Labels of events close together step down, so that they do not overlap.
        near = sum(1 for x in placed if abs(x - m.t) < 0.04 * span)
        placed.append(m.t)
        shared = sum(1 for n, _ in shown if (round(n.t, 1), n.label + (" (failed)" if n.failed else "")) == key)
        ax.text(m.t, 0.98 - 0.34 * (near % 3), f" {text}", transform=on_top, rotation=90,
                va="top", ha="left", fontsize=7, color="0.25" if shared > 1 else color,
                bbox={"facecolor": "white", "alpha": 0.7, "lw": 0, "pad": 1.0})


def draw_refs(ax: Axes, refs: list[tuple[series.Ref, str | None, str]]) -> None:
    """Theory's horizontal lines, each once (a value all runs share is drawn once,
    without a run's name)."""
    values: dict[tuple[str, float, str], list[tuple[str | None, str]]] = {}
    for ref, who, color in refs:
        values.setdefault((ref.label, ref.value, ref.style), []).append((who, color))
    everyone = {who for _, who, _ in refs}
    for (label, value, style), whose in values.items():
        if {who for who, _ in whose} == everyone:
            ax.axhline(value, color="k", ls=style, lw=1.0, alpha=0.7, label=label)
            continue
        for who, color in whose:
            ax.axhline(value, color=color, ls=style, lw=1.0, alpha=0.7, label=f"{label} ({who})")


def draw_runs(items: list[tuple[str, Results, dict[str, Any]]], q: str) -> Callable[[Axes], None]:
    """A line per (set, run) trace; each run's references."""
    info = series.QUANTITIES[q]

    def draw(ax: Axes) -> None:
        refs = []
        k = 0
        for name, res, run in items:
            th = series.Theory(res)
            who = " ".join(x for x in (name, res.label(run.get("point", 0)) or "") if x) or run["run"]
            for tr in series.traces(res, run, q, th):
                ax.plot(tr.t, tr.y, color=_color(k), lw=1.1, label=f"{who}: {tr.label}",
                        drawstyle="steps-pre" if tr.steps else "default")
                k += 1
            refs += [(ref, who, _color(k - 1)) for ref in series.refs(res, run, q, th)]
        draw_refs(ax, refs)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(info.ylabel)
        top = ax.dataLim.y1
        ax.set_ylim(0, top * 1.1 if top == top and top > 0 else 1.0)
        draw_marks(ax, [(m, "0.25") for _, _, run in items for m in series.marks(run)])

    return draw


def compare_timeseries(sets: list[tuple[str, Results]]) -> list[_Plan]:
    """Each quantity at each sweep point all the directories ran (matched by its sweep
    values), a line per directory: the first repetition of each."""
    plans = []
    base = sets[0][1]
    for p in base.points:
        runs = []
        for name, res in sets:
            match = next((q["index"] for q in res.points if q["params"] == p["params"]), None)
            run = res.first_run(match) if match is not None else None
            if run:
                runs.append((name, res, run))
        if len(runs) < 2:
            continue
        for q in ("throughput", "cwnd", "rtt", "queue", "sojourn"):
            if sum(bool(series.traces(res, run, q)) for _, res, run in runs) < 2:
                continue
            info = series.QUANTITIES[q]
            where = base.label(p["index"])
            plans.append(_Plan(
                f"compare-ts-{q}-p{p['index']:03d}", f"{info.what}{' at ' + where if where else ''}",
                f"{info.what[0].upper()}{info.what[1:]} against time in the first repetition of "
                f"{'the point ' + where if where else 'each directory'}, a line per directory. "
                f"{info.how} Theory's references dashed or dotted.", "timeseries",
                draw_runs(runs, q)))
    return plans
