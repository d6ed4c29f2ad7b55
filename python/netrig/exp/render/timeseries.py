"""Time-series figures: each run's throughput, cwnd, RTTs, queue and sojourn over time,
with the events of the scenario as vertical lines and theory's values as reference
lines; one directory's runs, or two directories' runs side by side.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from matplotlib.axes import Axes

from netrig.exp.analysis import series
from netrig.exp.analysis.results import Results
from netrig.exp.render.draw import (
    _chunks,
    _color,
    _Plan,
    data_top,
    edge_notes,
    merge_refs,
    off_scale,
)


# Time series.
def _timeseries(res: Results) -> list[_Plan]:
    """One figure per quantity for a single point (a line per flow or link direction);
    with several points, one per quantity and flow, a panel per point (sharing the time
    axis, each with its own references and events) rather than the points' lines
    overlaid. Theory's references (series.refs) on each, named once in the legend; one
    far above the data named at the axis edge instead (draw_refs)."""
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
            # a flow's connections (`bulk #2`) share its figure when there are several points
            flow_of = {x: x.split(" #")[0] for x in items}
            groups = [items] if one else [[x for x in items if flow_of[x] == f]
                                          for f in dict.fromkeys(flow_of.values())]
            for group in groups:
                panels = []  # (point, its lines, its references, its events)
                for i, trs, rs in per_run:
                    lines = [(tr.label, _color(group.index(tr.label)), tr) for tr in trs
                             if tr.label in group]
                    if not lines:
                        continue
                    drawn = {tr.label.split(":")[0] for _, _, tr in lines}  # "bulk: delivered by ..."
                    run = dict(runs)[i]
                    owners = {x.split(":")[0].split(" #")[0] for x in group}  # `bulk: delivered by`
                    panels.append((i, lines, [(ref, None, "k") for ref in rs
                                              if ref.of in (None, *group, *owners)],
                                   [(m, "0.25") for m in series.marks(run, drawn)]))
                if not panels:
                    continue
                of = ", ".join(dict.fromkeys(flow_of[x] for x in group))
                where = f" ({res.label(chunk[0])})" if one and res.label(chunk[0]) else ""
                every = "the point" if one else "each point, a panel per point"
                shown = [m for *_, ms in panels for m, _ in ms]
                trs = [tr for _, lines, _, _ in panels for _, _, tr in lines]
                caption = (f"{info.what[0].upper()}{info.what[1:]} of {of} against time since the run's "
                           f"start, in the first repetition of {every}. {info.how}{bins_caption(trs)} "
                           "Theory's references dashed or dotted, named in the legend; one far above "
                           "the data is named at the top edge (↑) instead of stretching the axis."
                           + (MARKS_CAPTION if shown else ""))
                name = f"ts-{q}-{'all' if one else flow_of[group[0]].split(':')[0]}-p{chunk[0]:03d}"
                if one:
                    _, lines, refs, marks_ = panels[0]
                    draw = _lines(lines, refs, info.ylabel, marks_)
                    plans.append(_Plan(name, f"{info.what} of {of}{where}", caption, "timeseries",
                                       draw, [m for m, _ in marks_]))
                else:
                    plans.append(_Plan(name, f"{info.what} of {of}, a panel per point", caption,
                                       "timeseries", _panels(panels, info.ylabel),
                                       [m for m, _ in shown], [res.label(i) or f"point {i}" for i, *_ in panels]))
        if not one:
            plans += _connections(res, got["cwnd"])
    return plans


def bins_caption(trs: list[series.Trace]) -> str:
    """What the rate bins are, in words: their width and the quantisation one packet
    more or less gives a bin (said plainly when it is above series.WITHIN)."""
    said = []
    for width, quant in dict.fromkeys((tr.bin_s, tr.quant) for tr in trs if tr.bin_s):
        if quant is None:
            said.append(f"{width:g} s bins")
        elif quant > series.WITHIN * (1 + 1e-9):
            said.append(f"{width:g} s bins, in which one packet more or less moves the rate by "
                        f"±{100 * quant:.2g} % (above ±{100 * series.WITHIN:g} %: a slow link)")
        else:
            said.append(f"{width:g} s bins, in which one packet more or less moves the rate by "
                        f"±{100 * quant:.2g} %")
    return f" Rates averaged in {'; '.join(said)}." if said else ""


def _panels(panels: list[tuple[int, list[tuple[str, str, series.Trace]],
                               list[tuple[series.Ref, str | None, str]], list[tuple[series.Mark, str]]]],
            ylabel: str) -> Callable[[list[Axes]], None]:
    """Each point on its own axes (a figure's panel): its lines, references and events."""
    def draw(axes: list[Axes]) -> None:
        for ax, (_, lines, refs, shown) in zip(axes, panels, strict=True):
            _lines(lines, refs, ylabel, shown)(ax)
    return draw


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
            # references far above every line (a full drop-tail queue an AQM never lets
            # build) are named at the top edge (draw_refs)
            mine = [(r, None, "k") for r in refs if r.of in (None, flow)]
            where = f" ({res.label(i)})" if res.label(i) else ""
            plans.append(_Plan(
                f"ts-cwnd-{flow}-connections-p{i:03d}", f"congestion window of each connection of {flow}{where}",
                f"The congestion window of each of {flow}'s {len(conns)} connections against time since "
                f"the run's start, in the first repetition of the point. {info.how} Theory's references "
                "dashed or dotted, named in the legend.", "timeseries", _lines(lines, mine, info.ylabel)))
    return plans


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
        draw_refs(ax, refs, data_top(tr.y for _, _, tr in lines))
        ax.set_xlabel("time (s)")
        ax.set_ylabel(ylabel)
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


def draw_refs(ax: Axes, refs: list[tuple[series.Ref, str | None, str]], top: float) -> None:
    """Theory's horizontal lines, each once (a value all runs share is drawn once,
    without a run's name), above the data; one far above the data's `top` (off_scale)
    is named at the top edge instead of stretching the axis, which runs from 0 to a
    little above the data and the references drawn."""
    drawn = merge_refs(refs)
    far = off_scale([v for _, v, _, _ in drawn], top)
    for (label, value, style, color), off in zip(drawn, far, strict=True):
        if not off:
            ax.axhline(value, color=color, ls=style, lw=1.1, alpha=0.8, label=label, zorder=3)
    edge_notes(ax, [(label, color) for (label, _, _, color), off in zip(drawn, far, strict=True) if off])
    high = max([top, *(v for (_, v, _, _), off in zip(drawn, far, strict=True) if not off)])
    ax.set_ylim(0, high * 1.1 if math.isfinite(high) and high > 0 else 1.0)


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
        draw_refs(ax, refs, data_top(line.get_ydata() for line in ax.get_lines()))
        ax.set_xlabel("time (s)")
        ax.set_ylabel(info.ylabel)
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
