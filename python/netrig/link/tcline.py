"""tc's command line, read as a change of one netrig link direction (pure: no process).

Owns: reading `tc qdisc add|change|replace|link|delete dev IF root|parent X ...` and
`tc class add|change|replace dev IF ... htb rate R` as tc(8) reads them (iproute2 6.1,
tc/q_*.c: its abbreviations, `matches()`, units and defaults) into what they change on
one link direction, in the topology's keys (`netrig.link.spec.resolve` takes the
result); and `show`, the lines `tc [-s] qdisc show` prints for a direction, from its
keys and netrig-link's counters. `netrig.lab.tcshim` finds the direction and applies it.

netrig-link's direction is one rate stage, one delay/loss stage (delay, jitter, loss,
duplicate, corrupt, reorder) and one queue (a discipline and its limit). A qdisc line
sets the stages its kind owns and keeps the others, so the tree a Mininet script builds
(htb at the root for the rate, netem under it, red under that) lands stage by stage, and
seed 004's `tc qdisc add dev s0-eth2 root pie limit 1000 target 20ms` on a 10 Mbit/s,
5 ms link keeps 10 Mbit/s and 5 ms and puts PIE on the queue:

- netem: the delay/loss stage whole (what the line leaves out is off, as the kernel's
  netem_change resets it); the rate stage only if it gives `rate`; the queue's limit
  only if it gives `limit` (netrig's queue is already there, with its own limit).
- pie, codel, fq_codel, red, pfifo, bfifo: the queue (discipline and limit; a limit left
  out is the discipline's default). `change` of the discipline that runs keeps the
  parameters the line leaves out, as the kernel does for pie, codel and fq_codel.
- tbf: the rate stage and the queue's limit (`limit`, or `latency` as tc turns it into
  one: rate x latency + burst bytes).
- htb: the qdisc alone takes the rate off (until its class comes); `tc class add ...
  htb rate R` on htb's default class puts the rate on.
- `delete ... root` leaves the direction unshaped, as Linux does.

`add` on a direction that is already shaped is taken as a replace of its kind's stages:
the topology shaped the link, not a qdisc the user can see, so refusing with the
kernel's "File exists" would break every script that shapes a link the file shaped.

Where it departs from Linux, on purpose: tbf's and htb's burst (bytes let through at
line speed after an idle spell) is not emulated: netrig-link serializes every frame at
the rate; `show` prints the one qdisc that names what the direction runs (the AQM, else
netem, else the fifo), not htb's tree; its backlog is the queue's, without the frames on
the delay line. Anything netrig cannot express (netem's slot or cell overheads, a
correlation of duplicate or corrupt, tbf's peakrate, RED's adaptive mode, a rate as a
percentage of a device speed a veth does not have) is refused with a sentence naming the
word: `TcLineError`, whose `status` is tc's (1: tc itself could not read the line, 2: it
can read it but netrig's link cannot do it, as the kernel refusing a qdisc).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from netrig.errors import NetrigError
from netrig.link import tc as tcout
from netrig.link.spec import KEYS

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


def _discipline(current: Mapping[str, Any]) -> dict[str, Any]:
    """The running discipline as a mapping {type, params...} (droptail if none)."""
    aqm = current.get("aqm") or "droptail"
    return {"type": aqm} if isinstance(aqm, str) else dict(aqm)


def netem(words: Sequence[str]) -> Change:
    c = _words(words)
    ch = Change("netem", clears=set(DELAY_LOSS))
    delay_us = jitter_us = 0
    loss_given = False
    gap: int | None = None
    reorder = 0.0
    while c.more():
        w = c.take()
        if matches(w, "limit"):
            v = c.value(w)
            ch.sets["queue"] = f"{size(v, 'netem limit')}p"  # get_size, in packets
        elif matches(w, "latency") or matches(w, "delay"):
            delay_us = time_us(c.value(w), "netem delay")
            if c.number_next():
                jitter_us = time_us(c.take(), "netem jitter")
                if c.number_next():
                    corr = percent(c.take(), "netem delay correlation")
                    if corr:
                        ch.sets["correlation"] = pct(corr)
        elif matches(w, "loss") or matches(w, "drop"):
            if loss_given:
                raise TcLineError("netem: loss given twice (tc: duplicate loss argument)", status=1)
            loss_given = True
            model = c.value(w)
            if model[:1].isdigit() or model == "random":
                p = percent(model if model[:1].isdigit() else c.value(model), "netem loss")
                if p:
                    ch.sets["loss"] = pct(p)
                if c.number_next():
                    corr = percent(c.take(), "netem loss correlation")
                    if corr:
                        ch.sets["loss_correlation"] = pct(corr)
            elif model == "gemodel":
                g = _gemodel(c)
                ch.sets["gemodel"] = {k: pct(v) for k, v in g.items()}
            elif model == "state":
                ch.sets["gemodel"] = {k: pct(v) for k, v in _four_state(c).items()}
            else:
                raise TcLineError(f"netem: unknown loss parameter '{model}' (random, state or gemodel)",
                                  status=1)
        elif matches(w, "ecn"):
            ch.sets["ecn"] = True
        elif matches(w, "reorder"):
            reorder = percent(c.value(w), "netem reorder")
            if c.number_next():
                _no_correlation(c.take(), "reorder")
        elif matches(w, "corrupt"):
            p = percent(c.value(w), "netem corrupt")
            if p:
                ch.sets["corrupt"] = pct(p)
            if c.number_next():
                _no_correlation(c.take(), "corrupt")
        elif matches(w, "gap"):
            gap = unsigned(c.value(w), "netem gap")
        elif matches(w, "duplicate"):
            p = percent(c.value(w), "netem duplicate")
            if p:
                ch.sets["duplicate"] = pct(p)
            if c.number_next():
                _no_correlation(c.take(), "duplicate")
        elif matches(w, "distribution"):
            dist = c.value(w)
            if dist not in ("uniform", "normal", "pareto", "paretonormal"):
                raise cannot(f"netem distribution {dist}", "netrig-link's jitter takes uniform, normal, "
                                                           "pareto or paretonormal (no table files)")
            ch.sets["distribution"] = dist
        elif matches(w, "rate"):
            bps = rate_bps(c.value(w), "netem rate")
            ch.sets["rate"] = f"{bps}bit"
            ch.clears |= set(RATE)
            if c.number_next(signed=True):
                over = c.take()
                n = _signed(over, "netem rate's packet overhead")
                if n < 0:
                    raise cannot(f"netem rate packet overhead {over}", "netrig-link adds overhead bytes to "
                                                                      "each frame, it does not take them off")
                if n:
                    ch.sets["overhead"] = n
            if c.number_next():
                cell = c.take()
                if unsigned(cell, "netem rate's cell size"):
                    raise cannot(f"netem rate cellsize {cell}", "netrig-link's rate counts frames, not cells")
            if c.number_next(signed=True):
                cell = c.take()
                if _signed(cell, "netem rate's cell overhead"):
                    raise cannot(f"netem rate celloverhead {cell}", "netrig-link's rate counts frames, not "
                                                                    "cells")
        elif matches(w, "slot"):
            raise cannot("netem slot", "netrig-link has no time slots (its delay stage releases each "
                                       "packet at its own time)")
        else:
            raise TcLineError(f"netem: what is '{w}'? (tc-netem(8) lists netem's words)", status=1)
    if reorder:
        if not delay_us:
            raise TcLineError("netem: reordering is not possible without some delay (tc says so too)",
                              status=1)
        ch.sets["reorder"] = pct(reorder)
        if gap and gap != 1:
            ch.sets["reorder_gap"] = gap
    elif gap:
        raise TcLineError("netem: gap given without a reorder probability (tc says so too)", status=1)
    if ch.sets.get("ecn") and not ("loss" in ch.sets or "gemodel" in ch.sets):
        raise TcLineError("netem: ecn asked for without a loss model (tc says so too)", status=1)
    if "distribution" in ch.sets and not (delay_us and jitter_us):
        raise TcLineError("netem: a distribution is given but no delay and jitter (tc says so too)",
                          status=1)
    if delay_us:
        ch.sets["delay"] = ms_or_us(delay_us)
    if jitter_us:
        ch.sets["jitter"] = ms_or_us(jitter_us)
    else:
        ch.sets.pop("correlation", None)  # tc keeps a correlation of no jitter; it does nothing
        ch.sets.pop("distribution", None)
    return ch


def _signed(word: str, what: str) -> int:
    try:
        return int(word, 0)
    except ValueError:
        raise unreadable(word, f"a whole number for {what}") from None


def _no_correlation(word: str, stage: str) -> None:
    if percent(word, f"netem {stage} correlation"):
        raise cannot(f"netem {stage} correlation {word}", f"netrig-link's {stage} is independent from "
                                                          "packet to packet (it has no correlation)")


def _gemodel(c: _Cursor) -> dict[str, float]:
    """`loss gemodel p [r [1-h [1-k]]]`: tc's defaults r = 1 - p, 1-h = 100%, 1-k = 0."""
    p = percent(c.value("gemodel"), "netem loss gemodel p")
    g = {"p": p, "r": 1 - p, "loss_bad": 1.0, "loss_good": 0.0}
    for key, what in (("r", "r"), ("loss_bad", "1-h"), ("loss_good", "1-k")):
        if not c.number_next():
            break
        g[key] = percent(c.take(), f"netem loss gemodel {what}")
    return g


def _four_state(c: _Cursor) -> dict[str, float]:
    """`loss state p13 [p31 [p32 [p23 [p14]]]]`, netem's 4-state Markov loss. With p32 and
    p14 at 0 (tc's defaults) it is two states, a gap that loses nothing and a burst that
    loses everything, moving with p13 and p31: Gilbert-Elliott with loss_good 0 and
    loss_bad 100%. (netem decides a packet's fate by the state it moves to, netrig-link,
    as netem's gemodel, by the state it arrives in: the same chain, its losses one packet
    later, so the same loss rate and burst lengths.)"""
    p13 = percent(c.value("state"), "netem loss state p13")
    p = {"p13": p13, "p31": 1 - p13, "p32": 0.0, "p23": 1.0, "p14": 0.0}
    for key in ("p31", "p32", "p23", "p14"):
        if not c.number_next():
            break
        p[key] = percent(c.take(), f"netem loss state {key}")
    for key, why in (("p32", "the burst's good state 2"), ("p14", "isolated losses (state 4)")):
        if p[key]:
            raise cannot(f"netem loss state {key} {pct(p[key])}",
                         f"netrig-link's loss has two states (Gilbert-Elliott); {why} has no place in it: "
                         "give p32 and p14 as 0, or use loss gemodel")
    return {"p": p["p13"], "r": p["p31"], "loss_good": 0.0, "loss_bad": 1.0}


def _aqm_change(kind: str, verb: str, current: Mapping[str, Any], given: dict[str, Any],
                limit: str | None) -> Change:
    """The queue as discipline `kind` with `given` parameters; `change` of the kind that
    runs keeps those the line leaves out."""
    ch = Change(kind, clears=set(QUEUE))
    running = _discipline(current)
    params = dict(given)
    if matches(verb, "change") and running["type"] == kind:
        params = {**{k: v for k, v in running.items() if k != "type"}, **given}
        if limit is None and "queue" in current:
            limit = current["queue"]
    ch.sets["aqm"] = {"type": kind, **params} if params else kind
    if limit is not None:
        ch.sets["queue"] = limit
    return ch


def _limit_packets(c: _Cursor, w: str, kind: str) -> str | None:
    n = unsigned(c.value(w), f"{kind} limit")
    return f"{n}p" if n else None  # 0: not given (tc sends no limit)


def _ecn_words(w: str, given: dict[str, Any]) -> bool:
    if w in ("ecn", "noecn"):
        given["ecn"] = w == "ecn"
        return True
    return False


def pie(words: Sequence[str], verb: str, current: Mapping[str, Any]) -> Change:
    c, given, limit = _words(words), {}, None
    while c.more():
        w = c.take()
        if w == "limit":
            limit = _limit_packets(c, w, "pie")
        elif w in ("target", "tupdate"):
            us = time_us(c.value(w), f"pie {w}")
            if us:
                given[w] = ms_or_us(us)
        elif w in ("alpha", "beta"):
            n = unsigned(c.value(w), f"pie {w}")
            if n > 32:
                raise unreadable(str(n), f"pie's {w} (0 .. 32, in sixteenths)")
            if n:
                given[w] = n / 16
        elif _ecn_words(w, given) or w in ("nobytemode", "no_dq_rate_estimator"):
            pass
        elif w in ("bytemode", "dq_rate_estimator"):
            raise cannot(f"pie {w}", "netrig-link's PIE (RFC 8033) measures the queue's delay by "
                                     "timestamps, not bytes or a dequeue-rate estimate")
        else:
            raise TcLineError(f"pie: what is '{w}'? (pie takes limit, target, tupdate, alpha, beta, ecn)",
                              status=1)
    return _aqm_change("pie", verb, current, given, limit)


def codel(words: Sequence[str], verb: str, current: Mapping[str, Any], kind: str = "codel") -> Change:
    c, given, limit = _words(words), {}, None
    while c.more():
        w = c.take()
        if w == "limit":
            limit = _limit_packets(c, w, kind)
        elif w in ("target", "interval"):
            us = time_us(c.value(w), f"{kind} {w}")
            if us:
                given[w] = ms_or_us(us)
        elif kind == "fq_codel" and w in ("flows", "quantum"):
            n = unsigned(c.value(w), f"fq_codel {w}")
            if n:
                given[w] = n
        elif _ecn_words(w, given):
            pass
        elif w in ("ce_threshold", "ce_threshold_selector", "memory_limit", "drop_batch"):
            raise cannot(f"{kind} {w}", f"netrig-link's {kind} has no {w} (it marks or drops by "
                                        "CoDel's law alone)")
        else:
            takes = "limit, flows, quantum, target, interval, ecn" if kind == "fq_codel" \
                else "limit, target, interval, ecn"
            raise TcLineError(f"{kind}: what is '{w}'? ({kind} takes {takes})", status=1)
    return _aqm_change(kind, verb, current, given, limit)


def red(words: Sequence[str], current: Mapping[str, Any], rate_after: int | None) -> Change:
    """tc's RED: limit and avpkt required; min, max and burst default as tc derives them.
    netrig-link's RED averages the backlog with weight 0.002 (2^-9) and takes the typical
    packet as 1000 bytes, so avpkt must be 1000 and burst must give tc's Wlog 9; its idle
    decay runs at the link's own rate, so bandwidth, if given, must be that rate."""
    c = _words(words)
    limit = lo = hi = burst = avpkt = 0
    prob = 0.02
    bandwidth: int | None = None
    given: dict[str, Any] = {}
    while c.more():
        w = c.take()
        if w in ("limit", "min", "max", "avpkt"):
            n = size(c.value(w), f"red {w}")
            if w == "limit":
                limit = n
            elif w == "min":
                lo = n
            elif w == "max":
                hi = n
            else:
                avpkt = n
        elif w == "burst":
            burst = unsigned(c.value(w), "red burst")
        elif w == "probability":
            got = _strtod(c.value(w))
            if got is None or got[1]:
                raise unreadable(c.words[c.i - 1], "red's probability (e.g. 0.02)")
            prob = got[0]
        elif w == "bandwidth":
            bandwidth = rate_bps(c.value(w), "red bandwidth")
        elif w == "ecn":
            given["ecn"] = True
        elif w in ("harddrop", "nodrop", "adaptative", "adaptive") or matches(w, "qevent"):
            raise cannot(f"red {w}", "netrig-link's RED (Linux's, without its flags) has no such mode")
        else:
            raise TcLineError(f"red: what is '{w}'? (red takes limit, min, max, avpkt, burst, probability, "
                              "bandwidth, ecn)", status=1)
    if not limit or not avpkt:
        raise TcLineError("red: limit and avpkt are required (tc says so too)", status=1)
    hi = hi or (lo * 3 if lo else limit // 4)
    lo = lo or hi // 3
    burst = burst or (2 * lo + hi) // (3 * avpkt)
    if avpkt != tcout.RED_AVPKT:
        raise cannot(f"red avpkt {avpkt}", f"netrig-link's RED takes the typical packet as "
                                           f"{tcout.RED_AVPKT} bytes: give avpkt {tcout.RED_AVPKT}")
    wlog = tcout._red_wlog(lo, burst, avpkt)
    if wlog < 0:
        raise TcLineError(f"red: tc derives no averaging weight from burst {burst} with min {lo} and avpkt "
                          f"{avpkt} (burst must exceed min / avpkt)", status=1)
    if wlog != tcout.RED_WLOG:
        fits = tcout.red_burst(lo)
        raise cannot(f"red burst {burst}", f"with min {lo} tc derives an averaging weight of 2^-{wlog}; "
                                           f"netrig-link's RED averages with 0.002 (2^-{tcout.RED_WLOG})"
                                           + (f": give burst {fits}" if fits else ""))
    if bandwidth is not None and bandwidth != rate_after:
        now = f"{rate_after}bit/s" if rate_after else "no rate"
        raise cannot(f"red bandwidth {bandwidth}bit", f"netrig-link's RED decays its average while idle at "
                                                      f"the link's own rate ({now}): leave bandwidth out")
    if not 0 < prob <= 1:
        raise cannot(f"red probability {prob:g}", "netrig-link's RED takes a probability above 0, at most 1")
    given.update({"min_th": f"{lo}B", "max_th": f"{hi}B", "max_p": prob})
    ch = Change("red", sets={"aqm": {"type": "red", **given}, "queue": f"{limit}B"}, clears=set(QUEUE))
    return ch


def fifo(words: Sequence[str], kind: str) -> Change:
    c = _words(words)
    n = None
    while c.more():
        w = c.take()
        if w == "limit":
            n = size(c.value(w), f"{kind} limit")
        else:
            raise TcLineError(f"{kind}: what is '{w}'? ({kind} takes limit)", status=1)
    if n is None:
        n = TXQUEUELEN if kind == "pfifo" else TXQUEUELEN * PSCHED_MTU
    if n == 0:
        raise cannot(f"{kind} limit 0", "netrig-link's queue holds at least one packet")
    return Change(kind, sets={"queue": f"{n}p" if kind == "pfifo" else f"{n}B"}, clears=set(QUEUE))


def _shaper_words(c: _Cursor, w: str, kind: str, out: dict[str, Any]) -> bool:
    """The words tbf and htb's class share: overhead, mpu, linklayer; burst and mtu read
    and kept out (netrig-link serializes each frame at the rate: no bucket)."""
    if matches(w, "overhead"):
        n = unsigned(c.value(w), f"{kind} overhead", 10)
        if n > 0xFFFF:
            raise unreadable(str(n), f"{kind}'s overhead (0 .. 65535)")
        if n:
            out["overhead"] = n
    elif w == "mpu":
        if unsigned(c.value(w), f"{kind} mpu", 10):
            raise cannot(f"{kind} mpu", "netrig-link's rate counts each frame at its size (no minimum)")
    elif matches(w, "linklayer"):
        layer = c.value(w)
        if layer not in ("ethernet", "eth"):
            raise cannot(f"{kind} linklayer {layer}", "netrig-link's rate counts Ethernet frames")
    else:
        return False
    return True


def tbf(words: Sequence[str]) -> Change:
    c = _words(words)
    rate = burst = limit = latency = 0
    out: dict[str, Any] = {}
    while c.more():
        w = c.take()
        if matches(w, "limit"):
            limit = size(c.value(w), "tbf limit")
        elif matches(w, "latency"):
            latency = time_us(c.value(w), "tbf latency")
        elif matches(w, "burst") or w in ("buffer", "maxburst"):
            burst = size(c.value(w).split("/")[0], f"tbf {w}")
        elif w == "rate":
            rate = rate_bps(c.value(w), "tbf rate")
        elif _shaper_words(c, w, "tbf", out):
            pass
        elif w in ("mtu", "minburst") or matches(w, "peakrate"):
            raise cannot(f"tbf {w}", "netrig-link's rate has no second (peak) bucket")
        else:
            raise TcLineError(f"tbf: unknown parameter '{w}' (tbf takes rate, burst, limit or latency, "
                              "overhead)", status=1)
    missing = [k for k, v in (("rate", rate), ("burst", burst)) if not v]
    if missing or not (limit or latency):
        need = missing + ([] if limit or latency else ["limit or latency"])
        raise TcLineError(f"tbf: {' and '.join(need)} required (tc says so too)", status=1)
    if limit and latency:
        raise TcLineError("tbf: give limit or latency, not both (tc says so too)", status=1)
    if not limit:
        limit = int(rate / 8 * latency / 1e6 + burst)  # tc's: rate x latency + burst
    sets = {"rate": f"{rate}bit", "queue": f"{limit}B", **out}
    return Change("tbf", sets=sets, clears={*RATE, "queue"})


def htb_qdisc(words: Sequence[str]) -> tuple[Change, int]:
    """htb's qdisc: the rate off until its class comes; its default class (hex)."""
    c = _words(words)
    default = 0
    while c.more():
        w = c.take()
        if matches(w, "default"):
            default = unsigned(c.value(w), "htb default", 16)
        elif matches(w, "r2q") or matches(w, "direct_qlen"):
            unsigned(c.value(w), f"htb {w}", 10)
        elif matches(w, "debug"):
            c.value(w)
        elif matches(w, "offload"):
            raise cannot("htb offload", "netrig-link is no NIC to offload to")
        else:
            raise TcLineError(f"htb: what is '{w}'? (htb takes default, r2q, direct_qlen)", status=1)
    return Change("htb", clears=set(RATE)), default


def htb_class(words: Sequence[str]) -> Change:
    c = _words(words)
    rate = ceil = 0
    out: dict[str, Any] = {}
    while c.more():
        w = c.take()
        if w == "rate":
            rate = rate_bps(c.value(w), "htb rate")
        elif w == "ceil":
            ceil = rate_bps(c.value(w), "htb ceil")
        elif matches(w, "burst") or matches(w, "cburst") or w in ("buffer", "maxburst", "cbuffer",
                                                                  "cmaxburst"):
            size(c.value(w).split("/")[0], f"htb {w}")
        elif matches(w, "prio") or matches(w, "quantum") or matches(w, "mtu"):
            unsigned(c.value(w), f"htb {w}", 10)
        elif _shaper_words(c, w, "htb", out):
            pass
        else:
            raise TcLineError(f"htb: what is '{w}'? (htb's class takes rate, ceil, burst, cburst, "
                              "overhead, quantum, prio)", status=1)
    if not rate:
        raise TcLineError("htb: \"rate\" is required (tc says so too)", status=1)
    if ceil and ceil != rate:
        raise cannot(f"htb ceil {ceil}bit", "with one class there is nothing to borrow from: netrig-link's "
                                            "rate is the class's rate (leave ceil out or give the rate)")
    return Change("htb", sets={"rate": f"{rate}bit", **out}, clears=set(RATE))


def rate_of(text: Mapping[str, Any]) -> int | None:
    """The rate a direction's keys give, in bit/s (for RED's bandwidth)."""
    return int(KEYS["rate"].parse(text["rate"])) if text.get("rate") else None


def qdisc_change(kind: str, words: Sequence[str], verb: str, current: Mapping[str, Any]) -> Change:
    """What `tc qdisc VERB ... KIND WORDS` does to a direction whose keys are `current`."""
    if kind == "netem":
        return netem(words)
    if kind == "pie":
        return pie(words, verb, current)
    if kind in ("codel", "fq_codel"):
        return codel(words, verb, current, kind)
    if kind == "red":
        return red(words, current, rate_of(current))
    if kind in ("pfifo", "bfifo"):
        return fifo(words, kind)
    if kind == "tbf":
        return tbf(words)
    if kind == "htb":
        return htb_qdisc(words)[0]
    raise cannot(f"qdisc {kind}", f"netrig-link's direction is a rate, a delay/loss stage and one queue "
                                  f"({', '.join(KINDS)} set them); it has no {kind}")


# Reading the command: `qdisc VERB ...` and `class VERB ...` (after tc's global options).

VERBS = ("add", "change", "replace", "link", "delete")


def verb_of(word: str) -> str | None:
    """The qdisc/class verb `word` abbreviates, in tc's order (`d` is delete), if any."""
    return next((v for v in VERBS if matches(word, v)), None)


@dataclass(frozen=True)
class Command:
    """One `tc qdisc|class VERB` line: its device, where it hangs (`root`, or `parent`
    as (major, minor)), its handle or classid, kind and the kind's own words."""

    object: str  # qdisc | class
    verb: str
    dev: str | None
    parent: str | tuple[int, int] | None
    handle: tuple[int, int] | None
    kind: str | None
    words: tuple[str, ...]


def parse(object: str, words: Sequence[str]) -> Command:
    """`add dev s0-eth2 root pie limit 1000` (tc's words after `qdisc` or `class`)."""
    if not words or verb_of(words[0]) is None:
        raise TcLineError(f"{object}: '{words[0] if words else ''}' is not add, change, replace or delete",
                          status=255)
    verb = verb_of(words[0])
    assert verb is not None
    dev = kind = None
    parent: str | tuple[int, int] | None = None
    hd = None
    rest: tuple[str, ...] = ()
    c = _words(words[1:])
    while c.more():
        w = c.take()
        if w == "dev":
            dev = c.value(w)
        elif w == ("classid" if object == "class" else "handle"):
            hd = handle(c.value(w), "class ID" if object == "class" else "qdisc handle")
        elif w == "root":
            parent = "root"
        elif w == "parent":
            parent = handle(c.value(w), "parent ID")
        elif w in ("ingress", "clsact"):
            parent = w
            break
        elif matches(w, "estimator") or matches(w, "stab") or matches(w, "ingress_block") or \
                matches(w, "egress_block"):
            raise cannot(w, "netrig's tc takes no rate estimators, size tables or blocks")
        else:
            kind = w
            rest = tuple(c.words[c.i:])
            break
    return Command(object, verb, dev, parent, hd, kind, rest)


# Applying a command to a direction.

@dataclass(frozen=True)
class Htb:
    """htb at a direction's root: its handle's major and its default class's minor."""

    major: int
    default: int


@dataclass(frozen=True)
class Applied:
    """A direction after a line: its keys, htb at its root (if any), the kind the line named."""

    text: dict[str, Any]
    htb: Htb | None
    kind: str | None


def apply(cmd: Command, current: Mapping[str, Any], htb: Htb | None) -> Applied:
    """What `cmd` leaves of a direction whose keys are `current` (and whose root is htb,
    if `htb`). Raises TcLineError naming what netrig cannot do."""
    if cmd.object == "class":
        return _apply_class(cmd, current, htb)
    if cmd.verb == "delete":
        if cmd.parent not in ("root", None) or (cmd.parent is None and cmd.handle is None):
            where = "parent {}:{:x}".format(*cmd.parent) if isinstance(cmd.parent, tuple) else "no root"
            raise cannot(f"qdisc delete {where}", "netrig-link's direction is one queue and its stages, "
                                                  "not a tree: delete it all with 'tc qdisc del dev "
                                                  f"{cmd.dev} root'")
        return Applied({}, None, cmd.kind)
    if cmd.parent is None:
        raise TcLineError(f"qdisc {cmd.verb}: give root or parent (tc's kernel call needs one)", status=2)
    if cmd.kind is None:
        raise TcLineError(f"qdisc {cmd.verb}: which qdisc? (e.g. netem, pie, tbf after root)", status=2)
    if cmd.kind == "htb":
        if cmd.parent != "root":
            raise cannot("htb under another qdisc", "netrig-link's direction has one rate stage: put htb "
                                                    "at the root")
        ch, default = htb_qdisc(cmd.words)
        major = cmd.handle[0] if cmd.handle else 0x8001
        return Applied(ch.applied(current), Htb(major, default), "htb")
    ch = qdisc_change(cmd.kind, cmd.words, cmd.verb, current)
    return Applied(ch.applied(current), htb if cmd.parent != "root" else None, cmd.kind)


def _apply_class(cmd: Command, current: Mapping[str, Any], htb: Htb | None) -> Applied:
    if cmd.verb != "delete" and cmd.kind != "htb":
        raise cannot(f"class of {cmd.kind or 'no kind'}", "netrig's tc takes htb's one rate class only")
    if htb is None:
        raise cannot(f"class {cmd.verb}", f"{cmd.dev} has no htb qdisc at its root: add one first "
                                          f"('tc qdisc add dev {cmd.dev} root handle 1: htb default 1')")
    cid = cmd.handle
    if cid is None or cid[0] != htb.major or cid[1] != htb.default or cid[1] == 0:
        shown = "no classid" if cid is None else f"class {cid[0]:x}:{cid[1]:x}"
        raise cannot(shown, f"htb's default class is {htb.major:x}:{htb.default:x}, and without filters "
                            "(which netrig does not emulate) only it carries traffic")
    if isinstance(cmd.parent, tuple) and cmd.parent != (htb.major, 0):
        raise cannot("parent {:x}:{:x}".format(*cmd.parent), f"netrig's tc takes one class, right under "
                                                             f"htb ({htb.major:x}:)")
    if cmd.verb == "delete":
        return Applied(Change("htb", clears=set(RATE)).applied(current), htb, "htb")
    return Applied(htb_class(cmd.words).applied(current), htb, "htb")
