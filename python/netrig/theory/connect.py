"""Whether a TCP connection can be made within a connect timeout, under random loss and
a long round trip: the chance that a flow times out before it moves any data.

Linux's way, modelled here:
- the first packet to a neighbour waits for ARP, which asks every second, three times
  (`mcast_solicit` 3, `retrans_time` 1 s): a request lost with the way out's loss, its
  answer back a link's RTT later. Over a link whose RTT is 3 s or more no answer could
  come in time, so the runner lets nodes ask longer (`arp_tries`: until RTT + 3 s);
- the SYN is sent when ARP has its answer, and again 1, 3, 7, 15 ... s after the first
  (the SYN's retransmission timer starts at 1 s and doubles, RFC 6298); a try succeeds
  when neither the SYN (way out) nor the SYN-ACK (way back) is lost, and it counts only
  if its answer is back within the timeout (sent + RTT);
- then the client's cookie and parameters (two packets on the way out) must reach the
  server within its handshake timeout (as long as the client's connect timeout here),
  each resent after 0.2, 0.6, 1.4, 3.0 ... s (RTO from 200 ms, doubling; 1 s after a
  SYN that had to be resent, but that detail is left out).

The tries of a connection are 1/(1 - q) on average (q: a try's chance of failing),
unbounded in time; a timeout cuts them short. Pure computation: nothing here measures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ARP_TRIES = 3  # mcast_solicit
ARP_EVERY_S = 1.0  # retrans_time
SYN_RTO_S = 1.0  # the SYN's first retransmission timeout (TCP_TIMEOUT_INIT)
SYN_RETRIES = 6  # tcp_syn_retries: the SYN and 6 more
DATA_RTO_S = 0.2  # TCP_RTO_MIN: the setup packets' first retransmission timeout
SETUP_PACKETS = 2  # the cookie, then the parameters (client -> server)


def arp_tries(link_rtt_s: float) -> int:
    """How many times a node asks for a neighbour's address before giving up: Linux's 3,
    or (as the runner sets it where a link's RTT is 3 s or more) enough for an answer to
    come back, 3 more than the RTT's seconds."""
    if link_rtt_s < ARP_TRIES * ARP_EVERY_S:
        return ARP_TRIES
    return ARP_TRIES + math.ceil(link_rtt_s / ARP_EVERY_S)


def max_link_rtt(topo) -> float:
    """The longest RTT of one link of a topology (its two directions' delays), s."""
    return max((sum(d.delay_s or 0.0 for d in (link.direction(0), link.direction(1)))
                for link in topo.links), default=0.0)


@dataclass(frozen=True)
class Connect:
    chance: float  # that the connection is made and set up within the timeouts
    connected: float  # that the SYN's handshake completes within the connect timeout
    tries_mean: float  # SYN tries a connection needs on average (inf: none can succeed)
    tries_in_time: int  # SYN tries whose answer can be back within the timeout
    detail: str


def syn_times(rtt_s: float, timeout_s: float, first_s: float = 0.0) -> list[float]:
    """When the SYNs whose answers can be back within `timeout_s` are sent, the first
    at `first_s`."""
    out, t, rto = [], first_s, SYN_RTO_S
    for _ in range(SYN_RETRIES + 1):
        if t + rtt_s > timeout_s:
            break
        out.append(t)
        t, rto = t + rto, rto * 2
    return out


def tries_within(window_s: float, rto_s: float = DATA_RTO_S) -> int:
    """How many times a packet is sent within `window_s` (at 0, rto, 3 rto, 7 rto ...)."""
    n, t, step = 0, 0.0, rto_s
    while t <= window_s and n < 16:
        n, t, step = n + 1, t + step, step * 2
    return n


def connect_chance(loss_out: float, loss_back: float, rtt_s: float, timeout_s: float,
                   arp_rtt_s: float = 0.0, arp_asks: int = ARP_TRIES) -> Connect:
    """The chance that a connection is made, and its setup gets through, within the
    connect timeout, with random loss `loss_out` on the client's way out and `loss_back`
    on the way back (fractions); ARP's answer takes `arp_rtt_s` (the first link's RTT)
    and is asked for `arp_asks` times."""
    q = 1 - (1 - loss_out) * (1 - loss_back)  # a SYN try fails
    tries_mean = float("inf") if q >= 1 else 1 / (1 - q)
    connected = 0.0
    first = arp_rtt_s  # when the first SYN leaves, ARP answered at once
    for k in range(arp_asks):  # ARP answered at its k-th request (the reply's loss left out)
        if k * ARP_EVERY_S + arp_rtt_s > arp_asks * ARP_EVERY_S:  # after ARP gave up
            break
        arp = loss_out ** k * (1 - loss_out)
        n = len(syn_times(rtt_s, timeout_s, k * ARP_EVERY_S + arp_rtt_s))
        connected += arp * (1 - q ** n)
    n0 = len(syn_times(rtt_s, timeout_s, first))
    left = max(0.0, timeout_s - rtt_s)  # the setup's packets, within the server's handshake time
    setup = (1 - loss_out ** tries_within(left)) ** SETUP_PACKETS if n0 else 0.0
    chance = connected * setup
    mean = "never (every try is lost)" if q >= 1 else f"{tries_mean:.3g} tries on average"
    detail = (f"a SYN try fails with probability {q:.3g} (loss {loss_out:.3g} out, {loss_back:.3g} back): "
              f"{mean}; within the {timeout_s:g} s connect timeout at RTT {rtt_s * 1e3:.4g} ms "
              f"{n0} tr{'y' if n0 == 1 else 'ies'} (at 0, 1, 3, 7 ... s after ARP's answer, "
              f"{arp_rtt_s * 1e3:.4g} ms after each of its {arp_asks} requests, each lost with "
              f"{loss_out:.3g}): connected with probability {connected:.2f}, and set up "
              f"(cookie and parameters through) {chance:.2f}")
    return Connect(chance, connected, tries_mean, n0, detail)
