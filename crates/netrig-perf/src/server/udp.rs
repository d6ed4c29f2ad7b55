//! UDP streams' set-up. The datagram that opens a UDP stream ("9876", 4 bytes) names
//! no test, so one server socket takes them all ([`Hellos`], bound with the listening
//! socket, or by the first UDP test if it could not be then, and polled by the
//! accepting thread) and hands each to the test waiting for
//! streams from that client address; the test answers from a socket of the stream's
//! own, connected back to the client. Tests from one address set up their UDP streams
//! one at a time (nothing tells their datagrams apart); tests from other addresses
//! never wait on each other, and a test's set-up (its wait included) ends at its
//! deadline, two handshake timeouts, whatever its client sends or does not.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use netrig_core::iperf3::Params;
use netrig_core::wire::iperf3::{State, UDP_CONNECT_REPLY};

use super::{refuse, udp_listen_addr, Shared};
use crate::control::Control;
use crate::error::{ierr, PerfError, Result};
use crate::sys;

/// The server's socket for the datagrams that open UDP streams, and the tests waiting
/// for them by client address.
#[derive(Default)]
pub struct Hellos {
    sock: Mutex<Option<Arc<UdpSocket>>>,
    waiting: Mutex<HashMap<IpAddr, Sender<SocketAddr>>>,
}

/// A test's turn to take UDP streams from its client's address; the next test from
/// that address gets its turn when this is dropped.
struct Turn<'a> {
    hellos: &'a Hellos,
    ip: IpAddr,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.hellos
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.ip);
    }
}

/// Datagrams read from the socket per call of [`Hellos::dispatch`], so that a flood
/// of them does not keep the accepting thread from its connections.
const BATCH: usize = 64;

impl Hellos {
    /// The socket's descriptor once a UDP test has bound it (the accepting thread
    /// polls it).
    pub fn fd(&self) -> Option<RawFd> {
        self.sock.lock().unwrap().as_ref().map(|s| s.as_raw_fd())
    }

    /// The socket, bound at `addr` the first time (`--bind-dev` applied).
    pub fn socket(&self, addr: &SocketAddr, dev: Option<&str>) -> Result<Arc<UdpSocket>> {
        let mut slot = self.sock.lock().unwrap();
        if let Some(s) = slot.as_ref() {
            return Ok(s.clone());
        }
        let s = sys::udp_bind_shared(addr)?;
        if let Some(dev) = dev {
            crate::sockopt::bind_to_device(s.as_raw_fd(), dev)?;
        }
        s.set_nonblocking(true)?;
        let s = Arc::new(s);
        *slot = Some(s.clone());
        Ok(s)
    }

    /// Reads what has arrived and hands each opening datagram to the test waiting for
    /// streams from its address; anything else (a late datagram of an ended test, a
    /// stranger's) is dropped.
    pub fn dispatch(&self) {
        let Some(sock) = self.sock.lock().unwrap().clone() else {
            return;
        };
        let mut buf = [0u8; 16];
        for _ in 0..BATCH {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                return;
            };
            if n != 4 {
                continue;
            }
            let to = self
                .waiting
                .lock()
                .unwrap()
                .get(&sys::canonical(from).ip())
                .cloned();
            if let Some(tx) = to {
                let _ = tx.send(from);
            }
        }
    }

    /// Waits (until `deadline`) for the turn of a test from `ip`.
    fn turn(&self, ip: IpAddr, deadline: Instant) -> Option<(Turn<'_>, Receiver<SocketAddr>)> {
        loop {
            {
                let mut waiting = self.waiting.lock().unwrap();
                if let Entry::Vacant(v) = waiting.entry(ip) {
                    let (tx, rx) = mpsc::channel();
                    v.insert(tx);
                    return Some((Turn { hellos: self, ip }, rx));
                }
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Announces CREATE_STREAMS and takes `expected` UDP streams from the client's address
/// (`peer`): each opening datagram gets a socket of its own, connected back, that
/// answers "6789".
pub(super) fn collect(
    sh: &Shared,
    ctrl: &mut Control,
    peer: SocketAddr,
    expected: usize,
    params: &Params,
) -> Result<Vec<UdpSocket>> {
    let deadline = Instant::now() + sh.cfg.handshake_timeout * 2;
    let addr = udp_listen_addr(sh, ctrl)?;
    sh.hellos.socket(&addr, sh.cfg.common.bind_dev.as_deref())?;
    let Some((_turn, rx)) = sh.hellos.turn(peer.ip(), deadline) else {
        let e = PerfError::Timeout(format!(
            "for another test from {} to set up its UDP streams (tests from one address set theirs up one at a time)",
            peer.ip()
        ));
        return Err(refuse(ctrl, ierr::IESTREAMACCEPT, e));
    };
    ctrl.send_state(State::CreateStreams)?;
    let mut socks: Vec<UdpSocket> = vec![];
    while socks.len() < expected {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let e = PerfError::Timeout(format!(
                "waiting for UDP streams: {} of {expected} connected",
                socks.len()
            ));
            return Err(refuse(ctrl, ierr::IESTREAMACCEPT, e));
        }
        for s in &socks {
            crate::engine::answer_repeated_hello(s);
        }
        let Ok(from) = rx.recv_timeout(left.min(Duration::from_millis(100))) else {
            continue;
        };
        if socks.iter().any(|s| s.peer_addr().ok() == Some(from)) {
            continue; // a repeated hello that came before its stream's socket was connected
        }
        socks.push(open_stream(sh, ctrl, &addr, from, params)?);
    }
    Ok(socks)
}

/// The stream's socket: bound where the opening datagram came in, its options set,
/// connected back to the client, and the answer sent.
fn open_stream(
    sh: &Shared,
    ctrl: &mut Control,
    addr: &SocketAddr,
    from: SocketAddr,
    params: &Params,
) -> Result<UdpSocket> {
    let s = sys::udp_bind_shared(addr)?;
    let extra = crate::sockopt::SockExtras {
        fq_rate_bps: params.fqrate,
        bind_dev: sh.cfg.common.bind_dev.clone(),
        ..Default::default()
    };
    crate::sockopt::apply_udp(
        s.as_raw_fd(),
        &extra,
        params.tos,
        params.dont_fragment,
        from.is_ipv6(),
    )
    .map_err(|e| refuse(ctrl, ierr::IESTREAMACCEPT, PerfError::Config(e.to_string())))?;
    s.connect(from)?;
    crate::protocol::size_udp_buffers(&s, params.window);
    crate::debug::line(|| {
        format!(
            "UDP stream from {from} (socket {}): {}",
            s.as_raw_fd(),
            crate::sockopt::describe(s.as_raw_fd(), from.is_ipv6(), false)
        )
    });
    s.send(&UDP_CONNECT_REPLY)?;
    Ok(s)
}
