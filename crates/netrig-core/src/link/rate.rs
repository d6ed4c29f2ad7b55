//! The rate stage: when does a packet's last bit leave, given when it may start.
//!
//! Either a fixed rate (serialization at R bit/s, with an optional per-frame overhead
//! such as Ethernet's preamble, SFD and inter-frame gap: 20 bytes, charged once for
//! each frame a packet stands for: an offload superframe's segments cross a wire
//! separately, each with its own overhead), or a trace of
//! delivery opportunities in mahimahi's format: one line per opportunity, the
//! millisecond it occurs at; each carries up to one MTU of bytes; the trace repeats
//! with the period of its last line, or plays once.

use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum TraceError {
    #[error("line {line}: '{text}' is not a whole number of milliseconds")]
    NotANumber { line: usize, text: String },
    #[error("line {line}: {value} ms goes back in time (after {prev} ms)")]
    Decreasing { line: usize, value: u64, prev: u64 },
    #[error("the trace has no delivery opportunity")]
    Empty,
    #[error("a repeating trace must end after 0 ms (its last line is its period)")]
    ZeroPeriod,
}

/// Delivery opportunities, in milliseconds from the trace's start.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    times_ms: Vec<u64>,
    pub repeat: bool,
    /// Bytes each opportunity carries (mahimahi: one MTU-sized packet).
    pub bytes_per_opportunity: u32,
}

impl Trace {
    pub fn parse(text: &str, repeat: bool, bytes_per_opportunity: u32) -> Result<Trace, TraceError> {
        let mut times_ms = vec![];
        for (i, raw) in text.lines().enumerate() {
            let t = raw.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let v: u64 = t.parse().map_err(|_| TraceError::NotANumber {
                line: i + 1,
                text: t.to_string(),
            })?;
            if let Some(&prev) = times_ms.last() {
                if v < prev {
                    return Err(TraceError::Decreasing {
                        line: i + 1,
                        value: v,
                        prev,
                    });
                }
            }
            times_ms.push(v);
        }
        if times_ms.is_empty() {
            return Err(TraceError::Empty);
        }
        if repeat && *times_ms.last().unwrap() == 0 {
            return Err(TraceError::ZeroPeriod);
        }
        Ok(Trace {
            times_ms,
            repeat,
            bytes_per_opportunity,
        })
    }

    fn period_ns(&self) -> u64 {
        self.times_ms.last().copied().unwrap_or(0) * 1_000_000
    }

    /// Time of the k-th opportunity (None past the end of a play-once trace).
    fn at(&self, k: u64) -> Option<u64> {
        let n = self.times_ms.len() as u64;
        if !self.repeat && k >= n {
            return None;
        }
        Some((k / n) * self.period_ns() + self.times_ms[(k % n) as usize] * 1_000_000)
    }

    /// Index of the first opportunity at or after `t_ns`.
    fn first_at_or_after(&self, t_ns: u64) -> u64 {
        let n = self.times_ms.len() as u64;
        let (cycle, within) = if self.repeat {
            (t_ns / self.period_ns(), t_ns % self.period_ns())
        } else {
            (0, t_ns)
        };
        let i = self.times_ms.partition_point(|&ms| ms * 1_000_000 < within) as u64;
        cycle * n + i
    }

    /// The nominal rate: bits per second averaged over one period.
    pub fn nominal_bps(&self) -> f64 {
        let period = self.period_ns().max(1) as f64 / 1e9;
        self.times_ms.len() as f64 * self.bytes_per_opportunity as f64 * 8.0 / period
    }
}

/// Where a trace stands: the opportunity in use and the bytes it has left.
#[derive(Debug, Clone)]
struct Cursor {
    trace: Trace,
    origin_ns: u64,
    current: u64,
    credit: u32,
    started: bool,
}

impl Cursor {
    fn departure(&mut self, start_ns: u64, len: u32) -> u64 {
        let first = self
            .trace
            .first_at_or_after(start_ns.saturating_sub(self.origin_ns));
        if !self.started || self.current < first {
            self.current = first;
            self.credit = self.trace.bytes_per_opportunity;
            self.started = true;
        } else if self.credit == 0 {
            self.current += 1;
            self.credit = self.trace.bytes_per_opportunity;
        }
        // A packet larger than what is left spans opportunities (as mahimahi's does).
        let mut remaining = len;
        loop {
            let Some(t) = self.trace.at(self.current) else {
                return u64::MAX;
            };
            if remaining <= self.credit {
                self.credit -= remaining;
                return self.origin_ns + t;
            }
            remaining -= self.credit;
            self.current += 1;
            self.credit = self.trace.bytes_per_opportunity;
        }
    }
}

#[derive(Debug, Clone)]
enum Kind {
    Fixed { bps: u64 },
    Trace(Box<Cursor>),
    Unlimited,
}

#[derive(Debug, Clone)]
pub struct Rate {
    kind: Kind,
    /// Bytes added for every frame of a packet for serialization.
    pub overhead: u32,
}

impl Rate {
    pub fn fixed(bps: u64, overhead: u32) -> Rate {
        assert!(bps > 0, "a fixed rate must be positive");
        Rate {
            kind: Kind::Fixed { bps },
            overhead,
        }
    }

    pub fn unlimited() -> Rate {
        Rate {
            kind: Kind::Unlimited,
            overhead: 0,
        }
    }

    /// A trace whose time zero is `origin_ns`.
    pub fn trace(trace: Trace, origin_ns: u64) -> Rate {
        Rate {
            kind: Kind::Trace(Box::new(Cursor {
                trace,
                origin_ns,
                current: 0,
                credit: 0,
                started: false,
            })),
            overhead: 0,
        }
    }

    /// When a packet of `len` bytes standing for `frames` frames on the wire (an
    /// offload superframe's segments; `len` counts their headers), that may start at
    /// `start_ns`, has left entirely (`u64::MAX`: never, a play-once trace has ended).
    /// The overhead is charged once per frame.
    pub fn departure(&mut self, start_ns: u64, len: u32, frames: u32) -> u64 {
        let wire = len as u128 + self.overhead as u128 * frames.max(1) as u128;
        match &mut self.kind {
            Kind::Unlimited => start_ns,
            Kind::Fixed { bps } => {
                let bps = *bps as u128;
                start_ns + ((wire * 8 * 1_000_000_000).div_ceil(bps)) as u64
            }
            Kind::Trace(c) => c.departure(start_ns, len),
        }
    }

    /// Bits per second, if fixed.
    pub fn bps(&self) -> Option<u64> {
        match self.kind {
            Kind::Fixed { bps } => Some(bps),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_to_back_1500_byte_packets_at_10_mbit_leave_1_2_ms_apart() {
        let mut r = Rate::fixed(10_000_000, 0);
        let mut free = 0;
        let mut departures = vec![];
        for _ in 0..10_000 {
            free = r.departure(free, 1500, 1);
            departures.push(free);
        }
        assert_eq!(departures[0], 1_200_000);
        assert!(departures.windows(2).all(|w| w[1] - w[0] == 1_200_000));
    }

    #[test]
    fn overhead_counts_on_the_wire() {
        let mut r = Rate::fixed(100_000_000, 20);
        // 1518 + 20 bytes at 100 Mbit/s: 123.04 µs.
        assert_eq!(r.departure(0, 1518, 1), 123_040);
    }

    #[test]
    fn a_superframe_takes_the_time_of_its_segments_sent_one_by_one() {
        // 10 segments of 1514 bytes (66 of headers each), 20 bytes of overhead each, at
        // 1 Gbit/s: the superframe's len counts every segment's headers.
        let (k, seg, overhead, bps) = (10u32, 1514u32, 20, 1_000_000_000);
        let mut apart = Rate::fixed(bps, overhead);
        let mut free = 0;
        for _ in 0..k {
            free = apart.departure(free, seg, 1);
        }
        let mut whole = Rate::fixed(bps, overhead);
        assert_eq!(whole.departure(0, k * seg, k), free);
        assert_eq!(free, 10 * (1514 + 20) * 8);
        // Charged as one frame, it would leave 9 overheads early.
        assert_eq!(
            Rate::fixed(bps, overhead).departure(0, k * seg, 1),
            free - 9 * 20 * 8
        );
    }

    #[test]
    fn extreme_rates_stay_exact() {
        assert_eq!(Rate::fixed(1_000, 0).departure(0, 125, 1), 1_000_000_000);
        assert_eq!(Rate::fixed(10_000_000_000, 0).departure(0, 1250, 1), 1_000);
    }

    #[test]
    fn trace_parse_errors_name_the_line() {
        assert_eq!(
            Trace::parse("1\n2\nx\n", true, 1500),
            Err(TraceError::NotANumber {
                line: 3,
                text: "x".into()
            })
        );
        assert_eq!(
            Trace::parse("5\n3\n", true, 1500),
            Err(TraceError::Decreasing {
                line: 2,
                value: 3,
                prev: 5
            })
        );
        assert_eq!(Trace::parse("# nothing\n", true, 1500), Err(TraceError::Empty));
        assert_eq!(Trace::parse("0\n", true, 1500), Err(TraceError::ZeroPeriod));
    }

    #[test]
    fn a_trace_replays_at_its_nominal_rate() {
        // Opportunities at 1, 1, 2, 3, ..., 10 ms: 11 per 10 ms period of 1500 bytes.
        let text: String = std::iter::once("1".to_string())
            .chain((1..=10).map(|i| i.to_string()))
            .collect::<Vec<_>>()
            .join("\n");
        let trace = Trace::parse(&text, true, 1500).unwrap();
        assert!((trace.nominal_bps() - 11.0 * 1500.0 * 8.0 / 0.010).abs() < 1.0);
        let mut r = Rate::trace(trace, 0);
        let mut t = 0;
        let mut n = 0u64;
        while t < 10_000_000_000 {
            t = r.departure(t, 1500, 1);
            n += 1;
        }
        let achieved = n as f64 * 1500.0 * 8.0 / (t as f64 / 1e9);
        assert!((achieved / 13_200_000.0 - 1.0).abs() < 0.001, "{achieved}");
    }

    #[test]
    fn small_packets_share_an_opportunity_and_large_ones_span_two() {
        let trace = Trace::parse("1\n2\n3\n4\n", true, 1500).unwrap();
        let mut r = Rate::trace(trace, 0);
        assert_eq!(r.departure(0, 500, 1), 1_000_000);
        assert_eq!(r.departure(0, 500, 1), 1_000_000);
        assert_eq!(r.departure(0, 1000, 1), 2_000_000); // 500 left at 1 ms, 500 more at 2 ms
                                                        // Unused opportunities are lost: a packet ready at 3.5 ms goes at 4 ms.
        assert_eq!(r.departure(3_500_000, 100, 1), 4_000_000);
    }

    #[test]
    fn a_play_once_trace_ends() {
        let mut r = Rate::trace(Trace::parse("1\n2\n", false, 1500).unwrap(), 0);
        assert_eq!(r.departure(0, 1500, 1), 1_000_000);
        assert_eq!(r.departure(0, 1500, 1), 2_000_000);
        assert_eq!(r.departure(0, 1500, 1), u64::MAX);
    }
}
