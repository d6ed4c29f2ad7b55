//! A TPACKET_V2 receive ring (PACKET_RX_RING): the kernel copies each frame into a slot
//! of memory shared with us (mmap) and marks the slot TP_STATUS_USER; we read frames in
//! place, with no system call while frames keep coming, and hand each slot back
//! (TP_STATUS_KERNEL) when done with it.
//!
//! Why V2 and not V3: a V3 block goes to user space only when full or when its retire
//! timer fires (at least 1 ms), which at low load adds a millisecond to every frame;
//! V2 hands over each frame as it lands.
//!
//! Owns the ring's geometry, its mmap, and the checked reading of a slot
//! ([`parse_slot`]: a slot's header comes from the kernel, but every offset in it is
//! checked against the slot's bounds before a byte of the frame is read). Does not own
//! sending (the `afpacket` module's sockets) or what a frame means.

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};

use thiserror::Error;

use crate::afpacket::{self, setsockopt, SockOpts};

/// The slot header (struct tpacket2_hdr) is 32 bytes; the sockaddr_ll the kernel puts
/// after it starts at its 16-byte-aligned end.
const SLL_OFFSET: usize = 32;
const SLL_LEN: usize = size_of::<libc::sockaddr_ll>();
/// The kernel's TPACKET2_HDRLEN: no frame starts before it.
pub const TPACKET2_HDRLEN: usize = SLL_OFFSET + SLL_LEN;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
/// The slot holds the start of a frame too large for it; the whole frame waits in the
/// socket's receive queue (PACKET_COPY_THRESH).
const TP_STATUS_COPY: u32 = 2;
const PACKET_COPY_THRESH: i32 = 7;
/// Slot sizes are multiples of this (TPACKET_ALIGNMENT).
const ALIGN: usize = 16;

/// Why a slot's contents cannot be read as a frame.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SlotError {
    #[error("slot of {0} bytes is shorter than its header ({TPACKET2_HDRLEN} bytes)")]
    Short(usize),
    #[error("frame at offset {mac} (with {vnet} bytes of virtio-net header) begins inside the slot header")]
    MacInHeader { mac: usize, vnet: usize },
    #[error("frame at offset {mac}, {snaplen} bytes, runs past the end of its {slot}-byte slot")]
    PastEnd { mac: usize, snaplen: usize, slot: usize },
}

/// A frame read from a slot: the bytes to use and what the kernel said about them.
#[derive(Debug, PartialEq, Eq)]
pub struct SlotFrame<'a> {
    /// The virtio-net header (when the ring has one) followed by the frame.
    pub data: &'a [u8],
    /// The frame's length on the interface (more than `data` holds when cut).
    pub len: usize,
    /// The kernel's receive time (CLOCK_REALTIME, ns).
    pub stamp_ns: u64,
    /// One of the PACKET_* packet types (PACKET_OUTGOING: our own transmission).
    pub pkttype: u8,
    /// The whole frame is in the socket's receive queue (the slot has its start).
    pub queued: bool,
}

impl SlotFrame<'_> {
    /// The slot held less than the whole frame (it was larger than a slot).
    pub fn cut(&self, vnet: usize) -> bool {
        self.data.len() < self.len + vnet
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads the frame out of one slot (header, sockaddr_ll, frame). `vnet` is the length
/// of the virtio-net header the kernel writes just before the frame. Every offset and
/// length in the header is checked against the slot, so a corrupt header yields an
/// error, never a read outside the slot.
pub fn parse_slot(slot: &[u8], vnet: usize) -> Result<SlotFrame<'_>, SlotError> {
    if slot.len() < TPACKET2_HDRLEN {
        return Err(SlotError::Short(slot.len()));
    }
    let status = u32_at(slot, 0);
    let len = u32_at(slot, 4) as usize;
    let snaplen = u32_at(slot, 8) as usize;
    let mac = u16_at(slot, 12) as usize;
    let (sec, nsec) = (u32_at(slot, 16) as u64, u32_at(slot, 20) as u64);
    // sockaddr_ll: family u16, protocol u16, ifindex i32, hatype u16, pkttype u8, ...
    let pkttype = slot[SLL_OFFSET + 10];
    if mac < TPACKET2_HDRLEN + vnet {
        return Err(SlotError::MacInHeader { mac, vnet });
    }
    let end = mac.checked_add(snaplen).filter(|&e| e <= slot.len());
    let Some(end) = end else {
        return Err(SlotError::PastEnd {
            mac,
            snaplen,
            slot: slot.len(),
        });
    };
    Ok(SlotFrame {
        data: &slot[mac - vnet..end],
        len,
        stamp_ns: sec * 1_000_000_000 + nsec,
        pkttype,
        queued: status & TP_STATUS_COPY != 0,
    })
}

/// The ring's shape: `frames` slots of `frame_size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub frame_size: usize,
    pub frames: usize,
}

impl Geometry {
    /// A ring whose slots hold frames of up to `max_frame` bytes (plus the headers)
    /// and that holds `bytes` of them in all (at least 64 slots).
    pub fn for_frames(max_frame: usize, vnet: usize, bytes: usize) -> Geometry {
        // The frame starts at TPACKET_ALIGN(hdrlen + 16) + vnet or so; leave room.
        let need = TPACKET2_HDRLEN + 64 + vnet + max_frame;
        let frame_size = need.div_ceil(ALIGN) * ALIGN;
        Geometry {
            frame_size,
            frames: (bytes / frame_size).max(64),
        }
    }

    /// The kernel's tpacket_req: one slot per block when a slot exceeds a page (a block
    /// is a run of whole pages), else as many slots as a page holds.
    fn request(&self) -> libc::tpacket_req {
        let page = page_size();
        let block = if self.frame_size >= page {
            self.frame_size.div_ceil(page) * page
        } else {
            page
        };
        let per_block = block / self.frame_size;
        let blocks = self.frames.div_ceil(per_block);
        libc::tpacket_req {
            tp_block_size: block as u32,
            tp_block_nr: blocks as u32,
            tp_frame_size: self.frame_size as u32,
            tp_frame_nr: (blocks * per_block) as u32,
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// An AF_PACKET socket with a TPACKET_V2 receive ring, bound to one interface.
pub struct RxRing {
    fd: OwnedFd,
    pub name: String,
    map: *mut u8,
    map_len: usize,
    /// Where each slot starts (slots do not straddle blocks; blocks may have a tail).
    slots: Vec<usize>,
    frame_size: usize,
    /// The next slot to look at; slots are handed to us and back in order.
    head: usize,
    vnet: usize,
}

// SAFETY: the mapping belongs to the ring alone and is unmapped only on drop.
unsafe impl Send for RxRing {}

impl RxRing {
    /// Opens the ring on `name` (all protocols, promiscuous, our own transmissions
    /// ignored); `vnet`: each frame comes with a virtio-net header (superframes whole).
    /// `queue_big`: a frame larger than a slot also goes whole to the socket's receive
    /// queue (up to `queue_bytes` there), its slot marked [`SlotFrame::queued`].
    pub fn open(name: &str, vnet: bool, geo: Geometry, queue_big: Option<usize>) -> io::Result<RxRing> {
        let fd = afpacket::packet_socket(
            name,
            SockOpts {
                vnet,
                receive: true,
                // Set before the ring: PACKET_VERSION must precede PACKET_RX_RING.
                version: Some(libc::tpacket_versions::TPACKET_V2 as i32),
            },
        )?;
        let raw = fd.as_raw_fd();
        if let Some(bytes) = queue_big {
            setsockopt(raw, libc::SOL_PACKET, PACKET_COPY_THRESH, &1i32)?;
            let bytes = bytes.min(i32::MAX as usize) as i32;
            setsockopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &bytes)?;
        }
        let req = geo.request();
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_RX_RING, &req)?;
        let map_len = req.tp_block_size as usize * req.tp_block_nr as usize;
        // SAFETY: a fresh shared mapping of the ring the kernel just made for raw.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                raw,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut ring = RxRing {
            fd,
            name: name.to_string(),
            map: map as *mut u8,
            map_len,
            slots: vec![],
            frame_size: req.tp_frame_size as usize,
            head: 0,
            vnet: if vnet { afpacket::VNET_HDR_LEN } else { 0 },
        };
        // Bound only now, so that every frame lands in the ring (none in the queue).
        afpacket::bind(raw, name, libc::ETH_P_ALL as u16)?;
        let per_block = req.tp_block_size / req.tp_frame_size;
        ring.slots = (0..req.tp_block_nr as usize)
            .flat_map(|b| {
                (0..per_block as usize)
                    .map(move |i| b * req.tp_block_size as usize + i * req.tp_frame_size as usize)
            })
            .collect();
        Ok(ring)
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// A second descriptor of the ring's socket (to read its receive queue).
    pub fn try_clone_fd(&self) -> io::Result<OwnedFd> {
        self.fd.try_clone()
    }

    /// Bytes of virtio-net header before each frame.
    pub fn vnet(&self) -> usize {
        self.vnet
    }

    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    fn status(&self, k: usize) -> &AtomicU32 {
        let at = self.slots[(self.head + k) % self.slots.len()];
        // SAFETY: `at` is the start of a slot inside the mapping, 16-byte aligned (slots
        // are multiples of 16 from page-aligned blocks); tp_status is its first word,
        // shared with the kernel, which writes it only while it owns the slot.
        unsafe { &*(self.map.add(at) as *const AtomicU32) }
    }

    /// How many slots from the head are ours (filled by the kernel), up to `max`.
    pub fn ready(&self, max: usize) -> usize {
        let max = max.min(self.slots.len());
        (0..max)
            .take_while(|&k| self.status(k).load(Ordering::Acquire) & TP_STATUS_USER != 0)
            .count()
    }

    /// The frame in the k-th slot from the head; only for k < [`RxRing::ready`].
    pub fn frame(&self, k: usize) -> Result<SlotFrame<'_>, SlotError> {
        debug_assert!(self.status(k).load(Ordering::Acquire) & TP_STATUS_USER != 0);
        let at = self.slots[(self.head + k) % self.slots.len()];
        // SAFETY: the slot lies inside the mapping (at + frame_size <= map_len by the
        // geometry) and is ours until `release` hands it back, so the kernel does not
        // write it while this borrow of self lives (release takes &mut self).
        let slot = unsafe { std::slice::from_raw_parts(self.map.add(at), self.frame_size) };
        parse_slot(slot, self.vnet)
    }

    /// Hands the first `n` slots from the head back to the kernel.
    pub fn release(&mut self, n: usize) {
        for k in 0..n {
            self.status(k).store(TP_STATUS_KERNEL, Ordering::Release);
        }
        self.head = (self.head + n) % self.slots.len();
    }

    /// Frames the kernel dropped because the ring was full, since the last call.
    pub fn drops(&self) -> u64 {
        afpacket::drops(self.raw_fd())
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: map/map_len are the mapping made in open, unmapped once here.
        unsafe { libc::munmap(self.map as *mut libc::c_void, self.map_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slot as the kernel writes it: header, sockaddr_ll, frame at `mac`.
    fn slot(size: usize, len: u32, snaplen: u32, mac: u16, frame: &[u8]) -> Vec<u8> {
        let mut s = vec![0u8; size];
        s[0..4].copy_from_slice(&TP_STATUS_USER.to_ne_bytes());
        s[4..8].copy_from_slice(&len.to_ne_bytes());
        s[8..12].copy_from_slice(&snaplen.to_ne_bytes());
        s[12..14].copy_from_slice(&mac.to_ne_bytes());
        s[16..20].copy_from_slice(&7u32.to_ne_bytes());
        s[20..24].copy_from_slice(&5u32.to_ne_bytes());
        s[SLL_OFFSET + 10] = libc::PACKET_HOST;
        let m = mac as usize;
        let n = frame.len().min(size.saturating_sub(m));
        if m < size {
            s[m..m + n].copy_from_slice(&frame[..n]);
        }
        s
    }

    #[test]
    fn a_frame_is_read_where_the_header_says() {
        let frame: Vec<u8> = (0..100u8).collect();
        let s = slot(2048, 100, 100, 80, &frame);
        let f = parse_slot(&s, 0).unwrap();
        assert_eq!(f.data, &frame[..]);
        assert_eq!(
            (f.len, f.stamp_ns, f.pkttype),
            (100, 7_000_000_005, libc::PACKET_HOST)
        );
        assert!(!f.cut(0));
        // with a virtio-net header: the ten bytes before the frame come along
        let f = parse_slot(&s, 10).unwrap();
        assert_eq!(f.data.len(), 110);
        assert_eq!(&f.data[10..], &frame[..]);
    }

    #[test]
    fn a_cut_frame_says_so_and_whether_it_waits_whole_in_the_queue() {
        let mut s = slot(2048, 5000, 1968, 80, &[1u8; 1968]);
        let f = parse_slot(&s, 0).unwrap();
        assert_eq!((f.data.len(), f.len), (1968, 5000));
        assert!(f.cut(0) && !f.queued);
        s[0..4].copy_from_slice(&(TP_STATUS_USER | TP_STATUS_COPY).to_ne_bytes());
        assert!(parse_slot(&s, 0).unwrap().queued);
    }

    #[test]
    fn corrupt_offsets_never_read_outside_the_slot() {
        // snaplen past the end, at the very end, and overflowing mac + snaplen
        let s = slot(2048, 100, 2000, 80, &[]);
        assert_eq!(
            parse_slot(&s, 0),
            Err(SlotError::PastEnd {
                mac: 80,
                snaplen: 2000,
                slot: 2048
            })
        );
        let s = slot(2048, 1968, 1968, 80, &[]);
        assert_eq!(parse_slot(&s, 0).unwrap().data.len(), 1968);
        let s = slot(2048, 1, u32::MAX, u16::MAX, &[]);
        assert!(matches!(parse_slot(&s, 0), Err(SlotError::PastEnd { .. })));
        // mac inside the header, or leaving no room for the virtio-net header
        let s = slot(2048, 10, 10, 8, &[]);
        assert_eq!(parse_slot(&s, 0), Err(SlotError::MacInHeader { mac: 8, vnet: 0 }));
        let s = slot(2048, 10, 10, TPACKET2_HDRLEN as u16 + 4, &[]);
        assert!(parse_slot(&s, 0).is_ok());
        assert!(matches!(parse_slot(&s, 10), Err(SlotError::MacInHeader { .. })));
        // mac beyond the slot
        let s = slot(2048, 0, 0, 4000, &[]);
        assert!(matches!(parse_slot(&s, 0), Err(SlotError::PastEnd { .. })));
        // a slot too short for its header
        assert_eq!(parse_slot(&[0u8; 40], 0), Err(SlotError::Short(40)));
    }

    #[test]
    fn every_header_either_parses_inside_the_slot_or_is_refused() {
        // A deterministic sweep of header values (xorshift), including the edges.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let edges = [0u32, 1, 52, 62, 1023, 2047, 2048, 2049, 65_535, u32::MAX];
        for i in 0..20_000 {
            let size = [64usize, 256, 2048][i % 3];
            let r = next();
            let snaplen = if i % 4 == 0 {
                edges[(r % 10) as usize]
            } else {
                (r >> 8) as u32 % 4096
            };
            let mac = if i % 5 == 0 {
                edges[((r >> 4) % 10) as usize] as u16
            } else {
                (r >> 40) as u16 % 2200
            };
            let mut s = vec![0xa5u8; size];
            s[4..8].copy_from_slice(&((r >> 20) as u32).to_ne_bytes());
            s[8..12].copy_from_slice(&snaplen.to_ne_bytes());
            s[12..14].copy_from_slice(&mac.to_ne_bytes());
            let vnet = if i % 2 == 0 { 0 } else { 10 };
            if let Ok(f) = parse_slot(&s, vnet) {
                let start = f.data.as_ptr() as usize - s.as_ptr() as usize;
                assert!(start >= TPACKET2_HDRLEN && start + f.data.len() <= size, "{i}");
                assert_eq!(f.data.len(), snaplen as usize + vnet);
            }
        }
    }

    #[test]
    fn geometry_fits_frames_and_blocks() {
        let page = page_size();
        let g = Geometry::for_frames(1514, 0, 8 << 20);
        assert_eq!(g.frame_size % ALIGN, 0);
        assert!(g.frame_size >= 1514 + TPACKET2_HDRLEN + 16);
        let r = g.request();
        assert_eq!(r.tp_block_size as usize % page, 0);
        assert_eq!(r.tp_frame_nr, r.tp_block_nr * (r.tp_block_size / r.tp_frame_size));
        assert!(r.tp_frame_nr as usize >= g.frames);
        // superframes: a slot larger than a page takes a block of whole pages
        let g = Geometry::for_frames(65_536, 10, 16 << 20);
        let r = g.request();
        assert!(r.tp_block_size >= r.tp_frame_size && (r.tp_block_size as usize).is_multiple_of(page));
        assert_eq!(r.tp_frame_nr, r.tp_block_nr);
        assert!(Geometry::for_frames(1514, 0, 0).frames >= 64);
    }
}
