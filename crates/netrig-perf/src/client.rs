//! The client: connect, agree on parameters, open the streams, run, exchange results.
//! Speaks iperf3 3.12's protocol, so the peer may be iperf3 or netrig-perf.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use netrig_core::iperf3::{Mode, NetrigParams, Params, Protocol, Results, MAX_RESULTS_LEN};
use netrig_core::wire::iperf3::{Cookie, State, UDP_CONNECT_MSG, UDP_CONNECT_REPLY};
use serde_json::{Map, Value};

use crate::auth::{self, AuthKey, Nonce};
use crate::config::{ClientConfig, ClientMode, Family};
use crate::control::Control;
use crate::error::{PerfError, Result};
use crate::output::{EndStream, Output, Sink, StartInfo};
use crate::report::{CpuMeter, CpuUsage, Sampler};
use crate::session::{self, default_len, DataSock, DriveOpts, Ended, Session};
use crate::sockopt::{self, SockExtras};
use crate::sys::{self, TcpOpts};

/// Protocol version of netrig's extras.
pub const NETRIG_PROTO: u32 = 1;
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);

pub fn resolve(host: &str, port: u16, family: Family) -> Result<SocketAddr> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|_| PerfError::Resolve(host.to_string()))?
        .filter(|a| match family {
            Family::Any => true,
            Family::V4 => a.is_ipv4(),
            Family::V6 => a.is_ipv6(),
        })
        .collect();
    addrs
        .first()
        .copied()
        .ok_or_else(|| PerfError::Resolve(host.to_string()))
}

/// A connected control channel, after the cookie went out.
pub struct Connection {
    pub ctrl: Control,
    pub cookie: Cookie,
    pub server: SocketAddr,
    pub bind: Option<SocketAddr>,
    pub mss: u32,
}

pub fn connect(cfg: &ClientConfig) -> Result<Connection> {
    let server = resolve(&cfg.host, cfg.common.port, cfg.common.family)?;
    let bind = match &cfg.common.bind {
        Some(b) => Some(resolve(b, 0, cfg.common.family)?),
        None => None,
    };
    let mut ctrl_opts = TcpOpts::default();
    ctrl_opts.extra.bind_dev = cfg.common.bind_dev.clone();
    let sock =
        sys::tcp_connect(&server, bind.as_ref(), &ctrl_opts, cfg.connect_timeout).map_err(|source| {
            PerfError::Connect {
                addr: server.to_string(),
                source,
            }
        })?;
    let mss = sys::getsockopt_int(sock.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_MAXSEG).unwrap_or(0) as u32;
    let cookie = Cookie::from_random(&sys::random_bytes::<36>());
    let mut ctrl = Control::new(sock);
    ctrl.setup_timeout = Some(cfg.connect_timeout.max(Duration::from_secs(1)));
    ctrl.sock.write_all(cookie.as_bytes())?;
    Ok(Connection {
        ctrl,
        cookie,
        server,
        bind,
        mss,
    })
}

/// Reads the next state, turning the server's refusals into errors.
pub fn expect(ctrl: &mut Control, want: State, what: &str) -> Result<()> {
    let timeout = ctrl.setup_timeout.unwrap_or(SETUP_TIMEOUT);
    match ctrl.recv_state(timeout, what)? {
        s if s == want => Ok(()),
        other => Err(unexpected(ctrl, other, want)),
    }
}

/// A state other than the one wanted, as an error: the server's refusal in its words.
fn unexpected(ctrl: &mut Control, got: State, want: State) -> PerfError {
    match got {
        State::AccessDenied => PerfError::Busy,
        State::ServerError => ctrl.read_error(),
        State::ServerTerminate => PerfError::Server("the server has terminated".into()),
        other => PerfError::Protocol(format!("expected {want:?}, got {other:?}")),
    }
}

/// The server's parameter request, after its challenge if it has a key (see
/// [`crate::auth`]): the challenge's nonce, or None from a keyless server. A key on
/// one side only is an error naming the mismatch.
fn await_param_request(ctrl: &mut Control, key: Option<&AuthKey>) -> Result<Option<Nonce>> {
    let timeout = ctrl.setup_timeout.unwrap_or(SETUP_TIMEOUT);
    let what = "the server's parameter request";
    let byte = ctrl.recv_byte(timeout, what)?;
    if byte == auth::CHALLENGE_STATE {
        crate::debug::line(|| "control: received the server's auth challenge".into());
        if key.is_none() {
            return Err(PerfError::Auth(
                "the server requires a key and this client has none: give it the server's key with --auth-key-file PATH or NETRIG_PERF_KEY".into(),
            ));
        }
        let body = ctrl.recv_json(auth::MAX_FRAME, timeout, "the server's auth challenge")?;
        let nonce = Nonce::parse_challenge(&body).map_err(PerfError::Protocol)?;
        expect(ctrl, State::ParamExchange, what)?;
        return Ok(Some(nonce));
    }
    match State::parse(byte)? {
        State::ParamExchange if key.is_some() => Err(PerfError::Auth(
            "this client has a key but the server asked for parameters without a challenge: the server has no key (or is iperf3, or a netrig-perf older than the challenge); give both sides the same key, or neither".into(),
        )),
        State::ParamExchange => Ok(None),
        other => Err(unexpected(ctrl, other, State::ParamExchange)),
    }
}

pub fn build_params(cfg: &ClientConfig, conn: &Connection) -> Params {
    let (mode, rr_response, rr_new_conn) = match &cfg.mode {
        ClientMode::Bulk => (Mode::Bulk, None, false),
        ClientMode::Probe { .. } => (Mode::Probe, None, false),
        ClientMode::Rr {
            response, new_conn, ..
        } => (Mode::Rr, Some(*response), *new_conn),
    };
    let protocol = match cfg.mode {
        ClientMode::Probe { .. } => Protocol::Udp,
        ClientMode::Rr { .. } => Protocol::Tcp,
        ClientMode::Bulk => cfg.protocol,
    };
    let len = if cfg.len > 0 {
        cfg.len
    } else {
        default_len(protocol, conn.mss)
    };
    let bandwidth = match (protocol, cfg.rate) {
        (_, Some(r)) => r,
        (Protocol::Udp, None) if mode == Mode::Bulk => 1024 * 1024,
        _ => 0,
    };
    // The proof travels in a frame of its own, over these parameters' exact bytes.
    let netrig = (mode != Mode::Bulk || cfg.no_gso).then_some(NetrigParams {
        mode,
        version: NETRIG_PROTO,
        rr_response,
        rr_new_conn,
        no_gso: cfg.no_gso,
        auth: None,
    });
    Params {
        protocol,
        omit: cfg.omit,
        time: if cfg.bytes > 0 || cfg.blocks > 0 {
            0
        } else {
            cfg.time
        },
        bytes: cfg.bytes,
        blocks: cfg.blocks,
        mss: cfg.mss,
        nodelay: cfg.nodelay,
        parallel: cfg.parallel,
        reverse: cfg.reverse,
        bidirectional: cfg.bidir,
        window: cfg.window,
        len,
        bandwidth,
        fqrate: cfg.fq_rate,
        pacing_timer: cfg.pacing_timer_us,
        burst: cfg.burst,
        tos: cfg.tos,
        server_affinity: cfg.server_affinity,
        flowlabel: cfg.flowlabel,
        dont_fragment: cfg.dont_fragment,
        congestion: cfg.congestion.clone(),
        title: cfg.title.clone(),
        extra_data: cfg.extra_data.clone(),
        get_server_output: cfg.get_server_output,
        udp_counters_64bit: cfg.udp_counters_64bit,
        repeating_payload: cfg.repeating_payload,
        zerocopy: cfg.zerocopy,
        client_version: Some("3.12".into()),
        netrig,
    }
}

pub fn tcp_opts(p: &Params) -> TcpOpts {
    TcpOpts {
        window: p.window,
        mss: p.mss,
        nodelay: p.nodelay,
        congestion: p.congestion.clone(),
        tos: p.tos,
        extra: SockExtras {
            fq_rate_bps: p.fqrate,
            ..Default::default()
        },
    }
}

/// The client's own options on a TCP data socket, beyond the parameters both sides apply.
fn client_tcp_opts(cfg: &ClientConfig, p: &Params) -> TcpOpts {
    let mut o = tcp_opts(p);
    o.extra.user_timeout_ms = cfg
        .snd_timeout
        .map(|d| d.as_millis().min(u32::MAX as u128) as u32)
        .unwrap_or(0);
    o.extra.bind_dev = cfg.common.bind_dev.clone();
    o.extra.flowlabel = cfg.flowlabel;
    o
}

/// Opens one TCP data stream and identifies it with the cookie.
pub fn open_tcp(cfg: &ClientConfig, conn: &Connection, p: &Params, index: usize) -> Result<TcpStream> {
    let bind = local_bind(cfg, conn, index);
    let mut s = sys::tcp_connect(
        &conn.server,
        bind.as_ref(),
        &client_tcp_opts(cfg, p),
        cfg.connect_timeout,
    )
    .map_err(|source| {
        if source.kind() == std::io::ErrorKind::InvalidInput || source.raw_os_error() == Some(libc::ENOENT) {
            PerfError::Config(source.to_string())
        } else {
            PerfError::Connect {
                addr: conn.server.to_string(),
                source,
            }
        }
    })?;
    s.write_all(conn.cookie.as_bytes())?;
    crate::debug::line(|| {
        format!(
            "TCP stream {index} (socket {}): {}",
            s.as_raw_fd(),
            sockopt::describe(s.as_raw_fd(), conn.server.is_ipv6(), true)
        )
    });
    Ok(s)
}

fn local_bind(cfg: &ClientConfig, conn: &Connection, index: usize) -> Option<SocketAddr> {
    let port = cfg.cport.map(|p| p.wrapping_add(index as u16)).unwrap_or(0);
    match (conn.bind, port) {
        (Some(b), p) => Some(SocketAddr::new(b.ip(), p)),
        (None, 0) => None,
        (None, p) => Some(SocketAddr::new(
            if conn.server.is_ipv4() {
                [0u8; 4].into()
            } else {
                std::net::Ipv6Addr::UNSPECIFIED.into()
            },
            p,
        )),
    }
}

/// Opens one UDP stream: the "9876"/"6789" handshake, resent until answered.
pub fn open_udp(cfg: &ClientConfig, conn: &Connection, p: &Params, index: usize) -> Result<UdpSocket> {
    let local = local_bind(cfg, conn, index).unwrap_or_else(|| {
        SocketAddr::new(
            if conn.server.is_ipv4() {
                [0u8; 4].into()
            } else {
                std::net::Ipv6Addr::UNSPECIFIED.into()
            },
            0,
        )
    });
    let sock = UdpSocket::bind(local)?;
    let extra = SockExtras {
        fq_rate_bps: p.fqrate,
        bind_dev: cfg.common.bind_dev.clone(),
        ..Default::default()
    };
    sockopt::apply_udp(
        sock.as_raw_fd(),
        &extra,
        p.tos,
        p.dont_fragment,
        conn.server.is_ipv6(),
    )
    .map_err(|e| PerfError::Config(e.to_string()))?;
    sock.connect(conn.server)?;
    size_udp_buffers(&sock, p.window);
    crate::debug::line(|| {
        format!(
            "UDP stream {index} (socket {}): {}",
            sock.as_raw_fd(),
            sockopt::describe(sock.as_raw_fd(), conn.server.is_ipv6(), false)
        )
    });
    sock.set_read_timeout(Some(Duration::from_millis(300)))?;
    let deadline = std::time::Instant::now() + cfg.connect_timeout;
    let mut buf = [0u8; 64];
    loop {
        sock.send(&UDP_CONNECT_MSG)?;
        match sock.recv(&mut buf) {
            Ok(4) if buf[..4] == UDP_CONNECT_REPLY => return Ok(sock),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => {
                return Err(PerfError::Connect {
                    addr: conn.server.to_string(),
                    source: e,
                })
            }
        }
        if std::time::Instant::now() > deadline {
            return Err(PerfError::Timeout(format!(
                "waiting for the UDP stream handshake with {}",
                conn.server
            )));
        }
    }
}

/// Socket buffers for a UDP stream: the window if given, else room for bursts.
pub fn size_udp_buffers(sock: &UdpSocket, window: u64) {
    let fd = sock.as_raw_fd();
    let size = if window > 0 {
        window.min(i32::MAX as u64) as i32
    } else {
        4 << 20
    };
    for (force, plain) in [
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
    ] {
        // Without a window, force room for bursts (root may exceed rmem_max).
        if window > 0 || sys::setsockopt_int(fd, libc::SOL_SOCKET, force, size).is_err() {
            let _ = sys::setsockopt_int(fd, libc::SOL_SOCKET, plain, size);
        }
    }
}

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
    let mut end = out.end(&ends, usage, Some(peer_cpu(&theirs)), cc);
    if let Some(path) = &cfg.common.file {
        crate::diskfile::report_end(path, &ends, &mut end, out);
    }
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

/// TEST_END, then both results documents (ours first), then DISPLAY_RESULTS.
pub fn exchange_results(conn: &mut Connection, ours: &Results) -> Result<Results> {
    conn.ctrl.send_state(State::TestEnd)?;
    expect(&mut conn.ctrl, State::ExchangeResults, "the results exchange")?;
    conn.ctrl
        .send_json(&serde_json::to_value(ours).unwrap_or(Value::Null))?;
    let body = conn
        .ctrl
        .recv_json(MAX_RESULTS_LEN, SETUP_TIMEOUT, "the server's results")?;
    let theirs = Results::parse(&body)?;
    expect(&mut conn.ctrl, State::DisplayResults, "the results display")?;
    Ok(theirs)
}

/// IPERF_DONE, then a short wait for the server to close first.
pub fn say_done(conn: &mut Connection) {
    let _ = conn.ctrl.send_state(State::IperfDone);
    let mut sink = [0u8; 16];
    let _ = conn.ctrl.sock.set_read_timeout(Some(Duration::from_millis(200)));
    let _ = conn.ctrl.sock.read(&mut sink);
}

/// Everything before the data flows: connect, parameters, CREATE_STREAMS.
pub fn negotiate(cfg: &ClientConfig) -> Result<(Connection, Params)> {
    let mut conn = connect(cfg)?;
    let key = cfg.common.auth_key.as_ref();
    let challenge = await_param_request(&mut conn.ctrl, key)?;
    let params = build_params(cfg, &conn);
    let body = serde_json::to_vec(&params.to_json()).map_err(|e| PerfError::Protocol(e.to_string()))?;
    crate::debug::line(|| format!("parameters sent: {}", String::from_utf8_lossy(&body)));
    conn.ctrl.send_frame(&body)?;
    if let (Some(key), Some(nonce)) = (key, challenge) {
        let proof = auth::proof_json(key.as_bytes(), &nonce, &conn.cookie, &body);
        conn.ctrl.send_frame(&proof)?;
    }
    expect(
        &mut conn.ctrl,
        State::CreateStreams,
        "the server to accept the parameters",
    )?;
    Ok((conn, params))
}

/// TEST_START and TEST_RUNNING.
pub fn await_running(conn: &mut Connection) -> Result<()> {
    expect(&mut conn.ctrl, State::TestStart, "the test to start")?;
    expect(&mut conn.ctrl, State::TestRunning, "the test to run")
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
