//! UDP latency probes (a netrig extra, irtt-like): the client sends a request every
//! interval; the server answers at once with its receive and send times. RTT excludes
//! the server's turnaround; one-way delays are exact when both ends share a clock.

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use netrig_core::wire::iperf3::{UDP_CONNECT_MSG, UDP_CONNECT_REPLY};
use netrig_core::wire::probe::{ProbeKind, ProbePacket};
use serde_json::Map;

use crate::config::{ClientConfig, ClientMode};
use crate::engine::{RunControl, POLL};
use crate::protocol::{self, await_running, exchange_results, negotiate, say_done};

use crate::error::{PerfError, Result};
use crate::extras::{self, Probe, ProbeEnd, ProbeSample, PROBE_COLUMNS};
use crate::latency::{Log, Record, Window};
use crate::output::Output;
use crate::session::{DataSock, Session};
use crate::sys;

/// Server side: one echo thread per probe stream.
pub fn serve(session: &Session) -> Result<Vec<JoinHandle<()>>> {
    let mut handles = vec![];
    for (s, stream) in session.streams.iter().enumerate() {
        let sock = session_udp(session, s)?;
        let (ctl, stream) = (session.ctl.clone(), stream.clone());
        handles.push(std::thread::spawn(move || {
            let _ = echo(&sock, &ctl, &stream);
        }));
    }
    Ok(handles)
}

fn session_udp(session: &Session, i: usize) -> Result<UdpSocket> {
    match session.sock(i) {
        Some(DataSock::Udp(u)) => Ok(u.try_clone()?),
        _ => Err(PerfError::Protocol("probe streams are UDP".into())),
    }
}

fn echo(sock: &UdpSocket, ctl: &RunControl, stream: &crate::engine::Stream) -> std::io::Result<()> {
    sys::set_timeouts(sock.as_raw_fd(), POLL)?;
    // The kernel's arrival stamp, so the turnaround taken out includes our wake-up.
    let _ = sys::enable_rx_timestamps(sock);
    let mut batch = sys::RecvBatch::new(1, 65_536);
    let mut buf = vec![0u8; 65_536];
    while !ctl.stopped() {
        let n = match batch.recv(sock) {
            Ok(1) => {
                let data = batch.get(0).0;
                buf[..data.len()].copy_from_slice(data);
                data.len()
            }
            _ => continue,
        };
        let recv_ns = batch.stamp_ns(0).unwrap_or_else(sys::realtime_ns);
        if n == 4 && buf[..4] == UDP_CONNECT_MSG {
            let _ = sock.send(&UDP_CONNECT_REPLY);
            continue;
        }
        let Ok(req) = ProbePacket::parse(&buf[..n]) else {
            continue;
        };
        if req.kind != ProbeKind::Request {
            continue;
        }
        let mut reply = ProbePacket {
            kind: ProbeKind::Reply,
            server_recv_ns: recv_ns,
            ..req
        };
        reply.server_send_ns = sys::realtime_ns();
        reply.emit(&mut buf[..n]);
        if sock.send(&buf[..n]).is_ok() {
            stream.bytes.fetch_add(n as u64, Relaxed);
            stream.blocks.fetch_add(1, Relaxed);
        }
    }
    Ok(())
}

const MS: f64 = 1e6;

/// Client side.
pub fn run_client(cfg: &ClientConfig, out: &mut Output) -> Result<()> {
    let ClientMode::Probe { interval, size } = cfg.mode.clone() else {
        unreachable!()
    };
    let mut probe_cfg = cfg.clone();
    probe_cfg.parallel = 1;
    probe_cfg.len = size as u64;
    out.text(&format!(
        "Probing host {}, port {} every {:.3} ms with {size}-byte datagrams",
        cfg.host,
        cfg.common.port,
        interval.as_secs_f64() * 1e3
    ));
    let (mut conn, params) = negotiate(&probe_cfg)?;
    let sock = protocol::open_udp(&probe_cfg, &conn, &params, 0)?;
    let (l, r) = (sock.local_addr()?, sock.peer_addr()?);
    out.connected(sock.as_raw_fd(), &l, &r);
    await_running(&mut conn)?;

    let log = Arc::new(Log::default());
    let ctl = RunControl::new(0, 0);
    let start_mono = sys::monotonic_ns();
    let start_real = sys::realtime_ns();
    let rx = {
        let (sock, log, ctl) = (sock.try_clone()?, log.clone(), ctl.clone());
        std::thread::spawn(move || receive(&sock, &log, &ctl, start_real))
    };
    let tx = {
        let (sock, log, ctl) = (sock.try_clone()?, log.clone(), ctl.clone());
        std::thread::spawn(move || send(&sock, &log, &ctl, start_mono, start_real, interval, size))
    };
    let secs = cfg.time.max(1) as f64;
    let report = cfg.common.interval.as_secs_f64();
    out.text(&format!("[ ID] Interval           Probes{}", ""));
    let mut next = if report > 0.0 { report } else { f64::MAX };
    loop {
        let t = (sys::monotonic_ns() - start_mono) as f64 / 1e9;
        if t >= next.min(secs) && next <= secs + 1e-9 {
            // Report the window that ended `grace` ago, so late replies count.
            emit_interval(out, &log, next - report, next, sock.as_raw_fd());
            next += report;
        }
        if t >= secs {
            break;
        }
        if let Some(state) = conn.ctrl.poll_state(Duration::from_millis(10))? {
            ctl.stop.store(true, Relaxed);
            return Err(PerfError::Protocol(format!(
                "unexpected {state:?} during the probe"
            )));
        }
    }
    ctl.stop.store(true, Relaxed);
    let _ = tx.join();
    let dups = rx.join().unwrap_or(0);
    let records = log.records.lock().unwrap().clone();
    if next - report < secs - 1e-9 && report > 0.0 {
        emit_interval(out, &log, next - report, secs, sock.as_raw_fd());
    }
    let total = Window::of(&records, 0.0, f64::MAX);
    let results = netrig_core::iperf3::Results {
        sender_has_retransmits: 0,
        ..Default::default()
    };
    let _ = exchange_results(&mut conn, &results)?;
    out.text(crate::output::SEPARATOR);
    out.text(
        &Window {
            end: secs,
            ..total.clone()
        }
        .line(&format!("[{:3}]", sock.as_raw_fd())),
    );
    let r = &total.rtt_ms;
    out.text(&format!(
        "RTT ms: min {:.3} mean {:.3} p50 {:.3} p90 {:.3} p99 {:.3} max {:.3} (stddev {:.3})",
        r.min, r.mean, r.p50, r.p90, r.p99, r.max, r.stddev
    ));
    out.text(&format!(
        "one-way ms (sender->server p50/p99: {:.3}/{:.3}, server->sender p50/p99: {:.3}/{:.3}); {dups} duplicate replies",
        total.send_delay_ms.p50, total.send_delay_ms.p99, total.receive_delay_ms.p50, total.receive_delay_ms.p99
    ));
    let w = total.extras();
    let summary = ProbeEnd {
        start: w.start,
        end: secs,
        sent: w.sent,
        received: w.received,
        lost: w.lost,
        loss_percent: w.loss_percent,
        rtt_ms: w.rtt_ms,
        send_delay_ms: w.send_delay_ms,
        receive_delay_ms: w.receive_delay_ms,
        duplicates: dups,
        interval_ms: interval.as_secs_f64() * 1e3,
        size: size as u64,
        samples: records
            .iter()
            .map(|r| ProbeSample(r.seq, r.t, r.rtt_ms, r.send_ms, r.recv_ms))
            .collect(),
        samples_columns: PROBE_COLUMNS.iter().map(|c| c.to_string()).collect(),
        // The wall clock at t = 0, so that a caller can put the samples on its own
        // clock (netrig's runner: an event's time against the probes lost after it).
        start_unix_ns: start_real,
    };
    let end = extras::to_value(&Probe { probe: summary });
    out.event("end", end.clone());
    out.text("\nnetrig-perf Done.");
    let doc = out.document(Some(end), None, Map::new());
    out.finish_json(&doc);
    say_done(&mut conn);
    Ok(())
}

fn emit_interval(out: &mut Output, log: &Log, start: f64, end: f64, socket: i32) {
    let records = log.records.lock().unwrap();
    let w = Window::of(&records, start, end);
    drop(records);
    out.text(&w.line(&format!("[{socket:3}]")));
    out.push_interval(extras::to_value(&Probe { probe: w.extras() }));
}

fn send(
    sock: &UdpSocket,
    log: &Log,
    ctl: &RunControl,
    start_mono: u64,
    start_real: u64,
    interval: Duration,
    size: usize,
) {
    sys::set_timer_slack_ns(1000);
    let step = interval.as_nanos() as u64;
    let mut buf = vec![0u8; size.max(ProbePacket::LEN)];
    let mut seq = 0u64;
    while !ctl.stopped() {
        let due = start_mono + seq * step;
        sys::sleep_until_ns(due);
        if ctl.stopped() {
            break;
        }
        seq += 1;
        let now = sys::realtime_ns();
        ProbePacket {
            kind: ProbeKind::Request,
            seq,
            client_send_ns: now,
            server_recv_ns: 0,
            server_send_ns: 0,
        }
        .emit(&mut buf);
        log.records.lock().unwrap().push(Record {
            seq,
            t: now.saturating_sub(start_real) as f64 / 1e9,
            sent_ns: now,
            rtt_ms: None,
            send_ms: None,
            recv_ms: None,
        });
        let _ = sock.send(&buf);
    }
}

/// What a datagram that reached the probing client did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// The first reply to one of our requests: its record now has its delays.
    Matched,
    /// A second reply to a request already answered.
    Duplicate,
    /// Not a reply to a request we sent (not a probe reply, an unknown sequence number,
    /// or a send time other than the one the request carried): changes nothing.
    Ignored,
}

/// Matches one datagram, arrived at `now_ns` (CLOCK_REALTIME), to the request it answers
/// and fills that request's record. Pure: the receive loop's whole handling of a reply,
/// so that it can be fuzzed. A reply must echo the sequence number and the send time
/// its request carried (a forged or stale one used to count, and one naming a send
/// time after its arrival overflowed the RTT); the server's two stamps are its word,
/// taken as they come for the one-way figures and the turnaround.
pub fn on_reply(records: &mut [Record], datagram: &[u8], now_ns: u64) -> Reply {
    let Ok(p) = ProbePacket::parse(datagram) else {
        return Reply::Ignored;
    };
    if p.kind != ProbeKind::Reply || p.seq == 0 {
        return Reply::Ignored;
    }
    let Some(r) = usize::try_from(p.seq - 1).ok().and_then(|i| records.get_mut(i)) else {
        return Reply::Ignored;
    };
    if r.seq != p.seq || r.sent_ns != p.client_send_ns {
        return Reply::Ignored;
    }
    if r.rtt_ms.is_some() {
        return Reply::Duplicate;
    }
    let turnaround = p.server_send_ns.saturating_sub(p.server_recv_ns) as f64;
    let elapsed = now_ns.saturating_sub(r.sent_ns) as f64;
    r.rtt_ms = Some((elapsed - turnaround).max(0.0) / MS);
    r.send_ms = Some((p.server_recv_ns as f64 - r.sent_ns as f64) / MS);
    r.recv_ms = Some((now_ns as f64 - p.server_send_ns as f64) / MS);
    Reply::Matched
}

/// Matches replies to requests; after the sender stops, waits for stragglers up to
/// three times the worst RTT seen (0.2 to 2 s). Returns the duplicate replies seen.
fn receive(sock: &UdpSocket, log: &Log, ctl: &RunControl, _start_real: u64) -> u64 {
    let _ = sys::set_timeouts(sock.as_raw_fd(), Duration::from_millis(10));
    // Replies are timed by the kernel's arrival stamp, not by when we woke to read them.
    let _ = sys::enable_rx_timestamps(sock);
    let mut batch = sys::RecvBatch::new(1, 65_536);
    let mut dups = 0;
    let mut give_up: Option<u64> = None;
    loop {
        if ctl.stopped() && give_up.is_none() {
            let worst = log
                .records
                .lock()
                .unwrap()
                .iter()
                .filter_map(|r| r.rtt_ms)
                .fold(0.0, f64::max);
            give_up =
                Some(sys::monotonic_ns() + ((3.0 * worst * MS) as u64).clamp(200_000_000, 2_000_000_000));
        }
        if let Some(g) = give_up {
            if sys::monotonic_ns() > g || log.records.lock().unwrap().iter().all(|r| r.rtt_ms.is_some()) {
                break;
            }
        }
        if let Ok(1) = batch.recv(sock) {
            let now = batch.stamp_ns(0).unwrap_or_else(sys::realtime_ns);
            let mut records = log.records.lock().unwrap();
            if on_reply(&mut records, batch.get(0).0, now) == Reply::Duplicate {
                dups += 1;
            }
        }
    }
    dups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(seq: u64, sent_ns: u64) -> Record {
        Record {
            seq,
            t: 0.0,
            sent_ns,
            rtt_ms: None,
            send_ms: None,
            recv_ms: None,
        }
    }

    fn reply(seq: u64, client_send_ns: u64, server_recv_ns: u64, server_send_ns: u64) -> Vec<u8> {
        let mut b = vec![0u8; ProbePacket::LEN];
        ProbePacket {
            kind: ProbeKind::Reply,
            seq,
            client_send_ns,
            server_recv_ns,
            server_send_ns,
        }
        .emit(&mut b);
        b
    }

    #[test]
    fn a_reply_fills_its_request_once() {
        let mut log = vec![sent(1, 1_000_000), sent(2, 2_000_000)];
        let r = reply(2, 2_000_000, 2_400_000, 2_500_000);
        assert_eq!(on_reply(&mut log, &r, 3_000_000), Reply::Matched);
        // 1 ms elapsed, 0.1 ms of it in the server.
        assert_eq!(log[1].rtt_ms, Some(0.9));
        assert_eq!((log[1].send_ms, log[1].recv_ms), (Some(0.4), Some(0.5)));
        assert_eq!(on_reply(&mut log, &r, 3_000_000), Reply::Duplicate);
        assert_eq!(log[0].rtt_ms, None);
    }

    #[test]
    fn forged_replies_change_nothing() {
        let mut log = vec![sent(1, 1_000_000)];
        for (d, now) in [
            // A send time after the arrival: the RTT overflowed (a panic in debug builds).
            (reply(1, u64::MAX, 0, 0), 1_500_000),
            // Another send time than the request's: not its answer.
            (reply(1, 999_999, 0, 0), 1_500_000),
            (reply(0, 1_000_000, 0, 0), 1_500_000),
            (reply(u64::MAX, 1_000_000, 0, 0), 1_500_000),
            (reply(2, 1_000_000, 0, 0), 1_500_000),
            (vec![0; 7], 1_500_000),
        ] {
            assert_eq!(on_reply(&mut log, &d, now), Reply::Ignored);
        }
        assert_eq!(log[0].rtt_ms, None);
        // The clock stepped back between send and arrival: 0, not 584 years.
        assert_eq!(on_reply(&mut log, &reply(1, 1_000_000, 0, 0), 10), Reply::Matched);
        assert_eq!(log[0].rtt_ms, Some(0.0));
    }
}
