"""Figures of a results directory: what a paper would show, chosen from the data.

    sweep       each flow's headline metric (a udp flow's jitter and loss, a tcp flow's
                retransmissions when it had any, too) against
                each numeric sweep key: mean ± 95 % CI over repetitions, theory dashed
                beside it (its range shaded), one curve per value of the other keys;
                with no numeric key, grouped bars over the first key
    fairness    concurrent tcp/udp flows: throughput beside the expected share, Jain's index
    cdf         ping/probe RTT and fetch time, every sample of a point pooled
    timeseries  the first repetition of each point: throughput of each tcp/udp flow,
                cwnd and RTT from tcp_info, ping/probe RTT, queue length and sojourn of
                each monitored link direction that queued (held more than one packet)

Up to six points share an axes (one line each) and at most MAX_FIGURES are drawn, time
series last. PNGs through matplotlib's Agg canvas (no display, no pyplot state).

Also owns sweep values as numbers (`axis`) and the units each metric is shown in
(`metric`): the report uses the same. Reading the directory back (`Results`) and the
statistics (`mean_ci`) live in results.py.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import NullFormatter

from netrig import safefs, units
from netrig.exp.results import Results, is_number, load, mean_ci, short
from netrig.exp.results import label as value_text
from netrig.link import spec as linkspec
from netrig.theory import jain

MAX_FIGURES = 30
PER_AXES = 6  # sweep points drawn on one axes
DPI = 110
SIZE = (7.5, 4.2)  # inches
BULK = ("tcp", "udp")
RTT_KINDS = ("ping", "probe")

Line = tuple[str, list[float], list[float]]  # (what, x, y)


# Units.
@dataclass(frozen=True)
class Metric:
    label: str
    unit: str
    scale: float  # stored value × scale = shown value

    @property
    def axis(self) -> str:
        """`throughput (Mbit/s)`."""
        return f"{self.label} ({self.unit})" if self.unit else self.label


_METRICS = {
    "throughput_bps": Metric("throughput", "Mbit/s", 1e-6),
    "sent_bps": Metric("sending rate", "Mbit/s", 1e-6),
    "rtt_ms_p50": Metric("median RTT", "ms", 1.0),
    "rtt_ms_mean": Metric("mean RTT", "ms", 1.0),
    "rtt_ms_p99": Metric("99th percentile RTT", "ms", 1.0),
    "fetch_s_mean": Metric("mean fetch time", "ms", 1e3),
    "fetch_s_p50": Metric("median fetch time", "ms", 1e3),
    "fetch_s_max": Metric("longest fetch time", "ms", 1e3),
    "loss_pct": Metric("loss", "%", 1.0),
    "jitter_ms": Metric("jitter", "ms", 1.0),
    "retrans_pct": Metric("retransmitted segments", "%", 1.0),
    "command_s": Metric("command time", "s", 1.0),
}
_SUFFIX = {"_bps": ("Mbit/s", 1e-6), "_ms": ("ms", 1.0), "_s": ("s", 1.0), "_pct": ("%", 1.0)}


def metric(name: str) -> Metric:
    """How a summary column is shown: its words, unit and scale."""
    if name in _METRICS:
        return _METRICS[name]
    for suffix, (unit, scale) in _SUFFIX.items():
        if name.endswith(suffix):
            return Metric(name[: -len(suffix)].replace("_", " "), unit, scale)
    return Metric(name.replace("_", " "), "", 1.0)


@dataclass(frozen=True)
class Axis:
    """A numeric sweep key: each value (by its text) as a number in the label's unit."""

    key: str
    label: str  # "flows.bulk.window (KB)"
    numbers: dict[str, float]
    log: bool

    def of(self, value: Any) -> float:
        return self.numbers[str(value)]


# A flow's keys; a link's come from the link-spec schema (`_kind`).
_KEY_KIND = {
    **dict.fromkeys(("window", "length", "size", "bytes"), "size"),
    **dict.fromkeys(("duration", "interval", "start", "omit", "settle", "timeout"), "seconds"),
    "tolerance": "fraction", "rate": "rate", "mss": "number", "parallel": "number",
    "count": "number",
}
_SCHEMA_KIND = {"duration": "seconds", "rate": "rate", "fraction": "fraction", "bytes": "size",
                "queue": "packets", "count": "number", "number": "number"}


def _kind(key: str) -> str | None:
    """How a sweep key's values read: a link key's kind from the schema, else a flow's."""
    return _SCHEMA_KIND.get(linkspec.axis_kind(key) or "") or _KEY_KIND.get(key)


def _packets(v: Any) -> float:
    n, _ = units.queue_limit(v)
    if n is None:
        raise ValueError(f"{v!r} is a size, not packets")
    return float(n)


def _number(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise TypeError(f"{v!r} is not a number")
    return float(v)


_PARSE: dict[str, Callable[[Any], float]] = {
    "size": units.size_bytes, "seconds": units.seconds, "rate": units.rate_bps,
    "fraction": units.fraction, "packets": _packets, "number": _number}
_SHOWN = {  # kind -> [(least smallest value, unit, scale)], first match
    "size": [(1e6, "MB", 1e-6), (1e3, "KB", 1e-3), (0, "bytes", 1.0)],
    "seconds": [(1.0, "s", 1.0), (1e-3, "ms", 1e3), (0, "µs", 1e6)],
    "rate": [(1e9, "Gbit/s", 1e-9), (1e6, "Mbit/s", 1e-6), (1e3, "kbit/s", 1e-3),
             (0, "bit/s", 1.0)],
    "fraction": [(0, "%", 100.0)], "packets": [(0, "packets", 1.0)], "number": [(0, "", 1.0)],
}


def axis(key: str, values: Iterable[Any]) -> Axis | None:
    """The sweep key as a numeric axis, or None when its values are not numbers
    (`droptail`, `pie`). Units by the key's name (`window`: a size), else by the values."""
    raw = list(values)
    last = key.rsplit(".", 1)[-1]
    if _kind(last):
        kinds = [_kind(last), "size" if last == "queue" else "number"]
    elif all(is_number(v) for v in raw):
        kinds = ["number"]
    else:
        kinds = ["fraction", "seconds", "rate", "size"]
    for kind in kinds:
        try:
            base = [float(_PARSE[kind](v)) for v in raw]
        except (ValueError, TypeError):
            continue
        if not base or not all(math.isfinite(b) for b in base):
            continue
        least = min((abs(b) for b in base if b), default=0.0)
        unit, scale = next((u, s) for low, u, s in _SHOWN[kind] if least >= low)
        return Axis(key, f"{key} ({unit})" if unit else key,
                    {str(v): b * scale for v, b in zip(raw, base, strict=True)},
                    min(base) > 0 and max(base) / min(base) > 100)
    return None


# Drawing.
@dataclass
class Figure:
    path: Path
    title: str
    caption: str
    kind: str  # "sweep", "fairness", "cdf" or "timeseries"


class Figures(list[Figure]):
    """The figures drawn; `omitted`: how many more MAX_FIGURES left out."""

    omitted: int = 0


@dataclass
class _Plan:
    name: str
    title: str
    caption: str
    kind: str
    draw: Callable[[Axes], None]


def make_figures(out: Path) -> Figures:
    """Draws the figures of a results directory into out/figures (replacing its PNGs)."""
    res = load(out)
    plans = _sweep_plans([("", res)]) + _fairness(res) + _cdfs(res) + _timeseries(res)
    return _render(plans, out)


def compare_figures(a: Results, b: Results, out: Path) -> Figures:
    """The sweep curves of two results directories on shared axes (A solid, B dashed),
    drawn into out/figures."""
    return _render(_sweep_plans([("A", a), ("B", b)]), out)


def _render(plans: list[_Plan], out: Path) -> Figures:
    """Draws into out/figures (its old PNGs removed), through no link (safefs)."""
    dest = safefs.makedirs(out, "figures")
    safefs.remove_matching(out, "figures", ".png")
    done = Figures()
    done.omitted = max(0, len(plans) - MAX_FIGURES)
    for plan in plans[:MAX_FIGURES]:
        fig = MplFigure(figsize=SIZE, layout="constrained")
        ax = fig.add_subplot()
        plan.draw(ax)
        ax.set_title(plan.title, fontsize=10.5)
        ax.grid(True, alpha=0.35)
        ax.set_axisbelow(True)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
        stem = re.sub(r"[^A-Za-z0-9_.=-]+", "_", plan.name)
        path, k = dest / f"{stem}.png", 1
        while any(f.path == path for f in done):
            k += 1
            path = dest / f"{stem}-{k}.png"
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=DPI)
        safefs.write(out, path.relative_to(out), png.getvalue())
        done.append(Figure(path, plan.title, plan.caption, plan.kind))
    return done


def _chunks(xs: list[Any]) -> list[list[Any]]:
    return [xs[i:i + PER_AXES] for i in range(0, len(xs), PER_AXES)]


def _color(i: int) -> str:
    return f"C{i % 10}"


def _err(ci: float | None, scale: float) -> float | None:
    return None if ci is None else ci * scale


def _once(seen: set[str], label: str) -> str | None:
    """A legend label the first time it is drawn, None after."""
    if label in seen:
        return None
    seen.add(label)
    return label


def _from_zero(ax: Axes) -> None:
    """A y axis from 0 with room above the highest point (for the legend, a theory line)."""
    top = ax.dataLim.y1
    ax.set_ylim(0, top * 1.1 if math.isfinite(top) and top > 0 else 1.0)


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
        also = {"udp": ["jitter_ms", "loss_pct"], "tcp": ["retrans_pct"]}.get(f["kind"], [])
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
                stats = [mean_ci(res.values(p, flow, m)) for p in pts]
                errs = [(ci or 0.0) * info.scale for _, ci in stats]
                ax.errorbar(xs, [mean * info.scale for mean, _ in stats],
                            yerr=errs if any(errs) else None, color=color, capsize=3,
                            ls="--" if si else "-", marker="s" if si else "o",
                            label=" ".join(s for s in (name, group) if s) or "measured")
                if si == 0:
                    _theory_line(ax, xs, [res.theory(p, flow, m) for p in pts], info.scale, color,
                                 f"theory {group}".strip(), ":" if compare else "--")
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
    return _Plan(f"sweep-{flow}-{m}-vs-{x.key}", f"{flow}: {info.label} vs {short(x.key, keys)}",
                 f"{flow}: {info.axis} against {x.key}: mean over the repetitions of each point, "
                 "error bars the 95 % confidence interval (Student t)"
                 + (f"; one curve per value of {others}. " if others else ". ")
                 + ("A solid, B dashed; theory (from A) dotted." if compare else
                    "Theory dashed, its range (when it predicts one) shaded."),
                 "sweep", draw)


def _theory_line(ax: Axes, xs: list[float], theory: list[tuple[float | None, float | None]],
                 scale: float, color: str, label: str, style: str) -> None:
    lo = [v * scale if is_number(v) else math.nan for v, _ in theory]
    if all(math.isnan(v) for v in lo):
        return
    ax.plot(xs, lo, ls=style, color=color, marker="x", alpha=0.8, label=label)
    hi = [h * scale if is_number(h) else math.nan for _, h in theory]
    if any(not math.isnan(h) for h in hi):
        ax.fill_between(xs, lo, hi, color=color, alpha=0.15, lw=0, label=f"{label} range")


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
                       color=_color(bi), hatch="//" if si else None, alpha=0.6 if si else 0.9,
                       label=_once(seen, " ".join(s for s in (name, other) if s) or "measured"))
                v, hi = res.theory(p["index"], flow, m)
                if si == 0 and is_number(v):
                    ax.hlines(v * info.scale, x - width / 2, x + width / 2, colors="k",
                              linestyles="--", label=_once(seen, "theory"))
                    if is_number(hi):
                        ax.bar(x, (hi - v) * info.scale, width, bottom=v * info.scale, color="k",
                               alpha=0.12)
        ax.set_xticks(range(len(groups)), [value_text(g) for g in groups])
        ax.set_xlabel(key)
        ax.set_ylabel(info.axis)
        _from_zero(ax)

    return _Plan(f"sweep-{flow}-{m}-by-{key}", f"{flow}: {info.label} by {short(key, base.keys)}",
                 f"{flow}: {info.axis} for each value of {key}: mean over the repetitions, error "
                 "bars the 95 % confidence interval (Student t); theory as a dashed line on each "
                 "bar, its range shaded." + (" B hatched." if len(sets) > 1 else ""), "sweep", draw)


# Fairness.
def concurrent(run: dict[str, Any]) -> list[str]:
    """The tcp/udp flows of a run that ran beside another (overlapping by more than
    half the shorter one's time)."""
    bulk = {n: f for n, f in run.get("flows", {}).items() if f["kind"] in BULK
            and f["summary"].get("status", "ok") == "ok"
            and is_number(f["summary"].get("throughput_bps"))}

    def overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
        both = min(a["end_s"], b["end_s"]) - max(a["start_s"], b["start_s"])
        return both > 0.5 * min(a["end_s"] - a["start_s"], b["end_s"] - b["start_s"])

    return [n for n, f in bulk.items() if any(overlap(f, g) for m, g in bulk.items() if m != n)]


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
    plans = []
    for flow, f in res.flows().items():
        if f["kind"] not in (*RTT_KINDS, "fetch"):
            continue
        col, scale, what = ("rtt_ms", 1.0, "RTT") if f["kind"] in RTT_KINDS else \
            ("fetch_s", 1e3, "fetch time")
        for chunk in _chunks(res.points):
            lines = []
            for p in chunk:
                xs = sorted(r[col] * scale for run in res.runs_of(p["index"])
                            if flow in run.get("flows", {})
                            for r in res.series(run["run"], flow) if is_number(r.get(col)))
                if xs:
                    lines.append((res.label(p["index"]) or flow, _color(p["index"]), xs))
            if lines:
                plans.append(_Plan(f"cdf-{flow}-p{chunk[0]['index']:03d}", f"{flow}: CDF of {what}",
                                   f"Distribution of {flow}'s {what} (ms): every sample of every "
                                   "repetition of a point pooled, one line per point.", "cdf",
                                   _cdf(lines, f"{what} (ms)")))
    return plans


def _cdf(lines: list[tuple[str, str, list[float]]], xlabel: str) -> Callable[[Axes], None]:
    def draw(ax: Axes) -> None:
        for label, color, xs in lines:
            ax.step(xs, [(k + 1) / len(xs) for k in range(len(xs))], where="post", color=color,
                    label=f"{label} (n={len(xs)})")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction of samples ≤ x")
        ax.set_ylim(0, 1.02)
        positive = [x for _, _, xs in lines for x in xs if x > 0]
        if positive and max(positive) / min(positive) > 100:
            ax.set_xscale("log")

    return draw


# Time series.
_QUANTITIES = {  # name -> (what, y label, how it was sampled)
    "throughput": ("throughput", "throughput (Mbit/s)",
                   ("Each step is one report interval as netrig-perf's client counts it (the "
                    "sender unless the flow is reversed: its bursts into the socket buffer can "
                    "exceed the link).")),
    "cwnd": ("congestion window", "cwnd (KB)", "From TCP_INFO of the flow's first connection."),
    "tcp_rtt": ("TCP RTT", "RTT (ms)",
                "TCP's smoothed RTT from TCP_INFO of the flow's first connection."),
    "rtt": ("RTT", "RTT (ms)", "One sample per reply."),
    "queue": ("queue length", "queue (packets)", "netrig-link's queue, sampled at 100 Hz."),
    "sojourn": ("queue sojourn time", "sojourn (ms)",
                "The mean time packets leaving the queue spent in it, per 10 ms sample."),
}


def _trace(rows: list[dict[str, Any]], col: str, scale: float = 1.0) -> tuple[list[float], ...]:
    picked = [r for r in rows if is_number(r.get(col))]
    return [r["t"] for r in picked], [r[col] * scale for r in picked]


def _intervals(t: list[float], y: list[float]) -> tuple[list[float], ...]:
    """Interval ends as steps: the first interval's start added (one interval earlier)."""
    if len(t) < 2:
        return t, y
    return [max(0.0, 2 * t[0] - t[1]), *t], [y[0], *y]


def _traces(res: Results, run: dict[str, Any]) -> dict[str, list[Line]]:
    """One run's time series: quantity -> [(flow or link direction, t (s), y)]."""
    out: dict[str, list[Line]] = {q: [] for q in _QUANTITIES}
    for name, f in run.get("flows", {}).items():
        rows = res.series(run["run"], name)
        if f["kind"] in BULK:
            out["throughput"].append((name, *_intervals(*_trace(rows, "bps", 1e-6))))
            info = [r for r in rows if is_number(r.get("cwnd_bytes"))]
            first = min((r.get("socket") or 0 for r in info), default=0)
            info = [r for r in info if (r.get("socket") or 0) == first]
            out["cwnd"].append((name, *_trace(info, "cwnd_bytes", 1e-3)))
            out["tcp_rtt"].append((name, *_trace(info, "rtt_ms")))
        elif f["kind"] in RTT_KINDS:
            out["rtt"].append((name, *_trace(rows, "rtt_ms")))
    for mon in run.get("monitors", []):
        by_dir: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in res.series(run["run"], mon):
            if r.get("kind") == "queue":
                by_dir.setdefault((r["link"], r["dir"]), []).append(r)
        for (link, d), rows in by_dir.items():
            item = res.direction(link, d)
            out["queue"].append((item, *_trace(rows, "queue_packets")))
            out["sojourn"].append((item, *_trace(rows, "sojourn_ms")))
    return {q: [line for line in lines if line[1]] for q, lines in out.items()}


def _timeseries(res: Results) -> list[_Plan]:
    """One figure per quantity for a single point (a line per flow or link direction);
    with several points, one per quantity and flow (a line per point)."""
    plans = []
    for chunk in _chunks([p["index"] for p in res.points if res.first_run(p["index"])]):
        got = [(i, _traces(res, res.first_run(i) or {})) for i in chunk]
        one = len(got) == 1
        queued = {item for _, tr in got for item, _, y in tr["queue"] if max(y) > 1}
        for q, (what, ylabel, how) in _QUANTITIES.items():
            items = list(dict.fromkeys(item for _, tr in got for item, _, _ in tr[q]
                                       if q not in ("queue", "sojourn") or item in queued))
            for group in [items] if one else [[item] for item in items]:
                lines = [(item if one else res.label(i), _color(items.index(item) if one else i),
                          t, y) for i, tr in got for item, t, y in tr[q] if item in group]
                if not lines:
                    continue
                of = ", ".join(group)
                where = f" ({res.label(chunk[0])})" if one and res.label(chunk[0]) else ""
                every = "the point" if one else "each point, one line per point"
                plans.append(_Plan(
                    f"ts-{q}-{'all' if one else group[0]}-p{chunk[0]:03d}",
                    f"{what} of {of}{where}",
                    f"{what[0].upper()}{what[1:]} of {of} against time since the run's start, in "
                    f"the first repetition of {every}. {how}", "timeseries",
                    _lines(lines, ylabel, "steps-pre" if q == "throughput" else "default")))
    return plans


def _lines(lines: list[tuple[str, str, list[float], list[float]]], ylabel: str,
           drawstyle: str) -> Callable[[Axes], None]:
    def draw(ax: Axes) -> None:
        for label, color, t, y in lines:
            ax.plot(t, y, color=color, lw=1.1, label=label, drawstyle=drawstyle)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(ylabel)
        _from_zero(ax)

    return draw
