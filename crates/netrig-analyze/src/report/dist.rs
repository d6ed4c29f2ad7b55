//! A distribution of durations in bounded memory: the ack_rtt samples of one direction,
//! of a stream, of the whole file.
//!
//! The samples themselves are kept while there are at most [`EXACT_CAP`] (percentiles
//! exact, by nearest rank); past that they move into a histogram of logarithmic buckets
//! (DDSketch's: bucket i holds |v| in (γ^(i-1), γ^i] with γ = (1+α)/(1-α), and answers
//! 2γ^i/(γ+1)), so every percentile is within [`RELATIVE_ERROR`] of the exact one and a
//! direction never holds more than ~2,200 buckets (1 ns to 292 years). n, sum, mean,
//! min and max stay exact either way; the JSON says which the percentiles are.

use serde::Serialize;

/// The most samples a distribution keeps exactly (32 KiB).
pub const EXACT_CAP: usize = 4096;
/// α: the bound on a histogram percentile's error, relative to the exact value.
pub const RELATIVE_ERROR: f64 = 0.01;
const GAMMA: f64 = (1.0 + RELATIVE_ERROR) / (1.0 - RELATIVE_ERROR);

/// Counts of buckets `lo..lo + counts.len()`.
#[derive(Debug, Default, Clone)]
struct Buckets {
    lo: i32,
    counts: Vec<u64>,
}

impl Buckets {
    fn add(&mut self, i: i32, c: u64) {
        if self.counts.is_empty() {
            self.lo = i;
            self.counts.push(0);
        } else if i < self.lo {
            let more = (self.lo - i) as usize;
            self.counts.splice(0..0, std::iter::repeat_n(0, more));
            self.lo = i;
        } else if (i - self.lo) as usize >= self.counts.len() {
            self.counts.resize((i - self.lo) as usize + 1, 0);
        }
        self.counts[(i - self.lo) as usize] += c;
    }

    fn iter(&self) -> impl DoubleEndedIterator<Item = (i32, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(k, &c)| (self.lo + k as i32, c))
    }
}

/// The bucket of a magnitude (≥ 1).
fn index(v: u64) -> i32 {
    ((v as f64).ln() / GAMMA.ln()).ceil() as i32
}

/// What bucket `i` answers: within α of every magnitude it holds.
fn value(i: i32) -> f64 {
    2.0 * GAMMA.powi(i) / (GAMMA + 1.0)
}

#[derive(Debug, Default, Clone)]
struct Hist {
    pos: Buckets,
    /// Magnitudes of the negative values (a frame stamped before the segment it acks
    /// gives a negative ack_rtt, and tshark shows it so).
    neg: Buckets,
    zeros: u64,
}

impl Hist {
    fn add(&mut self, v: i64, c: u64) {
        match v {
            0 => self.zeros += c,
            v if v > 0 => self.pos.add(index(v as u64), c),
            v => self.neg.add(index(v.unsigned_abs()), c),
        }
    }

    /// The value of rank `k` (1-based, ascending).
    fn rank(&self, k: u64) -> f64 {
        let mut seen = 0;
        let neg = self.neg.iter().rev().map(|(i, c)| (-value(i), c));
        let zero = std::iter::once((0.0, self.zeros));
        for (v, c) in neg.chain(zero).chain(self.pos.iter().map(|(i, c)| (value(i), c))) {
            seen += c;
            if seen >= k {
                return v;
            }
        }
        0.0
    }
}

/// n, sum, min and max exactly; the samples or their histogram for percentiles.
#[derive(Debug, Default, Clone)]
pub struct Dist {
    n: u64,
    sum: i128,
    min: i64,
    max: i64,
    samples: Vec<i64>,
    hist: Option<Box<Hist>>,
}

impl Dist {
    pub fn n(&self) -> u64 {
        self.n
    }

    pub fn add(&mut self, v: i64) {
        self.note(v, v, 1, v as i128);
        match &mut self.hist {
            Some(h) => h.add(v, 1),
            None => {
                self.samples.push(v);
                if self.samples.len() > EXACT_CAP {
                    self.spill_to_histogram();
                }
            }
        }
    }

    fn note(&mut self, min: i64, max: i64, n: u64, sum: i128) {
        (self.min, self.max) = if self.n == 0 {
            (min, max)
        } else {
            (self.min.min(min), self.max.max(max))
        };
        self.n += n;
        self.sum += sum;
    }

    fn spill_to_histogram(&mut self) {
        if self.hist.is_none() {
            let mut h = Hist::default();
            for &v in &self.samples {
                h.add(v, 1);
            }
            self.samples = Vec::new();
            self.hist = Some(Box::new(h));
        }
    }

    /// Adds every sample of `o`, exactly while both are exact and fit the cap together.
    pub fn merge(&mut self, o: &Dist) {
        if o.n == 0 {
            return;
        }
        self.note(o.min, o.max, o.n, o.sum);
        if self.hist.is_none() && o.hist.is_none() && self.samples.len() + o.samples.len() <= EXACT_CAP {
            self.samples.extend_from_slice(&o.samples);
            return;
        }
        self.spill_to_histogram();
        let h = self.hist.as_mut().expect("made above");
        match &o.hist {
            Some(oh) => {
                for (i, c) in oh.pos.iter() {
                    h.pos.add(i, c);
                }
                for (i, c) in oh.neg.iter() {
                    h.neg.add(i, c);
                }
                h.zeros += oh.zeros;
            }
            None => o.samples.iter().for_each(|&v| h.add(v, 1)),
        }
    }

    /// n, min, mean, p50, p90, p99, max and sum in seconds, and how the percentiles
    /// were found (`"exact"`, or `"histogram"` with its `relative_error`).
    pub fn summary(&mut self) -> Summary {
        if self.n == 0 {
            return Summary::default();
        }
        let (n, s) = (self.n, |ns: f64| Some(ns / 1e9));
        let rank = |p: f64| ((p * n as f64).ceil() as u64).clamp(1, n);
        let (min, max) = (self.min as f64, self.max as f64);
        let pct: Box<dyn Fn(f64) -> f64> = match &self.hist {
            None => {
                self.samples.sort_unstable();
                let v = &self.samples;
                Box::new(move |p| v[rank(p) as usize - 1] as f64)
            }
            Some(h) => Box::new(move |p| h.rank(rank(p)).clamp(min, max)),
        };
        let hist = self.hist.is_some();
        Summary {
            n,
            min_s: s(min),
            mean_s: s(self.sum as f64 / n as f64),
            p50_s: s(pct(0.50)),
            p90_s: s(pct(0.90)),
            p99_s: s(pct(0.99)),
            max_s: s(max),
            sum_s: s(self.sum as f64),
            percentiles: Some(if hist { "histogram" } else { "exact" }),
            relative_error: hist.then_some(RELATIVE_ERROR),
        }
    }
}

/// A distribution's summary as the report writes it: `{"n": 0}` alone when empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    pub n: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p90_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentiles: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relative_error: Option<f64>,
}
