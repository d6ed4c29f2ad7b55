//! What a frame the link corrupted must be on the wire when offloads are on.
//!
//! The core's `corrupt` stage flips one bit of a frame as it arrives, and says which
//! (`Packet::flip`). With offloads off every checksum of the frame is complete, so the
//! receiver finds the bit wrong and drops the frame, as behind a real wire. With offloads
//! on, a frame may come with its transport checksum left to the device (virtio-net
//! `NEEDS_CSUM`, the kernel's CHECKSUM_PARTIAL): written back so, the receiving veth
//! trusts the checksum, and the corrupted frame would be accepted. So before such a frame
//! leaves, it is given the checksum a device would have computed over the bytes as they
//! were sent (the flip undone, the checksum completed, the flip made again), and it goes
//! as a complete frame (its virtio-net header cleared: no partial checksum, nothing
//! verified, so the receiver checks it).
//!
//! A superframe goes as its segments, as [`crate::gso`] cuts them for a capture (each
//! with its own complete checksums), the bit flipped in the one segment that carries the
//! flipped byte: where it is in the payload, or, for a byte of the headers every segment
//! repeats, in the first (netem likewise segments a GSO packet it corrupts and flips a
//! bit of the first segment). The others arrive intact, as they would have on a wire.
//!
//! A frame this cannot complete or cut (a checksum or headers past its end: the kernel
//! hands over none such) goes as it is. Pure: no I/O, no clock.

use netrig_core::link::packet::{BitFlip, Packet};

use crate::gso::{self, Segments, VnetHdr, GSO_NONE};

/// What a corrupted frame has become.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnWire {
    /// It goes as it is (its checksums were complete, or cannot be made so).
    AsIs,
    /// Its checksum completed in place and its virtio-net header cleared.
    Completed,
    /// It goes as the frames in the segments buffer; the bit is flipped in `corrupted`.
    Segments { corrupted: usize },
}

/// Makes `data` (a virtio-net header of `vnet` bytes, then the frame), whose bit `flip`
/// the corrupt stage flipped, what the wire would carry (see the module's doc). For
/// [`OnWire::Segments`], `segs` holds the frames (without headers) and `data` is left
/// as it was.
pub fn on_wire(data: &mut [u8], vnet: usize, flip: Option<BitFlip>, segs: &mut Segments) -> OnWire {
    let Some(flip) = flip else {
        return OnWire::AsIs; // nothing was flipped
    };
    if vnet == 0 || data.len() < vnet {
        return OnWire::AsIs;
    }
    let (hdr, frame) = data.split_at_mut(vnet);
    let Some(h) = VnetHdr::parse(hdr) else {
        return OnWire::AsIs;
    };
    let Some(at) = flip.byte.checked_sub(vnet).filter(|&at| at < frame.len()) else {
        return OnWire::AsIs;
    };
    let flip = BitFlip {
        byte: at,
        mask: flip.mask,
    };
    flip.apply(frame); // the frame as it was sent
    let wire = if h.gso_type == GSO_NONE {
        match gso::complete(&h, frame) {
            Ok(true) => {
                hdr.copy_from_slice(&VnetHdr::default().to_bytes());
                OnWire::Completed
            }
            _ => OnWire::AsIs,
        }
    } else {
        match (gso::segment(hdr, frame, segs), gso::header_len(frame)) {
            (Ok(true), Some(hl)) if !segs.is_empty() && h.gso_size > 0 => {
                let gso_size = h.gso_size as usize;
                let (k, byte) = if at < hl {
                    (0, at)
                } else {
                    ((at - hl) / gso_size, hl + (at - hl) % gso_size)
                };
                let k = k.min(segs.len() - 1);
                BitFlip { byte, ..flip }.apply(segs.get_mut(k));
                OnWire::Segments { corrupted: k }
            }
            _ => OnWire::AsIs,
        }
    };
    flip.apply(frame); // as the corrupt stage left it
    wire
}

/// Puts every corrupted frame of `out` (frames a direction releases, each with its due
/// time) in its wire form: a superframe's segments take its place, in order, each a
/// packet of its own with a cleared virtio-net header, only the one with the flipped
/// bit marked corrupted.
pub fn on_wire_all(out: &mut Vec<(u64, Packet)>, vnet: usize, segs: &mut Segments) {
    if vnet == 0 || !out.iter().any(|(_, p)| p.corrupted) {
        return;
    }
    let mut i = 0;
    while i < out.len() {
        let (due, p) = &mut out[i];
        if !p.corrupted {
            i += 1;
            continue;
        }
        let OnWire::Segments { corrupted } = on_wire(&mut p.data, vnet, p.flip, segs) else {
            i += 1;
            continue;
        };
        let (due, whole) = (*due, std::mem::take(p));
        let parts: Vec<(u64, Packet)> = segs
            .iter()
            .enumerate()
            .map(|(k, seg)| {
                let mut data = Vec::with_capacity(vnet + seg.len());
                data.resize(vnet, 0);
                data.extend_from_slice(seg);
                let p = Packet {
                    id: whole.id,
                    len: seg.len() as u32,
                    segments: 1,
                    flow: whole.flow,
                    ecn: whole.ecn,
                    enqueued_ns: whole.enqueued_ns,
                    data,
                    head: vnet as u32,
                    duplicated: whole.duplicated,
                    corrupted: k == corrupted,
                    flip: None,
                };
                (due, p)
            })
            .collect();
        let n = parts.len();
        out.splice(i..=i, parts);
        i += n;
    }
}

#[cfg(test)]
mod tests;
