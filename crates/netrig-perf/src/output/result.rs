//! The typed figures a test reports, built once from the run's data: what the test
//! was (its [`Layout`] and [`StartInfo`]), and at its end an [`EndResult`] of every
//! stream's sender and receiver [`Side`], UDP figures ([`UdpEnd`]), per-direction sums,
//! CPU and congestion control. The renderers ([`super::text`], [`super::json`]) only
//! format these; every count, sum and clamp is decided here.

use netrig_core::iperf3::{Params, Protocol, StreamResult};
use netrig_core::wire::iperf3::Cookie;
use serde::Deserialize;
use serde_json::Value;

use crate::diskfile::DiskfileReport;
use crate::extras::Pacing;
use crate::report::{CpuUsage, Sample, TcpExtremes};

/// What shapes every report of a test: known when the test starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub udp: bool,
    pub bidir: bool,
    /// Which side prints: roles read `[TX-C]` on the client, `[TX-S]` on the server.
    pub is_client: bool,
}

impl Default for Layout {
    fn default() -> Layout {
        Layout {
            udp: false,
            bidir: false,
            is_client: true,
        }
    }
}

/// One side of a stream's end-of-test figures.
#[derive(Debug, Clone, Default)]
pub struct Side {
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub retransmits: Option<i64>,
    pub extremes: Option<TcpExtremes>,
    /// A paced sender's account of its schedule (netrig's `pacing` object).
    pub pacing: Option<Pacing>,
}

/// UDP end-of-test figures of one stream (the receiver's view, as iperf3 reports).
#[derive(Debug, Clone, Default)]
pub struct UdpEnd {
    pub jitter_ms: f64,
    pub lost: i64,
    pub packets: i64,
    pub out_of_order: i64,
    pub duplicates: i64,
    /// Datagrams the receiver judged not the sender's (netrig's `suspicious`); None
    /// when the receiver is an iperf3 peer, which does not count them.
    pub suspicious: Option<i64>,
    /// The sending side's own figures for its "sender" line.
    pub sent_packets: i64,
}

impl UdpEnd {
    pub fn lost_percent(&self) -> f64 {
        percent(self.lost, self.packets)
    }
}

/// `lost` of `total` in percent, 0 when nothing was counted.
pub fn percent(lost: i64, total: i64) -> f64 {
    if total > 0 {
        100.0 * lost as f64 / total as f64
    } else {
        0.0
    }
}

#[derive(Debug, Clone)]
pub struct EndStream {
    pub socket: i32,
    /// Whether the local stream sends.
    pub local_sender: bool,
    pub sender: Option<Side>,
    pub receiver: Option<Side>,
    pub udp: Option<UdpEnd>,
}

impl EndStream {
    /// Combines local totals with the peer's results for the same stream (if any).
    /// `whole_test`: no warm-up was omitted, so the peer's UDP counts (which include the
    /// warm-up, as iperf3's do) cover the same span as ours.
    pub fn build(
        local: &Sample,
        extremes: Option<TcpExtremes>,
        peer: Option<&StreamResult>,
        udp: bool,
        whole_test: bool,
    ) -> EndStream {
        let s = &local.stream;
        let local_side = Side {
            end: local.end,
            seconds: local.end,
            bytes: local.bytes,
            retransmits: local.tcp.map(|t| t.retransmits as i64),
            extremes: if s.sender { extremes } else { None },
            pacing: s.pacing.lock().unwrap().as_ref().map(Pacing::from),
        };
        let peer_side = peer.map(|p| Side {
            end: p.end_time,
            seconds: p.end_time,
            bytes: p.bytes,
            retransmits: (p.retransmits >= 0).then_some(p.retransmits),
            // The peer's sender extremes, when a netrig peer sent them (iperf3 does not).
            extremes: if s.sender {
                None
            } else {
                p.netrig.as_ref().and_then(TcpExtremes::from_peer)
            },
            // A netrig peer's own account (one it cannot have written is left out).
            pacing: p
                .netrig
                .as_ref()
                .and_then(|n| n.get("pacing"))
                .and_then(|v| Pacing::deserialize(v).ok()),
        });
        let (mut sender, mut receiver) = if s.sender {
            (Some(local_side), peer_side)
        } else {
            (peer_side, Some(local_side))
        };
        // iperf3 reports both sides' "seconds" as the sender's duration.
        if let (Some(snd), Some(rcv)) = (sender.as_mut(), receiver.as_mut()) {
            rcv.seconds = snd.seconds;
        }
        if sender.as_ref().map(|x| x.retransmits.is_none()).unwrap_or(false) && udp {
            sender.as_mut().unwrap().retransmits = None;
        }
        let udp_end = udp.then(|| {
            let rx = local.udp_rx.unwrap_or_default();
            let extra = |key: &str| {
                peer.and_then(|p| p.netrig.as_ref())
                    .and_then(|n| n.get(key))
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            };
            if s.sender {
                // The receiver counts gaps below the highest sequence it saw; datagrams
                // after that (the tail still in flight at the end) are lost too.
                let sent = local.packets as i64;
                let p = peer.cloned().unwrap_or_default();
                let tail = if whole_test { (sent - p.packets).max(0) } else { 0 };
                UdpEnd {
                    jitter_ms: p.jitter * 1000.0,
                    lost: within(p.errors + tail, sent),
                    packets: sent,
                    out_of_order: extra("out_of_order"),
                    duplicates: extra("duplicates"),
                    suspicious: peer
                        .and_then(|p| p.netrig.as_ref())
                        .and_then(|n| n.get("suspicious"))
                        .and_then(Value::as_i64),
                    sent_packets: sent,
                }
            } else {
                let sent = peer.map(|p| p.packets).filter(|&n| n > 0 && whole_test);
                let tail = sent.map(|n| (n - rx.packets as i64).max(0)).unwrap_or(0);
                let packets = sent.unwrap_or(rx.packets as i64);
                UdpEnd {
                    jitter_ms: rx.jitter_ms,
                    lost: within(rx.lost as i64 + tail, packets),
                    packets,
                    out_of_order: rx.out_of_order as i64,
                    duplicates: rx.duplicates as i64,
                    suspicious: Some(rx.suspicious as i64),
                    sent_packets: packets,
                }
            }
        });
        EndStream {
            socket: s.socket,
            local_sender: s.sender,
            sender,
            receiver,
            udp: udp_end,
        }
    }
}

/// Datagrams lost, as a receiver counted them, within 0 and the `packets` the sender
/// says it sent: a receiver that took forged datagrams for the sender's (ours judges
/// the wild ones suspicious; an iperf3 peer takes them all) can count more gaps than
/// there were datagrams, and loss is never more than 100 %.
fn within(lost: i64, packets: i64) -> i64 {
    lost.clamp(0, packets.max(0))
}

/// The streams of one direction, summed (iperf3's `[SUM]` lines and `sum_*` objects).
#[derive(Debug, Clone)]
pub struct DirectionSum {
    /// Whether the local side sends in this direction.
    pub local_sender: bool,
    /// `--bidir`'s second direction (iperf3's `*_bidir_reverse` keys).
    pub reverse: bool,
    /// How many streams went into the sum (iperf3 prints `[SUM]` lines for more than one).
    pub streams: usize,
    pub sent: Option<Side>,
    pub received: Option<Side>,
    /// The direction's UDP figures: packets and loss summed, jitter averaged.
    pub udp: Option<UdpEnd>,
}

/// Everything a test reports at its end, on either side.
#[derive(Debug, Clone)]
pub struct EndResult {
    pub layout: Layout,
    pub streams: Vec<EndStream>,
    /// The test's main direction first, then (`--bidir`) the reverse one.
    pub sums: Vec<DirectionSum>,
    pub cpu: CpuUsage,
    /// The peer's CPU, from its results (the server does not know the client's).
    pub remote_cpu: Option<CpuUsage>,
    /// TCP only.
    pub sender_congestion: Option<String>,
    pub receiver_congestion: Option<String>,
    /// `-F`: the file the first stream sent or received.
    pub diskfile: Option<DiskfileReport>,
}

impl EndResult {
    /// Sums the streams per direction; `congestion` is (sender's, receiver's).
    pub fn build(
        layout: Layout,
        streams: Vec<EndStream>,
        cpu: CpuUsage,
        remote_cpu: Option<CpuUsage>,
        congestion: (Option<String>, Option<String>),
    ) -> EndResult {
        let main = if layout.bidir {
            layout.is_client
        } else {
            streams.first().map(|s| s.local_sender).unwrap_or(true)
        };
        let dirs: &[(bool, bool)] = if layout.bidir {
            &[(main, false), (!main, true)]
        } else {
            &[(main, false)]
        };
        let sums = dirs
            .iter()
            .filter_map(|&(dir, reverse)| {
                let group: Vec<&EndStream> = streams.iter().filter(|s| s.local_sender == dir).collect();
                (!group.is_empty()).then(|| DirectionSum {
                    local_sender: dir,
                    reverse,
                    streams: group.len(),
                    sent: sum_sides(group.iter().filter_map(|s| s.sender.as_ref())),
                    received: sum_sides(group.iter().filter_map(|s| s.receiver.as_ref())),
                    udp: layout
                        .udp
                        .then(|| sum_udp(&group.iter().filter_map(|s| s.udp.as_ref()).collect::<Vec<_>>())),
                })
            })
            .collect();
        let (sender_congestion, receiver_congestion) = if layout.udp { (None, None) } else { congestion };
        EndResult {
            layout,
            streams,
            sums,
            cpu,
            remote_cpu,
            sender_congestion,
            receiver_congestion,
            diskfile: None,
        }
    }

    /// Adds `-F`'s report of the file at `path`, which the first stream sent or received.
    pub fn add_diskfile(&mut self, path: &std::path::Path) {
        let bytes = |s: &Option<Side>| s.as_ref().map(|x| x.bytes).unwrap_or(0);
        self.diskfile = self
            .streams
            .first()
            .map(|e| crate::diskfile::summary(path, e.local_sender, bytes(&e.sender), bytes(&e.receiver)));
    }

    /// Whether the report has a `Retr` column: TCP, and a sender that counted them.
    pub fn shows_retransmits(&self) -> bool {
        !self.layout.udp
            && self
                .streams
                .iter()
                .any(|s| s.sender.as_ref().and_then(|x| x.retransmits).is_some())
    }
}

/// Sides summed: bytes added, the longest end; retransmits only if every side counted them.
fn sum_sides<'a>(sides: impl Iterator<Item = &'a Side>) -> Option<Side> {
    let sides: Vec<&Side> = sides.collect();
    if sides.is_empty() {
        return None;
    }
    let end = sides.iter().map(|s| s.end).fold(0.0, f64::max);
    Some(Side {
        end,
        seconds: end,
        bytes: sides.iter().map(|s| s.bytes).sum(),
        retransmits: if sides.iter().all(|s| s.retransmits.is_some()) {
            Some(sides.iter().filter_map(|s| s.retransmits).sum())
        } else {
            None
        },
        extremes: None,
        pacing: None,
    })
}

fn sum_udp(us: &[&UdpEnd]) -> UdpEnd {
    UdpEnd {
        jitter_ms: us.iter().map(|u| u.jitter_ms).sum::<f64>() / us.len().max(1) as f64,
        lost: us.iter().map(|u| u.lost).sum(),
        packets: us.iter().map(|u| u.packets).sum(),
        out_of_order: us.iter().map(|u| u.out_of_order).sum(),
        duplicates: us.iter().map(|u| u.duplicates).sum(),
        suspicious: us.iter().filter_map(|u| u.suspicious).reduce(|a, b| a + b),
        sent_packets: us.iter().map(|u| u.sent_packets).sum(),
    }
}

/// One direction's samples of an interval, summed as iperf3 sums them: bytes, packets,
/// retransmits and UDP counts added, jitter averaged; the rest is the first stream's.
pub fn interval_sum(samples: &[&Sample]) -> Sample {
    let first = samples[0];
    let mut total = first.clone();
    total.bytes = samples.iter().map(|s| s.bytes).sum();
    total.packets = samples.iter().map(|s| s.packets).sum();
    if let Some(mut t) = first.tcp {
        t.retransmits = samples.iter().filter_map(|s| s.tcp.map(|t| t.retransmits)).sum();
        total.tcp = Some(t);
    }
    if let Some(mut u) = first.udp_rx {
        u.lost = samples.iter().filter_map(|s| s.udp_rx.map(|u| u.lost)).sum();
        u.packets = samples.iter().filter_map(|s| s.udp_rx.map(|u| u.packets)).sum();
        u.out_of_order = samples
            .iter()
            .filter_map(|s| s.udp_rx.map(|u| u.out_of_order))
            .sum();
        u.jitter_ms = samples
            .iter()
            .filter_map(|s| s.udp_rx.map(|u| u.jitter_ms))
            .sum::<f64>()
            / samples.len() as f64;
        total.udp_rx = Some(u);
    }
    total
}

/// ("sum" key, direction) of an interval's sums: the main direction first, then the
/// reverse one.
pub fn interval_directions(layout: Layout, samples: &[Sample]) -> Vec<(&'static str, bool)> {
    if layout.bidir {
        vec![
            ("sum", layout.is_client),
            ("sum_bidir_reverse", !layout.is_client),
        ]
    } else {
        vec![("sum", samples[0].stream.sender)]
    }
}

/// Facts printed at the start of a test.
#[derive(Debug, Clone, Default)]
pub struct StartInfo {
    pub udp: bool,
    pub num_streams: u32,
    pub blksize: u64,
    pub omit: u64,
    pub duration: u64,
    pub bytes: u64,
    pub blocks: u64,
    pub reverse: bool,
    pub bidir: bool,
    pub tos: u32,
    pub target_bitrate: u64,
    pub cookie: String,
    pub tcp_mss_default: u32,
    pub sock_bufsize: u64,
    pub sndbuf_actual: i32,
    pub rcvbuf_actual: i32,
    pub is_client: bool,
    pub title: Option<String>,
    pub extra_data: Option<String>,
}

impl StartInfo {
    /// What the parameters say; the client adds its socket facts.
    pub fn of(p: &Params, cookie: &Cookie, is_client: bool) -> StartInfo {
        StartInfo {
            udp: p.protocol == Protocol::Udp,
            num_streams: p.parallel,
            blksize: p.len,
            omit: p.omit,
            duration: p.time,
            bytes: p.bytes,
            blocks: p.blocks,
            reverse: p.reverse,
            bidir: p.bidirectional,
            tos: p.tos,
            target_bitrate: p.bandwidth,
            cookie: cookie.as_str().to_string(),
            is_client,
            ..Default::default()
        }
    }

    pub fn layout(&self) -> Layout {
        Layout {
            udp: self.udp,
            bidir: self.bidir,
            is_client: self.is_client,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_peers_loss_count_never_exceeds_what_was_sent() {
        // An iperf3 receiver that took a forged 2^32 - 1 for the sender's: 4 billion
        // "lost" of 2,600 sent. The report stays within 100 %; iperf3 counts no suspects.
        let stream = crate::engine::Stream::new(1, 4, true, "a".into(), "b".into());
        let local = Sample {
            stream,
            start: 0.0,
            end: 3.0,
            bytes: 2_600 * 1460,
            packets: 2_600,
            omitted: false,
            tcp: None,
            udp_rx: None,
        };
        let mut peer = StreamResult {
            id: 1,
            errors: 4_294_954_718,
            packets: 4_294_967_295,
            ..Default::default()
        };
        let u = EndStream::build(&local, None, Some(&peer), true, true)
            .udp
            .unwrap();
        assert_eq!((u.lost, u.packets, u.suspicious), (2_600, 2_600, None));
        assert_eq!(u.lost_percent(), 100.0);
        // A netrig receiver reports its suspects and an honest count.
        peer.errors = 3;
        peer.packets = 2_600;
        peer.netrig = Some(json!({"suspicious": 200}));
        let u = EndStream::build(&local, None, Some(&peer), true, true)
            .udp
            .unwrap();
        assert_eq!((u.lost, u.packets, u.suspicious), (3, 2_600, Some(200)));
        assert_eq!((within(-5, 10), within(12, 10), within(4, 0)), (0, 10, 0));
    }
}
