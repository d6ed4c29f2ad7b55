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

Also owns sweep values as numbers (`axis`) and the units each metric is shown in
(`metric`): the report uses the same. Reading the directory back (`Results`) and the
statistics (`mean_ci`) live in results.py.
"""

from __future__ import annotations

import io
import math
import os
import re
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import NullFormatter

from netrig import safefs, units
from netrig.errors import NetrigError
from netrig.exp.analysis import series
from netrig.exp.analysis.differ import labelled
from netrig.exp.analysis.results import Results, load
from netrig.exp.analysis.stats import is_number, mean_ci
from netrig.exp.analysis.words import case_name, short
from netrig.exp.kinds.metrics import Metric, metric  # noqa: F401 (Metric: figures.Metric for its readers)
from netrig.exp.spec.model import LOAD_KINDS, overlaps
from netrig.link import spec as linkspec
from netrig.theory import jain

MAX_FIGURES = 30
PER_AXES = 6  # sweep points drawn on one axes
DPI = 200  # print resolution
SIZE = (9.0, 4.2)  # inches: the axes and, right of them, the legend
FORMATS = ("png", "svg")
KNOWN_FORMATS = ("png", "svg", "pdf")
RTT_KINDS = ("ping", "probe")


class FormatError(NetrigError, ValueError):
    """A figure format netrig does not write."""


def formats_of(formats: Iterable[str] | None = None) -> tuple[str, ...]:
    """The formats to write: those given, else NETRIG_FIGURE_FORMATS (`png,svg,pdf`), else
    FORMATS; png first when asked (the report embeds it)."""
    if formats is None:
        env = os.environ.get("NETRIG_FIGURE_FORMATS", "")
        formats = [f for f in env.replace(" ", "").split(",") if f] or FORMATS
    out = [f.lower().lstrip(".") for f in formats]
    bad = [f for f in out if f not in KNOWN_FORMATS]
    if bad or not out:
        raise FormatError(f"figure format {', '.join(bad) or '(none)'}: netrig writes "
                          f"{', '.join(KNOWN_FORMATS)}")
    return tuple(sorted(dict.fromkeys(out), key=lambda f: f != "png"))


# Units: exp/kinds/metrics.py (Metric, metric).


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
        words = axis_words(key)
        return Axis(key, f"{words} ({unit})" if unit else words,
                    {str(v): b * scale for v, b in zip(raw, base, strict=True)},
                    min(base) > 0 and max(base) / min(base) > 100)
    return None


_WORDS = {  # a key's last part -> what it is
    "delay": "one-way delay", "rate": "rate", "loss": "random loss", "queue": "queue limit",
    "aqm": "queue discipline", "jitter": "jitter", "window": "TCP window",
    "length": "datagram size", "size": "size", "parallel": "parallel connections",
    "cc": "congestion control", "target": "AQM target", "interval": "interval",
    "duration": "duration", "mss": "MSS", "bytes": "bytes to send", "corrupt": "corruption",
    "duplicate": "duplication", "reorder": "reordering", "overhead": "per-frame overhead",
    "trace": "rate trace", "ecn": "ECN marking", "kind": "kind", "start": "start time",
    "tupdate": "AQM update interval", "max_p": "RED's maximum drop probability",
    "min_th": "RED's lower threshold", "max_th": "RED's upper threshold",
    "flows": "fq_codel's flow queues", "quantum": "quantum",
}
_DIRS = {"a_to_b": "a→b direction", "b_to_a": "b→a direction", "both": "both directions"}


def axis_words(key: str) -> str:
    """A sweep key in words: `links.h1-h2.delay` -> "one-way delay of link h1-h2",
    `flows.bulk.window` -> "TCP window of bulk", `links.s0-h2.aqm` -> "queue discipline
    of link s0-h2"; a key of several (`a,b`) each in words, joined by " and "."""
    if "," in key:
        return " and ".join(axis_words(k.strip()) for k in key.split(","))
    parts = key.split(".")
    owner = ""
    if parts[0] in ("links", "flows") and len(parts) > 2:
        owner = ("link " if parts[0] == "links" else "") + parts[1]
        parts = parts[2:]
    where = [_DIRS[p] for p in parts if p in _DIRS]
    parts = [p for p in parts if p not in _DIRS]
    last = parts[-1]
    words = _WORDS.get(last, last.replace("_", " "))
    if len(parts) > 1 and parts[0] == "aqm" and last != "target":
        words = f"AQM's {words}"
    if owner.startswith("link ") is False and owner and last == "rate":
        words = "offered rate"
    text = f"{words} of {owner}" if owner else words
    return f"{text} ({', '.join(where)})" if where else text


# Drawing.
@dataclass
class Figure:
    path: Path  # the PNG when one was written (the report embeds it), else the first file
    title: str
    caption: str
    kind: str  # "sweep", "fairness", "cdf" or "timeseries"
    files: list[Path] = field(default_factory=list)  # every format written
    marks: list[series.Mark] = field(default_factory=list)  # the events drawn on it
    data: bytes = field(default=b"", repr=False)  # path's bytes as drawn, which the report embeds (it reads nothing back)


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
    marks: list[series.Mark] = field(default_factory=list)


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

    `compare_figures(a, b, out)` (report.compare's older call) labels a and b itself."""
    if isinstance(sets, Results):
        sets, out = labelled([sets, out]), older[0]  # type: ignore[list-item]
    assert isinstance(sets, list)
    return _render(_sweep_plans(sets) + compare_timeseries(sets), out, formats)


def figure(plan_draw: Callable[[Axes], None], title: str) -> MplFigure:
    """A figure of one axes as every netrig figure looks: title, grid, the legend
    outside the axes on the right (off the data)."""
    fig = MplFigure(figsize=SIZE, layout="constrained")
    ax = fig.add_subplot()
    plan_draw(ax)
    ax.set_title(title, fontsize=10.5)
    ax.grid(True, alpha=0.35)
    ax.set_axisbelow(True)
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        labels = [textwrap.fill(t, 34, subsequent_indent="  ") for t in labels]
        rows = sum(t.count("\n") + 1 for t in labels)
        if rows > 18:  # a tall legend: a taller figure, so the axes keep their size
            fig.set_size_inches(SIZE[0], SIZE[1] + 0.17 * (rows - 18))
        ax.legend(handles, labels,
                  fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  borderaxespad=0.0, frameon=False)
    return fig


def save(fig: MplFigure, root: Path, stem: Path, formats: Iterable[str]) -> list[Path]:
    """fig as root/stem.FORMAT for each format (through no link: safefs)."""
    return [path for path, _ in _save(fig, root, stem, formats)]


def _save(fig: MplFigure, root: Path, stem: Path, formats: Iterable[str]) -> list[tuple[Path, bytes]]:
    """save's files, each with the bytes written."""
    done = []
    for fmt in formats:
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=DPI, metadata=_METADATA.get(fmt))
        path = stem.with_name(f"{stem.name}.{fmt}")
        safefs.write(root, path, buf.getvalue())
        done.append((root / path, buf.getvalue()))
    return done


# No creation date in SVG or PDF: the same data draws the same file.
_METADATA: dict[str, dict[str, Any]] = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}


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
        fig = figure(plan.draw, plan.title)
        stem, k = re.sub(r"[^A-Za-z0-9_.=-]+", "_", plan.name), 1
        while (stem if k == 1 else f"{stem}-{k}") in stems:
            k += 1
        stem = stem if k == 1 else f"{stem}-{k}"
        stems.add(stem)
        files = _save(fig, out, (dest / stem).relative_to(out), fmts)
        done.append(Figure(files[0][0], plan.title, plan.caption, plan.kind, [p for p, _ in files],
                           plan.marks, files[0][1]))
    return done


_STYLES = ("-", "--", "-.", ":")
_STYLE_WORDS = ("solid", "dashed", "dash-dotted", "dotted")
_MARKS = ("o", "s", "^", "D", "v", "P")
_HATCHES = (None, "//", "..", "xx", "\\\\", "++")


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
                stats = [mean_ci(res.values(p, flow, m)) for p in pts]
                errs = [(ci or 0.0) * info.scale for _, ci in stats]
                ax.errorbar(xs, [mean * info.scale for mean, _ in stats],
                            yerr=errs if any(errs) else None, color=color, capsize=3,
                            ls=_STYLES[si % len(_STYLES)], marker=_MARKS[si % len(_MARKS)],
                            label=" ".join(s for s in (name, group) if s) or "measured")
                if si == 0:
                    _theory_line(ax, xs, [res.theory(p, flow, m) for p in pts], info.scale, color,
                                 f"theory {group}".strip(), ":" if compare else "--")
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
                    "Theory dashed, its range (when it predicts one) shaded."),
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
    plans = []
    for flow, f in res.flows().items():
        if f["kind"] not in (*RTT_KINDS, "fetch", "web"):
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
