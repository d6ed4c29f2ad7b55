//! 802.11 data frames, alone (105) and behind radiotap (127), PPI (192), AVS (163) and
//! Prism (119): a frame built per case, and what tshark 4.0.17 shows for it.

use super::build::*;
use super::tests::{all, no_seg, the_seg};

const A1: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
const A2: [u8; 6] = [0x02, 0, 0, 0, 0, 2];
const A3: [u8; 6] = [0x02, 0, 0, 0, 0, 3];
const A4: [u8; 6] = [0x02, 0, 0, 0, 0, 4];

/// LLC/SNAP and the test segment in IPv4.
pub(super) fn snap_ip() -> Vec<u8> {
    cat(&[&[0xAA, 0xAA, 0x03, 0, 0, 0, 0x08, 0x00], &ip4_seg()])
}

/// An 802.11 data frame: frame-control byte 0 (type/subtype) and byte 1 (flags), three
/// addresses (four when ToDS and FromDS are both set), sequence control 0x0010, then
/// `body` as given (with a QoS subtype, the QoS control is the body's first 2 bytes).
pub(super) fn data_frame(fc0: u8, flags: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![fc0, flags, 0, 0];
    v.extend(A1);
    v.extend(A2);
    v.extend(A3);
    v.extend([0x10, 0x00]);
    if flags & 3 == 3 {
        v.extend(A4);
    }
    v.extend(body);
    v
}

#[test]
fn data_frames_with_llc_snap() {
    // tshark: tcp.len 10 in a data frame to the AP (ToDS), from it (FromDS), a QoS data
    // frame, a four-address QoS frame, and a QoS frame with the Order bit (4 bytes of HT
    // control); nothing in a protected frame, a QoS null frame, a first fragment (more
    // to come: held for reassembly) or a frame of protocol version 3; tcp.len 10 in a
    // frame with fragment number 3 and no more fragments, none before it (tshark's
    // reassembly takes it as whole).
    the_seg("wlan-tods", 105, &data_frame(0x08, 0x01, &snap_ip()));
    the_seg("wlan-fromds", 105, &data_frame(0x08, 0x02, &snap_ip()));
    the_seg(
        "wlan-qos",
        105,
        &data_frame(0x88, 0x01, &cat(&[&[0x05, 0x00], &snap_ip()])),
    );
    the_seg(
        "wlan-4addr",
        105,
        &data_frame(0x88, 0x03, &cat(&[&[0x00, 0x00], &snap_ip()])),
    );
    the_seg(
        "wlan-htc",
        105,
        &data_frame(0x88, 0x81, &cat(&[&[0, 0], &[0; 4], &snap_ip()])),
    );
    no_seg(
        "wlan-protected",
        105,
        &data_frame(0x08, 0x41, &cat(&[&[0; 8], &snap_ip()])),
    );
    no_seg(
        "wlan-qos-null",
        105,
        &data_frame(0xC8, 0x01, &cat(&[&[0, 0], &snap_ip()])),
    );
    no_seg("wlan-fragment", 105, &data_frame(0x08, 0x05, &snap_ip()));
    let mut pv3 = data_frame(0x08, 0x01, &snap_ip());
    pv3[0] |= 3;
    no_seg("wlan-pv3", 105, &pv3);
    let mut frag3 = data_frame(0x08, 0x01, &snap_ip());
    frag3[22] = 0x13;
    the_seg("wlan-frag3-last", 105, &frag3);
}

#[test]
fn tsharks_guesses_for_payloads_without_llc() {
    // tshark: tcp.len 10 when the body is an Ethernet frame whose destination is the
    // frame's (FromDS: addr1), after two zero bytes (OLPC/Atheros) with LLC, and for an
    // EtherType 0x0800 straight after the header (EPD).
    let mut e = eth(0x0800, &ip4_seg());
    e[..6].copy_from_slice(&A1);
    the_seg("wlan-bare-eth", 105, &data_frame(0x08, 0x02, &e));
    the_seg(
        "wlan-zero-pad",
        105,
        &data_frame(0x08, 0x01, &cat(&[&[0, 0], &snap_ip()])),
    );
    the_seg(
        "wlan-epd",
        105,
        &data_frame(0x08, 0x01, &cat(&[&[0x08, 0x00], &ip4_seg()])),
    );
}

#[test]
fn mesh_control_is_found_as_tshark_guesses_it() {
    // tshark: tcp.len 10 in a four-address QoS frame with a 6-byte mesh control (flags
    // 0) followed by LLC/SNAP, and in one with mesh address extension 1 (12 bytes).
    for (name, flags) in [("wlan-mesh", 0u8), ("wlan-mesh-ae1", 1)] {
        let mesh = cat(&[&[flags, 5, 1, 0, 0, 0], &vec![0; 6 * flags as usize]]);
        the_seg(
            name,
            105,
            &data_frame(0x88, 0x03, &cat(&[&[0x00, 0x01], &mesh, &snap_ip()])),
        );
    }
}

#[test]
fn an_a_msdu_carries_one_segment_per_subframe() {
    // tshark: two TCP segments in one frame (frame 1 shows tcp.len 10,20), each
    // subframe DA, SA, length, LLC/SNAP, padded to 4 bytes.
    let sub = |len: usize| {
        let payload = cat(&[
            &[0xAA, 0xAA, 0x03, 0, 0, 0, 0x08, 0x00],
            &ip4(
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                6,
                &tcp(1000, 80, 7, 9, 0x10, 512, len),
            ),
        ]);
        let mut v = cat(&[&A3, &A2, &(payload.len() as u16).to_be_bytes(), &payload]);
        v.resize(v.len().div_ceil(4) * 4, 0);
        v
    };
    let f = data_frame(0x88, 0x01, &cat(&[&[0x80, 0x00], &sub(10), &sub(20)]));
    dump("wlan-amsdu", 105, &f);
    let hs = all(105, &f);
    assert_eq!(
        hs.iter().map(|h| h.seglen()).collect::<Vec<_>>(),
        vec![Some(10), Some(20)]
    );
}

fn radiotap(present: u32, fields: &[u8]) -> Vec<u8> {
    let len = 8 + fields.len();
    let mut v = vec![0, 0];
    v.extend((len as u16).to_le_bytes());
    v.extend(present.to_le_bytes());
    v.extend(fields);
    v
}

#[test]
fn radiotap_length_data_pad_and_fcs() {
    // tshark: tcp.len 10 behind an 8-byte radiotap header; behind flags with data pad
    // (a QoS header of 26 bytes padded to 28) and FCS (4 bytes after the segment, not
    // counted); behind TSFT then flags (aligned at 8); and with a radiotap version of 1
    // ("invalid") the flags are not read, so pad bytes 12 34 are read as LLC: nothing.
    let qos_padded = data_frame(
        0x88,
        0x01,
        &cat(&[&[0, 0], &[0, 0], &snap_ip(), &[0xDE, 0xAD, 0xBE, 0xEF]]),
    );
    the_seg(
        "radiotap-plain",
        127,
        &cat(&[&radiotap(0, &[]), &data_frame(0x08, 0x01, &snap_ip())]),
    );
    the_seg(
        "radiotap-pad-fcs",
        127,
        &cat(&[&radiotap(2, &[0x30]), &qos_padded]),
    );
    let tsft_flags = radiotap(3, &cat(&[&[0; 8], &[0x30], &[0; 3]]));
    the_seg("radiotap-tsft", 127, &cat(&[&tsft_flags, &qos_padded]));
    let odd_pad = data_frame(0x88, 0x01, &cat(&[&[0, 0], &[0x12, 0x34], &snap_ip(), &[0; 4]]));
    the_seg("radiotap-pad-12", 127, &cat(&[&radiotap(2, &[0x30]), &odd_pad]));
    let mut v1 = cat(&[&radiotap(2, &[0x30]), &odd_pad]);
    v1[0] = 1;
    no_seg("radiotap-v1", 127, &v1);
    // Nor when the presence word names both the radiotap and a vendor namespace.
    no_seg(
        "radiotap-both-ns",
        127,
        &cat(&[&radiotap(0x6000_0002, &[0x30]), &odd_pad]),
    );
}

fn ppi(fields: &[u8], dlt: u32) -> Vec<u8> {
    let mut v = vec![0, 0];
    v.extend(((8 + fields.len()) as u16).to_le_bytes());
    v.extend(dlt.to_le_bytes());
    v.extend(fields);
    v
}

#[test]
fn ppi_with_80211_or_ethernet_inside() {
    // tshark: tcp.len 10 behind PPI with an 802.11-Common field saying FCS present, and
    // behind PPI naming link type 1 (Ethernet); nothing behind an 802.11n MAC field
    // flagging an A-MPDU (tshark holds it for reassembly).
    let mut common = vec![2, 0, 20, 0];
    common.extend([0; 8]);
    common.extend([1, 0]);
    common.extend([0; 10]);
    let fcs = cat(&[&data_frame(0x08, 0x01, &snap_ip()), &[0; 4]]);
    the_seg("ppi-80211", 192, &cat(&[&ppi(&common, 105), &fcs]));
    the_seg("ppi-eth", 192, &cat(&[&ppi(&[], 1), &eth(0x0800, &ip4_seg())]));
    let mut n_mac = vec![3, 0, 12, 0];
    n_mac.extend(0x30u32.to_le_bytes());
    n_mac.extend([0; 8]);
    no_seg(
        "ppi-ampdu",
        192,
        &cat(&[&ppi(&n_mac, 105), &data_frame(0x08, 0x01, &snap_ip())]),
    );
}

#[test]
fn avs_and_prism_headers() {
    // tshark: tcp.len 10 behind a 64-byte AVS header (163), a 144-byte Prism header
    // (119, message code 0x44 little-endian), an AVS header in a Prism link, and a Prism
    // link frame with no radio header at all.
    let data = data_frame(0x08, 0x01, &snap_ip());
    let mut avs = vec![0x80, 0x21, 0x10, 0x01, 0, 0, 0, 64];
    avs.resize(64, 0);
    the_seg("avs", 163, &cat(&[&avs, &data]));
    let mut prism = 0x44u32.to_le_bytes().to_vec();
    prism.extend(144u32.to_le_bytes());
    prism.resize(144, 0);
    the_seg("prism", 119, &cat(&[&prism, &data]));
    the_seg("prism-avs", 119, &cat(&[&avs, &data]));
    the_seg("prism-none", 119, &data);
}
