//! Opening a test's data streams, as the client: a TCP stream identified by the
//! test's cookie, or a UDP stream after the "9876"/"6789" handshake; and the socket
//! options both sides apply to them from the parameters.

use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use netrig_core::iperf3::Params;
use netrig_core::wire::iperf3::{UDP_CONNECT_MSG, UDP_CONNECT_REPLY};

use super::Connection;
use crate::config::ClientConfig;
use crate::error::{PerfError, Result};
use crate::sockopt::{self, SockExtras, TcpOpts};
use crate::sys;

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
    let mut s = sockopt::tcp_connect(
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
