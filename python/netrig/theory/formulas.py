"""The textbook formulas, on plain numbers in SI units (bit/s, seconds, bytes).

Wire accounting, stated once. A packet of `ip` bytes costs `ip + frame_overhead` bytes
of a link's rate. netrig's user-space link emulator charges the Ethernet frame as
captured, 14-byte header + IP packet (1514 bytes for a 1500-byte packet; no preamble,
FCS or inter-frame gap), plus the link's `overhead` if one is configured; the kernel
backend's HTB charges the same (skb->len). Hence `frame_overhead=ETH_HEADER` (14) by
default. A real Ethernet port also spends preamble+SFD 8 + FCS 4 + inter-frame gap 12
bytes: pass `frame_overhead=ETH_WIRE` (38) for that, as DESIGN.md's 100 × 1448/1538.
Ethernet's 64-byte minimum frame (padding) is not modelled: it only matters for IP
packets under 46 bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from netrig.errors import NetrigError

ETH_HEADER = 14  # destination, source, EtherType
ETH_WIRE = 8 + 4 + 12 + ETH_HEADER  # + preamble/SFD, FCS, inter-frame gap = 38
IP_HEADER = 20
TCP_HEADER = 20
TCP_TIMESTAMPS = 12  # the timestamps option padded to 4-byte words (Linux default: on)
UDP_HEADER = 8
ICMP_HEADER = 8
PING_DATA = 56  # ping's default -s
PING_PACKET = IP_HEADER + ICMP_HEADER + PING_DATA  # 84 bytes: what `ping` puts on the wire
TCP_ACK_PACKET = IP_HEADER + TCP_HEADER + TCP_TIMESTAMPS  # 52 bytes: a bare ACK
MATHIS_C = math.sqrt(3 / 2)  # ≈ 1.22: periodic loss, an ACK per segment (Mathis et al. 1997)

Proto = Literal["tcp", "udp"]


class TheoryError(NetrigError, ValueError):
    """A question theory cannot answer as asked (a negative rate, an MTU below the
    headers, ...); the message says which value is wrong."""


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise TheoryError(f"{name} must be above 0 (got {value})")


def tcp_mss(mtu: int = 1500, timestamps: bool = True) -> int:
    """TCP payload per full segment: MTU − 20 (IP) − 20 (TCP) − 12 (timestamps option,
    on by default in Linux, net.ipv4.tcp_timestamps=1). 1500 → 1448 (1460 without)."""
    mss = mtu - IP_HEADER - TCP_HEADER - (TCP_TIMESTAMPS if timestamps else 0)
    if mss <= 0:
        raise TheoryError(f"an MTU of {mtu} bytes leaves no room for TCP payload")
    return mss


def udp_fragments(payload: int, mtu: int = 1500) -> int:
    """IP packets one UDP datagram of `payload` bytes takes (RFC 791 fragmentation):
    each fragment carries the 8-byte UDP header + payload in pieces of at most
    ⌊(MTU − 20)/8⌋ × 8 bytes (1480 for a 1500 MTU), each with its own IP header."""
    per = (mtu - IP_HEADER) // 8 * 8
    if per <= 0:
        raise TheoryError(f"an MTU of {mtu} bytes cannot carry an IP fragment")
    return max(1, math.ceil((payload + UDP_HEADER) / per))


@dataclass(frozen=True)
class Framing:
    """What one unit of payload costs: `payload` bytes delivered for `wire` bytes of
    link rate, in `packets` IP packets of `frame` bytes at most."""

    payload: int
    wire: int
    packets: int
    frame: int

    @property
    def efficiency(self) -> float:
        return self.payload / self.wire


def framing(proto: Proto = "tcp", mtu: int = 1500, payload: int | None = None,
            frame_overhead: int = ETH_HEADER, timestamps: bool = True) -> Framing:
    """Payload and wire bytes of one TCP segment or UDP datagram (see `goodput`)."""
    if frame_overhead < 0:
        raise TheoryError(f"frame_overhead must be 0 or more (got {frame_overhead})")
    if proto == "tcp":
        mss = tcp_mss(mtu, timestamps)
        if payload is not None and not 0 < payload <= mss:
            raise TheoryError(f"a TCP segment carries 1 .. {mss} bytes at MTU {mtu} "
                              f"(got {payload})")
        p = payload or mss
        ip = p + mtu - mss
        return Framing(p, ip + frame_overhead, 1, ip + frame_overhead)
    if proto == "udp":
        p = mtu - IP_HEADER - UDP_HEADER if payload is None else payload
        if p <= 0:
            raise TheoryError(f"a UDP datagram needs 1 byte of payload or more "
                              f"(got {p} at MTU {mtu})")
        n = udp_fragments(p, mtu)
        ip = p + UDP_HEADER + n * IP_HEADER
        frame = min(mtu, p + UDP_HEADER + IP_HEADER) + frame_overhead
        return Framing(p, ip + n * frame_overhead, n, frame)
    raise TheoryError(f"proto is 'tcp' or 'udp' (got {proto!r})")


def goodput(rate_bps: float, proto: Proto = "tcp", mtu: int = 1500, payload: int | None = None,
            frame_overhead: int = ETH_HEADER, timestamps: bool = True) -> float:
    """Payload bit/s a link of `rate_bps` carries when full of one kind of packet:
    rate × payload / wire bytes.

    TCP: payload = MSS = MTU − 52 (IP 20, TCP 20, timestamps 12) unless `payload` is
    given (a smaller segment); wire = MTU + frame_overhead. 100 Mbit/s → 100 × 1448/1514
    = 95.64 Mbit/s as netrig charges, 100 × 1448/1538 = 94.15 Mbit/s on real Ethernet.
    UDP: payload = MTU − 28 (IP 20, UDP 8) or the datagram size given; a datagram over
    MTU − 28 is fragmented (`udp_fragments`) and pays an IP header and a frame per
    fragment. A 1470-byte datagram: 1470 of 1512 (netrig), 1470 of 1536 (Ethernet).
    """
    _positive("rate_bps", rate_bps)
    return rate_bps * framing(proto, mtu, payload, frame_overhead, timestamps).efficiency


@dataclass(frozen=True)
class Leg:
    """One link crossed in one direction: its rate (None: unlimited, e.g. a bare veth),
    one-way delay and per-packet overhead charged on top of the frame."""

    rate_bps: float | None
    delay_s: float
    overhead_bytes: int = 0


def serialization(frame_bytes: float, leg: Leg) -> float:
    """Seconds to clock `frame_bytes` (+ the leg's overhead) out at the leg's rate; 0 on
    an unlimited leg."""
    if leg.rate_bps is None:
        return 0.0
    return (frame_bytes + leg.overhead_bytes) * 8 / leg.rate_bps


def base_rtt(hops: Sequence[Leg], back: Sequence[Leg] | None = None,
             frame_bytes: float = 1500 + ETH_HEADER,
             back_frame_bytes: float | None = None) -> float:
    """Round-trip time on an idle path: propagation both ways plus, store-and-forward,
    one serialization per leg per direction.

        RTT = Σ_out (d_i + F·8/R_i) + Σ_back (d_j + F'·8/R_j)

    `back` defaults to the same legs in reverse (a symmetric path). F defaults to one
    MTU frame (1514 bytes as netrig charges) and F' to F. For what `ping` reports pass
    the probe's frame both ways (`PING_PACKET + ETH_HEADER` = 98 bytes); for a full TCP
    segment and its ACK pass F = MTU frame, F' = `TCP_ACK_PACKET + ETH_HEADER` (66).
    Queueing is not included: that is what load adds (`queue_delay`).
    """
    back = list(reversed(hops)) if back is None else back
    f2 = frame_bytes if back_frame_bytes is None else back_frame_bytes
    return (sum(leg.delay_s + serialization(frame_bytes, leg) for leg in hops)
            + sum(leg.delay_s + serialization(f2, leg) for leg in back))


def bdp(rate_bps: float, rtt_s: float) -> float:
    """Bandwidth-delay product in bytes: rate × RTT / 8 (what must be in flight to keep
    a link of that rate busy for one round trip)."""
    return rate_bps * rtt_s / 8


def queue_delay(rate_bps: float, packets: int | None = None, nbytes: int | None = None,
                frame_bytes: float = 1500 + ETH_HEADER) -> float | None:
    """Longest wait a full drop-tail queue adds: packets × frame time (F·8/R) for a
    packet limit, bytes·8/R for a byte limit (the smaller if both); None if unbounded."""
    _positive("rate_bps", rate_bps)
    waits = []
    if packets is not None:
        waits.append(packets * frame_bytes * 8 / rate_bps)
    if nbytes is not None:
        waits.append(nbytes * 8 / rate_bps)
    return min(waits) if waits else None


def window_limit(window_bytes: float, rtt_s: float) -> float:
    """Throughput a window of W payload bytes allows: W·8 / RTT bit/s (one window per
    round trip; W is the effective window, e.g. what iperf's -w yields after the
    kernel's doubling and overhead share, not the flag's value)."""
    _positive("window_bytes", window_bytes)
    _positive("rtt_s", rtt_s)
    return window_bytes * 8 / rtt_s


def mathis(mss: float, rtt_s: float, loss: float, c: float = MATHIS_C) -> float:
    """Mathis, Semke, Mahdavi, Ott, "The macroscopic behavior of the TCP congestion
    avoidance algorithm", CCR 27(3), 1997: throughput ≤ MSS·8/RTT × C/√p bit/s.
    C = √(3/2) ≈ 1.22 for periodic loss with an ACK per segment; √(3/4) ≈ 0.87 with
    delayed ACKs (b = 2). Infinite when p = 0. Valid for small p: time-outs (which
    dominate from a few % on) make real TCP slower than this."""
    _positive("mss", mss)
    _positive("rtt_s", rtt_s)
    if not 0 <= loss <= 1:
        raise TheoryError(f"loss is a fraction 0 .. 1 (got {loss})")
    return math.inf if loss == 0 else mss * 8 / rtt_s * c / math.sqrt(loss)


def padhye(mss: float, rtt_s: float, loss: float, rto_s: float | None = None,
           b: int = 1) -> float:
    """Padhye, Firoiu, Towsley, Kurose, "Modeling TCP throughput: a simple model and
    its empirical validation", SIGCOMM 1998 (eq. 31, no window limit): bit/s =
    MSS·8 / (RTT·√(2bp/3) + T0·min(1, 3·√(3bp/8))·p·(1 + 32p²)). Mathis's bound plus
    the time-outs that dominate from a few % of loss. T0, the retransmission timeout:
    Linux's RTT + 200 ms (its minimum RTO beyond the smoothed RTT) unless given; b:
    segments per ACK. Infinite when p = 0."""
    _positive("mss", mss)
    _positive("rtt_s", rtt_s)
    if not 0 <= loss <= 1:
        raise TheoryError(f"loss is a fraction 0 .. 1 (got {loss})")
    if loss == 0:
        return math.inf
    t0 = rtt_s + 0.2 if rto_s is None else rto_s
    p = loss
    denom = rtt_s * math.sqrt(2 * b * p / 3) + t0 * min(1.0, 3 * math.sqrt(3 * b * p / 8)) * p * (1 + 32 * p * p)
    return mss * 8 / denom


def udp_loss(offered_bps: float, capacity_bps: float) -> float:
    """Fraction of datagrams a bottleneck drops when offered more than it carries:
    max(0, 1 − C/X). Give both in the same terms (payload bit/s: C = `goodput` of the
    bottleneck for that datagram size, X = the sender's rate as iperf's -b counts it)."""
    _positive("capacity_bps", capacity_bps)
    if offered_bps <= 0:
        return 0.0
    return max(0.0, 1 - capacity_bps / offered_bps)


def combined_loss(losses: Sequence[float]) -> float:
    """Loss over links in series, each dropping independently: 1 − Π(1 − p_i)."""
    return 1 - math.prod(1 - p for p in losses)


@dataclass(frozen=True)
class Expectation:
    """An expected value, the limit that sets it, and how it was worked out.
    `limits` holds every candidate (bit/s); `value` is their minimum."""

    value: float
    limit: str  # "link", "window", "loss", or "none" (nothing on the path limits it)
    detail: str
    limits: Mapping[str, float] = field(default_factory=dict)


def tcp_expected(capacity_bps: float | None, rtt_s: float, window_bytes: float | None = None,
                 loss: float = 0.0, mss: float = 1448, c: float = MATHIS_C) -> Expectation:
    """TCP throughput = min(bottleneck goodput, W/RTT, Mathis/Padhye under loss). `capacity_bps` is the
    bottleneck's payload rate (`goodput`; None: no rate on the path); the window and
    loss limits apply only when a window or a loss above 0 is given."""
    limits: dict[str, float] = {}
    if capacity_bps is not None:
        limits["link"] = capacity_bps
    if window_bytes is not None:
        limits["window"] = window_limit(window_bytes, rtt_s)
    if loss > 0:  # Mathis's bound with the time-outs that dominate at high loss (PFTK)
        limits["loss"] = min(mathis(mss, rtt_s, loss, c), padhye(mss, rtt_s, loss))
    if not limits:
        return Expectation(math.inf, "none", "nothing on the path limits TCP", limits)
    limit = min(limits, key=lambda k: limits[k])
    parts = ", ".join(f"{k} {v / 1e6:.4g} Mbit/s" for k, v in limits.items())
    return Expectation(limits[limit], limit, f"min({parts}) = {limit}", limits)
