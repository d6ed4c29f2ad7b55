"""`tc qdisc ... netem WORDS` read as a change of a link direction's delay/loss stage
(iproute2 6.1 tc/q_netem.c): delay and its jitter, correlation and distribution, loss
(random, state, gemodel), duplicate, corrupt, reorder, ecn, and netem's rate and limit.
The stage is set whole (what the line leaves out is off, as the kernel's netem_change
resets it); what netrig-link cannot express (slot, cell overheads, a correlation of
duplicate or corrupt, a four-state loss with p32 or p14) is refused naming the word.
"""

from __future__ import annotations

from collections.abc import Sequence

from netrig.link.tcwords import (
    DELAY_LOSS,
    RATE,
    Change,
    TcLineError,
    _Cursor,
    _words,
    cannot,
    matches,
    ms_or_us,
    pct,
    percent,
    rate_bps,
    size,
    time_us,
    unreadable,
    unsigned,
)


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
