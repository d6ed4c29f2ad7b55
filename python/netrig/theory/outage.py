"""How long an event in a scenario should cut a flow's path, from the protocols' timers.

    expect(plan, event, src, dst)  -> Window(low_s, high_s, why) or None

The window counts from the event to the first packet delivered again, for traffic
from src to dst (and back, for an RTT: `both_ways`). What it assumes:

- A link or router off the flow's path (netrig.topo.plan.path, as routed) cuts nothing:
  (0, 0). So does a link or router coming back, and a live change of shaping.
- Static routing (the link's ends run no FRR), or no other way round: nothing reroutes;
  the path stays cut until the link comes back (the next up event on it), else to the
  end of the run (high = infinity).
- OSPF, silent failure (frames stop, interfaces stay up): the neighbour is declared
  dead between dead − hello and dead after the failure (the last hello arrived up to a
  hello interval before it), then SPF runs after spf_delay (plus spf_hold when another
  SPF ran within spf_max_hold), then flooding and the FIB install (FLOOD_S).
- OSPF, carrier loss: the interface goes down at once: spf_delay + FLOOD_S.
- eBGP, silent failure: the session's hold timer expires between hold − keepalive and
  hold after it; carrier loss on an eBGP link: immediate (FRR's fast external failover
  drops the session with the interface), FLOOD_S for the withdraw and the FIB.
- A TCP flow resumes at its first retransmission after the path is back: its window is
  the path's, its top stretched by the exponential backoff (`after_backoff`).
- A router's daemons stopped: what matters is the router before it on the path, which
  must route around it: an OSPF neighbour notices by its dead interval (as a silent
  failure); an eBGP peer at once (bgpd sends a NOTIFICATION as it stops); a host (a
  static default route) never.

Pure: no clock, no socket; the topology's `routing:` timers are its only inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from netrig.errors import NetrigError
from netrig.topo.model import Topology
from netrig.topo.plan import Plan, path

FLOOD_S = 0.05  # LSA flooding, SPF run and the kernel's FIB install in a small lab
RTO_S = 1.0  # RFC 6298's initial RTO, a bound on Linux's (200 ms + the RTT's variation)


@dataclass(frozen=True)
class Window:
    low_s: float
    high_s: float  # math.inf: not before the end of the run
    why: str

    def text(self) -> str:
        """`3–4.05 s (OSPF dead 4 s, hello 1 s, SPF 0 ms)`."""
        return f"{span(self.low_s, self.high_s)} ({self.why})"


def span(low: float, high: float) -> str:
    if high == low:
        return f"{low:.3g} s"
    if math.isinf(high):
        return f"≥ {low:.3g} s"
    return f"{low:.3g}–{high:.3g} s"


@dataclass(frozen=True)
class Event:
    """What happened, as theory needs it: `action` (down, up, carrier_down, carrier_up,
    set, stop, start, command), the link or router, when; `back_s`: when the same link
    or router comes back (its next up/start), None if it does not; `spf_recent`: another
    topology change less than spf_max_hold before this one."""

    action: str
    at_s: float
    link: str | None = None
    router: str | None = None
    back_s: float | None = None
    end_s: float = math.inf
    spf_recent: bool = False


def judge(measured: float | None, w: Window | None, slack_s: float) -> str:
    """within, above or below the window (widened by the measurement's resolution)."""
    if measured is None or w is None:
        return ""
    if measured < w.low_s - slack_s:
        return "below"
    if measured > w.high_s + slack_s:
        return "above"
    return "within"


def expect(plan: Plan, ev: Event, src: str, dst: str, both_ways: bool = False) -> Window | None:
    """The outage theory expects for traffic src→dst (and back with `both_ways`);
    None when theory has nothing to say (a command)."""
    topo = plan.topo
    if ev.action == "command":
        return None
    if ev.action in ("up", "carrier_up", "start"):
        return Window(0.0, 0.0, f"{_what(ev)} coming back cuts no path")
    if ev.action == "set":
        return Window(0.0, 0.0, "a live change of shaping cuts no path")
    try:
        hops = path(plan, src, dst) + (path(plan, dst, src) if both_ways else [])
    except NetrigError:
        return None
    if ev.link is not None:
        on = any(h.link.name == ev.link for h in hops)
    else:
        on = any(ev.router in (h.frm, h.to) for h in hops)
    if not on:
        return Window(0.0, 0.0, f"{_what(ev)} is not on the path {src}→{dst}")
    cut = _until_back(ev)
    if not _other_way(topo, src, dst, ev):
        return Window(cut, cut, f"no other way from {src} to {dst}: cut until {_back_words(ev)}")
    proto = _protocol(topo, ev, _upstream(topo, hops, ev.router) if ev.router else None)
    ospf, bgp = topo.routing.ospf, topo.routing.bgp
    spf = topo.ospf_ms("spf_delay") / 1e3
    hold = topo.ospf_ms("spf_hold") / 1e3 if ev.spf_recent else 0.0
    spf_words = f"SPF {topo.ospf_ms('spf_delay')} ms" + (f" + hold {topo.ospf_ms('spf_hold')} ms" if hold else "")
    silent = ev.action in ("down", "stop")
    if proto == "ospf" and silent:
        dead, hello = ospf.dead_s, ospf.hello_s
        return Window(dead - hello + spf, dead + spf + hold + FLOOD_S,
                      f"OSPF dead {dead} s, hello {hello} s, {spf_words}")
    if proto == "ospf":
        return Window(spf, spf + hold + FLOOD_S, f"OSPF sees the carrier loss at once; {spf_words}")
    if proto == "bgp" and ev.action == "down":
        h, k = bgp.s("hold") or 0, bgp.s("keepalive") or 0
        return Window(max(0.0, h - k), h + FLOOD_S, f"eBGP hold {h} s, keepalive {k} s")
    if proto == "bgp":
        why = ("bgpd's NOTIFICATION as it stops" if ev.action == "stop"
               else "eBGP fast external failover on carrier loss")
        return Window(0.0, FLOOD_S, why)
    return Window(cut, cut, f"static routes: no reroute, cut until {_back_words(ev)}")


def after_backoff(w: Window) -> Window:
    """A TCP flow's outage from its path's: TCP resends its lost segment after RTO, 2 RTO,
    4 RTO, ... so it starts again at its first resend after the path is back, which is
    no later than twice the path's outage plus one RTO (RTO_S)."""
    if w.high_s <= 0 or math.isinf(w.high_s):
        return w
    return Window(w.low_s, 2 * w.high_s + RTO_S,
                  f"{w.why}; then TCP's backoff: by 2 × {w.high_s:.3g} s + RTO {RTO_S:g} s")


def _what(ev: Event) -> str:
    return f"link {ev.link}" if ev.link is not None else f"router {ev.router}"


def _until_back(ev: Event) -> float:
    return (ev.back_s if ev.back_s is not None else ev.end_s) - ev.at_s


def _back_words(ev: Event) -> str:
    return f"it comes back at {ev.back_s:g} s" if ev.back_s is not None else "the end of the run"


def _upstream(topo: Topology, hops, router: str) -> str | None:
    """The router before `router` on the path (switches passed over): the one that must
    route around it."""
    seq = [h.frm for h in hops] + ([hops[-1].to] if hops else [])
    for i, n in enumerate(seq):
        if n == router:
            before = [m for m in seq[:i] if topo.nodes.get(m) != "switch"]
            return before[-1] if before else None
    return None


def _protocol(topo: Topology, ev: Event, upstream: str | None = None) -> str:
    """Which protocol notices: ospf, bgp (eBGP between the link's ends, or between the
    stopped router and the router before it on the path) or static (a host before it:
    its default route is static)."""
    if ev.link is not None:
        link = topo.link_named(ev.link)
        ends = [topo.routing_of(n) for n in (link.a, link.b) if topo.nodes.get(n) == "router"]
        if len(ends) == 2 and all(r.ospf_area is not None for r in ends) and ends[0].asn == ends[1].asn:
            return "ospf"
        if len(ends) == 2 and all(r.asn is not None for r in ends) and ends[0].asn != ends[1].asn:
            return "bgp"
        # A segment through a switch, or one end a host: whoever routes around it.
        routers = [topo.routing_of(n) for n in _routers_near(topo, ev.link)]
        if any(r.ospf_area is not None for r in routers):
            return "ospf"
        return "static"
    r = topo.routing_of(ev.router or "")
    if upstream is None or topo.nodes.get(upstream) != "router":
        return "static"
    u = topo.routing_of(upstream)
    if r.asn is not None and u.asn is not None and r.asn != u.asn:
        return "bgp"
    if r.ospf_area is not None and u.ospf_area is not None:
        return "ospf"
    return "static"


def _routers_near(topo: Topology, link: str) -> list[str]:
    lk = topo.link_named(link)
    return [n for n in (lk.a, lk.b) if topo.nodes.get(n) == "router"]


def _other_way(topo: Topology, src: str, dst: str, ev: Event) -> bool:
    """Whether src still reaches dst without the link (or through no other node than
    the router) that failed: a reroute is possible at all."""
    adj: dict[str, set[str]] = {n: set() for n in topo.nodes}
    for lk in topo.links:
        if lk.name == ev.link or ev.router in (lk.a, lk.b):
            continue
        adj[lk.a].add(lk.b)
        adj[lk.b].add(lk.a)
    seen, todo = {src}, [src]
    while todo:
        n = todo.pop()
        for m in adj[n]:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return dst in seen
