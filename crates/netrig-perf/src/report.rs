//! Turning counters into measurements: per-interval samples and end-of-test totals for
//! every stream, with the TCP_INFO and UDP receiver figures iperf3 reports.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use netrig_core::units::{format_bytes, format_rate};

use crate::engine::Stream;
use crate::extras::Pacing;
use crate::sys::{self, TcpInfo};

#[derive(Debug, Clone, Copy, Default)]
struct Snap {
    bytes: u64,
    blocks: u64,
    highest: u64,
    lost: u64,
    out_of_order: u64,
    duplicates: u64,
    suspicious: u64,
    retrans: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TcpSample {
    pub retransmits: u64,
    pub snd_cwnd: u64,
    pub snd_wnd: u64,
    pub rtt: u32,
    pub rttvar: u32,
    pub pmtu: u32,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UdpRxSample {
    pub jitter_ms: f64,
    pub lost: u64,
    /// Datagrams expected in the span (iperf3's "packets" on the receiving side).
    pub packets: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    /// Datagrams judged not the sender's (netrig only; see `netrig_core::stats::seq`).
    pub suspicious: u64,
}

impl UdpRxSample {
    pub fn lost_percent(&self) -> f64 {
        if self.packets == 0 {
            0.0
        } else {
            100.0 * self.lost as f64 / self.packets as f64
        }
    }
}

/// One stream over one interval (or, in totals, over the whole test).
#[derive(Debug, Clone)]
pub struct Sample {
    pub stream: Arc<Stream>,
    pub start: f64,
    pub end: f64,
    pub bytes: u64,
    /// Datagrams sent (UDP sender).
    pub packets: u64,
    pub omitted: bool,
    pub tcp: Option<TcpSample>,
    pub udp_rx: Option<UdpRxSample>,
}

impl Sample {
    pub fn seconds(&self) -> f64 {
        self.end - self.start
    }

    pub fn bits_per_second(&self) -> f64 {
        rate(self.bytes, self.seconds())
    }
}

pub fn rate(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

/// Extremes of TCP_INFO over the intervals, for the end summary (as iperf3 keeps them).
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpExtremes {
    pub max_snd_cwnd: u64,
    pub max_snd_wnd: u64,
    pub max_rtt: u32,
    pub min_rtt: u32,
    rtt_sum: u64,
    rtt_n: u64,
    /// The mean a peer reported (its samples are not here).
    mean_override: Option<u32>,
}

impl TcpExtremes {
    fn add(&mut self, s: &TcpSample) {
        self.max_snd_cwnd = self.max_snd_cwnd.max(s.snd_cwnd);
        self.max_snd_wnd = self.max_snd_wnd.max(s.snd_wnd);
        if s.rtt > 0 {
            self.max_rtt = self.max_rtt.max(s.rtt);
            self.min_rtt = if self.rtt_n == 0 {
                s.rtt
            } else {
                self.min_rtt.min(s.rtt)
            };
            self.rtt_sum += s.rtt as u64;
            self.rtt_n += 1;
        }
    }

    pub fn mean_rtt(&self) -> u32 {
        self.mean_override
            .unwrap_or_else(|| self.rtt_sum.checked_div(self.rtt_n).unwrap_or(0) as u32)
    }

    /// Extremes a peer reported for its sending stream (netrig extras of its results);
    /// None when the peer did not send them (iperf3 does not).
    pub fn from_peer(extra: &serde_json::Value) -> Option<TcpExtremes> {
        let get = |k: &str| extra.get(k).and_then(serde_json::Value::as_u64);
        Some(TcpExtremes {
            max_snd_cwnd: get("max_snd_cwnd")?,
            max_snd_wnd: get("max_snd_wnd")?,
            max_rtt: get("max_rtt")?.min(u32::MAX as u64) as u32,
            min_rtt: get("min_rtt")?.min(u32::MAX as u64) as u32,
            rtt_sum: 0,
            rtt_n: 0,
            mean_override: Some(get("mean_rtt")?.min(u32::MAX as u64) as u32),
        })
    }
}

/// Samples a test's streams at interval boundaries and at the end.
pub struct Sampler {
    pub streams: Vec<Arc<Stream>>,
    udp: bool,
    start_ns: u64,
    last_t: f64,
    last: Vec<Snap>,
    base: Vec<Snap>,
    omitting: bool,
    pub extremes: Vec<TcpExtremes>,
}

fn snap(s: &Stream, udp: bool, tcp: Option<&TcpInfo>) -> Snap {
    let mut out = Snap {
        bytes: s.bytes.load(Relaxed),
        blocks: s.blocks.load(Relaxed),
        retrans: tcp.map(|t| t.total_retrans as u64).unwrap_or(0),
        ..Default::default()
    };
    if udp && !s.sender {
        let rx = s.udp_rx.lock().unwrap();
        out.highest = rx.seq.highest;
        out.lost = rx.seq.lost;
        out.out_of_order = rx.seq.out_of_order;
        out.duplicates = rx.seq.duplicates;
        out.suspicious = rx.seq.suspicious;
    }
    out
}

impl Sampler {
    pub fn new(streams: Vec<Arc<Stream>>, udp: bool, start_ns: u64, omitting: bool) -> Sampler {
        let n = streams.len();
        Sampler {
            streams,
            udp,
            start_ns,
            last_t: 0.0,
            last: vec![Snap::default(); n],
            base: vec![Snap::default(); n],
            omitting,
            extremes: vec![TcpExtremes::default(); n],
        }
    }

    pub fn elapsed(&self, now_ns: u64) -> f64 {
        now_ns.saturating_sub(self.start_ns) as f64 / 1e9
    }

    pub fn omitting(&self) -> bool {
        self.omitting
    }

    fn tcp_info(&self, s: &Stream) -> Option<TcpInfo> {
        if self.udp || !s.sender {
            return None;
        }
        TcpInfo::of(s.socket)
    }

    fn measure(
        &self,
        i: usize,
        from: &Snap,
        now: &Snap,
        info: Option<&TcpInfo>,
        start: f64,
        end: f64,
    ) -> Sample {
        let s = &self.streams[i];
        let tcp = info.map(|t| TcpSample {
            retransmits: now.retrans.saturating_sub(from.retrans),
            snd_cwnd: t.cwnd_bytes(),
            snd_wnd: t.snd_wnd as u64,
            rtt: t.rtt_us,
            rttvar: t.rttvar_us,
            pmtu: t.pmtu,
        });
        let udp_rx = (self.udp && !s.sender).then(|| UdpRxSample {
            jitter_ms: s.udp_rx.lock().unwrap().jitter.seconds() * 1000.0,
            lost: now.lost.saturating_sub(from.lost),
            packets: now.highest.saturating_sub(from.highest),
            out_of_order: now.out_of_order.saturating_sub(from.out_of_order),
            duplicates: now.duplicates.saturating_sub(from.duplicates),
            suspicious: now.suspicious.saturating_sub(from.suspicious),
        });
        Sample {
            stream: s.clone(),
            start,
            end,
            bytes: now.bytes.saturating_sub(from.bytes),
            packets: if self.udp && s.sender {
                now.blocks.saturating_sub(from.blocks)
            } else {
                0
            },
            omitted: self.omitting,
            tcp,
            udp_rx,
        }
    }

    /// The interval from the last sample to `now_ns`.
    pub fn interval(&mut self, now_ns: u64) -> Vec<Sample> {
        let end = self.elapsed(now_ns);
        let mut out = Vec::with_capacity(self.streams.len());
        for i in 0..self.streams.len() {
            let info = self.tcp_info(&self.streams[i]);
            let now = snap(&self.streams[i], self.udp, info.as_ref());
            let sample = self.measure(i, &self.last[i], &now, info.as_ref(), self.last_t, end);
            if let Some(t) = &sample.tcp {
                if !self.omitting {
                    self.extremes[i].add(t);
                }
            }
            self.last[i] = now;
            out.push(sample);
        }
        self.last_t = end;
        out
    }

    /// Ends the omitted warm-up: counting and the clock restart from here.
    pub fn end_omit(&mut self, now_ns: u64) {
        for i in 0..self.streams.len() {
            let info = self.tcp_info(&self.streams[i]);
            self.base[i] = snap(&self.streams[i], self.udp, info.as_ref());
        }
        self.last = self.base.clone();
        self.start_ns = now_ns;
        self.last_t = 0.0;
        self.omitting = false;
    }

    /// Whole-test figures since the start (or the end of the omitted warm-up).
    pub fn totals(&self, now_ns: u64) -> Vec<Sample> {
        let end = self.elapsed(now_ns);
        (0..self.streams.len())
            .map(|i| {
                let info = self.tcp_info(&self.streams[i]);
                let now = snap(&self.streams[i], self.udp, info.as_ref());
                let mut s = self.measure(i, &self.base[i], &now, info.as_ref(), 0.0, end);
                s.omitted = false;
                s
            })
            .collect()
    }
}

/// Process CPU use between two points, in percent of one core, as iperf3 reports it.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuUsage {
    pub total: f64,
    pub user: f64,
    pub system: f64,
}

pub struct CpuMeter {
    wall_ns: u64,
    user: f64,
    system: f64,
}

impl CpuMeter {
    pub fn start() -> CpuMeter {
        let (user, system) = sys::cpu_seconds();
        CpuMeter {
            wall_ns: sys::monotonic_ns(),
            user,
            system,
        }
    }

    pub fn usage(&self) -> CpuUsage {
        let (u, s) = sys::cpu_seconds();
        let wall = (sys::monotonic_ns() - self.wall_ns) as f64 / 1e9;
        if wall <= 0.0 {
            return CpuUsage::default();
        }
        let user = 100.0 * (u - self.user) / wall;
        let system = 100.0 * (s - self.system) / wall;
        CpuUsage {
            total: user + system,
            user,
            system,
        }
    }
}

/// Width of a text report line after its "[  5] " stream label (80 columns in all).
const PACING_TEXT_WIDTH: usize = 74;

/// Lines for people when a sender fell behind its schedule (empty when it never did,
/// or only by a busy host's wake-up delay), each within `PACING_TEXT_WIDTH`.
pub fn pacing_lines(p: &Pacing) -> Vec<String> {
    let times = p.times_behind;
    // A lag within the catch-up window (10 ms) is a busy host's wake-up delay: the
    // JSON has it; people are told only of a stall that mattered.
    if times < 1 || p.max_behind_ms < 10.0 {
        return Vec::new();
    }
    let mut parts = vec![
        format!(
            "sender fell behind its {} schedule {} time{}, {:.2} s in all",
            format_rate(p.target_bps as f64),
            times,
            if times == 1 { "" } else { "s" },
            p.behind_seconds,
        ),
        format!(
            "at most {:.1} ms ({}) behind",
            p.max_behind_ms,
            format_bytes(p.max_behind_bytes as f64).trim()
        ),
    ];
    let short = p.short_at_end_bytes;
    parts.push(if short > 0 {
        format!("ended {} short", format_bytes(short as f64).trim())
    } else {
        "caught up".to_string()
    });
    let forgiven = p.forgiven_bytes;
    if forgiven > 0 {
        parts.push(format!("{} forgiven", format_bytes(forgiven as f64).trim()));
    }
    // Join the parts with "; ", starting a new line where the next would not fit.
    let mut lines: Vec<String> = Vec::new();
    for part in parts {
        match lines.last_mut() {
            Some(line) if line.len() + 2 + part.len() <= PACING_TEXT_WIDTH => {
                line.push_str("; ");
                line.push_str(&part);
            }
            _ => lines.push(part),
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peers_extremes_come_whole_or_not_at_all() {
        let v = serde_json::json!({"max_snd_cwnd": 1000, "max_snd_wnd": 2000, "max_rtt": 90,
                                   "min_rtt": 10, "mean_rtt": 40, "out_of_order": 0});
        let x = TcpExtremes::from_peer(&v).unwrap();
        assert_eq!(
            (x.max_snd_cwnd, x.max_snd_wnd, x.max_rtt, x.min_rtt, x.mean_rtt()),
            (1000, 2000, 90, 10, 40)
        );
        // An iperf3 peer (or a UDP stream) sends none: nothing is made up.
        assert!(TcpExtremes::from_peer(&serde_json::json!({"out_of_order": 0})).is_none());
        assert!(TcpExtremes::from_peer(&serde_json::json!({"max_snd_cwnd": 1})).is_none());
    }

    #[test]
    fn pacing_lines_fit_80_columns_and_stay_quiet_for_small_lags() {
        let p = Pacing {
            target_bps: 1_000_000_000,
            times_behind: 12,
            behind_seconds: 1.25,
            max_behind_ms: 1234.5,
            max_behind_bytes: 154_312_500,
            short_at_end_bytes: 36_700_160,
            forgiven_bytes: 120_000_000,
            ..Pacing::default()
        };
        let lines = pacing_lines(&p);
        let all = lines.join(" ");
        assert!(
            all.contains("12 times") && all.contains("at most 1234.5 ms"),
            "{all}"
        );
        assert!(all.contains("short") && all.contains("forgiven"), "{all}");
        assert!(lines.len() >= 2);
        for l in &lines {
            assert!(l.len() <= PACING_TEXT_WIDTH, "{} columns: {l}", l.len());
        }
        let quiet = Pacing {
            target_bps: 10_000_000,
            times_behind: 3,
            max_behind_ms: 4.0,
            ..Pacing::default()
        };
        assert!(pacing_lines(&quiet).is_empty());
        let caught = Pacing {
            target_bps: 10_000_000,
            times_behind: 1,
            behind_seconds: 0.2,
            max_behind_ms: 150.0,
            max_behind_bytes: 187_500,
            ..Pacing::default()
        };
        assert!(pacing_lines(&caught).join(" ").ends_with("caught up"));
    }
}
