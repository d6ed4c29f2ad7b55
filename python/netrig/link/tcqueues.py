"""The queue's and the rate's qdiscs read as a change of a link direction (iproute2 6.1
tc/q_pie.c, q_codel.c, q_fq_codel.c, q_red.c, q_fifo.c, q_tbf.c, q_htb.c): pie, codel,
fq_codel and red set the queue's discipline and limit (`change` of the discipline that
runs keeps the parameters the line leaves out); pfifo and bfifo the limit alone; tbf the
rate and the limit; htb's qdisc takes the rate off until its class (`htb_class`) puts
it on. What netrig-link cannot do is refused naming the word.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from netrig.link import tc as tcout
from netrig.link.tcwords import (
    PSCHED_MTU,
    QUEUE,
    RATE,
    TXQUEUELEN,
    Change,
    TcLineError,
    _Cursor,
    _strtod,
    _words,
    cannot,
    matches,
    ms_or_us,
    rate_bps,
    size,
    time_us,
    unreadable,
    unsigned,
)


def _discipline(current: Mapping[str, Any]) -> dict[str, Any]:
    """The running discipline as a mapping {type, params...} (droptail if none)."""
    aqm = current.get("aqm") or "droptail"
    return {"type": aqm} if isinstance(aqm, str) else dict(aqm)


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
