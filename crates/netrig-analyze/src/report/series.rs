//! The time series of one direction (`--series`): throughput and goodput in bins, and
//! tcptrace's "Stevens" points (each data segment's sequence range, each ACK and the
//! window's right edge). They grow with the file's length, as they must; the bins are
//! capped by the collector ([`super::MAX_SERIES_BINS`]).

use serde::Serialize;

use super::unwrap;
use crate::tcp::flag;

/// The time series of one direction's data.
#[derive(Debug, Default)]
pub(super) struct Series {
    pub(super) bytes: Vec<u64>,
    new_bytes: Vec<u64>,
    /// Stevens points: time (s since the file's first packet), relative start and end.
    seg_t: Vec<f64>,
    seg_start: Vec<i64>,
    seg_end: Vec<i64>,
    seg_kind: Vec<&'static str>,
    ack_t: Vec<f64>,
    ack: Vec<i64>,
    window_edge: Vec<i64>,
    last_seq: i64,
    last_ack: i64,
    /// The highest sequence end seen (raw), for goodput.
    highest: Option<u32>,
}

/// The kind a Stevens point is drawn as.
fn kind(flags: u32) -> &'static str {
    if flags & flag::FAST_RETRANSMISSION != 0 {
        "fast_retransmission"
    } else if flags & flag::SPURIOUS_RETRANSMISSION != 0 {
        "spurious_retransmission"
    } else if flags & flag::RETRANSMISSION != 0 {
        "retransmission"
    } else if flags & flag::OUT_OF_ORDER != 0 {
        "out_of_order"
    } else if flags & flag::LOST_PACKET != 0 {
        "after_gap"
    } else {
        "new"
    }
}

impl Series {
    /// Makes room for bin `bin` (the collector has checked the cap).
    pub(super) fn grow(&mut self, bin: usize) {
        self.bytes.resize(bin + 1, 0);
        self.new_bytes.resize(bin + 1, 0);
    }

    /// A data segment: its bytes in `bin`, and its Stevens point at `t` (s) when the
    /// direction's base sequence number is known.
    pub(super) fn data(&mut self, bin: usize, t: f64, seq: u32, seglen: u32, flags: u32, base: Option<u32>) {
        self.bytes[bin] += seglen as u64;
        let end = seq.wrapping_add(seglen);
        let new = match self.highest {
            None => seglen,
            Some(hi) if (end.wrapping_sub(hi) as i32) > 0 => {
                if (seq.wrapping_sub(hi) as i32) > 0 {
                    seglen
                } else {
                    end.wrapping_sub(hi)
                }
            }
            Some(_) => 0,
        };
        if new > 0 {
            self.highest = Some(end);
        }
        self.new_bytes[bin] += new as u64;
        if let Some(base) = base {
            let start = unwrap(self.last_seq, seq.wrapping_sub(base));
            self.last_seq = start;
            self.seg_t.push(t);
            self.seg_start.push(start);
            self.seg_end.push(start + seglen as i64);
            self.seg_kind.push(kind(flags));
        }
    }

    /// An ACK of this direction's data at `t` (s): its point and the window's right edge
    /// (`win` shifted by `shift`).
    pub(super) fn ack(&mut self, t: f64, ack: u32, base: u32, win: u16, shift: u32) {
        let a = unwrap(self.last_ack, ack.wrapping_sub(base));
        self.last_ack = a;
        self.ack_t.push(t);
        self.ack.push(a);
        self.window_edge.push(a + ((win as i64) << shift));
    }
}

#[derive(Debug, Serialize)]
pub struct SeriesOut {
    pub interval_s: f64,
    pub a_to_b: DirSeries,
    pub b_to_a: DirSeries,
}

#[derive(Debug, Serialize)]
pub struct DirSeries {
    pub throughput: Throughput,
    pub segments: SegmentPoints,
    pub acks: AckPoints,
}

#[derive(Debug, Serialize)]
pub struct Throughput {
    pub t_s: Vec<f64>,
    pub bps: Vec<f64>,
    pub goodput_bps: Vec<f64>,
}

#[derive(Debug, Serialize)]
pub struct SegmentPoints {
    pub t_s: Vec<f64>,
    pub start: Vec<i64>,
    pub end: Vec<i64>,
    pub kind: Vec<&'static str>,
}

#[derive(Debug, Serialize)]
pub struct AckPoints {
    pub t_s: Vec<f64>,
    pub ack: Vec<i64>,
    pub window_edge: Vec<i64>,
}

impl DirSeries {
    pub(super) fn new(s: Series, iv: i64) -> DirSeries {
        let per_s = 8.0 * 1e9 / iv as f64;
        DirSeries {
            throughput: Throughput {
                t_s: (0..s.bytes.len()).map(|i| i as f64 * iv as f64 / 1e9).collect(),
                bps: s.bytes.iter().map(|&b| b as f64 * per_s).collect(),
                goodput_bps: s.new_bytes.iter().map(|&b| b as f64 * per_s).collect(),
            },
            segments: SegmentPoints {
                t_s: s.seg_t,
                start: s.seg_start,
                end: s.seg_end,
                kind: s.seg_kind,
            },
            acks: AckPoints {
                t_s: s.ack_t,
                ack: s.ack,
                window_edge: s.window_edge,
            },
        }
    }
}
