"""Measured against theory: the one ratio and verdict that a run's record (its `Grade`,
exp/record/run.py), results.csv and the report (its table and "Far from theory") share.

    versus(measured, lo, hi, tolerance) -> Versus(ratio, position, verdict, flag)

The ratio is measured ÷ the nearest value theory allows: its point, or for a range
[lo, hi] the bound measured is beyond when outside it, and 1 inside it (where the mean
then sits is `position`: 0 at the low end, 1 at the top). A measurement is within
theory when the ratio is within 1 ± the scenario's tolerance, else above or below it.
`RATIO_DEFINITION` says this once, in words, for the page.

Also the CSV's number format: plain decimals, six significant digits, no exponent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

RATIO_DEFINITION = (
    "ratio = measured ÷ the nearest value theory allows: theory's point, or for a range "
    "the bound the measurement is beyond (inside a range the ratio is 1, and the table says "
    "where the mean sits: 0 % at the range's low end, 100 % at its top). A row is within "
    "theory when the ratio is within 1 ± the tolerance, else above or below it; the same "
    "number is in the table, in \"Far from theory\" and in results.csv's ratio column.")


@dataclass(frozen=True)
class Versus:
    ratio: float | None  # measured ÷ the nearest value theory allows; None: no theory
    position: float | None  # in a range: (measured − lo) ÷ (hi − lo); None for a point
    verdict: str  # "within", "above", "below", or "" (nothing to judge)
    lo: float | None = None
    hi: float | None = None

    @property
    def flag(self) -> bool:
        return self.verdict in ("above", "below")

    def text(self) -> str:
        """The ratio as the table and "Far from theory" show it: `0.846`, `1 (at 38 % of
        the range)`, `1.67 × the range's top`, `0.7 × the range's low end`."""
        if self.ratio is None:
            return "—"
        r = f"{self.ratio:.3g}"
        if self.hi is None or self.position is None:
            return r
        if 0.0 <= self.position <= 1.0:
            return f"{r} (at {self.position:.0%} of the range)".replace("%", " %")
        return f"{r} × the range's {'top' if self.position > 1 else 'low end'}"


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def versus(measured: Any, lo: Any, hi: Any = None, tolerance: float = 0.1) -> Versus:
    """Measured against theory's point `lo` (or the range lo..hi), tolerance a fraction.
    A range from 0 (a time-out, up to a rate) holds 0 too; a point of 0 (nothing can get
    through) is met by nothing only: another measurement gets no ratio."""
    if _number(measured) and _number(lo) and lo == 0 and not (_number(hi) and hi > 0):
        return Versus(1.0, None, "within", 0.0) if measured == 0 else Versus(None, None, "")
    if not _number(measured) or not _number(lo) or (not lo and not (_number(hi) and hi > 0)):
        return Versus(None, None, "")
    top = hi if _number(hi) and hi > lo else None
    if top is None:
        nearest, pos = lo, None
    else:
        pos = (measured - lo) / (top - lo)
        nearest = lo if measured < lo else top if measured > top else measured
    inside = top is not None and lo <= measured <= top
    ratio = 1.0 if inside else measured / nearest if nearest else None
    if ratio is None:
        return Versus(None, pos, "", lo, top)
    verdict = "above" if ratio > 1 + tolerance else "below" if ratio < 1 - tolerance else "within"
    return Versus(ratio, pos, verdict, lo, top)


def decimal(v: Any, digits: int = 6) -> str:
    """A float as a plain decimal with `digits` significant digits: 1408080, 0.000123457,
    never 1.40808e+06; an int as it is; None and NaN as empty."""
    if v is None or isinstance(v, bool):
        return "" if v is None else str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return "" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        text = format(Decimal(f"{v:.{digits}g}"), "f")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return "0" if text in ("-0", "") else text
    return str(v)
