//! TCP request/response transactions (a netrig extra): "page fetch" timing. Each
//! transaction sends a 16-byte request and reads the N-byte response; with
//! `--rr-new-conn` it also opens (and closes) its own connection, as a browser
//! fetching a page over a fresh connection does.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use netrig_core::stats::Summary;
use netrig_core::wire::probe::RrRequest;
use serde_json::Map;

use crate::config::{ClientConfig, ClientMode};
use crate::engine::{RunControl, POLL};
use crate::error::{PerfError, Result};
use crate::extras::{self, Rr, RrEnd, RrSample, RrWindow, RR_COLUMNS};
use crate::output::Output;
use crate::protocol::{self, await_running, exchange_results, negotiate, say_done, Connection};
use crate::session::{DataSock, Session};
use crate::sys;

/// The most connections a new-connection test may have open at the server at once,
/// for `parallel` client workers: each worker holds one connection at a time, and the
/// server may not yet have seen the close of a worker's previous connection when its
/// next one arrives, hence twice `-P` (which the server caps with `--max-parallel`).
/// Connections the client has already closed do not count (see `serve`).
pub fn max_new_conns(parallel: u32) -> usize {
    2 * parallel.max(1) as usize
}

/// Handler threads of connections the client has closed that may still be running
/// beyond `max_new_conns`: on a busy host a handler sees its connection's end only when
/// it next gets the CPU (a server starved by a CPU hog had 42 of a `-P 2` client's
/// closed connections still unreaped). A hard bound on threads all the same.
const CLOSING_SLACK: usize = 64;

/// Server side: a handler per connection, and a dispatcher for connections that arrive
/// during the test (new-connection mode), at most `max_conns` of them open at once: one
/// more is closed at once and counted in `refused`.
pub fn serve(
    session: &Session,
    incoming: Option<Receiver<(u64, TcpStream)>>,
    max_response: u64,
    max_conns: usize,
    refused: Arc<AtomicU64>,
) -> Result<Vec<JoinHandle<()>>> {
    let mut handles = vec![];
    for i in 0..session.streams.len() {
        if let Some(DataSock::Tcp(t)) = session.sock(i) {
            let (t, ctl) = (t.try_clone()?, session.ctl.clone());
            handles.push(std::thread::spawn(move || handle(t, &ctl, max_response)));
        }
    }
    if let Some(rx) = incoming {
        let ctl = session.ctl.clone();
        handles.push(std::thread::spawn(move || {
            // Each handler with its connection's fd (a clone), to tell the connections
            // the client still holds from those it closed but whose handler has not run.
            let mut workers: Vec<(JoinHandle<()>, TcpStream)> = vec![];
            while !ctl.stopped() {
                let Ok((_, t)) = rx.recv_timeout(POLL) else {
                    workers.retain(|(w, _)| !w.is_finished());
                    continue;
                };
                workers.retain(|(w, _)| !w.is_finished());
                let held = if workers.len() < max_conns {
                    workers.len()
                } else {
                    workers
                        .iter()
                        .filter(|(_, c)| !sys::peer_closed(c.as_raw_fd()))
                        .count()
                };
                let room = held < max_conns && workers.len() < max_conns + CLOSING_SLACK;
                let Some(watch) = room.then(|| t.try_clone().ok()).flatten() else {
                    refused.fetch_add(1, Relaxed);
                    continue; // dropped: closed
                };
                let ctl = ctl.clone();
                match std::thread::Builder::new()
                    .name("rr".into())
                    .spawn(move || handle(t, &ctl, max_response))
                {
                    Ok(w) => workers.push((w, watch)),
                    Err(_) => {
                        refused.fetch_add(1, Relaxed);
                    }
                }
            }
            for (w, _) in workers {
                let _ = w.join();
            }
        }));
    }
    Ok(handles)
}

fn handle(mut t: TcpStream, ctl: &RunControl, max_response: u64) {
    let _ = t.set_nodelay(true);
    let _ = sys::set_timeouts(t.as_raw_fd(), POLL);
    let body = vec![b'x'; 64 * 1024];
    let mut req = [0u8; RrRequest::LEN];
    'conn: while !ctl.stopped() {
        let mut got = 0;
        while got < req.len() {
            match t.read(&mut req[got..]) {
                Ok(0) => return,
                Ok(n) => got += n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if ctl.stopped() {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
        let Ok(r) = RrRequest::parse(&req, max_response) else {
            return;
        };
        let mut left = r.response_len as usize;
        while left > 0 {
            let n = left.min(body.len());
            match t.write(&body[..n]) {
                Ok(k) => left -= k,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if ctl.stopped() {
                        break 'conn;
                    }
                }
                Err(_) => return,
            }
        }
    }
}

/// One transaction's outcome.
#[derive(Debug, Clone, Copy)]
struct Txn {
    t: f64,
    ms: Option<f64>,
}

fn one(conn_stream: &mut TcpStream, len: u64, buf: &mut [u8]) -> std::io::Result<()> {
    conn_stream.write_all(&RrRequest { response_len: len }.emit())?;
    let mut left = len as usize;
    while left > 0 {
        let cap = left.min(buf.len());
        let n = conn_stream.read(&mut buf[..cap])?;
        if n == 0 {
            return Err(std::io::Error::new(
                ErrorKind::UnexpectedEof,
                "server closed mid-response",
            ));
        }
        left -= n;
    }
    Ok(())
}

struct Worker {
    persistent: Option<TcpStream>,
}

#[allow(clippy::too_many_arguments)]
fn run_worker(
    cfg: &ClientConfig,
    conn: &Connection,
    params: &netrig_core::iperf3::Params,
    index: usize,
    mut w: Worker,
    log: &Mutex<Vec<Txn>>,
    ctl: &RunControl,
    start_mono: u64,
    response: u64,
    interval: Duration,
) {
    let mut buf = vec![0u8; 256 * 1024];
    let step = interval.as_nanos() as u64;
    let mut k = 0u64;
    while !ctl.stopped() {
        if step > 0 {
            sys::sleep_until_ns(start_mono + k * step);
            k += 1;
            if ctl.stopped() {
                break;
            }
        }
        let t0 = sys::monotonic_ns();
        let outcome = match w.persistent.as_mut() {
            Some(s) => one(s, response, &mut buf).map_err(PerfError::from),
            None => protocol::open_tcp(cfg, conn, params, index).and_then(|mut s| {
                let _ = s.set_nodelay(true);
                one(&mut s, response, &mut buf).map_err(PerfError::from)
            }),
        };
        let t1 = sys::monotonic_ns();
        let ok = outcome.is_ok();
        log.lock().unwrap().push(Txn {
            t: (t0 - start_mono) as f64 / 1e9,
            ms: ok.then(|| (t1 - t0) as f64 / 1e6),
        });
        if !ok && w.persistent.is_some() {
            break; // the reused connection is gone
        }
        if !ok {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn window(log: &[Txn], start: f64, end: f64) -> (u64, u64, Summary) {
    let sel: Vec<&Txn> = log.iter().filter(|x| x.t >= start && x.t < end).collect();
    let times: Vec<f64> = sel.iter().filter_map(|x| x.ms).collect();
    (
        times.len() as u64,
        (sel.len() - times.len()) as u64,
        Summary::of(&times),
    )
}

fn line(label: &str, start: f64, end: f64, done: u64, failed: u64, s: &Summary) -> String {
    let tps = if end > start {
        done as f64 / (end - start)
    } else {
        0.0
    };
    format!(
        "{label} {start:6.2}-{end:<6.2} sec  {done:6} done {failed:4} failed  {tps:9.1} trans/s  time ms: mean {:.3} p50 {:.3} p90 {:.3} p99 {:.3} max {:.3}",
        s.mean, s.p50, s.p90, s.p99, s.max
    )
}

pub fn run_client(cfg: &ClientConfig, out: &mut Output) -> Result<()> {
    let ClientMode::Rr {
        response,
        new_conn,
        interval,
    } = cfg.mode.clone()
    else {
        unreachable!()
    };
    out.text(&format!(
        "Transactions with host {}, port {}: {response}-byte responses, {} connection{}",
        cfg.host,
        cfg.common.port,
        if new_conn { "a new" } else { "one reused" },
        if new_conn { " each" } else { " per stream" }
    ));
    let (mut conn, params) = negotiate(cfg)?;
    let mut workers = vec![];
    for i in 0..params.parallel as usize {
        let persistent = if new_conn {
            None
        } else {
            let s = protocol::open_tcp(cfg, &conn, &params, i)?;
            let _ = s.set_nodelay(true);
            let (l, r) = (s.local_addr()?, s.peer_addr()?);
            out.connected(s.as_raw_fd(), &l, &r);
            Some(s)
        };
        workers.push(Worker { persistent });
    }
    await_running(&mut conn)?;
    let log = Arc::new(Mutex::new(Vec::<Txn>::new()));
    let ctl = RunControl::new(0, 0);
    let start_mono = sys::monotonic_ns();
    let conn = Arc::new(Mutex::new(conn));
    let mut handles = vec![];
    {
        // Workers need the server address and cookie, not the control socket.
        let c = conn.lock().unwrap();
        for (i, w) in workers.into_iter().enumerate() {
            let view = Connection {
                ctrl: crate::control::Control::new(c.ctrl.sock.try_clone()?),
                cookie: c.cookie,
                server: c.server,
                bind: c.bind,
                mss: c.mss,
            };
            let (cfg, params, log, ctl) = (cfg.clone(), params.clone(), log.clone(), ctl.clone());
            handles.push(std::thread::spawn(move || {
                run_worker(
                    &cfg, &view, &params, i, w, &log, &ctl, start_mono, response, interval,
                )
            }));
        }
    }
    let secs = cfg.time.max(1) as f64;
    let report = cfg.common.interval.as_secs_f64();
    let mut next = if report > 0.0 { report } else { f64::MAX };
    let label = "[TXN]";
    loop {
        let t = (sys::monotonic_ns() - start_mono) as f64 / 1e9;
        if t >= next && next <= secs + 1e-9 {
            let (d, f, s) = window(&log.lock().unwrap(), next - report, next);
            out.text(&line(label, next - report, next, d, f, &s));
            let w = RrWindow {
                start: next - report,
                end: next,
                transactions: d,
                failed: f,
                time_ms: (&s).into(),
            };
            out.push_interval(extras::to_value(&Rr { rr: w }));
            next += report;
        }
        if t >= secs {
            break;
        }
        let state = conn.lock().unwrap().ctrl.poll_state(Duration::from_millis(10))?;
        if let Some(state) = state {
            ctl.stop.store(true, Relaxed);
            return Err(PerfError::Protocol(format!(
                "unexpected {state:?} during the transactions"
            )));
        }
    }
    ctl.stop.store(true, Relaxed);
    for h in handles {
        let _ = h.join();
    }
    let log = log.lock().unwrap().clone();
    let (done, failed, s) = window(&log, 0.0, secs);
    let results = netrig_core::iperf3::Results::default();
    let mut conn = Arc::try_unwrap(conn)
        .map_err(|_| PerfError::Protocol("connection still shared".into()))?
        .into_inner()
        .unwrap();
    let _ = exchange_results(&mut conn, &results)?;
    out.text(crate::output::SEPARATOR);
    out.text(&line(label, 0.0, secs, done, failed, &s));
    let summary = RrEnd {
        seconds: secs,
        transactions: done,
        failed,
        transactions_per_second: done as f64 / secs,
        response_bytes: response,
        new_connection: new_conn,
        time_ms: (&s).into(),
        samples: log.iter().map(|x| RrSample(x.t, x.ms)).collect(),
        samples_columns: RR_COLUMNS.iter().map(|c| c.to_string()).collect(),
    };
    let end = extras::to_value(&Rr { rr: summary });
    out.event("end", end.clone());
    out.text("\nnetrig-perf Done.");
    let doc = out.document(Some(end), None, Map::new());
    out.finish_json(&doc);
    say_done(&mut conn);
    if done == 0 {
        return Err(PerfError::Protocol(format!(
            "no transaction completed ({failed} failed)"
        )));
    }
    Ok(())
}
