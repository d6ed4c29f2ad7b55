//! Turning per-frame analysis results into the report: per stream and direction the
//! counts of each flag, and the numbers beside them (retransmission ratios, goodput and
//! throughput, the ack_rtt distribution, time in zero window, where the losses
//! cluster); the flagged frames (`--frames`) and the time series (`--series`: throughput,
//! goodput, and the tcptrace "Stevens" points). Built as typed data first, rendered to
//! JSON once.
//!
//! Memory follows the number of streams, not of frames, except where asked for
//! (`--frames`, `--series`): ack_rtt samples and loss times are kept exactly up to a cap
//! per direction and summarised in fixed bins past it ([`dist`], [`losses`]). The
//! throughput bins follow the file's span of time: they are capped at
//! [`MAX_SERIES_BINS`] over the whole report, and a frame that would need more is
//! refused by name ([`SeriesTooLong`]) rather than allocated (two packets stamped 136
//! years apart asked for 343 GB in bins of 0.1 s).

pub mod dist;
pub mod losses;
pub mod numbers;
mod series;

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::Value;

use crate::decode::{addr_to_string, TcpHeader, ACK, FIN, RST, SYN};
use crate::tcp::{flag, FrameResult, Stream, FIELDS};
use dist::{Dist, Summary};
use losses::{LossTimes, LossesOut};
use numbers::{DataSpan, SpanOut, ZeroWindow, ZeroWindowOut};
use series::Series;
pub use series::{AckPoints, DirSeries, SegmentPoints, SeriesOut, Throughput};

/// The frames `tcp.analysis.retransmission` matches (fast and spurious included).
const RETRANSMITTED: u32 = flag::RETRANSMISSION | flag::FAST_RETRANSMISSION | flag::SPURIOUS_RETRANSMISSION;
/// A loss event: a retransmission as above, or `tcp.analysis.lost_segment`.
const LOSS: u32 = RETRANSMITTED | flag::LOST_PACKET;

/// Counts for a stream or one of its directions. `fields[i]` counts the frames matching
/// `tcp.analysis.FIELDS[i]`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    pub packets: u64,
    pub data_packets: u64,
    pub payload_bytes: u64,
    /// Frames with any analysis flag (`tcp.analysis.flags`).
    pub flagged: u64,
    pub fields: [u64; FIELDS.len()],
    /// Frames with payload that `tcp.analysis.retransmission` matches (a retransmitted
    /// SYN or FIN without payload is in `fields` but not here), and their payload bytes.
    pub retransmitted_data_packets: u64,
    pub retransmitted_payload_bytes: u64,
}

impl Counts {
    fn add(&mut self, seglen: u32, flags: u32) {
        self.packets += 1;
        if seglen > 0 {
            self.data_packets += 1;
            self.payload_bytes += seglen as u64;
            if flags & RETRANSMITTED != 0 {
                self.retransmitted_data_packets += 1;
                self.retransmitted_payload_bytes += seglen as u64;
            }
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
        self.retransmitted_data_packets += o.retransmitted_data_packets;
        self.retransmitted_payload_bytes += o.retransmitted_payload_bytes;
    }

    /// The counts as a JSON object.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("counts serialize")
    }
}

/// The counts, and the retransmission ratios by tshark's definition:
/// `retransmission_ratio_packets` = frames with payload matching
/// `tcp.analysis.retransmission` (fast and spurious included) over frames with payload
/// (`retransmitted_data_packets / data_packets`), and `retransmission_ratio_bytes` =
/// their payload bytes over all payload bytes; null without data.
impl Serialize for Counts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let ratio = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
        let mut m = s.serialize_map(Some(8 + FIELDS.len()))?;
        m.serialize_entry("packets", &self.packets)?;
        m.serialize_entry("data_packets", &self.data_packets)?;
        m.serialize_entry("payload_bytes", &self.payload_bytes)?;
        m.serialize_entry("flagged", &self.flagged)?;
        for (i, (name, _)) in FIELDS.iter().enumerate() {
            m.serialize_entry(name, &self.fields[i])?;
        }
        m.serialize_entry("retransmitted_data_packets", &self.retransmitted_data_packets)?;
        m.serialize_entry("retransmitted_payload_bytes", &self.retransmitted_payload_bytes)?;
        m.serialize_entry(
            "retransmission_ratio_packets",
            &ratio(self.retransmitted_data_packets, self.data_packets),
        )?;
        m.serialize_entry(
            "retransmission_ratio_bytes",
            &ratio(self.retransmitted_payload_bytes, self.payload_bytes),
        )?;
        m.end()
    }
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

/// What one direction of a stream adds up to: the frames it sent, the ack_rtt of its
/// data (from the other side's ACKs), its data's span, its own zero windows, its losses.
#[derive(Debug, Default)]
struct DirStats {
    counts: Counts,
    rtt: Dist,
    span: DataSpan,
    zero_window: ZeroWindow,
    losses: LossTimes,
}

#[derive(Debug, Default)]
struct StreamStats {
    dirs: [DirStats; 2],
    /// Both directions' loss events.
    losses: LossTimes,
    /// Each side has sent a FIN; some side has sent a RST.
    fin: [bool; 2],
    reset: bool,
    first_frame: u64,
    first_ns: i64,
    last_ns: i64,
    frames: Vec<(u64, usize, u32, Option<i128>)>,
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
    /// The latest packet time seen: the capture's end, where an open zero window stops.
    t_end: Option<i64>,
    stats: Vec<StreamStats>,
    /// Throughput bins held, over every stream and direction.
    bins: u64,
}

impl Collector {
    pub fn new(opts: Options) -> Collector {
        Collector {
            opts,
            t0: None,
            t_end: None,
            stats: Vec::new(),
            bins: 0,
        }
    }

    /// Called with every packet of the file, TCP or not: the first one's time is the
    /// origin series and frame times count from, the latest is the capture's end.
    pub fn set_origin(&mut self, ts: i64) {
        self.t0.get_or_insert(ts);
        self.t_end = Some(self.t_end.map_or(ts, |e| e.max(ts)));
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
        self.t_end = Some(self.t_end.map_or(now, |e| e.max(now)));
        let st = &mut self.stats[sid];
        st.last_ns = now;
        let seglen = h.seglen().unwrap_or(0);
        let d = &mut st.dirs[r.dir];
        d.counts.add(seglen, r.flags);
        if seglen > 0 {
            d.span.add(now, h.seq, seglen, stream.base_seq(r.dir));
        }
        // A window closed after the other side's FIN or a RST holds no data back.
        let zero = r.flags & flag::ZERO_WINDOW != 0 && !st.fin[1 - r.dir] && !st.reset;
        d.zero_window.add(now, zero, h.win);
        if h.flags & FIN != 0 {
            st.fin[r.dir] = true;
        }
        if h.flags & RST != 0 {
            st.reset = true;
            st.dirs.iter_mut().for_each(|d| d.zero_window.close(now));
        }
        if r.flags & LOSS != 0 {
            st.dirs[r.dir].losses.add(now, st.first_ns);
            st.losses.add(now, st.first_ns);
        }
        if let Some(rtt) = r.ack_rtt_ns {
            st.dirs[1 - r.dir]
                .rtt
                .add(rtt.clamp(i64::MIN as i128, i64::MAX as i128) as i64);
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
                s.grow(bin as usize);
            }
            s.data(bin as usize, t, h.seq, seglen, r.flags, stream.base_seq(r.dir));
        }
        if h.flags & ACK != 0 {
            let data_dir = 1 - r.dir;
            if let Some(base) = stream.base_seq(data_dir) {
                let shift = if h.flags & SYN != 0 {
                    0
                } else {
                    stream.window_shift(r.dir).unwrap_or(0)
                };
                series[data_dir].ack(t, h.ack, base, h.win, shift);
            }
        }
        Ok(())
    }

    /// The streams' part of the report, and the totals over all streams.
    pub fn finish(mut self, streams: &[Stream]) -> (Vec<StreamOut>, Value) {
        let t0 = self.t0.unwrap_or(0);
        let t_end = self.t_end.unwrap_or(0);
        let secs = |ns: i64| ns.saturating_sub(t0) as f64 / 1e9;
        let mut total = Counts::default();
        let mut all_rtt = Dist::default();
        let mut out = Vec::with_capacity(self.stats.len());
        let interval = self.opts.series_interval_ns;
        for (sid, st) in self.stats.iter_mut().enumerate() {
            let s = &streams[sid];
            let end = |i: usize| format!("{}:{}", addr_to_string(&s.ends[i].0), s.ends[i].1);
            let mut both = Counts::default();
            let mut rtt_both = Dist::default();
            let (lo, hi) = (st.first_ns, st.last_ns.max(st.first_ns));
            let [a, b] = std::mem::take(&mut st.dirs).map(|mut ds| {
                both.merge(&ds.counts);
                rtt_both.merge(&ds.rtt);
                DirOut {
                    rtt: ds.rtt.summary(),
                    data: ds.span.out(t0, ds.counts.payload_bytes),
                    zero_window_time: ds.zero_window.out(t_end),
                    losses: ds.losses.out(t0, lo, hi),
                    counts: ds.counts,
                }
            });
            total.merge(&both);
            all_rtt.merge(&rtt_both);
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
            out.push(StreamOut {
                stream: sid,
                a: end(0),
                b: end(1),
                first_frame: st.first_frame,
                start_s: secs(st.first_ns),
                end_s: secs(st.last_ns),
                counts: both,
                rtt: rtt_both.summary(),
                irtt_s: s.irtt_ns().map(|x| x as f64 / 1e9),
                losses: st.losses.out(t0, lo, hi),
                directions: Directions { a_to_b: a, b_to_a: b },
                frames,
                series,
            });
        }
        let mut t = total.to_json();
        t["rtt"] = serde_json::to_value(all_rtt.summary()).expect("a summary serializes");
        (out, t)
    }
}

const DIRS: [&str; 2] = ["a_to_b", "b_to_a"];

/// One stream of the report: its facts, counts and numbers, then (if asked) its flagged
/// frames and its series. Typed, and serialized straight to the output: a capture of a
/// million streams holds no JSON tree.
#[derive(Debug, Serialize)]
pub struct StreamOut {
    pub stream: usize,
    pub a: String,
    pub b: String,
    pub first_frame: u64,
    pub start_s: f64,
    pub end_s: f64,
    pub counts: Counts,
    pub rtt: Summary,
    pub irtt_s: Option<f64>,
    /// Both directions' loss events.
    pub losses: LossesOut,
    pub directions: Directions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames: Option<Vec<FrameOut>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<SeriesOut>,
}

#[derive(Debug, Serialize)]
pub struct Directions {
    pub a_to_b: DirOut,
    pub b_to_a: DirOut,
}

/// One direction: the frames its side sent (counts and ratios), the ack_rtt of its data,
/// its data's span and rates, its side's zero windows, its losses.
#[derive(Debug, Serialize)]
pub struct DirOut {
    #[serde(flatten)]
    pub counts: Counts,
    pub rtt: Summary,
    #[serde(flatten)]
    pub data: SpanOut,
    pub zero_window_time: ZeroWindowOut,
    pub losses: LossesOut,
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

#[cfg(test)]
mod tests;
