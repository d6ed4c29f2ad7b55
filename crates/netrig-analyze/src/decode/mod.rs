//! From a captured frame to the TCP headers the analysis needs, decoding what tshark
//! 4.0 decodes and nothing it does not: wherever tshark dissects a TCP segment, it is
//! found here with the same addresses, ports and segment length; wherever tshark stops
//! (an unknown protocol, a heuristic that says no, bytes not captured), so does this.
//!
//! Link types (`link`, `wlan`): Ethernet 1 (802.1Q and 0x9100 tags up to 20, 802.1ad
//! 0x88a8, MPLS 0x8847/0x8848 with IPv4/IPv6 guessed from the first nibble after the
//! bottom label, 802.3 length frames with LLC/SNAP or SAP 0x06, PPPoE session 0x8864,
//! transparent Ethernet 0x6558); raw IP 101 and 12, 14 (as tshark's pcap reader maps them
//! on Linux, with the Linux PPP/ISDN oddities of its raw dissector), 228, 229; Linux
//! cooked SLL 113 and SLL2 276 (Ethernet, LLC, PPP, GRE and radiotap payloads); IP over
//! InfiniBand 242; Juniper Ethernet 178 (its MGC header and extensions); BSD null
//! 0 (the family read in a little-endian machine's order, then tshark's byte-swap and
//! IRIX guesses, as tshark on x86 reads it) and OpenBSD loop 108 (network order); PPP 9
//! and 50 (HDLC address/control optional, protocol-field compression, Cisco HDLC when
//! the first byte says so), Cisco HDLC 104 and 112, PPPoE 51; IEEE 802.11 105 data frames
//! (QoS, four addresses, HT control, mesh control, A-MSDU, LLC/SNAP and tshark's guesses
//! for bare Ethernet and EtherType payloads), alone or behind radiotap 127 (its length and
//! data-pad flag), PPI 192 (any inner link type), AVS 163 and Prism 119. Cisco
//! FabricPath frames (tshark's Ethernet heuristic) are followed to the frame inside.
//!
//! Tunnels and encapsulations (`ip`): IPv4 and IPv6 (hop-by-hop, routing, destination
//! options, AH and atomic-fragment headers; jumbograms) in any order and nesting: IP-in-IP
//! (4), IPv6-in-IP (41), GRE (47; checksum, key, sequence, routing and PPTP's ack;
//! IPv4, IPv6, transparent Ethernet 0x6558, MPLS and PPP payloads), MPLS-in-IP (137), and
//! over UDP as tshark picks the port (the lower port first; a lower port tshark gives
//! to another protocol wins): VXLAN 4789, VXLAN-GPE 4790, Geneve 6081, GTP 2152 and 2123
//! (G-PDU with its sequence, N-PDU and extension headers; IPv4, IPv6 or Ethernet guessed
//! as tshark guesses), L2TPv2 1701 (PPP data messages), GRE-in-UDP 4754, MPLS-in-UDP
//! 6635. Linux's old VXLAN port 8472 is not decoded: tshark registers only 4789. At most
//! `MAX_DEPTH` network or link headers are followed in one frame.
//!
//! ICMP and ICMPv6 errors (types 3, 4, 11, 12 and 1-4) carry the start of the datagram
//! that caused them; tshark dissects its TCP header with `in_error_pkt` set: it finds or
//! makes the TCP conversation (a stream index, a SYN with a new ISN still starts a new
//! one, a window-scale option still counts) but computes no segment length, so no
//! sequence analysis runs and no `tcp.analysis.*` flag or ack_rtt can match such a frame
//! (packet-tcp.c: `th_have_seglen` is FALSE). Such a header is returned with
//! `have_seglen` false, and so is a first IPv4 fragment whose payload was not all
//! captured (tshark cannot reassemble it and dissects it as `pinfo->fragmented`).
//!
//! As Wireshark (R0.2/R0.3): the segment length comes from the IP length field, cut to
//! the bytes the frame had on the wire after the IP header (not the captured length:
//! padding and snaplen change nothing), and a TCP header is read only when its first 16
//! bytes (up to the window) were captured.
//!
//! Deliberately not decoded, where tshark would find TCP: IP and 802.11 fragments that
//! tshark reassembles (the segment would appear in the frame that completes them), PPI
//! A-MPDU aggregates (reassembled across frames), MPLS payloads whose first nibble is 0
//! (tshark's Ethernet-pseudowire guess depends on its manufacturer database), ERSPAN,
//! ESP and WireGuard (tshark decrypts them only with keys), L2TPv3 sessions, 802.1ah,
//! Cisco ISL, VJ-compressed PPP, ICMPv6 redirects, link types such as Juniper's and IP
//! over InfiniBand (counted as undecoded), and any protocol tshark reaches only by a
//! heuristic or a conversation set up by another protocol. Where tshark stops at an
//! exception, so does this, except in an A-MSDU: tshark drops the subframes after one
//! that throws, every subframe is read here.
//!
//! How this was checked: each unit test's frame, and 150 random mutations of each, and
//! every frame of 1,065 real-world captures (tcpdump's, Wireshark's, nDPI's, dpkt's,
//! libpcap's and tcpflow's test files) decoded beside tshark 4.0.17 (a TCP stream or not,
//! and tcp.len, per frame): they agree but for the cases above.
//! Protected (encrypted) 802.11 frames are not decoded, as tshark without keys does not.

mod ip;
mod link;
mod names;
mod wlan;

pub use names::link_type_name;

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
    /// False inside an ICMP error or an unreassembled first IP fragment: tshark computes
    /// no segment length there (`th_have_seglen`), so the stream is found or made but no
    /// sequence analysis runs.
    pub have_seglen: bool,
    /// Whether Wireshark gets as far as showing the analysis: it does not when the
    /// captured bytes end inside the fixed header or inside an option it reads
    /// (dissect_tcp throws after analysing the segment; see `ip::options`).
    pub shown: bool,
}

impl TcpHeader {
    /// Wireshark's `th_seglen`; None when tshark has none (the TCP length is below the
    /// header length, or `have_seglen` is false).
    pub fn seglen(&self) -> Option<u32> {
        if !self.have_seglen {
            return None;
        }
        self.reported_len.checked_sub(self.hlen)
    }
}

pub const FIN: u16 = 0x01;
pub const SYN: u16 = 0x02;
pub const RST: u16 = 0x04;
pub const ACK: u16 = 0x10;

/// How many network or link headers one frame may stack (Ethernet, IP, PPP, MPLS and
/// 802.11 headers each count one; VLAN tags and MPLS labels do not).
pub const MAX_DEPTH: u8 = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnsupportedLink(pub u32);

/// The link types `decode` reads.
pub const LINK_TYPES: [u32; 22] = [
    0, 1, 9, 12, 14, 50, 51, 101, 104, 105, 108, 112, 113, 119, 127, 163, 178, 192, 228, 229, 242, 276,
];

pub fn supported_link(link_type: u32) -> bool {
    LINK_TYPES.contains(&link_type)
}

/// The bytes of one layer as tshark sees them: what was captured from here on, and how
/// many bytes the frame had on the wire from here on (a tvb's reported length).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tvb<'a> {
    pub b: &'a [u8],
    pub rep: usize,
}

impl<'a> Tvb<'a> {
    pub fn new(b: &'a [u8], rep: usize) -> Tvb<'a> {
        Tvb { b, rep }
    }

    /// The bytes from `off` on (`tvb_new_subset_remaining`); None past the reported end,
    /// where tshark throws.
    #[inline]
    pub fn at(self, off: usize) -> Option<Tvb<'a>> {
        if off > self.rep {
            return None;
        }
        Some(Tvb {
            b: self.b.get(off..).unwrap_or(&[]),
            rep: self.rep - off,
        })
    }

    /// At most `n` bytes (`set_actual_length`: shortens, never lengthens).
    #[inline]
    pub fn limit(self, n: usize) -> Tvb<'a> {
        if n >= self.rep {
            return self;
        }
        Tvb {
            b: &self.b[..self.b.len().min(n)],
            rep: n,
        }
    }

    #[inline]
    pub fn u8(&self, i: usize) -> Option<u8> {
        self.b.get(i).copied()
    }

    #[inline]
    pub fn be16(&self, i: usize) -> Option<u16> {
        Some(u16::from_be_bytes([*self.b.get(i)?, *self.b.get(i + 1)?]))
    }

    #[inline]
    pub fn le16(&self, i: usize) -> Option<u16> {
        Some(u16::from_le_bytes([*self.b.get(i)?, *self.b.get(i + 1)?]))
    }

    #[inline]
    pub fn be32(&self, i: usize) -> Option<u32> {
        let s = self.b.get(i..i + 4)?;
        Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }

    #[inline]
    pub fn le32(&self, i: usize) -> Option<u32> {
        let s = self.b.get(i..i + 4)?;
        Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
}

/// What travels down with the bytes: how deep the frame's headers go, and the pinfo
/// flags tshark's TCP dissector reads.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Ctx {
    pub depth: u8,
    pub vlan_tags: u8,
    pub in_error: bool,
    pub fragmented: bool,
}

impl Ctx {
    /// One header deeper; None past `MAX_DEPTH`.
    #[inline]
    pub fn deeper(self) -> Option<Ctx> {
        (self.depth < MAX_DEPTH).then_some(Ctx {
            depth: self.depth + 1,
            ..self
        })
    }
}

/// Every TCP header of the frame, in the order tshark dissects them, appended to `out`
/// (usually none or one; an 802.11 A-MSDU may hold several).
pub fn decode_all(
    link_type: u32,
    data: &[u8],
    orig_len: u32,
    out: &mut Vec<TcpHeader>,
) -> Result<(), UnsupportedLink> {
    link::link(link_type, Tvb::new(data, orig_len as usize), Ctx::default(), out)
}

/// The frame's first TCP header, or None if it carries no TCP segment tshark would see.
pub fn decode(link_type: u32, data: &[u8], orig_len: u32) -> Result<Option<TcpHeader>, UnsupportedLink> {
    let mut out = Vec::new();
    decode_all(link_type, data, orig_len, &mut out)?;
    Ok(out.first().copied())
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
pub(crate) mod build;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_tunnels;
#[cfg(test)]
mod tests_wlan;
