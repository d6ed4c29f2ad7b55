//! A UDP test receiver's statistics, fed datagram by datagram: iperf3's header is
//! parsed here, the sequence number judged by [`SeqTracker`], and only datagrams judged
//! new and the sender's enter the jitter estimate. Deterministic: arrival times are
//! arguments; the caller owns the socket and the clock.

use crate::stats::seq::{SeqTracker, SeqWidth, Verdict};
use crate::stats::Jitter;
use crate::wire::iperf3::UdpHeader;

#[derive(Debug, Clone, Default)]
pub struct UdpReceiver {
    pub seq: SeqTracker,
    pub jitter: Jitter,
    counters_64bit: bool,
}

impl UdpReceiver {
    /// A receiver of iperf3 datagrams with 32- or 64-bit counters, counting from
    /// `start_ns` (on the arrival times' clock).
    pub fn new(counters_64bit: bool, start_ns: u64) -> UdpReceiver {
        let width = if counters_64bit {
            SeqWidth::Bits64
        } else {
            SeqWidth::Bits32
        };
        UdpReceiver {
            seq: SeqTracker::new(width, Some(start_ns)),
            jitter: Jitter::default(),
            counters_64bit,
        }
    }

    /// Counts one datagram that arrived at `arrived_ns`. A datagram too short for the
    /// header is suspicious: the sender always writes one (iperf3 does too).
    pub fn on_datagram(&mut self, d: &[u8], arrived_ns: u64) -> Verdict {
        let Ok(h) = UdpHeader::parse(d, self.counters_64bit) else {
            return self.seq.on_truncated();
        };
        let verdict = self.seq.on_packet(h.seq, arrived_ns);
        if verdict.feeds_jitter() {
            self.jitter.on_packet(h.sent_ns(), arrived_ns);
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::seq::Suspicion;

    const SEC: u64 = 1_000_000_000;

    fn datagram(seq: u64, sent_ns: u64, counters_64bit: bool) -> Vec<u8> {
        let mut b = vec![0u8; 100];
        UdpHeader {
            sec: (sent_ns / SEC) as u32,
            usec: ((sent_ns % SEC) / 1000) as u32,
            seq,
        }
        .emit(&mut b, counters_64bit);
        b
    }

    /// An honest stream, 1 ms apart with a constant 100 µs transit, every 7th lost,
    /// with forged datagrams (send times two hours off) between honest ones.
    fn run(counters_64bit: bool, forged: &[u64]) -> UdpReceiver {
        let t0 = 1_700_000_000 * SEC;
        let mut rx = UdpReceiver::new(counters_64bit, t0);
        for s in 1..=3000u64 {
            let sent = t0 + s * 1_000_000;
            if s % 7 != 0 {
                rx.on_datagram(&datagram(s, sent, counters_64bit), sent + 100_000);
            }
            if s % 10 == 0 {
                for (i, &f) in forged.iter().enumerate() {
                    let fake_sent = if i % 2 == 0 {
                        sent + 7200 * SEC
                    } else {
                        sent - 7200 * SEC
                    };
                    rx.on_datagram(&datagram(f, fake_sent, counters_64bit), sent + 200_000);
                }
            }
            if s % 10 == 0 && !forged.is_empty() {
                rx.on_datagram(&[0u8; 7], sent + 300_000);
            }
        }
        rx
    }

    #[test]
    fn forged_datagrams_are_counted_apart_and_leave_jitter_and_loss_alone() {
        for c64 in [false, true] {
            let honest = run(c64, &[]);
            assert_eq!((honest.seq.highest, honest.seq.lost), (3000, 428));
            assert_eq!((honest.jitter.seconds(), honest.seq.suspicious), (0.0, 0));
            let wild = [0xFFFF_FFFF, 0xFFFF_FFF0, 0x8000_0000, 50_000_000, 0, 1, 2, 3];
            let rx = run(c64, &wild);
            assert_eq!(
                (rx.seq.highest, rx.seq.lost, rx.seq.received),
                (honest.seq.highest, honest.seq.lost, honest.seq.received)
            );
            assert_eq!(rx.jitter.seconds(), 0.0, "forged send times entered the jitter");
            // 300 rounds: 5 wild-sequence ones and the short one are suspicious; the
            // first rounds' 1, 2, 3 are duplicates, later ones too old to check.
            assert!(rx.seq.suspicious >= 300 * 6, "{:?}", rx.seq);
            assert_eq!(rx.seq.suspicious + rx.seq.duplicates, 300 * 9);
        }
    }

    #[test]
    fn a_short_datagram_is_suspicious() {
        let mut rx = UdpReceiver::new(false, 0);
        assert_eq!(
            rx.on_datagram(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 5),
            Verdict::Suspicious(Suspicion::Truncated)
        );
        let mut rx = UdpReceiver::new(true, 0);
        assert_eq!(
            rx.on_datagram(&datagram(1, 0, false)[..12], 5),
            Verdict::Suspicious(Suspicion::Truncated)
        );
        assert_eq!((rx.seq.suspicious, rx.seq.highest), (1, 0));
    }
}
