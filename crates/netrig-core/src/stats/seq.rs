//! Sequence accounting for a UDP receiver.
//!
//! `lost` follows iperf3 (a gap counts as lost; a late arrival un-counts one), so that
//! results agree with an iperf3 peer. Unlike iperf3, a datagram already seen within the
//! last [`WINDOW`] sequence numbers is a duplicate, not "out of order".

pub const WINDOW: u64 = 4096;

#[derive(Debug, Clone)]
pub struct SeqTracker {
    /// Highest sequence number seen (iperf3's `packet_count`); sequences start at 1.
    pub highest: u64,
    pub received: u64,
    pub lost: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    seen: Vec<u64>,
}

impl Default for SeqTracker {
    fn default() -> Self {
        SeqTracker {
            highest: 0,
            received: 0,
            lost: 0,
            out_of_order: 0,
            duplicates: 0,
            seen: vec![0; (WINDOW / 64) as usize],
        }
    }
}

impl SeqTracker {
    fn bit(&self, seq: u64) -> (usize, u64) {
        let slot = (seq % WINDOW) as usize;
        (slot / 64, 1u64 << (slot % 64))
    }

    fn mark(&mut self, seq: u64) {
        let (w, m) = self.bit(seq);
        self.seen[w] |= m;
    }

    fn clear(&mut self, seq: u64) {
        let (w, m) = self.bit(seq);
        self.seen[w] &= !m;
    }

    fn is_marked(&self, seq: u64) -> bool {
        let (w, m) = self.bit(seq);
        self.seen[w] & m != 0
    }

    pub fn on_packet(&mut self, seq: u64) {
        if seq > self.highest {
            let gap = seq - self.highest - 1;
            self.lost += gap;
            // Forget the window slots that the new sequences reuse.
            if seq - self.highest >= WINDOW {
                self.seen.fill(0);
            } else {
                for s in self.highest + 1..seq {
                    self.clear(s);
                }
            }
            self.highest = seq;
            self.mark(seq);
            self.received += 1;
        } else if self.highest - seq < WINDOW && self.is_marked(seq) {
            self.duplicates += 1;
        } else {
            self.received += 1;
            self.out_of_order += 1;
            self.lost = self.lost.saturating_sub(1);
            if self.highest - seq < WINDOW {
                self.mark(seq);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seqs: &[u64]) -> SeqTracker {
        let mut t = SeqTracker::default();
        for &s in seqs {
            t.on_packet(s);
        }
        t
    }

    #[test]
    fn in_order_has_nothing_to_report() {
        let t = run(&(1..=10_000).collect::<Vec<_>>());
        assert_eq!(
            (t.highest, t.received, t.lost, t.out_of_order, t.duplicates),
            (10_000, 10_000, 0, 0, 0)
        );
    }

    #[test]
    fn gaps_are_lost_and_late_arrivals_are_reordered() {
        let t = run(&[1, 2, 5, 6]);
        assert_eq!(t.lost, 2);
        let t = run(&[1, 2, 5, 3, 6]);
        assert_eq!((t.lost, t.out_of_order, t.received), (1, 1, 5));
    }

    #[test]
    fn duplicates_are_not_reorderings() {
        let t = run(&[1, 2, 3, 3, 2, 4]);
        assert_eq!((t.duplicates, t.out_of_order, t.lost, t.received), (2, 0, 0, 4));
    }

    #[test]
    fn window_reuse_does_not_fake_duplicates() {
        let mut seqs: Vec<u64> = (1..=3 * WINDOW).collect();
        seqs.push(2 * WINDOW + 10); // a real duplicate within the window
        let t = run(&seqs);
        assert_eq!((t.duplicates, t.lost), (1, 0));
        // A big gap, then a late datagram from before it: out of order, not duplicate.
        let t = run(&[1, 2, 10_000, 3]);
        assert_eq!((t.duplicates, t.out_of_order, t.lost), (0, 1, 9_996));
    }
}
