//! Release lateness: how long after its due time each packet actually left. One
//! microsecond buckets up to 10 ms, and a count beyond.

use serde::Serialize;

const BUCKETS: usize = 10_000;

#[derive(Debug, Clone)]
pub struct Lateness {
    counts: Vec<u64>,
    over: u64,
    total: u64,
    max_ns: u64,
    /// Packets later than the budget: the daemon could not keep up (or the host stalled).
    pub over_budget: u64,
    pub budget_ns: u64,
}

#[derive(Debug, Clone, Copy, Serialize, Default, PartialEq)]
pub struct LatenessSummary {
    pub count: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub over_budget: u64,
}

impl Lateness {
    pub fn new(budget_ns: u64) -> Lateness {
        Lateness {
            counts: vec![0; BUCKETS],
            over: 0,
            total: 0,
            max_ns: 0,
            over_budget: 0,
            budget_ns,
        }
    }

    /// Empties the histogram (keeps the budget and the buckets' memory).
    pub fn reset(&mut self) {
        // Only the buckets up to the largest lateness recorded were touched.
        let top = ((self.max_ns / 1000) as usize).min(BUCKETS - 1);
        self.counts[..=top].fill(0);
        self.over = 0;
        self.total = 0;
        self.max_ns = 0;
        self.over_budget = 0;
    }

    pub fn record(&mut self, late_ns: u64) {
        let us = (late_ns / 1000) as usize;
        if us < BUCKETS {
            self.counts[us] += 1;
        } else {
            self.over += 1;
        }
        self.total += 1;
        self.max_ns = self.max_ns.max(late_ns);
        if late_ns > self.budget_ns {
            self.over_budget += 1;
        }
    }

    /// Adds another histogram's counts (for totals over directions).
    pub fn merge(&mut self, o: &Lateness) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.over += o.over;
        self.total += o.total;
        self.max_ns = self.max_ns.max(o.max_ns);
        self.over_budget += o.over_budget;
    }

    fn quantile_us(&self, q: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (us, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return us as f64;
            }
        }
        self.max_ns as f64 / 1000.0
    }

    pub fn summary(&self) -> LatenessSummary {
        LatenessSummary {
            count: self.total,
            p50_us: self.quantile_us(0.5),
            p99_us: self.quantile_us(0.99),
            p999_us: self.quantile_us(0.999),
            max_us: self.max_ns as f64 / 1000.0,
            over_budget: self.over_budget,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_come_from_the_buckets() {
        let mut l = Lateness::new(1_000_000);
        for i in 0..1000u64 {
            l.record(i * 1000 + 500);
        }
        l.record(50_000_000);
        let s = l.summary();
        assert_eq!((s.count, s.p50_us, s.p99_us), (1001, 500.0, 990.0));
        assert_eq!(s.max_us, 50_000.0);
        assert_eq!(s.over_budget, 1);
        l.reset();
        assert_eq!(l.summary(), LatenessSummary::default());
        assert!(l.counts.iter().all(|&c| c == 0));
        l.record(2_500);
        assert_eq!((l.summary().count, l.summary().p50_us), (1, 2.0));
        // a reset after small latenesses only clears what they touched, and all of it
        l.record(9_999_999);
        l.reset();
        assert!(l.counts.iter().all(|&c| c == 0));
    }
}
