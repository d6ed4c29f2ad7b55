//! TCP_INFO samples (`--tcp-info-interval`): one [`TcpInfoSample`] per sample (its
//! shape, whose keys name their units, is [`crate::extras`]'s), and the text
//! line that renders the same sample in text mode.

use netrig_core::units::{format_bytes, format_rate_as, UnitFormat};

use crate::extras::TcpInfoSample;
use crate::sys::TcpInfo;

/// The kernel's "no slow-start threshold yet" (TCP_INFINITE_SSTHRESH).
const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// One TCP_INFO sample of stream `socket`, `t` s after the start, `bytes` moved so far.
/// ssthresh is None until the kernel sets one (it starts "infinite").
pub fn sample(socket: i32, t: f64, sender: bool, bytes: u64, i: &TcpInfo) -> TcpInfoSample {
    let mss = i.snd_mss as u64;
    let (ssthresh_bytes, ssthresh_segments) = if i.snd_ssthresh >= INFINITE_SSTHRESH {
        (None, None)
    } else {
        (Some(i.snd_ssthresh as u64 * mss), Some(i.snd_ssthresh))
    };
    TcpInfoSample {
        socket,
        t: (t * 1e6).round() / 1e6,
        sender,
        bytes,
        snd_cwnd: i.cwnd_bytes(),
        snd_cwnd_bytes: i.cwnd_bytes(),
        snd_cwnd_segments: i.snd_cwnd,
        snd_ssthresh_bytes: ssthresh_bytes,
        snd_ssthresh_segments: ssthresh_segments,
        rtt_us: i.rtt_us,
        rttvar_us: i.rttvar_us,
        min_rtt_us: i.min_rtt_us,
        total_retrans: i.total_retrans,
        lost: i.lost,
        unacked: i.unacked,
        pacing_rate_bps: i.pacing_rate.saturating_mul(8),
        delivery_rate_bps: i.delivery_rate.saturating_mul(8),
        snd_wnd: i.snd_wnd,
        snd_mss: i.snd_mss,
    }
}

/// A TCP_INFO sample as one text line: "[  5] 1.50 sec  tcp_info  cwnd 1.25 MBytes
/// (880 seg)  ssthresh 620 KBytes (437 seg)  rtt 45 us (var 12)  retr 0  ...".
pub fn text_line(d: &TcpInfoSample, units: UnitFormat) -> String {
    let bytes = |b: Option<u64>| match b {
        Some(b) => format_bytes(b as f64),
        None => "-".into(),
    };
    let seg = |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_else(|| "-".into());
    let rate = |bps: u64| format_rate_as(bps as f64, units);
    format!(
        "[{:3}] {:6.2} sec  tcp_info {}  cwnd {} ({} seg)  ssthresh {} ({} seg)  rtt {} us (var {})  retr {}  unacked {}  pacing {}  delivery {}",
        d.socket,
        d.t,
        if d.sender { "sender" } else { "receiver" },
        bytes(Some(d.snd_cwnd_bytes)),
        d.snd_cwnd_segments,
        bytes(d.snd_ssthresh_bytes),
        seg(d.snd_ssthresh_segments),
        d.rtt_us,
        d.rttvar_us,
        d.total_retrans,
        d.unacked,
        rate(d.pacing_rate_bps),
        rate(d.delivery_rate_bps),
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
        let s = sample(5, 1.25, true, 99, &i);
        assert_eq!(s.snd_cwnd, 14_480, "bytes, as iperf3's interval snd_cwnd");
        assert_eq!((s.snd_cwnd_bytes, s.snd_cwnd_segments), (14_480, 10));
        assert_eq!(s.snd_ssthresh_bytes, Some(7 * 1448));
        assert_eq!(s.snd_ssthresh_segments, Some(7));
        let v = crate::extras::to_value(&s);
        assert!(v.get("snd_ssthresh").is_none(), "no key without a unit");
        assert_eq!(v["pacing_rate_bps"], 8_000);
        // Before the first loss the kernel's ssthresh is "infinite": no number to give.
        let fresh = TcpInfo {
            snd_ssthresh: INFINITE_SSTHRESH,
            ..i
        };
        let v = crate::extras::to_value(&sample(5, 0.0, true, 0, &fresh));
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
        let l = text_line(&sample(5, 1.5, true, 0, &i), UnitFormat::default());
        assert!(l.starts_with("[  5]   1.50 sec  tcp_info sender  cwnd 9.77 KBytes (10 seg)  ssthresh - (- seg)  rtt 50 us (var 7)"), "{l}");
    }
}
