//! Segmentation checked against checksums computed here independently (a plain sum of
//! 16-bit words, pseudo-headers built by hand), not with the module's own helpers.

use super::*;

/// RFC 1071 the slow way: 16-bit words, end-around carry after each.
pub(crate) fn naive_sum(bytes: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for pair in bytes.chunks(2) {
        let w = ((pair[0] as u32) << 8) | pair.get(1).copied().unwrap_or(0) as u32;
        s += w;
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// A frame's IPv4 header checksum verifies, and its TCP/UDP checksum over the
/// pseudo-header (built here) verifies.
pub(crate) fn verify(f: &[u8], l3: usize, v6: bool) {
    let (l4, proto, src_dst) = if v6 {
        (l3 + 40, f[l3 + 6], &f[l3 + 8..l3 + 40])
    } else {
        let ihl = (f[l3] & 15) as usize * 4;
        assert_eq!(naive_sum(&f[l3..l3 + ihl]), 0xffff, "IPv4 header checksum");
        (l3 + ihl, f[l3 + 9], &f[l3 + 12..l3 + 20])
    };
    let l4_len = f.len() - l4;
    let mut ph = src_dst.to_vec();
    if v6 {
        ph.extend_from_slice(&(l4_len as u32).to_be_bytes());
        ph.extend_from_slice(&[0, 0, 0, proto]);
    } else {
        ph.extend_from_slice(&[0, proto]);
        ph.extend_from_slice(&(l4_len as u16).to_be_bytes());
    }
    ph.extend_from_slice(&f[l4..]);
    assert_eq!(naive_sum(&ph), 0xffff, "transport checksum");
}

const MAC: [u8; 12] = [2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];

fn eth(ethertype: u16) -> Vec<u8> {
    let mut f = MAC.to_vec();
    f.extend_from_slice(&ethertype.to_be_bytes());
    f
}

fn ipv4(proto: u8, l4_len: usize, id: u16) -> Vec<u8> {
    let mut h = vec![
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    h[2..4].copy_from_slice(&((20 + l4_len) as u16).to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    let c = !naive_sum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

fn ipv6(proto: u8, l4_len: usize) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0, 0, 0, proto, 64];
    h[4..6].copy_from_slice(&(l4_len as u16).to_be_bytes());
    h.extend((0..16).map(|i| 0x20 + i as u8));
    h.extend((0..16).map(|i| 0x40 + i as u8));
    h
}

/// TCP with timestamps (32 bytes of header).
pub(crate) fn tcp(seq: u32, flags: u8) -> Vec<u8> {
    let mut h = vec![0x13, 0x88, 0xc3, 0x50];
    h.extend_from_slice(&seq.to_be_bytes());
    h.extend_from_slice(&7u32.to_be_bytes());
    h.extend_from_slice(&[0x80, flags, 0x01, 0xf5, 0, 0, 0, 0]);
    h.extend_from_slice(&[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 8]);
    h
}

pub(crate) fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// The superframe as the kernel hands it over: lengths of the whole, and in the
/// checksum field the pseudo-header's sum (not complemented), as CHECKSUM_PARTIAL.
pub(crate) fn superframe(v6: bool, tcp_hdr: Vec<u8>, data: &[u8], id: u16) -> Vec<u8> {
    let l4_len = tcp_hdr.len() + data.len();
    let mut f = if v6 { eth(0x86dd) } else { eth(0x0800) };
    let ip = if v6 { ipv6(6, l4_len) } else { ipv4(6, l4_len, id) };
    f.extend_from_slice(&ip);
    let l4 = f.len();
    f.extend_from_slice(&tcp_hdr);
    f.extend_from_slice(data);
    let mut ph = if v6 {
        ip[8..40].to_vec()
    } else {
        ip[12..20].to_vec()
    };
    ph.extend_from_slice(&[0, 6]);
    ph.extend_from_slice(&(l4_len as u16).to_be_bytes());
    let partial = naive_sum(&ph);
    f[l4 + 16..l4 + 18].copy_from_slice(&partial.to_be_bytes());
    f
}

pub(crate) fn vnet(gso_type: u8, gso_size: u16, csum_start: u16, csum_offset: u16) -> [u8; VNET_HDR_LEN] {
    VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type,
        hdr_len: csum_start + 32,
        gso_size,
        csum_start,
        csum_offset,
    }
    .to_bytes()
}

fn seq_of(f: &[u8], l4: usize) -> u32 {
    u32::from_be_bytes(f[l4 + 4..l4 + 8].try_into().unwrap())
}

#[test]
fn a_tcp_ipv4_superframe_becomes_tso_segments_with_their_own_seq_lengths_and_checksums() {
    let data = payload(3 * 1448 + 100);
    let flags = 0x80 | 0x10 | 0x08 | 0x01; // CWR ACK PSH FIN
    let frame = superframe(false, tcp(0xffff_f000, flags), &data, 0xfffe);
    let mut out = Segments::default();
    assert_eq!(
        segment(&vnet(GSO_TCPV4, 1448, 34, 16), &frame, &mut out),
        Ok(true)
    );
    assert_eq!(out.len(), 4);
    let mut joined = vec![];
    for (k, f) in out.iter().enumerate() {
        let plen = if k < 3 { 1448 } else { 100 };
        assert_eq!(f.len(), 14 + 20 + 32 + plen);
        assert_eq!(&f[..14], &frame[..14]);
        assert_eq!(
            u16::from_be_bytes([f[16], f[17]]) as usize,
            20 + 32 + plen,
            "total length"
        );
        // The ID increments (and wraps) from the superframe's.
        assert_eq!(
            u16::from_be_bytes([f[18], f[19]]),
            0xfffeu16.wrapping_add(k as u16)
        );
        // The sequence number advances by the payload before it (and wraps).
        assert_eq!(seq_of(f, 34), 0xffff_f000u32.wrapping_add(k as u32 * 1448));
        let fl = f[34 + 13];
        assert_eq!(fl & 0x10, 0x10, "ACK on every segment");
        assert_eq!(fl & 0x80 != 0, k == 0, "CWR on the first only");
        assert_eq!(fl & 0x09 != 0, k == 3, "FIN and PSH on the last only");
        if k == 3 {
            assert_eq!(fl & 0x09, 0x09);
        }
        verify(f, 14, false);
        joined.extend_from_slice(&f[66..]);
    }
    assert_eq!(joined, data);
}

#[test]
fn a_tcp_ipv6_superframe_with_ecn_sets_payload_lengths_and_checksums() {
    let data = payload(2 * 1428);
    let frame = superframe(true, tcp(1, 0x80 | 0x40 | 0x10), &data, 0);
    let mut out = Segments::default();
    assert_eq!(
        segment(&vnet(GSO_TCPV6 | GSO_ECN, 1428, 54, 16), &frame, &mut out),
        Ok(true)
    );
    assert_eq!(out.len(), 2);
    for (k, f) in out.iter().enumerate() {
        assert_eq!(f.len(), 14 + 40 + 32 + 1428);
        assert_eq!(u16::from_be_bytes([f[18], f[19]]), 32 + 1428, "payload length");
        assert_eq!(seq_of(f, 54), 1 + k as u32 * 1428);
        assert_eq!(f[54 + 13] & 0x80 != 0, k == 0, "CWR on the first only");
        assert_eq!(f[54 + 13] & 0x40, 0x40, "ECE stays on every segment");
        verify(f, 14, true);
    }
}

fn udp_superframe(v6: bool, data: &[u8]) -> Vec<u8> {
    let l4_len = 8 + data.len();
    let mut f = if v6 { eth(0x86dd) } else { eth(0x0800) };
    f.extend_from_slice(&if v6 { ipv6(17, l4_len) } else { ipv4(17, l4_len, 5) });
    f.extend_from_slice(&[0x30, 0x39, 0x14, 0x51, 0, 0, 0xab, 0xcd]); // a stale checksum
    let n = f.len();
    f[n - 4..n - 2].copy_from_slice(&(l4_len as u16).to_be_bytes());
    f.extend_from_slice(data);
    f
}

#[test]
fn udp_gso_becomes_datagrams_with_their_own_lengths_and_checksums() {
    for v6 in [false, true] {
        let l3_len = if v6 { 40 } else { 20 };
        let l4 = 14 + l3_len;
        let data = payload(3 * 1200 + 1);
        let frame = udp_superframe(v6, &data);
        let mut out = Segments::default();
        let mut h = VnetHdr::parse(&vnet(GSO_UDP_L4, 1200, l4 as u16, 6)).unwrap();
        h.hdr_len = (l4 + 8) as u16;
        assert_eq!(segment(&h.to_bytes(), &frame, &mut out), Ok(true));
        assert_eq!(out.len(), 4);
        let mut joined = vec![];
        for (k, f) in out.iter().enumerate() {
            let plen = if k < 3 { 1200 } else { 1 };
            assert_eq!(f.len(), l4 + 8 + plen);
            assert_eq!(
                u16::from_be_bytes([f[l4 + 4], f[l4 + 5]]) as usize,
                8 + plen,
                "UDP length"
            );
            assert_eq!(&f[l4..l4 + 4], &frame[l4..l4 + 4], "ports");
            if !v6 {
                assert_eq!(u16::from_be_bytes([f[18], f[19]]), 5 + k as u16, "IPv4 ID");
            }
            verify(f, 14, v6);
            joined.extend_from_slice(&f[l4 + 8..]);
        }
        assert_eq!(joined, data, "v6 {v6}");
    }
}

#[test]
fn a_frame_with_a_partial_checksum_gets_it_completed_and_others_pass_as_they_are() {
    let frame = superframe(false, tcp(9, 0x10), &payload(5), 1);
    let mut out = Segments::default();
    let mut h = VnetHdr::parse(&vnet(GSO_NONE, 0, 34, 16)).unwrap();
    assert_eq!(segment(&h.to_bytes(), &frame, &mut out), Ok(true));
    assert_eq!(out.len(), 1);
    verify(out.get(0), 14, false);
    assert_eq!(&out.get(0)[..50], &frame[..50], "only the checksum changes");
    h.flags = 0;
    assert_eq!(segment(&h.to_bytes(), &frame, &mut out), Ok(false));
    assert_eq!(segment(&[], &frame, &mut out), Ok(false), "no virtio-net header");
    // A superframe of one segment still gets its checksum.
    assert_eq!(
        segment(&vnet(GSO_TCPV4, 1448, 34, 16), &frame, &mut out),
        Ok(true)
    );
    assert_eq!(out.len(), 1);
    verify(out.get(0), 14, false);
}

#[test]
fn a_vlan_tagged_superframe_is_cut_behind_its_tag() {
    let plain = superframe(false, tcp(100, 0x18), &payload(3000), 1);
    let mut frame = plain[..12].to_vec();
    frame.extend_from_slice(&[0x81, 0x00, 0x00, 0x2a]);
    frame.extend_from_slice(&plain[12..]);
    let mut out = Segments::default();
    assert_eq!(
        segment(&vnet(GSO_TCPV4, 1448, 38, 16), &frame, &mut out),
        Ok(true)
    );
    assert_eq!(out.len(), 3);
    for f in out.iter() {
        verify(f, 18, false);
    }
}

#[test]
fn malformed_headers_are_refused_with_the_reason_and_never_panic() {
    let frame = superframe(false, tcp(1, 0x10), &payload(4000), 1);
    let mut out = Segments::default();
    let mut e = |v: [u8; VNET_HDR_LEN], f: &[u8]| segment(&v, f, &mut out).unwrap_err().to_string();
    assert_eq!(e(vnet(GSO_TCPV4, 0, 34, 16), &frame), "its gso_size is 0");
    let mut h = VnetHdr::parse(&vnet(GSO_TCPV4, 1448, 34, 16)).unwrap();
    h.hdr_len = 60000;
    assert_eq!(
        e(h.to_bytes(), &frame),
        "its header length 60000 is past its 4066 bytes"
    );
    assert_eq!(
        e(vnet(GSO_TCPV4, 1448, 5000, 16), &frame),
        "its checksum at csum_start 5000 + csum_offset 16 is past its 4066 bytes"
    );
    assert_eq!(
        e(vnet(GSO_NONE, 0, 4060, 16), &frame),
        "its checksum at csum_start 4060 + csum_offset 16 is past its 4066 bytes"
    );
    assert_eq!(
        e(vnet(GSO_TCPV4, 1448, 30, 16), &frame),
        "its csum_start 30/csum_offset 16 is not the checksum of the transport header at byte 34"
    );
    assert_eq!(
        e(vnet(GSO_TCPV6, 1448, 34, 16), &frame),
        "its gso_type is TCPV6 but it is not TCP over IPv6"
    );
    assert_eq!(
        e(vnet(GSO_UDP_L4, 1448, 34, 6), &frame),
        "its gso_type is UDP_L4 but it is not UDP"
    );
    assert!(e(vnet(GSO_UDP, 1448, 34, 6), &frame).contains("UFO"));
    assert_eq!(
        e(vnet(9, 1448, 34, 16), &frame),
        "its gso_type 0x09 is not one netrig-link cuts"
    );
    assert_eq!(
        e(vnet(GSO_TCPV4, 1448, 0, 0), &frame[..40]),
        "its TCP header is cut short (40 bytes)"
    );
    let no_csum = VnetHdr {
        gso_type: GSO_TCPV4,
        gso_size: 1448,
        ..VnetHdr::default()
    }
    .to_bytes();
    assert_eq!(
        e(no_csum, &frame[..8]),
        "its Ethernet header is cut short (8 bytes)"
    );
    let mut frag = frame.clone();
    frag[20] = 0x20; // more fragments
    assert_eq!(e(vnet(GSO_TCPV4, 1448, 34, 16), &frag), "it is an IPv4 fragment");
    let mut bad_doff = frame.clone();
    bad_doff[34 + 12] = 0x20; // 8 bytes: below a TCP header
    assert_eq!(
        e(vnet(GSO_TCPV4, 1448, 34, 16), &bad_doff),
        "its TCP header is cut short (4066 bytes)"
    );
}

#[test]
fn the_wire_carries_a_superframe_as_its_segments_each_with_its_headers() {
    let data = payload(3 * 1448 + 100);
    let frame = superframe(false, tcp(1, 0x10), &data, 1);
    // The kernel's hdr_len is a hint of the linear part, not the headers' length: the
    // headers are read from the frame (66 bytes), as the capture cuts it.
    let mut hint = VnetHdr::parse(&vnet(GSO_TCPV4, 1448, 34, 16)).unwrap();
    hint.hdr_len = 1000;
    let w = wire(&hint.to_bytes(), &frame);
    let mut out = Segments::default();
    assert_eq!(segment(&hint.to_bytes(), &frame, &mut out), Ok(true));
    let cut: usize = out.iter().map(|f| f.len()).sum();
    assert_eq!((w.bytes as usize, w.frames), (cut, 4));
    assert_eq!(cut, frame.len() + 3 * 66);
    // Headers it cannot read: the hint, else 66 bytes.
    let mut odd = frame.clone();
    odd[12] = 0x88; // not IPv4 or IPv6
    hint.hdr_len = 100;
    let w = wire(&hint.to_bytes(), &odd);
    assert_eq!(w.frames as usize, (odd.len() - 100).div_ceil(1448));
    assert_eq!(w.bytes as usize, odd.len() + (w.frames as usize - 1) * 100);
    hint.hdr_len = 0;
    assert_eq!(wire(&hint.to_bytes(), &odd).bytes as usize, odd.len() + 3 * 66);
    // Plain frames, frames without a header, a gso_size of 0: one frame as it is.
    let one = Wire {
        bytes: frame.len() as u32,
        frames: 1,
    };
    assert_eq!(wire(&vnet(GSO_NONE, 0, 34, 16), &frame), one);
    assert_eq!(wire(&[], &frame), one);
    assert_eq!(wire(&vnet(GSO_TCPV4, 0, 34, 16), &frame), one);
    // 64 KiB of 1-byte segments stays within u32 (the link charges it, as a wire would).
    let big = superframe(false, tcp(1, 0x10), &payload(65_000), 1);
    let w = wire(&vnet(GSO_TCPV4, 1, 34, 16), &big);
    assert_eq!((w.frames, w.bytes as usize), (65_000, 65_000 * 67));
}

#[test]
fn too_many_segments_are_refused() {
    let frame = superframe(false, tcp(1, 0x10), &payload(5000), 1);
    let mut out = Segments::default();
    let r = segment(&vnet(GSO_TCPV4, 1, 34, 16), &frame, &mut out);
    assert_eq!(r, Err(Unsegmented::TooManySegments(5000)));
    assert_eq!(
        r.unwrap_err().to_string(),
        "it would be 5000 segments (more than 4096)"
    );
}

#[test]
fn random_headers_and_bytes_never_panic() {
    let base = superframe(false, tcp(1, 0x10), &payload(3000), 1);
    let base6 = superframe(true, tcp(1, 0x10), &payload(3000), 1);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Segments::default();
    for i in 0..20_000 {
        let mut f = if i % 2 == 0 { base.clone() } else { base6.clone() };
        let cut = (next() as usize) % (f.len() + 1);
        f.truncate(cut.max(if i % 3 == 0 { 0 } else { f.len() }));
        for _ in 0..(next() % 4) {
            if !f.is_empty() {
                let at = next() as usize % f.len().min(80);
                f[at] = next() as u8;
            }
        }
        let r = next();
        let v = VnetHdr {
            flags: (r & 1) as u8,
            gso_type: [0, 1, 3, 4, 5, 0x81, 0x84, 0x85, 7][(r >> 8) as usize % 9],
            hdr_len: (r >> 16) as u16 % 200,
            gso_size: [0, 1, 8, 100, 1448, 65535][(r >> 24) as usize % 6],
            csum_start: [0, 14, 34, 54, 60, 5000, 65535][(r >> 32) as usize % 7],
            csum_offset: [0, 6, 16, 65535][(r >> 40) as usize % 4],
        };
        if let Ok(true) = segment(&v.to_bytes(), &f, &mut out) {
            assert!(!out.is_empty());
        }
    }
}
