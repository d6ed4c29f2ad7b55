//! Interarrival jitter, RFC 3550 section 6.4.1: J += (|D(i-1,i)| - J) / 16.
//!
//! Every datagram fed here moves the estimate by a sixteenth of its transit change, so
//! one forged send time hours off would move it by hours (twice: in and back out).
//! Callers feed only datagrams judged the sender's and new (`seq::Verdict::feeds_jitter`).

/// Jitter estimator over (send time, arrival time) pairs in nanoseconds. The two clocks
/// need not agree: only differences of transit times enter the estimate.
#[derive(Debug, Default, Clone)]
pub struct Jitter {
    prev_transit_ns: Option<i128>,
    jitter_ns: f64,
}

impl Jitter {
    pub fn on_packet(&mut self, sent_ns: u64, arrived_ns: u64) {
        let transit = arrived_ns as i128 - sent_ns as i128;
        if let Some(prev) = self.prev_transit_ns {
            let d = (transit - prev).unsigned_abs() as f64;
            self.jitter_ns += (d - self.jitter_ns) / 16.0;
        }
        self.prev_transit_ns = Some(transit);
    }

    pub fn seconds(&self) -> f64 {
        self.jitter_ns / 1e9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_transit_has_no_jitter_whatever_the_clock_offset() {
        let mut j = Jitter::default();
        for i in 0..100u64 {
            j.on_packet(i * 1_000_000, 5_000_000_000 + i * 1_000_000);
        }
        assert_eq!(j.seconds(), 0.0);
    }

    #[test]
    fn alternating_delay_converges_to_its_step() {
        // Transit alternates 1 ms / 3 ms: |D| = 2 ms every packet, so J -> 2 ms.
        let mut j = Jitter::default();
        for i in 0..1000u64 {
            let transit = if i % 2 == 0 { 1_000_000 } else { 3_000_000 };
            j.on_packet(i * 10_000_000, i * 10_000_000 + transit);
        }
        assert!((j.seconds() - 0.002).abs() < 1e-9, "{}", j.seconds());
    }

    #[test]
    fn one_forged_send_time_would_move_the_estimate_by_an_eighth_of_its_error() {
        // Why the receiver keeps suspicious datagrams out: a send time 2 h off, fed in,
        // moves J by 7200 s / 16 in and again on the next honest datagram's way back.
        let mut j = Jitter::default();
        j.on_packet(1_000, 2_000);
        j.on_packet(2_000 + 7_200_000_000_000, 3_000);
        j.on_packet(3_000, 4_000);
        assert!(j.seconds() > 800.0, "{}", j.seconds());
    }

    #[test]
    fn one_step_moves_the_estimate_by_a_sixteenth() {
        let mut j = Jitter::default();
        j.on_packet(0, 1_000);
        j.on_packet(10, 1_010 + 1_600);
        assert!((j.jitter_ns - 100.0).abs() < 1e-9);
    }
}
