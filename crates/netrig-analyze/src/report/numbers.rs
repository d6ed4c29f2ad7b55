//! The numbers of one direction beside its flags: how much data it delivered and at what
//! rate (goodput and throughput over its data's duration), and how long its receive
//! window stood closed (time in zero window). Each is kept in a few words per direction,
//! whatever the file's length.

use serde::Serialize;

use super::unwrap;

/// The sequence space a direction's data covered, and when it was sent.
///
/// Unique payload bytes are the highest sequence number reached minus the lowest, over
/// the segments with payload (sequence numbers unwrapped past 4 GiB): each byte counted
/// once however often it was sent, and bytes the capture missed but the sender sent
/// (a "previous segment not captured" gap) counted as delivered. When the direction's
/// base sequence number changes (a SYN-ACK with a new ISN on the same ports: Wireshark
/// keeps the stream and renumbers), a new span starts and the old one's bytes are kept:
/// two connections' sequence numbers are not one range.
#[derive(Debug, Default, Clone)]
pub struct DataSpan {
    first_ns: i64,
    last_ns: i64,
    segments: u64,
    /// The base sequence number the current span's data was sent under.
    base: Option<u32>,
    /// The span's first data segment's sequence number: positions count from it.
    origin: u32,
    last: i64,
    lo: i64,
    hi: i64,
    /// Unique bytes of the spans before the current one.
    before: u64,
}

impl DataSpan {
    /// A segment of `len` > 0 bytes from `seq` at `now`, sent under the direction's base
    /// sequence number `base` (tcp.rs's, Wireshark's relative 0).
    pub fn add(&mut self, now: i64, seq: u32, len: u32, base: Option<u32>) {
        if self.segments > 0 && base != self.base {
            self.before += (self.hi - self.lo) as u64;
            (self.origin, self.last, self.lo, self.hi) = (seq, 0, 0, len as i64);
        }
        self.base = base;
        if self.segments == 0 {
            self.origin = seq;
            (self.first_ns, self.last_ns) = (now, now);
            (self.lo, self.hi) = (0, len as i64);
        } else {
            let start = unwrap(self.last, seq.wrapping_sub(self.origin));
            self.last = start;
            self.lo = self.lo.min(start);
            self.hi = self.hi.max(start + len as i64);
            self.first_ns = self.first_ns.min(now);
            self.last_ns = self.last_ns.max(now);
        }
        self.segments += 1;
    }

    pub fn unique_bytes(&self) -> u64 {
        self.before + (self.hi - self.lo) as u64
    }

    /// First to last data segment, in ns (None without data).
    pub fn duration_ns(&self) -> Option<i64> {
        (self.segments > 0).then(|| self.last_ns.saturating_sub(self.first_ns))
    }

    /// The report's view (`t0`: the capture's first packet; `payload_bytes`: every
    /// payload byte of the direction, for the throughput).
    pub fn out(&self, t0: i64, payload_bytes: u64) -> SpanOut {
        let s = |ns: i64| (ns as i128 - t0 as i128) as f64 / 1e9;
        let Some(d) = self.duration_ns() else {
            return SpanOut::default();
        };
        let rate = |bytes: u64| (d > 0).then(|| bytes as f64 * 8.0 / (d as f64 / 1e9));
        SpanOut {
            unique_payload_bytes: self.unique_bytes(),
            data_start_s: Some(s(self.first_ns)),
            data_end_s: Some(s(self.last_ns)),
            data_duration_s: Some(d as f64 / 1e9),
            goodput_bps: rate(self.unique_bytes()),
            throughput_bps: rate(payload_bytes),
        }
    }
}

/// A direction's data: `unique_payload_bytes`; the first and last data segment and the
/// time between; `goodput_bps` (unique bytes over that time) and `throughput_bps` (every
/// payload byte over it). Null without data; the rates null with one data segment.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SpanOut {
    pub unique_payload_bytes: u64,
    pub data_start_s: Option<f64>,
    pub data_end_s: Option<f64>,
    pub data_duration_s: Option<f64>,
    pub goodput_bps: Option<f64>,
    pub throughput_bps: Option<f64>,
}

/// How long one side's receive window stood at zero: from a frame it sent that
/// `tcp.analysis.zero_window` matches (window 0, not SYN, FIN or RST) to its next frame
/// advertising a non-zero window, or a RST, or the capture's end (then `open`). The
/// collector starts none after the other side's FIN or a RST: no data waits then (a
/// last ACK with window 0 after both FINs is common, and is no stall).
#[derive(Debug, Default, Clone)]
pub struct ZeroWindow {
    open_since: Option<i64>,
    episodes: u64,
    total_ns: i64,
    longest_ns: i64,
}

impl ZeroWindow {
    /// A frame this side sent: `zero` if it is flagged zero_window, `win` its raw window.
    pub fn add(&mut self, now: i64, zero: bool, win: u16) {
        if zero {
            if self.open_since.is_none() {
                self.open_since = Some(now);
                self.episodes += 1;
            }
        } else if win != 0 {
            self.close(now);
        }
    }

    /// Ends an open episode at `now`.
    pub fn close(&mut self, now: i64) {
        if let Some(t) = self.open_since.take() {
            let d = now.saturating_sub(t).max(0);
            self.total_ns = self.total_ns.saturating_add(d);
            self.longest_ns = self.longest_ns.max(d);
        }
    }

    /// `episodes`, `total_s`, `longest_s`, and `open` (the last episode lasted to the
    /// capture's end, `end_ns`, and is counted up to it).
    pub fn out(&mut self, end_ns: i64) -> ZeroWindowOut {
        let open = self.open_since.is_some();
        self.close(end_ns);
        ZeroWindowOut {
            episodes: self.episodes,
            total_s: self.total_ns as f64 / 1e9,
            longest_s: self.longest_ns as f64 / 1e9,
            open,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ZeroWindowOut {
    pub episodes: u64,
    pub total_s: f64,
    pub longest_s: f64,
    pub open: bool,
}
