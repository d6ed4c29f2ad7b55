//! Snapshot tests of netrig's extras: each shape is built here from the figures the
//! emitters build it from, serialised as a `-J` document prints it (pretty, keys
//! sorted) and compared byte for byte with its fixture in `tests/fixtures/perf-json/`,
//! then read back from the fixture into the same value. netrig's Python parser is
//! tested against the same files (tests/unit/test_perfjson.py), so a change of shape
//! fails here until the fixture changes, and there until Python reads the new one.
//! `NETRIG_BLESS=1 cargo test -p netrig-perf extras_snapshots` rewrites the fixtures.

use std::path::PathBuf;

use netrig_core::pacing::{Episode, PacingReport};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use serde_json::Map;

use crate::extras::*;
use crate::latency::{Record, Window};
use crate::sys::TcpInfo;

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/perf-json")
        .join(name)
}

/// `v` printed as a `-J` document prints it is the fixture `name`, and the fixture
/// reads back as `v`.
fn snapshot<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(name: &str, v: &T) {
    let path = fixture_path(name);
    let text = serde_json::to_string_pretty(&to_value(v)).unwrap() + "\n";
    if std::env::var_os("NETRIG_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (NETRIG_BLESS=1 writes it)", path.display()));
    assert_eq!(
        text, want,
        "the shape of {name} changed: if on purpose, raise SCHEMA when a key is renamed, \
         removed or changes type, rewrite the fixture (NETRIG_BLESS=1) and update \
         python/netrig/exp/kinds/perfjson.py"
    );
    let back: T = serde_json::from_str(&want).unwrap();
    assert_eq!(&back, v, "{name} does not read back as the value written");
}

fn pacing() -> Pacing {
    Pacing::from(&PacingReport {
        rate_bps: 10_000_000,
        catch_up_pct: 200,
        tolerance_ns: 1_000_000,
        episodes: 2,
        behind_ns: 312_345_678,
        max_lag_ns: 150_123_456,
        max_lag_bytes: 187_654,
        forgiven_bytes: 5_000,
        short_at_end_bytes: 20_000,
        short_since_ns: Some(2_900_000_000),
        worst: vec![
            Episode {
                start_ns: 1_000_000_000,
                lasted_ns: 200_000_000,
                max_lag_ns: 150_123_456,
            },
            Episode {
                start_ns: 2_900_000_000,
                lasted_ns: 100_000_000,
                max_lag_ns: 40_000_000,
            },
        ],
    })
}

fn tcp_info() -> Vec<TcpInfoSample> {
    let i = TcpInfo {
        snd_mss: 1448,
        snd_cwnd: 10,
        snd_ssthresh: 7,
        rtt_us: 1_250,
        rttvar_us: 300,
        min_rtt_us: 1_020,
        total_retrans: 3,
        lost: 1,
        unacked: 9,
        pacing_rate: 2_500_000,
        delivery_rate: 1_200_000,
        snd_wnd: 65_535,
        ..Default::default()
    };
    // Before the first loss the kernel's ssthresh is "infinite": null.
    let fresh = TcpInfo {
        snd_ssthresh: 0x7fff_ffff,
        ..i
    };
    vec![
        crate::tcp_info::sample(5, 0.1, true, 14_480, &fresh),
        crate::tcp_info::sample(5, 0.2000004, true, 144_800, &i),
    ]
}

fn probe_records() -> Vec<Record> {
    let rec = |seq: u64, t: f64, rtt: Option<f64>| Record {
        seq,
        t,
        sent_ns: 0,
        rtt_ms: rtt,
        send_ms: rtt.map(|x| x * 0.4),
        recv_ms: rtt.map(|x| x * 0.6),
    };
    vec![
        rec(1, 0.0, Some(1.5)),
        rec(2, 0.05, None),
        rec(3, 0.1, Some(2.5)),
        rec(4, 0.15, Some(0.5)),
    ]
}

#[test]
fn the_netrig_object_carries_the_schema_and_the_tcp_info_samples() {
    assert_eq!(SCHEMA, 1);
    snapshot(
        "netrig.json",
        &NetrigDoc {
            schema: SCHEMA,
            tcp_info: tcp_info(),
        },
    );
    // Without samples, the schema alone.
    snapshot("netrig-bare.json", &NetrigDoc::default());
}

#[test]
fn a_tcp_info_sample() {
    snapshot("tcp-info.json", &tcp_info()[1]);
}

#[test]
fn a_paced_senders_account() {
    snapshot("pacing.json", &pacing());
}

#[test]
fn a_probe_tests_interval_and_end() {
    let records = probe_records();
    let w = Window::of(&records, 0.0, 0.1).extras();
    snapshot("probe-interval.json", &Probe { probe: w });
    let t = Window::of(&records, 0.0, f64::MAX).extras();
    let end = ProbeEnd {
        start: t.start,
        end: 1.0,
        sent: t.sent,
        received: t.received,
        lost: t.lost,
        loss_percent: t.loss_percent,
        rtt_ms: t.rtt_ms,
        send_delay_ms: t.send_delay_ms,
        receive_delay_ms: t.receive_delay_ms,
        duplicates: 1,
        interval_ms: 50.0,
        size: 64,
        samples: records
            .iter()
            .map(|r| ProbeSample(r.seq, r.t, r.rtt_ms, r.send_ms, r.recv_ms))
            .collect(),
        samples_columns: PROBE_COLUMNS.iter().map(|c| c.to_string()).collect(),
        start_unix_ns: 1_795_251_224_123_456_789,
    };
    snapshot("probe-end.json", &Probe { probe: end });
}

#[test]
fn a_request_response_tests_interval_and_end() {
    let times = netrig_core::stats::Summary::of(&[0.25, 0.5, 1.25]);
    let w = RrWindow {
        start: 0.5,
        end: 1.0,
        transactions: 3,
        failed: 1,
        time_ms: (&times).into(),
    };
    snapshot("rr-interval.json", &Rr { rr: w });
    let end = RrEnd {
        seconds: 1.0,
        transactions: 3,
        failed: 1,
        transactions_per_second: 3.0,
        response_bytes: 20_000,
        new_connection: true,
        time_ms: (&times).into(),
        samples: vec![
            RrSample(0.0, Some(0.25)),
            RrSample(0.2, Some(0.5)),
            RrSample(0.4, None),
            RrSample(0.6, Some(1.25)),
        ],
        samples_columns: RR_COLUMNS.iter().map(|c| c.to_string()).collect(),
    };
    snapshot("rr-end.json", &Rr { rr: end });
}

#[test]
fn a_udp_receivers_counts() {
    snapshot(
        "udp-interval-extras.json",
        &UdpIntervalExtras {
            out_of_order: 2,
            duplicates: 1,
            suspicious: 3,
        },
    );
    snapshot(
        "udp-end-extras.json",
        &UdpEndExtras {
            suspicious: Some(3),
            pacing: Some(pacing()),
        },
    );
    // An iperf3 receiver counts none, an unpaced sender has no account: no keys.
    assert_eq!(to_value(&UdpEndExtras::default()), serde_json::json!({}));
}

#[test]
fn every_document_says_its_schema_where_iperf3_has_no_key() {
    use crate::config::Format;
    let out = super::Output::new(Format::Json, super::Sink::Stdout, false);
    let doc = out.document(None, None, Map::new());
    assert_eq!(doc["netrig"], serde_json::json!({ "schema": SCHEMA }));
    let mut out = super::Output::new(Format::Json, super::Sink::Stdout, false);
    for s in tcp_info() {
        out.tcp_info(s);
    }
    let doc = out.document(None, None, Map::new());
    let back: NetrigDoc = serde_json::from_value(doc["netrig"].clone()).unwrap();
    assert_eq!(back.tcp_info, tcp_info());
}

#[test]
fn a_peers_pacing_it_could_not_have_written_is_refused() {
    assert!(serde_json::from_value::<Pacing>(to_value(&pacing())).is_ok());
    assert!(serde_json::from_value::<Pacing>(serde_json::json!({"target_bps": "fast"})).is_err());
}

/// Every extra of a document netrig-perf printed before these types existed reads into
/// its type and writes back as the same JSON (ints stay ints, floats floats): the types
/// changed nothing but the added `netrig.schema`. Returns how many extras it checked.
fn extras_round_trip(doc: &Value, name: &str) -> usize {
    fn same<T: Serialize + DeserializeOwned>(v: &Value, what: &str) -> usize {
        let t: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(&to_value(&t), v, "{what} does not write back as it was printed");
        1
    }
    fn pick(v: &Value, keys: &[&str]) -> Value {
        let m: Map<String, Value> = keys
            .iter()
            .filter_map(|k| v.get(*k).map(|x| (k.to_string(), x.clone())))
            .collect();
        Value::Object(m)
    }
    let empty = vec![];
    let mut n = 0;
    for (i, s) in doc["netrig"]["tcp_info"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .enumerate()
    {
        n += same::<TcpInfoSample>(s, &format!("{name}: netrig.tcp_info[{i}]"));
    }
    for (i, iv) in doc["intervals"].as_array().unwrap_or(&empty).iter().enumerate() {
        if iv.get("probe").is_some() {
            n += same::<Probe<ProbeWindow>>(iv, &format!("{name}: intervals[{i}]"));
        }
        if iv.get("rr").is_some() {
            n += same::<Rr<RrWindow>>(iv, &format!("{name}: intervals[{i}]"));
        }
        for s in iv["streams"].as_array().unwrap_or(&empty) {
            if s.get("suspicious").is_some() {
                let keys = ["out_of_order", "duplicates", "suspicious"];
                n += same::<UdpIntervalExtras>(&pick(s, &keys), &format!("{name}: intervals[{i}].streams[]"));
            }
        }
    }
    let end = &doc["end"];
    if end.get("probe").is_some() {
        n += same::<Probe<ProbeEnd>>(&pick(end, &["probe"]), &format!("{name}: end.probe"));
    }
    if end.get("rr").is_some() {
        n += same::<Rr<RrEnd>>(&pick(end, &["rr"]), &format!("{name}: end.rr"));
    }
    for s in end["streams"].as_array().unwrap_or(&empty) {
        if let Some(p) = s.get("sender").and_then(|x| x.get("pacing")) {
            n += same::<Pacing>(p, &format!("{name}: end.streams[].sender.pacing"));
        }
        if let Some(u) = s.get("udp") {
            let v = pick(u, &["suspicious", "pacing"]);
            n += same::<UdpEndExtras>(&v, &format!("{name}: end.streams[].udp"));
        }
    }
    if let Some(theirs) = doc.get("server_output_json") {
        n += extras_round_trip(theirs, &format!("{name}: server_output_json"));
    }
    n
}

#[test]
fn documents_printed_before_the_types_read_and_write_back_unchanged() {
    // Printed by netrig-perf before this module (main at d4b81ae), as `-c 127.0.0.1 -J
    // -t 1 -i 0.5` against `-s -J`: tcp `-b 20000000 --tcp-info-interval 100
    // --get-server-output`, udp `-u -b 5000000 -l 1200 --get-server-output`, probe
    // `--probe --probe-interval 50`, rr `--rr 20000 --rr-interval 200`.
    let dir = fixture_path("before");
    let mut files: Vec<PathBuf> = ["tcp.json", "udp.json", "probe.json", "rr.json"]
        .iter()
        .map(|f| dir.join(f))
        .collect();
    // More of them, e.g. a run of the old binary: NETRIG_PERF_JSON_CAPTURES=DIR.
    if let Some(more) = std::env::var_os("NETRIG_PERF_JSON_CAPTURES") {
        for e in std::fs::read_dir(more).unwrap() {
            files.push(e.unwrap().path());
        }
    }
    let mut n = 0;
    for f in &files {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let k = extras_round_trip(&doc, &f.display().to_string());
        assert!(k > 0, "{}: no extra found", f.display());
        n += k;
    }
    eprintln!(
        "{} documents, {n} extras read and written back unchanged",
        files.len()
    );
}
