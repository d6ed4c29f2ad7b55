//! `--server-bitrate-limit RATE[/SECS]`: a server ends a test whose total rate, all
//! streams and both directions together, averaged over the last SECS (default 5), is
//! above RATE. As iperf3's `iperf_check_total_rate`: the total is taken once per check
//! period (the server's `-i`, or 1 s with `-i 0`), the window is that many periods
//! (at least one), and nothing is judged before a whole window has passed.
//!
//! Time and byte counts come in as arguments, so the rule is tested without a clock.

use std::collections::VecDeque;
use std::time::Duration;

use crate::config::BitrateLimit;

#[derive(Debug)]
pub struct TotalRateCheck {
    limit_bps: u64,
    period_ns: u64,
    periods: usize,
    next_ns: u64,
    last_total: u64,
    last_ns: u64,
    /// (bytes moved, ns that took) per period, the newest last.
    window: VecDeque<(u64, u64)>,
}

/// What a check found over the limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exceeded {
    pub measured_bps: u64,
    pub limit_bps: u64,
    pub window_s: f64,
}

impl TotalRateCheck {
    pub fn new(limit: BitrateLimit, period: Duration, start_ns: u64) -> TotalRateCheck {
        let period = if period.is_zero() {
            Duration::from_secs(1)
        } else {
            period
        };
        let periods = (limit.window.as_secs_f64() / period.as_secs_f64())
            .round()
            .max(1.0) as usize;
        TotalRateCheck {
            limit_bps: limit.bits_per_second,
            period_ns: period.as_nanos() as u64,
            periods,
            next_ns: start_ns + period.as_nanos() as u64,
            last_total: 0,
            last_ns: start_ns,
            window: VecDeque::with_capacity(periods),
        }
    }

    /// When the next check is due.
    pub fn due_ns(&self) -> u64 {
        self.next_ns
    }

    /// Feeds the test's byte count so far (all streams) at `now_ns`; at each period's
    /// end, judges the window.
    pub fn check(&mut self, now_ns: u64, total_bytes: u64) -> Option<Exceeded> {
        if now_ns < self.next_ns {
            return None;
        }
        self.next_ns += self.period_ns;
        if self.next_ns <= now_ns {
            self.next_ns = now_ns + self.period_ns;
        }
        let moved = total_bytes.saturating_sub(self.last_total);
        self.last_total = total_bytes;
        // The time that really passed: a check that runs late (a busy host) has seen
        // more bytes, and must not read them as a higher rate.
        let elapsed = now_ns.saturating_sub(self.last_ns);
        self.last_ns = now_ns;
        if self.window.len() == self.periods {
            self.window.pop_front();
        }
        self.window.push_back((moved, elapsed));
        if self.window.len() < self.periods {
            return None;
        }
        let seconds = self.window.iter().map(|w| w.1).sum::<u64>() as f64 / 1e9;
        if seconds <= 0.0 {
            return None;
        }
        let bps = (self.window.iter().map(|w| w.0).sum::<u64>() as f64 * 8.0 / seconds) as u64;
        (bps > self.limit_bps).then_some(Exceeded {
            measured_bps: bps,
            limit_bps: self.limit_bps,
            window_s: seconds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn limit(bps: u64, window_s: f64) -> BitrateLimit {
        BitrateLimit {
            bits_per_second: bps,
            window: Duration::from_secs_f64(window_s),
        }
    }

    #[test]
    fn a_late_check_divides_by_the_time_that_really_passed() {
        // 1 Mbit/s over 1 s: a check 100 ms late that saw 1.1 s of bytes at exactly the
        // limit is not over it.
        let mut c = TotalRateCheck::new(limit(1_000_000, 1.0), Duration::from_secs(1), 0);
        assert_eq!(c.check(S + S / 10, 137_500), None);
    }

    #[test]
    fn judges_the_average_over_the_window_once_it_is_full() {
        // 1 Mbit/s over 3 one-second periods: 125 000 bytes a second is the limit.
        let mut c = TotalRateCheck::new(limit(1_000_000, 3.0), Duration::from_secs(1), 0);
        assert_eq!(c.check(S / 2, 10_000_000), None, "not due yet");
        assert_eq!(c.check(S, 300_000), None, "window not full");
        assert_eq!(c.check(2 * S, 300_000), None, "nothing moved");
        // 300 000 bytes in 3 s = 800 000 bit/s: under.
        assert_eq!(c.check(3 * S, 300_000), None);
        // The first second leaves the window; a burst of 500 000 bytes enters it:
        // 500 000 bytes in 3 s = 1.33 Mbit/s: over.
        let e = c.check(4 * S, 800_000).unwrap();
        assert_eq!(e.measured_bps, 1_333_333);
        assert_eq!((e.limit_bps, e.window_s), (1_000_000, 3.0));
    }

    #[test]
    fn a_window_shorter_than_a_period_is_one_period() {
        let mut c = TotalRateCheck::new(limit(8_000, 0.1), Duration::from_secs(1), 0);
        assert!(c.check(S, 1_001).is_some());
        let mut c = TotalRateCheck::new(limit(8_000, 0.1), Duration::from_secs(1), 0);
        assert!(c.check(S, 1_000).is_none());
    }

    #[test]
    fn without_intervals_it_checks_every_second() {
        let mut c = TotalRateCheck::new(limit(8, 2.0), Duration::ZERO, 0);
        assert_eq!(c.due_ns(), S);
        assert!(c.check(S, 10).is_none());
        assert!(c.check(2 * S, 10).is_some());
    }
}
