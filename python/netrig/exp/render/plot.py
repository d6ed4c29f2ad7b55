"""Series on demand and several results directories on one plot.

    plot_command(dirs, series, out, fmt, runs)   `netrig plot DIR [DIR...] SERIES...`: one
        figure per series, a line per run (the first repetition of each point unless
        `runs` names them) of every directory, theory's references beside (series.py)
    compare_dirs(dirs, out)   `netrig compare`: compare.html of N directories, each
        named by what differs (differ.py), the figures figures.compare_figures draws

Drawing itself (style, legend, formats) is figures.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from netrig import safefs
from netrig.errors import NetrigError
from netrig.exp.analysis import series
from netrig.exp.analysis.differ import differences, labelled
from netrig.exp.analysis.results import Results, load
from netrig.exp.render.draw import figure, formats_of, save
from netrig.exp.render.figures import compare_figures
from netrig.exp.render.timeseries import draw_runs

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


def plot_command(dirs: list[Path], series_names: list[str], out: Path | None = None,
                 fmt: str = "png", runs: list[str] | None = None,
                 warn: Callable[[str], None] | None = None) -> list[Path]:
    """`netrig plot`: each series of the runs of every directory on one axes; one file
    per series (out, or out-SERIES.FMT for several; default ./netrig-plot-SERIES.FMT).
    Returns the files written; each file a directory refused (results.Results.refused)
    is given to `warn`, a sentence each."""
    if not dirs or not series_names:
        raise PlotError("netrig plot DIR [DIR...] SERIES...: give a results directory and a series "
                        f"({', '.join(SERIES_NAMES)})")
    fmts = formats_of([fmt])
    qs = [_series_name(s) for s in series_names]
    results = [load(Path(d)) for d in dirs]
    sets = labelled(results) if len(results) > 1 else [("", results[0])]
    items = [(name, res, run) for name, res in sets for run in _pick(res, runs)]
    try:
        return _plot(items, dirs, qs, out, fmts)
    finally:
        _said(results, warn)


def _said(results: list[Results], warn: Callable[[str], None] | None) -> None:
    """Each directory's refused files, to `warn`."""
    for r in results if warn else []:
        for said in r.refused:
            warn(f"{r.out}: {said}")


def _plot(items: list[tuple[str, Results, dict[str, Any]]], dirs: list[Path], qs: list[str],
          out: Path | None, fmts: tuple[str, ...]) -> list[Path]:
    if not items:
        raise PlotError(f"{', '.join(map(str, dirs))}: no finished run to plot")
    written = []
    for q in qs:
        if not any(series.traces(res, run, q) for _, res, run in items):
            raise PlotError(f"no run of {', '.join(map(str, dirs))} recorded {q} "
                            "(a queue needs a queue monitor; cwnd a tcp flow)")
        info = series.QUANTITIES[q]
        fig = figure(draw_runs(items, q), f"{info.what}: " + ", ".join(
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


def compare_dirs(dirs: list[Path], out: Path | None = None, allow_foreign: bool = False,
                 formats: Iterable[str] | None = None, warn: Callable[[str], None] | None = None) -> Path:
    """`netrig compare` of N directories: compare.html in `out` (default: beside the
    first, compare-A-vs-B-vs-...): what differs between them, then the sweep curves and
    time series of all of them on shared axes, each labelled by what differs. Files a
    directory refused are named in the page and given to `warn`."""
    from netrig.exp.render import report
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
    drawn = compare_figures(sets, out, formats=formats)
    sections = [("What differs", [report.Note("Each directory is named in the figures by the "
                                              "values below (the first three)."
                                              if diff else "Nothing recorded differs between "
                                              "these directories: each is named by its directory."),
                                  table, *(b for r in results for b in report.refusals(r, f"{r.out}: "))]),
                ("Figures", list(drawn) or [report.Note("Nothing the directories share to draw.")])]
    title = "netrig compare: " + " vs ".join(r.out.name for r in results)
    safefs.write(out, Path("compare.html"), report.to_html(title, sections))
    _said(results, warn)
    return out / "compare.html"


