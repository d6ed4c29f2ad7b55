//! IEEE 802.11 data frames and the radio headers in front of them (radiotap, PPI, AVS,
//! Prism), as tshark 4.0 reads them (packet-ieee80211.c `dissect_ieee80211_common`,
//! packet-ieee80211-radiotap.c, packet-ppi.c, packet-ieee80211-wlancap.c,
//! packet-ieee80211-prism.c). Only unprotected data frames carry anything further;
//! tshark without keys shows a protected frame's body as data, and reassembles fragments
//! (not modelled here). An A-MSDU's subframes are all read here, where tshark stops at the
//! first that throws (a TCP header cut short, a malformed IP header): not modelled.

use super::{link, Ctx, TcpHeader, Tvb};

/// What a radio header tells the 802.11 dissector (tshark's `ieee_802_11_phdr`, the part
/// that matters here).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Phdr {
    /// The 802.11 header is padded to a multiple of 4 bytes (radiotap's data-pad flag).
    pub datapad: bool,
    /// The frame ends in a 4-byte FCS.
    pub fcs: bool,
}

/// An 802.11 frame; data frames go on to LLC (or what tshark guesses instead).
pub(crate) fn ieee80211(t: Tvb, ph: Phdr, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let Some(cx) = cx.deeper() else { return };
    let Some(fcf) = t.le16(0) else { return };
    if fcf & 3 != 0 || (fcf >> 2) & 3 != 2 {
        return; // protocol version 1 (802.11ah) or unknown; management, control, extension
    }
    let subtype = (fcf >> 4) & 0xF;
    let flags = (fcf >> 8) as u8;
    let ds = flags & 3; // ToDS 1, FromDS 2
    let mut hlen = if ds == 3 { 30 } else { 24 };
    let qos = subtype & 0x8 != 0;
    let mut qos_control = 0;
    if qos {
        let Some(q) = t.le16(hlen) else { return };
        qos_control = q;
        hlen += 2;
        if flags & 0x80 != 0 {
            hlen += 4; // HT control
        }
    }
    if ph.datapad {
        hlen = hlen.div_ceil(4) * 4;
    }
    // Mesh control: guessed from the byte after the header (and what follows it).
    if let Some(mesh_flags) = t.u8(hlen) {
        let mlen = 6 + 6 * (mesh_flags & 3) as usize;
        let plausible = (ds == 3 || ds == 2) && mesh_flags & !3 == 0 && mesh_flags & 3 != 3;
        let present = match t.le16(hlen + mlen) {
            Some(next) if t.b.len() >= hlen + mlen + 2 => plausible && next == 0xAAAA,
            _ => qos && plausible && qos_control & 0x0100 != 0,
        };
        if present {
            hlen += mlen;
        }
    }
    let Some(sc) = t.le16(22) else { return };
    if subtype & 0x4 != 0 {
        return; // null-function frames have no body
    }
    if flags & 0x40 != 0 || flags & 0x04 != 0 {
        // Protected; or a fragment with more to come, which tshark holds for reassembly.
        // The last fragment tshark reassembles with those before it (not modelled: its
        // payload is read alone here), and one with a fragment number but none before it
        // is dissected whole (reassemble.c's 802.11 hack), as here.
        return;
    }
    // The addresses tshark takes as the frame's source and destination.
    let (da, sa) = match ds {
        0 => (4, 10),
        2 => (4, 16),
        1 => (16, 10),
        _ => (16, 24),
    };
    let amsdu = qos && qos_control & 0x0080 != 0;
    let mut body = match t.at(hlen) {
        Some(b) => b,
        None => return,
    };
    if ph.fcs {
        if body.rep < 4 {
            return;
        }
        body = body.limit(body.rep - 4);
    }
    if amsdu && body.rep > 4 {
        amsdu_subframes(body, cx, out);
        return;
    }
    let (Some(o1), Some(o2)) = (body.u8(0), body.u8(1)) else {
        return link::llc(body, cx, out);
    };
    if o1 == 0xAA && o2 == 0xAA {
        return link::llc(body, cx, out);
    }
    let addr = |at: usize| t.b.get(at..at + 6);
    let bytes = |at: usize| body.b.get(at..at + 6);
    if bytes(6).is_some() && bytes(6) == addr(sa) || bytes(0).is_some() && bytes(0) == addr(da) {
        if let Some(cx) = cx.deeper() {
            link::ethernet(body, cx, out);
        }
    } else if o1 == 0xFF && o2 == 0xFF {
        // Novell raw IPX
    } else if o1 == 0 && o2 == 0 && body.b.len() >= 18 && bytes(6) == addr(da) && bytes(12) == addr(sa) {
        if let (Some(cx), Some(rest)) = (cx.deeper(), body.at(6)) {
            link::ethernet(rest, cx, out);
        }
    } else if o1 == 0 && o2 == 0 || u16::from_le_bytes([o1, o2]) == sc {
        if let Some(rest) = body.at(2) {
            link::llc(rest, cx, out);
        }
    } else {
        // EtherType protocol discrimination (802.11 OCB, IEEE 1609.3) when tshark knows
        // the type, else LLC. Of the types tshark knows, those that lead to TCP, and the
        // ones that would otherwise read as LLC SAP 0x06 (IP).
        match u16::from_be_bytes([o1, o2]) {
            et @ (0x0800 | 0x86DD | 0x8100 | 0x88A8 | 0x9100 | 0x8847 | 0x8848 | 0x8864 | 0x6558) => {
                if let Some(rest) = body.at(2) {
                    link::ethertype(et, rest, cx, out);
                }
            }
            0x0641 | 0x0643..=0x0645 => {}
            _ => link::llc(body, cx, out),
        }
    }
}

/// An A-MSDU: subframes of destination, source, a big-endian length and an LLC payload,
/// each padded to 4 bytes, while more than 14 bytes remain. As tshark's
/// `tvb_new_subset_length`, a subframe's length is believed even past the frame's end.
fn amsdu_subframes(body: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let mut off = 0;
    loop {
        let Some(len) = body.be16(off + 12) else { return };
        let (start, len) = (off + 14, len as usize);
        if start > body.b.len() {
            return;
        }
        let b = &body.b[start..];
        link::llc(Tvb::new(&b[..b.len().min(len)], len), cx, out);
        off = (start + len).div_ceil(4) * 4;
        if off >= body.rep || body.rep - off <= 14 {
            return;
        }
    }
}

/// Radiotap (127): its length, then 802.11; the flags field (when present) says whether
/// the 802.11 header is padded and the frame ends in an FCS.
pub(crate) fn radiotap(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let (Some(version), Some(len)) = (t.u8(0), t.le16(2)) else {
        return;
    };
    let len = len as usize;
    if len < 8 || t.b.len() < len {
        return; // too short to be one, or not captured whole (tshark copies it first)
    }
    let mut ph = Phdr::default();
    if version == 0 {
        if let Some(flags) = radiotap_flags(&t.b[..len]) {
            ph.datapad = flags & 0x20 != 0;
            ph.fcs = flags & 0x10 != 0;
        }
    }
    if let Some(rest) = t.at(len) {
        ieee80211(rest, ph, cx, out);
    }
}

/// The radiotap flags byte: bit 1 of the first presence word, after the TSFT (bit 0,
/// 8 bytes aligned to 8) when present; the fields follow every presence word. None when
/// tshark reads no field: a presence word naming both the radiotap and a vendor
/// namespace (bits 29 and 30) is "malformed".
fn radiotap_flags(h: &[u8]) -> Option<u8> {
    let word0 = u32::from_le_bytes(h.get(4..8)?.try_into().ok()?);
    let mut off = 8;
    let mut w = word0;
    loop {
        if w & 0x6000_0000 == 0x6000_0000 {
            return None;
        }
        if w & 0x8000_0000 == 0 {
            break;
        }
        w = u32::from_le_bytes(h.get(off..off + 4)?.try_into().ok()?);
        off += 4;
    }
    if word0 & 2 == 0 {
        return None;
    }
    if word0 & 1 != 0 {
        off = off.div_ceil(8) * 8 + 8;
    }
    h.get(off).copied()
}

/// PPI (192): its fields (802.11-Common's FCS flag, 802.11n's aggregate flag), then a
/// frame of the link type it names. An A-MPDU's frames are reassembled by tshark across
/// frames: not followed here.
pub(crate) fn ppi(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let (Some(flags), Some(total), Some(dlt)) = (t.u8(1), t.le16(2), t.le32(4)) else {
        return;
    };
    let mut left = total as i64 - 8;
    let mut off = 8usize;
    let mut ph = Phdr::default();
    let mut aggregate = false;
    while left > 0 {
        let (Some(kind), Some(dlen)) = (t.le16(off), t.le16(off + 2)) else {
            return;
        };
        let dlen = dlen as usize + 4;
        left -= dlen as i64;
        match (kind, dlen - 4) {
            (2, 20) => {
                let Some(f) = t.le16(off + 4 + 8) else { return };
                ph.fcs = f & 1 != 0;
            }
            (3, 12) | (4, 48) => {
                let Some(f) = t.le32(off + 4) else { return };
                aggregate |= f & 0x10 != 0;
            }
            _ => {}
        }
        off += dlen;
        if flags & 1 != 0 {
            off = off.div_ceil(4) * 4;
        }
    }
    if aggregate {
        return;
    }
    let Some(rest) = t.at(off) else { return };
    if dlt == 105 {
        ieee80211(rest, ph, cx, out);
    } else {
        let _ = link::link(dlt, rest, cx, out);
    }
}

/// AVS (163): a header whose length is its second big-endian word, then 802.11.
pub(crate) fn avs(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let Some(len) = t.be32(4) else { return };
    if let Some(rest) = t.at(len as usize) {
        ieee80211(rest, Phdr::default(), cx, out);
    }
}

/// Prism (119): an AVS header if its magic says so, else Prism's 144 bytes when the
/// message code is one (either byte order), else 802.11 with no radio header.
pub(crate) fn prism(t: Tvb, cx: Ctx, out: &mut Vec<TcpHeader>) {
    let Some(code) = t.be32(0) else { return };
    if matches!(code, 0x8021_1001 | 0x8021_1002) {
        return avs(t, cx, out);
    }
    let le = code.swap_bytes();
    if matches!(code, 0x44 | 0x41) || matches!(le, 0x44 | 0x41) {
        if t.b.len() >= 144 {
            if let Some(rest) = t.at(144) {
                ieee80211(rest, Phdr::default(), cx, out);
            }
        }
    } else {
        ieee80211(t, Phdr::default(), cx, out);
    }
}
