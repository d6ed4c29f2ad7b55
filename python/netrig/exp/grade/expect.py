"""What theory expects of each flow of a sweep point, beside what was measured.

bulk TCP   min(max-min fair share of its bottleneck after headers, W/RTT, Mathis /
           Padhye under loss)
bulk UDP   received = min(offered, fair share after headers) × (1 − random loss)
ping/probe median RTT = the path's idle RTT; with loss-based TCP filling a shared
           bottleneck, anything up to idle RTT + that queue's delay (the AQM's target)
fetch      idle: handshake + slow start from IW10 until the window holds the response
           or the path's BDP, then the rest at TCP's goodput
web        fetch's, with HTTP's bytes, TLS 1.3's round trip, and keep-alive (the
           handshake once; later fetches from the window Linux kept over the idle gap)
command    no theory

Flows share links when their planned times overlap (by more than half the flow's
duration: spec/model.py's `overlaps`; the kinds that load a path and the hook each kind
calls here are exp/kinds/registry.py's). A TCP flow's own window or loss limit caps its demand in the fair share,
and a UDP flow's offered rate caps its.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from netrig.exp.kinds import web
from netrig.exp.kinds.base import connect_timeout_s
from netrig.exp.kinds.registry import kind_of
from netrig.exp.spec.model import FlowSpec, Point, overlaps
from netrig.theory import Flow, analyse, max_min_fair
from netrig.theory import formulas as fm
from netrig.theory.connect import arp_tries, connect_chance, max_link_rtt
from netrig.theory.path import bottleneck, hops, link_key
from netrig.topo.plan import Plan, make_plan

IW = 10  # Linux's initial window, segments


@dataclass
class Expected:
    metric: str  # the summary column this is compared with
    value: float | None
    limit: str  # what sets it
    detail: str
    hi: float | None = None  # a range's top (RTT under load); None: a point value
    extra: dict[str, Any] = field(default_factory=dict)


def _dir(f: FlowSpec) -> tuple[str, str]:
    """Where the data goes: (sender, receiver)."""
    assert f.to is not None
    return (f.to, f.src) if f.reverse else (f.src, f.to)


def _window(f: FlowSpec, seen: dict[str, float] | None = None, name: str | None = None) -> float | None:
    """The TCP window theory uses: what the receiver advertised, when a run saw it
    (Linux makes a window of `-w`'s buffer by its own rules, and without `-w` grows it
    up to tcp_rmem's limit), else the buffer given (None: no window limit known)."""
    if seen and name in seen:
        return seen[name]
    return None if f.window is None else f.nbytes("window")


def _span(point: Point, f: FlowSpec) -> tuple[float, float]:
    """A flow's planned (start, end), seconds from the flows' start."""
    return f.seconds("start"), f.seconds("start") + point.flow_duration(f)


def expectations(point: Point, plan: Plan | None = None,
                 windows: dict[str, float] | None = None,
                 send_buffers: dict[str, float] | None = None,
                 default_cc: str | None = None,
                 buffers: dict[str, tuple[float, float]] | None = None) -> dict[str, Expected]:
    """Each flow's expectation; `windows`: windows the run saw advertised, by flow;
    `send_buffers`: the largest send buffer the sender's kernel gives a TCP flow
    without -w (tcp_wmem's maximum, by flow); `default_cc`: the congestion control a
    socket gets without asking (the host's, which a new namespace inherits; None:
    Linux's default, cubic), which a web server's connections use; `buffers`: the
    (SO_SNDBUF, SO_RCVBUF) the kernel gave a flow's -w, as the run read them back."""
    plan = plan or make_plan(point.topology)
    seen = windows or {}
    sndbuf = send_buffers or {}
    flows = point.spec.flows
    out: dict[str, Expected] = {}
    for name, f in flows.items():
        hook = kind_of(f).theory
        if hook is None:
            continue
        concurrent = {n: g for n, g in flows.items()
                      if kind_of(g).load and (n == name or overlaps(_span(point, f), _span(point, g)))}
        if hook == "bulk":
            out[name] = _bulk(plan, name, f, concurrent, seen, sndbuf.get(name), point.flow_duration(f),
                              buffers)
        elif hook == "rtt":
            out[name] = _rtt(plan, f, concurrent, seen)
        elif hook == "fetch":
            out[name] = _fetch(plan, f, concurrent, seen)
        elif hook == "web":
            out[name] = _web(plan, f, concurrent, seen, point.flow_duration(f), default_cc or "cubic")
    return out


def _own(plan: Plan, name: str, f: FlowSpec, seen: dict[str, float]):
    src, dst = _dir(f)
    size = f.nbytes("length") if f.kind == "udp" else None
    w = _window(f, seen, name)
    if w is not None and f.kind == "tcp" and not f.nodelay:
        w = in_flight(w, analyse(plan, src, dst).tcp.payload)
    return analyse(plan, src, dst, window=w, proto=f.kind, udp_rate=f.rate_bps, udp_size=size)


def in_flight(window: float, mss: float) -> float:
    """What a TCP sender keeps in flight in a window: whole segments (Nagle holds back a
    partial one while data is unacknowledged: a 2048-byte window carries one 1448-byte
    segment per RTT), or the window itself when it is less than one segment."""
    return window if window < mss else (window // mss) * mss


def _shares(plan: Plan, concurrent: dict[str, FlowSpec],
            seen: dict[str, float]) -> tuple[dict[str, float], dict[str, str], dict]:
    """Each flow's total max-min fair rate (wire bits), what limited it, and the
    reports. Elastic TCP connections are capped by their own window/loss limits."""
    fl: list[Flow] = []
    capacity: dict[str, float] = {}
    reports = {}
    for n, g in concurrent.items():
        r = _own(plan, n, g, seen)
        reports[n] = r
        src, dst = _dir(g)
        route = hops(plan, src, dst)
        for h in route:
            if h.rate_bps is not None:
                capacity[link_key(h)] = h.rate_bps
        keys = tuple(link_key(h) for h in route if h.rate_bps is not None)
        eff = (r.udp if g.kind == "udp" else r.tcp).efficiency
        if g.kind == "udp":
            demand = (g.rate_bps or 0) / eff
        else:
            caps = [v for k, v in r.tcp_expected.limits.items() if k != "link"]
            demand = min(caps) / eff if caps else None
        for c in range(g.parallel):
            fl.append(Flow(f"{n}#{c}", keys, demand))
    got = max_min_fair(fl, capacity)
    total = {n: sum(got[f"{n}#{c}"].rate for c in range(g.parallel)) for n, g in concurrent.items()}
    limit = {n: got[f"{n}#0"].limit for n in concurrent}
    return total, limit, reports


def _bulk(plan: Plan, name: str, f: FlowSpec, concurrent: dict[str, FlowSpec],
          seen: dict[str, float], sndbuf: float | None = None, dur: float = math.inf,
          buffers: dict[str, tuple[float, float]] | None = None) -> Expected:
    share, limit, reports = _shares(plan, concurrent, seen)
    r = reports[name]
    eff = (r.udp if f.kind == "udp" else r.tcp).efficiency
    fair = share[name] * eff
    others = len(concurrent) - 1
    extra = {"base_rtt_ms": r.base_rtt_s * 1e3, "bottleneck_bps": r.bottleneck.rate_bps if r.bottleneck else None}
    if f.kind == "udp":
        offered = f.rate_bps or 0.0
        got = min(offered, fair) * (1 - r.loss_out)
        extra["expected_loss_pct"] = 100 * (1 - got / offered) if offered else None
        why = "its offered rate" if limit[name] == "demand" else f"link {limit[name]}"
        return _may_time_out(plan, f, r, Expected(
            "throughput_bps", got, "offered rate" if limit[name] == "demand" else "link",
            f"UDP at {offered / 1e6:.4g} Mbit/s: receives min(offered, {fair / 1e6:.4g} Mbit/s share) "
            f"× (1 − {r.loss_out:.3g} loss) = {got / 1e6:.4g} Mbit/s ({why})", extra=extra))
    e = r.tcp_expected
    # a connection's own limits (window, loss), times its parallel connections
    cands = {k: v * (1 if k == "link" else f.parallel) for k, v in e.limits.items()}
    if math.isinf(fair):
        cands.pop("link", None)
    else:
        cands["link"] = fair
    if not cands:
        return _may_time_out(plan, f, r, Expected("throughput_bps", None, "none",
                                                  "nothing on the path limits TCP", extra=extra))
    key = min(cands, key=lambda k: cands[k])
    own = {k: v for k, v in cands.items() if k != "link"}
    if limit[name] == "demand" and own:  # its own window or loss, not the link, held it
        key = min(own, key=lambda k: own[k])
    label = {"link": "link" if not others else "fair share", "window": "window (W/RTT)",
             "loss": "loss (Mathis/Padhye)"}[key]
    if key == "link" and others and math.isclose(fair, (r.tcp_goodput_bps or 0), rel_tol=1e-6):
        label = "link"
    parts = ", ".join(f"{k} {v / 1e6:.4g}" for k, v in cands.items())
    share_txt = f" (max-min fair share beside {others} other flow{'s' * (others > 1)})" if others else ""
    detail = f"min({parts}) Mbit/s{share_txt}: {label}"
    if key == "link":
        detail += f", at {limit[name]}"
    w = _window(f, seen, name)
    if w is not None:
        src = ("advertised by the receiver in the run" if name in seen else "as given") + (
            f" (-w {f.window})" if f.window is not None else ", autotuned")
        if name in (buffers or {}) and f.window is not None:
            snd, rcv = buffers[name]
            floor = " (doubled, and never below the kernel's minimum)" if min(snd, rcv) > 2 * (f.nbytes("window") or 0) else \
                " (doubled)"
            src += f"; for -w {f.nbytes('window')} B Linux gave SO_RCVBUF {rcv:.0f} B, SO_SNDBUF {snd:.0f} B{floor}"
        w_in = in_flight(w, r.tcp.payload) if f.kind == "tcp" and not f.nodelay else w
        carried = (f", of which {w_in:.0f} B in whole segments in flight (Nagle)" if w_in < w else "")
        detail += f"; window {w / 1e3:.4g} KB {src}{carried}, RTT {r.data_rtt_s * 1e3:.4g} ms"
    value, hi = cands[key], None
    whole = in_flight(w, r.tcp.payload) if w is not None and f.kind == "tcp" and not f.nodelay else w
    if key == "window" and whole and w and whole < w:
        # Linux's Nagle is Minshall's: the partial segment goes too once the last partial
        # one is acknowledged, so up to the whole window per RTT
        hi = min(value * w / whole, (r.tcp_goodput_bps or math.inf) * f.parallel)
        detail += f"; up to {hi / 1e6:.4g} Mbit/s when the partial segment goes as well (Minshall's Nagle)"
    if key == "window" and others:
        # the others' standing queue lengthens its RTT: W / RTT from the loaded RTT up
        route = {link_key(h) for h in hops(plan, *_dir(f)) + hops(plan, *_dir(f)[::-1])}
        _, q = _standing_queue(plan, route, {n: g for n, g in concurrent.items() if n != name}, seen)
        if q > 0:
            value, hi = value * r.data_rtt_s / (r.data_rtt_s + q), hi or value
            detail += (f"; the other flows' standing queue adds up to {q * 1e3:.3g} ms to its RTT: "
                       f"W/RTT from {value / 1e6:.4g} Mbit/s")
    top = (r.mathis_bps or 0.0) * f.parallel
    if key == "loss" and top > value:
        # Padhye counts every loss burst's time-out; with SACK, RACK and tail-loss probes
        # Linux recovers many losses without one, up to Mathis's bound: a range.
        hi = min(top, r.tcp_goodput_bps or math.inf)  # (the fair share is capped by Padhye's)
        detail += (f" (Padhye, T0 = RTT + 200 ms) to {hi / 1e6:.4g} Mbit/s (Mathis, "
                   "every loss recovered without a time-out)")
    if key != "loss" and r.data_rtt_s > 0 and f.bytes is None and math.isfinite(dur):
        omit = f.seconds("omit")
        lo_ss, hi_ss, open_at = slow_start(value, r.data_rtt_s, r.tcp.payload, omit, dur, f.parallel)
        if hi_ss < 0.95 * value:  # the run is too few round trips long to ignore them
            ss = open_at > omit
            detail += (f"; but over {dur - omit:g} s measured at RTT {r.data_rtt_s:.4g} s "
                       + (f"slow start (IW{IW}, doubling each RTT) opens the window only by "
                          f"{open_at:.3g} s, and " if ss else "")
                       + "the receiver's clock runs an RTT longer than the sender's: "
                       f"{lo_ss / 1e6:.4g} (the last round trip's data after the end) to "
                       f"{hi_ss / 1e6:.4g} Mbit/s" + (": slow start" if ss else ""))
            value, hi = lo_ss, hi_ss if hi_ss > lo_ss * 1.001 else None
            label = "slow start" if ss else label
    if sndbuf and f.window is None and f.kind == "tcp" and r.data_rtt_s > 0:
        # Autotuning grows the send buffer to tcp_wmem's maximum at most; the data in
        # flight is that less the kernel's per-packet overhead (between about half and
        # all of it): a range when that is what holds the flow.
        lo_bps, top_bps = (f.parallel * sndbuf * k * 8 / r.data_rtt_s for k in (0.5, 1.0))
        if lo_bps < value:
            value, hi, label = lo_bps, min(value, top_bps), "send buffer"
            detail += (f"; but the sender's buffer (tcp_wmem max {sndbuf / 1e6:.3g} MB, about half "
                       f"to all of it in flight) over RTT {r.data_rtt_s * 1e3:.4g} ms allows "
                       f"{lo_bps / 1e6:.4g}–{top_bps / 1e6:.4g} Mbit/s: send buffer")
    return _may_time_out(plan, f, r, Expected("throughput_bps", value, label, detail, hi=hi, extra=extra))


def slow_start(rate_bps: float, rtt_s: float, mss: float, start_s: float, end_s: float,
               connections: int = 1) -> tuple[float, float, float]:
    """A TCP transfer from 0 (of `connections`, each opening its own window) whose window
    opens from IW10 segments, doubling each RTT (each round's data sent at its start),
    until it reaches `rate_bps` × RTT, from when on it sends at `rate_bps`: (its average
    rate as the receiver counts it over the sender's [start_s, end_s) without, and
    with, the last round trip's data; when slow start ends), bit/s and s. The receiver's
    clock starts half an RTT before the sender's (at the start message) and stops half
    an RTT after (at the end message): it counts the data sent from start_s − RTT to
    end_s over end_s − start_s + RTT, which is the rate when the pipe was full at
    start_s, and less when it was still empty (no omit). Whether the last round's data
    comes in before the end message depends on where the rounds fall: the low end
    leaves it out (a whole window at a long RTT; nothing much at a short one)."""
    cap = rate_bps * rtt_s / 8
    first = max(0.0, start_s - rtt_s)
    got = last = t = 0.0
    w = IW * mss * connections
    while w < cap and t < end_s:
        if t >= first:
            got, last = got + w, w
        t, w = t + rtt_s, w * 2
    if end_s > max(first, t):
        got += rate_bps / 8 * (end_s - max(first, t))
        last = min(cap, rate_bps / 8 * (end_s - max(first, t)))
    span = end_s - start_s + rtt_s
    if end_s <= start_s:
        return rate_bps, rate_bps, t
    return (got - last) * 8 / span, got * 8 / span, t


def _may_time_out(plan: Plan, f: FlowSpec, r, e: Expected) -> Expected:
    """The expectation of a flow that may not connect in time (heavy loss, or an RTT
    near the connect timeout): a range from 0 (a time-out: no data) to what it moves
    once connected, labelled "time-out" when that is the likelier outcome; 0 alone when
    no try can succeed in time. Unchanged when the connection is as good as certain."""
    out, back = (r.loss_back, r.loss_out) if f.reverse else (r.loss_out, r.loss_back)
    first = plan.topo.link_named(hops(plan, f.src, f.to)[0].link)
    arp_rtt = sum(d.delay_s or 0.0 for d in (first.direction(0), first.direction(1)))
    c = connect_chance(out, back, r.base_rtt_s, connect_timeout_s(f), arp_rtt,
                       arp_tries(max_link_rtt(plan.topo)))
    if c.chance >= 0.99:
        return e
    top = e.hi if e.hi is not None else e.value
    extra = {**e.extra, "connect_chance": round(c.chance, 4)}
    likely = c.chance < 0.5
    if c.chance <= 0:
        return Expected(e.metric, 0.0, "time-out", f"{c.detail}: a time-out (no data) is certain",
                        extra=extra)
    if not top:  # nothing else limits it: a time-out, or data at no rate theory can give
        return Expected(e.metric, 0.0 if likely else e.value, "time-out" if likely else e.limit,
                        f"{c.detail}: {'a time-out (no data) is likelier' if likely else 'it may time out'}"
                        f" (probability {1 - c.chance:.2f}); connected, {e.detail}", extra=extra)
    return Expected(e.metric, 0.0, "time-out" if likely else e.limit,
                    f"{c.detail}: {'a time-out (no data) is likelier' if likely else 'it may time out (no data)'}"
                    f" (probability {1 - c.chance:.2f}); connected, {e.detail}", hi=top, extra=extra)


def _standing_queue(plan: Plan, route_keys: set[str], concurrent: dict[str, FlowSpec],
                    seen: dict[str, float]) -> tuple[list, float]:
    """The rate-limited hops on a route where the concurrent flows hold a queue, and
    the queueing delay they add up to (s). Loss-based TCP queues at its bottleneck: a
    full queue (or the AQM's target) for an unlimited window, W − BDP bytes at most for
    a window W. UDP offered above a hop's rate fills that hop's queue (what is left
    goes on at the hop's rate). ([], 0) when nothing queues."""
    held: dict[str, float] = {}
    where: dict[str, Any] = {}
    offered: dict[str, float] = {}  # UDP wire bits arriving at each hop
    # where each TCP flow's max-min share is set: its queue is there (h7 -> h9 held to
    # 15 Mbit/s on L2 does not queue at L3's 20, though L3 is its slowest link)
    binds = _shares(plan, {n: g for n, g in concurrent.items() if g.kind in ("tcp", "udp")}, seen)[1]

    def cap(h, frame: float) -> float:
        full = fm.queue_delay(h.rate_bps, h.queue_packets, h.queue_bytes, frame) or 0.0
        target = _aqm_target(plan, h)
        return min(full, target) if target is not None else full

    for n, g in concurrent.items():
        if g.kind not in ("tcp", "udp"):
            continue
        src, dst = _dir(g)
        route = hops(plan, src, dst)
        if g.kind == "udp":
            r = analyse(plan, src, dst, proto="udp", udp_rate=g.rate_bps,
                        udp_size=g.nbytes("length"))
            rate = (g.rate_bps or 0.0) * g.parallel / r.udp.efficiency
            for h in route:
                if h.rate_bps is None:
                    continue
                k = link_key(h)
                offered[k] = offered.get(k, 0.0) + rate
                if offered[k] > h.rate_bps:
                    held[k], where[k] = cap(h, r.udp.frame), h
                rate = min(rate, h.rate_bps)
            continue
        h = next((x for x in route if link_key(x) == binds.get(n)), None) or bottleneck(route)
        if h is None or h.rate_bps is None:
            continue
        r = analyse(plan, src, dst)
        k, most = link_key(h), cap(h, r.data_frame)
        w = _window(g, seen, n)
        mine = most if w is None else min(most, max(0.0, w * g.parallel - (r.bdp_bytes or 0))
                                          * 8 / h.rate_bps)
        held[k], where[k] = min(most, held.get(k, 0.0) + mine), h
    on = [k for k in held if k in route_keys and held[k] > 0]
    return [where[k] for k in on], sum(held[k] for k in on)


def _aqm_target(plan: Plan, h) -> float | None:
    """The queueing delay an AQM aims at on this hop (its `target`, else the
    discipline's default); None for one that aims at none."""
    link = plan.topo.link_named(h.link)
    return link.direction(0 if h.frm == link.a else 1).aqm.target_s


def _rtt(plan: Plan, f: FlowSpec, concurrent: dict[str, FlowSpec], seen: dict[str, float]) -> Expected:
    assert f.to is not None
    size = f.nbytes("size")
    ping_size = size if size is not None else (fm.PING_DATA if f.kind == "ping" else 64)
    r = analyse(plan, f.src, f.to, ping_size=ping_size)
    base = r.base_rtt_s * 1e3
    keys = {link_key(h) for h in hops(plan, f.src, f.to) + hops(plan, f.to, f.src)}
    queued, q = _standing_queue(plan, keys, concurrent, seen)
    if not queued:
        return Expected("rtt_ms_p50", base, "idle path", f"idle RTT {base:.4g} ms (propagation "
                        f"{r.propagation_s * 1e3:.4g} ms + serialization)", extra={"base_rtt_ms": base})
    hi = base + q * 1e3
    h = queued[0]
    if len(queued) == 1 and _aqm_target(plan, h) is not None:
        why = f"{h.aqm} holds {h.link}'s queue near {q * 1e3:.4g} ms"
    else:
        why = (f"the standing queue{'s' * (len(queued) > 1)} on "
               f"{', '.join(x.link for x in queued)} add{'s' * (len(queued) == 1)} up to {q * 1e3:.4g} ms")
    return Expected("rtt_ms_p50", base, "loaded path", f"between idle {base:.4g} ms and {hi:.4g} ms: "
                    f"{why}", hi=hi, extra={"base_rtt_ms": base, "rtt_hi_ms": hi})


def _fetch(plan: Plan, f: FlowSpec, concurrent: dict[str, FlowSpec], seen: dict[str, float]) -> Expected:
    size = f.nbytes("size") or 100_000
    return _responses(plan, f, concurrent, seen, [_Fetch(size, 1 if f.new_conn else 0)],
                      "handshake + " if f.new_conn else "")


@dataclass
class _Fetch:
    """One request/response as theory sees it: the bytes that come back, the round
    trips before the request goes (TCP's handshake, TLS's), the congestion window it
    starts with (segments), and how many fetches of a flow are like it."""

    size: int
    setup_rtts: int
    cwnd: int = IW
    n: int = 1


def _rounds(size: float, mss: float, cwnd: int = IW) -> int:
    """Round trips of slow start that carry `size` bytes from a window of `cwnd`
    segments, the window unbounded (the request's round trip is the first)."""
    return max(1, math.ceil(math.log2(size / (cwnd * mss) + 1)))


def _response_s(size: float, mss: float, cwnd: int, rtt: float, rate: float | None) -> tuple[float, int]:
    """(seconds from the request to the response's last byte, round trips of slow
    start): the window doubles each round trip from `cwnd` segments until it holds the
    rest of the response or reaches the path's BDP; from then on the rest comes at the
    rate (the ACKs keep the pipe full). Round k's last byte lands (k + 1) RTT and its
    bytes' serialization after the request."""
    if not rate:
        return rtt * _rounds(size, mss, cwnd), _rounds(size, mss, cwnd)
    bdp = rate * rtt / 8
    sent, k = 0.0, 0
    while True:
        w = cwnd * mss * 2 ** k
        if sent + w >= size or w >= bdp:
            break
        sent += w
        k += 1
    return rtt * (k + 1) + (size - sent) * 8 / rate, k + 1


def _responses(plan: Plan, f: FlowSpec, concurrent: dict[str, FlowSpec], seen: dict[str, float],
               fetches: list[_Fetch], setup: str, note: str = "") -> Expected:
    """The mean time of a flow's fetches (weighted by each kind's `n`): each takes its
    setup round trips, then slow start (_response_s) at TCP's goodput, on an idle path;
    with a standing queue on the way, up to that queue's delay more per round trip and
    the rate shared with the concurrent bulk flows (an equal share beside each). The first byte comes one RTT after the
    setup (in `extra`)."""
    assert f.to is not None
    r = analyse(plan, f.to, f.src)  # the response flows to -> from
    rtt, mss, rate = r.data_rtt_s, r.tcp.payload, r.tcp_goodput_bps
    keys = {link_key(h) for h in hops(plan, f.src, f.to) + hops(plan, f.to, f.src)}
    queued, extra_rtt = _standing_queue(plan, keys, concurrent, seen)
    n = sum(x.n for x in fetches)
    t = hi = first = 0.0
    for x in fetches:
        one, _ = _response_s(x.size, mss, x.cwnd, rtt, rate)
        t += (rtt * x.setup_rtts + one) * x.n / n
        slow = rtt + extra_rtt
        loaded, _ = _response_s(x.size, mss, x.cwnd, slow, rate / (len(concurrent) + 1) if rate else None)
        hi += (slow * x.setup_rtts + loaded) * x.n / n
        first += rtt * (x.setup_rtts + 1) * x.n / n
    x = fetches[0]
    _, rounds = _response_s(x.size, mss, x.cwnd, rtt, rate)
    bdp = f" (until the window holds the path's BDP, {rate * rtt / 8 / mss:.3g} segments, or the response)" \
        if rate else ""
    detail = (f"{setup}{rounds} round trip{'s' * (rounds > 1)} of slow start from IW{x.cwnd}{bdp} at "
              f"RTT {rtt * 1e3:.4g} ms, the rest of {x.size} B at {rate / 1e6 if rate else math.inf:.4g} Mbit/s"
              f"{note} = {t * 1e3:.4g} ms on an idle path")
    if queued:
        detail += f"; with the queue and {len(concurrent)} flow(s) sharing, up to {hi * 1e3:.4g} ms"
    return Expected("fetch_s_mean", t, "loaded path" if queued else "idle path", detail,
                    hi=hi if queued else None, extra={"first_byte_s": first, "base_rtt_ms": rtt * 1e3})


# HTTP's own bytes in a response, beside the object: nginx's HTTP/1.1 header (status
# line, Server, Date, Content-Type, Content-Length, Last-Modified, Connection, ETag,
# Accept-Ranges: about 250 B); HTTP/2's HPACK-coded HEADERS (about 100 B with the
# SETTINGS frames) and a 9-byte header per DATA frame of nginx's http2_chunk_size (8 KB).
HTTP1_HEADER = 250
H2_HEADERS = 100
H2_FRAME, H2_CHUNK = 9, 8192
RTO_MIN = 0.2  # Linux's tcp_rto_min: an RTO is about the RTT + 200 ms
KEEPS_WINDOW_IDLE = ("bbr", "bbr2", "bbr3")  # a cong_control of its own: no restart after idle


def _web(plan: Plan, f: FlowSpec, concurrent: dict[str, FlowSpec], seen: dict[str, float],
         duration: float, cc: str) -> Expected:
    """A web flow (nginx and curl): fetch's theory with HTTP's bytes, TLS 1.3's round
    trip, and keep-alive. A new connection per fetch pays TCP's handshake (and TLS's)
    every time and slow-starts from IW10. Keep-alive pays them once, on the first fetch;
    each later fetch starts with the window the server's last response left (a segment
    more per segment acknowledged in slow start), as Linux keeps it over the idle gap:
    with tcp_slow_start_after_idle=1 (a new namespace's default, which theory assumes)
    halved for each RTO (RTT + 200 ms) idle, never below IW10 — so with a gap of several
    RTOs (a fetch every 2 s) keep-alive saves the handshake only — except under BBR,
    whose own control (cong_control) Linux's restart after idle skips: it keeps its
    window, and later fetches need one round trip and the rest at the rate."""
    size = web.object_size(f)
    wire = size + (H2_HEADERS + H2_FRAME * math.ceil(size / H2_CHUNK) if f.http == "2" else HTTP1_HEADER)
    setup = 1 + (1 if f.tls else 0)
    setup_txt = "TCP handshake + TLS 1.3 handshake + " if f.tls else "TCP handshake + "
    how = f"HTTP/{f.http}{' over TLS' if f.tls else ''}, {wire - size} B of HTTP besides the object"
    if f.new_conn:
        return _responses(plan, f, concurrent, seen, [_Fetch(wire, setup)], setup_txt, f" ({how})")
    r = analyse(plan, f.to, f.src)
    rtt, mss, rate = r.data_rtt_s, r.tcp.payload, r.tcp_goodput_bps
    n = web.fetch_count(duration, f.seconds("interval", 1.0))
    took, _ = _response_s(wire, mss, IW, rtt, rate)
    idle = f.seconds("interval", 1.0) - took - rtt * setup
    rto = rtt + RTO_MIN
    restarts = cc not in KEEPS_WINDOW_IDLE
    halvings = max(0, math.ceil(idle / rto) - 1) if idle > rto and restarts else 0
    # slow start grew the window by a segment per segment acknowledged
    cwnd = max(IW, (IW + math.ceil(wire / mss)) >> min(halvings, 62))
    later = _Fetch(wire, 0, cwnd, n - 1)
    note = (f" ({how}; keep-alive: the handshake{'s' if f.tls else ''} on the first of {n} fetches only, "
            f"then {_response_s(wire, mss, cwnd, rtt, rate)[1]} round trip(s) from a window of {cwnd} segments after "
            f"{max(idle, 0) * 1e3:.4g} ms idle, "
            + (f"RTO {rto * 1e3:.4g} ms" if restarts else f"kept by {cc}, which Linux does not restart after idle")
            + f"; mean over the {n})")
    fetches = [_Fetch(wire, setup), later] if n > 1 else [_Fetch(wire, setup)]
    return _responses(plan, f, concurrent, seen, fetches, setup_txt, note)
