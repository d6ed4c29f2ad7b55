"""Statistics over repetitions: the mean and its Student-t 95 % confidence interval.
"""

from __future__ import annotations

import math
import statistics
from typing import Any


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# Statistics.
def mean_ci(xs: list[float]) -> tuple[float, float | None]:
    """The mean and the half-width of its 95 % confidence interval (Student t; None
    when there is a single sample)."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, None
    return m, t95(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))


def t95(df: int) -> float:
    """Student's t quantile for a two-sided 95 % interval (4.303 for df = 2)."""
    lo, hi = 0.0, 64.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_central(mid, df) < 0.95 else (lo, mid)
    return (lo + hi) / 2


def _t_central(t: float, df: int) -> float:
    """P(|T| ≤ t) for integer df (Abramowitz & Stegun 26.7.3 and 26.7.4)."""
    th = math.atan(t / math.sqrt(df))
    c2 = math.cos(th) ** 2
    if df % 2 == 0:
        term = total = 1.0
        for k in range(2, df - 1, 2):
            term *= c2 * (k - 1) / k
            total += term
        return math.sin(th) * total
    if df == 1:
        return 2 * th / math.pi
    term = total = math.cos(th)
    for k in range(3, df - 1, 2):
        term *= c2 * (k - 1) / k
        total += term
    return 2 / math.pi * (th + math.sin(th) * total)
