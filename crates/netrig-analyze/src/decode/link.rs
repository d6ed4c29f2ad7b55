//! Link layers down to IP, each as tshark 4.0's dissector reads it (packet-eth.c,
//! packet-cisco-fp-mim.c, packet-vlan.c, packet-ieee8021ah.c, packet-mpls.c, packet-llc.c, packet-pppoe.c,
//! packet-ppp.c, packet-chdlc.c, packet-null.c, packet-raw.c, packet-sll.c): the
//! link-type switch, the EtherType table and the layers it reaches. 802.11 and its radio
//! headers are in `wlan`, IP and tunnels in `ip`.

use super::{ip, wlan, Ctx, TcpHeader, Tvb, UnsupportedLink};

/// tshark's VLAN_MAX_NESTED_TAGS: the 21st 802.1Q tag of a frame is not followed.
const MAX_VLAN_TAGS: u8 = 20;

/// A frame of link type `lt` (its pcap LINKTYPE_ value).
pub(crate) fn link(lt: u32, t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) -> Result<(), UnsupportedLink> {
    // The common case first, and without a depth check (the frame's first header).
    if lt == 1 {
        ethernet(t, cx, out);
        return Ok(());
    }
    let Some(cx) = cx.deeper() else { return Ok(()) };
    match lt {
        0 => null(t, cx, out),
        108 => loop_(t, cx, out),
        101 | 12 | 14 => raw(t, cx, out),
        228 => ip::ip_any(t, cx, out),
        229 => ip::ipv6(t, cx, out),
        113 => sll(t, 16, 2, 14, cx, out),
        276 => sll(t, 20, 8, 0, cx, out),
        9 | 50 => ppp_hdlc(t, cx, out),
        104 | 112 => chdlc(t, cx, out),
        51 => pppoe_session(t, cx, out),
        105 => wlan::ieee80211(t, wlan::Phdr::default(), cx, out),
        127 => wlan::radiotap(t, cx, out),
        192 => wlan::ppi(t, cx, out),
        163 => wlan::avs(t, cx, out),
        119 => wlan::prism(t, cx, out),
        178 => juniper_ether(t, cx, out),
        242 => {
            // IP over InfiniBand (libpcap's pseudo-header): 20-byte source and destination
            // hardware addresses, then an ethertype and 2 reserved bytes (packet-ipoib.c).
            if let (Some(et), Some(rest)) = (t.be16(40), t.at(44)) {
                ethertype(et, rest, cx, out);
            }
        }
        other => return Err(UnsupportedLink(other)),
    }
    Ok(())
}

/// Ethernet II or 802.3 (packet-eth.c `dissect_eth_common`).
pub(crate) fn ethernet(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let Some(et) = t.be16(12) else { return };
    // Cisco FabricPath (tshark's "eth" heuristic, tried before the type): a 16-byte
    // header (20 with an 802.1ad/Q tag before its type 0x8903), an Ethernet frame, an FCS.
    let fp = match et {
        0x8903 => 16,
        0x88A8 | 0x8100 if t.be16(16) == Some(0x8903) => 20,
        _ => 0,
    };
    if fp > 0 {
        if let (Some(cx), Some(inner)) = (cx.deeper(), t.at(fp)) {
            if inner.rep >= 4 {
                ethernet(inner.limit(inner.rep - 4), cx, out);
            }
        }
        return;
    }
    let Some(rest) = t.at(14) else { return };
    if et > 1500 {
        if et >= 1536 {
            ethertype(et, rest, cx, out);
        }
        return; // 1501..=1535: "invalid length/type"
    }
    // Cisco ISL frames (01-00-0C-00-00 or 0C-00-0C-00-00) and Cisco's Vegas type 0.
    let b = t.b;
    if matches!(b[0], 0x01 | 0x0C) && b[1..5] == [0x00, 0x0C, 0x00, 0x00] || et == 0 {
        return;
    }
    ieee802_3(et, rest, cx, out);
}

/// The payload of an 802.3 length field (packet-ieee8023.c): LLC unless it starts with
/// 0xFFFF (Novell raw IPX), cut to the length.
fn ieee802_3(len: u16, rest: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    if rest.be16(0) == Some(0xFFFF) {
        return;
    }
    llc(rest.limit(len as usize), cx, out);
}

/// The EtherType table (packet-ethertype.c's lookup), for the types that lead to TCP.
pub(crate) fn ethertype(et: u16, t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    match et {
        0x0800 => ip::ip_any(t, cx, out),
        0x86DD => ip::ipv6(t, cx, out),
        0x8100 | 0x9100 => vlan(t, cx, out),
        0x88A8 => ieee8021ad(t, cx, out),
        0x8847 | 0x8848 => mpls(t, cx, out),
        0x8864 => pppoe_session(t, cx, out),
        0x6558 => {
            if let Some(cx) = cx.deeper() {
                ethernet(t, cx, out)
            }
        }
        _ => {}
    }
}

/// An 802.1Q tag (and tshark's default QinQ type 0x9100): TCI, then a type or a length.
fn vlan(t: Tvb, mut cx: Ctx, out: &mut Vec<TcpHeader>) {
    cx.vlan_tags += 1;
    if cx.vlan_tags > MAX_VLAN_TAGS {
        return;
    }
    let Some(et) = t.be16(2) else { return };
    let Some(rest) = t.at(4) else { return };
    if et <= 1500 {
        ieee802_3(et, rest, cx, out);
    } else {
        ethertype(et, rest, cx, out);
    }
}

/// An 802.1ad service tag: two 0x88a8 tags in a row are read as one S/C pair; 802.1ah
/// (0x88e7) is not followed.
fn ieee8021ad(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let Some(et) = t.be16(2) else { return };
    match et {
        0x88E7 => {}
        0x88A8 => {
            if let (Some(inner), Some(rest)) = (t.be16(6), t.at(8)) {
                ethertype(inner, rest, cx, out);
            }
        }
        _ => {
            if let Some(rest) = t.at(4) {
                ethertype(et, rest, cx, out);
            }
        }
    }
}

/// An MPLS label stack; after the bottom label, IPv4 or IPv6 by the first nibble, as
/// tshark guesses when no label is bound to a protocol (BCP 4928).
pub(crate) fn mpls(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let Some(cx) = cx.deeper() else { return };
    let mut off = 0;
    while off < t.rep {
        let Some(shim) = t.be32(off) else { return };
        off += 4;
        let (label, bos) = (shim >> 12, shim & 0x100 != 0);
        if bos {
            if label == 13 {
                return; // GAL: an associated channel follows, not a packet
            }
            break;
        }
    }
    let Some(rest) = t.at(off) else { return };
    match rest.u8(0).map(|b| b >> 4) {
        Some(4) => ip::ip_any(rest, cx, out),
        Some(6) => ip::ipv6(rest, cx, out),
        _ => {} // 1: pseudowire channel; 0: Ethernet pseudowire (not decoded, see mod.rs)
    }
}

/// IEEE 802.2 LLC (packet-llc.c): SNAP with an EtherType OUI, or SAP 0x06 (IP).
pub(crate) fn llc(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let (Some(dsap), Some(ssap), Some(c)) = (t.u8(0), t.u8(1), t.u8(2)) else {
        return;
    };
    // The control field: one byte for U frames, two for I and S frames (extended).
    let clen = if c & 3 == 3 { 1 } else { 2 };
    if clen == 2 && t.u8(3).is_none() {
        return;
    }
    let information = c & 1 == 0 || c == 0x03;
    if dsap == 0xAA && ssap == 0xAA {
        let off = 2 + clen;
        let (Some(oui), Some(pid)) = (t.be32(off).map(|x| x >> 8), t.be16(off + 3)) else {
            return;
        };
        if matches!(oui, 0x000000 | 0x0000F8) && information {
            if let Some(rest) = t.at(off + 5) {
                ethertype(pid, rest, cx, out);
            }
        }
    } else if dsap == 0x06 && information {
        if let Some(rest) = t.at(2 + clen).filter(|r| r.rep > 0) {
            ip::ip_any(rest, cx, out);
        }
    }
}

/// A PPPoE session frame (0x8864, or link type 51): 6 bytes, then PPP cut to the
/// payload length.
fn pppoe_session(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let Some(len) = t.be16(4) else { return };
    let Some(rest) = t.at(6) else { return };
    ppp(rest.limit(len as usize), cx, out);
}

/// PPP from its protocol field (packet-ppp.c `dissect_ppp_common`): one byte when its low
/// bit is set (protocol-field compression), else two.
fn ppp(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let Some(cx) = cx.deeper() else { return };
    let Some(b0) = t.u8(0) else { return };
    let (proto, plen) = if b0 & 1 != 0 {
        (b0 as u16, 1)
    } else {
        let Some(p) = t.be16(0) else { return };
        (p, 2)
    };
    let Some(rest) = t.at(plen) else { return };
    match proto {
        0x0021 | 0x0800 => ip::ip_any(rest, cx, out),
        0x0057 | 0x86DD => ip::ipv6(rest, cx, out),
        0x0281 | 0x0283 => mpls(rest, cx, out),
        _ => {}
    }
}

/// PPP in HDLC-like framing (link types 9 and 50, `ppp_hdlc`): Cisco HDLC when the first
/// byte is a Cisco address, the 0xFF 0x03 address and control skipped when present.
pub(crate) fn ppp_hdlc(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    match t.u8(0) {
        Some(0x0F | 0x8F) => chdlc(t, cx, out),
        Some(0xFF) => {
            if let Some(rest) = t.at(2) {
                ppp(rest, cx, out)
            }
        }
        Some(_) => ppp(t, cx, out),
        None => {}
    }
}

/// Cisco HDLC (104, 112): address, control, then an EtherType.
fn chdlc(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let Some(proto) = t.be16(2) else { return };
    let Some(rest) = t.at(4) else { return };
    match proto {
        0x0800 => ip::ip_any(rest, cx, out),
        0x86DD => ip::ipv6(rest, cx, out),
        0x8847 | 0x8848 => mpls(rest, cx, out),
        0x6558 => {
            if let Some(cx) = cx.deeper() {
                ethernet(rest, cx, out)
            }
        }
        _ => {}
    }
}

/// The BSD address families tshark's null.type table knows.
fn null_family(family: u32, t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    match family {
        2 => ip::ip_any(t, cx, out),
        24 | 28 | 30 => ip::ipv6(t, cx, out),
        _ => {}
    }
}

/// BSD loopback (0): a 4-byte family in the capturing machine's byte order. tshark reads
/// it in its own (here: a little-endian machine's), then guesses: a value with high bits
/// set is byte-swapped, IRIX's 16-bit families are recognised, and a value above 1500 is
/// an EtherType.
fn null(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    if t.be16(0) == Some(0xFF03) {
        return ppp_hdlc(t, cx, out);
    }
    let Some(mut h) = t.le32(0) else { return };
    if h & 0xFFFF_0000 != 0 {
        if h & 0xFF00_0000 == 0 && h & 0x00FF_0000 < 0x0006_0000 {
            h >>= 16;
        } else {
            h = h.swap_bytes();
        }
    } else if h & 0xFF == 0 && h & 0xFF00 < 0x0600 {
        h = ((h & 0xFFFF) as u16).swap_bytes() as u32;
    }
    let Some(rest) = t.at(4) else { return };
    if h > 1500 {
        ethertype(h as u16, rest, cx, out);
    } else {
        null_family(h, rest, cx, out);
    }
}

/// OpenBSD loopback (108): the family in network byte order.
fn loop_(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let (Some(family), Some(rest)) = (t.be32(0), t.at(4)) else {
        return;
    };
    null_family(family, rest, cx, out);
}

/// Raw IP (101, 12, 14; packet-raw.c): IPv4 or IPv6 by the version nibble, after the
/// Linux PPP and ISDN drivers' leftovers tshark looks for.
fn raw(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let (Some(w0), Some(w6)) = (t.be16(0), t.be16(6)) else {
        return; // tshark reads both words before deciding
    };
    if w0 == 0xFF03 {
        ppp_hdlc(t, cx, out);
    } else if w6 == 0xFF03 {
        if let Some(rest) = t.at(6) {
            ppp_hdlc(rest, cx, out);
        }
    } else if t.be16(1) == Some(0xFF03) {
        if let Some(rest) = t.at(1) {
            ppp_hdlc(rest, cx, out);
        }
    } else if t.b.get(..10) == Some(&[0; 10][..]) {
        if let Some(rest) = t.at(10) {
            ip::ip_any(rest, cx, out);
        }
    } else {
        match t.b[0] >> 4 {
            4 => ip::ipv4(t, cx, out),
            6 => ip::ipv6(t, cx, out),
            _ => {}
        }
    }
}

/// Linux cooked capture: SLL (113: 16 bytes, hatype at 2, protocol at 14) or SLL2 (276:
/// 20 bytes, protocol at 0, hatype at 8). A protocol up to 1536 is Linux's own number
/// (802.3, Ethernet, LLC, PPP), above it an EtherType, or a GRE type on a GRE device.
fn sll(t: Tvb, hlen: usize, hatype_at: usize, proto_at: usize, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let (Some(hatype), Some(proto)) = (t.be16(hatype_at), t.be16(proto_at)) else {
        return;
    };
    if hatype == 824 || t.b.len() < hlen {
        return; // netlink; or the header was not captured whole
    }
    let Some(rest) = t.at(hlen) else { return };
    if proto <= 1536 {
        match (hatype, proto) {
            (803, _) => wlan::radiotap(rest, cx, out),
            (_, 3) => {
                if let Some(cx) = cx.deeper() {
                    ethernet(rest, cx, out)
                }
            }
            (_, 4) => llc(rest, cx, out),
            (_, 7) => ppp_hdlc(rest, cx, out),
            _ => {}
        }
    } else if hatype == 778 {
        ip::gre_proto(proto, rest, cx, out);
    } else {
        ethertype(proto, rest, cx, out);
    }
}

/// Juniper Ethernet (178, a Juniper router's own capture header, packet-juniper.c): the
/// magic "MGC", a flags byte and, with the extensions flag (0x80), a 2-byte length of
/// TLVs after it; then the Ethernet frame. Without the magic (older JUNOS) the frame
/// starts at once. A frame whose layer-2 header was stripped (flag 0x02) carries a
/// Juniper payload code instead: 2 IPv4, 6 IPv6 (others, e.g. MPLS, are not decoded).
fn juniper_ether(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let (Some(magic), Some(flags)) = (t.be16(0).zip(t.u8(2)), t.u8(3)) else {
        return;
    };
    if magic != (0x4d47, 0x43) {
        ethernet(t, cx, out);
        return;
    }
    let hdr = if flags & 0x80 != 0 {
        match t.be16(4) {
            Some(ext) => 6 + ext as usize,
            None => return,
        }
    } else {
        4
    };
    if flags & 0x02 != 0 {
        // The layer-2 header was stripped: a payload code (host order) says what follows.
        let Some(code) = t.b.get(hdr..hdr + 4) else { return };
        let (code, at) = match u32::from_le_bytes([code[0], code[1], code[2], code[3]]) {
            0xa248 => (2, hdr + 8), // 4 unknown bytes, then IPv4
            c => (c, hdr + 4),
        };
        if let Some(rest) = t.at(at) {
            match code {
                2 => ip::ipv4(rest, cx, out),
                6 => ip::ipv6(rest, cx, out),
                _ => {}
            }
        }
        return;
    }
    if let Some(rest) = t.at(hdr) {
        ethernet(rest, cx, out);
    }
}
