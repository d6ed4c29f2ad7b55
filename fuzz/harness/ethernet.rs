//! Frames as the link emulator reads them: `inspect` and `set_ecn_ce` (which must agree:
//! a frame is marked exactly when it was ECN-capable, and then reads as CE with its flow
//! unchanged), and classic BPF programs checked and run on a frame. Input: the frame;
//! its first byte also counts the instructions (up to 31) taken from its end, 8 bytes
//! each (code u16, jt, jf, k u32, little-endian).

use netrig_core::ecn::Ecn;
use netrig_core::wire::bpf::{Insn, Program};
use netrig_core::wire::ethernet::{inspect, set_ecn_ce};

pub fn run(data: &[u8]) {
    let info = inspect(data);
    let mut f = data.to_vec();
    let marked = set_ecn_ce(&mut f);
    assert_eq!(marked, info.ecn.is_capable(), "marking agrees with inspection");
    if marked {
        let after = inspect(&f);
        assert_eq!(after.ecn, Ecn::Ce);
        assert_eq!(
            (after.flow, after.ethertype, after.ip_len),
            (info.flow, info.ethertype, info.ip_len)
        );
    } else {
        assert_eq!(f, data, "an unmarked frame is untouched");
    }
    let n = data.first().map_or(0, |b| (b & 31) as usize).min(data.len() / 8);
    let insns: Vec<Insn> = data[data.len() - n * 8..]
        .chunks_exact(8)
        .map(|c| {
            Insn::new(
                u16::from_le_bytes([c[0], c[1]]),
                c[2],
                c[3],
                u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
            )
        })
        .collect();
    if let Ok(p) = Program::new(insns) {
        let _ = p.run(data, data.len() as u32);
        let _ = p.run(&data[..data.len() / 2], data.len() as u32);
    }
}
