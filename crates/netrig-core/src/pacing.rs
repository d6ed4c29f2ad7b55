//! Pacing: when may the next block go, for a target rate.
//!
//! Departure times are computed from the total sent since the start (no accumulated
//! rounding), so the long-run rate is exact. A sender that fell behind (a host stall) may
//! catch up, but only by `max_backlog` worth of time: beyond that the debt is forgiven,
//! which keeps bursts short.

#[derive(Debug, Clone)]
pub struct Pacer {
    rate_bps: u64,
    start_ns: u64,
    /// Bits whose departure times have been handed out.
    bits: u128,
    /// Bits forgiven after stalls (they shift the schedule forward).
    shift_ns: u64,
    max_backlog_ns: u64,
    burst_bits: u128,
}

impl Pacer {
    /// `rate_bps` > 0; `burst_bytes` may leave back to back before pacing applies.
    pub fn new(rate_bps: u64, start_ns: u64, max_backlog_ns: u64, burst_bytes: u64) -> Pacer {
        assert!(rate_bps > 0, "a pacer needs a positive rate");
        Pacer {
            rate_bps,
            start_ns,
            bits: 0,
            shift_ns: 0,
            max_backlog_ns,
            burst_bits: burst_bytes as u128 * 8,
        }
    }

    /// The earliest time the next block may leave.
    pub fn due_ns(&self) -> u64 {
        let paced = self.bits.saturating_sub(self.burst_bits);
        let offset = paced * 1_000_000_000 / self.rate_bps as u128;
        self.start_ns + self.shift_ns + offset as u64
    }

    /// Whether a block may leave at `now`; forgives a backlog beyond the limit.
    pub fn ready(&mut self, now_ns: u64) -> bool {
        let due = self.due_ns();
        if due > now_ns {
            return false;
        }
        let late = now_ns - due;
        if late > self.max_backlog_ns {
            self.shift_ns += late - self.max_backlog_ns;
        }
        true
    }

    /// Records a block of `bytes` as sent.
    pub fn sent(&mut self, bytes: u64) {
        self.bits += bytes as u128 * 8;
    }

    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spacing_is_exact_for_1500_bytes_at_10_mbit() {
        let mut p = Pacer::new(10_000_000, 0, 1_000_000, 0);
        let mut departures = vec![];
        let mut now = 0;
        while departures.len() < 1000 {
            if p.ready(now) {
                departures.push(now);
                p.sent(1500);
            } else {
                now = p.due_ns();
            }
        }
        for w in departures.windows(2) {
            assert_eq!(w[1] - w[0], 1_200_000);
        }
    }

    #[test]
    fn a_stall_is_caught_up_only_up_to_the_backlog_limit() {
        let mut p = Pacer::new(8_000_000, 0, 1_000_000, 0); // 1000-byte blocks: 1 ms each
        assert!(p.ready(0));
        p.sent(1000);
        // Stall of 10 ms: only 1 ms of debt may be caught up back to back.
        let now = 11_000_000;
        let mut burst = 0;
        while p.ready(now) {
            p.sent(1000);
            burst += 1;
        }
        assert_eq!(burst, 2);
        assert_eq!(p.due_ns(), 12_000_000);
    }

    #[test]
    fn burst_leaves_back_to_back_then_paces() {
        let mut p = Pacer::new(8_000_000, 0, 1_000_000, 5000);
        let mut n = 0;
        while p.ready(0) {
            p.sent(1000);
            n += 1;
        }
        assert_eq!(n, 6);
        assert_eq!(p.due_ns(), 1_000_000);
    }
}
