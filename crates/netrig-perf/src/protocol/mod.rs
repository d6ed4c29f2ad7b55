//! The control protocol both ends speak, iperf3 3.12's with netrig's extras, as the
//! client side of it: connect and send the cookie, answer the server's parameter
//! request (and its auth challenge, see [`crate::auth`]), wait for the test to run,
//! exchange results, say done. The bulk client, the probe and rr clients share it; the
//! server shares [`NETRIG_PROTO`], [`resolve`] and the data-stream options of
//! [`streams`].
//!
//! Owns: the order of states and frames on the control channel, and opening the data
//! streams (the cookie on each TCP stream, the "9876"/"6789" UDP handshake). Does not
//! own: the framing itself ([`crate::control`]), the wire values (`netrig-core`), what
//! a test does once running (the modes: `client`, `probe`, `rr`, `server`).

pub mod streams;

use std::io::{Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::time::Duration;

use netrig_core::iperf3::{Mode, NetrigParams, Params, Protocol, Results, MAX_RESULTS_LEN};
use netrig_core::wire::iperf3::{Cookie, State};
use serde_json::Value;

use crate::auth::{self, AuthKey, Nonce};
use crate::config::{ClientConfig, ClientMode, Family};
use crate::control::Control;
use crate::error::{PerfError, Result};
use crate::session::default_len;
use crate::sockopt::{self, TcpOpts};
use crate::sys;

pub use streams::{open_tcp, open_udp, size_udp_buffers, tcp_opts};

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
        sockopt::tcp_connect(&server, bind.as_ref(), &ctrl_opts, cfg.connect_timeout).map_err(|source| {
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
