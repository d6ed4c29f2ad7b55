//! PIE, the Proportional Integral controller Enhanced (RFC 8033), taking Linux
//! sch_pie's choice wherever the RFC leaves one open.
//!
//! - Random dropping (§4.1): each arrival is dropped with probability `p`, except while
//!   the burst allowance lasts (§4.4), when the delay was under half the target at the
//!   last update and `p` < 20%, or when fewer than two packets (or two MTU of bytes) are queued.
//! - Drop probability (§4.2): every `tupdate`,
//!   `p += alpha·(qdelay − target) + beta·(qdelay − qdelay_old)`, the step scaled down
//!   while `p` is small ([`autoscale`]) and capped at 2% once `p` ≥ 10% (§5.5); `p` decays
//!   by 2% per update while both delays are zero. Linux also adds 2% per update while
//!   the delay exceeds 250 ms; so does this.
//! - Latency (§4.3): by default the sojourn time of the last packet dequeued, zero once
//!   the queue is empty (Linux's default, `dq_rate_estimator off`); with
//!   `dq_rate_estimator`, backlog divided by the measured drain rate (Little's law, §5.2).
//! - Burst allowance (§4.4): re-armed on arrival when `p` is zero and both delays are
//!   under half the target, and worn down by `tupdate` at each update.
//! - ECN (§5.1): an ECN-capable packet chosen for dropping is marked instead while
//!   `p` ≤ 10%. De-randomization (§5.4) is off by default.
//!
//! There is no timer. Updates fall due every `tupdate` from the first call; each call
//! first performs, in order, every update due at or before its `now`, then handles its
//! packet. Nothing PIE reads changes between calls, so each update sees what a timer
//! would have seen. Once `p` and both delays are zero an update changes nothing but the
//! burst allowance, so a long idle stretch is skipped in one step.

use super::{DropCause, Drops, Fifo, Limit, Qdisc, QueueStats};
use crate::link::packet::Packet;
use crate::link::rng::Rng;

const MS: u64 = 1_000_000;
/// The packet size below which `bytemode` scales `p` down, and the backlog (two of them)
/// below which PIE never drops. Linux uses the device MTU; the link model has none.
const MTU_BYTES: u64 = 1500;
/// Delay above which each update adds 2% (Linux sch_pie).
const HIGH_DELAY_NS: u64 = 250 * MS;
/// Backlog, in bytes, needed to start a drain-rate measurement (Linux QUEUE_THRESHOLD).
const DQ_THRESHOLD_BYTES: u64 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Target queueing delay (RFC 8033 QDELAY_REF).
    pub target_ns: u64,
    /// Interval between drop-probability updates. Must be positive.
    pub tupdate_ns: u64,
    /// Weight of the distance from target, per second of delay.
    pub alpha: f64,
    /// Weight of the change in delay since the last update, per second of delay.
    pub beta: f64,
    /// Burst allowance (RFC 8033 MAX_BURST).
    pub max_burst_ns: u64,
    pub limit: Limit,
    /// Mark ECN-capable packets instead of dropping them while `p` ≤ 10%.
    pub ecn: bool,
    /// Scale `p` by packet size / MTU, so that small packets are dropped less.
    pub bytemode: bool,
    /// Estimate the delay as backlog / drain rate instead of timestamping packets.
    pub dq_rate_estimator: bool,
    /// De-randomization (RFC 8033 §5.4): no drop until `p` has accumulated to 0.85 since
    /// the last drop, always a drop once it reaches 8.5.
    pub derandomize: bool,
}

impl Default for Config {
    /// RFC 8033's defaults; the limit is Linux's.
    fn default() -> Self {
        Config {
            target_ns: 15 * MS,
            tupdate_ns: 15 * MS,
            alpha: 0.125,
            beta: 1.25,
            max_burst_ns: 150 * MS,
            limit: Limit::packets(1000),
            ecn: false,
            bytemode: false,
            dq_rate_estimator: false,
            derandomize: false,
        }
    }
}

/// The factor RFC 8033 §4.2 applies to the step while `p` is small, so that a nearly
/// idle queue does not jump straight to a large drop probability.
pub fn autoscale(p: f64) -> f64 {
    const BANDS: [(f64, f64); 6] = [
        (0.000001, 2048.0),
        (0.00001, 512.0),
        (0.0001, 128.0),
        (0.001, 32.0),
        (0.01, 8.0),
        (0.1, 2.0),
    ];
    BANDS
        .iter()
        .find(|(below, _)| p < *below)
        .map_or(1.0, |(_, divisor)| 1.0 / divisor)
}

/// The drain-rate measurement of RFC 8033 §5.2, as Linux does it: time the dequeue of
/// DQ_THRESHOLD_BYTES while the backlog is at least that, and average the rates 7:1.
#[derive(Debug, Default)]
struct DrainRate {
    /// Bytes dequeued since `start_ns`, while a measurement runs.
    counted: Option<u64>,
    start_ns: u64,
    /// Zero until the first measurement ends.
    bytes_per_ns: f64,
}

impl DrainRate {
    fn on_dequeue(&mut self, now_ns: u64, len: u32, backlog: u64) {
        if backlog >= DQ_THRESHOLD_BYTES && self.counted.is_none() {
            self.counted = Some(0);
            self.start_ns = now_ns;
        }
        let Some(counted) = self.counted.as_mut() else {
            return;
        };
        *counted += len as u64;
        let elapsed = now_ns - self.start_ns;
        if *counted < DQ_THRESHOLD_BYTES || elapsed == 0 {
            return;
        }
        let rate = *counted as f64 / elapsed as f64;
        self.bytes_per_ns = if self.bytes_per_ns == 0.0 {
            rate
        } else {
            0.875 * self.bytes_per_ns + 0.125 * rate
        };
        if backlog < DQ_THRESHOLD_BYTES {
            self.counted = None;
        } else {
            self.counted = Some(0);
            self.start_ns = now_ns;
        }
    }

    fn delay_ns(&self, backlog: u64) -> u64 {
        if self.bytes_per_ns > 0.0 {
            (backlog as f64 / self.bytes_per_ns) as u64
        } else {
            0
        }
    }
}

#[derive(Debug)]
pub struct Pie {
    cfg: Config,
    fifo: Fifo,
    /// Drop probability, in [0, 1].
    prob: f64,
    /// The delay as of the last dequeue (timestamps) or the last update (drain rate).
    qdelay_ns: u64,
    /// The delay seen by the last update.
    qdelay_old_ns: u64,
    burst_ns: u64,
    /// Probability accumulated since the last drop, for de-randomization.
    accu_prob: f64,
    /// When the next update falls due; set by the first call.
    next_update_ns: Option<u64>,
    drain: DrainRate,
}

impl Pie {
    /// Panics if `tupdate_ns` is zero.
    pub fn new(cfg: Config) -> Pie {
        assert!(cfg.tupdate_ns > 0, "PIE tupdate must be positive");
        Pie {
            cfg,
            fifo: Fifo::default(),
            prob: 0.0,
            qdelay_ns: 0,
            qdelay_old_ns: 0,
            burst_ns: cfg.max_burst_ns,
            accu_prob: 0.0,
            next_update_ns: None,
            drain: DrainRate::default(),
        }
    }

    /// The current drop probability, in [0, 1].
    pub fn drop_probability(&self) -> f64 {
        self.prob
    }

    /// The queueing delay PIE currently sees.
    pub fn queue_delay_ns(&self) -> u64 {
        self.qdelay_ns
    }

    /// Performs every update due at or before `now_ns` (the calls to `enqueue` and
    /// `dequeue` do this themselves).
    pub fn advance(&mut self, now_ns: u64) {
        let tupdate = self.cfg.tupdate_ns;
        let mut due = *self.next_update_ns.get_or_insert(now_ns + tupdate);
        while due <= now_ns {
            if self.prob == 0.0 && self.qdelay_old_ns == 0 && self.next_qdelay_ns() == 0 {
                // Every remaining update would leave p at 0 and only wear the allowance down.
                let skipped = (now_ns - due) / tupdate + 1;
                self.burst_ns = self.burst_ns.saturating_sub(skipped * tupdate);
                due += skipped * tupdate;
                break;
            }
            self.update();
            due += tupdate;
        }
        self.next_update_ns = Some(due);
    }

    /// The delay the next update will use.
    fn next_qdelay_ns(&self) -> u64 {
        if self.cfg.dq_rate_estimator {
            self.drain.delay_ns(self.fifo.bytes)
        } else {
            self.qdelay_ns
        }
    }

    /// One drop-probability update (RFC 8033 §4.2, §4.4, §5.5; Linux's 250 ms rule).
    fn update(&mut self) {
        self.qdelay_ns = self.next_qdelay_ns();
        let secs = |ns: u64| ns as f64 * 1e-9;
        let over_target = secs(self.qdelay_ns) - secs(self.cfg.target_ns);
        let growth = secs(self.qdelay_ns) - secs(self.qdelay_old_ns);
        let mut step = autoscale(self.prob) * (self.cfg.alpha * over_target + self.cfg.beta * growth);
        if self.prob >= 0.1 && step > 0.02 {
            step = 0.02;
        }
        if self.qdelay_ns > HIGH_DELAY_NS {
            step += 0.02;
        }
        self.prob += step;
        if self.qdelay_ns == 0 && self.qdelay_old_ns == 0 {
            self.prob *= 0.98;
        }
        self.prob = self.prob.clamp(0.0, 1.0);
        self.qdelay_old_ns = self.qdelay_ns;
        self.burst_ns = self.burst_ns.saturating_sub(self.cfg.tupdate_ns);
    }

    /// Whether to drop (or mark) an arrival of `len` bytes (RFC 8033 §4.1, §5.4).
    fn drop_early(&mut self, len: u32, rng: &mut Rng) -> bool {
        if self.burst_ns > 0 {
            return false;
        }
        if self.qdelay_old_ns < self.cfg.target_ns / 2 && self.prob < 0.2 {
            return false;
        }
        if self.fifo.len() < 2 || self.fifo.bytes < 2 * MTU_BYTES {
            return false;
        }
        let p = if self.cfg.bytemode && len as u64 <= MTU_BYTES {
            self.prob * len as f64 / MTU_BYTES as f64
        } else {
            self.prob
        };
        let drop = if self.cfg.derandomize {
            if p == 0.0 {
                self.accu_prob = 0.0;
            }
            self.accu_prob += p;
            self.accu_prob >= 8.5 || (self.accu_prob >= 0.85 && rng.chance(p))
        } else {
            rng.chance(p)
        };
        if drop {
            self.accu_prob = 0.0;
        }
        drop
    }
}

impl Qdisc for Pie {
    fn enqueue(&mut self, now_ns: u64, mut pkt: Packet, rng: &mut Rng, drops: &mut Drops) {
        self.advance(now_ns);
        if !self.fifo.admits(&self.cfg.limit, pkt.len) {
            self.fifo.stats.drops_overflow += 1;
            self.accu_prob = 0.0;
            drops.push((pkt, DropCause::Overflow));
            return;
        }
        let half_target = self.cfg.target_ns / 2;
        if self.prob == 0.0 && self.qdelay_ns < half_target && self.qdelay_old_ns < half_target {
            self.burst_ns = self.cfg.max_burst_ns;
        }
        if self.drop_early(pkt.len, rng) {
            if self.cfg.ecn && self.prob <= 0.1 && pkt.mark_ce() {
                self.fifo.stats.ecn_marks += 1;
            } else {
                self.fifo.stats.drops_aqm += 1;
                drops.push((pkt, DropCause::Aqm));
                return;
            }
        }
        self.fifo.push(now_ns, pkt);
    }

    fn dequeue(&mut self, now_ns: u64, _rng: &mut Rng, _drops: &mut Drops) -> Option<Packet> {
        self.advance(now_ns);
        let pkt = self.fifo.pop()?;
        if self.cfg.dq_rate_estimator {
            self.drain.on_dequeue(now_ns, pkt.len, self.fifo.bytes);
        } else if self.fifo.is_empty() {
            self.qdelay_ns = 0;
        } else {
            self.qdelay_ns = now_ns.saturating_sub(pkt.enqueued_ns);
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
        "pie"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::aqm::droptail::{self, DropTail};
    use crate::link::packet::Ecn;

    const S: u64 = 1000 * MS;
    const SEND_GAP_NS: u64 = 8 * MS;

    /// What a run of [`run`] saw. Packet ids number the arrivals from 0.
    #[derive(Default)]
    struct Run {
        /// (departure time, sojourn) of every packet sent.
        sent: Vec<(u64, u64)>,
        dropped: Vec<(Packet, DropCause)>,
        /// Packets that left marked CE.
        marked: Vec<Packet>,
        /// The probability the discipline reported just after each arrival, by id.
        p_at_arrival: Vec<f64>,
    }

    /// 1500-byte arrivals every `gap_ns` (ECT(0) on odd ids when `ect_odd`) into a link
    /// that sends one packet every 8 ms (1.5 Mbit/s), both until `end_ns`. Sends go
    /// first when both fall due together.
    fn run<Q: Qdisc>(q: &mut Q, gap_ns: u64, end_ns: u64, ect_odd: bool, p_of: impl Fn(&Q) -> f64) -> Run {
        let (mut rng, mut drops, mut out) = (Rng::new(42), Drops::new(), Run::default());
        let (mut next_arrival, mut next_send, mut id) = (0, SEND_GAP_NS, 0);
        loop {
            if next_arrival < end_ns && next_arrival < next_send {
                let mut pkt = Packet::sized(id, 1500, 0);
                if ect_odd && id % 2 == 1 {
                    pkt.ecn = Ecn::Ect0;
                }
                q.enqueue(next_arrival, pkt, &mut rng, &mut drops);
                out.p_at_arrival.push(p_of(q));
                out.dropped.append(&mut drops);
                (id, next_arrival) = (id + 1, next_arrival + gap_ns);
            } else if next_send <= end_ns {
                if let Some(p) = q.dequeue(next_send, &mut rng, &mut drops) {
                    out.sent.push((next_send, next_send - p.enqueued_ns));
                    if p.ecn == Ecn::Ce {
                        out.marked.push(p);
                    }
                }
                next_send += SEND_GAP_NS;
            } else {
                return out;
            }
        }
    }

    fn median_sojourn_after(run: &Run, from_ns: u64) -> u64 {
        let mut s: Vec<u64> = run
            .sent
            .iter()
            .filter(|(t, _)| *t >= from_ns)
            .map(|(_, d)| *d)
            .collect();
        s.sort_unstable();
        s[s.len() / 2]
    }

    /// The default config, edited.
    fn config(edit: impl FnOnce(&mut Config)) -> Config {
        let mut cfg = Config::default();
        edit(&mut cfg);
        cfg
    }

    /// PIE with a 20 ms target, otherwise as edited.
    fn pie_20ms(edit: impl FnOnce(&mut Config)) -> Pie {
        Pie::new(config(|c| {
            c.target_ns = 20 * MS;
            edit(c)
        }))
    }

    #[test]
    fn autoscale_follows_the_rfc_table() {
        // p < 0.000001 → /2048, < 0.00001 → /512, ... < 0.1 → /2, else unscaled.
        let bands = [0.000_001, 0.000_01, 0.000_1, 0.001, 0.01, 0.1];
        let divisors = [2048.0, 512.0, 128.0, 32.0, 8.0, 2.0, 1.0];
        assert_eq!(autoscale(0.0), 1.0 / 2048.0);
        for (i, below) in bands.into_iter().enumerate() {
            assert_eq!(autoscale(below * 0.9), 1.0 / divisors[i], "just under {below}");
            assert_eq!(autoscale(below), 1.0 / divisors[i + 1], "at {below}");
        }
        assert_eq!(autoscale(1.0), 1.0);
    }

    #[test]
    fn constant_overload_holds_the_delay_at_target_and_drops_the_excess() {
        // 2 Mbit/s into 1.5 Mbit/s for 60 s: a quarter of the arrivals must go.
        let mut q = pie_20ms(|_| ());
        let r = run(&mut q, 6 * MS, 60 * S, false, Pie::drop_probability);
        let median = median_sojourn_after(&r, 10 * S);
        assert!((10 * MS..=40 * MS).contains(&median), "median sojourn {median}");

        let late = |id: u64| id * 6 * MS >= 30 * S;
        let arrivals = (0..r.p_at_arrival.len() as u64).filter(|&id| late(id)).count();
        let dropped = r.dropped.iter().filter(|(p, _)| late(p.id)).count();
        let fraction = dropped as f64 / arrivals as f64;
        assert!((0.2..=0.3).contains(&fraction), "drop fraction {fraction}");
        assert!(r.dropped.iter().all(|(_, c)| *c == DropCause::Aqm));
        // p itself settles higher: at 20 ms the queue is often under the two packets
        // below which PIE never drops (§4.1).
        let p_late = &r.p_at_arrival[5000..];
        let p_mean = p_late.iter().sum::<f64>() / p_late.len() as f64;
        assert!((fraction..=0.5).contains(&p_mean), "mean p {p_mean}");
    }

    #[test]
    fn drop_tail_holds_its_whole_buffer_where_pie_holds_the_target() {
        let with_pie = run(&mut pie_20ms(|_| ()), 6 * MS, 60 * S, false, |_| 0.0);
        let mut fifo = DropTail::new(droptail::Config::default());
        let with_fifo = run(&mut fifo, 6 * MS, 60 * S, false, |_| 0.0);
        let pie_ns = median_sojourn_after(&with_pie, 10 * S);
        let fifo_ns = median_sojourn_after(&with_fifo, 10 * S);
        // 1000 packets at 8 ms each: about 8 s.
        assert!(fifo_ns > 7_500 * MS, "drop-tail median {fifo_ns} ns");
        assert!(pie_ns * 100 < fifo_ns, "PIE {pie_ns} vs drop-tail {fifo_ns}");
    }

    #[test]
    fn the_rate_estimator_also_holds_the_delay_near_target() {
        let mut q = pie_20ms(|c| c.dq_rate_estimator = true);
        let r = run(&mut q, 6 * MS, 60 * S, false, Pie::drop_probability);
        let median = median_sojourn_after(&r, 10 * S);
        assert!((10 * MS..=40 * MS).contains(&median), "median sojourn {median}");
        assert!(q.drain.bytes_per_ns > 0.0);
    }

    /// A queue whose head has waited `sojourn_ns` when it leaves at 300 ms: the p that
    /// the update at 315 ms then computes.
    fn p_after_head_waited(sojourn_ns: u64) -> f64 {
        let mut q = Pie::new(Config::default());
        let (mut rng, mut drops) = (Rng::new(1), Drops::new());
        // Updates fall due every 15 ms from the first call, 300 ms and 315 ms among them.
        let start = 300 * MS - sojourn_ns;
        for i in 0..40 {
            q.enqueue(start, Packet::sized(i, 1500, 0), &mut rng, &mut drops);
        }
        q.dequeue(300 * MS, &mut rng, &mut drops);
        assert_eq!((q.queue_delay_ns(), q.drop_probability()), (sojourn_ns, 0.0));
        q.advance(315 * MS);
        q.drop_probability()
    }

    #[test]
    fn delay_over_250_ms_adds_two_percent_per_update() {
        // alpha·(0.3 − 0.015) + beta·(0.3 − 0) = 0.410625, scaled by 1/2048, plus 2%.
        let high = p_after_head_waited(300 * MS);
        assert!((high - (0.02 + 0.410_625 / 2048.0)).abs() < 1e-12, "{high}");
        // Under 250 ms only the scaled step: (0.125·0.225 + 1.25·0.24) / 2048.
        let low = p_after_head_waited(240 * MS);
        assert!((low - 0.328_125 / 2048.0).abs() < 1e-12, "{low}");
    }

    /// Arrivals every ms for 300 ms, nothing sent, from a state where p is 0.5 and the
    /// delay 50 ms; the ids of those dropped.
    fn dropped_with_high_p(max_burst_ns: u64) -> Vec<u64> {
        let mut q = Pie::new(config(|c| c.max_burst_ns = max_burst_ns));
        (q.prob, q.qdelay_ns, q.qdelay_old_ns) = (0.5, 50 * MS, 50 * MS);
        let (mut rng, mut drops) = (Rng::new(3), Drops::new());
        for i in 0..300 {
            q.enqueue(i * MS, Packet::sized(i, 1500, 0), &mut rng, &mut drops);
        }
        drops.iter().map(|(p, _)| p.id).collect()
    }

    #[test]
    fn burst_allowance_holds_off_early_drops_for_max_burst() {
        let dropped = dropped_with_high_p(150 * MS);
        // Ten updates (15 ms apart) wear the 150 ms allowance down; none before.
        assert!(dropped.iter().all(|&id| id >= 150), "{dropped:?}");
        assert!(dropped.len() > 50, "{} dropped after it", dropped.len());
        let without = dropped_with_high_p(0);
        assert!(without.iter().filter(|&&id| id < 150).count() > 50, "{without:?}");
    }

    #[test]
    fn burst_on_an_idle_queue_is_not_dropped() {
        let mut q = Pie::new(Config::default());
        let (mut rng, mut drops) = (Rng::new(1), Drops::new());
        for i in 0..100 {
            q.enqueue(S, Packet::sized(i, 1500, 0), &mut rng, &mut drops);
        }
        // It drains at 8 ms a packet, the delay rising far past target, while a second
        // burst of 20 arrives 100 ms in: still within the allowance.
        for k in 1..=12 {
            q.dequeue(S + k * SEND_GAP_NS, &mut rng, &mut drops);
        }
        for i in 100..120 {
            q.enqueue(S + 100 * MS, Packet::sized(i, 1500, 0), &mut rng, &mut drops);
        }
        assert!(drops.is_empty());
        assert_eq!(q.len_packets(), 108);
    }

    /// Arrivals of `sizes` bytes into an unlimited queue, all at time 0 so that no update
    /// moves p from `p`, after one saw 50 ms of delay, with no allowance; the ids dropped.
    fn dropped_at_fixed_p(mut cfg: Config, p: f64, sizes: &[u32]) -> Vec<u64> {
        (cfg.max_burst_ns, cfg.limit) = (0, Limit::UNLIMITED);
        let mut q = Pie::new(cfg);
        (q.prob, q.qdelay_ns, q.qdelay_old_ns) = (p, 50 * MS, 50 * MS);
        let (mut rng, mut drops) = (Rng::new(5), Drops::new());
        for (id, &len) in sizes.iter().enumerate() {
            q.enqueue(0, Packet::sized(id as u64, len, 0), &mut rng, &mut drops);
        }
        assert!(drops.iter().all(|(_, c)| *c == DropCause::Aqm));
        drops.iter().map(|(p, _)| p.id).collect()
    }

    #[test]
    fn never_drops_from_a_queue_under_two_packets() {
        assert_eq!(dropped_at_fixed_p(Config::default(), 1.0, &[1500; 3]), [2]);
        // Two MTU of bytes, for small packets: the fourth 1000-byte one is the first.
        assert_eq!(dropped_at_fixed_p(Config::default(), 1.0, &[1000; 5]), [3, 4]);
    }

    #[test]
    fn bytemode_drops_small_packets_less() {
        let sizes: Vec<u32> = [1500, 1500].into_iter().chain([100; 5000]).collect();
        let by_bytes = dropped_at_fixed_p(config(|c| c.bytemode = true), 0.3, &sizes);
        let by_packets = dropped_at_fixed_p(Config::default(), 0.3, &sizes);
        // 0.3 · 100 / 1500 = 2% against 30%.
        assert!((50..=150).contains(&by_bytes.len()), "{}", by_bytes.len());
        assert!((1300..=1700).contains(&by_packets.len()), "{}", by_packets.len());
    }

    #[test]
    fn derandomization_spaces_drops_between_0_85_and_8_5_of_accumulated_p() {
        let gaps = |cfg| {
            let ids = dropped_at_fixed_p(cfg, 0.3, &[1500; 3000]);
            ids.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>()
        };
        let with = gaps(config(|c| c.derandomize = true));
        // 0.3 accumulates past 0.85 on the third arrival and reaches 8.5 on the 29th.
        assert!(with.len() > 100, "{with:?}");
        assert!(with.iter().all(|g| (3..=29).contains(g)), "{with:?}");
        assert!(gaps(Config::default()).iter().any(|&g| g < 3));
    }

    #[test]
    fn probability_decays_to_zero_after_the_overload_stops() {
        let mut q = pie_20ms(|_| ());
        let r = run(&mut q, 6 * MS, 20 * S, false, Pie::drop_probability);
        let p_end = *r.p_at_arrival.last().unwrap();
        assert!(p_end > 0.15, "p at the end of the overload {p_end}");

        // The link keeps polling; the queue drains within a few packets.
        let (mut rng, mut drops) = (Rng::new(1), Drops::new());
        let mut p = vec![];
        for k in 1..=625 {
            q.dequeue(20 * S + k * SEND_GAP_NS, &mut rng, &mut drops);
            p.push(q.drop_probability());
        }
        assert_eq!(q.len_packets(), 0);
        assert!(p.windows(2).skip(10).all(|w| w[1] <= w[0]), "p rose while idle");
        assert_eq!(*p.last().unwrap(), 0.0, "p 5 s after the overload");

        // An hour of silence is skipped, not iterated, and re-arms the allowance.
        q.enqueue(3600 * S, Packet::sized(0, 1500, 0), &mut rng, &mut drops);
        assert_eq!((q.drop_probability(), q.burst_ns), (0.0, 150 * MS));
    }

    #[test]
    fn ecn_capable_packets_are_marked_while_p_is_at_most_ten_percent() {
        // 1.6 Mbit/s into 1.5, half of it ECN-capable. Marking alone cannot shed the
        // excess (p ≤ 10% of half the traffic is under 1/16), so p hovers around 10%.
        let mut q = pie_20ms(|c| c.ecn = true);
        let r = run(&mut q, 7_500_000, 60 * S, true, Pie::drop_probability);
        let p_of = |pkt: &Packet| r.p_at_arrival[pkt.id as usize];

        assert!(r.marked.len() > 50, "{} marked", r.marked.len());
        assert!(r.marked.iter().all(|p| p.id % 2 == 1 && p_of(p) <= 0.1));
        assert_eq!(q.stats().ecn_marks, r.marked.len() as u64);
        // ECN-capable packets are dropped only above 10%; the others at any p.
        let (ect, not_ect): (Vec<&Packet>, Vec<&Packet>) =
            r.dropped.iter().map(|(p, _)| p).partition(|p| p.id % 2 == 1);
        assert!(!ect.is_empty() && ect.iter().all(|p| p_of(p) > 0.1));
        assert!(not_ect.iter().any(|p| p_of(p) <= 0.1));
    }
}
