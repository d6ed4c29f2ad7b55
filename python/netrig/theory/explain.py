"""`netrig explain FILE SRC DST`: a `PathReport` as text, with the arithmetic shown
the way one works it out by hand (hops, bottleneck, RTT as a sum, BDP, goodput after
headers, the window and loss limits, fair shares, and which limit binds)."""

from __future__ import annotations

import math

from netrig.theory.formulas import ETH_HEADER, MATHIS_C, padhye
from netrig.theory.path import HopInfo, PathReport
from netrig.units import format_rate, format_seconds


def _rate(bps: float | None) -> str:
    if bps is None:
        return "unlimited"
    return "∞" if math.isinf(bps) else format_rate(bps)


def _ms(s: float) -> str:
    """Milliseconds without a unit, for sums: 10, 20, 0.5."""
    return f"{s * 1e3:.4g}"


def _pct(p: float) -> str:
    return f"{p * 100:.4g} %"


def _bytes(n: float) -> str:
    return f"{n:,.0f} bytes"


def _queue(h: HopInfo) -> str:
    parts = []
    if h.queue_packets is not None:
        parts.append(f"{h.queue_packets} packets")
    if h.queue_bytes is not None:
        parts.append(_bytes(h.queue_bytes))
    text = " or ".join(parts) or "default"
    return text if h.aqm == "droptail" else f"{text}, {h.aqm}"


def _hop_table(hs: list[HopInfo]) -> list[str]:
    rows = [("", "link", "from → to", "rate", "delay", "queue", "loss")]
    for i, h in enumerate(hs, 1):
        rate = f"trace {h.trace}" if h.trace else _rate(h.rate_bps)
        if h.overhead_bytes:
            rate += f" (+{h.overhead_bytes} B/packet)"
        rows.append((str(i), h.link, f"{h.frm} → {h.to}", rate,
                     format_seconds(h.delay_s) if h.delay_s else "0",
                     _queue(h) if h.rate_bps or h.queue_packets or h.queue_bytes else "-",
                     _pct(h.loss) if h.loss else "-"))
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


def _delays(hs: list[HopInfo]) -> str:
    ds = [_ms(h.delay_s) for h in hs if h.delay_s]
    return "(" + " + ".join(ds) + ")" if len(ds) > 1 else (ds[0] if ds else "0")


def _rtt(r: PathReport) -> list[str]:
    symmetric = [h.delay_s for h in r.hops] == [h.delay_s for h in reversed(r.back)]
    if symmetric:
        prop = f"2 × {_delays(r.hops)} ms"
    else:
        prop = f"{_delays(r.hops)} ms out + {_delays(r.back)} ms back"
    ping = r.base_rtt_s - r.propagation_s
    data = r.data_rtt_s - r.propagation_s
    return [
        f"Base RTT    {prop} = {format_seconds(r.propagation_s)} propagation",
        (f"            + {format_seconds(ping)} serializing a {r.ping_frame}-byte ping frame "
         f"each way = {format_seconds(r.base_rtt_s)} (what ping shows, idle)"),
        (f"            + {format_seconds(data)} for a {r.data_frame}-byte segment out and a "
         f"{r.ack_frame}-byte ACK back = {format_seconds(r.data_rtt_s)} (a TCP round trip)"),
    ]


def _goodput(r: PathReport, rate: float) -> list[str]:
    t, u = r.tcp, r.udp
    frag = f", {u.packets} fragments" if u.packets > 1 else ""
    return [
        (f"Goodput     TCP: {format_rate(rate)} × {t.payload}/{t.wire} = "
         f"{format_rate(r.tcp_goodput_bps or 0)}"),
        (f"                 (MSS {t.payload} = MTU {r.mtu} − 20 IP − 20 TCP − 12 timestamps;"
         f" a frame costs MTU + {t.wire - r.mtu} bytes)"),
        (f"            UDP: {format_rate(rate)} × {u.payload}/{u.wire} = "
         f"{format_rate(r.udp_goodput_bps or 0)}  ({u.payload}-byte datagrams{frag})"),
    ]


def _limits(r: PathReport) -> list[str]:
    lines = []
    rtt = format_seconds(r.data_rtt_s)
    if r.window_bytes is not None and r.window_bps is not None:
        lines.append(f"Window      {_bytes(r.window_bytes)} × 8 / {rtt} = "
                     f"{format_rate(r.window_bps)}")
    if r.mathis_bps is not None:
        src = []
        if r.loss_out:
            src.append(f"{_pct(r.loss_out)} on the links")
        if r.loss > r.loss_out:
            src.append("the loss given")
        lines.append(f"Loss        p = {_pct(r.loss)} ({' and '.join(src)}): Mathis "
                     f"{r.tcp.payload} × 8 / {rtt} × {MATHIS_C:.3g}/√{r.loss:.4g} = "
                     f"{format_rate(r.mathis_bps)}; with time-outs (Padhye, T0 = RTT + 200 ms) "
                     f"{format_rate(padhye(r.tcp.payload, r.data_rtt_s, r.loss))}")
    e = r.tcp_expected
    if e.limit == "none":
        lines.append("Expected    TCP: nothing on the path limits it (the hosts' CPUs will)")
    else:
        why = {"link": f"the bottleneck {r.bottleneck.link if r.bottleneck else ''}",
               "window": "the window", "loss": "loss (Mathis/Padhye)"}[e.limit]
        cands = ", ".join(f"{k} {format_rate(v)}" for k, v in e.limits.items())
        lines.append(f"Expected    TCP: {format_rate(e.value)}, limited by {why}"
                     + (f"  (min of {cands})" if len(e.limits) > 1 else ""))
    b = r.bottleneck
    if r.proto == "udp" and r.udp_offered_bps is None and r.udp_goodput_bps and b:
        lines.append(f"            UDP: up to {format_rate(r.udp_goodput_bps)} of "
                     f"{r.udp.payload}-byte datagrams; more offered is lost at {b.link}")
    if r.udp_offered_bps is not None and r.udp_loss is not None:
        lines.append(f"            UDP offered {format_rate(r.udp_offered_bps)}: loss "
                     f"{_pct(r.udp_loss)}, received {format_rate(r.udp_received_bps or 0)}"
                     + (f"  (1 − {format_rate(r.udp_goodput_bps)} / "
                        f"{format_rate(r.udp_offered_bps)})"
                        if r.udp_goodput_bps and r.udp_offered_bps > r.udp_goodput_bps else ""))
    return lines


def _flows(r: PathReport) -> list[str]:
    rows = [("flow", "conns", "share", "goodput", "limited by")]
    for s in r.flows:
        rows.append((s.name, str(s.conns), _rate(s.share_bps), _rate(s.goodput_bps), s.limit))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    lines = ["Fair shares (max-min over each flow's links; link rate, and payload after headers)"]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    if r.jain is not None:
        lines.append(f"  Jain's index over connections: {r.jain:.3f}")
    return lines


def _routing(r: PathReport) -> list[str]:
    """How the protocols chose the way (a routed lab), and the equal-cost paths."""
    if r.route is None:
        return []
    lines = [f"Routing     {r.route}"]
    if r.route_back:
        lines.append(f"            back: {r.route_back}")
    if r.equal_paths:
        lines += [f"            {'=' if k else '→'} {' '.join(p)}" for k, p in enumerate(r.equal_paths)]
        lines.append("            (the kernel hashes each flow onto one of these; theory below "
                     "follows the first)")
    return lines


def explain_text(r: PathReport) -> str:
    """The report as `netrig explain` prints it."""
    lines = [(f"Path {r.src} → {r.dst} (MTU {r.mtu} bytes, frames as netrig charges them: "
              f"{ETH_HEADER}-byte Ethernet header + IP packet)"), *_routing(r), *_hop_table(r.hops)]
    if [(h.link, h.rate_bps, h.delay_s) for h in reversed(r.back)] != [
            (h.link, h.rate_bps, h.delay_s) for h in r.hops]:
        lines += [f"Return path {r.dst} → {r.src}", *_hop_table(r.back)]
    b = r.bottleneck
    lines.append("")
    if b is None or b.rate_bps is None:
        lines.append("Bottleneck  none: no link on the path has a rate")
    else:
        lines.append(f"Bottleneck  {b.link} ({b.frm} → {b.to}) at {format_rate(b.rate_bps)}")
    lines += _rtt(r)
    if b is not None and b.rate_bps is not None and r.bdp_bytes is not None:
        lines.append(f"BDP         {format_rate(b.rate_bps)} × {format_seconds(r.data_rtt_s)}"
                     f" / 8 = "
                     f"{_bytes(r.bdp_bytes)} = {r.bdp_bytes / r.tcp.wire:.1f} packets of "
                     f"{r.tcp.wire} bytes")
        lines += _goodput(r, b.rate_bps)
        if r.queue_delay_s is not None:
            frame = format_seconds(r.tcp.wire * 8 / b.rate_bps)
            size = (f"{b.queue_packets} packets × {frame}" if b.queue_packets is not None
                    else f"{_bytes(b.queue_bytes or 0)} × 8 / {format_rate(b.rate_bps)}")
            lines.append(f"Queueing    a full {b.link} queue adds {size} = "
                         f"{format_seconds(r.queue_delay_s)}: RTT under load up to "
                         f"{format_seconds(r.loaded_rtt_s or 0)}")
        else:
            lines.append(f"Queueing    {b.link} has no queue limit set: "
                         "the backend's default applies")
    if r.loss_back:
        lines.append(f"            (the return path drops {_pct(r.loss_back)} at random: ACKs, "
                     "mostly harmless to TCP)")
    lines += _limits(r)
    if r.flows:
        lines += ["", *_flows(r)]
    return "\n".join(lines)
