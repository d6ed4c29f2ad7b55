"""Theory for a path of a planned topology: what `analyse(plan, src, dst)` expects.

Reads link parameters through the plan (`path(plan, src, dst)`, each hop's
`link.direction(d)`); the arithmetic is `formulas` and `fairness`. RTTs use the real
return path, `path(plan, dst, src)`, which may differ from the way out. In a lab whose
routers run OSPF or BGP the path is the one the protocols choose
(`netrig.topo.routing`), and the report says why (`route`) and lists equal-cost paths.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from netrig import units
from netrig.link.spec import Direction
from netrig.theory import formulas as f
from netrig.theory.fairness import Flow, jain, max_min_fair
from netrig.topo import routing
from netrig.topo.plan import Hop, Plan, path


@dataclass(frozen=True)
class HopInfo:
    """One link crossed in one direction, with the numbers theory uses."""

    link: str
    frm: str
    to: str
    rate_bps: float | None  # None: unlimited (or a trace: see `trace`)
    delay_s: float
    queue_packets: int | None
    queue_bytes: int | None
    loss: float  # mean random loss: loss, Gilbert-Elliott, corruption
    overhead_bytes: int = 0
    aqm: str = "droptail"
    trace: str | None = None

    @property
    def leg(self) -> f.Leg:
        return f.Leg(self.rate_bps, self.delay_s, self.overhead_bytes)


@dataclass(frozen=True)
class FlowShare:
    """A flow of `analyse(..., flows=...)`: `conns` connections from src to dst, their
    total max-min fair share of link rate, and the payload rate that carries."""

    name: str
    src: str
    dst: str
    conns: int
    share_bps: float  # link rate, all connections together
    goodput_bps: float
    limit: str  # its bottleneck (`link_key`), "demand", or "none"
    demand_bps: float | None = None  # offered payload rate of a fixed-rate (UDP) flow


@dataclass
class PathReport:
    """Everything theory expects from src to dst (SI units; None: does not apply)."""

    src: str
    dst: str
    proto: str
    mtu: int
    hops: list[HopInfo]
    back: list[HopInfo]
    bottleneck: HopInfo | None  # lowest fixed rate on the way out; None: no rate
    propagation_s: float  # Σ one-way delays out and back
    base_rtt_s: float  # idle, a ping probe both ways: what ping reports
    data_rtt_s: float  # idle, a full TCP segment out and its ACK back
    ping_frame: int
    data_frame: int  # a full-size frame, MTU + 14 (links add their own overhead)
    ack_frame: int
    tcp: f.Framing
    udp: f.Framing
    bdp_bytes: float | None
    tcp_goodput_bps: float | None
    udp_goodput_bps: float | None
    queue_delay_s: float | None  # the most the bottleneck's full queue adds
    loss_out: float  # configured random loss, way out
    loss_back: float
    loss: float  # what Mathis uses: the way out's loss with the extra `loss` given
    window_bytes: float | None
    window_bps: float | None
    mathis_bps: float | None
    tcp_expected: f.Expectation
    udp_offered_bps: float | None = None
    udp_loss: float | None = None  # queue overflow and random loss together
    udp_received_bps: float | None = None
    flows: list[FlowShare] = field(default_factory=list)
    jain: float | None = None
    # A routed lab (OSPF/BGP): how the protocols chose each way, and every equal path.
    route: str | None = None
    route_back: str | None = None  # only when the way back is not the way out reversed
    equal_paths: list[list[str]] = field(default_factory=list)

    @property
    def loaded_rtt_s(self) -> float | None:
        """Base RTT plus a full bottleneck queue: the most RTT rises under load when
        only the bottleneck queues (RTT = base + queueing delay)."""
        return None if self.queue_delay_s is None else self.base_rtt_s + self.queue_delay_s


def _mean_loss(d: Direction) -> float:
    """Random loss of one direction: `loss`, or a Gilbert-Elliott chain's stationary
    mean π_bad·loss_bad + π_good·loss_good with π_bad = p/(p + r); corrupted packets
    fail their checksum, so count as lost too."""
    loss = d.loss
    if d.gemodel is not None:
        p, r = d.gemodel["p"], d.gemodel["r"]
        bad = p / (p + r) if p + r > 0 else 0.0
        loss = bad * d.gemodel["loss_bad"] + (1 - bad) * d.gemodel["loss_good"]
    return f.combined_loss([loss, d.corrupt])


def hop_info(hop: Hop) -> HopInfo:
    d = hop.link.direction(hop.d)
    # The queue as it runs where a rate fills it: the user's, else the discipline's default.
    packets, nbytes = d.limit if d.rate_bps or d.trace else (d.queue_packets, d.queue_bytes)
    return HopInfo(hop.link.name, hop.frm, hop.to, d.rate_bps, d.delay_s, packets, nbytes,
                   _mean_loss(d), d.overhead_bytes, d.aqm.name, d.trace)


def hops(plan: Plan, src: str, dst: str) -> list[HopInfo]:
    """The links from src to dst as routed, with their parameters in that direction."""
    return [hop_info(h) for h in path(plan, src, dst)]


def bottleneck(hs: Sequence[HopInfo]) -> HopInfo | None:
    """The hop with the lowest fixed rate (the first of equals); unlimited and
    trace-driven hops do not count. None if no hop has a rate."""
    rated = [h for h in hs if h.rate_bps is not None]
    return min(rated, key=lambda h: h.rate_bps or math.inf) if rated else None


_FLOW = re.compile(r"(\w+):(\w+?)(?:x(\d+))?(?:@(\S+))?")


def parse_flow(spec: str | tuple[str, str],
               nodes: Sequence[str] = ()) -> tuple[str, str, int, str | None]:
    """`"h1:h4"`, `"h1:h4x2"` (2 parallel connections), `"h1:h4@5Mbit"` (a UDP flow
    offering 5 Mbit/s of payload) or `("h1", "h4")` -> (src, dst, conns, rate text).
    A destination named like `box2` is a node, not `box` × 2, when the topology has it."""
    if isinstance(spec, tuple):
        return spec[0], spec[1], 1, None
    text = spec.strip()
    m = _FLOW.fullmatch(text)
    if not m:
        raise f.TheoryError(f"flow '{spec}': expected SRC:DST, SRC:DSTxN or SRC:DST@RATE")
    src, dst, n, rate = m.groups()
    whole = f"{dst}x{n}" if n else dst
    if n and whole in nodes and dst not in nodes:
        return src, whole, 1, rate
    conns = int(n) if n else 1
    if conns < 1:
        raise f.TheoryError(f"flow '{spec}': a flow has 1 connection or more")
    return src, dst, conns, rate


def link_key(h: HopInfo) -> str:
    """A link in one direction, as fair shares name it: `L2 r2→r3`."""
    return f"{h.link} {h.frm}→{h.to}"


def _shares(plan: Plan, specs: Sequence[str | tuple[str, str]], proto: f.Proto, mtu: int,
            udp_size: int | None) -> tuple[list[FlowShare], float | None]:
    """Max-min fair shares of link rate for each flow over its routed path; each
    connection of a parallel flow is a flow of its own. A fixed-rate (UDP) flow's
    demand is its payload rate × wire/payload bytes."""
    nodes = list(plan.topo.nodes)
    flows: list[Flow] = []
    capacity: dict[str, float] = {}
    owners: list[tuple[str, str, str, int, f.Framing, float | None]] = []
    for i, spec in enumerate(specs):
        src, dst, conns, rate = parse_flow(spec, nodes)
        route = hops(plan, src, dst)
        for h in route:
            if h.rate_bps is not None:
                capacity[link_key(h)] = h.rate_bps
        b = bottleneck(route)
        eth = f.ETH_HEADER + (b.overhead_bytes if b else 0)
        offered = units.rate_bps(rate) if rate is not None else None
        framing = (f.framing("udp", mtu, udp_size, eth) if offered is not None
                   else f.framing(proto, mtu, udp_size if proto == "udp" else None, eth))
        demand = offered / framing.efficiency if offered is not None else None
        keys = tuple(link_key(h) for h in route if h.rate_bps is not None)
        flows += [Flow(f"{i}.{c}", keys, demand) for c in range(conns)]
        name = f"{src}:{dst}" + (f"x{conns}" if conns > 1 else "") + (f"@{rate}" if rate else "")
        owners.append((name, src, dst, conns, framing, offered))
    got = max_min_fair(flows, capacity)
    out = []
    for i, (name, src, dst, conns, framing, offered) in enumerate(owners):
        mine = [got[f"{i}.{c}"] for c in range(conns)]
        total = sum(s.rate for s in mine)
        out.append(FlowShare(name, src, dst, conns, total, total * framing.efficiency,
                             mine[0].limit, offered))
    rates = [s.rate for s in got.values()]
    index = jain(rates) if rates and not any(math.isinf(r) for r in rates) else None
    return out, index


def _size(v: float | str | None) -> float | None:
    return units.size_bytes(v) if isinstance(v, str) else v


def _fraction(v: float | str | None) -> float:
    if v is None:
        return 0.0
    p = units.fraction(v) if isinstance(v, str) else v
    if not 0 <= p <= 1:
        raise f.TheoryError(f"loss is a fraction 0 .. 1 (got {v})")
    return p


def analyse(plan: Plan, src: str, dst: str, window: float | str | None = None,
            loss: float | str | None = None, flows: Sequence[str | tuple[str, str]] | None = None,
            proto: f.Proto = "tcp", mtu: int = 1500, udp_rate: float | str | None = None,
            udp_size: int | None = None, ping_size: int = f.PING_DATA) -> PathReport:
    """What theory expects from src to dst on `plan`.

    window: TCP's effective window (bytes, or "64KB"); loss: random loss to assume on
    top of what the links configure (fraction, or "1%"); flows: concurrent flows for
    fair shares (see `parse_flow`; list the analysed pair too if it runs);
    udp_rate/udp_size: a UDP sender's payload rate and datagram size; ping_size: ping's
    -s. Frames cost 14 bytes of header plus each link's configured `overhead`.
    """
    out, back = hops(plan, src, dst), hops(plan, dst, src)
    b = bottleneck(out)
    eth = f.ETH_HEADER + (b.overhead_bytes if b else 0)
    tcp = f.framing("tcp", mtu, frame_overhead=eth)
    udp = f.framing("udp", mtu, udp_size, frame_overhead=eth)
    ping_frame = ping_size + f.IP_HEADER + f.ICMP_HEADER + f.ETH_HEADER
    data_frame = mtu + f.ETH_HEADER
    ack_frame = f.TCP_ACK_PACKET + f.ETH_HEADER
    legs_out, legs_back = [h.leg for h in out], [h.leg for h in back]
    base = f.base_rtt(legs_out, legs_back, ping_frame)
    data_rtt = f.base_rtt(legs_out, legs_back, data_frame, ack_frame)
    rate = b.rate_bps if b else None
    loss_out = f.combined_loss([h.loss for h in out])
    loss_back = f.combined_loss([h.loss for h in back])
    p = f.combined_loss([loss_out, _fraction(loss)])
    w = _size(window)
    timed = data_rtt > 0  # a path with no delay and no rate: no window or loss limit to give
    tcp_bps = rate * tcp.efficiency if rate else None
    udp_bps = rate * udp.efficiency if rate else None
    report = PathReport(
        src=src, dst=dst, proto=proto, mtu=mtu, hops=out, back=back, bottleneck=b,
        propagation_s=sum(h.delay_s for h in out) + sum(h.delay_s for h in back),
        base_rtt_s=base, data_rtt_s=data_rtt, ping_frame=ping_frame, data_frame=data_frame,
        ack_frame=ack_frame, tcp=tcp, udp=udp,
        bdp_bytes=f.bdp(rate, data_rtt) if rate else None,
        tcp_goodput_bps=tcp_bps, udp_goodput_bps=udp_bps,
        queue_delay_s=(f.queue_delay(rate, b.queue_packets, b.queue_bytes, tcp.frame)
                       if b and rate else None),
        loss_out=loss_out, loss_back=loss_back, loss=p, window_bytes=w,
        window_bps=f.window_limit(w, data_rtt) if w is not None and timed else None,
        mathis_bps=f.mathis(tcp.payload, data_rtt, p) if p > 0 and timed else None,
        tcp_expected=(f.tcp_expected(tcp_bps, data_rtt, w, p, tcp.payload) if timed
                      else f.tcp_expected(tcp_bps, 1.0)),
    )
    if udp_rate is not None:
        offered = units.rate_bps(udp_rate) if isinstance(udp_rate, str) else udp_rate
        over = f.udp_loss(offered, udp_bps) if udp_bps else 0.0
        report.udp_offered_bps = offered
        report.udp_loss = f.combined_loss([over, loss_out])
        report.udp_received_bps = offered * (1 - report.udp_loss)
    if flows:
        report.flows, report.jain = _shares(plan, flows, proto, mtu, udp_size)
    if routing.routed(plan):
        there, back_choice = routing.choose_path(plan, src, dst), routing.choose_path(plan, dst, src)
        report.route = there.why
        if back_choice.nodes != there.nodes[::-1]:
            report.route_back = back_choice.why
        report.equal_paths = there.node_paths() if there.ecmp else []
    return report
