"""A sweep key as a figure's axis: its kind (rate, size, duration, a fraction, packets),
the unit and scale its values read best in, and the words for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from netrig import units
from netrig.exp.analysis.stats import is_number
from netrig.link import spec as linkspec


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
