//! Latency records shared by the probe and request/response modes: samples land in a
//! log as they complete; the reporter summarises any time window of it.

use std::sync::Mutex;

use netrig_core::stats::Summary;

use crate::extras::ProbeWindow;

/// One completed (or lost) exchange.
#[derive(Debug, Clone, Copy)]
pub struct Record {
    pub seq: u64,
    /// Seconds since the test started, at the request.
    pub t: f64,
    /// The request's send time as it was written in it (CLOCK_REALTIME ns); a reply
    /// that names another is not an answer to it. 0 where no datagram carries it.
    pub sent_ns: u64,
    /// Milliseconds; None when no answer came.
    pub rtt_ms: Option<f64>,
    pub send_ms: Option<f64>,
    pub recv_ms: Option<f64>,
}

#[derive(Default)]
pub struct Log {
    pub records: Mutex<Vec<Record>>,
}

/// A window's figures.
#[derive(Debug, Clone, Default)]
pub struct Window {
    pub start: f64,
    pub end: f64,
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub loss_percent: f64,
    pub rtt_ms: Summary,
    pub send_delay_ms: Summary,
    pub receive_delay_ms: Summary,
}

impl Window {
    pub fn of(records: &[Record], start: f64, end: f64) -> Window {
        let sel: Vec<&Record> = records.iter().filter(|r| r.t >= start && r.t < end).collect();
        let got: Vec<&&Record> = sel.iter().filter(|r| r.rtt_ms.is_some()).collect();
        let pick = |f: fn(&Record) -> Option<f64>| -> Vec<f64> { got.iter().filter_map(|r| f(r)).collect() };
        let sent = sel.len() as u64;
        let received = got.len() as u64;
        Window {
            start,
            end,
            sent,
            received,
            lost: sent - received,
            loss_percent: if sent > 0 {
                100.0 * (sent - received) as f64 / sent as f64
            } else {
                0.0
            },
            rtt_ms: Summary::of(&pick(|r| r.rtt_ms)),
            send_delay_ms: Summary::of(&pick(|r| r.send_ms)),
            receive_delay_ms: Summary::of(&pick(|r| r.recv_ms)),
        }
    }

    /// The window as netrig-perf's JSON has it (`intervals[].probe`).
    pub fn extras(&self) -> ProbeWindow {
        ProbeWindow {
            start: self.start,
            end: self.end,
            sent: self.sent,
            received: self.received,
            lost: self.lost,
            loss_percent: self.loss_percent,
            rtt_ms: (&self.rtt_ms).into(),
            send_delay_ms: (&self.send_delay_ms).into(),
            receive_delay_ms: (&self.receive_delay_ms).into(),
        }
    }

    /// "[  5]   0.00-1.00   sec   100 sent   100 rcvd  0 lost (0%)  rtt ms p50 0.051 p90 ... max"
    pub fn line(&self, label: &str) -> String {
        let r = &self.rtt_ms;
        format!(
            "{label} {:6.2}-{:<6.2} sec  {:6} sent {:6} rcvd {:5} lost ({:.1}%)  rtt ms: p50 {:.3} p90 {:.3} p99 {:.3} max {:.3}  one-way ms: up {:.3} down {:.3}",
            self.start,
            self.end,
            self.sent,
            self.received,
            self.lost,
            self.loss_percent,
            r.p50,
            r.p90,
            r.p99,
            r.max,
            self.send_delay_ms.p50,
            self.receive_delay_ms.p50
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(seq: u64, t: f64, rtt: Option<f64>) -> Record {
        Record {
            seq,
            t,
            sent_ns: 0,
            rtt_ms: rtt,
            send_ms: rtt.map(|x| x / 2.0),
            recv_ms: rtt.map(|x| x / 2.0),
        }
    }

    #[test]
    fn windows_count_losses_and_summarise_what_came_back() {
        let rs: Vec<Record> = (0..100)
            .map(|i| {
                rec(
                    i,
                    i as f64 * 0.01,
                    (i % 10 != 0).then_some(1.0 + i as f64 / 100.0),
                )
            })
            .collect();
        let w = Window::of(&rs, 0.0, 1.0);
        assert_eq!((w.sent, w.received, w.lost), (100, 90, 10));
        assert!((w.loss_percent - 10.0).abs() < 1e-9);
        assert_eq!(w.rtt_ms.count, 90);
        assert!(w.rtt_ms.max < 2.0 && w.rtt_ms.min > 1.0);
        let half = Window::of(&rs, 0.5, 1.0);
        assert_eq!(half.sent, 50);
    }
}
