"""Figures of a results directory: what a paper would show, chosen from the data.

    sweep       each flow's headline metric (a udp flow's jitter and loss, a tcp flow's
                retransmissions when it had any, too) against
                each numeric sweep key: mean ± 95 % CI over repetitions, theory dashed
                beside it (its range shaded), one curve per value of the other keys;
                with no numeric key, grouped bars over the first key
    fairness    concurrent tcp/udp flows: throughput beside the expected share, Jain's index
    cdf         ping/probe RTT and fetch time, every sample of a point pooled
    timeseries  the first repetition of each point (series.py: sources and theory's
                references): throughput (delivered where a link was recorded), cwnd and
                RTT from tcp_info, ping/probe RTT, queue length and sojourn of each
                monitored link direction that queued (held more than one packet)

Every time series marks the run's events (series.marks): a vertical line labelled at
its top, the measured outage shaded after it; `Figure.marks` lists what was drawn.

Up to six points share an axes (one line each) and at most MAX_FIGURES are drawn, time
series last. Sweep axes are named in words with units (`axis_words`); legends sit
outside the axes, right of the data. Each figure is written in every format asked
(`formats`: png at DPI, svg, pdf; default FORMATS, or NETRIG_FIGURE_FORMATS=png,svg,pdf)
through matplotlib's Agg canvas (no display, no pyplot state). `compare_figures` draws N
results directories on shared axes, each labelled by what differs (differ.py).

Sweep values as numbers are axes.py's (`axis`), the units each metric is shown in
kinds/metrics.py's (`metric`, the report's too), what every figure shares draw.py's and
the time series timeseries.py's. Reading the directory back (`Results`) and the
statistics (`Results.mean`, `stats.mean_ci`) are exp/analysis's.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.ticker import NullFormatter

from netrig import safefs
from netrig.exp.analysis import series
from netrig.exp.analysis.differ import labelled
from netrig.exp.analysis.results import Results, load
from netrig.exp.analysis.stats import is_number, mean_ci
from netrig.exp.analysis.words import case_name, short
from netrig.exp.kinds.metrics import metric
from netrig.exp.render.axes import Axis, axis, axis_words
from netrig.exp.render.draw import (
    _HATCHES,
    _MARKS,
    _STYLE_WORDS,
    _STYLES,
    KNOWN_FORMATS,
    MAX_FIGURES,
    RTT_KINDS,
    Figure,
    Figures,
    _chunks,
    _color,
    _err,
    _from_zero,
    _once,
    _Plan,
    _save,
    data_top,
    edge_notes,
    figure,
    formats_of,
    merge_refs,
    off_scale,
)
from netrig.exp.render.timeseries import _timeseries, compare_timeseries
from netrig.exp.spec.model import LOAD_KINDS, overlaps
from netrig.theory import jain


def make_figures(out: Path, formats: Iterable[str] | None = None, res: Results | None = None) -> Figures:
    """Draws the figures of a results directory into out/figures (replacing its old
    ones), each in every format of `formats` (see formats_of); `res`: out read back
    already (what it refuses is kept there)."""
    res = res or load(out)
    plans = _sweep_plans([("", res)]) + _fairness(res) + _cdfs(res) + _timeseries(res)
    return _render(plans, out, formats)


def compare_figures(sets: list[tuple[str, Results]] | Results, out: Path, *older: Path,
                    formats: Iterable[str] | None = None) -> Figures:
    """N results directories on shared axes, each set labelled by its name (what
    differs: differ.labelled): the sweep curves (or bars), then each quantity's time
    series at each sweep point they share, a line per set. Drawn into out/figures.

    `compare_figures(a, b, out)` (compare.compare's older call) labels a and b itself."""
    if isinstance(sets, Results):
        sets, out = labelled([sets, out]), older[0]  # type: ignore[list-item]
    assert isinstance(sets, list)
    return _render(_sweep_plans(sets) + compare_timeseries(sets), out, formats)


def _render(plans: list[_Plan], out: Path, formats: Iterable[str] | None = None) -> Figures:
    """Draws into out/figures (its old figures removed), through no link (safefs)."""
    fmts = formats_of(formats)
    dest = safefs.makedirs(out, "figures")
    for ext in KNOWN_FORMATS:
        safefs.remove_matching(out, "figures", f".{ext}")
    done = Figures()
    done.omitted = max(0, len(plans) - MAX_FIGURES)
    stems: set[str] = set()
    for plan in plans[:MAX_FIGURES]:
        fig = figure(plan.draw, plan.title, plan.panels)
        stem, k = re.sub(r"[^A-Za-z0-9_.=-]+", "_", plan.name), 1
        while (stem if k == 1 else f"{stem}-{k}") in stems:
            k += 1
        stem = stem if k == 1 else f"{stem}-{k}"
        stems.add(stem)
        files = _save(fig, out, (dest / stem).relative_to(out), fmts)
        done.append(Figure(files[0][0], plan.title, plan.caption, plan.kind, [p for p, _ in files],
                           plan.marks, files[0][1]))
    return done


# Sweep curves and bars.
def _sweep_plans(sets: list[tuple[str, Results]]) -> list[_Plan]:
    """Headline metrics against the sweep keys; several sets (a comparison) share axes."""
    base = sets[0][1]
    if not base.keys:
        return []
    axes = [a for k in base.keys if (a := axis(k, [v for _, r in sets for v in r.key_values(k)]))]
    plans = []
    for flow, f in base.flows().items():
        e = f.get("expected") or {}
        if not e.get("metric"):
            continue
        also = {"udp": ["jitter_ms", "loss_pct"], "tcp": ["retrans_pct", "retrans_pct_capture"]}.get(f["kind"], [])
        for m in [e["metric"]] + [a for a in also if a != e["metric"]]:
            if any(base.values(p["index"], flow, m) for p in base.points) and (
                    m == e["metric"] or any(v for p in base.points for v in base.values(p["index"], flow, m))):
                plans += [_curve_plan(sets, flow, m, a) for a in axes] \
                    or [_bar_plan(sets, flow, m, base.keys[0])]
    return plans


def _curve_groups(res: Results, x: str) -> dict[str, list[int]]:
    """Points by the values of the other sweep keys: label -> point indices."""
    groups: dict[str, list[int]] = {}
    for p in res.points:
        groups.setdefault(res.describe(p["params"], x), []).append(p["index"])
    return groups


def _curve_plan(sets: list[tuple[str, Results]], flow: str, m: str, x: Axis) -> _Plan:
    info = metric(m)
    compare = len(sets) > 1

    def draw(ax: Axes) -> None:
        colors: dict[str, str] = {}
        for si, (name, res) in enumerate(sets):
            params = {p["index"]: p["params"] for p in res.points}
            for group, pts in _curve_groups(res, x.key).items():
                color = colors.setdefault(group, _color(len(colors)))
                pts = sorted((p for p in pts if x.key in params[p] and res.values(p, flow, m)),
                             key=lambda p: x.of(params[p][x.key]))
                if not pts:
                    continue
                xs = [x.of(params[p][x.key]) for p in pts]
                stats = [res.mean(p, flow, m) or (0.0, None) for p in pts]
                errs = [(ci or 0.0) * info.scale for _, ci in stats]
                ax.errorbar(xs, [mean * info.scale for mean, _ in stats],
                            yerr=errs if any(errs) else None, color=color, capsize=3,
                            ls=_STYLES[si % len(_STYLES)], marker=_MARKS[si % len(_MARKS)],
                            label=" ".join(s for s in (name, group) if s) or "measured")
                if si == 0:
                    _theory_line(ax, xs, [res.theory(p, flow, m) for p in pts], info.scale, color,
                                 f"theory {group}".strip(), ":" if compare else "--",
                                 list(colors).index(group))
                _time_outs(ax, res, flow, [(x, p, len(res.values(p, flow, m))) for x, p in zip(xs, pts)])
        ax.set_xlabel(x.label)
        ax.set_ylabel(info.axis)
        if x.log:
            ax.set_xscale("log")
        ticks = sorted(set(x.numbers.values()))
        if len(ticks) <= 10:
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
            ax.xaxis.set_minor_formatter(NullFormatter())
        _from_zero(ax)

    keys = sets[0][1].keys
    others = ", ".join(short(k, keys) for k in keys if k != x.key)
    return _Plan(f"sweep-{flow}-{m}-vs-{x.key}", f"{flow}: {info.label} vs {axis_words(x.key)}",
                 f"{flow}: {info.axis} against {x.key}: mean over the repetitions of each point, "
                 "error bars the 95 % confidence interval (Student t)"
                 + (f"; one curve per value of {others}. " if others else ". ")
                 + (f"{sets[0][0]} solid, then " + ", ".join(
                     f"{n} {_STYLE_WORDS[i % len(_STYLES)]}" for i, (n, _) in enumerate(sets) if i)
                    + f"; theory (from {sets[0][0]}) dotted." if compare else
                    "Theory dashed with hollow markers, drawn over the measured curves; its range "
                    "(when it predicts one) outlined and hatched, each curve's hatch its own."),
                 "sweep", draw)


def _time_outs(ax: Axes, res: Results, flow: str, at: list[tuple[float, int, int]]) -> None:
    """A red cross on the axis where the flow timed out (never connected, or moved no
    data), and how many of the point's repetitions did."""
    for x, p, n in at:
        k = res.timed_out(p, flow)
        if not k:
            continue
        shown = "timed out" in ax.get_legend_handles_labels()[1]
        ax.plot([x], [0], ls="", marker="X", ms=11, color="tab:red", zorder=5,
                label=None if shown else "timed out")
        ax.annotate(f"timed out{f' {k}/{n}' if n > 1 else ''}", (x, 0), textcoords="offset points",
                    xytext=(0, 10), ha="center", fontsize=8, color="tab:red")


_THEORY_MARKS = ("o", "s", "D", "^", "v", "p")  # hollow, each group's, shrinking: nested, all seen
_RANGE_HATCHES = ("//", "\\\\", "||", "--", "..", "xx")


def _theory_line(ax: Axes, xs: list[float], theory: list[tuple[float | None, float | None]],
                 scale: float, color: str, label: str, style: str, k: int = 0) -> None:
    """Theory's values of one curve (the k-th) dashed, above the measured curves (zorder):
    hollow markers of the curve's own shape and size, so that two curves' markers at
    one point nest and both show; a range tinted under everything and outlined and
    hatched above the measured lines, each curve's hatch its own, so that a narrow range
    (PIE's) shows over a wide one (drop-tail's)."""
    lo = [v * scale if is_number(v) else math.nan for v, _ in theory]
    if all(math.isnan(v) for v in lo):
        return
    ax.plot(xs, lo, ls=style, color=color, marker=_THEORY_MARKS[k % len(_THEORY_MARKS)],
            ms=max(11 - 2.5 * (k % 3), 5), mfc="none", mew=1.6, lw=1.4, alpha=0.95, zorder=4,
            label=label)
    hi = [h * scale if is_number(h) else math.nan for _, h in theory]
    if any(not math.isnan(h) for h in hi):
        ax.fill_between(xs, lo, hi, color=color, alpha=0.1, lw=0, zorder=0.8)
        ax.fill_between(xs, lo, hi, facecolor="none", edgecolor=color, alpha=0.35, lw=0,
                        hatch=_RANGE_HATCHES[k % len(_RANGE_HATCHES)], zorder=3.5,
                        label=f"{label} range")
        ax.plot(xs, hi, ls="-", color=color, lw=1.0, alpha=0.9, zorder=3.6)


def _bar_plan(sets: list[tuple[str, Results]], flow: str, m: str, key: str) -> _Plan:
    info = metric(m)
    base = sets[0][1]
    groups = base.key_values(key)

    def draw(ax: Axes) -> None:
        combos = list(_curve_groups(base, key))
        width = 0.8 / (len(combos) * len(sets))
        seen: set[str] = set()
        for si, (name, res) in enumerate(sets):
            for p in res.points:
                value, other = p["params"].get(key), res.describe(p["params"], key)
                vals = res.values(p["index"], flow, m)
                if value not in groups or other not in combos or not vals:
                    continue
                bi = combos.index(other)
                x = groups.index(value) + (si * len(combos) + bi + 0.5) * width - 0.4
                mean, ci = mean_ci(vals)
                ax.bar(x, mean * info.scale, width * 0.9, yerr=_err(ci, info.scale), capsize=3,
                       color=_color(bi), hatch=_HATCHES[si % len(_HATCHES)],
                       alpha=0.6 if si else 0.9,
                       label=_once(seen, " ".join(s for s in (name, other) if s) or "measured"))
                _time_outs(ax, res, flow, [(x, p["index"], len(vals))])
                v, hi = res.theory(p["index"], flow, m)
                if si == 0 and is_number(v):
                    ax.hlines(v * info.scale, x - width / 2, x + width / 2, colors="k",
                              linestyles="--", label=_once(seen, "theory"))
                    if is_number(hi):
                        ax.bar(x, (hi - v) * info.scale, width, bottom=v * info.scale, color="k",
                               alpha=0.12)
        named = [case_name(key, g) for g in groups]
        ax.set_xticks(range(len(groups)), [textwrap.fill(n if n is not None else base.describe({key: g}), 20)
                                           for n, g in zip(named, groups)])
        ax.set_xlabel(words)
        ax.set_ylabel(info.axis)
        _from_zero(ax)

    # a joint key that names its points (`description,...`): "case", not its every path
    cases = any(case_name(key, g) is not None for g in groups)
    words, stem = ("case", "case") if cases else (axis_words(key), key)
    return _Plan(f"sweep-{flow}-{m}-by-{stem}", f"{flow}: {info.label} by {words}",
                 f"{flow}: {info.axis} for each value of {key}: mean over the repetitions, error "
                 "bars the 95 % confidence interval (Student t); theory as a dashed line on each "
                 "bar, its range shaded." + (" Bars of each directory in order, "
                                             f"{sets[0][0]} plain, the others hatched."
                                             if len(sets) > 1 else ""), "sweep", draw)


# Fairness.
def concurrent(run: dict[str, Any]) -> list[str]:
    """The tcp/udp flows of a run that ran beside another (overlapping by more than
    half the shorter one's time)."""
    bulk = {n: f for n, f in run.get("flows", {}).items() if f["kind"] in LOAD_KINDS
            and f["summary"].get("status", "ok") == "ok"
            and is_number(f["summary"].get("throughput_bps"))}

    def span(f: dict[str, Any]) -> tuple[float, float]:
        return f["start_s"], f["end_s"]

    return [n for n, f in bulk.items()
            if any(overlaps(span(f), span(g)) or overlaps(span(g), span(f)) for m, g in bulk.items() if m != n)]


def _fairness(res: Results) -> list[_Plan]:
    found = [(p["index"], flows) for p in res.points
             if (run := res.first_run(p["index"])) and len(flows := concurrent(run)) >= 2]
    plans = []
    for chunk in _chunks(found):
        means = [{f: mean_ci(res.values(i, f, "throughput_bps")) for f in flows}
                 for i, flows in chunk]
        jains = [jain([mean for mean, _ in pm.values()]) for pm in means]
        names = list(dict.fromkeys(f for _, flows in chunk for f in flows))

        def draw(ax: Axes, chunk=chunk, means=means, jains=jains, names=names) -> None:
            width = 0.8 / len(names)
            seen: set[str] = set()
            for gi, ((i, flows), pm) in enumerate(zip(chunk, means, strict=True)):
                for f in flows:
                    x = gi + (names.index(f) + 0.5) * width - 0.4
                    mean, ci = pm[f]
                    ax.bar(x, mean * 1e-6, width * 0.9, yerr=_err(ci, 1e-6), capsize=3,
                           color=_color(names.index(f)), label=_once(seen, f))
                    share, _ = res.theory(i, f, "throughput_bps")
                    if is_number(share):
                        ax.hlines(share * 1e-6, x - width / 2, x + width / 2, colors="k",
                                  linestyles="--", label=_once(seen, "expected share"))
            ticks = [f"{res.label(i)}\nJain {j:.3f}".strip()
                     for (i, _), j in zip(chunk, jains, strict=True)]
            ax.set_xticks(range(len(chunk)), ticks, fontsize="small")
            ax.set_ylabel("throughput (Mbit/s)")
            if res.keys:
                ax.set_xlabel("sweep point")
            _from_zero(ax)

        title = (f"Fairness of {', '.join(chunk[0][1])}: Jain's index {jains[0]:.3f}"
                 if len(chunk) == 1 else
                 "Fairness of concurrent flows (Jain's index under each point)")
        plans.append(_Plan(f"fairness-p{chunk[0][0]:03d}", title,
                           "Throughput of each concurrent tcp/udp flow (Mbit/s; mean over the "
                           "repetitions, error bars the 95 % CI) beside the share theory expects "
                           "(dashed); Jain's index of the mean throughputs.", "fairness", draw))
    return plans


# CDFs.
def _cdfs(res: Results) -> list[_Plan]:
    th = series.Theory(res)
    plans = []
    for flow, f in res.flows().items():
        if f["kind"] not in (*RTT_KINDS, "fetch", "web"):
            continue
        col, scale, what = ("rtt_ms", 1.0, "RTT") if f["kind"] in RTT_KINDS else \
            ("fetch_s", 1e3, "fetch time")
        m = (f.get("expected") or {}).get("metric")
        for chunk in _chunks(res.points):
            lines, refs = [], []
            for p in chunk:
                xs = sorted(r[col] * scale for run in res.runs_of(p["index"])
                            if flow in run.get("flows", {})
                            for r in res.series(run["run"], flow) if is_number(r.get(col)))
                if xs:
                    who, color = res.label(p["index"]) or flow, _color(p["index"])
                    lines.append((who, color, xs))
                    refs += [(ref, who, color) for ref in _cdf_refs(res, th, p["index"], flow, f, m)]
            if lines:
                plans.append(_Plan(f"cdf-{flow}-p{chunk[0]['index']:03d}", f"{flow}: CDF of {what}",
                                   f"Distribution of {flow}'s {what} (ms): every sample of every "
                                   "repetition of a point pooled, one line per point. Theory's "
                                   "values as vertical lines (a value every point shares in black, "
                                   "named once; else in its point's colour); one far beyond the "
                                   "samples named at the right edge (→).", "cdf",
                                   _cdf(lines, f"{what} (ms)", refs)))
    return plans


def _cdf_refs(res: Results, th: series.Theory, point: int, flow: str, f: dict[str, Any],
              m: str | None) -> list[series.Ref]:
    """Theory's values for a CDF, in ms: an RTT's idle RTT, full-queue RTT and idle RTT
    + the AQM's target (series.refs); a fetch's time on an idle path and with the queue."""
    run = res.first_run(point)
    if run is None:
        return []
    if f["kind"] in RTT_KINDS:
        return [r for r in series.refs(res, run, "rtt", th)]
    lo, hi = res.theory(point, flow, m) if m else (None, None)
    if not is_number(lo):
        return []
    out = [series.Ref(f"theory, idle path {lo * 1e3:.4g} ms", lo * 1e3, ":")]
    if is_number(hi):
        out.append(series.Ref(f"theory, with the queue up to {hi * 1e3:.4g} ms", hi * 1e3, "--"))
    return out


def _cdf(lines: list[tuple[str, str, list[float]]], xlabel: str,
         refs: list[tuple[series.Ref, str | None, str]] | None = None) -> Callable[[Axes], None]:
    def draw(ax: Axes) -> None:
        for label, color, xs in lines:
            ax.step(xs, [(k + 1) / len(xs) for k in range(len(xs))], where="post", color=color,
                    label=f"{label} (n={len(xs)})", zorder=2)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction of samples ≤ x")
        ax.set_ylim(0, 1.02)
        top = data_top(xs for _, _, xs in lines)
        drawn = vertical_refs(ax, refs or [], top)
        positive = [x for _, _, xs in lines for x in xs if x > 0] + [v for v in drawn if v > 0]
        if positive and max(positive) / min(positive) > 100:
            ax.set_xscale("log")

    return draw


def vertical_refs(ax: Axes, refs: list[tuple[series.Ref, str | None, str]], top: float) -> list[float]:
    """Theory's values as vertical lines above the data, each once (one every point
    shares in black, without a point's name); one beyond off_scale of the data's `top`
    named at the right edge instead. Returns the values drawn."""
    drawn = merge_refs(refs)
    far = off_scale([v for _, v, _, _ in drawn], top)
    for (label, value, style, color), off in zip(drawn, far, strict=True):
        if not off:
            ax.axvline(value, color=color, ls=style, lw=1.1, alpha=0.85, zorder=3, label=label)
    edge_notes(ax, [(label, color) for (label, _, _, color), off in zip(drawn, far, strict=True) if off],
               along="x")
    return [v for (_, v, _, _), off in zip(drawn, far, strict=True) if not off]
