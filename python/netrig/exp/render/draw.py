"""What every figure shares: its size and resolution, the formats it is saved in, the
styles that tell lines apart in print (colour, dash, marker, hatch), a figure planned
(`_Plan`) and drawn (`Figure`), and saving it through safefs.
"""

from __future__ import annotations

import io
import math
import os
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure as MplFigure

from netrig import safefs
from netrig.errors import NetrigError
from netrig.exp.analysis import series

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
    draw: Callable[[Any], None]  # an Axes; with `panels`, the list of them
    marks: list[series.Mark] = field(default_factory=list)
    panels: list[str] = field(default_factory=list)  # one axes each, sharing x, top to bottom


PANEL_HEIGHT = 1.55  # inches of each panel of a figure of several


def figure(plan_draw: Callable[[Any], None], title: str, panels: list[str] | None = None) -> MplFigure:
    """A figure as every netrig figure looks: title, grid, the legend outside the axes
    on the right (off the data), each label once (unique_legend). With `panels` (their
    titles), one axes per panel sharing the x axis, top to bottom, and plan_draw is
    given the list of them."""
    n = len(panels or []) or 1
    fig = MplFigure(figsize=(SIZE[0], max(SIZE[1], 0.9 + PANEL_HEIGHT * n)) if panels else SIZE,
                    layout="constrained")
    axes = list(fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0])
    plan_draw(axes if panels else axes[0])
    if panels:
        fig.suptitle(title, fontsize=10.5)
        for ax, name in zip(axes, panels, strict=True):
            ax.set_title(name, fontsize=8.5, loc="left")
            ax.label_outer()  # the time axis named once, at the bottom
    else:
        axes[0].set_title(title, fontsize=10.5)
    for ax in axes:
        ax.grid(True, alpha=0.35)
        ax.set_axisbelow(True)
    got = [hl for ax in axes for hl in zip(*ax.get_legend_handles_labels(), strict=True)]
    handles, labels = unique_legend([h for h, _ in got], [t for _, t in got])
    if handles:
        labels = [textwrap.fill(t, 34, subsequent_indent="  ") for t in labels]
        rows = sum(t.count("\n") + 1 for t in labels)
        high = fig.get_size_inches()[1]
        if rows > 18 and high < SIZE[1] + 0.17 * (rows - 18):  # a tall legend: the axes keep their size
            fig.set_size_inches(SIZE[0], SIZE[1] + 0.17 * (rows - 18))
        if panels:  # beside the panels, not stretching the first one
            fig.legend(handles, labels, fontsize="small", loc="outside right upper", frameon=False)
        else:
            axes[0].legend(handles, labels,
                           fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0),
                           borderaxespad=0.0, frameon=False)
    return fig


def unique_legend(handles: list[Any], labels: list[str]) -> tuple[list[Any], list[str]]:
    """A legend's entries, each label once (the first handle drawn with it: a reference
    every run shares is named once); matplotlib's hidden labels (`_...`) left out."""
    seen: dict[str, Any] = {}
    for h, t in zip(handles, labels, strict=True):
        if t and not t.startswith("_"):
            seen.setdefault(t, h)
    return list(seen.values()), list(seen)


def merge_refs(refs: list[tuple[Any, str | None, str]]) -> list[tuple[str, float, Any, str]]:
    """Theory's references of several runs, each value drawn and named once: (label,
    value, line style, colour). One every run has is black and named plainly; one a
    few runs share is dark grey, named with those runs; one a single run has keeps its
    run's colour and name. `refs`: (series.Ref, the run's name or None, its colour)."""
    values: dict[tuple[str, float], list[tuple[str | None, str, Any]]] = {}
    for ref, who, color in refs:
        values.setdefault((ref.label, ref.value), []).append((who, color, ref.style))
    everyone = {who for _, who, _ in refs}
    out = []
    for (label, value), whose in values.items():
        names = list(dict.fromkeys(who for who, _, _ in whose if who))
        style = whose[0][2]
        if {who for who, _, _ in whose} == everyone or not names:
            out.append((label, value, style, "k"))
        elif len(names) == 1:
            out.append((f"{label} ({names[0]})", value, style, whose[0][1]))
        else:
            out.append((f"{label} ({'; '.join(names)})", value, style, "0.35"))
    return out


OFF_SCALE = 1.5  # a reference beyond this many times the data's top is named at the axis edge


def off_scale(values: list[float], top: float, factor: float = OFF_SCALE) -> list[bool]:
    """Which reference values lie so far beyond the data (more than `factor` × its top)
    that an axis stretched to them would squash it into its bottom: those are named at
    the axis edge instead (edge_notes). None is, when the data has no positive top."""
    if not (math.isfinite(top) and top > 0):
        return [False] * len(values)
    return [math.isfinite(v) and v > factor * top for v in values]


def data_top(ys: Iterable[Iterable[float]]) -> float:
    """The highest finite value of the series (0 when none has one)."""
    return max((y for s in ys for y in s if math.isfinite(y)), default=0.0)


def edge_notes(ax: Axes, notes: list[tuple[str, str]], along: str = "y") -> None:
    """References off the axis, each named at its far edge with an arrow pointing off it
    ("queue limit of s0→h2 100 packets ↑"), in the reference's colour, stacked."""
    for k, (text, color) in enumerate(notes):
        if along == "y":
            ax.annotate(f"{text} ↑", xy=(0.99, 0.98 - 0.085 * k), xycoords="axes fraction",
                        ha="right", va="top", fontsize=7, color=color, zorder=6,
                        bbox={"facecolor": "white", "alpha": 0.8, "lw": 0, "pad": 1.0})
        else:
            ax.annotate(f"{text} →", xy=(0.99, 0.04 + 0.085 * k), xycoords="axes fraction",
                        ha="right", va="bottom", fontsize=7, color=color, zorder=6,
                        bbox={"facecolor": "white", "alpha": 0.8, "lw": 0, "pad": 1.0})


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
