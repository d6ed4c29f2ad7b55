//! Sequence accounting for a UDP receiver, robust to datagrams no honest sender sent.
//!
//! `lost` follows iperf3 (a gap counts as lost; a late arrival un-counts one), so that
//! results agree with an iperf3 peer. Unlike iperf3, a datagram already seen within the
//! last [`WINDOW`] sequence numbers is a duplicate, not "out of order".
//!
//! Anyone who can put datagrams on a test's 4-tuple can write any sequence number, and
//! iperf3 folds them all into its counts: one datagram numbered 2^32 - 1 makes four
//! billion datagrams "lost". Here a datagram is **suspicious**, and changes neither
//! `highest`, `received` nor `lost`, when its sequence number is one an honest sender
//! could not have written (the rules are deterministic: they read only the sequence
//! numbers and the arrival times given):
//!
//! - **zero**: iperf3 and netrig number datagrams from 1;
//! - **too far ahead**: more than [`WINDOW`] + [`MAX_RATE_PPS`] x (time since the
//!   datagram that set `highest` arrived) beyond `highest`. No sender numbers datagrams
//!   faster than that rate, and [`WINDOW`] absorbs queueing that bunches arrivals.
//!   A far-ahead datagram that is followed by its successor resynchronises the count
//!   (RFC 3550 appendix A.1's rule for a restarted source): the successor is accepted
//!   and the jump counts as lost, so a sender that really got that far ahead (a long
//!   outage while it kept sending) is never locked out;
//! - **too old to check**: [`WINDOW`] or more below `highest`. Whether it was seen is
//!   no longer known, so it cannot un-count a loss (a replay would make loss vanish);
//!   an honest datagram that late (65 ms of reordering at a million datagrams a second)
//!   stays counted as lost, the conservative side.
//!
//! With 32-bit counters (iperf3's default) a sequence number is taken as the 64-bit one
//! nearest `highest` with the same low 32 bits, as RTP extends its 16-bit numbers: an
//! honest sender's wrap from 2^32 - 1 to 0 continues the count, and a forged number near
//! 2^32 early in a test is far ahead, not behind.
//!
//! Invariant: `lost == highest - received`, so `lost <= highest` and loss stays within
//! 0-100 % of the datagrams the count covers, whatever arrives.
//!
//! Not caught: a forger who writes numbers just above `highest` (or consecutive far
//! ones) is indistinguishable from the sender here; the reports clamp loss to what the
//! sender says it sent.

/// Sequence numbers remembered below the highest (8 KiB of bits per stream), and the
/// slack of the far-ahead rule.
pub const WINDOW: u64 = 1 << 16;

/// Datagrams per second no sender exceeds on one stream: above 10 GbE's line rate in
/// minimum-size frames (14.88 Mpps). Only the far-ahead rule reads it.
pub const MAX_RATE_PPS: u64 = 20_000_000;

/// The width of the sequence counter on the wire (`--udp-counters-64bit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SeqWidth {
    #[default]
    Bits64,
    Bits32,
}

/// Why a datagram was judged not to be the sender's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suspicion {
    /// Too short to carry iperf3's header (judged before any sequence is read).
    Truncated,
    /// Sequence number 0.
    Zero,
    /// Further ahead of the highest than the sender could have got.
    FarAhead,
    /// [`WINDOW`] or more below the highest: too old to tell from a replay.
    TooOld,
}

/// What one datagram was to the count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Above the highest (any gap before it counted lost).
    Next,
    /// Below the highest, not seen before: un-counts one loss.
    Late,
    /// Seen before, within the window.
    Duplicate,
    Suspicious(Suspicion),
}

impl Verdict {
    /// Whether the datagram is the sender's, and so counts in bytes received.
    pub fn is_senders(self) -> bool {
        !matches!(self, Verdict::Suspicious(_))
    }

    /// Whether its send time enters the jitter estimate: a new datagram's (in order or
    /// late, as iperf3 does). A duplicate tells nothing new, and a suspicious datagram's
    /// send time is as forged as its sequence number.
    pub fn feeds_jitter(self) -> bool {
        matches!(self, Verdict::Next | Verdict::Late)
    }
}

#[derive(Debug, Clone)]
pub struct SeqTracker {
    /// Highest sequence number accepted (iperf3's `packet_count`); sequences start at 1.
    pub highest: u64,
    pub received: u64,
    pub lost: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    /// Datagrams judged not the sender's (see the module's rules).
    pub suspicious: u64,
    width: SeqWidth,
    /// When the datagram that set `highest` arrived (or the count started), ns.
    highest_at_ns: Option<u64>,
    /// The last far-ahead sequence number, which its successor would confirm.
    pending: Option<u64>,
    seen: Vec<u64>,
}

impl Default for SeqTracker {
    fn default() -> Self {
        SeqTracker::new(SeqWidth::Bits64, None)
    }
}

impl SeqTracker {
    /// A count of `width` sequence numbers that started at `start_ns` (on the clock of
    /// the arrival times to come); without it the first datagram sets the time.
    pub fn new(width: SeqWidth, start_ns: Option<u64>) -> SeqTracker {
        SeqTracker {
            highest: 0,
            received: 0,
            lost: 0,
            out_of_order: 0,
            duplicates: 0,
            suspicious: 0,
            width,
            highest_at_ns: start_ns,
            pending: None,
            seen: vec![0; (WINDOW / 64) as usize],
        }
    }

    fn bit(&self, seq: u64) -> (usize, u64) {
        let slot = (seq % WINDOW) as usize;
        (slot / 64, 1u64 << (slot % 64))
    }

    fn mark(&mut self, seq: u64) {
        let (w, m) = self.bit(seq);
        self.seen[w] |= m;
    }

    fn clear(&mut self, seq: u64) {
        let (w, m) = self.bit(seq);
        self.seen[w] &= !m;
    }

    fn is_marked(&self, seq: u64) -> bool {
        let (w, m) = self.bit(seq);
        self.seen[w] & m != 0
    }

    /// The wire's sequence number as a 64-bit one (32-bit counters: the nearest to
    /// `highest` with the same low 32 bits).
    pub fn extend(&self, wire: u64) -> u64 {
        match self.width {
            SeqWidth::Bits64 => wire,
            SeqWidth::Bits32 => {
                const SPAN: u64 = 1 << 32;
                let cand = (self.highest & !(SPAN - 1)) | (wire & (SPAN - 1));
                if cand > self.highest && cand - self.highest > SPAN / 2 && cand >= SPAN {
                    cand - SPAN
                } else if cand < self.highest && self.highest - cand > SPAN / 2 {
                    cand.saturating_add(SPAN)
                } else {
                    cand
                }
            }
        }
    }

    /// How far beyond `highest` a datagram arriving at `arrived_ns` may be.
    fn max_ahead(&self, arrived_ns: u64) -> u64 {
        let since = self
            .highest_at_ns
            .map(|t| arrived_ns.saturating_sub(t))
            .unwrap_or(0);
        let by_rate = since as u128 * MAX_RATE_PPS as u128 / 1_000_000_000;
        WINDOW.saturating_add(by_rate.min(u64::MAX as u128) as u64)
    }

    /// Counts a datagram that was too short to carry a sequence number.
    pub fn on_truncated(&mut self) -> Verdict {
        self.suspicious += 1;
        Verdict::Suspicious(Suspicion::Truncated)
    }

    /// Counts one datagram carrying `wire_seq`, which arrived at `arrived_ns`.
    pub fn on_packet(&mut self, wire_seq: u64, arrived_ns: u64) -> Verdict {
        let seq = self.extend(wire_seq);
        if self.highest_at_ns.is_none() {
            self.highest_at_ns = Some(arrived_ns);
        }
        let verdict = self.judge(seq, arrived_ns);
        if let Verdict::Suspicious(s) = verdict {
            self.suspicious += 1;
            self.pending = (s == Suspicion::FarAhead).then_some(seq);
            return verdict;
        }
        self.pending = None;
        match verdict {
            Verdict::Next => {
                let gap = seq - self.highest - 1;
                self.lost += gap;
                // Forget the window slots that the new sequences reuse.
                if seq - self.highest >= WINDOW {
                    self.seen.fill(0);
                } else {
                    for s in self.highest + 1..seq {
                        self.clear(s);
                    }
                }
                self.highest = seq;
                self.highest_at_ns = Some(arrived_ns);
                self.mark(seq);
                self.received += 1;
            }
            Verdict::Duplicate => self.duplicates += 1,
            _ => {
                // Late, within the window and not seen: it was counted lost.
                self.received += 1;
                self.out_of_order += 1;
                self.lost = self.lost.saturating_sub(1);
                self.mark(seq);
            }
        }
        verdict
    }

    fn judge(&self, seq: u64, arrived_ns: u64) -> Verdict {
        if seq == 0 {
            return Verdict::Suspicious(Suspicion::Zero);
        }
        if seq > self.highest {
            let confirms = self.pending.is_some_and(|p| p.checked_add(1) == Some(seq));
            if seq - self.highest > self.max_ahead(arrived_ns) && !confirms {
                return Verdict::Suspicious(Suspicion::FarAhead);
            }
            Verdict::Next
        } else if self.highest - seq >= WINDOW {
            Verdict::Suspicious(Suspicion::TooOld)
        } else if self.is_marked(seq) {
            Verdict::Duplicate
        } else {
            Verdict::Late
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Datagrams 1 µs apart, as a 1 Mpps sender's would arrive.
    fn run_with(width: SeqWidth, seqs: &[u64]) -> SeqTracker {
        let mut t = SeqTracker::new(width, Some(0));
        for (i, &s) in seqs.iter().enumerate() {
            t.on_packet(s, i as u64 * 1_000);
        }
        t
    }

    fn run(seqs: &[u64]) -> SeqTracker {
        run_with(SeqWidth::Bits64, seqs)
    }

    fn loss_percent(t: &SeqTracker) -> f64 {
        100.0 * t.lost as f64 / t.highest.max(1) as f64
    }

    #[test]
    fn in_order_has_nothing_to_report() {
        let t = run(&(1..=10_000).collect::<Vec<_>>());
        assert_eq!(
            (
                t.highest,
                t.received,
                t.lost,
                t.out_of_order,
                t.duplicates,
                t.suspicious
            ),
            (10_000, 10_000, 0, 0, 0, 0)
        );
    }

    #[test]
    fn gaps_are_lost_and_late_arrivals_are_reordered() {
        let t = run(&[1, 2, 5, 6]);
        assert_eq!(t.lost, 2);
        let t = run(&[1, 2, 5, 3, 6]);
        assert_eq!((t.lost, t.out_of_order, t.received), (1, 1, 5));
    }

    #[test]
    fn duplicates_are_not_reorderings() {
        let t = run(&[1, 2, 3, 3, 2, 4]);
        assert_eq!((t.duplicates, t.out_of_order, t.lost, t.received), (2, 0, 0, 4));
    }

    #[test]
    fn window_reuse_does_not_fake_duplicates() {
        let mut seqs: Vec<u64> = (1..=3 * WINDOW).collect();
        seqs.push(2 * WINDOW + 10); // a real duplicate within the window
        let t = run(&seqs);
        assert_eq!((t.duplicates, t.lost), (1, 0));
        // A big gap, then a late datagram from before it: out of order, not duplicate.
        let t = run(&[1, 2, 10_000, 3]);
        assert_eq!((t.duplicates, t.out_of_order, t.lost), (0, 1, 9_996));
    }

    #[test]
    fn forged_far_ahead_numbers_are_suspicious_and_loss_stays_exact() {
        // Honest 1..=1000 with every tenth lost, forged numbers mixed in.
        let mut seqs = vec![];
        for s in 1..=1000u64 {
            if s % 10 != 0 {
                seqs.push(s);
            }
            if s % 100 == 50 {
                seqs.extend([u64::MAX, 1 << 63, 0xFFFF_FFFF, s + 5_000_000]);
            }
        }
        let t = run(&seqs);
        assert_eq!((t.highest, t.lost, t.received), (999, 99, 900)); // 1000 is lost: 999 is the last
        assert_eq!(t.suspicious, 40);
        assert!((0.0..=100.0).contains(&loss_percent(&t)));
    }

    #[test]
    fn zero_duplicates_and_replays_of_old_numbers_change_no_loss() {
        let mut seqs: Vec<u64> = (1..=2 * WINDOW).filter(|s| s % 4 != 0).collect();
        let honest = run(&seqs);
        // Zero, and numbers already seen within the window.
        seqs.extend([0, 0, 2 * WINDOW - 1, 2 * WINDOW - 2, 2 * WINDOW - 3]);
        // Replays of long-lost numbers, too old to tell from late ones.
        seqs.extend((4..WINDOW).step_by(4));
        let t = run(&seqs);
        assert_eq!(
            (t.lost, t.received, t.out_of_order),
            (honest.lost, honest.received, 0)
        );
        assert_eq!(t.lost, WINDOW / 2 - 1); // 2 * WINDOW is lost: not yet counted
        assert_eq!(t.suspicious, 2 + WINDOW / 4 - 1);
        assert_eq!(t.duplicates, 3);
    }

    #[test]
    fn thirty_two_bit_counters_wrap_on() {
        let start = (1u64 << 32) - 3;
        let wire: Vec<u64> = (start..start + 6).map(|s| s & 0xFFFF_FFFF).collect();
        let mut t = SeqTracker::new(SeqWidth::Bits32, Some(0));
        t.highest = start - 1; // as if 2^32 - 4 datagrams had come in order
        t.received = start - 1;
        for (i, &w) in wire.iter().enumerate() {
            assert_eq!(t.on_packet(w, i as u64 * 1000), Verdict::Next, "{w}");
        }
        assert_eq!((t.highest, t.lost, t.suspicious), (start + 5, 0, 0));
        // A late one from before the wrap is late, not four billion ahead.
        let mut t2 = t.clone();
        t2.on_packet(0, 10_000);
        assert_eq!((t2.lost, t2.suspicious, t2.duplicates), (0, 0, 1)); // 2^32 was seen
        assert_eq!(t.on_packet(0xFFFF_FFFD, 10_000), Verdict::Duplicate);
    }

    #[test]
    fn thirty_two_bit_numbers_near_the_wrap_early_on_are_far_ahead() {
        let mut seqs: Vec<u64> = (1..=100).collect();
        seqs.extend([0xFFFF_FFFF, 0xFFFF_FFF0, 0x8000_0000, 0]);
        seqs.extend(101..=200);
        let t = run_with(SeqWidth::Bits32, &seqs);
        assert_eq!((t.highest, t.lost, t.received, t.suspicious), (200, 0, 200, 4));
    }

    #[test]
    fn a_sender_far_ahead_after_a_long_outage_is_followed() {
        let mut t = SeqTracker::new(SeqWidth::Bits64, Some(0));
        for s in 1..=100u64 {
            t.on_packet(s, s * 1_000);
        }
        // A 1 s outage at 1 Mpps: the jump fits the rate rule.
        assert_eq!(t.on_packet(1_000_100, 1_000_100_000), Verdict::Next);
        assert_eq!(t.lost, 999_999);
        // A jump too big for the time (queues bunched the arrivals): its successor
        // confirms it, so the count follows rather than judging the sender forever.
        assert_eq!(
            t.on_packet(9_000_000, 1_000_101_000),
            Verdict::Suspicious(Suspicion::FarAhead)
        );
        assert_eq!(t.on_packet(9_000_001, 1_000_102_000), Verdict::Next);
        assert_eq!(t.on_packet(9_000_002, 1_000_103_000), Verdict::Next);
        assert_eq!(t.highest, 9_000_002);
        assert_eq!(t.lost, t.highest - t.received);
        assert!((0.0..=100.0).contains(&loss_percent(&t)));
    }

    #[test]
    fn loss_is_bounded_whatever_arrives() {
        // A deterministic pseudo-random mix of wild and honest numbers.
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for width in [SeqWidth::Bits32, SeqWidth::Bits64] {
            let mut t = SeqTracker::new(width, Some(0));
            for i in 0..200_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let seq = match x % 4 {
                    0 => x,
                    1 => x % 1000,
                    _ => i,
                };
                t.on_packet(seq, i * 500);
                assert_eq!(t.lost, t.highest - t.received);
            }
            assert!((0.0..=100.0).contains(&loss_percent(&t)), "{t:?}");
            assert!(t.suspicious > 0);
        }
    }
}
