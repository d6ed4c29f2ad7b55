"""Series on demand and several results directories on one plot.

    plot_command(dirs, series, out, fmt, runs)   `netrig plot DIR [DIR...] SERIES...`: one
        figure per series, a line per run (the first repetition of each point unless
        `runs` names them) of every directory, theory's references beside (series.py)
    differences(results)   what differs between directories: scenario values, sweep
        values, host, netrig version; `labelled` names each directory by it
    compare_timeseries(sets)   `compare`'s time series: each quantity at each sweep
        point the directories share, a line per directory

Drawing itself (style, legend, formats) is figures.py's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes

from netrig import safefs
from netrig.errors import NetrigError
from netrig.exp import series
from netrig.exp.figures import _color, _Plan, draw_refs, figure, formats_of, save
from netrig.exp.results import Results, load

SERIES_NAMES = tuple(series.QUANTITIES)
_ALIASES = {"delivered_rate": "delivered", "loss": "drops", "queue_length": "queue",
            "ping": "rtt", "srtt": "tcp_rtt"}


class PlotError(NetrigError, ValueError):
    """A plot that cannot be drawn as asked."""


def _series_name(name: str) -> str:
    key = _ALIASES.get(name.replace("-", "_"), name.replace("-", "_"))
    if key not in series.QUANTITIES:
        raise PlotError(f"no series '{name}': netrig plots {', '.join(SERIES_NAMES)} "
                        f"(also {', '.join(_ALIASES)})")
    return key


# What differs between directories.
def _flat(v: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(v, dict):
        out: dict[str, Any] = {}
        for k, x in v.items():
            out.update(_flat(x, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(v, list) and any(isinstance(x, dict) for x in v):
        out = {}
        for i, x in enumerate(v):
            name = x.get("name") or (f"{x.get('a')}-{x.get('b')}" if "a" in x else str(i)) \
                if isinstance(x, dict) else str(i)
            out.update(_flat(x, f"{prefix}.{name}"))
        return out
    return {prefix: json.dumps(v, sort_keys=True, default=str) if isinstance(v, (list, dict)) else v}


_IGNORED = ("description", "host.started", "host.hostname")


def _facts(r: Results) -> dict[str, Any]:
    h = r.meta.get("host") or {}
    facts = {k: v for k, v in _flat(r.scenario).items() if not k.startswith(("quick", "description"))}
    facts["sweep"] = "; ".join(f"{k}={'/'.join(map(str, r.key_values(k)))}" for k in r.keys) or None
    facts.update({"netrig": h.get("netrig"), "kernel": h.get("kernel"), "host": h.get("hostname"),
                  "--set": ", ".join(r.meta.get("sets") or []) or None,
                  "--quick": bool(r.meta.get("quick"))})
    facts.pop("sweep" if not r.keys else "", None)
    return facts


def differences(results: list[Results]) -> dict[str, list[Any]]:
    """Every fact whose value is not the same in all the directories: key -> each
    directory's value (None where it has none)."""
    facts = [_facts(r) for r in results]
    keys = list(dict.fromkeys(k for f in facts for k in f))
    return {k: [f.get(k) for f in facts] for k in keys if len({repr(f.get(k)) for f in facts}) > 1}


def labelled(results: list[Results]) -> list[tuple[str, Results]]:
    """Each directory named by what differs (`links.s0-h2.delay=5ms, netrig=0.4`); by its
    directory name when nothing does, and numbered when two would read the same."""
    diff = differences(results)
    names = []
    for i, r in enumerate(results):
        parts = [f"{k}={'none' if v[i] is None else v[i]}" for k, v in list(diff.items())[:3]]
        names.append(", ".join(parts) + (" …" if len(diff) > 3 else "") or r.out.name)
    if len(set(names)) < len(names):
        names = [f"{n} [{r.out.name}]" for n, r in zip(names, results, strict=True)]
    return list(zip(names, results, strict=True))


# Drawing runs on one axes.
def _pick(res: Results, runs: Iterable[str] | None) -> list[dict[str, Any]]:
    if runs is None:
        return [run for p in res.points if (run := res.first_run(p["index"]))]
    want = list(runs)
    got = [r for r in res.runs if r.get("run") in want]
    missing = [w for w in want if not any(r.get("run") == w for r in got)]
    if missing and len(missing) == len(want):
        raise PlotError(f"{res.out}: no run {', '.join(missing)} (it has "
                        f"{', '.join(r['run'] for r in res.runs) or 'none'})")
    return got


def _draw_runs(items: list[tuple[str, Results, dict[str, Any]]], q: str) -> Callable[[Axes], None]:
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

    return draw


def plot_command(dirs: list[Path], series_names: list[str], out: Path | None = None,
                 fmt: str = "png", runs: list[str] | None = None) -> list[Path]:
    """`netrig plot`: each series of the runs of every directory on one axes; one file
    per series (out, or out-SERIES.FMT for several; default ./netrig-plot-SERIES.FMT).
    Returns the files written."""
    if not dirs or not series_names:
        raise PlotError("netrig plot DIR [DIR...] SERIES...: give a results directory and a series "
                        f"({', '.join(SERIES_NAMES)})")
    fmts = formats_of([fmt])
    qs = [_series_name(s) for s in series_names]
    results = [load(Path(d)) for d in dirs]
    sets = labelled(results) if len(results) > 1 else [("", results[0])]
    items = [(name, res, run) for name, res in sets for run in _pick(res, runs)]
    if not items:
        raise PlotError(f"{', '.join(map(str, dirs))}: no finished run to plot")
    written = []
    for q in qs:
        if not any(series.traces(res, run, q) for _, res, run in items):
            raise PlotError(f"no run of {', '.join(map(str, dirs))} recorded {q} "
                            "(a queue needs a queue monitor; cwnd a tcp flow)")
        info = series.QUANTITIES[q]
        fig = figure(_draw_runs(items, q), f"{info.what}: " + ", ".join(
            dict.fromkeys(str(r.meta.get('scenario') or r.out.name) for _, r, _ in items)))
        if out is None:
            target = Path.cwd() / f"netrig-plot-{q}"
        elif len(qs) > 1:
            target = out.with_name(f"{out.stem}-{q}")
        else:
            target = out.with_suffix("") if out.suffix.lstrip(".") in fmts else out
        target = target.absolute()
        safefs.makedirs(target.parent)
        written += save(fig, target.parent, Path(target.name), fmts)
    return written


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
                _draw_runs(runs, q)))
    return plans


def compare_dirs(dirs: list[Path], out: Path | None = None, allow_foreign: bool = False,
                 formats: Iterable[str] | None = None) -> Path:
    """`netrig compare` of N directories: compare.html in `out` (default: beside the
    first, compare-A-vs-B-vs-...): what differs between them, then the sweep curves and
    time series of all of them on shared axes, each labelled by what differs."""
    from netrig.exp import report

    if len(dirs) < 2:
        raise PlotError("netrig compare DIR DIR [DIR...]: give two results directories or more")
    results = [load(Path(d)) for d in dirs]
    out = out or Path(dirs[0]).parent / ("compare-" + "-vs-".join(Path(d).name for d in dirs))
    safefs.check_owner(out, allow_foreign)
    safefs.makedirs(out)
    sets = labelled(results)
    diff = differences(results)
    table = report.Table(["", *(n for n, _ in sets)],
                         [["directory", *(str(r.out) for r in results)]]
                         + [[k, *("none" if v is None else str(v) for v in vs)]
                            for k, vs in diff.items()])
    drawn = figures_of(sets, out, formats)
    sections = [("What differs", [report.Note("Each directory is named in the figures by the "
                                              "values below (the first three)."
                                              if diff else "Nothing recorded differs between "
                                              "these directories: each is named by its directory."),
                                  table]),
                ("Figures", list(drawn) or [report.Note("Nothing the directories share to draw.")])]
    title = "netrig compare: " + " vs ".join(r.out.name for r in results)
    safefs.write(out, Path("compare.html"), report.to_html(title, sections))
    return out / "compare.html"


def figures_of(sets: list[tuple[str, Results]], out: Path, formats: Iterable[str] | None):
    from netrig.exp.figures import compare_figures

    return compare_figures(sets, out, formats=formats)
