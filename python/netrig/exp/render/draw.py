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
    draw: Callable[[Axes], None]
    marks: list[series.Mark] = field(default_factory=list)


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
