//! The receive side of a link end, one of two ways: `recvmmsg` batches into our own
//! buffers (a system call per batch), or a TPACKET_V2 receive ring read in place (a
//! system call only to sleep). The daemon and the bare forwarder (`forward`) both read
//! through this, so the forwarder's figure is the floor of the daemon's I/O.
//!
//! Owns the choice ([`IoKind`]), ring sizing, and a frame's view as both ways give it
//! (bytes, kernel stamp). Does not own sending (`afpacket::PacketSocket::send_batch`).

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::str::FromStr;

use crate::afpacket::{self, PacketSocket, VNET_HDR_LEN};
use crate::ring::{Geometry, RxRing};

/// How a link end is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoKind {
    /// recvmmsg into a batch of buffers.
    Recvmmsg,
    /// A TPACKET_V2 receive ring (mmap): the daemon's default, which costs the least CPU
    /// per frame (bench/link_fidelity's floors).
    #[default]
    Ring,
}

impl FromStr for IoKind {
    type Err = String;
    fn from_str(s: &str) -> Result<IoKind, String> {
        match s {
            "recvmmsg" => Ok(IoKind::Recvmmsg),
            "ring" => Ok(IoKind::Ring),
            _ => Err(format!("io: '{s}' is not one of recvmmsg, ring")),
        }
    }
}

impl IoKind {
    pub fn name(self) -> &'static str {
        match self {
            IoKind::Recvmmsg => "recvmmsg",
            IoKind::Ring => "ring",
        }
    }
}

/// A frame of the last batch: the virtio-net header (if any) and the frame, and when the
/// kernel received it (CLOCK_REALTIME ns).
pub struct RxFrame<'a> {
    pub data: &'a [u8],
    pub stamp_ns: Option<u64>,
}

impl RxFrame<'_> {
    /// When the frame really arrived, on the monotonic clock read as `now` (the wall
    /// clock then read `real_now`): the kernel's stamp, not when it was got round to;
    /// `now` when there is no stamp. The daemon and the bare forwarder time frames alike.
    pub fn arrived(&self, now: u64, real_now: u64) -> u64 {
        self.stamp_ns
            .map(|real| now.saturating_sub(real_now.saturating_sub(real)))
            .unwrap_or(now)
    }
}

pub enum Rx {
    Mmsg(PacketSocket),
    Ring {
        ring: RxRing,
        /// Frames of the current batch (ready slots from the ring's head).
        n: usize,
        /// Slots refused (cut or corrupt), counted as they are read.
        refused: Cell<u64>,
        /// Superframes (with `vnet`: larger than a slot) come whole through the
        /// socket's receive queue, read here in batches ...
        queue: Option<PacketSocket>,
        /// ... and `at_queue[i]` is the message of the batch's i-th frame (NONE: in
        /// its slot).
        at_queue: Vec<usize>,
    },
}

const NONE: usize = usize::MAX;
/// What a ring's receive queue holds of superframes (as recvmmsg's socket buffer).
const QUEUE_BYTES: usize = 8 << 20;

impl Rx {
    /// Opens `name` for reading in batches of up to `batch` frames. A ring holds
    /// `ring_bytes` of slots sized for the interface's MTU (or superframes, with `vnet`).
    pub fn open(name: &str, io: IoKind, vnet: bool, batch: usize, ring_bytes: usize) -> io::Result<Rx> {
        match io {
            IoKind::Recvmmsg => Ok(Rx::Mmsg(PacketSocket::open(name, batch, vnet)?)),
            IoKind::Ring => {
                // Slots for the MTU and Ethernet header, and a VLAN tag's 4 bytes; with
                // vnet, superframes go through the queue (slots of 64 KiB would make a
                // ring of few slots, or of much memory).
                let max = mtu(name)? + 18;
                let hdr = if vnet { VNET_HDR_LEN } else { 0 };
                let queue_big = vnet.then_some(QUEUE_BYTES);
                let ring = RxRing::open(name, vnet, Geometry::for_frames(max, hdr, ring_bytes), queue_big)?;
                let queue = match queue_big {
                    Some(_) => Some(PacketSocket::receiver(ring.try_clone_fd()?, name, batch)),
                    None => None,
                };
                Ok(Rx::Ring {
                    ring,
                    n: 0,
                    refused: Cell::new(0),
                    queue,
                    at_queue: Vec::with_capacity(batch),
                })
            }
        }
    }

    pub fn raw_fd(&self) -> RawFd {
        match self {
            Rx::Mmsg(s) => s.raw_fd(),
            Rx::Ring { ring, .. } => ring.raw_fd(),
        }
    }

    /// Takes what has arrived, up to a batch (never blocks); returns how many frames.
    /// The batch stays valid until [`Rx::done`].
    pub fn recv(&mut self, batch: usize) -> io::Result<usize> {
        match self {
            Rx::Mmsg(s) => s.recv_batch(),
            Rx::Ring {
                ring,
                n,
                queue,
                at_queue,
                ..
            } => {
                *n = ring.ready(batch);
                at_queue.clear();
                if let Some(q) = queue {
                    let mut k = 0;
                    for i in 0..*n {
                        let queued = ring.frame(i).map(|f| f.queued).unwrap_or(false);
                        at_queue.push(if queued { k } else { NONE });
                        k += usize::from(queued);
                    }
                    // The queue holds the queued frames in the ring's order: take as
                    // many as this batch's slots stand for. One missing from the queue
                    // is only its slot's start: refused (see frame).
                    let got = if k > 0 { q.recv_upto(k)? } else { 0 };
                    for j in at_queue.iter_mut().filter(|j| **j >= got) {
                        *j = NONE;
                    }
                }
                Ok(*n)
            }
        }
    }

    /// Where the i-th frame of a ring's batch is whole: in the queue (message index).
    fn queued(&self, i: usize) -> Option<usize> {
        match self {
            Rx::Ring { at_queue, .. } => at_queue.get(i).copied().filter(|&j| j != NONE),
            Rx::Mmsg(_) => None,
        }
    }

    /// The i-th frame of the batch; None for a frame to skip (our own transmission, or
    /// a ring slot cut or corrupt).
    pub fn frame(&self, i: usize) -> Option<RxFrame<'_>> {
        match self {
            Rx::Mmsg(s) => s.frame(i).map(|data| RxFrame {
                data,
                stamp_ns: s.stamp_ns(i),
            }),
            Rx::Ring {
                ring, refused, queue, ..
            } => {
                // A frame is whole in its slot, or (cut there) in the queue.
                let whole = self.queued(i).and_then(|j| queue.as_ref()?.frame(j));
                match ring.frame(i) {
                    Ok(f) if f.pkttype == libc::PACKET_OUTGOING => None,
                    Ok(f) if whole.is_some() || !f.cut(ring.vnet()) => Some(RxFrame {
                        data: whole.unwrap_or(f.data),
                        stamp_ns: Some(f.stamp_ns),
                    }),
                    _ => {
                        refused.set(refused.get() + 1);
                        None
                    }
                }
            }
        }
    }

    /// Whether the i-th frame's buffer can be handed over whole ([`Rx::take`]): it
    /// was received into a buffer of ours, not a ring slot.
    pub fn can_take(&self, i: usize) -> bool {
        matches!(self, Rx::Mmsg(_)) || self.queued(i).is_some()
    }

    /// Hands over the i-th frame's buffer (see `PacketSocket::take`); only where
    /// [`Rx::can_take`].
    pub fn take(&mut self, i: usize, spare: Vec<u8>) -> Vec<u8> {
        let j = self.queued(i);
        match (self, j) {
            (Rx::Mmsg(s), _) => s.take(i, spare),
            (Rx::Ring { queue: Some(q), .. }, Some(j)) => q.take(j, spare),
            _ => unreachable!("a ring slot's frame is copied, never taken"),
        }
    }

    /// Done with the batch: a ring's slots go back to the kernel.
    pub fn done(&mut self) {
        if let Rx::Ring {
            ring, n, at_queue, ..
        } = self
        {
            ring.release(*n);
            *n = 0;
            at_queue.clear();
        }
    }

    /// Frames the kernel dropped for want of room since the last call, and ring slots
    /// refused (cut or corrupt) since the last call.
    pub fn take_drops(&mut self) -> (u64, u64) {
        match self {
            Rx::Mmsg(s) => (afpacket::drops(s.raw_fd()), 0),
            // PACKET_STATISTICS counts the ring's drops and the queue's together.
            Rx::Ring { ring, refused, .. } => (ring.drops(), refused.replace(0)),
        }
    }
}

/// The interface's MTU.
pub fn mtu(name: &str) -> io::Result<usize> {
    const SIOCGIFMTU: libc::c_ulong = 0x8921;
    // SAFETY: a plain datagram socket for the ioctl; closed by OwnedFd.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: raw is ours.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: a zeroed ifreq is valid; the name is copied bounded, and the kernel
    // writes ifru_mtu.
    unsafe {
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (d, s) in ifr.ifr_name.iter_mut().zip(name.bytes().take(libc::IFNAMSIZ - 1)) {
            *d = s as libc::c_char;
        }
        if libc::ioctl(fd.as_raw_fd(), SIOCGIFMTU, &mut ifr) < 0 {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{name}: MTU: {}", io::Error::last_os_error()),
            ));
        }
        Ok(ifr.ifr_ifru.ifru_mtu.max(0) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_kinds_are_named() {
        for k in [IoKind::Recvmmsg, IoKind::Ring] {
            assert_eq!(k.name().parse::<IoKind>(), Ok(k));
        }
        assert!("xdp".parse::<IoKind>().unwrap_err().contains("recvmmsg, ring"));
    }

    #[test]
    fn a_frame_arrived_when_the_kernel_stamped_it() {
        let f = |stamp_ns| RxFrame { data: &[], stamp_ns };
        // Read at monotonic 10 s = wall 1,000 s; stamped 2 ms before that.
        assert_eq!(
            f(Some(999_998_000_000)).arrived(10_000_000_000, 1_000_000_000_000),
            9_998_000_000
        );
        assert_eq!(f(None).arrived(10_000_000_000, 1_000_000_000_000), 10_000_000_000);
        // A stamp from the future (the wall clock stepped back) is now, not later.
        assert_eq!(f(Some(1_000_000_000_005)).arrived(10, 1_000_000_000_000), 10);
    }
}
