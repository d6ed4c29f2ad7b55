//! Tunnels, ICMP errors, IP details: a frame built per case (all over Ethernet), and
//! what tshark 4.0.17 shows for it.

use super::build::*;
use super::tests::{all, no_seg, the_seg};
use super::TcpHeader;

const OUTER_A: [u8; 4] = [192, 0, 2, 1];
const OUTER_B: [u8; 4] = [192, 0, 2, 2];

/// Ethernet + outer IPv4 (192.0.2.1 -> .2) with protocol `proto`.
fn over4(proto: u8, payload: &[u8]) -> Vec<u8> {
    eth(0x0800, &ip4(OUTER_A, OUTER_B, proto, payload))
}

fn gre(flags: u16, proto: u16, options: &[u8], payload: &[u8]) -> Vec<u8> {
    cat(&[&flags.to_be_bytes(), &proto.to_be_bytes(), options, payload])
}

#[test]
fn gre_with_its_options_and_payloads() {
    // tshark: tcp.len 10 (the inner 10.0.0.1 -> 10.0.0.2, not the outer addresses) in
    // GRE without options, with checksum + key + sequence, with a routing entry list,
    // carrying IPv6, transparent Ethernet (gretap, 0x6558), MPLS, and PPTP's enhanced GRE
    // (version 1, key, sequence and ack) with PPP in HDLC framing.
    let h = the_seg("gre", 1, &over4(47, &gre(0, 0x0800, &[], &ip4_seg())));
    assert_eq!(super::addr_to_string(&h.src), "10.0.0.1");
    the_seg(
        "gre-cks",
        1,
        &over4(47, &gre(0xB000, 0x0800, &[0; 12], &ip4_seg())),
    );
    let sre = [0, 0, 0, 0, 0x08, 0x00, 0, 4, 1, 2, 3, 4, 0, 0, 0, 0];
    the_seg("gre-route", 1, &over4(47, &gre(0x4000, 0x0800, &sre, &ip4_seg())));
    the_seg("gre-v6", 1, &over4(47, &gre(0, 0x86DD, &[], &ip6_seg())));
    the_seg(
        "gretap",
        1,
        &over4(47, &gre(0x2000, 0x6558, &[0, 0, 0, 7], &eth(0x0800, &ip4_seg()))),
    );
    the_seg(
        "gre-mpls",
        1,
        &over4(47, &gre(0, 0x8847, &[0, 1, 0x01, 0x40], &ip4_seg())),
    );
    let ppp = cat(&[&[0xFF, 0x03, 0x00, 0x21], &ip4_seg()]);
    the_seg("gre-pptp", 1, &over4(47, &gre(0x3081, 0x880B, &[0; 12], &ppp)));
}

#[test]
fn ip_in_ip_in_each_combination() {
    // tshark: tcp.len 10 in IPv4-in-IPv4 (4), IPv6-in-IPv4 (41), IPv6-in-IPv6 (41) and
    // IPv4-in-IPv6 (4), and in MPLS-in-IP (137).
    the_seg("ipip", 1, &over4(4, &ip4_seg()));
    the_seg("6in4", 1, &over4(41, &ip6_seg()));
    the_seg("6in6", 1, &eth(0x86DD, &ip6(9, 10, 41, &ip6_seg())));
    the_seg("4in6", 1, &eth(0x86DD, &ip6(9, 10, 4, &ip4_seg())));
    the_seg(
        "mpls-in-ip",
        1,
        &over4(137, &cat(&[&[0, 1, 0x01, 0x40], &ip4_seg()])),
    );
}

#[test]
fn udp_tunnels_on_tsharks_ports() {
    // tshark: tcp.len 10 in VXLAN on 4789 (from an ephemeral port), VXLAN-GPE (4790,
    // next protocol IPv4), Geneve (6081) with 4 bytes of options, GRE-in-UDP (4754) and
    // MPLS-in-UDP (6635); nothing on Linux's old VXLAN port 8472 (tshark shows plain UDP),
    // and nothing when the lower port is DNS's 53 (tshark's DNS keeps the datagram); from
    // 2048 or SIP's 5060 tshark's protocol there gives it back: tcp.len 10. From SNMP's
    // 161 a VXLAN datagram is given back (tcp.len 10), a GTP one kept (nothing).
    let vx = |sport, dport| {
        over4(
            17,
            &udp(
                sport,
                dport,
                &cat(&[&[0x08, 0, 0, 0, 0, 0, 42, 0], &eth(0x0800, &ip4_seg())]),
            ),
        )
    };
    the_seg("vxlan", 1, &vx(49152, 4789));
    no_seg("vxlan-8472", 1, &vx(49152, 8472));
    no_seg("vxlan-from-53", 1, &vx(53, 4789));
    the_seg("vxlan-from-8472", 1, &vx(8472, 4789));
    the_seg("vxlan-from-2048", 1, &vx(2048, 4789));
    let geneve = cat(&[&[0, 0, 0x65, 0x58, 0, 0, 42, 0], &eth(0x0800, &ip4_seg())]);
    the_seg("geneve-from-5060", 1, &over4(17, &udp(5060, 6081, &geneve)));
    the_seg("geneve-to-5060", 1, &over4(17, &udp(6081, 5060, &geneve)));
    the_seg("vxlan-from-161", 1, &vx(161, 4789));
    let gtp = cat(&[&[0x30, 255, 0, 50, 0, 0, 0, 1], &ip4_seg()]);
    no_seg("gtp-from-161", 1, &over4(17, &udp(161, 2152, &gtp)));
    the_seg(
        "vxlan-gpe",
        1,
        &over4(
            17,
            &udp(40000, 4790, &cat(&[&[0x0C, 0, 0, 1, 0, 0, 42, 0], &ip4_seg()])),
        ),
    );
    let geneve = cat(&[
        &[0x01, 0, 0x65, 0x58, 0, 0, 42, 0],
        &[0; 4],
        &eth(0x0800, &ip4_seg()),
    ]);
    the_seg("geneve", 1, &over4(17, &udp(40000, 6081, &geneve)));
    the_seg(
        "gre-in-udp",
        1,
        &over4(17, &udp(40000, 4754, &gre(0, 0x0800, &[], &ip4_seg()))),
    );
    the_seg(
        "mpls-in-udp",
        1,
        &over4(17, &udp(40000, 6635, &cat(&[&[0, 1, 0x01, 0x40], &ip4_seg()]))),
    );
}

fn gtp(flags: u8, msg: u8, extra: &[u8], pdu: &[u8]) -> Vec<u8> {
    let mut v = vec![flags, msg];
    v.extend(((extra.len() + pdu.len()) as u16).to_be_bytes());
    v.extend([0, 0, 0, 1]);
    v.extend(extra);
    v.extend(pdu);
    v
}

#[test]
fn gtp_u_g_pdus() {
    // tshark: tcp.len 10 in a G-PDU (type 255) on 2152, with a sequence number (S), with
    // an extension header (E: a PDU session container, then none), carrying IPv6, and
    // carrying Ethernet; nothing in GTPv2 (version 2: control only) or in an echo
    // request.
    let on = |g: Vec<u8>| over4(17, &udp(2152, 2152, &g));
    the_seg("gtpu", 1, &on(gtp(0x30, 255, &[], &ip4_seg())));
    the_seg("gtpu-seq", 1, &on(gtp(0x32, 255, &[0, 5, 0, 0], &ip4_seg())));
    let ext = [0, 0, 0, 0x85, 1, 0x10, 0x09, 0x00];
    the_seg("gtpu-ext", 1, &on(gtp(0x34, 255, &ext, &ip4_seg())));
    the_seg("gtpu-v6", 1, &on(gtp(0x30, 255, &[], &ip6_seg())));
    the_seg("gtpu-eth", 1, &on(gtp(0x30, 255, &[], &eth(0x0800, &ip4_seg()))));
    no_seg("gtpv2", 1, &on(gtp(0x48, 255, &[], &ip4_seg())));
    no_seg("gtpu-echo", 1, &on(gtp(0x30, 1, &[], &ip4_seg())));
}

/// The one header of the frame, which must be the test segment with no segment length.
fn in_error(name: &str, f: &[u8]) -> TcpHeader {
    dump(name, 1, f);
    let v = all(1, f);
    assert_eq!(v.len(), 1, "{name}: {v:?}");
    let h = v[0];
    assert_eq!(
        (h.sport, h.dport, h.seq, h.have_seglen, h.seglen()),
        (1000, 80, 7, false, None),
        "{name}"
    );
    h
}

#[test]
fn a_tcp_header_inside_an_icmp_error_has_no_segment_length() {
    // tshark: tcp.stream 0 but no tcp.len and no tcp.analysis field for the quoted
    // segment of a port unreachable (ICMP 3) and of an ICMPv6 time exceeded (3); a
    // redirect (5) quotes only 8 bytes of TCP, short of the window: no TCP at all.
    let icmp = |kind: u8| cat(&[&[kind, 3, 0, 0, 0, 0, 0, 0], &ip4_seg()]);
    in_error("icmp-unreach", &over4(1, &icmp(3)));
    no_seg("icmp-redirect", 1, &over4(1, &icmp(5)));
    no_seg("icmp-echo", 1, &over4(1, &icmp(8)));
    let icmp6 = cat(&[&[3, 0, 0, 0, 0, 0, 0, 0], &ip6_seg()]);
    in_error("icmpv6-time", &eth(0x86DD, &ip6(9, 10, 58, &icmp6)));
    // Only the first 8 bytes of TCP quoted (RFC 792's minimum): no TCP.
    let short = cat(&[&[3, 3, 0, 0, 0, 0, 0, 0], &ip4_seg()[..28]]);
    no_seg("icmp-8-bytes", 1, &over4(1, &short));
}

#[test]
fn ip_fragments_and_ipv6_extension_headers() {
    // tshark: a first fragment cut by the snap length (MF, offset 0) shows its TCP header
    // with no tcp.len; a whole one goes to reassembly and a later one is not dissected
    // (nothing); an IPv6 atomic fragment (offset 0, M 0) is reassembled at once (tcp.len
    // 10), and so are segments behind a destination-options header and behind AH in
    // IPv4 and IPv6.
    let mut first = eth(0x0800, &ip4_seg());
    first[20] = 0x20; // MF
    let cut = &first[..14 + 20 + 20];
    dump("frag-first-cut", 1, cut);
    let v = all(1, cut);
    assert_eq!(v.len(), 1);
    assert_eq!((v[0].have_seglen, v[0].seglen()), (false, None));
    no_seg("frag-first-whole", 1, &first);
    let mut later = eth(0x0800, &ip4_seg());
    later[21] = 0x10;
    no_seg("frag-later", 1, &later);
    let atomic = cat(&[&[6, 0, 0, 0, 0, 0, 0, 1], &seg()]);
    the_seg("v6-atomic-frag", 1, &eth(0x86DD, &ip6(1, 2, 44, &atomic)));
    let mut nonatomic = atomic.clone();
    nonatomic[3] = 1; // M
    no_seg("v6-frag", 1, &eth(0x86DD, &ip6(1, 2, 44, &nonatomic)));
    let dstopts = cat(&[&[6, 0, 1, 4, 0, 0, 0, 0], &seg()]);
    the_seg("v6-dstopts", 1, &eth(0x86DD, &ip6(1, 2, 60, &dstopts)));
    let ah = cat(&[&[6, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1], &seg()]);
    the_seg("v6-ah", 1, &eth(0x86DD, &ip6(1, 2, 51, &ah)));
    let ah4 = cat(&[&[6, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1], &seg()]);
    the_seg(
        "v4-ah",
        1,
        &eth(0x0800, &ip4([10, 0, 0, 1], [10, 0, 0, 2], 51, &ah4)),
    );
}

#[test]
fn nesting_is_bounded() {
    // Each IP-in-IP level is one more header: 14 levels are followed (tshark too), a
    // frame of 40 is not (tshark would; real frames are never near the bound).
    let nest = |n: usize| {
        let mut p = ip4_seg();
        for _ in 0..n {
            p = ip4(OUTER_A, OUTER_B, 4, &p);
        }
        eth(0x0800, &p)
    };
    the_seg("ipip14", 1, &nest(14));
    assert_eq!(all(1, &nest(40)), vec![]);
}

#[test]
fn l2tp_data_messages_and_fabricpath() {
    // tshark: tcp.len 10 in an L2TPv2 data message on 1701 (length, sequence and offset
    // fields present, then PPP with FF 03), nothing in an L2TPv3 one; tcp.len 10 in a
    // Cisco FabricPath frame (16-byte header, the Ethernet frame, 4 bytes of FCS) and in
    // one with an 802.1Q tag in front of its type.
    let ppp = cat(&[&[0xFF, 0x03, 0x00, 0x21], &ip4_seg()]);
    let mut l2tp = vec![0x4B, 0x02];
    l2tp.extend(((2 + 2 + 4 + 4 + 4 + ppp.len()) as u16).to_be_bytes());
    l2tp.extend([0, 1, 0, 2, 0, 0, 0, 0, 0, 2, 0, 0]);
    l2tp.extend(&ppp);
    the_seg("l2tp", 1, &over4(17, &udp(1701, 1701, &l2tp)));
    let mut v3 = l2tp.clone();
    v3[1] = 0x03;
    no_seg("l2tpv3", 1, &over4(17, &udp(1701, 1701, &v3)));
    let inner = eth(0x0800, &ip4_seg());
    let fp = cat(&[
        &[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2],
        &[0x89, 0x03, 0x04, 0x10],
        &inner,
        &[0; 4],
    ]);
    the_seg("fabricpath", 1, &fp);
    let fp_q = cat(&[
        &[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2],
        &[0x81, 0x00, 0, 5, 0x89, 0x03, 0x04, 0x10],
        &inner,
        &[0; 4],
    ]);
    the_seg("fabricpath-q", 1, &fp_q);
}
