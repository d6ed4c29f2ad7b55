//! Where in a stream its losses cluster: the times of its loss events (frames that
//! `tcp.analysis.retransmission` matches, fast and spurious included, or
//! `tcp.analysis.lost_segment`), binned over the stream's own time span, and the
//! densest interval: the shortest window holding at least half of them.
//!
//! Memory is bounded per stream and direction: the times themselves are kept while there
//! are at most [`EXACT_CAP`] (the densest interval exact); past that they move into
//! [`FINE_BINS`] bins from the stream's first frame, whose width doubles as the stream
//! goes on, and the densest interval is found to within two bins (the JSON says
//! `"exact": false` and gives that bin width as `resolution_s`).

use serde::Serialize;

/// The bins a stream's span is cut into for `bins.counts`.
pub const LOSS_BINS: usize = 20;
/// The most loss times kept exactly per stream and direction (32 KiB).
pub const EXACT_CAP: usize = 4096;
/// Bins kept once the times are no longer (8 KiB).
pub const FINE_BINS: usize = 1024;

#[derive(Debug, Clone)]
struct Fine {
    origin: i64,
    width: u64,
    counts: Vec<u64>,
}

impl Fine {
    fn new(origin: i64) -> Fine {
        Fine {
            origin,
            width: 1,
            counts: vec![0; FINE_BINS],
        }
    }

    fn add(&mut self, t: i64) {
        let off = (t as i128 - self.origin as i128).max(0) as u64;
        while off / self.width >= FINE_BINS as u64 {
            for j in 0..FINE_BINS / 2 {
                self.counts[j] = self.counts[2 * j] + self.counts[2 * j + 1];
            }
            self.counts[FINE_BINS / 2..].fill(0);
            self.width = self.width.saturating_mul(2);
        }
        self.counts[(off / self.width) as usize] += 1;
    }

    /// Bin `i`'s start (ns), saturating.
    fn start(&self, i: usize) -> i64 {
        (self.origin as i128 + i as i128 * self.width as i128).clamp(i64::MIN as i128, i64::MAX as i128)
            as i64
    }
}

/// The loss events of a direction or a stream.
#[derive(Debug, Default, Clone)]
pub struct LossTimes {
    n: u64,
    first: i64,
    last: i64,
    times: Vec<i64>,
    fine: Option<Box<Fine>>,
}

/// The shortest interval (ns) holding at least half the events, and how many it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Densest {
    pub start: i64,
    pub end: i64,
    pub events: u64,
}

impl LossTimes {
    /// Records a loss event at `t`; `origin` is the stream's first frame's time.
    pub fn add(&mut self, t: i64, origin: i64) {
        (self.first, self.last) = if self.n == 0 {
            (t, t)
        } else {
            (self.first.min(t), self.last.max(t))
        };
        self.n += 1;
        match &mut self.fine {
            Some(f) => f.add(t),
            None => {
                self.times.push(t);
                if self.times.len() > EXACT_CAP {
                    let mut f = Fine::new(origin);
                    self.times.iter().for_each(|&x| f.add(x));
                    self.times = Vec::new();
                    self.fine = Some(Box::new(f));
                }
            }
        }
    }

    pub fn n(&self) -> u64 {
        self.n
    }

    /// The shortest window holding at least ⌈n/2⌉ events (the earliest of equals).
    pub fn densest(&mut self) -> Option<Densest> {
        let n = self.n;
        if n == 0 {
            return None;
        }
        let k = n.div_ceil(2);
        if let Some(f) = &self.fine {
            // The shortest run of bins holding k, by two pointers.
            let (mut best, mut sum, mut i) = (None::<(usize, usize, u64)>, 0u64, 0usize);
            for j in 0..FINE_BINS {
                sum += f.counts[j];
                while sum - f.counts[i] >= k && i < j {
                    sum -= f.counts[i];
                    i += 1;
                }
                if sum >= k && best.is_none_or(|(a, b, _)| j - i < b - a) {
                    best = Some((i, j, sum));
                }
            }
            let (a, b, events) = best.expect("the bins hold all n events");
            return Some(Densest {
                start: f.start(a).max(self.first),
                end: f.start(b + 1).min(self.last),
                events,
            });
        }
        let t = &mut self.times;
        t.sort_unstable();
        let k = k as usize;
        let i = (0..=t.len() - k)
            .min_by_key(|&i| t[i + k - 1] as i128 - t[i] as i128)
            .expect("n ≥ 1");
        let (start, end) = (t[i], t[i + k - 1]);
        let events = t.partition_point(|&x| x <= end) - t.partition_point(|&x| x < start);
        Some(Densest {
            start,
            end,
            events: events as u64,
        })
    }

    /// The event counts in [`LOSS_BINS`] equal bins over `[span_start, span_end]`.
    pub fn bins(&self, span_start: i64, span_end: i64) -> [u64; LOSS_BINS] {
        let mut out = [0u64; LOSS_BINS];
        let width = (span_end as f64 - span_start as f64) / LOSS_BINS as f64;
        let mut put = |t: f64, c: u64| {
            let i = if width > 0.0 {
                ((t - span_start as f64) / width).floor()
            } else {
                0.0
            };
            out[i.clamp(0.0, (LOSS_BINS - 1) as f64) as usize] += c;
        };
        match &self.fine {
            None => self.times.iter().for_each(|&t| put(t as f64, 1)),
            Some(f) => {
                for (i, &c) in f.counts.iter().enumerate().filter(|(_, &c)| c > 0) {
                    put(f.start(i) as f64 + f.width as f64 / 2.0, c);
                }
            }
        }
        out
    }

    /// The report's view; times in seconds from `t0` (the capture's first packet), bins
    /// over the stream's span `[span_start, span_end]`.
    pub fn out(&mut self, t0: i64, span_start: i64, span_end: i64) -> LossesOut {
        let Some(d) = self.densest() else {
            return LossesOut::default();
        };
        let s = |ns: i64| (ns as i128 - t0 as i128) as f64 / 1e9;
        LossesOut {
            events: self.n,
            first_s: Some(s(self.first)),
            last_s: Some(s(self.last)),
            densest_half: Some(DensestOut {
                start_s: s(d.start),
                end_s: s(d.end),
                events: d.events,
            }),
            bins: Some(BinsOut {
                start_s: s(span_start),
                width_s: (span_end as f64 - span_start as f64) / LOSS_BINS as f64 / 1e9,
                counts: self.bins(span_start, span_end),
            }),
            exact: Some(self.fine.is_none()),
            resolution_s: self.fine.as_ref().map(|f| f.width as f64 / 1e9),
        }
    }
}

/// The losses as the report writes them: `{"events": 0}` alone when there are none.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LossesOut {
    pub events: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub densest_half: Option<DensestOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bins: Option<BinsOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution_s: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DensestOut {
    pub start_s: f64,
    pub end_s: f64,
    pub events: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BinsOut {
    pub start_s: f64,
    pub width_s: f64,
    pub counts: [u64; LOSS_BINS],
}
