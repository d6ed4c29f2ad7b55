//! Queues and their disciplines, one per file, all behind [`Qdisc`].
//!
//! A discipline owns its packets between `enqueue` and `dequeue`. Both take `now` (ns)
//! and a sink for the packets it drops, with the reason, so that the caller can count
//! drops by cause, log them, and free their buffers. A discipline never reads a clock
//! and takes its randomness from the [`Rng`](crate::link::rng::Rng) it is given.
//!
//! Disciplines: `droptail` (Linux pfifo/bfifo), `codel` (RFC 8289), `fq_codel`
//! (RFC 8290), `pie` (RFC 8033), `red` (Floyd & Jacobson, Linux sch_red).

use crate::link::packet::Packet;
use crate::link::rng::Rng;

pub mod codel;
pub mod droptail;
pub mod fq_codel;
pub mod pie;
pub mod red;

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropCause {
    /// The queue's packet or byte limit was reached.
    Overflow,
    /// The AQM chose to drop it (CoDel's control law, PIE's probability, RED, ...).
    Aqm,
}

/// Where a discipline puts the packets it drops.
pub type Drops = Vec<(Packet, DropCause)>;

/// A queue's capacity: packets, bytes, or both (whichever is reached first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub packets: Option<u32>,
    pub bytes: Option<u64>,
}

impl Limit {
    pub const fn packets(n: u32) -> Limit {
        Limit {
            packets: Some(n),
            bytes: None,
        }
    }

    pub const fn bytes(n: u64) -> Limit {
        Limit {
            packets: None,
            bytes: Some(n),
        }
    }

    pub const UNLIMITED: Limit = Limit {
        packets: None,
        bytes: None,
    };

    /// Whether one more packet of `len` bytes fits beside `packets`/`bytes` queued.
    pub fn admits(&self, packets: usize, bytes: u64, len: u32) -> bool {
        self.packets.is_none_or(|p| (packets as u64) < p as u64)
            && self.bytes.is_none_or(|b| bytes + len as u64 <= b)
    }
}

/// Counters every discipline keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    pub enqueued: u64,
    pub dequeued: u64,
    pub dequeued_bytes: u64,
    pub drops_overflow: u64,
    pub drops_aqm: u64,
    pub ecn_marks: u64,
}

/// A queueing discipline. `now_ns` never goes backwards between calls.
pub trait Qdisc: Send {
    /// Takes a packet; drops it (or another, for FQ) into `drops` if it must.
    fn enqueue(&mut self, now_ns: u64, pkt: Packet, rng: &mut Rng, drops: &mut Drops);
    /// The next packet to send, if any; may drop packets into `drops` on the way
    /// (CoDel drops at dequeue). Sets nothing on the packet but ECN marks.
    fn dequeue(&mut self, now_ns: u64, rng: &mut Rng, drops: &mut Drops) -> Option<Packet>;
    fn len_packets(&self) -> usize;
    fn len_bytes(&self) -> u64;
    fn stats(&self) -> QueueStats;
    /// Short name for stats ("droptail", "codel", "pie", "fq_codel", "red").
    fn name(&self) -> &'static str;
}

/// The FIFO every single-queue discipline keeps: packets, their bytes, and the
/// enqueue/dequeue counters (drops and marks are the discipline's to count).
#[derive(Debug, Default)]
pub struct Fifo {
    q: std::collections::VecDeque<Packet>,
    pub bytes: u64,
    pub stats: QueueStats,
}

impl Fifo {
    /// Queues `pkt`, stamping its enqueue time.
    pub fn push(&mut self, now_ns: u64, mut pkt: Packet) {
        pkt.enqueued_ns = now_ns;
        self.bytes += pkt.len as u64;
        self.stats.enqueued += 1;
        self.q.push_back(pkt);
    }

    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.len as u64;
        self.stats.dequeued += 1;
        self.stats.dequeued_bytes += p.len as u64;
        Some(p)
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// Whether `limit` has room for one more packet of `len` bytes.
    pub fn admits(&self, limit: &Limit, len: u32) -> bool {
        limit.admits(self.q.len(), self.bytes, len)
    }
}
