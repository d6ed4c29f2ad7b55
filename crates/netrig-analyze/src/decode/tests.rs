//! Wired link types: a frame built per case, and what tshark 4.0.17 shows for it (each
//! checked on the pcap `build::dump` writes; "tcp.len 10" means tshark dissects the test
//! segment, 10.0.0.1:1000 -> 10.0.0.2:80 seq 7, with its 10 payload bytes).

use super::build::*;
use super::*;

/// Every TCP header tshark would find in the frame (the frame's length on the wire is its
/// captured length).
pub(super) fn all(lt: u32, f: &[u8]) -> Vec<TcpHeader> {
    let mut v = Vec::new();
    decode_all(lt, f, f.len() as u32, &mut v).unwrap();
    v
}

/// The frame's one TCP header, which must be the test segment.
pub(super) fn the_seg(name: &str, lt: u32, f: &[u8]) -> TcpHeader {
    dump(name, lt, f);
    let v = all(lt, f);
    assert_eq!(v.len(), 1, "{name}: {v:?}");
    let h = v[0];
    assert_eq!(
        (h.sport, h.dport, h.seq, h.ack, h.seglen()),
        (1000, 80, 7, 9, Some(10)),
        "{name}"
    );
    h
}

pub(super) fn no_seg(name: &str, lt: u32, f: &[u8]) {
    dump(name, lt, f);
    assert_eq!(all(lt, f), vec![], "{name}");
}

#[test]
fn ethernet_ipv4_tcp_with_padding_uses_the_ip_length() {
    // tshark: tcp.len 0 (the 6 bytes of padding are an Ethernet trailer).
    let mut f = ipv4_tcp([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 7, 9, ACK, 512, 0);
    f.extend([0; 6]);
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
fn an_ip_length_past_the_frame_is_cut_to_the_frame() {
    // tshark: tcp.len 4 for an IP length of 1040 in a 58-byte frame (the TCP tvb's
    // reported length is what the frame had, "IPv4 total length exceeds packet length").
    let mut f = eth(0x0800, &ip4_seg());
    f.truncate(14 + 20 + 20 + 4);
    f[16..18].copy_from_slice(&1040u16.to_be_bytes());
    dump("ip-length-past-frame", 1, &f);
    let h = decode(1, &f, f.len() as u32).unwrap().unwrap();
    assert_eq!(h.seglen(), Some(4));
}

#[test]
fn vlan_sll_sll2_and_raw() {
    let ip = ip4_seg();
    let vlan = eth(0x8100, &cat(&[&[0, 5, 0x08, 0x00], &ip]));
    let sll = cat(&[&[0; 14], &[0x08, 0x00], &ip]);
    let sll2 = cat(&[&[0x08, 0x00], &[0; 18], &ip]);
    for (name, lt, d) in [
        ("vlan", 1, &vlan[..]),
        ("sll", 113, &sll[..]),
        ("sll2", 276, &sll2[..]),
        ("raw101", 101, &ip[..]),
        ("raw228", 228, &ip[..]),
        ("raw12", 12, &ip[..]),
        ("raw14", 14, &ip[..]),
    ] {
        // tshark: tcp.len 10 on each.
        the_seg(name, lt, d);
    }
    assert_eq!(decode(147, &ip, 1), Err(UnsupportedLink(147)));
}

#[test]
fn raw_ip_after_the_linux_ppp_and_isdn_leftovers() {
    // tshark: tcp.len 10 behind FF 03 00 21, behind 6 bytes and FF 03, and behind ten
    // zero bytes; raw 229 is IPv6 only.
    the_seg("raw-ff03", 101, &cat(&[&[0xFF, 0x03, 0x00, 0x21], &ip4_seg()]));
    the_seg(
        "raw-isdn",
        101,
        &cat(&[&[1, 2, 3, 4, 5, 6, 0xFF, 0x03, 0x00, 0x21], &ip4_seg()]),
    );
    the_seg("raw-zeros", 101, &cat(&[&[0; 10], &ip4_seg()]));
    the_seg("raw229", 229, &ip6_seg());
    the_seg("raw101-v6", 101, &ip6_seg());
}

#[test]
fn qinq_service_tags_and_the_vlan_limit() {
    // tshark: tcp.len 10 behind 88a8+8100, 9100+8100, 88a8+88a8 and 20 802.1Q tags;
    // nothing behind 21 (VLAN_MAX_NESTED_TAGS: "Too many nested VLAN tags").
    let ip = ip4_seg();
    let ad = eth(0x88A8, &cat(&[&[0, 10, 0x81, 0x00, 0, 20, 0x08, 0x00], &ip]));
    the_seg("qinq-88a8", 1, &ad);
    let old = eth(0x9100, &cat(&[&[0, 10, 0x81, 0x00, 0, 20, 0x08, 0x00], &ip]));
    the_seg("qinq-9100", 1, &old);
    let two_ad = eth(0x88A8, &cat(&[&[0, 10, 0x88, 0xA8, 0, 20, 0x08, 0x00], &ip]));
    the_seg("qinq-88a8x2", 1, &two_ad);
    let tags = |n: usize| {
        let mut body = Vec::new();
        for i in 0..n {
            body.extend([0, i as u8 + 1]);
            body.extend(if i + 1 == n { [0x08, 0x00] } else { [0x81, 0x00] });
        }
        eth(0x8100, &cat(&[&body, &ip]))
    };
    the_seg("vlan20", 1, &tags(20));
    no_seg("vlan21", 1, &tags(21));
}

#[test]
fn mpls_label_stacks_guess_ip_from_the_first_nibble() {
    // tshark: tcp.len 10 after two labels (IPv4) and after one (IPv6); nothing after
    // label 13 (GAL: an associated channel). After a first nibble 0 tshark guesses an
    // Ethernet pseudowire, with a control word unless both MAC addresses' OUIs are in its
    // manufacturer database: here it finds tcp.len 10 behind the control word. netrig
    // does not follow nibble-0 payloads (a guess it cannot make the same way).
    let labels = |stack: &[(u32, bool)]| {
        let mut v = Vec::new();
        for &(label, bos) in stack {
            v.extend(((label << 12) | if bos { 0x100 } else { 0 } | 64).to_be_bytes());
        }
        v
    };
    the_seg(
        "mpls2",
        1,
        &eth(0x8847, &cat(&[&labels(&[(100, false), (200, true)]), &ip4_seg()])),
    );
    the_seg(
        "mpls-v6",
        1,
        &eth(0x8848, &cat(&[&labels(&[(16, true)]), &ip6_seg()])),
    );
    no_seg(
        "mpls-pw",
        1,
        &eth(
            0x8847,
            &cat(&[&labels(&[(16, true)]), &[0; 4], &eth(0x0800, &ip4_seg())]),
        ),
    );
    no_seg(
        "mpls-gal",
        1,
        &eth(0x8847, &cat(&[&labels(&[(13, true)]), &ip4_seg()])),
    );
}

#[test]
fn ieee802_3_frames_with_llc() {
    // tshark: tcp.len 10 in 802.3 + LLC/SNAP (OUI 000000 and Cisco's 0000f8) and in
    // 802.3 + LLC SAP 0x06 UI; nothing in a raw IPX frame (FFFF) or a Cisco ISL frame.
    let ip = ip4_seg();
    let len8023 = |payload: &[u8]| {
        let mut f = vec![2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4];
        f.extend((payload.len() as u16).to_be_bytes());
        f.extend(payload);
        f.extend([0; 4]); // a trailer past the 802.3 length
        f
    };
    the_seg(
        "snap",
        1,
        &len8023(&cat(&[&[0xAA, 0xAA, 0x03, 0, 0, 0, 0x08, 0x00], &ip])),
    );
    the_seg(
        "snap-cisco",
        1,
        &len8023(&cat(&[&[0xAA, 0xAA, 0x03, 0, 0, 0xF8, 0x08, 0x00], &ip])),
    );
    the_seg("llc-sap6", 1, &len8023(&cat(&[&[0x06, 0x06, 0x03], &ip])));
    no_seg("ipx-raw", 1, &len8023(&cat(&[&[0xFF, 0xFF], &ip])));
    let mut isl = len8023(&cat(&[&[0xAA, 0xAA, 0x03, 0, 0, 0, 0x08, 0x00], &ip]));
    isl[..5].copy_from_slice(&[0x01, 0x00, 0x0C, 0x00, 0x00]);
    no_seg("isl", 1, &isl);
}

#[test]
fn pppoe_sessions_and_ppp_links() {
    // tshark: tcp.len 10 in each: PPPoE over Ethernet and VLAN, link type 51, PPP 9 with
    // and without FF 03 and with a compressed protocol field, PPP 50, PPP carrying IPv6
    // and Cisco HDLC 104/112 (and in a PPP link when the first byte is 0x0F).
    let ip = ip4_seg();
    let pppoe = |ppp: &[u8]| {
        let mut v = vec![0x11, 0x00, 0x12, 0x34];
        v.extend((ppp.len() as u16).to_be_bytes());
        v.extend(ppp);
        v
    };
    let ppp_ip = cat(&[&[0x00, 0x21], &ip]);
    the_seg("pppoe", 1, &eth(0x8864, &pppoe(&ppp_ip)));
    the_seg(
        "pppoe-vlan",
        1,
        &eth(0x8100, &cat(&[&[0, 7, 0x88, 0x64], &pppoe(&ppp_ip)])),
    );
    the_seg("pppoe-51", 51, &pppoe(&ppp_ip));
    the_seg("pppoe-pfc", 1, &eth(0x8864, &pppoe(&cat(&[&[0x21], &ip]))));
    the_seg("ppp9-hdlc", 9, &cat(&[&[0xFF, 0x03], &ppp_ip]));
    the_seg("ppp9-bare", 9, &ppp_ip);
    the_seg("ppp9-pfc", 9, &cat(&[&[0xFF, 0x03, 0x21], &ip]));
    the_seg("ppp50", 50, &cat(&[&[0xFF, 0x03], &ppp_ip]));
    the_seg("ppp9-v6", 9, &cat(&[&[0xFF, 0x03, 0x00, 0x57], &ip6_seg()]));
    let chdlc = cat(&[&[0x0F, 0x00, 0x08, 0x00], &ip]);
    the_seg("chdlc104", 104, &chdlc);
    the_seg("chdlc112", 112, &chdlc);
    the_seg("ppp9-chdlc", 9, &chdlc);
}

#[test]
fn bsd_null_in_either_byte_order_and_openbsd_loop() {
    // tshark (on x86): tcp.len 10 for AF_INET written little- and big-endian, for
    // Darwin's AF_INET6 30, FreeBSD's 28 big-endian, an EtherType 0x0800 in the header,
    // and FF 03 (PPP); link type 108 reads the family big-endian only: 2 written
    // little-endian is family 0x02000000, nothing.
    let ip = ip4_seg();
    the_seg("null-le", 0, &cat(&[&[2, 0, 0, 0], &ip]));
    the_seg("null-be", 0, &cat(&[&[0, 0, 0, 2], &ip]));
    the_seg("null-v6-darwin", 0, &cat(&[&[30, 0, 0, 0], &ip6_seg()]));
    the_seg("null-v6-freebsd-be", 0, &cat(&[&[0, 0, 0, 28], &ip6_seg()]));
    the_seg("null-ethertype", 0, &cat(&[&[0x00, 0x08, 0, 0], &ip]));
    the_seg("null-ppp", 0, &cat(&[&[0xFF, 0x03, 0x00, 0x21], &ip]));
    the_seg("loop-be", 108, &cat(&[&[0, 0, 0, 2], &ip]));
    the_seg("loop-v6", 108, &cat(&[&[0, 0, 0, 24], &ip6_seg()]));
    no_seg("loop-le", 108, &cat(&[&[2, 0, 0, 0], &ip]));
}

#[test]
fn linux_cooked_payloads_by_protocol_and_device_type() {
    // tshark: tcp.len 10 for SLL protocol 3 (an Ethernet frame), 4 (LLC/SNAP), 7 (PPP in
    // HDLC framing), for a GRE device (hatype 778) whose protocol 0x6558 is GRE's
    // transparent Ethernet, and for SLL2 on a radiotap device (hatype 803); nothing for
    // netlink (824).
    let sll = |hatype: u16, proto: u16, payload: &[u8]| {
        let mut v = vec![0, 0];
        v.extend(hatype.to_be_bytes());
        v.extend([0, 6, 1, 2, 3, 4, 5, 6, 0, 0]);
        v.extend(proto.to_be_bytes());
        v.extend(payload);
        v
    };
    the_seg("sll-eth", 113, &sll(1, 3, &eth(0x0800, &ip4_seg())));
    the_seg(
        "sll-llc",
        113,
        &sll(
            1,
            4,
            &cat(&[&[0xAA, 0xAA, 0x03, 0, 0, 0, 0x08, 0x00], &ip4_seg()]),
        ),
    );
    the_seg(
        "sll-ppp",
        113,
        &sll(512, 7, &cat(&[&[0xFF, 0x03, 0x00, 0x21], &ip4_seg()])),
    );
    the_seg("sll-gretap", 113, &sll(778, 0x6558, &eth(0x0800, &ip4_seg())));
    no_seg("sll-netlink", 113, &sll(824, 0x0800, &ip4_seg()));
    let mut sll2 = vec![0, 3, 0, 0, 0, 0, 0, 1];
    sll2.extend(803u16.to_be_bytes());
    sll2.extend([0, 6, 1, 2, 3, 4, 5, 6, 0, 0]);
    let radiotap = [0u8, 0, 8, 0, 0, 0, 0, 0];
    sll2.extend(radiotap);
    sll2.extend(super::tests_wlan::data_frame(
        0x08,
        0x01,
        &super::tests_wlan::snap_ip(),
    ));
    the_seg("sll2-radiotap", 276, &sll2);
}

#[test]
fn every_decoder_survives_cut_and_mutated_frames() {
    // Frames reaching every decoder, each cut at every length and with bytes changed at
    // random (a fixed xorshift), and random bytes in every link type: no panic.
    use super::tests_wlan::{data_frame, snap_ip};
    let ip = ip4_seg();
    let vx = eth(
        0x0800,
        &ip4(
            [1, 1, 1, 1],
            [2, 2, 2, 2],
            17,
            &udp(40000, 4789, &cat(&[&[8, 0, 0, 0, 0, 0, 1, 0], &eth(0x0800, &ip)])),
        ),
    );
    let gtp = eth(
        0x0800,
        &ip4(
            [1, 1, 1, 1],
            [2, 2, 2, 2],
            17,
            &udp(
                2152,
                2152,
                &cat(&[&[0x34, 255, 0, 60, 0, 0, 0, 1, 0, 0, 0, 0x85, 1, 0x10, 9, 0], &ip]),
            ),
        ),
    );
    let icmp = eth(
        0x0800,
        &ip4(
            [1, 1, 1, 1],
            [2, 2, 2, 2],
            1,
            &cat(&[&[3, 3, 0, 0, 0, 2, 0, 0], &ip]),
        ),
    );
    let gre = eth(
        0x0800,
        &ip4(
            [1, 1, 1, 1],
            [2, 2, 2, 2],
            47,
            &cat(&[&[0xF0, 0, 0x08, 0x00], &[0; 12], &[0, 0, 0, 0], &ip]),
        ),
    );
    let v6 = eth(
        0x86DD,
        &ip6(
            1,
            2,
            0,
            &cat(&[&[44, 0, 0xC2, 4, 0, 1, 0, 0], &[6, 0, 0, 0, 0, 0, 0, 1], &seg()]),
        ),
    );
    let wlan = data_frame(0x88, 0x03, &cat(&[&[0x80, 0x01], &[0; 14], &snap_ip()]));
    let rt = cat(&[&[0, 0, 20, 0, 3, 0, 0, 0x80, 0, 0, 0, 0], &[0; 8], &[0x30], &wlan]);
    let ppi = cat(&[&[1, 0, 32, 0, 105, 0, 0, 0, 2, 0, 20, 0], &[0; 20], &wlan]);
    let samples: Vec<(u32, Vec<u8>)> = vec![
        (1, vx),
        (1, gtp),
        (1, icmp),
        (1, gre),
        (1, v6),
        (105, wlan.clone()),
        (127, rt),
        (192, ppi),
        (0, cat(&[&[0xFF, 0x03, 0x00, 0x21], &ip])),
        (
            113,
            cat(&[
                &[0, 0, 0x03, 0x0A, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x65, 0x58],
                &eth(0x0800, &ip),
            ]),
        ),
        (119, cat(&[&[0, 0, 0, 0x44], &[0; 140], &wlan])),
    ];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::new();
    for (lt, f) in &samples {
        for n in 0..=f.len() {
            out.clear();
            decode_all(*lt, &f[..n], f.len() as u32, &mut out).unwrap();
        }
        for _ in 0..2000 {
            let mut m = f.clone();
            for _ in 0..1 + rnd() % 4 {
                let i = (rnd() % m.len() as u64) as usize;
                m[i] = rnd() as u8;
            }
            out.clear();
            decode_all(*lt, &m, (rnd() % 3000) as u32, &mut out).unwrap();
        }
    }
    for &lt in LINK_TYPES.iter() {
        for _ in 0..2000 {
            let n = (rnd() % 120) as usize;
            let f: Vec<u8> = (0..n).map(|_| rnd() as u8).collect();
            out.clear();
            decode_all(lt, &f, n as u32, &mut out).unwrap();
        }
    }
}
#[test]
fn options_are_walked_as_wireshark_walks_them() {
    // MSS, NOP, window scale 7, SACK-permitted, timestamps: 20 bytes.
    let o = [2, 4, 5, 0xb4, 1, 3, 3, 7, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2];
    assert_eq!(ip::options(&o, 20), (Some(7), true));
    // Captured up to the window scale: it counts, and the cut timestamps throw.
    assert_eq!(ip::options(&o[..10], 20), (Some(7), false));
    // Cut inside the window scale option itself: neither.
    assert_eq!(ip::options(&o[..7], 20), (None, false));
    // A shift above 14 is taken as 14; a non-zero byte after EOL ends the walk.
    assert_eq!(ip::options(&[3, 3, 20, 0, 9, 9, 9, 9], 8), (Some(14), true));
    // A length past the header's end stops quietly, before any read past it.
    assert_eq!(ip::options(&[1, 8, 40], 12), (None, true));
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

#[test]
fn juniper_ethernet_with_and_without_its_header() {
    // tshark: "Juniper Ethernet", then Ethernet (or IPv4 when the L2 header was stripped):
    // tcp.len 10 in each, and none behind a payload code it does not know.
    let frame = ipv4_tcp([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 7, 9, ACK, 512, 10);
    let mut ext = b"MGC\x80\x00\x06".to_vec();
    ext.extend([1, 4, 0, 0, 0, 7]); // one TLV (interface index 7)
    ext.extend(&frame);
    the_seg("juniper-ext", 178, &ext);
    let mut plain = b"MGC\x00".to_vec();
    plain.extend(&frame);
    the_seg("juniper-plain", 178, &plain);
    the_seg("juniper-no-magic", 178, &frame);
    let mut stripped = b"MGC\x02".to_vec();
    stripped.extend(2u32.to_le_bytes());
    stripped.extend(&frame[14..]);
    the_seg("juniper-no-l2", 178, &stripped);
    let mut v6 = b"MGC\x02".to_vec();
    v6.extend(6u32.to_le_bytes());
    v6.extend(ip6_seg());
    the_seg("juniper-no-l2-ipv6", 178, &v6);
    stripped[4] = 9; // a payload code it does not know
    no_seg("juniper-no-l2-unknown", 178, &stripped);
}
