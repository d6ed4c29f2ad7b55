//! Corrupted frames with offloads on, checked with checksums computed here the slow way
//! (the gso tests' helpers), not with the module's own.

use netrig_core::link::loss;
use netrig_core::link::rng::Rng;

use super::*;
use crate::afpacket::VNET_HDR_LEN;
use crate::gso::tests::{naive_sum, payload, superframe, tcp, vnet};
use crate::gso::{F_NEEDS_CSUM, GSO_TCPV4};

/// Whether a TCP over IPv4 frame (14 bytes of Ethernet, 20 of IPv4) passes a receiver's
/// checks: its IPv4 header checksum and its TCP checksum over the pseudo-header.
fn accepted(f: &[u8]) -> bool {
    if naive_sum(&f[14..34]) != 0xffff {
        return false;
    }
    let mut ph = f[26..34].to_vec();
    ph.extend_from_slice(&[0, 6]);
    ph.extend_from_slice(&((f.len() - 34) as u16).to_be_bytes());
    ph.extend_from_slice(&f[34..]);
    naive_sum(&ph) == 0xffff
}

/// A packet as the daemon makes it: the virtio-net header, then the frame.
fn packet(hdr: [u8; VNET_HDR_LEN], frame: &[u8]) -> Packet {
    let mut data = hdr.to_vec();
    data.extend_from_slice(frame);
    Packet {
        len: frame.len() as u32,
        data,
        head: VNET_HDR_LEN as u32,
        ..Default::default()
    }
}

#[test]
fn a_frame_left_to_the_device_gets_its_checksum_before_the_bit_flips() {
    // One TCP segment whose checksum the kernel left to the device (NEEDS_CSUM), as
    // with offloads on: as it comes, the checksum field holds only the pseudo-header's.
    let frame = superframe(false, tcp(1000, 0x18), &payload(1000), 7);
    assert!(!accepted(&frame), "a partial checksum is no checksum");
    let mut rng = Rng::new(3);
    let mut segs = Segments::default();
    for _ in 0..2_000 {
        let mut p = packet(vnet(GSO_NONE, 0, 34, 16), &frame);
        loss::corrupt(&mut p, &mut rng);
        let flip = p.flip.expect("a bit flipped");
        assert!(
            flip.byte >= VNET_HDR_LEN + 14,
            "past the virtio-net and Ethernet headers"
        );
        assert_eq!(
            on_wire(&mut p.data, VNET_HDR_LEN, p.flip, &mut segs),
            OnWire::Completed
        );
        assert_eq!(
            VnetHdr::parse(&p.data).unwrap(),
            VnetHdr::default(),
            "NEEDS_CSUM cleared: a complete frame"
        );
        assert!(!accepted(&p.data[VNET_HDR_LEN..]), "flip at {}", flip.byte);
        // The checksum is the device's: without the flip, the frame is accepted.
        flip.apply(&mut p.data);
        assert!(accepted(&p.data[VNET_HDR_LEN..]));
    }
}

#[test]
fn a_corrupted_superframe_goes_as_its_segments_with_the_bit_in_one() {
    let data = payload(3 * 1448 + 100);
    let frame = superframe(false, tcp(1000, 0x10), &data, 7);
    let hdr = vnet(GSO_TCPV4, 1448, 34, 16);
    let mut segs = Segments::default();
    let mut clean = Segments::default();
    assert_eq!(gso::segment(&hdr, &frame, &mut clean), Ok(true));
    let v = VNET_HDR_LEN;
    // A byte of the third segment's payload; a byte of the headers (the IPv4 TTL),
    // which every segment repeats: the first carries it.
    for (byte, k, at) in [(v + 66 + 2 * 1448 + 5, 2, 66 + 5), (v + 22, 0, 22)] {
        let mut p = packet(hdr, &frame);
        let flip = BitFlip { byte, mask: 0x10 };
        flip.apply(&mut p.data);
        let before = p.data.clone();
        assert_eq!(
            on_wire(&mut p.data, v, Some(flip), &mut segs),
            OnWire::Segments { corrupted: k }
        );
        assert_eq!(p.data, before, "the superframe is left as it was");
        assert_eq!(segs.len(), 4);
        for j in 0..4 {
            let (seg, want) = (segs.get(j), clean.get(j));
            assert_eq!(accepted(seg), j != k, "segment {j}");
            let diff: Vec<usize> = (0..seg.len()).filter(|&i| seg[i] != want[i]).collect();
            assert_eq!(diff, if j == k { vec![at] } else { vec![] });
        }
    }
    // Random flips: always exactly one segment refused.
    let mut rng = Rng::new(11);
    for _ in 0..500 {
        let mut p = packet(hdr, &frame);
        loss::corrupt(&mut p, &mut rng);
        let OnWire::Segments { corrupted } = on_wire(&mut p.data, v, p.flip, &mut segs) else {
            panic!("not cut");
        };
        let refused: Vec<usize> = (0..segs.len()).filter(|&j| !accepted(segs.get(j))).collect();
        assert_eq!(refused, [corrupted], "{:?}", p.flip);
    }
}

#[test]
fn frames_with_complete_checksums_or_nothing_flipped_go_as_they_are() {
    let frame = superframe(false, tcp(1000, 0x18), &payload(100), 7);
    let mut segs = Segments::default();
    let flip = Some(BitFlip {
        byte: VNET_HDR_LEN + 40,
        mask: 1,
    });
    let mut plain = VnetHdr::parse(&vnet(GSO_NONE, 0, 34, 16)).unwrap();
    plain.flags &= !F_NEEDS_CSUM;
    for (hdr, vlen, flip) in [
        (plain.to_bytes(), VNET_HDR_LEN, flip),
        (vnet(GSO_NONE, 0, 34, 16), VNET_HDR_LEN, None),
        (vnet(GSO_NONE, 0, 34, 16), 0, flip),
        // A checksum past the frame: the kernel sends no such frame.
        (vnet(GSO_NONE, 0, 900, 16), VNET_HDR_LEN, flip),
        // A superframe whose headers do not say TCP over IPv4.
        (vnet(GSO_TCPV4 + 3, 1448, 34, 16), VNET_HDR_LEN, flip),
    ] {
        let mut p = packet(hdr, &frame);
        let before = p.data.clone();
        assert_eq!(on_wire(&mut p.data, vlen, flip, &mut segs), OnWire::AsIs);
        assert_eq!(p.data, before);
    }
}

#[test]
fn released_frames_are_put_in_their_wire_form_in_order() {
    let small = superframe(false, tcp(1, 0x18), &payload(100), 1);
    let big = superframe(false, tcp(1000, 0x10), &payload(3 * 1448 + 100), 7);
    let corrupted = |hdr, frame: &[u8], byte| {
        let mut p = packet(hdr, frame);
        let flip = BitFlip { byte, mask: 4 };
        flip.apply(&mut p.data);
        p.flip = Some(flip);
        p.corrupted = true;
        p.duplicated = byte % 2 == 0;
        p
    };
    let mut out = vec![
        (1, packet(vnet(GSO_NONE, 0, 34, 16), &small)),
        (
            2,
            corrupted(vnet(GSO_TCPV4, 1448, 34, 16), &big, VNET_HDR_LEN + 66 + 1448),
        ),
        (3, corrupted(vnet(GSO_NONE, 0, 34, 16), &small, VNET_HDR_LEN + 70)),
    ];
    let mut segs = Segments::default();
    on_wire_all(&mut out, VNET_HDR_LEN, &mut segs);
    let got: Vec<(u64, usize, bool, bool)> = out
        .iter()
        .map(|(due, p)| (*due, p.data.len() - VNET_HDR_LEN, p.corrupted, p.duplicated))
        .collect();
    assert_eq!(
        got,
        [
            (1, small.len(), false, false),
            (2, 1514, false, true),
            (2, 1514, true, true),
            (2, 1514, false, true),
            (2, 166, false, true),
            (3, small.len(), true, true),
        ]
    );
    for (k, (_, p)) in out.iter().enumerate().skip(1) {
        assert_eq!(VnetHdr::parse(&p.data).unwrap(), VnetHdr::default());
        assert_eq!(accepted(&p.data[VNET_HDR_LEN..]), !p.corrupted, "frame {k}");
    }
    // Nothing corrupted, or offloads off: nothing changes.
    let before = out.clone();
    for (_, p) in out.iter_mut() {
        p.corrupted = false;
    }
    let unmarked = out.clone();
    on_wire_all(&mut out, VNET_HDR_LEN, &mut segs);
    assert_eq!(out, unmarked);
    let mut off = before.clone();
    on_wire_all(&mut off, 0, &mut segs);
    assert_eq!(off, before);
}
