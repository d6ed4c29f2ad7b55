//! The server: many tests at once, each on its own thread, none able to wedge another.
//!
//! One thread accepts connections and holds them in the handshake [`gate`] (no thread
//! each) until each has sent its 37-byte cookie within the handshake deadline. A cookie
//! of a test that is opening streams makes it that test's data stream; any other cookie
//! is asked for its parameters, and only a valid parameter exchange takes a test slot
//! and a thread, within the server's and its source's share of slots and streams
//! ([`slots`]). UDP streams are matched to tests by the client's address ([`udp`]).
//! Every test ends at its declared end plus the grace whatever its client does
//! ([`watch`]), and every test ends when the server does (`--exit-after`).

mod gate;
mod params;
mod slots;
mod udp;
mod watch;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use netrig_core::iperf3::{Mode, Params, Protocol, Results, MAX_PARAMS_LEN, MAX_RESULTS_LEN};
use netrig_core::wire::iperf3::{Cookie, State};
use serde_json::Map;

use crate::auth;
use crate::config::{Family, Format, ServerConfig};
use crate::control::Control;
use crate::error::{ierr, PerfError, Result};
use crate::output::{EndResult, EndStream, Output, Sink, StartInfo};
use crate::report::{CpuMeter, Sampler};
use crate::session::{self, DataSock, DriveOpts, Ended, Session};
use crate::sys;
use gate::{Arrived, Caps, Gate, Ready};
use params::{check_params, streams_of};
use slots::{Slot, Slots};
use watch::{Watch, Watched};

/// Data connections handed to a test: (accept order, stream).
type Incoming = Receiver<(u64, TcpStream)>;

struct Shared {
    cfg: ServerConfig,
    sink: Sink,
    listen: SocketAddr,
    /// Tests that are accepting data connections, by cookie.
    pending: Mutex<HashMap<Cookie, Sender<(u64, TcpStream)>>>,
    /// Tests past stream setup; a late stream with their cookie is refused.
    running: Mutex<HashSet<Cookie>>,
    slots: Slots,
    tests: AtomicU64,
    hellos: udp::Hellos,
    watch: Watch,
    shutdown: AtomicBool,
}

fn bind_listener(cfg: &ServerConfig) -> Result<TcpListener> {
    let port = cfg.common.port;
    let addrs: Vec<SocketAddr> = match &cfg.common.bind {
        Some(b) => vec![crate::protocol::resolve(b, port, cfg.common.family)?],
        None => match cfg.common.family {
            Family::V4 => vec![SocketAddr::new([0u8; 4].into(), port)],
            Family::V6 => vec![SocketAddr::new(std::net::Ipv6Addr::UNSPECIFIED.into(), port)],
            Family::Any => vec![
                SocketAddr::new(std::net::Ipv6Addr::UNSPECIFIED.into(), port),
                SocketAddr::new([0u8; 4].into(), port),
            ],
        },
    };
    let mut last = None;
    for a in addrs {
        match TcpListener::bind(a) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    let e = last.unwrap_or_else(|| std::io::Error::other("no address to listen on"));
    Err(PerfError::Config(format!(
        "unable to start listener on port {port}: {e}"
    )))
}

pub fn run(cfg: &ServerConfig, sink: Sink) -> Result<()> {
    run_then(cfg, sink, |outcome| outcome)
}

/// Binds the listening socket (and `--bind-dev`).
fn listen(cfg: &ServerConfig) -> Result<TcpListener> {
    let listener = bind_listener(cfg)?;
    if let Some(dev) = &cfg.common.bind_dev {
        crate::sockopt::bind_to_device(listener.as_raw_fd(), dev)
            .map_err(|e| PerfError::Config(e.to_string()))?;
    }
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// Serves until a one-off test ends or `--idle-timeout` ends a one-off server. Once the
/// listening socket is up (or cannot be), `listening` hears it and may still refuse to
/// go on (a daemon's pidfile, its waiting parent).
pub fn run_then(
    cfg: &ServerConfig,
    sink: Sink,
    listening: impl FnOnce(std::result::Result<(), String>) -> std::result::Result<(), String>,
) -> Result<()> {
    let listener = match listen(cfg) {
        Ok(l) => l,
        Err(e) => {
            let _ = listening(Err(e.to_string()));
            return Err(e);
        }
    };
    listening(Ok(())).map_err(PerfError::Config)?;
    let mut listener = listener;
    let listen_addr = listener.local_addr()?;
    let shared = Arc::new(Shared {
        cfg: cfg.clone(),
        sink,
        listen: listen_addr,
        pending: Mutex::new(HashMap::new()),
        running: Mutex::new(HashSet::new()),
        slots: Slots::new(slots::Caps::of(cfg)),
        tests: AtomicU64::new(0),
        hellos: udp::Hellos::default(),
        watch: Watch::default(),
        shutdown: AtomicBool::new(false),
    });
    let started = Instant::now();
    // Bound now, so that the accepting thread polls it from the first UDP test on; if
    // it cannot be, the first UDP test tries again and says why.
    let _ = shared.hellos.socket(&listen_addr, cfg.common.bind_dev.as_deref());
    banner(&shared);
    let mut gate = Gate::new(Caps {
        deadline: cfg.handshake_timeout,
        per_source: cfg.max_pending_per_source.max(1),
        total: cfg.max_pending.max(1),
        max_params: MAX_PARAMS_LEN,
    });
    let mut pfds: Vec<libc::pollfd> = vec![];
    let mut accepted: u64 = 0;
    let mut idle_since = Instant::now();
    while !shared.shutdown.load(Relaxed) {
        if let Some(after) = cfg.exit_after.filter(|&t| started.elapsed() >= t) {
            let n = shared.watch.close_all(&format!(
                "the server stopped: its --exit-after {} s passed",
                after.as_secs_f64()
            ));
            crate::debug::line(|| format!("--exit-after: exiting, {n} tests ended"));
            shared.shutdown.store(true, Relaxed);
            break;
        }
        shared.watch.expire(Instant::now());
        // The listener, then the UDP streams' opening socket (always one entry: -1
        // when unbound, which poll skips), then the connections in the gate.
        pfds.clear();
        pfds.extend(
            [listener.as_raw_fd(), shared.hellos.fd().unwrap_or(-1)]
                .into_iter()
                .chain(gate.fds())
                .map(|fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                }),
        );
        let wait_ms = gate
            .next_deadline()
            .map(|d| d.saturating_duration_since(Instant::now()).as_millis() as i32 + 1)
            .unwrap_or(200)
            .clamp(0, 200);
        // SAFETY: pfds is valid for the call and its length is its element count.
        let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, wait_ms) };
        let now = Instant::now();
        if shared.slots.active() > 0 {
            idle_since = now;
        }
        if n > 0 && pfds[1].revents != 0 {
            shared.hellos.dispatch();
        }
        let readable: Vec<bool> = pfds[2..].iter().map(|p| n > 0 && p.revents != 0).collect();
        for r in gate.service(&readable, now) {
            route(&shared, &mut gate, r);
        }
        // Only when no connection is waiting: reopening the socket would reset it.
        let waiting = n > 0 && pfds[0].revents != 0;
        if let Some(idle) = cfg
            .idle_timeout
            .filter(|&t| !waiting && idle_since.elapsed() >= t)
        {
            if cfg.one_off {
                crate::debug::line(|| {
                    format!(
                        "no test for {} s in one-off mode (--idle-timeout): exiting",
                        idle.as_secs()
                    )
                });
                return Ok(());
            }
            // iperf3's restart: a fresh listening socket.
            crate::debug::line(|| {
                format!(
                    "no test for {} s (--idle-timeout): reopening the listening socket",
                    idle.as_secs()
                )
            });
            drop(listener);
            listener = listen(cfg)?;
            idle_since = Instant::now();
            continue;
        }
        // A bounded batch per round, so waiting connections are read between batches.
        for _ in 0..if waiting { 64 } else { 0 } {
            match listener.accept() {
                Ok((stream, peer)) => {
                    idle_since = Instant::now();
                    // Accept order is the order the client opened its streams in; stream
                    // roles (which send, which receive) depend on it, and cookies may
                    // complete in any order.
                    accepted += 1;
                    if let Some(r) = gate.admit(stream, sys::canonical(peer), accepted, Instant::now()) {
                        route(&shared, &mut gate, r);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.raw_os_error() == Some(libc::EMFILE) => {
                    std::thread::sleep(Duration::from_millis(50));
                    break;
                }
                Err(_) => break,
            }
        }
        for line in gate.reports(Instant::now()) {
            notice(&shared, &format!("netrig-perf: {line}"));
        }
    }
    // One-off, or --exit-after: let the tests' threads write their last words.
    let t0 = Instant::now();
    while shared.slots.active() > 0 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

fn banner(sh: &Shared) {
    if sh.cfg.common.format == crate::config::Format::Text {
        let n = sh.tests.load(Relaxed) + 1;
        let mut out = Output::new(sh.cfg.common.format, sh.sink.clone(), false);
        out.configure(&sh.cfg.common);
        out.text("-----------------------------------------------------------");
        out.text(&format!("Server listening on {} (test #{n})", sh.listen.port()));
        out.text("-----------------------------------------------------------");
    }
}

/// A line for whoever runs the server: in the text output, or on stderr beside JSON.
fn notice(sh: &Shared, line: &str) {
    if sh.cfg.common.format == Format::Text {
        let mut out = Output::new(sh.cfg.common.format, sh.sink.clone(), false);
        out.configure(&sh.cfg.common);
        out.text(line);
    } else {
        eprintln!("{line}");
    }
}

/// Where a connection goes once the gate lets it through: to the test its cookie names,
/// back into the gate to send its parameters, or to a test thread of its own.
fn route(sh: &Arc<Shared>, gate: &mut Gate, r: Ready) {
    match r {
        Ready::Cookie(a) => {
            let tx = sh.pending.lock().unwrap().get(&a.cookie).cloned();
            if let Some(tx) = tx {
                let _ = a.stream.set_nonblocking(false);
                let _ = tx.send((a.seq, a.stream));
            } else if sh.running.lock().unwrap().contains(&a.cookie) {
                deny(a.stream);
            } else {
                // A fresh challenge for this connection alone, if the server has a key.
                let challenge = match sh.cfg.common.auth_key.as_ref().map(|_| auth::Nonce::fresh()) {
                    None => None,
                    Some(Ok(n)) => Some(n),
                    Some(Err(e)) => {
                        let e = PerfError::Auth(format!("no challenge for this connection: {e}"));
                        return refuse_at_gate(sh, a, ierr::IEAUTHTEST, e, false);
                    }
                };
                if let Some(r) = gate.await_params(a, challenge) {
                    route(sh, gate, r);
                }
            }
        }
        // Before its proof is checked: on a server with a key, a stranger's.
        Ready::BadFrame { arrived, error } => {
            let keyless = sh.cfg.common.auth_key.is_none();
            refuse_at_gate(sh, arrived, ierr::IERECVPARAMS, error, keyless)
        }
        Ready::Params { arrived, body, proof } => {
            match check_params(&sh.cfg, &arrived.cookie, &body, proof.as_ref()) {
                // The proof is checked first: only a client with the key gets further.
                Err((code, e)) => refuse_at_gate(sh, arrived, code, e, code != ierr::IEAUTHTEST),
                Ok(params) => start_test(sh, arrived, params, body),
            }
        }
    }
}

/// ACCESS_DENIED ("the server is busy"), written without waiting.
fn deny(mut stream: TcpStream) {
    let _ = stream.write_all(&[State::AccessDenied.emit()]);
}

/// A test this server will not run: the client hears why; the log says who asked. A
/// one-off server ends after a refused test only if `ends_one_off` (the client had the
/// key, or the server has none, and asked for a test it cannot run): a stranger's
/// connection, or a test beside one running, leaves it waiting for its client.
fn refuse_at_gate(sh: &Shared, a: Arrived, code: i32, e: PerfError, ends_one_off: bool) {
    let mut ctrl = Control::new(a.stream);
    let e = refuse(&mut ctrl, code, e);
    notice(
        sh,
        &format!(
            "netrig-perf: error - {}, port {}: {e}",
            a.peer.ip(),
            a.peer.port()
        ),
    );
    if sh.cfg.one_off && ends_one_off {
        sh.shutdown.store(true, Relaxed);
    }
}

/// A test slot, its streams and a thread for a valid parameter exchange, or iperf3's
/// ACCESS_DENIED error ("the server is busy") with netrig's sentence after it: which
/// limit, and what to do.
fn start_test(sh: &Arc<Shared>, a: Arrived, params: Params, body: Vec<u8>) {
    let source = gate::source_key(a.peer.ip());
    let slot = match sh.slots.take(source, streams_of(&params)) {
        Ok(slot) => slot,
        Err(r) => {
            let e = PerfError::Config(r.sentence(&slots::source_label(source)));
            return refuse_at_gate(sh, a, ierr::IEACCESSDENIED, e, false);
        }
    };
    let _ = a.stream.set_nonblocking(false);
    let sh2 = sh.clone();
    // If no thread starts, the closure and the slot in it are dropped.
    let _ = std::thread::Builder::new()
        .name("test".into())
        .spawn(move || handle_test(sh2, slot, a.stream, a.cookie, a.peer, params, body));
}

fn handle_test(
    sh: Arc<Shared>,
    slot: Slot,
    stream: TcpStream,
    cookie: Cookie,
    peer: SocketAddr,
    params: Params,
    body: Vec<u8>,
) {
    let number = sh.tests.fetch_add(1, Relaxed) + 1;
    let mut out = Output::new(sh.cfg.common.format, sh.sink.clone(), true);
    out.configure(&sh.cfg.common);
    crate::debug::line(|| format!("parameters received: {}", String::from_utf8_lossy(&body)));
    let setup = sh.cfg.handshake_timeout * 2;
    let why = format!(
        "its streams were not all connected within {:.1} s (twice --handshake-timeout)",
        setup.as_secs_f64()
    );
    let result = match sh.watch.add(&stream, Instant::now() + setup + WATCH_SLACK, why) {
        Ok(entry) => run_test(&sh, &entry.test, stream, cookie, peer, &params, &mut out).map_err(|e| {
            match entry.test.closed() {
                // What failed then (a read on a closed connection) is only the sequel.
                Some(why) => format!("closed by the server: {why}"),
                None => e.to_string(),
            }
        }),
        Err(e) => Err(format!("cannot watch the test's control connection: {e}")),
    };
    sh.pending.lock().unwrap().remove(&cookie);
    sh.running.lock().unwrap().remove(&cookie);
    if let Err(e) = &result {
        out.text(&format!("netrig-perf: error - test #{number}: {e}"));
        if sh.cfg.common.format != crate::config::Format::Text {
            eprintln!("netrig-perf: error - test #{number}: {e}");
        }
    }
    if sh.cfg.one_off {
        sh.shutdown.store(true, Relaxed);
    } else {
        banner(&sh);
    }
    drop(slot);
}

/// Past a deadline of the watch, the time a test's thread has to notice it is over by
/// itself before the watch closes it.
const WATCH_SLACK: Duration = Duration::from_secs(1);

fn refuse(ctrl: &mut Control, code: i32, e: PerfError) -> PerfError {
    let _ = ctrl.send_error(code, &e.to_string());
    e
}

fn run_test(
    sh: &Arc<Shared>,
    watched: &Watched,
    stream: TcpStream,
    cookie: Cookie,
    peer: SocketAddr,
    params: &Params,
    out: &mut Output,
) -> Result<()> {
    let cfg = &sh.cfg;
    out.text(&format!(
        "Accepted connection from {}, port {}",
        peer.ip(),
        peer.port()
    ));
    out.set_start_value(
        "accepted_connection",
        serde_json::json!({ "host": peer.ip().to_string(), "port": peer.port() }),
    );
    let mut ctrl = Control::new(stream);
    if let Some(cpu) = params.server_affinity {
        // This test's thread and the stream threads it starts run on that CPU.
        crate::sockopt::set_cpu_affinity(cpu as usize).map_err(|e| {
            let e = PerfError::Config(format!("-A: the client's server CPU: {e}"));
            refuse(&mut ctrl, ierr::IEAFFINITY, e)
        })?;
        crate::debug::line(|| format!("test pinned to CPU {cpu} (-A n,{cpu})"));
    }
    let mode = params.mode();
    let p = params.parallel as usize;
    let (expected, senders_from) = match mode {
        Mode::Bulk if params.bidirectional => (2 * p, p),
        Mode::Bulk if params.reverse => (p, 0),
        Mode::Bulk => (p, p),
        Mode::Probe => (p, p),
        Mode::Rr if params.netrig.as_ref().map(|n| n.rr_new_conn).unwrap_or(false) => (0, 0),
        Mode::Rr => (p, p),
    };

    let mut session = Session::new(params);
    if mode == Mode::Bulk {
        session.file = cfg.common.file.clone();
    }
    let rr_incoming = match params.protocol {
        Protocol::Tcp => {
            let (tcp, rx) = collect_tcp(sh, &mut ctrl, cookie, expected, params)?;
            for (i, s) in tcp.into_iter().enumerate() {
                watched.add_data(&s);
                let (l, r) = (sys::canonical(s.local_addr()?), sys::canonical(s.peer_addr()?));
                out.connected(s.as_raw_fd(), &l, &r);
                session.add(DataSock::Tcp(s), i >= senders_from, l.to_string(), r.to_string());
            }
            if mode == Mode::Rr {
                Some(rx)
            } else {
                sh.pending.lock().unwrap().remove(&cookie);
                None
            }
        }
        Protocol::Udp => {
            let udp = udp::collect(sh, &mut ctrl, peer, expected, params)?;
            for (i, s) in udp.into_iter().enumerate() {
                let (l, r) = (sys::canonical(s.local_addr()?), sys::canonical(s.peer_addr()?));
                out.connected(s.as_raw_fd(), &l, &r);
                session.add(DataSock::Udp(s), i >= senders_from, l.to_string(), r.to_string());
            }
            None
        }
    };
    sh.running.lock().unwrap().insert(cookie);

    out.start(&StartInfo::of(params, &cookie, false));
    ctrl.sock
        .write_all(&[State::TestStart.emit(), State::TestRunning.emit()])?;

    let rr_refused = Arc::new(AtomicU64::new(0));
    let cpu = CpuMeter::start();
    let start_ns = sys::monotonic_ns();
    watched.set_run(session.ctl.clone());
    let mut helpers = vec![];
    match mode {
        Mode::Bulk => session.start(params, start_ns)?,
        Mode::Probe => helpers.extend(crate::probe::serve(&session)?),
        Mode::Rr => helpers.extend(crate::rr::serve(
            &session,
            rr_incoming,
            cfg.max_rr_response,
            crate::rr::max_new_conns(params.parallel),
            rr_refused.clone(),
        )?),
    }
    let bulk = mode == Mode::Bulk;
    let mut sampler = Sampler::new(
        if bulk { session.streams.clone() } else { vec![] },
        session.udp,
        start_ns,
        params.omit > 0,
    );
    let limit = if params.time > 0 {
        params.time + params.omit
    } else {
        cfg.limits.max_time
    };
    let grace = cfg.grace.max(cfg.handshake_timeout);
    let declared = if params.time > 0 {
        format!(
            "its declared end (-t {} s after -O {} s)",
            params.time, params.omit
        )
    } else {
        format!(
            "the longest test this server runs (--max-duration {} s: a test of -n or -k declares no duration)",
            limit
        )
    };
    watched.set_deadline(
        Instant::now() + Duration::from_secs(limit) + grace + cfg.handshake_timeout + WATCH_SLACK,
        format!(
            "it went on past {declared}, the grace ({:.1} s: --grace, at least --handshake-timeout) and {:.1} s more for its results",
            grace.as_secs_f64(),
            cfg.handshake_timeout.as_secs_f64()
        ),
    );
    let opts = DriveOpts {
        interval: if bulk { cfg.common.interval } else { Duration::ZERO },
        omit: Duration::from_secs(params.omit),
        duration: None,
        bytes: 0,
        blocks: 0,
        is_client: false,
        // Past the test's time, the client's TEST_END is still on its way: a server that
        // gives a slow path's handshake more than the grace (a long RTT) gives its end as
        // much (at a 10 s RTT the TEST_END comes 10 s after the last data is due).
        deadline: Some(Duration::from_secs(limit) + grace),
        tcp_info_interval: None,
        rcv_timeout: bulk.then_some(cfg.common.rcv_timeout),
        rate_limit: if bulk { cfg.bitrate_limit } else { None },
        end_when_senders_done: false,
    };
    let ended = session::drive(&mut ctrl, &session, out, &mut sampler, &opts);
    let end_ns = sys::monotonic_ns();
    session.stop_at(end_ns);
    session.shutdown_sockets();
    for h in helpers {
        let _ = h.join();
    }
    let refused = rr_refused.load(Relaxed);
    if refused > 0 {
        let line = format!(
            "netrig-perf: --rr-new-conn: closed {refused} connection{} of the client's beyond the {} a test of -P {} may have open at once (--max-parallel {})",
            if refused == 1 { "" } else { "s" },
            crate::rr::max_new_conns(params.parallel),
            params.parallel,
            cfg.limits.max_parallel
        );
        notice(sh, &line);
    }
    let ended = match ended {
        Err(e @ PerfError::NoData { .. }) => return Err(refuse(&mut ctrl, ierr::IENOMSG, e)),
        Err(e @ PerfError::TotalRate { .. }) => return Err(refuse(&mut ctrl, ierr::IETOTALRATE, e)),
        other => other,
    };
    match ended? {
        Ended::Peer(State::TestEnd) => {}
        Ended::Peer(State::ClientTerminate) => {
            return Err(PerfError::PeerClosed("(the client has terminated)".into()))
        }
        Ended::Peer(s) => {
            let e = PerfError::Protocol(format!("received an unexpected control message {s:?}"));
            return Err(refuse(&mut ctrl, 110, e));
        }
        Ended::Done | Ended::Deadline => {
            let _ = ctrl.send_state(State::ServerTerminate);
            return Err(PerfError::Timeout(
                "for the client to end its test: ended it".into(),
            ));
        }
    }
    if bulk {
        session::final_interval(&mut sampler, out, end_ns, cfg.common.interval);
    }
    let totals = sampler.totals(end_ns);
    let usage = cpu.usage();
    let ends: Vec<EndStream> = totals
        .iter()
        .enumerate()
        .map(|(i, t)| EndStream::build(t, Some(sampler.extremes[i]), None, session.udp, params.omit == 0))
        .collect();
    let end = if bulk {
        let mut result = EndResult::build(out.layout(), ends, usage, None, (session.congestion(), None));
        if let Some(path) = &session.file {
            result.add_diskfile(path);
        }
        Some(out.end(&result))
    } else {
        None
    };

    ctrl.send_state(State::ExchangeResults)?;
    let body = ctrl.recv_json(MAX_RESULTS_LEN, cfg.handshake_timeout, "the client's results")?;
    let _client_results = Results::parse(&body)?;
    let mut ours = session.results(&totals, usage);
    session::add_sender_extremes(&mut ours, &totals, &sampler.extremes);
    if !bulk {
        ours.streams = session
            .streams
            .iter()
            .map(|s| netrig_core::iperf3::StreamResult {
                id: s.id,
                ..Default::default()
            })
            .collect();
    }
    if params.get_server_output {
        if cfg.common.format == crate::config::Format::Json {
            ours.server_output_json = Some(out.document(end.clone(), None, Map::new()));
        } else {
            ours.server_output_text = out.captured.clone();
        }
    }
    ctrl.send_json(&serde_json::to_value(&ours).unwrap_or_default())?;
    ctrl.send_state(State::DisplayResults)?;
    let doc = out.document(end, None, Map::new());
    out.finish_json(&doc);
    let _ = ctrl.recv_state(Duration::from_secs(5), "IPERF_DONE");
    Ok(())
}

/// Announces CREATE_STREAMS and takes `expected` TCP data connections bearing the
/// test's cookie (handed over by the connection threads).
fn collect_tcp(
    sh: &Shared,
    ctrl: &mut Control,
    cookie: Cookie,
    expected: usize,
    params: &Params,
) -> Result<(Vec<TcpStream>, Incoming)> {
    let (tx, rx) = mpsc::channel();
    sh.pending.lock().unwrap().insert(cookie, tx);
    ctrl.send_state(State::CreateStreams)?;
    let deadline = Instant::now() + sh.cfg.handshake_timeout * 2;
    let mut got = vec![];
    while got.len() < expected {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok((seq, s)) = rx.recv_timeout(left) else {
            let e = PerfError::Timeout(format!(
                "waiting for data streams: {} of {expected} connected",
                got.len()
            ));
            return Err(refuse(ctrl, ierr::IESTREAMACCEPT, e));
        };
        let _ = s.set_read_timeout(None);
        apply_server_tcp_opts(&s, params)?;
        got.push((seq, s));
    }
    // Roles follow the order the client opened its streams in (the accept order);
    // the connection threads may hand them over in any order.
    got.sort_by_key(|(seq, _)| *seq);
    Ok((got.into_iter().map(|(_, s)| s).collect(), rx))
}

/// The address UDP streams arrive at: the control connection's local address.
fn udp_listen_addr(sh: &Shared, ctrl: &Control) -> Result<SocketAddr> {
    let local = ctrl.sock.local_addr()?;
    Ok(match (&sh.cfg.common.bind, sh.listen.ip()) {
        (None, ip) if ip.is_unspecified() => SocketAddr::new(ip, sh.listen.port()),
        _ => SocketAddr::new(local.ip(), sh.listen.port()),
    })
}

fn apply_server_tcp_opts(s: &TcpStream, p: &Params) -> Result<()> {
    let fd = s.as_raw_fd();
    let v6 = matches!(s.local_addr().map(|a| a.ip()), Ok(IpAddr::V6(_)));
    let mut o = crate::protocol::tcp_opts(p);
    o.mss = 0; // only effective before the handshake; the client's MSS governs both ways
    let cc = o.congestion.take();
    crate::sockopt::apply_tcp_opts(fd, &o, v6)?;
    crate::debug::line(|| {
        format!(
            "TCP stream (socket {fd}): {}",
            crate::sockopt::describe(fd, v6, true)
        )
    });
    if let Some(cc) = cc {
        // As iperf3: an unknown algorithm on the server is a warning, not a failure.
        let _ = sys::set_congestion(fd, &cc);
    }
    Ok(())
}
