//! The report's numbers on frames built here, each checked against a value worked out by
//! hand in the comments (times in ms from the first frame).

use super::dist::{Dist, EXACT_CAP, RELATIVE_ERROR};
use super::losses::{LossTimes, FINE_BINS};
use super::numbers::{DataSpan, ZeroWindow};
use super::*;
use crate::decode::{Addr, FIN, RST};
use crate::tcp::Analyzer;
use serde_json::json;

const MS: i64 = 1_000_000;

/// What the report writes for `x`.
fn v<T: Serialize>(x: T) -> Value {
    serde_json::to_value(x).unwrap()
}

fn v4(ip: [u8; 4]) -> Addr {
    let mut x = [0u8; 16];
    x[10] = 0xFF;
    x[11] = 0xFF;
    x[12..].copy_from_slice(&ip);
    x
}

/// A conversation between C=10.0.0.1:40000 (a, it sends first) and S=10.0.0.2:80,
/// analysed and collected frame by frame as lib.rs does.
struct Sim {
    an: Analyzer,
    col: Collector,
    frame: u64,
}

impl Sim {
    fn new() -> Sim {
        Sim {
            an: Analyzer::new(),
            col: Collector::new(Options {
                frames: false,
                series_interval_ns: None,
            }),
            frame: 0,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn pkt(&mut self, t_ms: i64, from_c: bool, seq: u32, ack: u32, flags: u16, win: u16, len: u32) -> u32 {
        self.frame += 1;
        let (c, s) = ((v4([10, 0, 0, 1]), 40000), (v4([10, 0, 0, 2]), 80));
        let ((src, sport), (dst, dport)) = if from_c { (c, s) } else { (s, c) };
        let h = TcpHeader {
            src,
            dst,
            sport,
            dport,
            seq,
            ack,
            flags,
            win,
            hlen: 20,
            reported_len: 20 + len,
            wscale: None,
            have_seglen: true,
            shown: true,
        };
        let now = t_ms * MS;
        self.col.set_origin(now);
        let r = self.an.packet(self.frame, now as i128, &h);
        let st = &self.an.streams[r.stream as usize];
        self.col.add(self.frame, now, &h, &r, st).unwrap();
        r.flags
    }

    fn finish(self) -> (Vec<Value>, Value) {
        let (streams, totals) = self.col.finish(&self.an.streams);
        (streams.iter().map(v).collect(), totals)
    }
}

/// A transfer of 4000 bytes in 4 segments from C; S's window closes for 100 ms and
/// again at the end; the third segment is resent after an RTO.
fn transfer() -> Sim {
    let mut s = Sim::new();
    s.pkt(0, true, 1000, 0, SYN, 65535, 0); // 1
    s.pkt(10, false, 5000, 1001, SYN | ACK, 65535, 0); // 2: acks 1 (10 ms)
    s.pkt(20, true, 1001, 5001, ACK, 65535, 0); // 3: acks 2 (10 ms); iRTT 20 ms
    for (i, t) in (30..34).enumerate() {
        s.pkt(t, true, 1001 + 1000 * i as u32, 5001, ACK, 65535, 1000); // 4-7
    }
    s.pkt(50, false, 5001, 2001, ACK, 65535, 0); // 8: acks 4 (20 ms)
    let z = s.pkt(51, false, 5001, 3001, ACK, 0, 0); // 9: acks 5 (20 ms), window 0
    assert_eq!(z, flag::ZERO_WINDOW);
    assert_eq!(s.pkt(52, false, 5001, 3001, ACK, 0, 0), flag::ZERO_WINDOW); // 10
    s.pkt(151, false, 5001, 3001, ACK, 65535, 0); // 11: window open: 100 ms closed
    let r = s.pkt(400, true, 3001, 5001, ACK, 65535, 1000); // 12: the RTO's resend
    assert_eq!(r, flag::RETRANSMISSION);
    s.pkt(420, false, 5001, 5001, ACK, 65535, 0); // 13: acks 7 (387 ms)
    s.pkt(500, false, 5001, 5001, ACK, 0, 0); // 14: window 0 to the capture's end
    s.col.set_origin(700 * MS); // a last packet, not TCP, at 700 ms
    s
}

#[test]
fn retransmission_ratio_goodput_and_rtt_of_a_transfer() {
    let (streams, totals) = transfer().finish();
    let info = &streams[0];
    let a = &info["directions"]["a_to_b"];
    assert_eq!(
        (a["packets"].as_u64(), a["data_packets"].as_u64()),
        (Some(7), Some(5))
    );
    assert_eq!(a["payload_bytes"], 5000);
    assert_eq!(a["retransmitted_data_packets"], 1);
    assert_eq!(a["retransmitted_payload_bytes"], 1000);
    assert_eq!(a["retransmission_ratio_packets"], 0.2); // 1 of 5 data frames
    assert_eq!(a["retransmission_ratio_bytes"], 0.2); // 1000 of 5000 bytes
                                                      // Unique bytes 1001..5001 = 4000, sent from 30 to 400 ms: 4000 × 8 / 0.37 s.
    assert_eq!(a["unique_payload_bytes"], 4000);
    assert_eq!(
        (a["data_start_s"].as_f64(), a["data_end_s"].as_f64()),
        (Some(0.03), Some(0.4))
    );
    let close = |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() < 1e-9 * want;
    assert!(close(&a["goodput_bps"], 32000.0 / 0.37), "{}", a["goodput_bps"]);
    assert!(
        close(&a["throughput_bps"], 40000.0 / 0.37),
        "{}",
        a["throughput_bps"]
    );
    // ack_rtt of C's data: 10 (SYN), 20, 20, 387 ms.
    let rtt = &a["rtt"];
    assert_eq!(rtt["n"], 4);
    assert_eq!(rtt["percentiles"], "exact");
    assert_eq!(
        (rtt["min_s"].as_f64(), rtt["max_s"].as_f64()),
        (Some(0.01), Some(0.387))
    );
    assert!(close(&rtt["mean_s"], 0.10925));
    assert_eq!(
        (rtt["p50_s"].as_f64(), rtt["p90_s"].as_f64()),
        (Some(0.02), Some(0.387))
    );
    assert_eq!(rtt["p99_s"], 0.387);
    // S sent no data: no rates; its one RTT sample is C's ACK of its SYN.
    let b = &info["directions"]["b_to_a"];
    assert_eq!(b["data_packets"], 0);
    assert!(b["goodput_bps"].is_null() && b["retransmission_ratio_packets"].is_null());
    assert_eq!(
        (b["rtt"]["n"].as_u64(), b["rtt"]["p99_s"].as_f64()),
        (Some(1), Some(0.01))
    );
    assert_eq!(info["rtt"]["n"], 5);
    assert_eq!(info["counts"]["retransmitted_data_packets"], 1);
    assert_eq!(totals["retransmission_ratio_packets"], 0.2);
    assert_eq!(totals["rtt"]["n"], 5);
}

#[test]
fn zero_window_time_until_the_window_opens_or_the_capture_ends() {
    let (streams, _) = transfer().finish();
    let d = &streams[0]["directions"];
    // S advertised 0 from 51 to 151 ms (frame 10 is inside that episode), then from
    // 500 ms to the capture's end at 700 ms: 2 episodes, 300 ms, the longest 200 ms.
    let z = &d["b_to_a"]["zero_window_time"];
    assert_eq!(d["b_to_a"]["zero_window"], 3);
    assert_eq!(z["episodes"], 2);
    assert_eq!(
        (z["total_s"].as_f64(), z["longest_s"].as_f64()),
        (Some(0.3), Some(0.2))
    );
    assert_eq!(z["open"], true);
    assert_eq!(d["a_to_b"]["zero_window_time"]["episodes"], 0);
    assert_eq!(d["a_to_b"]["zero_window_time"]["total_s"], 0.0);
}

#[test]
fn the_loss_of_a_transfer_is_placed_in_the_streams_span() {
    let (streams, _) = transfer().finish();
    let info = &streams[0];
    // One loss event, frame 12 at 400 ms; the stream spans 0-500 ms: bins of 25 ms, the
    // event in bin 16.
    let l = &info["losses"];
    assert_eq!(l["events"], 1);
    assert_eq!(
        (l["first_s"].as_f64(), l["last_s"].as_f64()),
        (Some(0.4), Some(0.4))
    );
    assert_eq!(
        l["densest_half"],
        json!({"start_s": 0.4, "end_s": 0.4, "events": 1})
    );
    assert_eq!(l["bins"]["width_s"], 0.025);
    let mut want = vec![0u64; 20];
    want[16] = 1;
    assert_eq!(l["bins"]["counts"], json!(want));
    assert_eq!(l["exact"], true);
    assert_eq!(info["directions"]["a_to_b"]["losses"], *l);
    assert_eq!(info["directions"]["b_to_a"]["losses"], json!({"events": 0}));
}

#[test]
fn a_resent_syn_is_a_retransmission_but_not_of_data() {
    let mut s = Sim::new();
    s.pkt(0, true, 1000, 0, SYN, 65535, 0);
    assert_eq!(s.pkt(1000, true, 1000, 0, SYN, 65535, 0), flag::RETRANSMISSION);
    let (streams, _) = s.finish();
    let a = &streams[0]["directions"]["a_to_b"];
    assert_eq!(
        (
            a["retransmission"].as_u64(),
            a["retransmitted_data_packets"].as_u64()
        ),
        (Some(1), Some(0))
    );
    assert!(a["retransmission_ratio_packets"].is_null() && a["retransmission_ratio_bytes"].is_null());
    assert!(a["goodput_bps"].is_null() && a["data_duration_s"].is_null());
    // The resent SYN is a loss event all the same (tcp.analysis.retransmission).
    assert_eq!(a["losses"]["events"], 1);
}

#[test]
fn unique_bytes_follow_the_sequence_past_4gib() {
    let mut d = DataSpan::default();
    let seq = 0xFFFF_FC00u32; // 1024 bytes below the wrap
    let base = Some(seq.wrapping_sub(1));
    d.add(0, seq, 1000, base);
    d.add(500 * MS, seq.wrapping_add(2000), 1000, base); // past the wrap; 1000 bytes missed
    d.add(1000 * MS, seq.wrapping_add(1000), 1000, base); // the missed ones, late
    d.add(1000 * MS, seq, 1000, base); // a resend
    assert_eq!(d.unique_bytes(), 3000);
    let j = v(d.out(0, 4000));
    assert_eq!(
        (j["goodput_bps"].as_f64(), j["throughput_bps"].as_f64()),
        (Some(24000.0), Some(32000.0))
    );
    assert_eq!(j["data_duration_s"], 1.0);
}

#[test]
fn a_zero_window_frame_inside_an_episode_does_not_start_another() {
    let mut z = ZeroWindow::default();
    z.add(10 * MS, true, 0);
    z.add(20 * MS, false, 0); // a RST with window 0: neither flagged nor opening
    z.add(30 * MS, true, 0);
    z.add(40 * MS, false, 512); // open: 30 ms
    z.add(50 * MS, false, 512);
    let j = v(z.out(1000 * MS));
    assert_eq!(
        j,
        json!({"episodes": 1, "total_s": 0.03, "longest_s": 0.03, "open": false})
    );
}

#[test]
fn percentiles_are_nearest_rank_while_exact() {
    let mut d = Dist::default();
    for x in (1..=100).rev() {
        d.add(x * MS);
    }
    let s = v(d.summary());
    assert_eq!(s["n"], 100);
    assert_eq!(
        (s["p50_s"].as_f64(), s["p90_s"].as_f64()),
        (Some(0.05), Some(0.09))
    );
    assert_eq!(
        (s["p99_s"].as_f64(), s["max_s"].as_f64()),
        (Some(0.099), Some(0.1))
    );
    assert_eq!(s["sum_s"], 5.05);
    assert_eq!(s["percentiles"], "exact");
    assert!(s.get("relative_error").is_none());
}

#[test]
fn past_the_cap_percentiles_are_within_the_stated_error() {
    // 1..=10000 µs, shuffled by a stride: p50 5000, p90 9000, p99 9900 µs exactly.
    let mut d = Dist::default();
    let n = 10_000i64;
    for i in 0..n {
        d.add((i * 7919 % n + 1) * 1000);
    }
    let s = v(d.summary());
    assert_eq!(s["percentiles"], "histogram");
    assert_eq!(s["relative_error"], RELATIVE_ERROR);
    assert_eq!(
        (s["n"].as_u64(), s["min_s"].as_f64(), s["max_s"].as_f64()),
        (Some(10_000), Some(1e-6), Some(0.01))
    );
    assert!((s["mean_s"].as_f64().unwrap() - 0.0050005).abs() < 1e-12);
    for (key, exact) in [("p50_s", 0.005), ("p90_s", 0.009), ("p99_s", 0.0099)] {
        let got = s[key].as_f64().unwrap();
        assert!(
            (got - exact).abs() <= RELATIVE_ERROR * exact,
            "{key}: {got} vs {exact}"
        );
    }
}

#[test]
fn merging_stays_exact_under_the_cap_and_counts_every_sample_past_it() {
    let (mut a, mut b) = (Dist::default(), Dist::default());
    (1..=3).for_each(|x| a.add(x));
    b.add(-5); // a frame stamped before the segment it acks
    a.merge(&b);
    let s = v(a.summary());
    assert_eq!(
        (s["n"].as_u64(), s["min_s"].as_f64(), s["p50_s"].as_f64()),
        (Some(4), Some(-5e-9), Some(1e-9))
    );
    assert_eq!(s["percentiles"], "exact");
    let mut big = Dist::default();
    (0..EXACT_CAP as i64).for_each(|x| big.add(1000 + x));
    big.merge(&a); // 4096 + 4 samples: a histogram now
    let s = v(big.summary());
    assert_eq!(
        (s["n"].as_u64(), s["percentiles"].as_str()),
        (Some(EXACT_CAP as u64 + 4), Some("histogram"))
    );
    assert_eq!(
        (s["min_s"].as_f64(), s["max_s"].as_f64()),
        (Some(-5e-9), Some(5.095e-6))
    );
}

#[test]
fn the_densest_half_of_exact_loss_times() {
    // Events at 0, 1, 10, 11, 12, 30 ms; half is 3: the windows of 3 consecutive events
    // are 10, 10, 2 and 19 ms long, so 10-12 ms. Over a span of 0-40 ms (bins of 2 ms)
    // they fall in bins 0, 0, 5, 5, 6 and 15.
    let mut l = LossTimes::default();
    for t in [30, 0, 11, 1, 12, 10] {
        l.add(t * MS, 0);
    }
    let j = v(l.out(0, 0, 40 * MS));
    assert_eq!(
        j["densest_half"],
        json!({"start_s": 0.01, "end_s": 0.012, "events": 3})
    );
    let mut want = vec![0u64; 20];
    (want[0], want[5], want[6], want[15]) = (2, 2, 1, 1);
    assert_eq!(j["bins"]["counts"], json!(want));
    assert_eq!(
        (j["first_s"].as_f64(), j["last_s"].as_f64()),
        (Some(0.0), Some(0.03))
    );
    // Equal times count in full: 5 events at 7 ms and one at 9 ms.
    let mut l = LossTimes::default();
    for t in [7, 7, 7, 9, 7, 7] {
        l.add(t * MS, 0);
    }
    assert_eq!(
        l.densest().map(|d| (d.start, d.end, d.events)),
        Some((7 * MS, 7 * MS, 5))
    );
}

#[test]
fn past_the_cap_loss_times_are_binned_and_say_so() {
    // 9000 events: 1000 spread over 0-9 s, 8000 packed in 5.000-5.008 s. The densest half
    // (4500) lies inside the burst, found to within the fine bins' width.
    let mut l = LossTimes::default();
    for i in 0..1000 {
        l.add(i * 9 * MS, 0);
    }
    for i in 0..8000 {
        l.add(5000 * MS + i * 1000, 0);
    }
    let j = v(l.out(0, 0, 10_000 * MS));
    assert_eq!(
        (j["events"].as_u64(), j["exact"].as_bool()),
        (Some(9000), Some(false))
    );
    let res = j["resolution_s"].as_f64().unwrap();
    // 9 s over 1024 bins, doubled from 1 ns: 2^24 ns ≈ 16.8 ms.
    assert_eq!(res, (1u64 << 24) as f64 / 1e9);
    assert!(res * FINE_BINS as f64 >= 9.0);
    let d = &j["densest_half"];
    let (start, end) = (d["start_s"].as_f64().unwrap(), d["end_s"].as_f64().unwrap());
    assert!(
        start >= 5.0 - res && end <= 5.008 + res && end - start <= 0.008 + 2.0 * res,
        "{d}"
    );
    assert!(d["events"].as_u64().unwrap() >= 4500);
    let counts: Vec<u64> = serde_json::from_value(j["bins"]["counts"].clone()).unwrap();
    assert_eq!(counts.iter().sum::<u64>(), 9000);
    assert_eq!(counts[10], 8000 + 56); // 5.0-5.5 s: the burst and 56 of the spread
}

#[test]
fn a_fin_is_not_data_and_closes_no_window() {
    let mut s = Sim::new();
    s.pkt(0, true, 1, 0, ACK, 0, 10); // mid-stream: data with window 0
    s.pkt(10, true, 11, 0, ACK | FIN, 100, 0); // a FIN with a window: it closes it
    let (streams, _) = s.finish();
    let a = &streams[0]["directions"]["a_to_b"];
    assert_eq!(a["zero_window_time"]["total_s"], 0.01);
    assert_eq!(
        (a["unique_payload_bytes"].as_u64(), a["data_packets"].as_u64()),
        (Some(10), Some(1))
    );
    assert!(a["goodput_bps"].is_null()); // one data segment: no duration
}

#[test]
fn a_window_closed_after_the_other_sides_fin_is_no_stall_and_a_rst_ends_one() {
    // As the last frame of skype.pcap's stream 67 (nDPI's tests): S's last ACK, after
    // C's FIN, advertises 0; tshark flags it, and 53 s to the capture's end is no stall.
    let mut s = Sim::new();
    s.pkt(0, true, 1, 1, ACK, 100, 10);
    s.pkt(10, true, 11, 1, ACK | FIN, 100, 0);
    assert_eq!(s.pkt(20, false, 1, 12, ACK, 0, 0), flag::ZERO_WINDOW);
    s.col.set_origin(1000 * MS);
    let (streams, _) = s.finish();
    let b = &streams[0]["directions"]["b_to_a"];
    assert_eq!(
        (
            b["zero_window"].as_u64(),
            b["zero_window_time"]["episodes"].as_u64()
        ),
        (Some(1), Some(0))
    );
    // S closes its window at 10 ms, C resets at 30 ms: 20 ms, ended by the RST.
    let mut s = Sim::new();
    s.pkt(0, true, 1, 1, ACK, 100, 10);
    s.pkt(10, false, 1, 11, ACK, 0, 0);
    s.pkt(30, true, 11, 1, ACK | RST, 0, 0);
    s.pkt(40, false, 1, 11, ACK, 0, 0); // after the RST: none
    s.col.set_origin(1000 * MS);
    let (streams, _) = s.finish();
    let z = &streams[0]["directions"]["b_to_a"]["zero_window_time"];
    assert_eq!(
        *z,
        json!({"episodes": 1, "total_s": 0.02, "longest_s": 0.02, "open": false})
    );
}

#[test]
fn a_new_isn_on_the_same_ports_starts_a_new_span() {
    // As ndpi_match_string_subprotocol__error.pcapng (nDPI's tests): S sends 368 bytes,
    // and an hour later a SYN-ACK with another ISN starts S's second connection on the
    // same ports (the same tcp.stream): 685 bytes more, not the 1.29 GB between the ISNs.
    let mut s = Sim::new();
    s.pkt(0, true, 100, 0, SYN, 65535, 0);
    s.pkt(10, false, 2_533_501_578, 101, SYN | ACK, 65535, 0);
    s.pkt(20, false, 2_533_501_579, 101, ACK, 65535, 368);
    let r = s.pkt(3_600_000, false, 3_820_447_205, 5000, SYN | ACK, 65535, 0);
    assert_eq!(r & flag::REUSED_PORTS, flag::REUSED_PORTS);
    s.pkt(3_600_010, false, 3_820_447_206, 5000, ACK, 65535, 685);
    let (streams, _) = s.finish();
    assert_eq!(streams.len(), 1);
    let b = &streams[0]["directions"]["b_to_a"];
    assert_eq!(
        (b["unique_payload_bytes"].as_u64(), b["payload_bytes"].as_u64()),
        (Some(1053), Some(1053))
    );
}
