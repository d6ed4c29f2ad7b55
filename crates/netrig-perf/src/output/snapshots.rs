//! Snapshot tests of both renderers against iperf3 3.12's own output, captured on
//! loopback (`tests/fixtures/iperf3-3.12/`, see its README): each case's `-J` document
//! is read into the typed figures, rendered by [`text`] and [`json`], and compared with
//! what iperf3 printed. Text: every line's shape, numbers masked (a number and the
//! spaces before it become as many `#`, so columns and widths still count; a unit's
//! K/M/G prefix becomes `U`), labels and units as printed. JSON: the same keys at every
//! level of `start`, `intervals` and `end` (netrig's few documented extras aside), and
//! equal values where the figures are the fixture's own.

use std::collections::BTreeSet;

use netrig_core::units::UnitFormat;
use serde_json::{Map, Value};

use super::json;
use super::result::{EndResult, EndStream, Layout, Side, StartInfo, UdpEnd};
use super::text::{self, SEPARATOR};
use crate::report::{CpuUsage, Sample, TcpExtremes, TcpSample, UdpRxSample};

/// Keys netrig adds to iperf3's layout, on purpose (README: "JSON output").
const NETRIG_EXTRAS: &[&str] = &[
    // test_start says whether the test is --bidir (iperf3 3.12 leaves it out).
    "start/test_start/bidir",
    // A UDP receiver's interval counts reordered, duplicate and suspicious datagrams.
    "intervals[]/streams[]/out_of_order",
    "intervals[]/streams[]/duplicates",
    "intervals[]/streams[]/suspicious",
];

struct Case {
    name: &'static str,
    text: &'static str,
    json: &'static str,
}

macro_rules! case {
    ($name:literal) => {
        Case {
            name: $name,
            text: include_str!(concat!("../../tests/fixtures/iperf3-3.12/", $name, ".txt")),
            json: include_str!(concat!("../../tests/fixtures/iperf3-3.12/", $name, ".json")),
        }
    };
}

fn cases() -> Vec<Case> {
    vec![
        case!("tcp"),
        case!("tcp-R"),
        case!("tcp-P2"),
        case!("udp"),
        case!("udp-P2"),
        case!("bidir"),
        case!("udp-bidir"),
    ]
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("no number {k} in {v}"))
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("no count {k} in {v}"))
}

fn layout_of(doc: &Value) -> Layout {
    Layout {
        udp: doc["start"]["test_start"]["protocol"] == "UDP",
        bidir: doc["end"].get("sum_sent_bidir_reverse").is_some(),
        is_client: true,
    }
}

/// An iperf3 interval's streams as the samples netrig's sampler would have taken.
fn samples_of(interval: &Value) -> Vec<Sample> {
    let streams = interval["streams"].as_array().unwrap();
    streams
        .iter()
        .map(|s| {
            let sender = s["sender"].as_bool().unwrap();
            let socket = u(s, "socket") as i32;
            Sample {
                stream: crate::engine::Stream::new(socket as i64, socket, sender, "l".into(), "r".into()),
                start: f(s, "start"),
                end: f(s, "end"),
                bytes: u(s, "bytes"),
                packets: s["packets"].as_u64().filter(|_| sender).unwrap_or(0),
                omitted: s["omitted"].as_bool().unwrap(),
                tcp: s.get("snd_cwnd").map(|_| TcpSample {
                    retransmits: u(s, "retransmits"),
                    snd_cwnd: u(s, "snd_cwnd"),
                    snd_wnd: u(s, "snd_wnd"),
                    rtt: u(s, "rtt") as u32,
                    rttvar: u(s, "rttvar") as u32,
                    pmtu: u(s, "pmtu") as u32,
                }),
                udp_rx: s.get("jitter_ms").map(|_| UdpRxSample {
                    jitter_ms: f(s, "jitter_ms"),
                    lost: u(s, "lost_packets"),
                    packets: u(s, "packets"),
                    ..Default::default()
                }),
            }
        })
        .collect()
}

fn side_of(v: &Value) -> Side {
    Side {
        end: f(v, "end"),
        seconds: f(v, "seconds"),
        bytes: u(v, "bytes"),
        retransmits: v.get("retransmits").and_then(Value::as_i64),
        extremes: TcpExtremes::from_peer(v),
        pacing: None,
    }
}

/// iperf3's `end` as netrig's typed result.
fn end_of(doc: &Value) -> EndResult {
    let layout = layout_of(doc);
    let end = &doc["end"];
    let streams = end["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| match s.get("udp") {
            Some(x) => {
                // iperf3's UDP stream object is the local side's; the peer's side
                // carries its bytes, ending when its direction's sum does.
                let local_sender = x["sender"].as_bool().unwrap();
                let reverse = layout.bidir && local_sender != layout.is_client;
                let sum = |k: &str| {
                    &end[if reverse {
                        format!("{k}_bidir_reverse")
                    } else {
                        k.to_string()
                    }]
                };
                let local = side_of(x);
                let (sender, receiver) = if local_sender {
                    let peer_end = f(sum("sum_received"), "end");
                    (
                        local.clone(),
                        Side {
                            end: peer_end,
                            ..local
                        },
                    )
                } else {
                    let peer_end = f(sum("sum_sent"), "end");
                    (
                        Side {
                            end: peer_end,
                            ..local.clone()
                        },
                        local,
                    )
                };
                EndStream {
                    socket: u(x, "socket") as i32,
                    local_sender,
                    sender: Some(sender),
                    receiver: Some(receiver),
                    udp: Some(UdpEnd {
                        jitter_ms: f(x, "jitter_ms"),
                        lost: u(x, "lost_packets") as i64,
                        packets: u(x, "packets") as i64,
                        out_of_order: u(x, "out_of_order") as i64,
                        duplicates: 0,
                        suspicious: None,
                        sent_packets: u(x, "packets") as i64,
                    }),
                }
            }
            None => EndStream {
                socket: u(&s["sender"], "socket") as i32,
                local_sender: s["sender"]["sender"].as_bool().unwrap(),
                sender: Some(side_of(&s["sender"])),
                receiver: Some(side_of(&s["receiver"])),
                udp: None,
            },
        })
        .collect();
    let cpu = &end["cpu_utilization_percent"];
    let congestion = |k: &str| end.get(k).and_then(Value::as_str).map(String::from);
    EndResult::build(
        layout,
        streams,
        CpuUsage {
            total: f(cpu, "host_total"),
            user: f(cpu, "host_user"),
            system: f(cpu, "host_system"),
        },
        Some(CpuUsage {
            total: f(cpu, "remote_total"),
            user: f(cpu, "remote_user"),
            system: f(cpu, "remote_system"),
        }),
        (
            congestion("sender_tcp_congestion"),
            congestion("receiver_tcp_congestion"),
        ),
    )
}

/// The report's lines as netrig prints them: intervals, separator, summary.
fn netrig_text(doc: &Value) -> Vec<String> {
    let layout = layout_of(doc);
    let units = UnitFormat::default();
    let intervals: Vec<Vec<Sample>> = doc["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(samples_of)
        .collect();
    let mut lines = vec![text::interval_header(layout, &intervals[0])];
    for samples in &intervals {
        lines.extend(text::interval_lines(layout, units, samples));
    }
    if lines.last().map(String::as_str) != Some(SEPARATOR) {
        lines.push(SEPARATOR.into());
    }
    lines.extend(text::render_text(&end_of(doc), units).lines().map(String::from));
    lines
}

/// iperf3's report lines: from the first column header to the last figure.
fn iperf3_text(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let first = lines
        .iter()
        .position(|l| l.starts_with("[ ID]"))
        .expect("a column header");
    let last = lines.iter().rposition(|l| l.starts_with('[')).unwrap();
    lines[first..=last].iter().map(|l| l.to_string()).collect()
}

/// A line's shape: each number, with the spaces before it, as that many `#`; unit
/// prefixes as `U`.
fn shape(line: &str) -> String {
    let c: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < c.len() {
        let mut j = i;
        while j < c.len() && c[j] == ' ' {
            j += 1;
        }
        if j < c.len() && c[j].is_ascii_digit() {
            while j < c.len() && (c[j].is_ascii_digit() || c[j] == '.') {
                j += 1;
            }
            out.extend(std::iter::repeat('#').take(j - i));
            i = j;
            continue;
        }
        let rest: String = c[i..].iter().collect();
        let prefix = matches!(c[i], 'K' | 'M' | 'G' | 'T');
        if prefix && (rest[1..].starts_with("Bytes") || rest[1..].starts_with("bits")) {
            out.push('U');
        } else {
            out.push(c[i]);
        }
        i += 1;
    }
    out
}

#[test]
fn text_has_iperf3s_layout() {
    for case in cases() {
        let doc: Value = serde_json::from_str(case.json).unwrap();
        let ours: Vec<String> = netrig_text(&doc).iter().map(|l| shape(l)).collect();
        let theirs: Vec<String> = iperf3_text(case.text).iter().map(|l| shape(l)).collect();
        for (n, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(a, b, "{}: report line {} differs from iperf3's", case.name, n + 1);
        }
        assert_eq!(
            ours.len(),
            theirs.len(),
            "{}: lines {ours:#?} vs iperf3's {theirs:#?}",
            case.name
        );
    }
}

/// Every key path under `v` ("a/b", "a[]/c" through arrays).
fn paths(v: &Value, at: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}/{k}")
                };
                out.insert(p.clone());
                paths(x, &p, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| paths(x, &format!("{at}[]"), out)),
        _ => {}
    }
}

fn key_paths(v: &Value, at: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    paths(v, at, &mut out);
    out
}

/// The `start` object netrig builds for the same test.
fn netrig_start(doc: &Value) -> Value {
    let s = &doc["start"];
    let t = &s["test_start"];
    let info = StartInfo {
        udp: t["protocol"] == "UDP",
        num_streams: u(t, "num_streams") as u32,
        blksize: u(t, "blksize"),
        duration: u(t, "duration"),
        reverse: u(t, "reverse") == 1,
        bidir: layout_of(doc).bidir,
        target_bitrate: u(t, "target_bitrate"),
        cookie: s["cookie"].as_str().unwrap().into(),
        tcp_mss_default: s["tcp_mss_default"].as_u64().unwrap_or(0) as u32,
        is_client: true,
        ..Default::default()
    };
    let mut m = Map::new();
    m.insert("connected".into(), s["connected"].clone());
    m.insert("connecting_to".into(), s["connecting_to"].clone());
    m.extend(json::start_json(&info, "Linux", u(&s["timestamp"], "timesecs")));
    Value::Object(m)
}

#[test]
fn json_has_iperf3s_keys_at_every_level() {
    let extras: BTreeSet<String> = NETRIG_EXTRAS.iter().map(|s| s.to_string()).collect();
    for case in cases() {
        let doc: Value = serde_json::from_str(case.json).unwrap();
        let layout = layout_of(&doc);
        let intervals: Vec<Value> = doc["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| json::interval_json(layout, &samples_of(i)))
            .collect();
        for (what, ours, theirs) in [
            ("start", netrig_start(&doc), doc["start"].clone()),
            ("intervals", Value::Array(intervals), doc["intervals"].clone()),
            ("end", json::render_json(&end_of(&doc)), doc["end"].clone()),
        ] {
            let ours = key_paths(&ours, what);
            let theirs = key_paths(&theirs, what);
            let missing: Vec<_> = theirs.difference(&ours).collect();
            let added: Vec<_> = ours
                .difference(&theirs)
                .filter(|p| !extras.contains(*p))
                .collect();
            assert!(
                missing.is_empty() && added.is_empty(),
                "{}: {what}: netrig lacks {missing:?}, adds {added:?}",
                case.name
            );
        }
    }
}

/// Compares the leaves of two documents at the same paths, for the keys given.
fn same_values(ours: &Value, theirs: &Value, at: &str, keys: &[&str], case: &str) {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, x) in b {
                let Some(y) = a.get(k) else { continue };
                let p = format!("{at}/{k}");
                if keys.contains(&k.as_str()) && !x.is_object() {
                    match (x.as_f64(), y.as_f64()) {
                        (Some(t), Some(o)) => {
                            assert!(
                                (t - o).abs() <= 1e-6 * t.abs().max(1.0),
                                "{case}: {p}: iperf3 {t}, netrig {o}"
                            )
                        }
                        _ => assert_eq!(x, y, "{case}: {p}"),
                    }
                } else {
                    same_values(y, x, &p, keys, case);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{case}: {at}: lengths");
            for (i, (y, x)) in a.iter().zip(b).enumerate() {
                same_values(y, x, &format!("{at}[{i}]"), keys, case);
            }
        }
        _ => {}
    }
}

#[test]
fn json_end_has_iperf3s_values_for_the_same_figures() {
    let keys = [
        "socket",
        "start",
        "end",
        "seconds",
        "bytes",
        "bits_per_second",
        "retransmits",
        "max_snd_cwnd",
        "max_rtt",
        "min_rtt",
        "mean_rtt",
        "packets",
        "lost_packets",
        "lost_percent",
        "out_of_order",
        "sender",
        "host_total",
        "remote_system",
        "sender_tcp_congestion",
    ];
    for case in cases() {
        let doc: Value = serde_json::from_str(case.json).unwrap();
        let layout = layout_of(&doc);
        // A UDP stream object holds one side's times; the fixture cannot say the peer's,
        // so for UDP the time-derived figures are left out.
        let keys: Vec<&str> = keys
            .into_iter()
            .filter(|k| !layout.udp || !["end", "seconds", "bits_per_second"].contains(k))
            .collect();
        same_values(
            &json::render_json(&end_of(&doc)),
            &doc["end"],
            "end",
            &keys,
            case.name,
        );
        let first = &doc["intervals"][0];
        let ours = json::interval_json(layout, &samples_of(first));
        // (netrig samples every stream at one instant, so a sum's end is not compared.)
        let keys = [
            "socket",
            "start",
            "bytes",
            "packets",
            "lost_packets",
            "retransmits",
            "sender",
        ];
        same_values(&ours, first, "intervals[0]", &keys, case.name);
    }
}

#[test]
fn the_shape_masks_numbers_but_not_columns_or_labels() {
    let a = "[  5]   0.00-1.00   sec  3.89 GBytes  33.4 Gbits/sec   39             sender";
    let b = "[  7]   0.00-1.00   sec   467 MBytes  3.92 Gbits/sec    2             sender";
    assert_eq!(shape(a), shape(b));
    assert_ne!(shape(a), shape(&a.replace("  sender", " sender")));
    assert_ne!(shape(a), shape(&a.replace("sec  3.89", "sec 3.89")));
    assert_ne!(shape(a), shape(&a.replace("sender", "receiver")));
    assert_ne!(shape(a), shape(&a.replace("Bytes", "bytes")));
    // A left-aligned field keeps its width: "1.00  " and "10.00 " are different shapes.
    assert_ne!(shape(a), shape(&a.replace("-1.00  ", "-10.00 ")));
}
