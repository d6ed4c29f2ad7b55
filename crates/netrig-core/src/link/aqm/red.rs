//! RED, Random Early Detection (Floyd & Jacobson, "Random Early Detection Gateways for
//! Congestion Avoidance", 1993), with Linux sch_red's conventions: the average is of the
//! backlog in bytes, and a packet RED picks is ECN-marked instead of dropped when `ecn`
//! is on and it is ECN-capable, above `max_th` too (Linux without `harddrop`).
//!
//! - Average, on each arrival: `avg ← (1 − wq)·avg + wq·backlog`. The first arrival
//!   after the queue has been empty for `idle` instead decays it as if `m` arrivals had
//!   found the queue empty, `avg ← (1 − wq)^m·avg`, where `m` is `idle` over the time
//!   the link takes to send `avpkt` bytes. Without `link_rate_bps` there is no such
//!   time, and no idle decay.
//! - Decision: below `min_th`, never. From `min_th` to `max_th`, with probability
//!   `p_b = max_p·(avg − min_th)/(max_th − min_th)` spread by the count of arrivals left
//!   unmarked since the last mark, `p_a = p_b / (1 − count·p_b)` (F&J §7, and what
//!   Linux's random threshold amounts to): the gap between marks is uniform over
//!   `1..=1/p_b`, so the long-run fraction marked is `2·p_b/(1 + p_b)`, nearly twice the
//!   `p_b` of independent draws. At or above `max_th`, always.
//! - Gentle mode (Floyd, 2000): from `max_th` to `2·max_th`, `p_b` rises linearly from
//!   `max_p` to 1, spread by the count as above; only above `2·max_th` is every arrival
//!   marked.

use super::{DropCause, Drops, Fifo, Limit, Qdisc, QueueStats};
use crate::link::packet::Packet;
use crate::link::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Average backlog below which nothing is marked.
    pub min_th_bytes: u64,
    /// Average backlog at which everything is marked (twice it, in gentle mode).
    pub max_th_bytes: u64,
    /// Marking probability as the average reaches `max_th`.
    pub max_p: f64,
    /// Weight of each new backlog sample in the average.
    pub wq: f64,
    pub limit: Limit,
    /// Mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
    pub gentle: bool,
    /// Typical packet size, whose transmission time is the unit of idle decay.
    pub avpkt: u32,
    /// The rate the queue drains at, for idle decay; `None` turns idle decay off.
    pub link_rate_bps: Option<u64>,
}

impl Default for Config {
    /// The thresholds, limit and `avpkt` of tc-red(8)'s example; F&J's `max_p` and `wq`
    /// (Linux's W = 2^-9 is close to the latter).
    fn default() -> Self {
        Config {
            min_th_bytes: 30_000,
            max_th_bytes: 90_000,
            max_p: 0.02,
            wq: 0.002,
            limit: Limit::bytes(400_000),
            ecn: false,
            gentle: false,
            avpkt: 1000,
            link_rate_bps: None,
        }
    }
}

#[derive(Debug)]
pub struct Red {
    cfg: Config,
    fifo: Fifo,
    /// Average backlog, bytes.
    avg: f64,
    /// Arrivals left unmarked since the last mark, or since the average last rose past
    /// `min_th`.
    count: u64,
    /// When the queue last became empty, until the next arrival.
    idle_since_ns: Option<u64>,
}

impl Red {
    /// Panics unless `min_th_bytes` < `max_th_bytes` and `wq` is in (0, 1].
    pub fn new(cfg: Config) -> Red {
        assert!(cfg.min_th_bytes < cfg.max_th_bytes, "RED needs min_th < max_th");
        assert!(cfg.wq > 0.0 && cfg.wq <= 1.0, "RED needs 0 < wq <= 1");
        Red {
            cfg,
            fifo: Fifo::default(),
            avg: 0.0,
            count: 0,
            idle_since_ns: None,
        }
    }

    /// The average backlog, bytes.
    pub fn average_bytes(&self) -> f64 {
        self.avg
    }

    fn update_average(&mut self, now_ns: u64) {
        let keep = 1.0 - self.cfg.wq;
        match (self.idle_since_ns.take(), self.cfg.link_rate_bps) {
            (Some(since), Some(rate)) if rate > 0 => {
                let avpkt_ns = self.cfg.avpkt as f64 * 8e9 / rate as f64;
                let m = now_ns.saturating_sub(since) as f64 / avpkt_ns;
                self.avg *= keep.powf(m);
            }
            _ => self.avg = keep * self.avg + self.cfg.wq * self.fifo.bytes as f64,
        }
    }

    /// Whether RED picks this arrival, to drop or mark; keeps `count`.
    fn picks(&mut self, rng: &mut Rng) -> bool {
        let (min, max) = (self.cfg.min_th_bytes as f64, self.cfg.max_th_bytes as f64);
        let max_p = self.cfg.max_p;
        let p_b = if self.avg < min {
            self.count = 0;
            return false;
        } else if self.avg < max {
            max_p * (self.avg - min) / (max - min)
        } else if self.cfg.gentle && self.avg < 2.0 * max {
            max_p + (1.0 - max_p) * (self.avg - max) / max
        } else {
            self.count = 0;
            return true;
        };
        let spread = 1.0 - self.count as f64 * p_b;
        let p_a = if spread > 0.0 { p_b / spread } else { 1.0 };
        let picked = rng.chance(p_a);
        self.count = if picked { 0 } else { self.count + 1 };
        picked
    }
}

impl Qdisc for Red {
    fn enqueue(&mut self, now_ns: u64, mut pkt: Packet, rng: &mut Rng, drops: &mut Drops) {
        self.update_average(now_ns);
        let marked = self.picks(rng);
        if marked && !(self.cfg.ecn && pkt.mark_ce()) {
            self.fifo.stats.drops_aqm += 1;
            drops.push((pkt, DropCause::Aqm));
            return;
        }
        if !self.fifo.admits(&self.cfg.limit, pkt.len) {
            self.fifo.stats.drops_overflow += 1;
            drops.push((pkt, DropCause::Overflow));
            return;
        }
        if marked {
            self.fifo.stats.ecn_marks += 1;
        }
        self.fifo.push(now_ns, pkt);
    }

    fn dequeue(&mut self, now_ns: u64, _rng: &mut Rng, _drops: &mut Drops) -> Option<Packet> {
        let pkt = self.fifo.pop()?;
        if self.fifo.is_empty() {
            self.idle_since_ns = Some(now_ns);
        }
        Some(pkt)
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
        "red"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::packet::Ecn;

    /// The default config, edited.
    fn config(edit: impl FnOnce(&mut Config)) -> Config {
        let mut cfg = Config::default();
        edit(&mut cfg);
        cfg
    }

    /// What [`steady`] saw after its warm-up.
    struct Steady {
        red: Red,
        arrivals: u64,
        /// Arrival numbers of the packets dropped by RED.
        dropped: Vec<u64>,
        marked: u64,
    }

    impl Steady {
        fn dropped_fraction(&self) -> f64 {
            self.dropped.len() as f64 / self.arrivals as f64
        }
    }

    /// Holds the backlog at `backlog` 1500-byte packets (one leaves for each one
    /// admitted) while 20 000 arrivals settle the average near it, then `arrivals` more.
    fn steady(cfg: Config, backlog: usize, arrivals: u64, ecn: Ecn) -> Steady {
        let (mut red, mut rng, mut drops) = (Red::new(cfg), Rng::new(7), Drops::new());
        let packet = |id| Packet {
            ecn,
            ..Packet::sized(id, 1500, 0)
        };
        for id in 0..backlog as u64 {
            red.enqueue(0, packet(id), &mut rng, &mut drops);
        }
        assert_eq!((red.len_packets(), drops.len()), (backlog, 0), "filling up");
        let warmup = 20_000;
        let (mut dropped, mut marked) = (vec![], 0);
        for i in 0..warmup + arrivals {
            red.enqueue(i, packet(i), &mut rng, &mut drops);
            if red.len_packets() > backlog {
                let sent = red.dequeue(i, &mut rng, &mut drops).unwrap();
                marked += (i >= warmup && sent.ecn == Ecn::Ce) as u64;
            }
            for (pkt, cause) in drops.drain(..) {
                assert_eq!(cause, DropCause::Aqm);
                if i >= warmup {
                    dropped.push(pkt.id - warmup);
                }
            }
        }
        Steady {
            red,
            arrivals,
            dropped,
            marked,
        }
    }

    #[test]
    fn below_min_th_nothing_is_dropped() {
        // 15 packets: 22 500 bytes, under the 30 000 of min_th.
        let s = steady(Config::default(), 15, 100_000, Ecn::NotEct);
        assert!(
            (s.red.average_bytes() - 22_500.0).abs() < 1.0,
            "{}",
            s.red.average_bytes()
        );
        assert_eq!(s.dropped.len(), 0);
    }

    #[test]
    fn between_the_thresholds_drops_are_spread_evenly() {
        // 40 packets: 60 000 bytes, half way from min_th to max_th, so p_b = 0.01.
        let s = steady(Config::default(), 40, 200_000, Ecn::NotEct);
        assert!((s.red.average_bytes() - 60_000.0).abs() < 1.0);
        // Gaps uniform over 1..=100 average 50.5 arrivals: 2·p_b/(1 + p_b) = 0.0198.
        assert!((uniform_gap_fraction(0.01) - 2.0 / 101.0).abs() < 1e-12);
        let fraction = s.dropped_fraction();
        assert!(
            (0.0188..=0.0208).contains(&fraction),
            "dropped fraction {fraction}"
        );
        let gaps: Vec<u64> = s.dropped.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|&g| g <= 101), "a gap of {:?}", gaps.iter().max());
        // As many in 1..=25 as in 76..=100; independent draws at the same rate would give
        // four times as many short ones.
        let short = gaps.iter().filter(|&&g| g <= 25).count() as f64;
        let long = gaps.iter().filter(|&&g| (76..=100).contains(&g)).count() as f64;
        assert!(
            (short / long - 1.0).abs() < 0.15,
            "{short} short gaps, {long} long"
        );
    }

    #[test]
    fn above_max_th_everything_is_dropped() {
        // 70 packets: 105 000 bytes, over the 90 000 of max_th.
        let s = steady(Config::default(), 70, 10_000, Ecn::NotEct);
        assert_eq!(s.dropped.len(), 10_000);
        let gentle = steady(config(|c| c.gentle = true), 70, 10_000, Ecn::NotEct);
        assert!(
            gentle.dropped_fraction() < 0.5,
            "gentle dropped {}",
            gentle.dropped_fraction()
        );
    }

    /// The long-run fraction marked when the gap between marks is 1, 2, ... arrivals
    /// with probability p_b each, until the probabilities run out (F&J §7).
    fn uniform_gap_fraction(p_b: f64) -> f64 {
        let last = (1.0 / p_b).ceil();
        1.0 / (p_b * (last - 1.0) * last / 2.0 + last * (1.0 - p_b * (last - 1.0)))
    }

    #[test]
    fn gentle_mode_ramps_to_one_between_max_th_and_twice_it() {
        let gentle = config(|c| c.gentle = true);
        // Averages of 96 to 177 kB: p_b from max_p + 0.98·(avg − max_th)/max_th.
        for backlog in [64, 80, 100, 118] {
            let p_b = 0.02 + 0.98 * (backlog as f64 * 1500.0 - 90_000.0) / 90_000.0;
            let fraction = steady(gentle, backlog, 20_000, Ecn::NotEct).dropped_fraction();
            let expected = uniform_gap_fraction(p_b);
            assert!(
                (fraction - expected).abs() < 0.01,
                "p_b {p_b}: {fraction}, not {expected}"
            );
            assert!(fraction < 1.0);
        }
        // 125 packets: 187.5 kB, past 2·max_th.
        assert_eq!(steady(gentle, 125, 20_000, Ecn::NotEct).dropped_fraction(), 1.0);
    }

    #[test]
    fn ecn_capable_packets_are_marked_instead() {
        let ecn = config(|c| c.ecn = true);
        let s = steady(ecn, 40, 200_000, Ecn::Ect0);
        assert!(s.dropped.is_empty());
        let fraction = s.marked as f64 / s.arrivals as f64;
        assert!(
            (0.0188..=0.0208).contains(&fraction),
            "marked fraction {fraction}"
        );
        assert!(s.red.stats().ecn_marks >= s.marked);
        // Above max_th too, as Linux does without harddrop.
        let over = steady(ecn, 70, 10_000, Ecn::Ect1);
        assert_eq!((over.dropped.len(), over.marked), (0, 10_000));
        // Packets that cannot carry a mark are still dropped.
        let not_ect = steady(ecn, 40, 200_000, Ecn::NotEct);
        assert!((0.0188..=0.0208).contains(&not_ect.dropped_fraction()));
        assert_eq!(not_ect.marked, 0);
    }

    /// The average after the queue, settled at 40 packets, drains at 1 s and the next
    /// packet arrives 100 ms later; and the average before.
    fn average_across_idle(cfg: Config) -> (f64, f64) {
        let mut s = steady(cfg, 40, 0, Ecn::NotEct);
        let (mut rng, mut drops) = (Rng::new(1), Drops::new());
        while s.red.dequeue(1_000_000_000, &mut rng, &mut drops).is_some() {}
        let before = s.red.average_bytes();
        s.red
            .enqueue(1_100_000_000, Packet::sized(0, 1500, 0), &mut rng, &mut drops);
        (before, s.red.average_bytes())
    }

    #[test]
    fn idle_time_decays_the_average() {
        // 8 Mbit/s sends the 1000-byte avpkt in 1 ms: 100 ms idle counts as 100 arrivals.
        let (before, after) = average_across_idle(config(|c| c.link_rate_bps = Some(8_000_000)));
        assert!((before - 60_000.0).abs() < 1.0);
        assert!(
            (after / before - 0.998f64.powi(100)).abs() < 1e-12,
            "{before} → {after}"
        );
        // Without a rate, one ordinary step toward the empty queue.
        let (before, after) = average_across_idle(Config::default());
        assert!((after / before - 0.998).abs() < 1e-12, "{before} → {after}");
    }
}
