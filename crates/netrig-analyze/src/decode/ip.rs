//! IPv4, IPv6, the TCP header, and what IP carries to more IP: ICMP errors, GRE, IP-in-IP,
//! AH, MPLS-in-IP and the UDP tunnels (VXLAN, VXLAN-GPE, Geneve, GTP, L2TPv2, GRE- and
//! MPLS-in-UDP), each as tshark 4.0 reads it (packet-ip.c, packet-ipv6.c, packet-icmp.c,
//! packet-icmpv6.c, packet-gre.c, packet-udp.c, packet-vxlan.c, packet-geneve.c,
//! packet-gtp.c, packet-l2tp.c, packet-ipsec.c).

use super::names::udp_port_keeps;
use super::{link, Addr, Ctx, TcpHeader, Tvb};

/// The `ip` dissector: IPv4 or IPv6 by the version nibble.
pub(crate) fn ip_any(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    match t.u8(0).map(|b| b >> 4) {
        Some(4) => ipv4(t, cx, out),
        Some(6) => ipv6(t, cx, out),
        _ => {}
    }
}

fn v4(a: &[u8]) -> Addr {
    let mut x = [0u8; 16];
    x[10] = 0xFF;
    x[11] = 0xFF;
    x[12..].copy_from_slice(&a[..4]);
    x
}

pub(crate) fn ipv4(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let Some(mut cx) = cx.deeper() else { return };
    let b = t.b;
    if b.len() < 20 || b[0] >> 4 != 4 {
        return;
    }
    let ihl = (b[0] & 0x0F) as usize * 4;
    if ihl < 20 || b.len() < ihl {
        return;
    }
    let mut t = t;
    let total = u16::from_be_bytes([b[2], b[3]]) as usize;
    if total < ihl {
        if total != 0 {
            return; // a bogus length
        }
        // TSO: the length field is left at 0; tshark then takes the frame's length.
    } else {
        t = t.limit(total);
    }
    let ip_len = if total == 0 { t.rep } else { total };
    let frag = u16::from_be_bytes([b[6], b[7]]);
    if frag & 0x3FFF != 0 {
        // tshark reassembles a fragment it holds whole; its segment would appear in the
        // frame that completes the datagram (not modelled). A first fragment not captured
        // whole is dissected on its own, without a segment length.
        let whole = ip_len > ihl && b.len() >= ip_len;
        if whole || frag & 0x1FFF != 0 {
            return;
        }
        cx.fragmented = true;
    } else {
        cx.fragmented = false;
    }
    let Some(payload) = t.at(ihl) else { return };
    if payload.rep == 0 {
        return;
    }
    ip_proto(b[9], payload, v4(&b[12..16]), v4(&b[16..20]), false, cx, out);
}

/// The `ip.proto` table: what an IPv4 or IPv6 header (after its extensions) carries.
fn ip_proto(proto: u8, t: Tvb, src: Addr, dst: Addr, v6: bool, cx: Ctx, out: &mut Vec<TcpHeader>) {
    match proto {
        6 => tcp(t, src, dst, cx, out),
        4 => ip_any(t, cx, out),
        41 => ipv6(t, cx, out),
        47 => gre(t, cx, out),
        17 => udp(t, v6, cx, out),
        1 => icmp(t, cx, out),
        58 => icmpv6(t, cx, out),
        137 => link::mpls(t, cx, out),
        51 if !v6 => {
            // AH over IPv4 (over IPv6 it is an extension header, see `ipv6`).
            let (Some(next), Some(len)) = (t.u8(0), t.u8(1)) else {
                return;
            };
            if let Some(rest) = t.at((len as usize + 2) * 4) {
                ip_proto(next, rest, src, dst, false, cx, out);
            }
        }
        _ => {}
    }
}

pub(crate) fn ipv6(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let Some(mut cx) = cx.deeper() else { return };
    let b = t.b;
    if b.len() < 40 || b[0] >> 4 != 6 || t.rep < 40 {
        return;
    }
    let mut next = b[6];
    let mut plen = u16::from_be_bytes([b[4], b[5]]) as usize;
    if plen == 0 && next == 0 {
        plen = jumbo_plen(&t).unwrap_or(0);
    }
    let t = t.limit(40 + plen);
    let src: Addr = b[8..24].try_into().unwrap_or_default();
    let dst: Addr = b[24..40].try_into().unwrap_or_default();
    let mut off = 40;
    // Extension headers, each read whole as tshark reads them; at most 16 (each is at
    // least 8 bytes, so a frame cannot hold many more).
    for _ in 0..16 {
        let len = match next {
            0 | 43 | 60 => match t.u8(off + 1) {
                Some(l) => (l as usize + 1) * 8,
                None => return,
            },
            51 => match t.u8(off + 1) {
                Some(l) => (l as usize + 2) * 4,
                None => return,
            },
            44 => {
                let Some(f) = t.be16(off + 2) else { return };
                // Only an atomic fragment (offset 0, no more fragments) held whole is
                // reassembled at once; any other fragment is not dissected here.
                if f & 0xFFF9 != 0 || t.b.len() < t.rep {
                    return;
                }
                cx.fragmented = false;
                8
            }
            _ => {
                if let Some(rest) = t.at(off) {
                    ip_proto(next, rest, src, dst, true, cx, out);
                }
                return;
            }
        };
        if t.b.len() < off + len {
            return;
        }
        let Some(n) = t.u8(off) else { return };
        next = n;
        off += len;
        if off > t.rep {
            return;
        }
    }
}

/// The payload length a hop-by-hop jumbo option gives (RFC 2675), as tshark finds it.
fn jumbo_plen(t: &Tvb) -> Option<usize> {
    let end = 40 + (t.u8(41)? as usize + 1) * 8;
    let mut off = 42;
    while off < end && t.b.len() >= off + 6 {
        let kind = t.b[off];
        off += 1;
        if kind == 0 {
            continue;
        }
        let len = t.b[off] as usize;
        off += 1;
        if kind == 0xC2 && len == 4 {
            let v = t.be32(off)? as usize;
            return (v > 0xFFFF).then_some(v);
        }
        off += len;
    }
    None
}

/// The TCP header: none unless its first 16 bytes (to the window) were captured.
fn tcp(t: Tvb, src: Addr, dst: Addr, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let b = &t.b[..t.b.len().min(t.rep)];
    if b.len() < 16 {
        return;
    }
    let hlen = (b[12] >> 4) as u32 * 4;
    // Wireshark reads the checksum and urgent pointer before the options: a header
    // captured short of 20 bytes throws there, before any option counts.
    let (wscale, whole) = if b.len() < 20 {
        (None, false)
    } else if hlen > 20 {
        options(&b[20..], hlen as usize - 20)
    } else {
        (None, true)
    };
    out.push(TcpHeader {
        src,
        dst,
        sport: u16::from_be_bytes([b[0], b[1]]),
        dport: u16::from_be_bytes([b[2], b[3]]),
        seq: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        ack: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
        flags: u16::from_be_bytes([b[12], b[13]]) & 0x0FFF,
        win: u16::from_be_bytes([b[14], b[15]]),
        hlen,
        reported_len: t.rep.min(u32::MAX as usize) as u32,
        wscale,
        have_seglen: !(cx.in_error || cx.fragmented),
        shown: whole,
    });
}

/// Walks the options as Wireshark's `tcp_dissect_options` does, over `len` bytes of
/// which `opts` were captured: stops quietly at a malformed length or at a non-zero
/// byte after EOL, and "throws" (returns false) when it must read a byte that was not
/// captured, including any byte of an option it hands to that option's dissector. The
/// window-scale shift counts only from a whole option of length 3 (capped at 14).
pub(crate) fn options(opts: &[u8], len: usize) -> (Option<u8>, bool) {
    let (mut wscale, mut off, mut left, mut eol) = (None, 0usize, len, false);
    while left > 0 {
        let Some(&kind) = opts.get(off) else {
            return (wscale, false);
        };
        if eol && kind != 0 {
            break;
        }
        left -= 1;
        if kind <= 1 {
            eol |= kind == 0;
            off += 1;
            continue;
        }
        if left == 0 {
            break;
        }
        let Some(&l) = opts.get(off + 1) else {
            return (wscale, false);
        };
        let l = l as usize;
        left -= 1;
        if l < 2 || l - 2 > left {
            break;
        }
        if off + l > opts.len() {
            return (wscale, false);
        }
        if kind == 3 && l == 3 {
            wscale = Some(opts[off + 2].min(14));
        }
        off += l;
        left -= l - 2;
    }
    (wscale, true)
}

/// ICMP: the errors (unreachable, source quench, time exceeded, parameter problem) carry
/// the datagram that caused them, dissected as inside an error. A redirect's is cut to
/// its IP header and 8 bytes: never a TCP header.
fn icmp(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let (Some(kind), Some(orig_words)) = (t.u8(0), t.u8(5)) else {
        return;
    };
    if !matches!(kind, 3 | 4 | 11 | 12) {
        return;
    }
    let Some(mut inner) = t.at(8) else { return };
    // RFC 4884: the original datagram's length in 32-bit words, when the ICMP payload
    // holds more and the quoted IP header claims more.
    let words = orig_words as usize * 4;
    if words > 0 && t.rep > 8 + words && inner.be16(2).is_some_and(|l| l as usize > words) {
        let ihl = inner.u8(0).map_or(0, |b| (b & 0x0F) as usize * 4);
        inner = inner.limit(ihl + words);
    }
    ip_any(inner, Ctx { in_error: true, ..cx }, out);
}

/// ICMPv6 errors (1-4) carry the start of an IPv6 datagram.
fn icmpv6(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    if !matches!(t.u8(0), Some(1..=4)) {
        return;
    }
    let Some(inner) = t.at(8) else { return };
    if inner.u8(0).map(|b| b >> 4) == Some(6) {
        ipv6(inner, Ctx { in_error: true, ..cx }, out);
    }
}

/// GRE (RFC 2784/2890, and PPTP's enhanced GRE): the optional fields, then the payload
/// by protocol type.
pub(crate) fn gre(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let (Some(fv), Some(proto)) = (t.be16(0), t.be16(2)) else {
        return;
    };
    let is_ppp = (proto == 0x880B && fv & 0x0007 != 0) || matches!(proto, 0x88D2 | 0x8881);
    let wccp2 = proto == 0x883E && t.u8(4).is_some_and(|b| b & 0xF0 != 0x40);
    let mut off = 4;
    if fv & 0xC000 != 0 {
        off += 4; // checksum and offset (present with either C or R)
    }
    if fv & 0x2000 != 0 {
        off += 4; // key (PPTP: payload length and call id)
    }
    if fv & 0x1000 != 0 {
        off += 4; // sequence number
    }
    if is_ppp && fv & 0x0080 != 0 {
        off += 4; // PPTP's acknowledgment number
    }
    if fv & 0x4000 != 0 {
        // Source route entries, up to the null one.
        loop {
            let (Some(af), Some(len)) = (t.be16(off), t.u8(off + 3)) else {
                return;
            };
            off += 4;
            if af == 0 && len == 0 {
                break;
            }
            off += len as usize;
        }
    }
    if wccp2 {
        off += 4;
    }
    if proto == 0x8881 {
        return; // 3GPP2 attributes: not decoded
    }
    let Some(rest) = t.at(off) else { return };
    if fv & 0x1000 == 0 && rest.rep == 0 {
        return;
    }
    gre_proto(proto, rest, cx, out);
}

/// The `gre.proto` table, for the types that lead to TCP.
pub(crate) fn gre_proto(proto: u16, t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    match proto {
        0x0800 | 0x883E => ip_any(t, cx, out),
        0x86DD => ipv6(t, cx, out),
        0x6558 | 0x6400 => {
            if let Some(cx) = cx.deeper() {
                link::ethernet(t, cx, out)
            }
        }
        0x8847 | 0x8848 => link::mpls(t, cx, out),
        0x880B => link::ppp_hdlc(t, cx, out),
        _ => {}
    }
}

/// UDP: the payload, cut to the UDP length, goes to the lower port's protocol, else the
/// higher's; a port tshark gives to another protocol keeps it there (no TCP follows)
/// unless that protocol gives it back (`names::udp_port_keeps`).
fn udp(t: Tvb, v6: bool, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let (Some(sport), Some(dport), Some(ulen)) = (t.be16(0), t.be16(2), t.be16(4)) else {
        return;
    };
    let mut ulen = ulen as usize;
    if ulen == 0 && v6 {
        ulen = t.rep; // an IPv6 jumbogram's UDP length
    }
    if ulen < 8 {
        return;
    }
    if t.b.len() < 8 {
        return; // the checksum is read before the payload is handed on
    }
    if cx.in_error && t.b.len() == 8 {
        return;
    }
    let Some(payload) = t.at(8) else { return };
    let payload = payload.limit(ulen - 8);
    let (low, high) = (sport.min(dport), sport.max(dport));
    for port in [low, high] {
        if port == 0 {
            continue;
        }
        let taken = match port {
            4789 => {
                if let (Some(cx), Some(rest)) = (cx.deeper(), payload.at(8)) {
                    link::ethernet(rest, cx, out);
                }
                true
            }
            4790 => {
                vxlan_gpe(payload, cx, out);
                true
            }
            6081 => {
                geneve(payload, cx, out);
                true
            }
            2152 | 2123 => gtp(payload, cx, out),
            4754 => {
                gre(payload, cx, out);
                true
            }
            6635 => {
                link::mpls(payload, cx, out);
                true
            }
            1701 => l2tp(payload, cx, out),
            p => udp_port_keeps(p, high, p == sport && p != dport),
        };
        if taken {
            return;
        }
    }
}

/// L2TP on UDP 1701: version 2 data messages carry PPP in HDLC framing; control
/// messages and version 3 (whose payload type the control channel negotiates) carry no
/// TCP. Any other version is rejected, as tshark's L2TP does. (tshark also follows an
/// L2TP conversation onto other ports once seen; not modelled.)
fn l2tp(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) -> bool {
    let Some(c) = t.be16(0) else { return false };
    match c & 0x000F {
        2 => {}
        3 => return true,
        _ => return false,
    }
    let mut t = t;
    let mut idx = 2;
    if c & 0x4000 != 0 {
        let Some(len) = t.be16(2) else { return true };
        idx += 2;
        t = t.limit(len as usize);
    }
    idx += 4; // tunnel and session ids
    if c & 0x8000 != 0 || t.b.len() < idx {
        return true;
    }
    if c & 0x0800 != 0 {
        idx += 4; // Ns, Nr
    }
    if c & 0x0200 != 0 {
        let Some(pad) = t.be16(idx) else { return true };
        idx += 2 + pad as usize;
    }
    if idx < t.b.len() {
        if let Some(ppp) = t.at(idx) {
            link::ppp_hdlc(ppp, cx, out);
        }
    }
    true
}

/// VXLAN-GPE (4790): the next protocol in byte 3.
fn vxlan_gpe(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let (Some(next), Some(rest)) = (t.u8(3), t.at(8)) else {
        return;
    };
    match next {
        1 => ip_any(rest, cx, out),
        2 => ipv6(rest, cx, out),
        3 => {
            if let Some(cx) = cx.deeper() {
                link::ethernet(rest, cx, out)
            }
        }
        5 => link::mpls(rest, cx, out),
        _ => {}
    }
}

/// Geneve (6081): 8 bytes and the options, then an EtherType.
fn geneve(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let (Some(b0), Some(proto)) = (t.u8(0), t.be16(2)) else {
        return;
    };
    if t.b.len() < 8 {
        return;
    }
    if let Some(rest) = t.at(8 + (b0 & 0x3F) as usize * 4) {
        link::ethertype(proto, rest, cx, out);
    }
}

/// GTP (packet-gtp.c `dissect_gtp_common`), for its T-PDU (G-PDU, type 255): the header
/// of version 0, 1 or GTP', then IPv4 (first byte 0x45-0x4e), IPv6, or Ethernet carrying
/// IP or ARP. Returns false where tshark's GTP rejects the datagram (a version above 2,
/// an unknown message type), which then goes to the other port.
fn gtp(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) -> bool {
    let (Some(flags), Some(msg)) = (t.u8(0), t.u8(1)) else {
        return false;
    };
    let version = flags >> 5;
    if version == 2 {
        return true; // GTPv2-C: control messages only
    }
    if version > 2 || !gtp_message_known(msg) {
        return false;
    }
    if msg != 255 {
        return true;
    }
    let Some(length) = t.be16(2) else { return true };
    let length = length as usize;
    let prime = flags & 0x10 == 0;
    let (mut off, t) = if prime {
        let off = if version == 0 && flags & 1 == 0 { 20 } else { 6 };
        (off, t.limit(off + length))
    } else if version == 0 {
        (20, t.limit(20 + length))
    } else {
        (8, t.limit(8 + length))
    };
    if !prime && version != 0 && flags & 0x07 != 0 {
        // Sequence number, N-PDU number and the next extension header type.
        off += 3;
        let Some(mut next) = t.u8(off) else { return true };
        off += 1;
        if flags & 0x04 != 0 {
            // Each extension header: its length in 4-byte words, its content, and the
            // next header's type in its last byte.
            while next != 0 {
                let Some(words) = t.u8(off) else { return true };
                if words == 0 {
                    return true; // a malformed extension: tshark stops here
                }
                let Some(n) = t.u8(off + words as usize * 4 - 1) else {
                    return true;
                };
                next = n;
                off += words as usize * 4;
            }
        }
    }
    let Some(pdu) = t.at(off) else { return true };
    if pdu.rep == 0 {
        return true;
    }
    match pdu.u8(0) {
        Some(0x45..=0x4E) => ipv4(pdu, cx, out),
        Some(b) if b & 0xF0 == 0x60 => ipv6(pdu, cx, out),
        Some(_) if pdu.rep > 14 => {
            if matches!(pdu.be16(12), Some(0x0806 | 0x86DD | 0x0800)) {
                if let Some(cx) = cx.deeper() {
                    link::ethernet(pdu, cx, out);
                }
            }
        }
        _ => {}
    }
    true
}

/// The message types tshark's GTP dissector names (`gtp_message_type`); any other is
/// rejected.
fn gtp_message_known(m: u8) -> bool {
    matches!(
        m,
        1..=7 | 16..=37 | 48..=62 | 70 | 96..=105 | 112..=121 | 240 | 241 | 254 | 255
    )
}
