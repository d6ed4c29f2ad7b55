"""Units in topology and scenario files: one rule, stated once.

Rates are decimal bits per second (`30Mbit` = 30 000 000 bit/s; `Mbit`, `Mbit/s` and
`Mbps` all mean megabits: tc's "mbps = megabytes" trap is not repeated). Sizes accept
both prefixes and say which (`64KB` = 64 000 bytes, `64KiB` = 65 536). Durations need a
unit (`10ms`, `1.5s`, `250us`), except a bare 0. Percentages need a `%` (`1%`, `0.5%`).
Queue limits are packets (`100p`, or a bare integer) or a size (`64KB`).

Every parser raises `UnitError` with the text it could not read and what it expected.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

from netrig.errors import NetrigError


class UnitError(NetrigError, ValueError):
    pass


_NUM = r"(-?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_RATE = re.compile(_NUM + r"\s*([kmgt]?)(bit|bit/s|bps|b/s)?", re.IGNORECASE)
_DEC = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_TIME = re.compile(_NUM + r"\s*(ns|us|µs|ms|s|sec|min)", re.IGNORECASE)
# Scaled in decimal, then rounded once: "1.19ms" is the float nearest 0.00119, where
# 1.19 * 1e-3 (or / 1000) is 0.0011899999999999999.
_TIME_SCALE = {"ns": "1e-9", "us": "1e-6", "µs": "1e-6", "ms": "1e-3", "s": "1", "sec": "1", "min": "60"}
_SIZE = re.compile(_NUM + r"\s*([kmgt]?)(i?)(b|byte|bytes)?", re.IGNORECASE)
_BIN = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_PCT = re.compile(_NUM + r"\s*%")


def _text(value: object, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UnitError(f"{value!r} is not a {what}")
    return str(value).strip()


def rate_bps(value: object) -> float:
    """`30Mbit` -> 30e6. A bare number is bit/s."""
    text = _text(value, "rate")
    m = _RATE.fullmatch(text)
    if not m or (m.group(2) and not m.group(3)):
        raise UnitError(f"'{text}' is not a rate (expected e.g. 30Mbit, 1.5Mbit/s, 500kbit, 1Gbit)")
    v = float(m.group(1)) * _DEC[m.group(2).lower()]
    if not math.isfinite(v):
        raise UnitError(f"'{text}' is not a finite rate")
    if v < 0:
        raise UnitError(f"'{text}' is negative (a rate is 0 or more)")
    return v


def seconds(value: object) -> float:
    """`10ms` -> 0.010. Only 0 may go without a unit."""
    text = _text(value, "duration")
    if text in ("0", "0.0"):
        return 0.0
    m = _TIME.fullmatch(text)
    if not m:
        raise UnitError(f"'{text}' is not a duration (expected e.g. 10ms, 1.5s, 250us)")
    unit = m.group(2).lower() if m.group(2) != "µs" else "µs"
    return float(Decimal(m.group(1)) * Decimal(_TIME_SCALE[unit]))


def seconds_above_zero(value: object) -> float:
    """`seconds`, refusing 0 and below (a duration, an interval)."""
    s = seconds(value)
    if s <= 0:
        raise UnitError(f"'{value}' should be more than 0")
    return s


def seconds_not_negative(value: object) -> float:
    """`seconds`, refusing a negative time (a start, a delay)."""
    s = seconds(value)
    if s < 0:
        raise UnitError(f"'{value}' is negative (it should be 0s or more)")
    return s


def size_bytes(value: object) -> int:
    """`64KB` -> 64000, `64KiB` -> 65536, `1500` -> 1500."""
    text = _text(value, "size")
    m = _SIZE.fullmatch(text)
    if not m or (m.group(3) and not m.group(2)):
        raise UnitError(f"'{text}' is not a size (expected e.g. 1500B, 64KB, 64KiB, 1MB)")
    prefix = m.group(2).lower()
    scale = _BIN[prefix] if m.group(3) else int(_DEC[prefix])
    return int(round(float(m.group(1)) * scale))


def fraction(value: object) -> float:
    """`1%` -> 0.01."""
    text = _text(value, "percentage")
    m = _PCT.fullmatch(text)
    if not m:
        raise UnitError(f"'{text}' is not a percentage (expected e.g. 1%, 0.5%)")
    return float(m.group(1)) / 100.0


def queue_limit(value: object) -> tuple[int | None, int | None]:
    """(packets, bytes): `100p` or 100 -> (100, None); `64KB` -> (None, 64000)."""
    text = _text(value, "queue limit")
    if re.fullmatch(r"[0-9]+\s*p?", text, re.IGNORECASE):
        return int(text.rstrip("pP ")), None
    try:
        return None, size_bytes(text)
    except UnitError:
        raise UnitError(
            f"'{text}' is not a queue limit (expected packets, e.g. 100p, or a size, e.g. 64KB)"
        ) from None


def format_rate(bps: float) -> str:
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.4g} {unit}"
    return f"{bps:.4g} bit/s"


def format_seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.4g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.4g} ms"
    return f"{s * 1e6:.4g} us"
