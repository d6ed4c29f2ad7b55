//! The datagrams a test's UDP sockets receive: iperf3's UDP header through the
//! receiver's sequence accounting and jitter (whose documented invariant is checked),
//! the probe and request/response headers, and the probing client's reply matching.
//! The input is a train of datagrams: a flags byte (bit 0: 64-bit counters), then for
//! each a length byte and that many bytes; each arrives a length's worth of µs later.

use netrig_core::stats::UdpReceiver;
use netrig_core::wire::iperf3::UdpHeader;
use netrig_core::wire::probe::{ProbePacket, RrRequest};
use netrig_perf::latency::Record;
use netrig_perf::probe::on_reply;

pub fn run(data: &[u8]) {
    let Some((&flags, mut rest)) = data.split_first() else {
        return;
    };
    let wide = flags & 1 == 1;
    let start = 1_700_000_000_000_000_000u64;
    let mut rx = UdpReceiver::new(wide, start);
    let mut log: Vec<Record> = (1..=8)
        .map(|seq| Record {
            seq,
            t: seq as f64 * 1e-3,
            sent_ns: start + seq * 1_000_000,
            rtt_ms: None,
            send_ms: None,
            recv_ms: None,
        })
        .collect();
    let mut now = start;
    while let Some((&n, tail)) = rest.split_first() {
        let (d, tail) = tail.split_at((n as usize).min(tail.len()));
        rest = tail;
        now += n as u64 * 1000;
        rx.on_datagram(d, now);
        let s = &rx.seq;
        assert_eq!(s.lost, s.highest - s.received, "lost == highest - received");
        assert!(rx.jitter.seconds().is_finite());
        let _ = UdpHeader::parse(d, wide);
        let _ = ProbePacket::parse(d);
        let _ = RrRequest::parse(d, 1 << 20);
        on_reply(&mut log, d, now);
    }
    for r in &log {
        assert!(r.rtt_ms.is_none_or(|x| x.is_finite() && x >= 0.0));
    }
}
