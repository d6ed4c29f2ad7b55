"""tc's words, read as tc(8) reads them (iproute2 6.1 lib/utils.c, lib/utils_math.c,
tc/tc_util.c): `matches()` (its abbreviations), times, rates, sizes, percentages, whole
numbers and handles, and the argv walk (`_Cursor`); the errors a line fails with
(`TcLineError`, with tc's exit status); which keys of a link direction each stage
holds; and `Change`, what one qdisc or class line does to a direction. Pure. The kinds'
own words are `tcnetem`'s and `tcqueues`'; the line as a whole is `tcline`'s.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from netrig.errors import NetrigError
from netrig.link import tc as tcout

# Keys of a direction, by the stage that holds them.
DELAY_LOSS = ("delay", "jitter", "correlation", "distribution", "no_reorder", "loss", "loss_correlation",
              "gemodel", "ecn", "duplicate", "corrupt", "reorder", "reorder_gap")
RATE = ("rate", "overhead", "trace", "trace_repeat")
QUEUE = ("aqm", "queue")
AQMS = ("pie", "codel", "fq_codel", "red")
KINDS = ("netem", *AQMS, "tbf", "htb", "pfifo", "bfifo")
# What a veth's fifo holds when no limit is given (the kernel: txqueuelen; bfifo: x MTU + header).
TXQUEUELEN = 1000
PSCHED_MTU = 1514
UINT32_MAX = 2**32 - 1


class TcLineError(NetrigError):
    """A tc line netrig does not apply; `status` is the exit status tc would give."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def unreadable(word: str, what: str) -> TcLineError:
    """A word tc itself cannot read (its exit status 1)."""
    return TcLineError(f"'{word}' is not {what}", status=1)


def cannot(word: str, why: str) -> TcLineError:
    """A word tc reads but netrig's link cannot do (status 2, as the kernel refusing it)."""
    return TcLineError(f"{word}: {why}", status=2)


# tc's own readers (iproute2 6.1 lib/utils.c, lib/utils_math.c, tc/tc_util.c).

def matches(word: str, keyword: str) -> bool:
    """tc's matches(): word is a non-empty beginning of keyword (`del` is `delete`)."""
    return bool(word) and keyword.startswith(word)


_STRTOD = re.compile(r"\s*([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")


def _strtod(word: str) -> tuple[float, str] | None:
    """C's strtod on decimal text: the number and what follows it; None without one."""
    m = _STRTOD.match(word)
    if not m:
        return None
    return float(m.group(1)), word[m.end():]


def time_us(word: str, what: str) -> int:
    """get_time(): `10ms`, `1.5s`, `100us` (s, sec, secs, ms, msec, msecs, us, usec,
    usecs, any case); a bare number is microseconds; truncated to whole microseconds."""
    got = _strtod(word)
    scale = {"": 1, "s": 1_000_000, "sec": 1_000_000, "secs": 1_000_000, "ms": 1000, "msec": 1000,
             "msecs": 1000, "us": 1, "usec": 1, "usecs": 1}
    if got is None or got[1].lower() not in scale or got[0] < 0:
        raise unreadable(word, f"a time for {what} (e.g. 10ms, 1.5s, 100us)")
    us = got[0] * scale[got[1].lower()]
    if not math.isfinite(us) or us > UINT32_MAX:
        raise unreadable(word, f"a time tc can hold for {what} (at most {UINT32_MAX} us)")
    return int(us)


# get_rate64's suffixes, matched with strcasecmp: bit/s for each.
_RATES = {"": 1, "bit": 1, "kibit": 1024, "kbit": 1000, "mibit": 1024**2, "mbit": 1e6, "gibit": 1024**3,
          "gbit": 1e9, "tibit": 1024**4, "tbit": 1e12, "bps": 8, "kibps": 8 * 1024, "kbps": 8000,
          "mibps": 8 * 1024**2, "mbps": 8e6, "gibps": 8 * 1024**3, "gbps": 8e9, "tibps": 8 * 1024**4,
          "tbps": 8e12}


def rate_bps(word: str, what: str) -> int:
    """get_rate64(): `10mbit`, `10Mbit` (10^6 bit/s), `1mibit` (2^20), `1mbps` (10^6
    *bytes*/s), a bare number in bit/s; tc keeps whole bytes per second (truncated),
    so the result is a multiple of 8 bit/s. A percentage of the device's speed is
    refused: a veth has no speed to take it from."""
    if "%" in word:
        raise cannot(f"{what} {word}", "a rate as a percentage of the device's speed; netrig's link "
                                       "has no device speed to take it from: give it in bit/s (e.g. 10mbit)")
    got = _strtod(word)
    if got is None or got[1].lower() not in _RATES or got[0] < 0:
        raise unreadable(word, f"a rate for {what} (e.g. 10mbit, 1gbit, 500kbit; mbps is megabytes/s)")
    bytes_s = got[0] * _RATES[got[1].lower()] / 8
    if not math.isfinite(bytes_s) or bytes_s >= 2**64:
        raise unreadable(word, f"a rate tc can hold for {what}")
    return int(bytes_s) * 8


_SIZES = {"": 1, "b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3,
          "gb": 1024**3, "kbit": 1024 // 8, "mbit": 1024**2 // 8, "gbit": 1024**3 // 8}


def size(word: str, what: str) -> int:
    """get_size(): bytes; `10kb` and `10k` are 10 240, `1mb` 2^20, `1mbit` 2^17."""
    got = _strtod(word)
    if got is None or got[1].lower() not in _SIZES or got[0] < 0:
        raise unreadable(word, f"a size for {what} (e.g. 1500, 64kb, 1mb)")
    n = got[0] * _SIZES[got[1].lower()]
    if n > UINT32_MAX:
        raise unreadable(word, f"a size tc can hold for {what} (at most 4 GiB)")
    return int(n)


def percent(word: str, what: str) -> float:
    """parse_percent(): `1%` or `1` (a percentage either way) -> 0.01, within 0 .. 100%."""
    got = _strtod(word)
    if got is None or got[1] not in ("", "%"):
        raise unreadable(word, f"a percentage for {what} (e.g. 1%, 0.5%)")
    p = got[0] / 100
    if not 0 <= p <= 1:
        raise unreadable(word, f"a percentage from 0 to 100 for {what}")
    return p


def unsigned(word: str, what: str, base: int = 0) -> int:
    """get_unsigned()/get_u32(): strtoul, base 0 (0x.. hex, 0.. octal) unless given."""
    text = word.strip()
    try:
        if base == 0:
            n = int(text, 16) if text[:2].lower() == "0x" else int(text, 8) if len(text) > 1 and \
                text[0] == "0" else int(text, 10)
        else:
            n = int(text, base)
    except ValueError:
        raise unreadable(word, f"a whole number for {what}") from None
    if not 0 <= n <= UINT32_MAX or text.startswith(("+", "-")):
        raise unreadable(word, f"a whole number from 0 to {UINT32_MAX} for {what}")
    return n


def handle(word: str, what: str) -> tuple[int, int]:
    """get_tc_classid()/get_qdisc_handle(): `1:`, `1:0`, `5:1`, `10` (hex) -> (major, minor)."""
    m = re.fullmatch(r"([0-9a-fA-F]{0,4})(?::([0-9a-fA-F]{0,4}))?", word)
    if not m or (not m.group(1) and m.group(2) is None):
        raise unreadable(word, f"a {what} (e.g. 1:, 5:1)")
    return int(m.group(1) or "0", 16), int(m.group(2) or "0", 16)


# Writing the topology's keys.

def ms_or_us(us: int) -> str:
    return f"{us // 1000}ms" if us % 1000 == 0 else f"{us}us"


def pct(p: float) -> str:
    return tcout.percent(p)


def _words(words: Sequence[str]) -> _Cursor:
    return _Cursor(list(words))


@dataclass
class _Cursor:
    """tc's argv walk: NEXT_ARG() and NEXT_IS_NUMBER()."""

    words: list[str]
    i: int = 0

    def more(self) -> bool:
        return self.i < len(self.words)

    def take(self) -> str:
        w = self.words[self.i]
        self.i += 1
        return w

    def value(self, after: str) -> str:
        if not self.more():
            raise TcLineError(f"'{after}' needs a value after it (the line ends there)", status=255)
        return self.take()

    def number_next(self, signed: bool = False) -> bool:
        """NEXT_IS_NUMBER: the next word starts with a digit (or '-', signed)."""
        return self.more() and bool(self.words[self.i][:1]) and (
            self.words[self.i][0].isdigit() or (signed and self.words[self.i][0] == "-"))


# One change: the keys a line sets and those it turns off.

@dataclass
class Change:
    """What a line does to a direction: `sets` (the topology's keys, as a file writes
    them) over the direction's keys, after `clears` are taken off; `kind` the qdisc."""

    kind: str
    sets: dict[str, Any] = field(default_factory=dict)
    clears: set[str] = field(default_factory=set)

    def applied(self, current: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in current.items() if k not in self.clears and k not in self.sets}
        out.update(self.sets)
        return out
