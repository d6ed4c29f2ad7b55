//! Propagation delay with jitter and reordering (tc-netem(8) semantics), and the delay
//! line that holds packets until their delivery time.
//!
//! Jitter draws from a distribution scaled so that `jitter` is its spread: uniform on
//! [-jitter, +jitter] (netem's default), or normal, pareto, paretonormal with standard
//! deviation `jitter`; draws may be correlated. As in netem, jitter reorders packets
//! (a packet's delivery time is its own) unless `no_reorder` keeps them in order.
//! netem's `reorder P gap G` sends one packet in G (with chance P) without delay.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use crate::link::packet::Packet;
use crate::link::rng::{normal_quantile, Correlated, Rng};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Distribution {
    #[default]
    Uniform,
    Normal,
    Pareto,
    ParetoNormal,
}

impl Distribution {
    pub fn parse(name: &str) -> Option<Distribution> {
        Some(match name {
            "uniform" => Distribution::Uniform,
            "normal" => Distribution::Normal,
            "pareto" => Distribution::Pareto,
            "paretonormal" => Distribution::ParetoNormal,
            _ => return None,
        })
    }

    /// A draw with mean 0 and spread 1 from a uniform `u` in [0, 1).
    fn sample(self, u: f64, rng: &mut Rng) -> f64 {
        // Pareto with shape 3, shifted and scaled to mean 0 and standard deviation 1.
        let pareto = |u: f64| {
            let (alpha, xm) = (3.0f64, 1.0f64);
            let x = xm / (1.0 - u).powf(1.0 / alpha);
            let mean = alpha * xm / (alpha - 1.0);
            let sd = (xm * xm * alpha / ((alpha - 1.0).powi(2) * (alpha - 2.0))).sqrt();
            (x - mean) / sd
        };
        match self {
            Distribution::Uniform => 2.0 * u - 1.0,
            Distribution::Normal => normal_quantile(u),
            Distribution::Pareto => pareto(u),
            // netem's paretonormal: a quarter normal, three quarters pareto.
            Distribution::ParetoNormal => 0.25 * normal_quantile(rng.uniform()) + 0.75 * pareto(u),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Delay {
    pub base_ns: u64,
    pub jitter_ns: u64,
    pub distribution: Distribution,
    pub no_reorder: bool,
    corr: Correlated,
    reorder_p: f64,
    reorder_gap: u32,
    reorder_corr: Correlated,
    counter: u32,
    last_delivery: u64,
}

impl Delay {
    pub fn new(base_ns: u64, jitter_ns: u64, distribution: Distribution, correlation: f64) -> Delay {
        Delay {
            base_ns,
            jitter_ns,
            distribution,
            no_reorder: false,
            corr: Correlated::new(correlation),
            reorder_p: 0.0,
            reorder_gap: 0,
            reorder_corr: Correlated::new(0.0),
            counter: 0,
            last_delivery: 0,
        }
    }

    /// netem's `reorder p [correlation] gap g` (g = 1 when not given).
    pub fn with_reorder(mut self, p: f64, correlation: f64, gap: u32) -> Delay {
        self.reorder_p = p;
        self.reorder_gap = gap.max(1);
        self.reorder_corr = Correlated::new(correlation);
        self
    }

    /// When a packet that left the link at `departed_ns` is delivered.
    pub fn delivery(&mut self, departed_ns: u64, rng: &mut Rng) -> u64 {
        if self.reorder_p > 0.0 {
            let in_gap = self.counter + 1 < self.reorder_gap;
            if !in_gap && self.reorder_corr.next(rng) < self.reorder_p {
                self.counter = 0;
                return departed_ns; // sent at once, ahead of the delayed ones
            }
            self.counter += 1;
        }
        let mut d = self.base_ns as f64;
        if self.jitter_ns > 0 {
            let u = self.corr.next(rng);
            d += self.jitter_ns as f64 * self.distribution.sample(u, rng);
        }
        let mut t = departed_ns + d.max(0.0) as u64;
        if self.no_reorder {
            t = t.max(self.last_delivery);
            self.last_delivery = t;
        }
        t
    }
}

#[derive(Debug)]
struct Entry {
    at: u64,
    seq: u64,
    pkt: Packet,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest first.
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

/// Packets in flight, released in order of delivery time (ties in arrival order).
///
/// Without jitter, delivery times come in order: those packets wait in a FIFO (a push
/// and a pop move one packet, where a heap's sift moves several). A packet due before
/// the FIFO's last (jitter, reordering) goes to a heap; the earlier of the two heads
/// leaves first, ties by arrival, so the order is the heap's alone would give.
#[derive(Debug, Default)]
pub struct DelayLine {
    fifo: VecDeque<Entry>,
    heap: BinaryHeap<Entry>,
    seq: u64,
    bytes: u64,
}

impl DelayLine {
    pub fn push(&mut self, at: u64, pkt: Packet) {
        self.seq += 1;
        self.bytes += pkt.len as u64;
        let e = Entry {
            at,
            seq: self.seq,
            pkt,
        };
        // In order with the FIFO's last (same time: later arrival, so after it).
        if self.fifo.back().is_none_or(|b| b.at <= at) {
            self.fifo.push_back(e);
        } else {
            self.heap.push(e);
        }
    }

    /// Whether the FIFO's head leaves before the heap's (Entry's order is reversed).
    fn fifo_first(&self) -> Option<bool> {
        match (self.fifo.front(), self.heap.peek()) {
            (Some(f), Some(h)) => Some(f > h),
            (Some(_), None) => Some(true),
            (None, Some(_)) => Some(false),
            (None, None) => None,
        }
    }

    pub fn next_at(&self) -> Option<u64> {
        if self.fifo_first()? {
            self.fifo.front().map(|e| e.at)
        } else {
            self.heap.peek().map(|e| e.at)
        }
    }

    /// The next packet due by `now_ns`, with its delivery time.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<(u64, Packet)> {
        if self.next_at()? > now_ns {
            return None;
        }
        let e = if self.fifo_first()? {
            self.fifo.pop_front()?
        } else {
            self.heap.pop()?
        };
        self.bytes -= e.pkt.len as u64;
        Some((e.at, e.pkt))
    }

    pub fn len(&self) -> usize {
        self.fifo.len() + self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fifo.is_empty() && self.heap.is_empty()
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(v: &[f64]) -> (f64, f64) {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        (
            m,
            (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64).sqrt(),
        )
    }

    #[test]
    fn fixed_delay_is_exact() {
        let mut d = Delay::new(10_000_000, 0, Distribution::Uniform, 0.0);
        let mut rng = Rng::new(1);
        assert_eq!(d.delivery(5, &mut rng), 10_000_005);
    }

    #[test]
    fn jitter_distributions_have_the_configured_spread() {
        let mut rng = Rng::new(2);
        for (dist, want_sd) in [
            (Distribution::Uniform, 1e6 / 3f64.sqrt()),
            (Distribution::Normal, 1e6),
            (Distribution::Pareto, 1e6),
            (
                Distribution::ParetoNormal,
                1e6 * (0.25f64.powi(2) + 0.75f64.powi(2)).sqrt(),
            ),
        ] {
            let mut d = Delay::new(20_000_000, 1_000_000, dist, 0.0);
            let v: Vec<f64> = (0..200_000).map(|_| d.delivery(0, &mut rng) as f64).collect();
            let (m, sd) = stats(&v);
            assert!((m - 20e6).abs() < 0.02 * 1e6, "{dist:?} mean {m}");
            // Pareto (shape 3) has a finite variance but an infinite fourth moment: its
            // sample spread converges slowly, so the heavy-tailed ones get more slack.
            let tol = if matches!(dist, Distribution::Uniform | Distribution::Normal) {
                0.03
            } else {
                0.15
            };
            assert!(
                (sd / want_sd - 1.0).abs() < tol,
                "{dist:?} sd {sd} want {want_sd}"
            );
        }
    }

    #[test]
    fn uniform_jitter_stays_in_its_band_and_reorders_unless_told_not_to() {
        let mut rng = Rng::new(3);
        let mut d = Delay::new(10_000_000, 2_000_000, Distribution::Uniform, 0.0);
        let times: Vec<u64> = (0..10_000u64)
            .map(|i| d.delivery(i * 100_000, &mut rng) - i * 100_000)
            .collect();
        assert!(times.iter().all(|&t| (8_000_000..=12_000_000).contains(&t)));
        let mut d = Delay::new(10_000_000, 2_000_000, Distribution::Uniform, 0.0);
        let at: Vec<u64> = (0..10_000u64)
            .map(|i| d.delivery(i * 100_000, &mut rng))
            .collect();
        assert!(at.windows(2).any(|w| w[1] < w[0]), "jitter reorders");
        d.no_reorder = true;
        let at: Vec<u64> = (0..10_000u64)
            .map(|i| d.delivery(i * 100_000, &mut rng))
            .collect();
        assert!(at.windows(2).all(|w| w[1] >= w[0]), "no_reorder keeps order");
    }

    #[test]
    fn netem_reorder_sends_one_in_gap_at_once() {
        let mut rng = Rng::new(4);
        let mut d = Delay::new(10_000_000, 0, Distribution::Uniform, 0.0).with_reorder(1.0, 0.0, 5);
        let immediate: Vec<bool> = (0..20).map(|_| d.delivery(0, &mut rng) == 0).collect();
        let idx: Vec<usize> = immediate
            .iter()
            .enumerate()
            .filter(|(_, &x)| x)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(idx, vec![4, 9, 14, 19]);
        let mut d = Delay::new(10_000_000, 0, Distribution::Uniform, 0.0).with_reorder(0.25, 0.0, 1);
        let n = (0..100_000).filter(|_| d.delivery(0, &mut rng) == 0).count();
        assert!((24_000..26_000).contains(&n), "{n}");
    }

    #[test]
    fn delay_line_releases_in_time_order() {
        let mut l = DelayLine::default();
        l.push(30, Packet::sized(1, 100, 0));
        l.push(10, Packet::sized(2, 100, 0));
        l.push(10, Packet::sized(3, 100, 0));
        assert_eq!(l.next_at(), Some(10));
        assert!(l.pop_due(5).is_none());
        let got: Vec<u64> = std::iter::from_fn(|| l.pop_due(100)).map(|(_, p)| p.id).collect();
        assert_eq!(got, vec![2, 3, 1]);
        assert_eq!(l.bytes(), 0);
    }

    #[test]
    fn the_line_releases_as_one_heap_would_whatever_the_order_of_times() {
        // Times mostly in order with some out of order (jitter), and ties: every pop
        // gives what a plain heap of (time, arrival) gives, polled at random times.
        let mut rng = Rng::new(11);
        let mut l = DelayLine::default();
        let mut reference: BinaryHeap<Entry> = BinaryHeap::new();
        let (mut t, mut seq, mut now) = (1_000u64, 0u64, 0u64);
        for i in 0..20_000u32 {
            t += rng.below(3) * 100;
            let at = if rng.below(5) == 0 {
                t.saturating_sub(rng.below(1_000))
            } else {
                t
            };
            seq += 1;
            l.push(at, Packet::sized(seq, 100 + i % 7, 0));
            reference.push(Entry {
                at,
                seq,
                pkt: Packet::sized(seq, 0, 0),
            });
            if rng.below(4) == 0 {
                now += rng.below(400);
                loop {
                    let want = reference.peek().filter(|e| e.at <= now).map(|e| (e.at, e.seq));
                    let got = l.pop_due(now).map(|(at, p)| (at, p.id));
                    assert_eq!(got, want, "push {i}, now {now}");
                    if want.is_none() {
                        break;
                    }
                    reference.pop();
                }
                assert_eq!(l.len(), reference.len());
                assert_eq!(l.next_at(), reference.peek().map(|e| e.at));
            }
        }
        while let Some(e) = reference.pop() {
            assert_eq!(l.pop_due(u64::MAX).map(|(at, p)| (at, p.id)), Some((e.at, e.seq)));
        }
        assert!(l.is_empty() && l.bytes() == 0);
    }
}
