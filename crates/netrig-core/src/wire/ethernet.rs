//! Ethernet II frames as a user-space link emulator sees them: the payload's EtherType,
//! the IP ECN field, a flow hash for per-flow queueing, and the IP length.
//!
//! Understood: Ethernet II with at most one 802.1Q tag; IPv4 (options skipped by IHL);
//! IPv6's fixed header (extension headers are not followed); TCP, UDP and SCTP ports
//! when they sit directly after the IP header. Anything else (ARP included) is hashed by
//! EtherType and MAC addresses.
//!
//! Nothing here allocates, and nothing panics on short or malformed frames: [`inspect`]
//! returns what it could parse (an IP header it cannot check counts as no IP header, ECN
//! `NotEct`) and [`set_ecn_ce`] refuses what it cannot mark. Both accept exactly the same
//! IP headers, so `set_ecn_ce` succeeds exactly when `inspect` reports an ECN-capable
//! packet.

use crate::ecn::Ecn;

/// EtherTypes this module recognises.
pub mod ethertype {
    pub const IPV4: u16 = 0x0800;
    pub const ARP: u16 = 0x0806;
    /// An 802.1Q tag; the payload's own EtherType follows the tag.
    pub const VLAN: u16 = 0x8100;
    pub const IPV6: u16 = 0x86dd;
}

/// IP protocol numbers whose headers start with 16-bit source and destination ports.
mod proto {
    pub const TCP: u8 = 6;
    pub const UDP: u8 = 17;
    pub const SCTP: u8 = 132;
}

/// Every offset this module reads or writes. IP offsets count from the first byte of the
/// IP header, port offsets from the first byte of the transport header.
mod field {
    pub type Field = core::ops::Range<usize>;

    pub const ETH_MACS: Field = 0..12;
    pub const ETH_TYPE: Field = 12..14;
    pub const ETH_LEN: usize = 14;
    /// With one 802.1Q tag: TPID (0x8100) at 12..14, TCI at 14..16, then the EtherType.
    pub const VLAN_INNER_TYPE: Field = 16..18;
    pub const VLAN_ETH_LEN: usize = 18;

    pub const V4_VER_IHL: usize = 0;
    /// DSCP (6 bits) and ECN (2 bits); with the version/IHL byte it forms the first
    /// 16-bit word of the checksum.
    pub const V4_TOS: usize = 1;
    pub const V4_FIRST_WORD: Field = 0..2;
    pub const V4_TOTAL_LEN: Field = 2..4;
    pub const V4_FLAGS_FRAG: Field = 6..8;
    pub const V4_FRAG_OFFSET_MASK: u16 = 0x1fff;
    pub const V4_PROTO: usize = 9;
    pub const V4_CHECKSUM: Field = 10..12;
    pub const V4_ADDRS: Field = 12..20;
    pub const V4_MIN_LEN: usize = 20;

    /// Version (4 bits), traffic class (8 bits: DSCP then ECN), flow label (20 bits).
    pub const V6_VER_TC_FLOW: Field = 0..4;
    pub const V6_ECN_SHIFT: u32 = 20;
    pub const V6_FLOW_LABEL_MASK: u32 = 0x000f_ffff;
    pub const V6_PAYLOAD_LEN: Field = 4..6;
    pub const V6_NEXT_HEADER: usize = 6;
    pub const V6_ADDRS: Field = 8..40;
    pub const V6_LEN: usize = 40;

    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
}

/// The two ECN bits, as they sit at the bottom of IPv4's TOS byte and IPv6's traffic class.
const ECN_MASK: u8 = 0b11;
const ECN_CE: u8 = 0b11;

/// What the link needs to know about one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    /// The payload's EtherType, past an 802.1Q tag if there is one (0 if the frame is too
    /// short to have one).
    pub ethertype: u16,
    /// The IP header's ECN field; `NotEct` when there is no IP header that could be checked.
    pub ecn: Ecn,
    /// A stable hash of the 5-tuple (IP), or of the EtherType and MAC addresses (other).
    /// The two directions of a connection usually hash differently.
    pub flow: u64,
    /// The IP packet's length as its header states it (IPv4 total length; IPv6 40 plus
    /// the payload length), not checked against the frame.
    pub ip_len: Option<u32>,
}

/// Reads a frame without copying it. Never panics; see the module documentation for what
/// is understood.
///
/// IP flows hash source and destination addresses, the protocol and, for TCP, UDP and SCTP,
/// the ports. IPv4 fragments after the first carry no ports, so they hash like portless
/// packets of the same addresses and protocol. IPv6 mixes in the flow label only when it
/// found no ports (extension headers, other protocols): a sender may change the label of
/// a live connection (Linux does on timeouts), and that must not move the connection.
pub fn inspect(frame: &[u8]) -> FrameInfo {
    let Some((ethertype, ip_start)) = link_layer(frame) else {
        return FrameInfo {
            ethertype: 0,
            ecn: Ecn::NotEct,
            flow: link_flow(frame, 0),
            ip_len: None,
        };
    };
    let ip = &frame[ip_start..];
    let parsed = match ethertype {
        ethertype::IPV4 => Ipv4::new_checked(ip).map(|h| (h.ecn(), h.flow(), h.total_len())),
        ethertype::IPV6 => Ipv6::new_checked(ip).map(|h| (h.ecn(), h.flow(), h.total_len())),
        _ => None,
    };
    match parsed {
        Some((ecn, flow, ip_len)) => FrameInfo {
            ethertype,
            ecn,
            flow,
            ip_len: Some(ip_len),
        },
        None => FrameInfo {
            ethertype,
            ecn: Ecn::NotEct,
            flow: link_flow(frame, ethertype),
            ip_len: None,
        },
    }
}

/// Sets the IP header's ECN field to CE in place (updating the IPv4 header checksum
/// incrementally, RFC 1624 eqn. 3). False, with the frame untouched, if the frame is not
/// IPv4 or IPv6, its IP header is short or malformed, or the packet is not ECN-capable
/// (ECN field 00). A packet already marked CE stays as it is and gives true.
pub fn set_ecn_ce(frame: &mut [u8]) -> bool {
    let Some((ethertype, ip_start)) = link_layer(frame) else {
        return false;
    };
    let ip = &mut frame[ip_start..];
    match ethertype {
        ethertype::IPV4 => {
            if Ipv4::new_checked(ip).is_none() || ip[field::V4_TOS] & ECN_MASK == 0 {
                return false;
            }
            let old_word = be16(ip, field::V4_FIRST_WORD);
            ip[field::V4_TOS] |= ECN_CE;
            let new_word = be16(ip, field::V4_FIRST_WORD);
            let checksum = checksum_adjust(be16(ip, field::V4_CHECKSUM), old_word, new_word);
            ip[field::V4_CHECKSUM].copy_from_slice(&checksum.to_be_bytes());
            true
        }
        ethertype::IPV6 => {
            let Some(h) = Ipv6::new_checked(ip) else {
                return false;
            };
            if h.ecn_bits() == 0 {
                return false;
            }
            let word = h.first_word() | u32::from(ECN_CE) << field::V6_ECN_SHIFT;
            ip[field::V6_VER_TC_FLOW].copy_from_slice(&word.to_be_bytes());
            true
        }
        _ => false,
    }
}

/// The payload's EtherType and where the payload starts, past at most one 802.1Q tag;
/// None if the frame is too short to have an EtherType. A truncated tag is reported as
/// EtherType 0x8100 with nothing after it.
fn link_layer(frame: &[u8]) -> Option<(u16, usize)> {
    let outer = be16_at(frame, field::ETH_TYPE)?;
    Some(match (outer, be16_at(frame, field::VLAN_INNER_TYPE)) {
        (ethertype::VLAN, Some(inner)) => (inner, field::VLAN_ETH_LEN),
        (ethertype::VLAN, None) => (outer, frame.len()),
        _ => (outer, field::ETH_LEN),
    })
}

/// A checked IPv4 header: version 4, IHL at least 5, and the whole header (options
/// included) inside the frame. Holds the packet from the header to the end of the frame.
struct Ipv4<'a>(&'a [u8]);

impl<'a> Ipv4<'a> {
    fn new_checked(ip: &'a [u8]) -> Option<Ipv4<'a>> {
        let first = *ip.get(field::V4_VER_IHL)?;
        let header_len = usize::from(first & 0x0f) * 4;
        (first >> 4 == 4 && header_len >= field::V4_MIN_LEN && ip.len() >= header_len).then_some(Ipv4(ip))
    }

    fn header_len(&self) -> usize {
        usize::from(self.0[field::V4_VER_IHL] & 0x0f) * 4
    }

    fn ecn(&self) -> Ecn {
        ecn_from_bits(self.0[field::V4_TOS])
    }

    fn total_len(&self) -> u32 {
        u32::from(be16(self.0, field::V4_TOTAL_LEN))
    }

    /// The transport header and payload: up to the stated total length when that is
    /// plausible (Ethernet pads short packets), else to the end of the frame.
    fn payload(&self) -> &'a [u8] {
        let header_len = self.header_len();
        let total = self.total_len() as usize;
        let end = if total >= header_len {
            total.min(self.0.len())
        } else {
            self.0.len()
        };
        &self.0[header_len..end]
    }

    fn flow(&self) -> u64 {
        let protocol = self.0[field::V4_PROTO];
        let first_fragment = be16(self.0, field::V4_FLAGS_FRAG) & field::V4_FRAG_OFFSET_MASK == 0;
        let ports = if first_fragment {
            ports(protocol, self.payload())
        } else {
            None
        };
        let (src_port, dst_port) = ports.unwrap_or((0, 0));
        FlowHasher::new(4)
            .write(&self.0[field::V4_ADDRS])
            .write(&[protocol])
            .write(&src_port.to_be_bytes())
            .write(&dst_port.to_be_bytes())
            .finish()
    }
}

/// A checked IPv6 fixed header: version 6 and all 40 bytes inside the frame. Holds the
/// packet from the header to the end of the frame.
struct Ipv6<'a>(&'a [u8]);

impl<'a> Ipv6<'a> {
    fn new_checked(ip: &'a [u8]) -> Option<Ipv6<'a>> {
        (ip.len() >= field::V6_LEN && ip[0] >> 4 == 6).then_some(Ipv6(ip))
    }

    fn first_word(&self) -> u32 {
        u32::from_be_bytes(self.0[field::V6_VER_TC_FLOW].try_into().unwrap())
    }

    fn ecn_bits(&self) -> u8 {
        (self.first_word() >> field::V6_ECN_SHIFT) as u8 & ECN_MASK
    }

    fn ecn(&self) -> Ecn {
        ecn_from_bits(self.ecn_bits())
    }

    fn total_len(&self) -> u32 {
        field::V6_LEN as u32 + u32::from(be16(self.0, field::V6_PAYLOAD_LEN))
    }

    /// Whatever follows the fixed header, up to the stated payload length when that fits
    /// in the frame.
    fn payload(&self) -> &'a [u8] {
        let end = (self.total_len() as usize).min(self.0.len());
        &self.0[field::V6_LEN..end]
    }

    fn flow(&self) -> u64 {
        let next_header = self.0[field::V6_NEXT_HEADER];
        let hasher = FlowHasher::new(6)
            .write(&self.0[field::V6_ADDRS])
            .write(&[next_header]);
        match ports(next_header, self.payload()) {
            Some((src, dst)) => hasher
                .write(&src.to_be_bytes())
                .write(&dst.to_be_bytes())
                .finish(),
            None => {
                let label = self.first_word() & field::V6_FLOW_LABEL_MASK;
                hasher.write(&[0; 4]).write(&label.to_be_bytes()).finish()
            }
        }
    }
}

/// Source and destination ports, if `protocol` has them and they are all there.
fn ports(protocol: u8, transport: &[u8]) -> Option<(u16, u16)> {
    if !matches!(protocol, proto::TCP | proto::UDP | proto::SCTP) {
        return None;
    }
    Some((
        be16_at(transport, field::SRC_PORT)?,
        be16_at(transport, field::DST_PORT)?,
    ))
}

/// The flow of a frame without a usable IP header: its EtherType and whatever it has of
/// the two MAC addresses.
fn link_flow(frame: &[u8], ethertype: u16) -> u64 {
    let macs = frame.get(field::ETH_MACS).unwrap_or(frame);
    FlowHasher::new(0)
        .write(&ethertype.to_be_bytes())
        .write(macs)
        .finish()
}

fn ecn_from_bits(bits: u8) -> Ecn {
    match bits & ECN_MASK {
        0b00 => Ecn::NotEct,
        0b01 => Ecn::Ect1,
        0b10 => Ecn::Ect0,
        _ => Ecn::Ce,
    }
}

/// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), in ones'-complement arithmetic.
fn checksum_adjust(checksum: u16, old: u16, new: u16) -> u16 {
    let mut sum = u32::from(!checksum) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// FNV-1a (64-bit) over the tuple, finished with splitmix64's mixer so that the low bits a
/// queue index takes depend on every input byte. A domain byte keeps IPv4, IPv6 and
/// link-layer tuples apart.
struct FlowHasher(u64);

impl FlowHasher {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn new(domain: u8) -> FlowHasher {
        FlowHasher(Self::OFFSET_BASIS).write(&[domain])
    }

    fn write(mut self, bytes: &[u8]) -> FlowHasher {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(Self::PRIME);
        }
        self
    }

    fn finish(self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A big-endian u16 at a field the caller has already checked is inside `buf`.
fn be16(buf: &[u8], f: field::Field) -> u16 {
    u16::from_be_bytes(buf[f].try_into().unwrap())
}

/// A big-endian u16 at a field, if `buf` is long enough.
fn be16_at(buf: &[u8], f: field::Field) -> Option<u16> {
    Some(u16::from_be_bytes(buf.get(f)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
    const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
    const V4_A: [u8; 4] = [10, 0, 0, 1];
    const V4_B: [u8; 4] = [10, 0, 0, 2];
    const V6_A: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    const V6_B: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

    struct XorShift(u64);
    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    fn eth(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&dst);
        f.extend_from_slice(&src);
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    fn vlan(dst: [u8; 6], src: [u8; 6], vid: u16, ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut tagged = vid.to_be_bytes().to_vec();
        tagged.extend_from_slice(&ethertype.to_be_bytes());
        tagged.extend_from_slice(payload);
        eth(dst, src, ethertype::VLAN, &tagged)
    }

    /// A transport header that starts with ports, padded with a recognisable filler.
    fn l4(src_port: u16, dst_port: u16, len: usize) -> Vec<u8> {
        let mut t = vec![0x5a; len.max(4)];
        t[0..2].copy_from_slice(&src_port.to_be_bytes());
        t[2..4].copy_from_slice(&dst_port.to_be_bytes());
        t
    }

    /// The ones'-complement checksum of an IPv4 header, computed from scratch with the
    /// checksum field taken as zero.
    fn full_checksum(header: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for (i, pair) in header.chunks(2).enumerate() {
            if i != 5 {
                sum += u32::from(u16::from_be_bytes([pair[0], pair[1]]));
            }
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    fn ipv4_with(tos: u8, protocol: u8, src: [u8; 4], dst: [u8; 4], options: &[u8], l4: &[u8]) -> Vec<u8> {
        assert_eq!(options.len() % 4, 0);
        let header_len = 20 + options.len();
        let mut p = vec![0u8; header_len];
        p[0] = 0x40 | (header_len / 4) as u8;
        p[1] = tos;
        p[2..4].copy_from_slice(&((header_len + l4.len()) as u16).to_be_bytes());
        p[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
        p[6] = 0x40; // don't fragment
        p[8] = 64;
        p[9] = protocol;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        p[20..].copy_from_slice(options);
        let c = full_checksum(&p);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p.extend_from_slice(l4);
        p
    }

    fn ipv4(tos: u8, protocol: u8, src: [u8; 4], dst: [u8; 4], l4: &[u8]) -> Vec<u8> {
        ipv4_with(tos, protocol, src, dst, &[], l4)
    }

    fn ipv6(tc: u8, flow_label: u32, next: u8, src: [u8; 16], dst: [u8; 16], payload: &[u8]) -> Vec<u8> {
        let word = 6u32 << 28 | u32::from(tc) << 20 | flow_label & 0xf_ffff;
        let mut p = word.to_be_bytes().to_vec();
        p.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        p.push(next);
        p.push(64);
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(payload);
        p
    }

    fn v4_frame(tos: u8, protocol: u8, src_port: u16, dst_port: u16) -> Vec<u8> {
        let ip = ipv4(tos, protocol, V4_A, V4_B, &l4(src_port, dst_port, 20));
        eth(MAC_B, MAC_A, ethertype::IPV4, &ip)
    }

    fn v6_frame(tc: u8, flow_label: u32, next: u8, src_port: u16, dst_port: u16) -> Vec<u8> {
        let ip = ipv6(tc, flow_label, next, V6_A, V6_B, &l4(src_port, dst_port, 8));
        eth(MAC_B, MAC_A, ethertype::IPV6, &ip)
    }

    fn ipv4_checksum_is_valid(frame: &[u8], ip_start: usize) -> bool {
        let header_len = usize::from(frame[ip_start] & 0x0f) * 4;
        let header = &frame[ip_start..ip_start + header_len];
        full_checksum(header) == u16::from_be_bytes([header[10], header[11]])
    }

    #[test]
    fn ipv4_tcp_flows_follow_the_five_tuple() {
        let f = v4_frame(0, proto::TCP, 40000, 5201);
        let info = inspect(&f);
        assert_eq!(info.ethertype, ethertype::IPV4);
        assert_eq!(info.ecn, Ecn::NotEct);
        assert_eq!(info.ip_len, Some(40));
        // Same tuple, different MACs, TTL, id and payload: same flow.
        let mut g = f.clone();
        g[0..12].copy_from_slice(&[0x06; 12]);
        g[14 + 4] ^= 0xff;
        g[14 + 8] = 3;
        g[14 + 20 + 10] ^= 0xff;
        assert_eq!(inspect(&g).flow, info.flow);
        // Any element of the tuple changed: another flow.
        assert_ne!(inspect(&v4_frame(0, proto::TCP, 40001, 5201)).flow, info.flow);
        assert_ne!(inspect(&v4_frame(0, proto::TCP, 40000, 5202)).flow, info.flow);
        assert_ne!(inspect(&v4_frame(0, proto::UDP, 40000, 5201)).flow, info.flow);
        let other_src = ipv4(0, proto::TCP, [10, 0, 0, 3], V4_B, &l4(40000, 5201, 20));
        assert_ne!(
            inspect(&eth(MAC_B, MAC_A, ethertype::IPV4, &other_src)).flow,
            info.flow
        );
    }

    #[test]
    fn ipv4_udp_and_sctp_have_ports_other_protocols_do_not() {
        let udp = inspect(&v4_frame(0, proto::UDP, 1234, 53));
        assert_eq!(udp.ip_len, Some(40));
        assert_eq!(udp.flow, inspect(&v4_frame(0, proto::UDP, 1234, 53)).flow);
        assert_ne!(udp.flow, inspect(&v4_frame(0, proto::UDP, 1235, 53)).flow);
        assert_ne!(
            inspect(&v4_frame(0, proto::SCTP, 1, 2)).flow,
            inspect(&v4_frame(0, proto::SCTP, 1, 3)).flow
        );
        // ICMP: the bytes where ports would be are not part of the flow.
        assert_eq!(
            inspect(&v4_frame(0, 1, 1, 2)).flow,
            inspect(&v4_frame(0, 1, 7, 9)).flow
        );
    }

    #[test]
    fn ipv4_options_are_skipped_and_padding_is_not_a_port() {
        let plain = inspect(&v4_frame(0, proto::TCP, 40000, 5201));
        let ip = ipv4_with(0, proto::TCP, V4_A, V4_B, &[1, 1, 1, 0], &l4(40000, 5201, 20));
        let with_options = inspect(&eth(MAC_B, MAC_A, ethertype::IPV4, &ip));
        assert_eq!(with_options.flow, plain.flow);
        assert_eq!(with_options.ip_len, Some(44));
        // A bare 20-byte UDP "packet" padded to Ethernet's minimum: the padding is not read.
        let mut padded = eth(
            MAC_B,
            MAC_A,
            ethertype::IPV4,
            &ipv4(0, proto::UDP, V4_A, V4_B, &[]),
        );
        padded.resize(60, 0x77);
        let mut other_padding = padded.clone();
        other_padding[34..].fill(0x11);
        assert_eq!(inspect(&padded).flow, inspect(&other_padding).flow);
        assert_eq!(inspect(&padded).ip_len, Some(20));
    }

    #[test]
    fn ipv4_non_first_fragments_have_no_ports() {
        let fragment = |offset: u16, src_port: u16| {
            let mut f = v4_frame(0, proto::UDP, src_port, 53);
            f[14 + 6..14 + 8].copy_from_slice(&(0x2000 | offset).to_be_bytes());
            f
        };
        assert_ne!(inspect(&fragment(0, 1000)).flow, inspect(&fragment(0, 1001)).flow);
        assert_eq!(
            inspect(&fragment(185, 1000)).flow,
            inspect(&fragment(185, 1001)).flow
        );
        assert_eq!(
            inspect(&fragment(185, 1000)).flow,
            inspect(&v4_frame(0, proto::UDP, 0, 0)).flow
        );
    }

    #[test]
    fn ipv6_udp_flows_ignore_the_label_unless_there_are_no_ports() {
        let info = inspect(&v6_frame(0, 0x12345, proto::UDP, 5000, 5001));
        assert_eq!(info.ethertype, ethertype::IPV6);
        assert_eq!(info.ip_len, Some(48));
        assert_eq!(info.ecn, Ecn::NotEct);
        assert_eq!(
            info.flow,
            inspect(&v6_frame(0, 0xabcde, proto::UDP, 5000, 5001)).flow
        );
        assert_ne!(
            info.flow,
            inspect(&v6_frame(0, 0x12345, proto::UDP, 5000, 5002)).flow
        );
        assert_ne!(
            info.flow,
            inspect(&v6_frame(0, 0x12345, proto::TCP, 5000, 5001)).flow
        );
        // Hop-by-hop options first: not followed, so the label tells flows apart.
        let hbh = |label: u32, port: u16| inspect(&v6_frame(0, label, 0, port, 5001)).flow;
        assert_eq!(hbh(7, 1), hbh(7, 2));
        assert_ne!(hbh(7, 1), hbh(8, 1));
    }

    #[test]
    fn vlan_tagged_ipv4_is_read_past_the_tag() {
        let ip = ipv4(0b10, proto::TCP, V4_A, V4_B, &l4(40000, 5201, 20));
        let tagged = inspect(&vlan(MAC_B, MAC_A, 100, ethertype::IPV4, &ip));
        let untagged = inspect(&eth(MAC_B, MAC_A, ethertype::IPV4, &ip));
        assert_eq!(tagged, untagged);
        assert_eq!(tagged.ecn, Ecn::Ect0);
        let mut f = vlan(MAC_B, MAC_A, 100, ethertype::IPV4, &ip);
        assert!(set_ecn_ce(&mut f));
        assert_eq!(inspect(&f).ecn, Ecn::Ce);
        assert!(ipv4_checksum_is_valid(&f, 18));
        // A tag with nothing after it.
        let cut = inspect(&f[..16]);
        assert_eq!((cut.ethertype, cut.ip_len), (ethertype::VLAN, None));
    }

    #[test]
    fn arp_and_unknown_ethertypes_hash_the_macs() {
        let arp = eth([0xff; 6], MAC_A, ethertype::ARP, &[0, 1, 8, 0, 6, 4, 0, 1]);
        let info = inspect(&arp);
        assert_eq!(
            (info.ethertype, info.ecn, info.ip_len),
            (ethertype::ARP, Ecn::NotEct, None)
        );
        assert_eq!(
            inspect(&eth([0xff; 6], MAC_A, ethertype::ARP, &[9; 28])).flow,
            info.flow
        );
        assert_ne!(
            inspect(&eth([0xff; 6], MAC_B, ethertype::ARP, &[0; 28])).flow,
            info.flow
        );
        assert_ne!(inspect(&eth([0xff; 6], MAC_A, 0x88cc, &[0; 28])).flow, info.flow);
        // An IPv4 EtherType over something that is not IPv4 is hashed the same way.
        let bogus = inspect(&eth(MAC_B, MAC_A, ethertype::IPV4, &[0x65; 40]));
        assert_eq!(bogus.ecn, Ecn::NotEct);
        assert_eq!(bogus.ip_len, None);
    }

    #[test]
    fn ecn_code_points_are_read_from_ipv4_and_ipv6() {
        let points = [
            (0b00, Ecn::NotEct),
            (0b01, Ecn::Ect1),
            (0b10, Ecn::Ect0),
            (0b11, Ecn::Ce),
        ];
        for (bits, ecn) in points {
            // DSCP set to all ones around the ECN bits, to catch a wrong mask.
            let tos = 0xfc | bits;
            assert_eq!(inspect(&v4_frame(tos, proto::TCP, 1, 2)).ecn, ecn);
            assert_eq!(inspect(&v6_frame(tos, 0xfffff, proto::UDP, 1, 2)).ecn, ecn);
            assert_eq!(inspect(&v6_frame(bits, 0, proto::UDP, 1, 2)).ecn, ecn);
        }
    }

    #[test]
    fn ce_marking_keeps_the_ipv4_checksum_valid() {
        for tos in [0b01, 0b10, 0b11, 0xb8 | 0b01, 0xfe, 0x02] {
            let mut f = v4_frame(tos, proto::UDP, 9, 10);
            assert!(ipv4_checksum_is_valid(&f, 14));
            let before = inspect(&f);
            assert!(set_ecn_ce(&mut f), "tos {tos:#x}");
            assert!(ipv4_checksum_is_valid(&f, 14), "tos {tos:#x}");
            assert_eq!(f[15], tos | 0b11);
            assert_eq!(
                inspect(&f),
                FrameInfo {
                    ecn: Ecn::Ce,
                    ..before
                }
            );
        }
        // Random headers, options included: checksum edge cases come up along the way.
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2000 {
            let r = rng.next().to_be_bytes();
            let options = [r[4], r[5], r[6], r[7]];
            let ip = ipv4_with(
                r[0] | 0b01,
                r[1],
                [r[2], r[3], 0, 1],
                V4_B,
                &options[..(r[0] as usize & 4)],
                &[],
            );
            let mut f = eth(MAC_B, MAC_A, ethertype::IPV4, &ip);
            f[14 + 4..14 + 6].copy_from_slice(&r[6..8]);
            let c = full_checksum(&f[14..14 + 20 + (r[0] as usize & 4)]);
            f[14 + 10..14 + 12].copy_from_slice(&c.to_be_bytes());
            assert!(set_ecn_ce(&mut f));
            assert!(ipv4_checksum_is_valid(&f, 14), "{f:02x?}");
        }
    }

    #[test]
    fn ce_marking_ipv6_touches_only_the_ecn_bits() {
        for tc in [0b01, 0b10, 0b11, 0xa9] {
            let mut f = v6_frame(tc, 0xfedcb, proto::TCP, 1, 2);
            let before = f.clone();
            assert!(set_ecn_ce(&mut f));
            assert_eq!(
                inspect(&f),
                FrameInfo {
                    ecn: Ecn::Ce,
                    ..inspect(&before)
                }
            );
            let word = u32::from_be_bytes(f[14..18].try_into().unwrap());
            assert_eq!(
                word,
                u32::from_be_bytes(before[14..18].try_into().unwrap()) | 0b11 << 20
            );
            assert_eq!(f[18..], before[18..]);
        }
    }

    #[test]
    fn ce_marking_refuses_not_ect_non_ip_and_short_frames() {
        let mut refused = vec![
            v4_frame(0xb8, proto::TCP, 1, 2),
            v6_frame(0xb8, 0, proto::TCP, 1, 2),
            eth([0xff; 6], MAC_A, ethertype::ARP, &[0x03; 28]),
            eth(MAC_B, MAC_A, ethertype::IPV4, &[0x45, 0x02, 0, 20]),
            eth(MAC_B, MAC_A, ethertype::IPV6, &[0x60, 0x20, 0, 0]),
            v4_frame(0x02, proto::TCP, 1, 2)[..33].to_vec(),
        ];
        // IHL of 6 with only 20 bytes of header present.
        let mut short_options = v4_frame(0x02, proto::TCP, 1, 2)[..34].to_vec();
        short_options[14] = 0x46;
        refused.push(short_options);
        for f in &mut refused {
            let before = f.clone();
            assert!(!set_ecn_ce(f), "{before:02x?}");
            assert_eq!(*f, before);
        }
    }

    #[test]
    fn truncated_and_garbage_frames_of_every_length_up_to_60() {
        let valid = [
            v4_frame(0b10, proto::TCP, 1, 2),
            v6_frame(0b01, 3, proto::UDP, 1, 2),
            vlan(
                MAC_B,
                MAC_A,
                7,
                ethertype::IPV4,
                &ipv4(0b01, proto::UDP, V4_A, V4_B, &l4(1, 2, 8)),
            ),
        ];
        let mut rng = XorShift(42);
        let garbage: Vec<u8> = (0..60).map(|_| rng.next() as u8).collect();
        for len in 0..=60 {
            for whole in valid.iter().chain([&garbage]) {
                let cut = &whole[..len.min(whole.len())];
                let info = inspect(cut);
                let ip_start = if cut.get(12..14) == Some(&[0x81, 0x00]) {
                    18
                } else {
                    14
                };
                let header = if info.ethertype == ethertype::IPV6 { 40 } else { 20 };
                if cut.len() < ip_start + header {
                    assert_eq!((info.ecn, info.ip_len), (Ecn::NotEct, None), "{cut:02x?}");
                }
                let mut copy = cut.to_vec();
                assert_eq!(set_ecn_ce(&mut copy), info.ecn.is_capable(), "{cut:02x?}");
            }
        }
    }

    #[test]
    fn random_bytes_never_panic_and_marking_agrees_with_inspection() {
        let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
        let mut marked = 0;
        for i in 0..10_000 {
            let len = (rng.next() % 100) as usize;
            let mut f: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            // Steer three frames in four into the IP paths (a third of those behind a VLAN
            // tag, one in ten with the other IP version) so that they are exercised too.
            if i % 4 != 3 && len >= 14 {
                let (outer, inner) = match i % 3 {
                    0 => (ethertype::IPV4, ethertype::IPV4),
                    1 => (ethertype::IPV6, ethertype::IPV6),
                    _ => (ethertype::VLAN, [ethertype::IPV4, ethertype::IPV6][i % 2]),
                };
                f[12..14].copy_from_slice(&outer.to_be_bytes());
                let ip_start = if outer == ethertype::VLAN { 18 } else { 14 };
                if let Some(t) = f.get_mut(16..18).filter(|_| outer == ethertype::VLAN) {
                    t.copy_from_slice(&inner.to_be_bytes());
                }
                let version = if (inner == ethertype::IPV4) == (i % 10 != 0) {
                    0x40
                } else {
                    0x60
                };
                if let Some(b) = f.get_mut(ip_start) {
                    *b = version | (*b & 0x0f);
                }
            }
            let info = inspect(&f);
            assert_eq!(set_ecn_ce(&mut f), info.ecn.is_capable(), "{f:02x?}");
            if info.ecn.is_capable() {
                marked += 1;
                assert_eq!(inspect(&f), FrameInfo { ecn: Ecn::Ce, ..info });
            }
        }
        assert!(marked > 1000, "only {marked} frames reached the marking path");
    }
}
