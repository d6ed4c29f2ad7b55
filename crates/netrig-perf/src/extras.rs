//! netrig's extras to iperf3's JSON, typed: every object and key netrig-perf adds to
//! iperf3 3.12's `-J` document and `--json-stream` events (iperf3's own fields are
//! [`crate::output::json`]'s). Each type here is the one place its shape is written:
//! the emitters build these values and serialise them; the results exchange and the
//! snapshot tests (`output/extras_snapshots.rs`) read them back. netrig's Python reads
//! the same shapes (`python/netrig/exp/kinds/perfjson.py`); both are held to the
//! fixtures in `tests/fixtures/perf-json/`. A leaf of the crate: serde and
//! netrig_core only.
//!
//! Where they sit in a `-J` document:
//! - `netrig`: [`NetrigDoc`], always present: `schema` ([`SCHEMA`]) and the TCP_INFO
//!   samples (`tcp_info`, [`TcpInfoSample`]; also `tcp_info` events in a stream);
//! - `end.probe` ([`ProbeEnd`]) and `intervals[].probe` ([`ProbeWindow`]);
//! - `end.rr` ([`RrEnd`]) and `intervals[].rr` ([`RrWindow`]);
//! - a paced sender's `pacing` ([`Pacing`]): in `end.streams[].sender` (TCP) and
//!   `end.streams[].udp` (UDP);
//! - a UDP receiver's counts: `intervals[].streams[]` ([`UdpIntervalExtras`]:
//!   `out_of_order`, `duplicates`, `suspicious`) and `end.streams[].udp.suspicious`.
//!
//! Every document is a `serde_json::Value` before it is printed, so its keys come out
//! sorted whatever the field order here.

use netrig_core::pacing::PacingReport;
use netrig_core::stats::Summary;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The version of the shapes below, written as `netrig.schema`. Raise it when a key is
/// renamed or removed or changes type (a reader refuses a schema it does not know);
/// adding a key is not a change of schema.
pub const SCHEMA: u32 = 1;

/// The top-level `netrig` object of a `-J` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetrigDoc {
    pub schema: u32,
    /// `--tcp-info-interval`'s samples, in the order taken (absent without any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tcp_info: Vec<TcpInfoSample>,
}

impl Default for NetrigDoc {
    fn default() -> NetrigDoc {
        NetrigDoc {
            schema: SCHEMA,
            tcp_info: vec![],
        }
    }
}

/// Latency figures of a set of samples (netrig_core's [`Summary`]), in the unit its
/// key names (`rtt_ms`, `time_ms`, ...); all 0 without samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub count: usize,
    pub mean: f64,
    pub stddev: f64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl From<&Summary> for Stats {
    fn from(s: &Summary) -> Stats {
        Stats {
            count: s.count,
            mean: s.mean,
            stddev: s.stddev,
            min: s.min,
            p50: s.p50,
            p90: s.p90,
            p99: s.p99,
            max: s.max,
        }
    }
}

/// A paced sender's account of its schedule (`-b`): how often and how long it was
/// behind, how far at worst, and what it never sent. Times in the unit of their key;
/// `short_since` in seconds from the start (null when it ended on time).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Pacing {
    pub target_bps: u64,
    pub catch_up_limit_bps: u64,
    pub tolerance_ms: f64,
    pub times_behind: u64,
    pub behind_seconds: f64,
    pub max_behind_ms: f64,
    pub max_behind_bytes: u64,
    pub forgiven_bytes: u64,
    pub short_at_end_bytes: u64,
    pub short_since: Option<f64>,
    pub worst: Vec<PacingEpisode>,
}

/// One of the episodes furthest behind: when it began and how long it lasted (s).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PacingEpisode {
    pub start: f64,
    pub seconds: f64,
    pub max_behind_ms: f64,
}

impl From<&PacingReport> for Pacing {
    fn from(r: &PacingReport) -> Pacing {
        // Milliseconds to 2 decimals, seconds to 6 (µs).
        let ms = |ns: u64| (ns as f64 / 1e4).round() / 100.0;
        let s = |ns: u64| (ns as f64 / 1e3).round() / 1e6;
        let limit = r.rate_bps as u128 * r.catch_up_pct as u128 / 100;
        Pacing {
            target_bps: r.rate_bps,
            catch_up_limit_bps: u64::try_from(limit).unwrap_or(u64::MAX),
            tolerance_ms: ms(r.tolerance_ns),
            times_behind: r.episodes,
            behind_seconds: s(r.behind_ns),
            max_behind_ms: ms(r.max_lag_ns),
            max_behind_bytes: r.max_lag_bytes,
            forgiven_bytes: r.forgiven_bytes,
            short_at_end_bytes: r.short_at_end_bytes,
            short_since: r.short_since_ns.map(s),
            worst: r
                .worst
                .iter()
                .map(|e| PacingEpisode {
                    start: s(e.start_ns),
                    seconds: s(e.lasted_ns),
                    max_behind_ms: ms(e.max_lag_ns),
                })
                .collect(),
        }
    }
}

/// A UDP receiver's counts in each of its `intervals[].streams[]` entries: datagrams
/// reordered, duplicated, and judged not the sender's (left out of loss and jitter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpIntervalExtras {
    pub out_of_order: u64,
    pub duplicates: u64,
    pub suspicious: u64,
}

/// netrig's keys of an `end.streams[].udp` object: the receiver's `suspicious` count
/// (absent when the receiver is an iperf3 peer, which does not count them) and the
/// sender's `pacing`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpEndExtras {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspicious: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing: Option<Pacing>,
}

/// One TCP_INFO sample (`--tcp-info-interval`). Units are in the keys: cwnd and
/// ssthresh in `_bytes` and `_segments` (the kernel counts both in segments; bytes =
/// segments × snd_mss), and `snd_cwnd` stays bytes, as iperf3's interval `snd_cwnd`;
/// ssthresh is null until the kernel sets one (it starts "infinite"); times in `_us`;
/// rates in `_bps` (bit/s); `snd_wnd` and `snd_mss` are bytes, as in iperf3. `t`: s
/// from the start (µs precision); `bytes`: what the stream moved so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpInfoSample {
    pub socket: i32,
    pub t: f64,
    pub sender: bool,
    pub bytes: u64,
    pub snd_cwnd: u64,
    pub snd_cwnd_bytes: u64,
    pub snd_cwnd_segments: u32,
    pub snd_ssthresh_bytes: Option<u64>,
    pub snd_ssthresh_segments: Option<u32>,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub min_rtt_us: u32,
    pub total_retrans: u32,
    pub lost: u32,
    pub unacked: u32,
    pub pacing_rate_bps: u64,
    pub delivery_rate_bps: u64,
    pub snd_wnd: u32,
    pub snd_mss: u32,
}

/// The probe test's figures over a window (`intervals[].probe`; the whole test's are
/// [`ProbeEnd`]'s): requests sent, replies received, those lost, and the RTT and each
/// one-way delay (ms) of the replies. `start`, `end`: s from the start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeWindow {
    pub start: f64,
    pub end: f64,
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub loss_percent: f64,
    pub rtt_ms: Stats,
    pub send_delay_ms: Stats,
    pub receive_delay_ms: Stats,
}

/// `{"probe": ...}`: how an entry of `intervals` ([`ProbeWindow`]) and `end`
/// ([`ProbeEnd`]) carry a probe test's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Probe<T> {
    pub probe: T,
}

/// The columns of [`ProbeEnd::samples`], in order.
pub const PROBE_COLUMNS: [&str; 5] = ["seq", "t", "rtt_ms", "send_delay_ms", "receive_delay_ms"];

/// One probe: its sequence number, when it was sent (s from the start), its RTT and
/// one-way delays (ms; null when no reply came). An array in the JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeSample(
    pub u64,
    pub f64,
    pub Option<f64>,
    pub Option<f64>,
    pub Option<f64>,
);

/// `end.probe`: the whole test's [`ProbeWindow`] (`end` is the test's length), the
/// duplicate replies, the probing interval (ms) and size (bytes), every probe, and
/// the wall clock at t = 0 (ns since the Unix epoch), so that a caller can put the
/// samples on its own clock.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeEnd {
    pub start: f64,
    pub end: f64,
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub loss_percent: f64,
    pub rtt_ms: Stats,
    pub send_delay_ms: Stats,
    pub receive_delay_ms: Stats,
    pub duplicates: u64,
    pub interval_ms: f64,
    pub size: u64,
    pub samples: Vec<ProbeSample>,
    pub samples_columns: Vec<String>,
    pub start_unix_ns: u64,
}

/// The request/response test's figures over a window (`intervals[].rr`): transactions
/// completed and failed, and the completed ones' times (ms).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RrWindow {
    pub start: f64,
    pub end: f64,
    pub transactions: u64,
    pub failed: u64,
    pub time_ms: Stats,
}

/// `{"rr": ...}`: how an entry of `intervals` ([`RrWindow`]) and `end` ([`RrEnd`])
/// carry a request/response test's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rr<T> {
    pub rr: T,
}

/// The columns of [`RrEnd::samples`], in order.
pub const RR_COLUMNS: [&str; 2] = ["t", "time_ms"];

/// One transaction: when it began (s from the start) and how long it took (ms; null
/// when it failed). An array in the JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RrSample(pub f64, pub Option<f64>);

/// `end.rr`: the whole test's transactions, their rate and times, what each asked for
/// (`response_bytes`, `new_connection`), and every transaction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RrEnd {
    pub seconds: f64,
    pub transactions: u64,
    pub failed: u64,
    pub transactions_per_second: f64,
    pub response_bytes: u64,
    pub new_connection: bool,
    pub time_ms: Stats,
    pub samples: Vec<RrSample>,
    pub samples_columns: Vec<String>,
}

/// The JSON of a value of this module. Only a map with non-string keys or a failing
/// `Serialize` can fail, and none here has either.
pub fn to_value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("netrig-perf's extras serialise to JSON")
}

/// Adds the keys of `v` (an object) to an object of iperf3's.
pub fn insert_into<T: Serialize>(m: &mut Map<String, Value>, v: &T) {
    if let Value::Object(extra) = to_value(v) {
        m.extend(extra);
    }
}
