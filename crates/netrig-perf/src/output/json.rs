//! iperf3 3.12's JSON layout (`-J`, `--json-stream`): the objects for programs. Pure
//! functions of the typed figures ([`super::result`]); [`super::Output`] decides when
//! to emit them and assembles the whole document.

use serde_json::{json, Map, Value};

use super::result::{
    interval_directions, interval_sum, DirectionSum, EndResult, Layout, Side, StartInfo, UdpEnd,
};
use crate::extras::{self, UdpEndExtras, UdpIntervalExtras};
use crate::report::{rate, Sample};

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// The facts of `start` known when the streams are up (beside `connected` and
/// `connecting_to`, which come earlier): `now_secs` is the Unix time of the start.
pub fn start_json(info: &StartInfo, system_info: &str, now_secs: u64) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "version".into(),
        format!("netrig-perf {} (iperf 3.12 protocol)", env!("CARGO_PKG_VERSION")).into(),
    );
    m.insert("system_info".into(), system_info.into());
    m.insert(
        "timestamp".into(),
        json!({ "time": super::http_date(now_secs), "timesecs": now_secs }),
    );
    m.insert("cookie".into(), info.cookie.clone().into());
    if !info.udp {
        m.insert("tcp_mss_default".into(), info.tcp_mss_default.into());
    }
    m.insert("target_bitrate".into(), info.target_bitrate.into());
    m.insert("sock_bufsize".into(), info.sock_bufsize.into());
    m.insert("sndbuf_actual".into(), info.sndbuf_actual.into());
    m.insert("rcvbuf_actual".into(), info.rcvbuf_actual.into());
    m.insert(
        "test_start".into(),
        json!({
            "protocol": if info.udp { "UDP" } else { "TCP" },
            "num_streams": info.num_streams, "blksize": info.blksize, "omit": info.omit,
            "duration": info.duration, "bytes": info.bytes, "blocks": info.blocks,
            "reverse": info.reverse as i32, "tos": info.tos, "target_bitrate": info.target_bitrate,
            "bidir": info.bidir as i32,
        }),
    );
    if let Some(t) = &info.title {
        m.insert("title".into(), t.clone().into());
    }
    if let Some(t) = &info.extra_data {
        m.insert("extra_data".into(), t.clone().into());
    }
    m
}

/// One entry of `start.connected`.
pub fn connected_json(socket: i32, local: &std::net::SocketAddr, remote: &std::net::SocketAddr) -> Value {
    json!({
        "socket": socket, "local_host": local.ip().to_string(), "local_port": local.port(),
        "remote_host": remote.ip().to_string(), "remote_port": remote.port(),
    })
}

fn sample_json(s: &Sample, udp: bool) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("socket".into(), s.stream.socket.into());
    m.insert("start".into(), round6(s.start).into());
    m.insert("end".into(), round6(s.end).into());
    m.insert("seconds".into(), s.seconds().into());
    m.insert("bytes".into(), s.bytes.into());
    m.insert("bits_per_second".into(), s.bits_per_second().into());
    if let Some(t) = &s.tcp {
        m.insert("retransmits".into(), t.retransmits.into());
        m.insert("snd_cwnd".into(), t.snd_cwnd.into());
        m.insert("snd_wnd".into(), t.snd_wnd.into());
        m.insert("rtt".into(), t.rtt.into());
        m.insert("rttvar".into(), t.rttvar.into());
        m.insert("pmtu".into(), t.pmtu.into());
    }
    if udp && s.stream.sender {
        m.insert("packets".into(), s.packets.into());
    }
    if let Some(u) = &s.udp_rx {
        m.insert("jitter_ms".into(), u.jitter_ms.into());
        m.insert("lost_packets".into(), u.lost.into());
        m.insert("packets".into(), u.packets.into());
        m.insert("lost_percent".into(), u.lost_percent().into());
        extras::insert_into(
            &mut m,
            &UdpIntervalExtras {
                out_of_order: u.out_of_order,
                duplicates: u.duplicates,
                suspicious: u.suspicious,
            },
        );
    }
    m.insert("omitted".into(), s.omitted.into());
    m.insert("sender".into(), s.stream.sender.into());
    m
}

/// One entry of `intervals`: every stream's sample, and each direction's sum.
pub fn interval_json(layout: Layout, samples: &[Sample]) -> Value {
    let mut doc = Map::new();
    doc.insert(
        "streams".into(),
        samples
            .iter()
            .map(|s| Value::Object(sample_json(s, layout.udp)))
            .collect(),
    );
    for (key, sender) in interval_directions(layout, samples) {
        let group: Vec<&Sample> = samples.iter().filter(|s| s.stream.sender == sender).collect();
        if group.is_empty() {
            continue;
        }
        let mut m = sample_json(&interval_sum(&group), layout.udp);
        // A sum has no socket, and no per-socket TCP or netrig figures.
        for k in [
            "socket",
            "snd_cwnd",
            "snd_wnd",
            "rtt",
            "rttvar",
            "pmtu",
            "out_of_order",
            "duplicates",
            "suspicious",
        ] {
            m.remove(k);
        }
        doc.insert(key.into(), Value::Object(m));
    }
    Value::Object(doc)
}

/// A side's object: per stream (`socket` given) or a sum; UDP figures when given; the
/// sender side's retransmits, extremes and pacing.
fn side_json(
    sender_flag: bool,
    side: &Side,
    socket: Option<i32>,
    udp: Option<&UdpEnd>,
    is_sender_side: bool,
) -> Value {
    let mut m = Map::new();
    if let Some(s) = socket {
        m.insert("socket".into(), s.into());
    }
    m.insert("start".into(), 0.into());
    m.insert("end".into(), round6(side.end).into());
    m.insert("seconds".into(), round6(side.seconds).into());
    m.insert("bytes".into(), side.bytes.into());
    m.insert("bits_per_second".into(), rate(side.bytes, side.end).into());
    if let Some(u) = udp {
        m.insert("jitter_ms".into(), u.jitter_ms.into());
        m.insert("lost_packets".into(), u.lost.into());
        m.insert("packets".into(), u.packets.into());
        m.insert("lost_percent".into(), u.lost_percent().into());
        if socket.is_some() {
            m.insert("out_of_order".into(), u.out_of_order.into());
        }
    } else if is_sender_side {
        if let Some(r) = side.retransmits {
            m.insert("retransmits".into(), r.into());
        }
        if let Some(x) = &side.extremes {
            m.insert("max_snd_cwnd".into(), x.max_snd_cwnd.into());
            m.insert("max_snd_wnd".into(), x.max_snd_wnd.into());
            m.insert("max_rtt".into(), x.max_rtt.into());
            m.insert("min_rtt".into(), x.min_rtt.into());
            m.insert("mean_rtt".into(), x.mean_rtt().into());
        }
    }
    if is_sender_side {
        if let Some(p) = &side.pacing {
            m.insert("pacing".into(), extras::to_value(p));
        }
    }
    m.insert("sender".into(), sender_flag.into());
    Value::Object(m)
}

/// A direction's `sum_sent`, `sum_received` (and for UDP's main direction, `sum`).
fn sum_json(d: &DirectionSum, end: &mut Map<String, Value>) {
    let suffix = if d.reverse { "_bidir_reverse" } else { "" };
    let dir = d.local_sender;
    if let Some(u) = &d.udp {
        if let Some(s) = &d.sent {
            let sent = UdpEnd {
                jitter_ms: 0.0,
                lost: 0,
                packets: u.sent_packets,
                ..u.clone()
            };
            // iperf3 marks a UDP sum_sent a sender's, and sum_received not, in either
            // direction.
            end.insert(
                format!("sum_sent{suffix}"),
                side_json(true, s, None, Some(&sent), true),
            );
        }
        if let Some(r) = &d.received {
            end.insert(
                format!("sum_received{suffix}"),
                side_json(false, r, None, Some(u), false),
            );
        }
        // iperf3's "sum" (and `--bidir`'s "sum_bidir_reverse"): what was sent, with the
        // receiver's loss and jitter.
        // It ends when the receiver's figures do, as iperf3's does.
        if let Some(side) = d.sent.as_ref().or(d.received.as_ref()) {
            let mut sum = side_json(dir, side, None, Some(u), false);
            if let Some(r) = &d.received {
                sum["end"] = round6(r.end).into();
                sum["seconds"] = round6(r.end).into();
            }
            end.insert(format!("sum{suffix}"), sum);
        }
    } else {
        if let Some(s) = &d.sent {
            end.insert(format!("sum_sent{suffix}"), side_json(dir, s, None, None, true));
        }
        if let Some(r) = &d.received {
            end.insert(
                format!("sum_received{suffix}"),
                side_json(dir, r, None, None, false),
            );
        }
    }
}

/// The `end` object in iperf3 3.12's layout: `streams`, the sums, CPU, congestion.
pub fn render_json(r: &EndResult) -> Value {
    let mut end = Map::new();
    let mut streams = vec![];
    for s in &r.streams {
        let mut obj = Map::new();
        if let Some(u) = &s.udp {
            let main = if s.local_sender {
                s.sender.as_ref()
            } else {
                s.receiver.as_ref()
            };
            if let Some(side) = main {
                let mut udp = side_json(s.local_sender, side, Some(s.socket), Some(u), false);
                if let Value::Object(m) = &mut udp {
                    // netrig's: the receiver's suspicious datagrams, the sender's pacing.
                    let ours = UdpEndExtras {
                        suspicious: u.suspicious,
                        pacing: s.sender.as_ref().and_then(|x| x.pacing.clone()),
                    };
                    extras::insert_into(m, &ours);
                }
                obj.insert("udp".into(), udp);
            }
        } else {
            if let Some(snd) = &s.sender {
                obj.insert(
                    "sender".into(),
                    side_json(s.local_sender, snd, Some(s.socket), None, true),
                );
            }
            if let Some(rcv) = &s.receiver {
                obj.insert(
                    "receiver".into(),
                    side_json(s.local_sender, rcv, Some(s.socket), None, false),
                );
            }
        }
        streams.push(Value::Object(obj));
    }
    if let (Some(f), Some(Value::Object(first))) = (&r.diskfile, streams.first_mut()) {
        first.insert(
            "diskfile".into(),
            json!({
                "sent": f.sent, "received": f.received, "size": f.size,
                "percent_sent": f.percent(f.sent), "percent_received": f.percent(f.received),
                "filename": f.filename,
            }),
        );
    }
    end.insert("streams".into(), Value::Array(streams));
    for d in &r.sums {
        sum_json(d, &mut end);
    }
    let mut cpu = json!({ "host_total": r.cpu.total, "host_user": r.cpu.user, "host_system": r.cpu.system });
    if let Some(c) = r.remote_cpu {
        cpu["remote_total"] = c.total.into();
        cpu["remote_user"] = c.user.into();
        cpu["remote_system"] = c.system.into();
    }
    end.insert("cpu_utilization_percent".into(), cpu);
    if let Some(c) = &r.sender_congestion {
        end.insert("sender_tcp_congestion".into(), c.clone().into());
    }
    if let Some(c) = &r.receiver_congestion {
        end.insert("receiver_tcp_congestion".into(), c.clone().into());
    }
    Value::Object(end)
}
