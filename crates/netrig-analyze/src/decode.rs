//! From a captured frame to the TCP header fields the analysis needs.
//!
//! Link types: Ethernet (1, with 802.1Q/802.1ad tags), BSD loopback (0), raw IP (101,
//! 228 IPv4, 229 IPv6), Linux cooked SLL (113) and SLL2 (276). IPv4 and IPv6 (with its
//! hop-by-hop, routing and destination-options headers). As Wireshark (R0.2/R0.3): IP
//! fragments are skipped (Wireshark reassembles them; TCP sets DF so they are rare),
//! the segment length comes from the IP length field, not the captured length (padding
//! and snaplen change nothing), and a frame too short to hold the IP header and the TCP
//! header up to its window field is not a TCP segment.

/// An address: IPv4 as the IPv4-mapped IPv6 form (::ffff:a.b.c.d).
pub type Addr = [u8; 16];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpHeader {
    pub src: Addr,
    pub dst: Addr,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    /// The 12 flag bits (TH_MASK).
    pub flags: u16,
    /// Raw, unscaled.
    pub win: u16,
    pub hlen: u32,
    /// The TCP length from the IP header (header + payload).
    pub reported_len: u32,
    /// The window-scale option's shift, if the captured header carries one.
    pub wscale: Option<u8>,
    /// Whether Wireshark gets as far as showing the analysis: it does not when the
    /// captured bytes end inside the fixed header or inside an option it reads
    /// (dissect_tcp throws after analysing the segment; see [`options`]).
    pub shown: bool,
}

impl TcpHeader {
    /// Wireshark's `th_seglen`; None when the TCP length is below the header length.
    pub fn seglen(&self) -> Option<u32> {
        self.reported_len.checked_sub(self.hlen)
    }
}

pub const FIN: u16 = 0x01;
pub const SYN: u16 = 0x02;
pub const RST: u16 = 0x04;
pub const ACK: u16 = 0x10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnsupportedLink(pub u32);

pub fn supported_link(link_type: u32) -> bool {
    matches!(link_type, 0 | 1 | 101 | 113 | 228 | 229 | 276)
}

/// The TCP header of a frame, or None if the frame carries no analysable TCP segment.
pub fn decode(link_type: u32, data: &[u8], orig_len: u32) -> Result<Option<TcpHeader>, UnsupportedLink> {
    let (ethertype, off) = match link_type {
        1 => {
            if data.len() < 14 {
                return Ok(None);
            }
            let mut et = u16::from_be_bytes([data[12], data[13]]);
            let mut off = 14;
            while matches!(et, 0x8100 | 0x88A8 | 0x9100) {
                if data.len() < off + 4 {
                    return Ok(None);
                }
                et = u16::from_be_bytes([data[off + 2], data[off + 3]]);
                off += 4;
            }
            (et, off)
        }
        0 => {
            if data.len() < 4 {
                return Ok(None);
            }
            let fam = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
            let fam = if fam > 0xFFFF { fam.swap_bytes() } else { fam };
            match fam {
                2 => (0x0800, 4),
                24 | 28 | 30 => (0x86DD, 4),
                _ => return Ok(None),
            }
        }
        101 => match data.first().map(|b| b >> 4) {
            Some(4) => (0x0800, 0),
            Some(6) => (0x86DD, 0),
            _ => return Ok(None),
        },
        228 => (0x0800, 0),
        229 => (0x86DD, 0),
        113 => {
            if data.len() < 16 {
                return Ok(None);
            }
            (u16::from_be_bytes([data[14], data[15]]), 16)
        }
        276 => {
            if data.len() < 20 {
                return Ok(None);
            }
            (u16::from_be_bytes([data[0], data[1]]), 20)
        }
        other => return Err(UnsupportedLink(other)),
    };
    // The bytes the frame had on the wire after the link header.
    let wire_rest = (orig_len as usize).saturating_sub(off);
    let ip = &data[off.min(data.len())..];
    Ok(match ethertype {
        0x0800 => ipv4(ip, wire_rest),
        0x86DD => ipv6(ip, wire_rest),
        _ => None,
    })
}

fn ipv4(ip: &[u8], wire_rest: usize) -> Option<TcpHeader> {
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return None;
    }
    let ihl = (ip[0] & 0x0F) as usize * 4;
    if ihl < 20 || ip.len() < ihl {
        return None;
    }
    let mut total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
    if total == 0 || total > wire_rest {
        // TSO leaves the length field at 0, and a length beyond the frame cannot hold:
        // Wireshark then takes the bytes the frame had on the wire.
        total = wire_rest;
    }
    if total < ihl || ip[9] != 6 {
        return None;
    }
    let frag = u16::from_be_bytes([ip[6], ip[7]]);
    if frag & 0x3FFF != 0 {
        return None; // MF set or a non-zero offset
    }
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src[10] = 0xFF;
    src[11] = 0xFF;
    dst[10] = 0xFF;
    dst[11] = 0xFF;
    src[12..].copy_from_slice(&ip[12..16]);
    dst[12..].copy_from_slice(&ip[16..20]);
    tcp(&ip[ihl..], src, dst, (total - ihl) as u32)
}

fn ipv6(ip: &[u8], wire_rest: usize) -> Option<TcpHeader> {
    if ip.len() < 40 || ip[0] >> 4 != 6 {
        return None;
    }
    let mut left = u16::from_be_bytes([ip[4], ip[5]]) as usize;
    let on_wire = wire_rest.saturating_sub(40);
    if left == 0 || left > on_wire {
        left = on_wire; // as IPv4's length above
    }
    let mut next = ip[6];
    let mut off = 40;
    loop {
        match next {
            6 => break,
            0 | 43 | 60 => {
                if ip.len() < off + 8 {
                    return None;
                }
                let l = (ip[off + 1] as usize + 1) * 8;
                if left < l {
                    return None;
                }
                next = ip[off];
                off += l;
                left -= l;
            }
            _ => return None, // fragments (44) and everything else
        }
    }
    let src: Addr = ip[8..24].try_into().ok()?;
    let dst: Addr = ip[24..40].try_into().ok()?;
    tcp(ip.get(off..)?, src, dst, left as u32)
}

fn tcp(t: &[u8], src: Addr, dst: Addr, reported_len: u32) -> Option<TcpHeader> {
    // Wireshark's TCP sees only the IP length's bytes: link-layer padding after them
    // is not header.
    let t = &t[..t.len().min(reported_len as usize)];
    if t.len() < 16 {
        return None;
    }
    let hlen = (t[12] >> 4) as u32 * 4;
    // Wireshark reads the checksum and urgent pointer before the options: a header
    // captured short of 20 bytes throws there, before any option counts.
    let (wscale, whole) = if t.len() < 20 {
        (None, false)
    } else if hlen > 20 {
        options(t.get(20..).unwrap_or_default(), hlen as usize - 20)
    } else {
        (None, true)
    };
    Some(TcpHeader {
        src,
        dst,
        sport: u16::from_be_bytes([t[0], t[1]]),
        dport: u16::from_be_bytes([t[2], t[3]]),
        seq: u32::from_be_bytes([t[4], t[5], t[6], t[7]]),
        ack: u32::from_be_bytes([t[8], t[9], t[10], t[11]]),
        flags: u16::from_be_bytes([t[12], t[13]]) & 0x0FFF,
        win: u16::from_be_bytes([t[14], t[15]]),
        hlen,
        reported_len,
        wscale,
        shown: whole,
    })
}

/// Walks the options as Wireshark's `tcp_dissect_options` does, over `len` bytes of
/// which `opts` were captured: stops quietly at a malformed length or at a non-zero
/// byte after EOL, and "throws" (returns false) when it must read a byte that was not
/// captured, including any byte of an option it hands to that option's dissector. The
/// window-scale shift counts only from a whole option of length 3 (capped at 14).
fn options(opts: &[u8], len: usize) -> (Option<u8>, bool) {
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

/// Text form of an address (dotted quad for IPv4).
pub fn addr_to_string(a: &Addr) -> String {
    if a[..10] == [0; 10] && a[10] == 0xFF && a[11] == 0xFF {
        std::net::Ipv4Addr::new(a[12], a[13], a[14], a[15]).to_string()
    } else {
        std::net::Ipv6Addr::from(*a).to_string()
    }
}

#[cfg(test)]
pub(crate) mod build {
    //! Frames built in tests: Ethernet + IPv4 + TCP with a payload of `len` bytes.
    pub fn ipv4_tcp(
        src: [u8; 4],
        dst: [u8; 4],
        sport: u16,
        dport: u16,
        seq: u32,
        ack: u32,
        flags: u16,
        win: u16,
        len: usize,
    ) -> Vec<u8> {
        let mut v = vec![2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 0x08, 0x00];
        let total = (40 + len) as u16;
        v.extend([0x45, 0]);
        v.extend(total.to_be_bytes());
        v.extend([0, 0, 0x40, 0, 64, 6, 0, 0]);
        v.extend(src);
        v.extend(dst);
        v.extend(sport.to_be_bytes());
        v.extend(dport.to_be_bytes());
        v.extend(seq.to_be_bytes());
        v.extend(ack.to_be_bytes());
        v.extend([0x50, flags as u8]);
        v.extend(win.to_be_bytes());
        v.extend([0, 0, 0, 0]);
        v.extend(std::iter::repeat(b'x').take(len));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::build::ipv4_tcp;
    use super::*;

    #[test]
    fn ethernet_ipv4_tcp_with_padding_uses_the_ip_length() {
        let mut f = ipv4_tcp([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 7, 9, ACK, 512, 0);
        f.extend([0; 6]); // Ethernet padding to 60 bytes
        let h = decode(1, &f, f.len() as u32).unwrap().unwrap();
        assert_eq!(
            (h.sport, h.dport, h.seq, h.ack, h.win, h.seglen()),
            (1000, 80, 7, 9, 512, Some(0))
        );
        assert_eq!(addr_to_string(&h.src), "10.0.0.1");
    }

    #[test]
    fn snaplen_truncation_keeps_the_segment_length() {
        let f = ipv4_tcp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 0, 0, ACK, 1, 1000);
        let h = decode(1, &f[..68], f.len() as u32).unwrap().unwrap();
        assert_eq!(h.seglen(), Some(1000));
    }

    #[test]
    fn vlan_sll_sll2_and_raw() {
        let f = ipv4_tcp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 3, 4, ACK, 5, 10);
        let mut vlan = f[..12].to_vec();
        vlan.extend([0x81, 0x00, 0, 5]);
        vlan.extend(&f[12..]);
        let mut sll = vec![0; 14];
        sll.extend([0x08, 0x00]);
        sll.extend(&f[14..]);
        let mut sll2 = vec![0x08, 0x00];
        sll2.extend([0; 18]);
        sll2.extend(&f[14..]);
        for (lt, d) in [
            (1, &vlan[..]),
            (113, &sll[..]),
            (276, &sll2[..]),
            (101, &f[14..]),
            (228, &f[14..]),
        ] {
            let h = decode(lt, d, d.len() as u32).unwrap().expect("tcp");
            assert_eq!((h.seq, h.seglen()), (3, Some(10)), "link type {lt}");
        }
        assert_eq!(decode(147, &f, 1), Err(UnsupportedLink(147)));
    }

    #[test]
    fn fragments_and_short_headers_are_not_segments() {
        let mut f = ipv4_tcp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 3, 4, ACK, 5, 10);
        f[20] = 0x20; // MF
        assert_eq!(decode(1, &f, f.len() as u32).unwrap(), None);
        let f = ipv4_tcp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 3, 4, ACK, 5, 10);
        assert_eq!(decode(1, &f[..14 + 20 + 10], 100).unwrap(), None);
    }

    #[test]
    fn options_are_walked_as_wireshark_walks_them() {
        // MSS, NOP, window scale 7, SACK-permitted, timestamps: 20 bytes.
        let o = [2, 4, 5, 0xb4, 1, 3, 3, 7, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2];
        assert_eq!(options(&o, 20), (Some(7), true));
        // Captured up to the window scale: it counts, and the cut timestamps throw.
        assert_eq!(options(&o[..10], 20), (Some(7), false));
        // Cut inside the window scale option itself: neither.
        assert_eq!(options(&o[..7], 20), (None, false));
        // A shift above 14 is taken as 14; a non-zero byte after EOL ends the walk.
        assert_eq!(options(&[3, 3, 20, 0, 9, 9, 9, 9], 8), (Some(14), true));
        // A length past the header's end stops quietly, before any read past it.
        assert_eq!(options(&[1, 8, 40], 12), (None, true));
        // A whole-header check: 20 captured bytes of a 32-byte header is not shown.
        let f = ipv4_tcp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 3, 4, ACK, 5, 0);
        let mut g = f.clone();
        g[14 + 20 + 12] = 0x80; // data offset 32
        g.extend([1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
        g[16..18].copy_from_slice(&64u16.to_be_bytes());
        let h = decode(1, &g, g.len() as u32).unwrap().unwrap();
        assert!(h.shown);
        let h = decode(1, &g[..54], g.len() as u32).unwrap().unwrap();
        assert!(!h.shown);
        let h = decode(1, &g[..50], g.len() as u32).unwrap().unwrap();
        assert!(!h.shown, "the checksum and urgent pointer were not captured");
    }

    #[test]
    fn an_ip_length_beyond_the_frame_gives_way_to_the_frame() {
        let mut f = ipv4_tcp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 3, 4, ACK, 5, 10);
        f[16..18].copy_from_slice(&4148u16.to_be_bytes());
        let h = decode(1, &f, f.len() as u32).unwrap().unwrap();
        assert_eq!(h.seglen(), Some(10));
    }
}
