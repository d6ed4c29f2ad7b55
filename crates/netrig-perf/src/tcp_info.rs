//! TCP_INFO samples (`--tcp-info-interval`): one JSON object per sample, whose keys name
//! their units, and the text line that renders the same object in text mode.

use netrig_core::units::{format_bytes, format_rate_as, UnitFormat};
use serde_json::{json, Value};

use crate::sys::TcpInfo;

/// The kernel's "no slow-start threshold yet" (TCP_INFINITE_SSTHRESH).
const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// One TCP_INFO sample. Units are in the keys: cwnd and ssthresh in `_bytes` and
/// `_segments` (the kernel counts both in segments; bytes = segments × snd_mss), and
/// `snd_cwnd` stays bytes, as iperf3's interval `snd_cwnd`; ssthresh is null until the
/// kernel sets one (it starts "infinite"); times in `_us`; rates in `_bps` (bit/s);
/// `snd_wnd` and `snd_mss` are bytes, as in iperf3.
pub fn sample_json(socket: i32, t: f64, sender: bool, bytes: u64, i: &TcpInfo) -> Value {
    let mss = i.snd_mss as u64;
    let (ssthresh_bytes, ssthresh_segments) = if i.snd_ssthresh >= INFINITE_SSTHRESH {
        (None, None)
    } else {
        (Some(i.snd_ssthresh as u64 * mss), Some(i.snd_ssthresh))
    };
    json!({
        "socket": socket, "t": (t * 1e6).round() / 1e6, "sender": sender, "bytes": bytes,
        "snd_cwnd": i.cwnd_bytes(), "snd_cwnd_bytes": i.cwnd_bytes(), "snd_cwnd_segments": i.snd_cwnd,
        "snd_ssthresh_bytes": ssthresh_bytes, "snd_ssthresh_segments": ssthresh_segments,
        "rtt_us": i.rtt_us, "rttvar_us": i.rttvar_us, "min_rtt_us": i.min_rtt_us,
        "total_retrans": i.total_retrans, "lost": i.lost, "unacked": i.unacked,
        "pacing_rate_bps": i.pacing_rate.saturating_mul(8),
        "delivery_rate_bps": i.delivery_rate.saturating_mul(8),
        "snd_wnd": i.snd_wnd, "snd_mss": i.snd_mss,
    })
}

/// A TCP_INFO sample as one text line: "[  5] 1.50 sec  tcp_info  cwnd 1.25 MBytes
/// (880 seg)  ssthresh 620 KBytes (437 seg)  rtt 45 us (var 12)  retr 0  ...".
pub fn text_line(d: &Value, units: UnitFormat) -> String {
    let int = |k: &str| d.get(k).and_then(Value::as_u64);
    let bytes = |k: &str| match int(k) {
        Some(b) => format_bytes(b as f64),
        None => "-".into(),
    };
    let seg = |k: &str| int(k).map(|n| n.to_string()).unwrap_or_else(|| "-".into());
    let rate = |k: &str| format_rate_as(int(k).unwrap_or(0) as f64, units);
    format!(
        "[{:3}] {:6.2} sec  tcp_info {}  cwnd {} ({} seg)  ssthresh {} ({} seg)  rtt {} us (var {})  retr {}  unacked {}  pacing {}  delivery {}",
        int("socket").unwrap_or(0),
        d.get("t").and_then(Value::as_f64).unwrap_or(0.0),
        if d.get("sender").and_then(Value::as_bool).unwrap_or(false) { "sender" } else { "receiver" },
        bytes("snd_cwnd_bytes"),
        seg("snd_cwnd_segments"),
        bytes("snd_ssthresh_bytes"),
        seg("snd_ssthresh_segments"),
        seg("rtt_us"),
        seg("rttvar_us"),
        seg("total_retrans"),
        seg("unacked"),
        rate("pacing_rate_bps"),
        rate("delivery_rate_bps"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_info_units_are_named_and_consistent() {
        let i = TcpInfo {
            snd_mss: 1448,
            snd_cwnd: 10,
            snd_ssthresh: 7,
            rtt_us: 50,
            pacing_rate: 1_000,
            ..Default::default()
        };
        let v = sample_json(5, 1.25, true, 99, &i);
        assert_eq!(v["snd_cwnd"], 14_480, "bytes, as iperf3's interval snd_cwnd");
        assert_eq!(
            (v["snd_cwnd_bytes"].clone(), v["snd_cwnd_segments"].clone()),
            (14_480.into(), 10.into())
        );
        assert_eq!(v["snd_ssthresh_bytes"], 7 * 1448);
        assert_eq!(v["snd_ssthresh_segments"], 7);
        assert!(v.get("snd_ssthresh").is_none(), "no key without a unit");
        assert_eq!(v["pacing_rate_bps"], 8_000);
        // Before the first loss the kernel's ssthresh is "infinite": no number to give.
        let fresh = TcpInfo {
            snd_ssthresh: INFINITE_SSTHRESH,
            ..i
        };
        let v = sample_json(5, 0.0, true, 0, &fresh);
        assert!(v["snd_ssthresh_bytes"].is_null() && v["snd_ssthresh_segments"].is_null());
    }

    #[test]
    fn text_line_names_units_and_a_missing_ssthresh() {
        let i = TcpInfo {
            snd_mss: 1000,
            snd_cwnd: 10,
            snd_ssthresh: INFINITE_SSTHRESH,
            rtt_us: 50,
            rttvar_us: 7,
            ..Default::default()
        };
        let l = text_line(&sample_json(5, 1.5, true, 0, &i), UnitFormat::default());
        assert!(l.starts_with("[  5]   1.50 sec  tcp_info sender  cwnd 9.77 KBytes (10 seg)  ssthresh - (- seg)  rtt 50 us (var 7)"), "{l}");
    }
}
