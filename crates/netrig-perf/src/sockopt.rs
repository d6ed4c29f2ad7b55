//! The socket and CPU options of iperf3's flags beyond the basic ones, applied as iperf3
//! applies them, each failure an error that names the flag:
//!
//! - `--fq-rate` (bit/s): SO_MAX_PACING_RATE in bytes/s on every data socket, both sides.
//! - `--snd-timeout` (ms): TCP_USER_TIMEOUT on the client's TCP data sockets.
//! - `--dont-fragment`: IP_MTU_DISCOVER = IP_PMTUDISC_DO on UDP data sockets, both
//!   sides (iperf3 does IPv4 only; netrig sets IPV6_MTU_DISCOVER on IPv6 too).
//! - `-S`/`--dscp`: the TOS byte of UDP streams (TCP's is set through [`TcpOpts`]).
//! - `--bind-dev`: SO_BINDTODEVICE on every socket of the side that asked.
//! - `-L` (flow label): IPV6_FLOWLABEL_MGR (get, create) and IPV6_FLOWINFO_SEND on the
//!   client's TCP data sockets; the label then rides in the connect address.
//! - `-A`: sched_setaffinity of the calling thread (threads it starts inherit it).
//!
//! [`TcpOpts`] gathers a TCP data socket's options, set before it connects
//! ([`tcp_connect`]) so that window scaling and the MSS take them. [`describe`] reads
//! the options back from the kernel for `-d`. The plain socket calls are `sys`'s.

use std::io;
use std::net::{Ipv6Addr, SocketAddr};
use std::os::fd::{FromRawFd, RawFd};
use std::time::Duration;

use crate::sys::{check, getsockopt_int, getsockopt_string, set_congestion, setsockopt_int, sockaddr_of};

/// Options beyond [`TcpOpts`]'s, for data sockets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SockExtras {
    /// SO_MAX_PACING_RATE, bit/s (0 = leave the kernel's default).
    pub fq_rate_bps: u64,
    /// TCP_USER_TIMEOUT, ms (0 = the system's setting).
    pub user_timeout_ms: u32,
    /// SO_BINDTODEVICE.
    pub bind_dev: Option<String>,
    /// IPv6 flow label (0 = none); applied at connect by [`tcp_connect`].
    pub flowlabel: u32,
}

fn named(flag: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{flag}: {e}"))
}

/// The TOS byte (`-S`, `--dscp`). An IPv6 socket gets IPV6_TCLASS and also IP_TOS,
/// which is what the kernel puts on the IPv4 packets of a v4-mapped peer (a server
/// listening on `::` serves IPv4 clients that way).
pub fn set_tos(fd: RawFd, tos: u32, v6: bool) -> io::Result<()> {
    if v6 {
        setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, tos as i32)?;
        let _ = setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_TOS, tos as i32);
        Ok(())
    } else {
        setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_TOS, tos as i32)
    }
}

/// SO_MAX_PACING_RATE from a rate in bit/s (the kernel takes bytes/s).
pub fn set_fq_rate(fd: RawFd, bits_per_second: u64) -> io::Result<()> {
    let bytes = bits_per_second / 8;
    let r = if bytes <= u32::MAX as u64 {
        // As iperf3: a 32-bit value, which every kernel takes.
        setsockopt_int(
            fd,
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            bytes as u32 as i32,
        )
    } else {
        crate::sys::set_u64_opt(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, bytes)
    };
    r.map_err(|e| named("--fq-rate", e))
}

pub fn set_user_timeout(fd: RawFd, ms: u32) -> io::Result<()> {
    setsockopt_int(
        fd,
        libc::IPPROTO_TCP,
        libc::TCP_USER_TIMEOUT,
        ms.min(i32::MAX as u32) as i32,
    )
    .map_err(|e| named("--snd-timeout", e))
}

pub fn set_dont_fragment(fd: RawFd, v6: bool) -> io::Result<()> {
    let r = if v6 {
        let r = setsockopt_int(
            fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_DO,
        );
        // A v4-mapped peer's packets follow the IPv4 option.
        let _ = setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER, libc::IP_PMTUDISC_DO);
        r
    } else {
        setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER, libc::IP_PMTUDISC_DO)
    };
    r.map_err(|e| named("--dont-fragment", e))
}

pub fn bind_to_device(fd: RawFd, dev: &str) -> io::Result<()> {
    if dev.is_empty() || dev.len() >= libc::IFNAMSIZ || dev.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("--bind-dev: '{dev}' is not an interface name"),
        ));
    }
    // SAFETY: dev's bytes are valid for their length for the call.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_BINDTODEVICE,
            dev.as_ptr() as *const libc::c_void,
            dev.len() as libc::socklen_t,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        let hint = if e.raw_os_error() == Some(libc::ENODEV) {
            " (no such interface)"
        } else if e.raw_os_error() == Some(libc::EPERM) {
            " (needs CAP_NET_RAW)"
        } else {
            ""
        };
        return Err(io::Error::new(e.kind(), format!("--bind-dev {dev}: {e}{hint}")));
    }
    Ok(())
}

/// The interface a socket is bound to, if any.
fn bound_device(fd: RawFd) -> Option<String> {
    getsockopt_string::<{ libc::IFNAMSIZ }>(fd, libc::SOL_SOCKET, libc::SO_BINDTODEVICE)
}

/// Linux's `struct in6_flowlabel_req` (linux/in6.h).
#[repr(C)]
struct FlowLabelReq {
    dst: [u8; 16],
    label: u32,
    action: u8,
    share: u8,
    flags: u16,
    expires: u16,
    linger: u16,
    pad: u32,
}
const IPV6_FL_A_GET: u8 = 0;
const IPV6_FL_F_CREATE: u16 = 1;
const IPV6_FL_S_ANY: u8 = 255;
/// The flow label's bits of `sin6_flowinfo` (host order).
pub const FLOWLABEL_MASK: u32 = 0x000f_ffff;

/// Asks the kernel for `label` towards `dst` and turns on sending it, as iperf3 does;
/// returns the `sin6_flowinfo` (network order) to connect with.
pub fn request_flowlabel(fd: RawFd, dst: &Ipv6Addr, label: u32) -> io::Result<u32> {
    let req = FlowLabelReq {
        dst: dst.octets(),
        label: (label & FLOWLABEL_MASK).to_be(),
        action: IPV6_FL_A_GET,
        share: IPV6_FL_S_ANY,
        flags: IPV6_FL_F_CREATE,
        expires: 0,
        linger: 0,
        pad: 0,
    };
    // SAFETY: req is a valid in6_flowlabel_req for the call.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_FLOWLABEL_MGR,
            &req as *const FlowLabelReq as *const libc::c_void,
            std::mem::size_of::<FlowLabelReq>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(named("-L/--flowlabel", io::Error::last_os_error()));
    }
    setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_FLOWINFO_SEND, 1)
        .map_err(|e| named("-L/--flowlabel", e))?;
    Ok(req.label)
}

/// Applies the extras that go on before a TCP socket connects (all but the flow label).
pub fn apply_tcp(fd: RawFd, x: &SockExtras) -> io::Result<()> {
    if let Some(dev) = &x.bind_dev {
        bind_to_device(fd, dev)?;
    }
    if x.fq_rate_bps > 0 {
        set_fq_rate(fd, x.fq_rate_bps)?;
    }
    if x.user_timeout_ms > 0 {
        set_user_timeout(fd, x.user_timeout_ms)?;
    }
    Ok(())
}

/// Applies the options of a UDP data socket: the TOS byte, as iperf3 sets it on every
/// stream, and the extras.
pub fn apply_udp(fd: RawFd, x: &SockExtras, tos: u32, dont_fragment: bool, v6: bool) -> io::Result<()> {
    if tos > 0 {
        set_tos(fd, tos, v6).map_err(|e| named("-S/--dscp", e))?;
    }
    if let Some(dev) = &x.bind_dev {
        bind_to_device(fd, dev)?;
    }
    if x.fq_rate_bps > 0 {
        set_fq_rate(fd, x.fq_rate_bps)?;
    }
    if dont_fragment {
        set_dont_fragment(fd, v6)?;
    }
    Ok(())
}

/// Pins the calling thread (and the threads it starts from now on) to `cpu`.
pub fn set_cpu_affinity(cpu: usize) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    if cpu >= max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is beyond the largest CPU number {}", max - 1),
        ));
    }
    // SAFETY: cpu is below the set's size (checked above).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: set is valid for its size; 0 is the calling thread.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r < 0 {
        let e = io::Error::last_os_error();
        // SAFETY: no arguments.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        return Err(io::Error::new(
            e.kind(),
            format!(
                "cannot run on CPU {cpu} ({e}); this machine has {online} online (0..{})",
                online - 1
            ),
        ));
    }
    Ok(())
}

/// The CPUs the calling thread may run on.
pub fn cpu_affinity() -> Vec<usize> {
    // SAFETY: as in set_cpu_affinity; the kernel fills the set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r < 0 {
        return vec![];
    }
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: every c is below the set's size.
    (0..max)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// The options above and the TOS byte, as the kernel reports them, for `-d`.
pub fn describe(fd: RawFd, v6: bool, tcp: bool) -> String {
    let int = |level, name| {
        getsockopt_int(fd, level, name)
            .map(|v| v.to_string())
            .unwrap_or_else(|e| format!("? ({e})"))
    };
    let mut parts = vec![format!("IP_TOS={}", int(libc::IPPROTO_IP, libc::IP_TOS))];
    if v6 {
        parts.push(format!(
            "IPV6_TCLASS={}",
            int(libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
        ));
    }
    // SO_MAX_PACING_RATE reads back as 64 bits on 64-bit kernels; the low word is enough
    // for a person (u32::MAX means unlimited).
    parts.push(format!(
        "SO_MAX_PACING_RATE={}",
        getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE)
            .map(|v| (v as u32).to_string())
            .unwrap_or_else(|e| format!("? ({e})"))
    ));
    if tcp {
        parts.push(format!(
            "TCP_USER_TIMEOUT={}",
            int(libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT)
        ));
    } else {
        parts.push(format!(
            "IP_MTU_DISCOVER={}",
            int(libc::IPPROTO_IP, libc::IP_MTU_DISCOVER)
        ));
        if v6 {
            parts.push(format!(
                "IPV6_MTU_DISCOVER={}",
                int(libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER)
            ));
        }
    }
    if v6 {
        parts.push(format!(
            "IPV6_FLOWINFO_SEND={}",
            int(libc::IPPROTO_IPV6, libc::IPV6_FLOWINFO_SEND)
        ));
    }
    parts.push(format!(
        "SO_BINDTODEVICE={}",
        bound_device(fd).unwrap_or_else(|| "-".into())
    ));
    parts.join(" ")
}

/// Socket options applied to a TCP data socket before it connects.
#[derive(Debug, Clone, Default)]
pub struct TcpOpts {
    pub window: u64,
    pub mss: u32,
    pub nodelay: bool,
    pub congestion: Option<String>,
    pub tos: u32,
    /// --fq-rate, --snd-timeout, --bind-dev, -L (see `sockopt`).
    pub extra: SockExtras,
}

/// Applies what can be applied to any TCP socket; a failing congestion control is
/// an error the caller names.
pub fn apply_tcp_opts(fd: RawFd, o: &TcpOpts, v6: bool) -> io::Result<()> {
    if o.window > 0 {
        let w = o.window.min(i32::MAX as u64) as i32;
        setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, w)?;
        setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, w)?;
    }
    if o.mss > 0 {
        setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, o.mss as i32)?;
    }
    if o.nodelay {
        setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)?;
    }
    if o.tos > 0 {
        set_tos(fd, o.tos, v6)?;
    }
    apply_tcp(fd, &o.extra)?;
    if let Some(cc) = &o.congestion {
        set_congestion(fd, cc).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("congestion control '{cc}' is not available: {e}"),
            )
        })?;
    }
    Ok(())
}

/// Connects a TCP socket with options set before the handshake (window scaling and
/// MSS depend on that), bounded by `timeout`.
pub fn tcp_connect(
    addr: &SocketAddr,
    bind: Option<&SocketAddr>,
    opts: &TcpOpts,
    timeout: Duration,
) -> io::Result<std::net::TcpStream> {
    let family = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain socket creation; the fd is owned by the TcpStream below.
    let fd = check(unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: fd is a fresh socket we own.
    let stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
    apply_tcp_opts(fd, opts, addr.is_ipv6())?;
    if let Some(b) = bind {
        setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
        let (ss, len) = sockaddr_of(b);
        // SAFETY: ss holds a valid address of length len.
        check(unsafe { libc::bind(fd, &ss as *const _ as *const libc::sockaddr, len) })?;
    }
    let mut addr = *addr;
    if opts.extra.flowlabel > 0 {
        let SocketAddr::V6(a6) = addr else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "-L/--flowlabel: the flow label is IPv6's; the server's address is IPv4 (use -6)",
            ));
        };
        let info = request_flowlabel(fd, a6.ip(), opts.extra.flowlabel)?;
        addr = SocketAddr::V6(std::net::SocketAddrV6::new(
            *a6.ip(),
            a6.port(),
            info,
            a6.scope_id(),
        ));
    }
    stream.set_nonblocking(true)?;
    let (ss, len) = sockaddr_of(&addr);
    // SAFETY: as above.
    let r = unsafe { libc::connect(fd, &ss as *const _ as *const libc::sockaddr, len) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: pfd is valid for the call.
        let n = check(unsafe { libc::poll(&mut pfd, 1, ms) })?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "connection timed out"));
        }
        let err = getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_ERROR)?;
        if err != 0 {
            return Err(io::Error::from_raw_os_error(err));
        }
    }
    stream.set_nonblocking(false)?;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, UdpSocket};
    use std::os::fd::AsRawFd;

    #[test]
    fn options_read_back_as_set() {
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        let x = SockExtras {
            fq_rate_bps: 8_000_000,
            ..Default::default()
        };
        apply_udp(u.as_raw_fd(), &x, 0xb8, true, false).unwrap();
        let d = describe(u.as_raw_fd(), false, false);
        assert!(d.contains("IP_TOS=184"), "{d}");
        assert!(d.contains("SO_MAX_PACING_RATE=1000000"), "{d}");
        assert!(d.contains("IP_MTU_DISCOVER=2"), "{d}");
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        set_user_timeout(l.as_raw_fd(), 1500).unwrap();
        assert!(describe(l.as_raw_fd(), false, true).contains("TCP_USER_TIMEOUT=1500"));
    }

    #[test]
    fn a_missing_device_is_named() {
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        let e = bind_to_device(u.as_raw_fd(), "nosuchdev0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("--bind-dev nosuchdev0"), "{e}");
        let e = bind_to_device(u.as_raw_fd(), "a-name-far-too-long")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not an interface name"), "{e}");
    }

    #[test]
    fn affinity_beyond_the_machine_is_an_error() {
        let e = set_cpu_affinity(1000).unwrap_err().to_string();
        assert!(e.contains("CPU 1000"), "{e}");
        assert!(set_cpu_affinity(1 << 20).is_err());
    }
}
