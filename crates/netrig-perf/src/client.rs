//! The bulk client: open the streams, run, report. The control exchange it shares with
//! the probe and rr clients is [`crate::protocol`]'s; `run` hands those modes their turn.
//! Speaks iperf3 3.12's protocol, so the peer may be iperf3 or netrig-perf.

use std::time::Duration;

use netrig_core::iperf3::{Protocol, Results};
use netrig_core::wire::iperf3::State;
use serde_json::Map;

use crate::config::{ClientConfig, ClientMode};
use crate::error::{PerfError, Result};
use crate::output::{EndResult, EndStream, Output, Sink, StartInfo};
use crate::protocol::{await_running, exchange_results, negotiate, open_tcp, open_udp, say_done};
use crate::report::{CpuMeter, CpuUsage, Sampler};
use crate::session::{self, DataSock, DriveOpts, Ended, Session};
use crate::sys;

fn peer_cpu(r: &Results) -> CpuUsage {
    CpuUsage {
        total: r.cpu_util_total,
        user: r.cpu_util_user,
        system: r.cpu_util_system,
    }
}

/// Runs a client test to the end, printing as configured. On error the output still
/// ends properly (a `-J` document with an "error" key).
pub fn run(cfg: &ClientConfig, sink: Sink) -> Result<()> {
    let mut out = Output::new(cfg.common.format, sink, false);
    out.configure(&cfg.common);
    out.set_title(cfg.title.clone());
    let result = match &cfg.mode {
        ClientMode::Bulk => run_bulk(cfg, &mut out),
        ClientMode::Probe { .. } => crate::probe::run_client(cfg, &mut out),
        ClientMode::Rr { .. } => crate::rr::run_client(cfg, &mut out),
    };
    if let Err(e) = &result {
        out.error(&e.to_string());
        let doc = out.document(None, Some(&e.to_string()), Map::new());
        out.finish_json(&doc);
    }
    result
}

fn run_bulk(cfg: &ClientConfig, out: &mut Output) -> Result<()> {
    out.text(&format!(
        "Connecting to host {}, port {}",
        cfg.host, cfg.common.port
    ));
    if cfg.reverse {
        out.text(&format!("Reverse mode, remote host {} is sending", cfg.host));
    }
    let (mut conn, params) = negotiate(cfg)?;
    out.set_start_value(
        "connecting_to",
        serde_json::json!({ "host": cfg.host, "port": cfg.common.port }),
    );
    let mut session = Session::new(&params);
    session.file = cfg.common.file.clone();
    let p = params.parallel as usize;
    let senders = if cfg.bidir || !cfg.reverse { p } else { 0 };
    let receivers = if cfg.bidir || cfg.reverse { p } else { 0 };
    for i in 0..senders + receivers {
        let sender = i < senders;
        let sock = match params.protocol {
            Protocol::Tcp => DataSock::Tcp(open_tcp(cfg, &conn, &params, i)?),
            Protocol::Udp => DataSock::Udp(open_udp(cfg, &conn, &params, i)?),
        };
        let (local, remote) = match &sock {
            DataSock::Tcp(s) => (s.local_addr()?, s.peer_addr()?),
            DataSock::Udp(s) => (s.local_addr()?, s.peer_addr()?),
        };
        out.connected(sock.fd(), &local, &remote);
        session.add(sock, sender, local.to_string(), remote.to_string());
    }
    let (sndbuf, rcvbuf) = session_bufs(&session);
    out.start(&StartInfo {
        tcp_mss_default: conn.mss,
        sock_bufsize: params.window,
        sndbuf_actual: sndbuf,
        rcvbuf_actual: rcvbuf,
        title: params.title.clone(),
        extra_data: params.extra_data.clone(),
        ..StartInfo::of(&params, &conn.cookie, true)
    });
    await_running(&mut conn)?;

    let cpu = CpuMeter::start();
    let start_ns = sys::monotonic_ns();
    session.start(&params, start_ns)?;
    let mut sampler = Sampler::new(session.streams.clone(), session.udp, start_ns, params.omit > 0);
    let opts = DriveOpts {
        interval: cfg.common.interval,
        omit: Duration::from_secs(params.omit),
        duration: (params.time > 0).then(|| Duration::from_secs(params.time)),
        bytes: params.bytes,
        blocks: params.blocks,
        is_client: true,
        deadline: None,
        tcp_info_interval: cfg.tcp_info_interval,
        rcv_timeout: Some(cfg.common.rcv_timeout),
        rate_limit: None,
        end_when_senders_done: cfg.common.file.is_some(),
    };
    let ended = session::drive(&mut conn.ctrl, &session, out, &mut sampler, &opts)?;
    let end_ns = sys::monotonic_ns();
    session.stop_at(end_ns);
    match ended {
        Ended::Done => {}
        Ended::Peer(State::ServerError) => return Err(conn.ctrl.read_error()),
        Ended::Peer(State::ServerTerminate) => {
            return Err(PerfError::Server("the server has terminated".into()))
        }
        Ended::Peer(State::AccessDenied) => return Err(PerfError::Busy),
        Ended::Peer(s) => return Err(PerfError::Protocol(format!("unexpected {s:?} during the test"))),
        Ended::Deadline => return Err(PerfError::Timeout("running the test".into())),
    }
    if let Some(e) = session.worker_error() {
        if session
            .streams
            .iter()
            .all(|s| s.bytes.load(std::sync::atomic::Ordering::Relaxed) == 0)
        {
            return Err(PerfError::Protocol(format!("data stream failed: {e}")));
        }
    }
    session::final_interval(&mut sampler, out, end_ns, cfg.common.interval);
    let totals = sampler.totals(end_ns);
    let usage = cpu.usage();
    let mut ours = session.results(&totals, usage);
    session::add_sender_extremes(&mut ours, &totals, &sampler.extremes);
    let theirs = exchange_results(&mut conn, &ours)?;

    let mut ends = vec![];
    for (i, t) in totals.iter().enumerate() {
        let peer = theirs.streams.iter().find(|r| r.id == t.stream.id);
        if peer.is_none() {
            return Err(PerfError::Protocol(format!(
                "the server's results lack stream id {}",
                t.stream.id
            )));
        }
        ends.push(EndStream::build(
            t,
            Some(sampler.extremes[i]),
            peer,
            session.udp,
            params.omit == 0,
        ));
    }
    let ours_cc = session.congestion();
    let theirs_cc = theirs.congestion_used.clone();
    let cc = if cfg.reverse {
        (theirs_cc, ours_cc)
    } else {
        (ours_cc, theirs_cc)
    };
    let mut result = EndResult::build(out.layout(), ends, usage, Some(peer_cpu(&theirs)), cc);
    if let Some(path) = &cfg.common.file {
        result.add_diskfile(path);
    }
    let end = out.end(&result);
    if cfg.common.verbose {
        let r = peer_cpu(&theirs);
        let (l, rr) = if cfg.reverse {
            ("receiver", "sender")
        } else {
            ("sender", "receiver")
        };
        out.text(&format!(
            "CPU Utilization: local/{l} {:.1}% ({:.1}%u/{:.1}%s), remote/{rr} {:.1}% ({:.1}%u/{:.1}%s)",
            usage.total, usage.user, usage.system, r.total, r.user, r.system
        ));
    }
    let mut top = Map::new();
    if let Some(text) = &theirs.server_output_text {
        out.text("\nServer output:");
        for line in text.lines() {
            out.text(line);
        }
        top.insert("server_output_text".into(), text.clone().into());
    }
    if let Some(j) = &theirs.server_output_json {
        top.insert("server_output_json".into(), j.clone());
    }
    out.text("\niperf Done.");
    let doc = out.document(Some(end), None, top);
    out.finish_json(&doc);
    say_done(&mut conn);
    Ok(())
}

fn session_bufs(session: &Session) -> (i32, i32) {
    session
        .streams
        .first()
        .map(|s| {
            let snd = sys::getsockopt_int(s.socket, libc::SOL_SOCKET, libc::SO_SNDBUF).unwrap_or(0);
            let rcv = sys::getsockopt_int(s.socket, libc::SOL_SOCKET, libc::SO_RCVBUF).unwrap_or(0);
            (snd, rcv)
        })
        .unwrap_or((0, 0))
}
