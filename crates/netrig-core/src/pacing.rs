//! Pacing: when may the next block go, for a target rate, and what a late sender owes.
//!
//! The schedule is absolute: the next departure is computed from the total sent since
//! the start, so the long-run rate is exact (no accumulated rounding). A sender that
//! falls behind it (the host stopped the process, a socket was full) owes what it missed
//! and sends it, but never faster than [`PacerConfig::catch_up_pct`] of the target rate
//! over any [`PacerConfig::catch_up_window_ns`] (a GCRA limiter at that rate). So a
//! 150 ms stall at rate R costs a 150 ms stretch at 2R afterwards, and the average over
//! the test is R again; iperf3 instead bursts at line rate until its average is met,
//! and the old netrig pacer forgave all but 1 ms of the debt, losing the rate for good.
//! The window must be longer than a busy host's wake-up delays: a sender that wakes
//! 4 ms late each time and may send only 1 ms of catch-up per wake-up never catches up.
//!
//! Debt older than [`PacerConfig::max_debt_ns`] is forgiven (a sender that cannot reach
//! the rate at all should not burst for minutes when the path frees up), and counted.
//! Every stretch of time the sender spent behind by more than the tolerance is recorded,
//! so results can say how far behind the sender was, when, and for how long.
//!
//! Deterministic: the caller passes `now`; nothing here reads a clock.

/// How a pacer keeps its schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacerConfig {
    /// Target rate, bit/s (> 0).
    pub rate_bps: u64,
    /// A lag no larger does not count as behind: a sender woken this late is on time
    /// (iperf3's `--pacing-timer`, 1 ms by default; at most half of `max_debt_ns`).
    pub tolerance_ns: u64,
    /// Bytes that leave back to back as one group (iperf3's `-b RATE/N`: N blocks); the
    /// groups are paced at the rate. 0: every block is paced on its own.
    pub burst_bytes: u64,
    /// The fastest a late sender may go while it catches up, in percent of the rate...
    pub catch_up_pct: u32,
    /// ...measured over windows this long (the limiter's tolerance): what it may send
    /// at once after a stall, and the longest wake-up delay it can still catch up with.
    pub catch_up_window_ns: u64,
    /// The most debt kept, as time behind the schedule; older debt is forgiven.
    pub max_debt_ns: u64,
}

/// Catching up at twice the rate repays a stall in as long as the stall lasted, and
/// adds at most the stall's own worth of data to a bottleneck's queue.
pub const DEFAULT_CATCH_UP_PCT: u32 = 200;
pub const DEFAULT_TOLERANCE_NS: u64 = 1_000_000;
pub const DEFAULT_CATCH_UP_WINDOW_NS: u64 = 10_000_000;
pub const DEFAULT_MAX_DEBT_NS: u64 = 1_000_000_000;
/// Episodes kept in a report (the ones furthest behind).
pub const EPISODES_KEPT: usize = 8;

impl PacerConfig {
    pub fn new(rate_bps: u64) -> PacerConfig {
        PacerConfig {
            rate_bps,
            tolerance_ns: DEFAULT_TOLERANCE_NS,
            burst_bytes: 0,
            catch_up_pct: DEFAULT_CATCH_UP_PCT,
            catch_up_window_ns: DEFAULT_CATCH_UP_WINDOW_NS,
            max_debt_ns: DEFAULT_MAX_DEBT_NS,
        }
    }
}

/// One stretch of time behind the schedule by more than the tolerance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Episode {
    /// When the lag passed the tolerance, ns after the pacer's start.
    pub start_ns: u64,
    /// How long it lasted (until the sender was back within the tolerance).
    pub lasted_ns: u64,
    /// The largest lag seen in it.
    pub max_lag_ns: u64,
}

/// What a pacer did, for the results.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PacingReport {
    pub rate_bps: u64,
    pub catch_up_pct: u32,
    pub tolerance_ns: u64,
    /// Episodes behind schedule (closed, plus the one open at the end).
    pub episodes: u64,
    /// Total time behind by more than the tolerance.
    pub behind_ns: u64,
    /// The largest lag, as time and as the bytes the schedule was ahead by.
    pub max_lag_ns: u64,
    pub max_lag_bytes: u64,
    /// Debt older than the limit, dropped rather than repaid.
    pub forgiven_bytes: u64,
    /// How far behind the schedule the sender was when it stopped (0 within the
    /// tolerance: a sender asleep until its next block is not short).
    pub short_at_end_bytes: u64,
    /// When the episode still open at the end began (ns after the start), if any.
    pub short_since_ns: Option<u64>,
    /// The episodes furthest behind, in time order, at most [`EPISODES_KEPT`].
    pub worst: Vec<Episode>,
}

/// The episode under way, and when the sender got back inside the tolerance (if it has).
#[derive(Debug, Clone, Copy)]
struct Open {
    episode: Episode,
    back_at_ns: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct Pacer {
    cfg: PacerConfig,
    start_ns: u64,
    /// Bits handed out so far: the position in the schedule.
    bits: u128,
    /// Forgiven debt moves the whole schedule later.
    shift_ns: u64,
    /// GCRA at the catch-up rate: the theoretical time of the next departure.
    tat_ns: u64,
    /// GCRA tolerance: the catch-up window, or a burst group if that is longer.
    tau_ns: u64,
    open: Option<Open>,
    episodes: u64,
    behind_ns: u64,
    max_lag_ns: u64,
    forgiven_bits: u128,
    worst: Vec<Episode>,
}

const NS: u128 = 1_000_000_000;

impl Pacer {
    pub fn new(cfg: PacerConfig, start_ns: u64) -> Pacer {
        assert!(cfg.rate_bps > 0, "a pacer needs a positive rate");
        assert!(
            cfg.catch_up_pct >= 100,
            "catching up slower than the rate never catches up"
        );
        let cfg = PacerConfig {
            tolerance_ns: cfg.tolerance_ns.min(cfg.max_debt_ns / 2),
            ..cfg
        };
        let mut p = Pacer {
            cfg,
            start_ns,
            bits: 0,
            shift_ns: 0,
            tat_ns: start_ns,
            tau_ns: 0,
            open: None,
            episodes: 0,
            behind_ns: 0,
            max_lag_ns: 0,
            forgiven_bits: 0,
            worst: vec![],
        };
        p.tau_ns = p
            .at_catch_up_rate(cfg.burst_bytes as u128 * 8)
            .max(cfg.catch_up_window_ns);
        p
    }

    fn at_catch_up_rate(&self, bits: u128) -> u64 {
        let cap = self.cfg.rate_bps as u128 * self.cfg.catch_up_pct as u128 / 100;
        (bits * NS / cap) as u64
    }

    /// When the schedule says the next block is due (ignoring the catch-up limit).
    fn scheduled_ns(&self) -> u64 {
        let group = self.cfg.burst_bytes as u128 * 8;
        let paced = self.bits.checked_div(group).map_or(self.bits, |g| g * group);
        self.start_ns + self.shift_ns + (paced * NS / self.cfg.rate_bps as u128) as u64
    }

    /// The earliest time the next block may leave.
    pub fn due_ns(&self) -> u64 {
        self.scheduled_ns().max(self.tat_ns.saturating_sub(self.tau_ns))
    }

    /// Whether a block may leave at `now`. Keeps the books on lateness: forgives debt
    /// beyond the limit and opens or closes episodes behind schedule.
    pub fn ready(&mut self, now_ns: u64) -> bool {
        let scheduled = self.scheduled_ns();
        let mut lag = now_ns.saturating_sub(scheduled);
        if lag > self.cfg.max_debt_ns {
            let excess = lag - self.cfg.max_debt_ns;
            self.shift_ns += excess;
            self.forgiven_bits += excess as u128 * self.cfg.rate_bps as u128 / NS;
            lag = self.cfg.max_debt_ns;
        }
        self.observe(now_ns, lag);
        scheduled <= now_ns && self.tat_ns.saturating_sub(self.tau_ns) <= now_ns
    }

    fn observe(&mut self, now_ns: u64, lag: u64) {
        self.max_lag_ns = self.max_lag_ns.max(lag);
        let t = now_ns.saturating_sub(self.start_ns);
        if lag > self.cfg.tolerance_ns {
            let since = (t + self.cfg.tolerance_ns).saturating_sub(lag);
            let open = self.open.get_or_insert(Open {
                episode: Episode {
                    start_ns: since,
                    ..Episode::default()
                },
                back_at_ns: None,
            });
            open.episode.max_lag_ns = open.episode.max_lag_ns.max(lag);
            open.back_at_ns = None;
        } else if lag <= self.cfg.tolerance_ns / 2 {
            // An episode ends when the sender is back well inside the tolerance and
            // stays there for a catch-up window: a lag hovering at the tolerance's edge
            // while the last of a debt is repaid is one episode, not many.
            let Some(open) = self.open.as_mut() else { return };
            let back = *open.back_at_ns.get_or_insert(t);
            if t.saturating_sub(back) >= self.cfg.catch_up_window_ns {
                self.close_open();
            }
        }
    }

    /// Closes the open episode at the time the sender was back on schedule.
    fn close_open(&mut self) {
        if let Some(Open {
            mut episode,
            back_at_ns,
        }) = self.open.take()
        {
            episode.lasted_ns = back_at_ns
                .unwrap_or(episode.start_ns)
                .saturating_sub(episode.start_ns);
            self.close(episode);
        }
    }

    fn close(&mut self, e: Episode) {
        self.episodes += 1;
        self.behind_ns += e.lasted_ns;
        self.worst.push(e);
        if self.worst.len() > EPISODES_KEPT {
            let least = (0..self.worst.len())
                .min_by_key(|&i| (self.worst[i].max_lag_ns, std::cmp::Reverse(i)))
                .unwrap_or(0);
            self.worst.remove(least);
        }
    }

    /// Records a block of `bytes` as sent at `now`.
    pub fn sent(&mut self, now_ns: u64, bytes: u64) {
        let bits = bytes as u128 * 8;
        self.bits += bits;
        self.tat_ns = self.tat_ns.max(now_ns) + self.at_catch_up_rate(bits);
    }

    pub fn rate_bps(&self) -> u64 {
        self.cfg.rate_bps
    }

    /// What happened up to `now` (an episode still open counts up to `now`).
    pub fn report(&self, now_ns: u64) -> PacingReport {
        let mut p = self.clone();
        let lag = now_ns.saturating_sub(p.scheduled_ns()).min(p.cfg.max_debt_ns);
        p.observe(now_ns, lag);
        let short = lag > p.cfg.tolerance_ns;
        let short_since_ns = p.open.filter(|_| short).map(|o| o.episode.start_ns);
        if let Some(open) = p.open.as_mut() {
            let t = now_ns.saturating_sub(p.start_ns);
            open.back_at_ns = Some(if short { t } else { open.back_at_ns.unwrap_or(t) });
        }
        p.close_open();
        let bytes = |ns: u64| (ns as u128 * p.cfg.rate_bps as u128 / NS / 8) as u64;
        PacingReport {
            rate_bps: p.cfg.rate_bps,
            catch_up_pct: p.cfg.catch_up_pct,
            tolerance_ns: p.cfg.tolerance_ns,
            episodes: p.episodes,
            behind_ns: p.behind_ns,
            max_lag_ns: p.max_lag_ns,
            max_lag_bytes: bytes(p.max_lag_ns),
            forgiven_bytes: (p.forgiven_bits / 8) as u64,
            short_at_end_bytes: if short { bytes(lag) } else { 0 },
            short_since_ns,
            worst: p.worst,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A sender that wakes exactly when the pacer says, except where `stall` holds the
    /// clock: (at, length) pairs in ns. Returns the departure times of `len`-byte blocks
    /// up to `until`, and the pacer.
    fn simulate(cfg: PacerConfig, len: u64, until: u64, stalls: &[(u64, u64)]) -> (Vec<u64>, Pacer) {
        let mut p = Pacer::new(cfg, 0);
        let mut out = vec![];
        let mut now = 0;
        let mut stalls = stalls.to_vec();
        while now < until {
            if let Some(&(at, len)) = stalls.first() {
                if now >= at {
                    now = at + len;
                    stalls.remove(0);
                }
            }
            if p.ready(now) {
                out.push(now);
                p.sent(now, len);
            } else {
                now = p.due_ns().max(now + 1);
            }
        }
        (out, p)
    }

    fn bytes_between(departures: &[u64], len: u64, from: u64, to: u64) -> u64 {
        departures.iter().filter(|&&t| t >= from && t < to).count() as u64 * len
    }

    #[test]
    fn spacing_is_exact_for_1500_bytes_at_10_mbit() {
        let (d, p) = simulate(PacerConfig::new(10_000_000), 1500, 1200 * MS, &[]);
        assert_eq!(d.len(), 1000);
        for w in d.windows(2) {
            assert_eq!(w[1] - w[0], 1_200_000);
        }
        let r = p.report(1200 * MS);
        assert_eq!((r.episodes, r.behind_ns, r.short_at_end_bytes), (0, 0, 0));
    }

    #[test]
    fn a_150ms_stall_is_repaid_at_twice_the_rate_and_every_second_keeps_its_rate() {
        for rate in [10_000_000, 50_000_000, 100_000_000, 1_000_000_000] {
            let len = 1470;
            let (d, p) = simulate(PacerConfig::new(rate), len, 4000 * MS, &[(1000 * MS, 150 * MS)]);
            let want = rate / 8;
            for s in 0..4 {
                let got = bytes_between(&d, len, s * 1000 * MS, (s + 1) * 1000 * MS);
                let off = (got as i64 - want as i64).abs();
                assert!(
                    off <= 2 * len as i64,
                    "{rate} bit/s, second {s}: {got} bytes of {want}"
                );
            }
            // Nothing leaves during the stall; afterwards, no 50 ms carries more than 2R
            // over it plus the window's worth at 2R (what may leave at once).
            assert_eq!(bytes_between(&d, len, 1000 * MS + 1, 1150 * MS), 0);
            let fastest = (0..80)
                .map(|i| bytes_between(&d, len, i * 50 * MS, (i + 1) * 50 * MS))
                .max()
                .unwrap();
            let cap = 2 * want / 20 + 2 * want / 100 + 2 * len;
            assert!(fastest <= cap, "{rate}: {fastest} bytes in 50 ms, cap {cap}");
            assert!(
                fastest >= cap * 9 / 10,
                "{rate}: catching up at {fastest} in 50 ms"
            );
            let r = p.report(4000 * MS);
            assert_eq!(r.episodes, 1, "{rate}: {r:?}");
            assert!(r.max_lag_ns >= 148 * MS && r.max_lag_ns <= 150 * MS, "{r:?}");
            // Behind from 1 ms into the stall until the debt is repaid: the window's worth
            // at 2R (20 ms of schedule) at once, the other ~129 ms at 2R.
            assert!(
                (r.behind_ns as i64 - 278 * MS as i64).abs() < 4 * MS as i64,
                "{rate}: {r:?}"
            );
            assert!((1001 * MS..1003 * MS).contains(&r.worst[0].start_ns), "{r:?}");
            assert_eq!((r.forgiven_bytes, r.short_at_end_bytes), (0, 0));
            assert!((r.max_lag_bytes as i64 - (want * 15 / 100) as i64).abs() <= len as i64 * 2);
        }
    }

    #[test]
    fn wake_up_latency_within_the_tolerance_costs_nothing() {
        // A sender that always wakes 300 µs late keeps the exact rate and is never behind.
        let cfg = PacerConfig::new(100_000_000);
        let mut p = Pacer::new(cfg, 0);
        let (mut now, mut sent) = (0u64, 0u64);
        while now < 2000 * MS {
            while p.ready(now) {
                p.sent(now, 1470);
                sent += 1470;
            }
            now = p.due_ns() + 300_000;
        }
        let want = 100_000_000 / 8 * 2;
        assert!((sent as f64 / want as f64 - 1.0).abs() < 0.001, "{sent}");
        assert_eq!(p.report(now).episodes, 0);
    }

    #[test]
    fn a_sender_woken_4ms_late_every_time_still_catches_up() {
        // A busy host: every wake-up comes 4 ms after it was asked for. A 150 ms stall
        // at 1 s is still repaid, well before the end.
        let mut p = Pacer::new(PacerConfig::new(100_000_000), 0);
        let (mut now, mut sent) = (0u64, 0u64);
        while now < 3000 * MS {
            while p.ready(now) {
                p.sent(now, 1470);
                sent += 1470;
            }
            now = p.due_ns() + 4 * MS;
            if (1000 * MS..1150 * MS).contains(&now) {
                now = 1150 * MS;
            }
        }
        let want = 100_000_000 / 8 * 3;
        assert!(
            (sent as f64 / want as f64 - 1.0).abs() < 0.005,
            "{sent} of {want}"
        );
        // Every wake-up is 4 ms behind, so the sender never gets back on schedule for
        // long: one episode, honestly, at most the stall behind; short only by a wake-up.
        let r = p.report(now);
        assert_eq!(r.episodes, 1, "{r:?}");
        assert!(r.max_lag_ns > 150 * MS && r.max_lag_ns < 160 * MS, "{r:?}");
        assert!(r.short_at_end_bytes <= 4 * MS * 100 / 8 / 1000, "{r:?}");
    }

    #[test]
    fn a_stall_at_the_end_is_reported_as_short() {
        let (_, p) = simulate(
            PacerConfig::new(8_000_000),
            1000,
            4000 * MS,
            &[(3950 * MS, 100 * MS)],
        );
        // The clock ran to 4050 ms; the report asked at 4000 sees the sender 50 ms behind.
        let r = p.report(3_999 * MS + 999_999);
        assert!(r.short_at_end_bytes > 0);
        let (_, p) = simulate(
            PacerConfig::new(8_000_000),
            1000,
            3990 * MS,
            &[(3900 * MS, 100 * MS)],
        );
        let r = p.report(4000 * MS);
        assert!((r.short_at_end_bytes as i64 - 100_000).abs() <= 2000, "{r:?}");
        assert_eq!(r.short_since_ns, Some(3901 * MS));
        assert_eq!(r.episodes, 1);
    }

    #[test]
    fn a_tolerance_past_half_the_debt_limit_is_clamped() {
        // A peer's --pacing-timer of 10 s must not hide every stall, nor widen the
        // catch-up window (the 2x limit still holds over 50 ms).
        let cfg = PacerConfig {
            tolerance_ns: 10_000 * MS,
            ..PacerConfig::new(8_000_000)
        };
        let (d, p) = simulate(cfg, 1000, 3000 * MS, &[(1000 * MS, 700 * MS)]);
        let r = p.report(3000 * MS);
        assert_eq!(r.tolerance_ns, 500 * MS);
        assert_eq!(r.episodes, 1, "{r:?}");
        let fastest = (0..60)
            .map(|i| bytes_between(&d, 1000, i * 50 * MS, (i + 1) * 50 * MS))
            .max()
            .unwrap();
        assert!(fastest <= 2 * 50_000 + 2 * 10_000 + 2000, "{fastest}");
    }

    #[test]
    fn debt_beyond_the_limit_is_forgiven_and_counted() {
        let cfg = PacerConfig {
            max_debt_ns: 100 * MS,
            ..PacerConfig::new(8_000_000)
        };
        let (d, p) = simulate(cfg, 1000, 2000 * MS, &[(500 * MS, 400 * MS)]);
        let r = p.report(2000 * MS);
        // 400 ms stalled, 100 ms repaid: 300 ms at 1 MB/s forgiven.
        assert!((r.forgiven_bytes as i64 - 300_000).abs() <= 1000, "{r:?}");
        let total = d.len() as u64 * 1000;
        assert!((total as i64 - 1_700_000).abs() <= 2000, "{total}");
    }

    #[test]
    fn burst_groups_leave_back_to_back_and_are_paced_as_groups() {
        let cfg = PacerConfig {
            burst_bytes: 5000,
            ..PacerConfig::new(8_000_000)
        };
        let (d, _) = simulate(cfg, 1000, 20 * MS, &[]);
        // Groups of 5 blocks every 5 ms (1000 bytes at 1 MB/s = 1 ms each).
        assert_eq!(&d[..10], &[0, 0, 0, 0, 0, 5 * MS, 5 * MS, 5 * MS, 5 * MS, 5 * MS]);
        assert_eq!(d.len(), 20);
    }

    #[test]
    fn only_the_worst_episodes_are_kept() {
        let stalls: Vec<(u64, u64)> = (1..=20).map(|i| (i * 100 * MS, i * MS + 2 * MS)).collect();
        let (_, p) = simulate(PacerConfig::new(8_000_000), 1000, 2500 * MS, &stalls);
        let r = p.report(2500 * MS);
        assert_eq!(r.episodes, 20);
        assert_eq!(r.worst.len(), EPISODES_KEPT);
        assert!(r.worst.iter().all(|e| e.max_lag_ns >= 14 * MS), "{:?}", r.worst);
        assert!(r.worst.windows(2).all(|w| w[0].start_ns < w[1].start_ns));
    }
}
