//! Drop-tail: a FIFO that refuses arrivals once its packet or byte limit is reached
//! (Linux pfifo/bfifo).

use super::{DropCause, Drops, Fifo, Limit, Qdisc, QueueStats};
use crate::link::packet::Packet;
use crate::link::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub limit: Limit,
}

impl Default for Config {
    /// Linux's default txqueuelen for pfifo_fast: 1000 packets.
    fn default() -> Self {
        Config {
            limit: Limit::packets(1000),
        }
    }
}

#[derive(Debug)]
pub struct DropTail {
    limit: Limit,
    fifo: Fifo,
}

impl DropTail {
    pub fn new(cfg: Config) -> DropTail {
        DropTail {
            limit: cfg.limit,
            fifo: Fifo::default(),
        }
    }
}

impl Qdisc for DropTail {
    fn enqueue(&mut self, now_ns: u64, pkt: Packet, _rng: &mut Rng, drops: &mut Drops) {
        if !self.fifo.admits(&self.limit, pkt.len) {
            self.fifo.stats.drops_overflow += 1;
            drops.push((pkt, DropCause::Overflow));
            return;
        }
        self.fifo.push(now_ns, pkt);
    }

    fn dequeue(&mut self, _now_ns: u64, _rng: &mut Rng, _drops: &mut Drops) -> Option<Packet> {
        let p = self.fifo.pop()?;
        Some(p)
    }

    fn len_packets(&self) -> usize {
        self.fifo.len()
    }

    fn len_bytes(&self) -> u64 {
        self.fifo.bytes
    }

    fn stats(&self) -> QueueStats {
        self.fifo.stats
    }

    fn name(&self) -> &'static str {
        "droptail"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflows_exactly_at_the_limit() {
        let mut q = DropTail::new(Config {
            limit: Limit::packets(100),
        });
        let (mut rng, mut drops) = (Rng::new(1), Drops::new());
        for i in 0..150 {
            q.enqueue(i, Packet::sized(i, 1500, 0), &mut rng, &mut drops);
        }
        assert_eq!(q.len_packets(), 100);
        assert_eq!(drops.len(), 50);
        assert_eq!(drops[0].0.id, 100);
        assert!(drops.iter().all(|(_, c)| *c == DropCause::Overflow));
        let first = q.dequeue(200, &mut rng, &mut drops).unwrap();
        assert_eq!(first.id, 0);
    }

    #[test]
    fn byte_limits_count_bytes() {
        let mut q = DropTail::new(Config {
            limit: Limit::bytes(3000),
        });
        let (mut rng, mut drops) = (Rng::new(1), Drops::new());
        for i in 0..3 {
            q.enqueue(0, Packet::sized(i, 1000, 0), &mut rng, &mut drops);
        }
        q.enqueue(0, Packet::sized(9, 1, 0), &mut rng, &mut drops);
        assert_eq!((q.len_packets(), q.len_bytes(), drops.len()), (3, 3000, 1));
    }
}
