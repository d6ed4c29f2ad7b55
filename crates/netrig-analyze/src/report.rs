//! Turning per-frame analysis results into the report: counts per stream and direction,
//! ack_rtt summaries, flagged frames, and the time series (throughput, goodput, and the
//! tcptrace "Stevens" points). Built as typed data first, rendered to JSON once.
//!
//! Memory follows the file's size, except for the throughput bins, which follow its
//! span of time: they are capped at [`MAX_SERIES_BINS`] over the whole report, and a
//! frame that would need more is refused by name ([`SeriesTooLong`]) rather than
//! allocated (two packets stamped 136 years apart asked for 343 GB in bins of 0.1 s).

use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::decode::{addr_to_string, TcpHeader, ACK, SYN};
use crate::tcp::{flag, FrameResult, Stream, FIELDS};

/// Counts for a stream or one of its directions. `fields[i]` counts the frames matching
/// `tcp.analysis.FIELDS[i]`.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    pub packets: u64,
    pub data_packets: u64,
    pub payload_bytes: u64,
    /// Frames with any analysis flag (`tcp.analysis.flags`).
    pub flagged: u64,
    pub fields: [u64; FIELDS.len()],
}

impl Counts {
    fn add(&mut self, seglen: u32, flags: u32) {
        self.packets += 1;
        if seglen > 0 {
            self.data_packets += 1;
            self.payload_bytes += seglen as u64;
        }
        if flags != 0 {
            self.flagged += 1;
            for (i, (_, mask)) in FIELDS.iter().enumerate() {
                if flags & mask != 0 {
                    self.fields[i] += 1;
                }
            }
        }
    }

    fn merge(&mut self, o: &Counts) {
        self.packets += o.packets;
        self.data_packets += o.data_packets;
        self.payload_bytes += o.payload_bytes;
        self.flagged += o.flagged;
        for (a, b) in self.fields.iter_mut().zip(o.fields) {
            *a += b;
        }
    }

    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("packets".into(), self.packets.into());
        m.insert("data_packets".into(), self.data_packets.into());
        m.insert("payload_bytes".into(), self.payload_bytes.into());
        m.insert("flagged".into(), self.flagged.into());
        for (i, (name, _)) in FIELDS.iter().enumerate() {
            m.insert((*name).into(), self.fields[i].into());
        }
        Value::Object(m)
    }
}

/// n, min, mean, p50, p90, p99, max and sum of RTT samples, in seconds.
pub fn rtt_summary(samples: &mut [i64]) -> Value {
    if samples.is_empty() {
        return json!({"n": 0});
    }
    samples.sort_unstable();
    let n = samples.len();
    let sum: i128 = samples.iter().map(|&x| x as i128).sum();
    let pct = |p: f64| samples[((p * n as f64).ceil() as usize).clamp(1, n) - 1] as f64 / 1e9;
    json!({
        "n": n,
        "min_s": samples[0] as f64 / 1e9,
        "mean_s": sum as f64 / n as f64 / 1e9,
        "p50_s": pct(0.50),
        "p90_s": pct(0.90),
        "p99_s": pct(0.99),
        "max_s": samples[n - 1] as f64 / 1e9,
        "sum_s": sum as f64 / 1e9,
    })
}

/// Unwraps a 32-bit relative sequence number to the 64-bit value nearest `last`.
fn unwrap(last: i64, rel: u32) -> i64 {
    let mut v = (last & !0xFFFF_FFFF) | rel as i64;
    if v - last > 1 << 31 {
        v -= 1 << 32;
    } else if last - v > 1 << 31 {
        v += 1 << 32;
    }
    v
}

/// The time series of one direction's data.
#[derive(Debug, Default)]
struct Series {
    bytes: Vec<u64>,
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

#[derive(Debug, Default)]
struct StreamStats {
    dirs: [Counts; 2],
    /// ack_rtt samples (ns) for each direction's data (from the other side's ACKs).
    rtt: [Vec<i64>; 2],
    first_frame: u64,
    first_ns: i64,
    last_ns: i64,
    frames: Vec<(u64, usize, u32, Option<i64>)>,
    series: Option<[Series; 2]>,
}

pub struct Options {
    pub frames: bool,
    pub series_interval_ns: Option<i64>,
}

/// The most throughput bins one report holds, over every stream and direction: 64 MiB
/// while the file is read (two counters a bin), about 100 MiB more to render them. A
/// capture of 100 streams over an hour in bins of 0.1 s needs 7.2 million: that is
/// refused, and `--series 1` (720 000) is not.
pub const MAX_SERIES_BINS: u64 = 1 << 22;

/// A frame whose throughput bin lies past [`MAX_SERIES_BINS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesTooLong {
    pub frame: u64,
    /// The frame's time after the file's first packet.
    pub after_ns: i64,
    pub interval_ns: i64,
    /// Bins the report would hold with this frame's.
    pub bins: u64,
}

impl std::fmt::Display for SeriesTooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.after_ns as f64 / 1e9;
        let span = if s >= 2.0 * 365.25 * 86400.0 {
            format!("{:.1} years", s / (365.25 * 86400.0))
        } else if s >= 2.0 * 86400.0 {
            format!("{:.1} days", s / 86400.0)
        } else {
            format!("{s:.3} s")
        };
        // The interval that fits one stream's two directions in the cap, in whole ms.
        let least_ms = (self.after_ns.max(0) as u128 * 2).div_ceil(MAX_SERIES_BINS as u128 * 1_000_000);
        let least = least_ms as f64 / 1e3;
        write!(
            f,
            "frame {} is stamped {span} after the file's first packet: time series in bins of {} s \
             would need {} bins, and netrig-analyze keeps at most {MAX_SERIES_BINS} per file; \
             pass a larger --series interval (this span needs at least {} s), or check the \
             capture's timestamps",
            self.frame,
            self.interval_ns as f64 / 1e9,
            self.bins,
            least.max(self.interval_ns as f64 / 1e9),
        )
    }
}

/// Collects the frames of a file as the analysis goes.
pub struct Collector {
    opts: Options,
    t0: Option<i64>,
    stats: Vec<StreamStats>,
    /// Throughput bins held, over every stream and direction.
    bins: u64,
}

impl Collector {
    pub fn new(opts: Options) -> Collector {
        Collector {
            opts,
            t0: None,
            stats: Vec::new(),
            bins: 0,
        }
    }

    /// The file's first packet time: series and frame times count from it.
    pub fn set_origin(&mut self, t0: i64) {
        self.t0.get_or_insert(t0);
    }

    /// Counts one analysed frame; refuses one whose throughput bin lies past the cap.
    pub fn add(
        &mut self,
        frame: u64,
        now: i64,
        h: &TcpHeader,
        r: &FrameResult,
        stream: &Stream,
    ) -> Result<(), SeriesTooLong> {
        let sid = r.stream as usize;
        if sid >= self.stats.len() {
            self.stats.resize_with(sid + 1, StreamStats::default);
            let st = &mut self.stats[sid];
            st.first_frame = frame;
            st.first_ns = now;
            if self.opts.series_interval_ns.is_some() {
                st.series = Some(Default::default());
            }
        }
        let st = &mut self.stats[sid];
        st.last_ns = now;
        let seglen = h.seglen().unwrap_or(0);
        st.dirs[r.dir].add(seglen, r.flags);
        if let Some(rtt) = r.ack_rtt_ns {
            st.rtt[1 - r.dir].push(rtt);
        }
        if self.opts.frames && (r.flags != 0 || r.ack_rtt_ns.is_some()) {
            st.frames.push((frame, r.dir, r.flags, r.ack_rtt_ns));
        }
        let (Some(interval), Some(series)) = (self.opts.series_interval_ns, st.series.as_mut()) else {
            return Ok(());
        };
        let t0 = self.t0.unwrap_or(now);
        let after = now.saturating_sub(t0);
        let t = after as f64 / 1e9;
        if seglen > 0 {
            let s = &mut series[r.dir];
            let bin = (after.max(0) / interval) as u64;
            let have = s.bytes.len() as u64;
            if have <= bin {
                let bins = self.bins + (bin + 1 - have);
                if bins > MAX_SERIES_BINS {
                    return Err(SeriesTooLong {
                        frame,
                        after_ns: after,
                        interval_ns: interval,
                        bins,
                    });
                }
                self.bins = bins;
                s.bytes.resize(bin as usize + 1, 0);
                s.new_bytes.resize(bin as usize + 1, 0);
            }
            let bin = bin as usize;
            s.bytes[bin] += seglen as u64;
            let end = h.seq.wrapping_add(seglen);
            let new = match s.highest {
                None => seglen,
                Some(hi) if (end.wrapping_sub(hi) as i32) > 0 => {
                    if (h.seq.wrapping_sub(hi) as i32) > 0 {
                        seglen
                    } else {
                        end.wrapping_sub(hi)
                    }
                }
                Some(_) => 0,
            };
            if new > 0 {
                s.highest = Some(end);
            }
            s.new_bytes[bin] += new as u64;
            if let Some(base) = stream.base_seq(r.dir) {
                let start = unwrap(s.last_seq, h.seq.wrapping_sub(base));
                s.last_seq = start;
                s.seg_t.push(t);
                s.seg_start.push(start);
                s.seg_end.push(start + seglen as i64);
                s.seg_kind.push(kind(r.flags));
            }
        }
        if h.flags & ACK != 0 {
            let data_dir = 1 - r.dir;
            if let Some(base) = stream.base_seq(data_dir) {
                let s = &mut series[data_dir];
                let ack = unwrap(s.last_ack, h.ack.wrapping_sub(base));
                s.last_ack = ack;
                let shift = if h.flags & SYN != 0 {
                    0
                } else {
                    stream.window_shift(r.dir).unwrap_or(0)
                };
                s.ack_t.push(t);
                s.ack.push(ack);
                s.window_edge.push(ack + ((h.win as i64) << shift));
            }
        }
        Ok(())
    }

    /// The streams' part of the report, and the totals over all streams.
    pub fn finish(mut self, streams: &[Stream]) -> (Vec<StreamOut>, Value) {
        let t0 = self.t0.unwrap_or(0);
        let secs = |ns: i64| ns.saturating_sub(t0) as f64 / 1e9;
        let mut total = Counts::default();
        let mut all_rtt = Vec::new();
        let mut out = Vec::new();
        let interval = self.opts.series_interval_ns;
        for (sid, st) in self.stats.iter_mut().enumerate() {
            let s = &streams[sid];
            let end = |i: usize| format!("{}:{}", addr_to_string(&s.ends[i].0), s.ends[i].1);
            let mut both = Counts::default();
            both.merge(&st.dirs[0]);
            both.merge(&st.dirs[1]);
            total.merge(&both);
            let mut rtt_both: Vec<i64> = st.rtt[0].iter().chain(&st.rtt[1]).copied().collect();
            all_rtt.extend_from_slice(&rtt_both);
            let mut dirs = Map::new();
            for (d, name) in [(0, "a_to_b"), (1, "b_to_a")] {
                let mut c = st.dirs[d].to_json();
                c["rtt"] = rtt_summary(&mut st.rtt[d]);
                dirs.insert(name.into(), c);
            }
            let info = json!({
                "stream": sid,
                "a": end(0),
                "b": end(1),
                "first_frame": st.first_frame,
                "start_s": secs(st.first_ns),
                "end_s": secs(st.last_ns),
                "counts": both.to_json(),
                "rtt": rtt_summary(&mut rtt_both),
                "irtt_s": s.irtt_ns().map(|x| x as f64 / 1e9),
                "directions": dirs,
            });
            let Value::Object(info) = info else {
                unreachable!("json! of an object")
            };
            let frames = self.opts.frames.then(|| {
                std::mem::take(&mut st.frames)
                    .into_iter()
                    .map(|(frame, dir, flags, rtt)| FrameOut {
                        frame,
                        dir: DIRS[dir],
                        flags: FlagNames(flags),
                        ack_rtt_s: rtt.map(|r| r as f64 / 1e9),
                    })
                    .collect()
            });
            let series = match (interval, st.series.take()) {
                (Some(iv), Some([a, b])) => Some(SeriesOut {
                    interval_s: iv as f64 / 1e9,
                    a_to_b: DirSeries::new(a, iv),
                    b_to_a: DirSeries::new(b, iv),
                }),
                _ => None,
            };
            out.push(StreamOut { info, frames, series });
        }
        let mut t = total.to_json();
        t["rtt"] = rtt_summary(&mut all_rtt);
        (out, t)
    }
}

const DIRS: [&str; 2] = ["a_to_b", "b_to_a"];

/// One stream of the report: its facts and counts, then (if asked) its flagged frames
/// and its series. Serialized straight to the output (frames and series can be large).
#[derive(Debug, Serialize)]
pub struct StreamOut {
    #[serde(flatten)]
    pub info: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames: Option<Vec<FrameOut>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<SeriesOut>,
}

#[derive(Debug, Serialize)]
pub struct FrameOut {
    pub frame: u64,
    pub dir: &'static str,
    pub flags: FlagNames,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_rtt_s: Option<f64>,
}

/// A frame's flags, serialized as the list of the `tcp.analysis` fields they match.
#[derive(Debug, Clone, Copy)]
pub struct FlagNames(pub u32);

impl Serialize for FlagNames {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let names = FIELDS.iter().filter(|(_, m)| self.0 & m != 0);
        let mut seq = s.serialize_seq(Some(names.clone().count()))?;
        for (n, _) in names {
            seq.serialize_element(n)?;
        }
        seq.end()
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
    fn new(s: Series, iv: i64) -> DirSeries {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut v: Vec<i64> = (1..=100).map(|x| x * 1_000_000).collect();
        let s = rtt_summary(&mut v);
        assert_eq!(s["n"], 100);
        assert_eq!(s["p50_s"], 0.05);
        assert_eq!(s["p99_s"], 0.099);
        assert_eq!(s["max_s"], 0.1);
        assert_eq!(s["sum_s"], 5.05);
    }

    #[test]
    fn unwrap_follows_the_sequence_past_4gb() {
        assert_eq!(unwrap(0xFFFF_FF00, 0x10), 0x1_0000_0010);
        assert_eq!(unwrap(0x1_0000_0010, 0xFFFF_FF00), 0xFFFF_FF00);
        assert_eq!(unwrap(5, 3), 3);
    }
}
