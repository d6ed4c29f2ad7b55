//! Thin, safe wrappers over the socket and clock calls std does not offer.

use std::io;
use std::mem::size_of;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::time::Duration;

pub(crate) fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

pub fn setsockopt_int(fd: RawFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: value lives for the call; the size matches the pointer.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &value as *const i32 as *const libc::c_void,
            size_of::<i32>() as libc::socklen_t,
        )
    };
    check(r).map(|_| ())
}

pub fn getsockopt_int(fd: RawFd, level: i32, name: i32) -> io::Result<i32> {
    let mut value: i32 = 0;
    let mut len = size_of::<i32>() as libc::socklen_t;
    // SAFETY: value and len are valid for writes of their sizes.
    let r = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            &mut value as *mut i32 as *mut libc::c_void,
            &mut len,
        )
    };
    check(r).map(|_| value)
}

pub fn set_u64_opt(fd: RawFd, level: i32, name: i32, value: u64) -> io::Result<()> {
    // SAFETY: as setsockopt_int, with a u64.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &value as *const u64 as *const libc::c_void,
            size_of::<u64>() as libc::socklen_t,
        )
    };
    check(r).map(|_| ())
}

pub fn set_congestion(fd: RawFd, algo: &str) -> io::Result<()> {
    // SAFETY: the string's bytes are valid for its length.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            algo.as_ptr() as *const libc::c_void,
            algo.len() as libc::socklen_t,
        )
    };
    check(r).map(|_| ())
}

pub fn get_congestion(fd: RawFd) -> Option<String> {
    getsockopt_string::<32>(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION)
}

/// A socket option that the kernel returns as a NUL-terminated name of at most `N`
/// bytes (TCP_CONGESTION, SO_BINDTODEVICE); None if unset, empty or unreadable.
pub fn getsockopt_string<const N: usize>(fd: RawFd, level: i32, opt: i32) -> Option<String> {
    let mut buf = [0u8; N];
    let mut len = N as libc::socklen_t;
    // SAFETY: buf and len are valid for writes of their sizes.
    let r = unsafe { libc::getsockopt(fd, level, opt, buf.as_mut_ptr() as *mut libc::c_void, &mut len) };
    if r < 0 {
        return None;
    }
    let s = &buf[..(len as usize).min(N)];
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    (end > 0).then(|| String::from_utf8_lossy(&s[..end]).into_owned())
}

/// Raw TCP_INFO bytes (as many as the kernel fills, up to 256).
pub fn tcp_info_raw(fd: RawFd) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 256];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf and len are valid for writes of their sizes.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    check(r)?;
    buf.truncate(len as usize);
    Ok(buf)
}

pub fn set_timeouts(fd: RawFd, timeout: Duration) -> io::Result<()> {
    let tv = libc::timeval {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_usec: timeout.subsec_micros() as libc::suseconds_t,
    };
    for name in [libc::SO_RCVTIMEO, libc::SO_SNDTIMEO] {
        // SAFETY: tv lives for the call; the size matches.
        let r = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                name,
                &tv as *const libc::timeval as *const libc::c_void,
                size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        check(r)?;
    }
    Ok(())
}

/// CLOCK_REALTIME in nanoseconds: shared by every namespace of one machine.
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// CLOCK_MONOTONIC in nanoseconds, for scheduling.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is valid for writes.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until an absolute CLOCK_MONOTONIC time.
pub fn sleep_until_ns(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: ts is valid; a null remainder is allowed with TIMER_ABSTIME.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

/// Asks for precise timer wake-ups on this thread (default slack is 50 µs).
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

/// This process's user and system CPU seconds.
pub fn cpu_seconds() -> (f64, f64) {
    // SAFETY: a zeroed rusage is valid; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (t(ru.ru_utime), t(ru.ru_stime))
}

pub(crate) fn sockaddr_of(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: a zeroed sockaddr_storage is valid; we fill the family's fields.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in and suitably aligned.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sin) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above for sockaddr_in6.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sin6) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// A UDP socket bound to `addr` with SO_REUSEADDR set before bind, so that several
/// sockets can share the server's port (connected ones take their peer's datagrams).
pub fn udp_bind_shared(addr: &SocketAddr) -> io::Result<UdpSocket> {
    let family = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain socket creation; the fd is owned by the UdpSocket below.
    let fd = check(unsafe { libc::socket(family, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: fd is a fresh socket we own.
    let sock = unsafe { UdpSocket::from_raw_fd(fd) };
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    if addr.is_ipv6() {
        let _ = setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 0);
    }
    let (ss, len) = sockaddr_of(addr);
    // SAFETY: ss holds a valid address of length len.
    check(unsafe { libc::bind(fd, &ss as *const _ as *const libc::sockaddr, len) })?;
    Ok(sock)
}

/// Batched UDP sends: `sendmmsg` over slices of one buffer.
pub fn send_batch(sock: &UdpSocket, bufs: &[&[u8]]) -> io::Result<usize> {
    SendBatch::new(bufs.len()).send(sock, bufs)
}

/// Reusable headers for `sendmmsg`, so a sender loop allocates nothing per call.
pub struct SendBatch {
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
}

// SAFETY: the raw pointers are rewritten before every call and never dereferenced by
// us; they only live for the duration of one `send`.
unsafe impl Send for SendBatch {}

impl SendBatch {
    pub fn new(capacity: usize) -> SendBatch {
        // SAFETY: zeroed iovec and mmsghdr are valid (null pointers, zero lengths).
        let zero_iov: libc::iovec = unsafe { std::mem::zeroed() };
        let zero_msg: libc::mmsghdr = unsafe { std::mem::zeroed() };
        SendBatch {
            iovs: vec![zero_iov; capacity],
            msgs: vec![zero_msg; capacity],
        }
    }

    /// Sends `bufs` (at most the capacity) as one datagram each; returns how many left.
    pub fn send<B: AsRef<[u8]>>(&mut self, sock: &UdpSocket, bufs: &[B]) -> io::Result<usize> {
        let n = bufs.len().min(self.msgs.len());
        for (i, b) in bufs[..n].iter().enumerate() {
            let b = b.as_ref();
            self.iovs[i] = libc::iovec {
                iov_base: b.as_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            };
            self.msgs[i].msg_hdr.msg_iov = &mut self.iovs[i];
            self.msgs[i].msg_hdr.msg_iovlen = 1;
            self.msgs[i].msg_len = 0;
        }
        // SAFETY: the first n headers each point at one iovec of self, which points at
        // a buffer borrowed from `bufs` for the whole call.
        let r = unsafe { libc::sendmmsg(sock.as_raw_fd(), self.msgs.as_mut_ptr(), n as u32, 0) };
        check(r).map(|k| k as usize)
    }
}

/// `recv` with flags (std's `read` takes none), for MSG_WAITALL.
pub fn recv(fd: RawFd, buf: &mut [u8], flags: i32) -> io::Result<usize> {
    // SAFETY: buf is valid for writes of its length for the whole call.
    let r = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), flags) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

pub const SOL_UDP: i32 = 17;
pub const UDP_SEGMENT: i32 = 103;
pub const UDP_GRO: i32 = 104;

/// Sends `buf` as datagrams of `seg` bytes each in one call (UDP GSO: the kernel or
/// the device cuts it). Fails with EIO/EINVAL where the path cannot do it.
pub fn send_gso(sock: &UdpSocket, buf: &[u8], seg: u16) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // u64 storage keeps the control buffer aligned for cmsghdr.
    let mut control = [0u64; 4];
    // SAFETY: a zeroed msghdr is valid; every pointer set below outlives the call, and
    // the control buffer is large enough for one cmsg carrying a u16.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = libc::CMSG_SPACE(size_of::<u16>() as u32) as usize;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = SOL_UDP;
        (*cmsg).cmsg_type = UDP_SEGMENT;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg) as *mut u16, seg);
        let r = libc::sendmsg(sock.as_raw_fd(), &msg, 0);
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }
}

/// Asks the kernel to hand over coalesced datagrams (UDP GRO); false if it cannot.
pub fn enable_gro(sock: &UdpSocket) -> bool {
    setsockopt_int(sock.as_raw_fd(), SOL_UDP, UDP_GRO, 1).is_ok()
}

/// Asks the kernel to stamp each received datagram with its arrival time
/// (`SO_TIMESTAMPNS`, CLOCK_REALTIME), so delay samples leave out our own wake-up.
pub fn enable_rx_timestamps(sock: &UdpSocket) -> io::Result<()> {
    setsockopt_int(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
}

const CONTROL_WORDS: usize = 12;

/// Reusable buffers for `recvmmsg`, with room for a GRO segment-size message each.
pub struct RecvBatch {
    buf: Vec<u8>,
    slot: usize,
    iovs: Vec<libc::iovec>,
    control: Vec<[u64; CONTROL_WORDS]>,
    msgs: Vec<libc::mmsghdr>,
}

// SAFETY: the raw pointers point into buffers the batch owns and never reallocates.
unsafe impl Send for RecvBatch {}

impl RecvBatch {
    pub fn new(count: usize, slot: usize) -> RecvBatch {
        let mut buf = vec![0u8; count * slot];
        let mut control = vec![[0u64; CONTROL_WORDS]; count];
        let mut iovs: Vec<libc::iovec> = (0..count)
            .map(|i| libc::iovec {
                // SAFETY: i * slot is inside buf.
                iov_base: unsafe { buf.as_mut_ptr().add(i * slot) } as *mut libc::c_void,
                iov_len: slot,
            })
            .collect();
        let msgs = iovs
            .iter_mut()
            .zip(control.iter_mut())
            .map(|(iov, c)| {
                // SAFETY: a zeroed mmsghdr is valid.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = iov as *mut libc::iovec;
                m.msg_hdr.msg_iovlen = 1;
                m.msg_hdr.msg_control = c.as_mut_ptr() as *mut libc::c_void;
                m
            })
            .collect();
        RecvBatch {
            buf,
            slot,
            iovs,
            control,
            msgs,
        }
    }

    fn recv_flags(&mut self, sock: &UdpSocket, flags: i32) -> io::Result<usize> {
        let _ = (&self.iovs, &self.control);
        for m in self.msgs.iter_mut() {
            m.msg_hdr.msg_controllen = CONTROL_WORDS * 8;
        }
        // SAFETY: msgs point at iovs and control buffers owned by self.
        let r = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                self.msgs.as_mut_ptr(),
                self.msgs.len() as u32,
                flags,
                std::ptr::null_mut(),
            )
        };
        check(r).map(|n| n as usize)
    }

    /// Receives up to the batch's count, blocking (up to the socket's timeout) for one.
    pub fn recv(&mut self, sock: &UdpSocket) -> io::Result<usize> {
        self.recv_flags(sock, libc::MSG_WAITFORONE)
    }

    /// Receives only what is already queued.
    pub fn recv_queued(&mut self, sock: &UdpSocket) -> io::Result<usize> {
        self.recv_flags(sock, libc::MSG_DONTWAIT)
    }

    /// The i-th message of the last call, and its GRO segment size if coalesced.
    pub fn get(&self, i: usize) -> (&[u8], Option<usize>) {
        let len = (self.msgs[i].msg_len as usize).min(self.slot);
        let data = &self.buf[i * self.slot..i * self.slot + len];
        let hdr = &self.msgs[i].msg_hdr;
        let mut seg = None;
        // SAFETY: the kernel filled the control buffer up to msg_controllen; CMSG_*
        // walk it within those bounds.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(hdr);
            while !c.is_null() {
                if (*c).cmsg_level == SOL_UDP && (*c).cmsg_type == UDP_GRO {
                    seg = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const i32) as usize);
                }
                c = libc::CMSG_NXTHDR(hdr, c);
            }
        }
        (data, seg.filter(|&s| s > 0))
    }

    /// The kernel's receive time of the i-th message (realtime ns), when the socket
    /// asked for it with [`enable_rx_timestamps`].
    pub fn stamp_ns(&self, i: usize) -> Option<u64> {
        let hdr = &self.msgs[i].msg_hdr;
        // SAFETY: as in `get`; SCM_TIMESTAMPNS carries a timespec.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(hdr);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                    return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                }
                c = libc::CMSG_NXTHDR(hdr, c);
            }
        }
        None
    }
}

/// Sends a whole file descriptor region with sendfile (for -Z zero copy).
pub fn sendfile(out_fd: RawFd, in_fd: RawFd, offset: &mut i64, count: usize) -> io::Result<usize> {
    // SAFETY: offset is valid for read/write.
    let r = unsafe { libc::sendfile(out_fd, in_fd, offset as *mut i64, count) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// An anonymous in-memory file filled with `data` (the source for sendfile).
pub fn memfd_with(data: &[u8]) -> io::Result<std::fs::File> {
    use std::io::Write;
    let name = b"netrig-perf\0";
    // SAFETY: name is NUL-terminated.
    let fd = check(unsafe { libc::memfd_create(name.as_ptr() as *const libc::c_char, libc::MFD_CLOEXEC) })?;
    // SAFETY: fd is fresh and ours.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    f.write_all(data)?;
    Ok(f)
}

/// Whether the peer of a connected socket has closed or reset it (POLLRDHUP, POLLHUP
/// or POLLERR now, without waiting): its reader will see the end when it next runs.
pub fn peer_closed(fd: RawFd) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: pfd is valid for the call; a zero timeout never blocks.
    let n = unsafe { libc::poll(&mut pfd, 1, 0) };
    n > 0 && pfd.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

/// 36 random bytes from the kernel, for a cookie.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    // SAFETY: b is valid for N bytes of writes.
    let n = unsafe { libc::getrandom(b.as_mut_ptr() as *mut libc::c_void, N, 0) };
    if n != N as isize {
        // Fall back to the clock: a cookie only has to differ between tests.
        let t = realtime_ns() ^ (std::process::id() as u64) << 32;
        for (i, x) in b.iter_mut().enumerate() {
            *x = (t >> ((i % 8) * 8)) as u8 ^ i as u8;
        }
    }
    b
}

/// Shows IPv4-mapped IPv6 addresses as plain IPv4.
pub fn canonical(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(a) => match a.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), a.port()),
            None => addr,
        },
        v4 => v4,
    }
}

/// Linux TCP_INFO fields netrig reads, parsed by offset from the raw bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TcpInfo {
    pub state: u8,
    pub snd_mss: u32,
    pub pmtu: u32,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub min_rtt_us: u32,
    pub delivery_rate: u64,
    pub bytes_acked: u64,
    pub snd_wnd: u32,
    pub lost: u32,
    pub unacked: u32,
}

impl TcpInfo {
    pub fn parse(b: &[u8]) -> TcpInfo {
        let u32_at = |o: usize| -> u32 {
            b.get(o..o + 4)
                .map(|s| u32::from_ne_bytes(s.try_into().unwrap()))
                .unwrap_or(0)
        };
        let u64_at = |o: usize| -> u64 {
            b.get(o..o + 8)
                .map(|s| u64::from_ne_bytes(s.try_into().unwrap()))
                .unwrap_or(0)
        };
        TcpInfo {
            state: b.first().copied().unwrap_or(0),
            snd_mss: u32_at(16),
            unacked: u32_at(24),
            lost: u32_at(32),
            pmtu: u32_at(60),
            rtt_us: u32_at(68),
            rttvar_us: u32_at(72),
            snd_ssthresh: u32_at(76),
            snd_cwnd: u32_at(80),
            total_retrans: u32_at(100),
            pacing_rate: u64_at(104),
            bytes_acked: u64_at(120),
            min_rtt_us: u32_at(148),
            delivery_rate: u64_at(160),
            snd_wnd: u32_at(228),
        }
    }

    pub fn of(fd: RawFd) -> Option<TcpInfo> {
        tcp_info_raw(fd).ok().map(|b| TcpInfo::parse(&b))
    }

    /// Congestion window in bytes, as iperf3 reports it.
    pub fn cwnd_bytes(&self) -> u64 {
        self.snd_cwnd as u64 * self.snd_mss as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn received_datagrams_carry_the_kernels_arrival_time() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_rx_timestamps(&rx).unwrap();
        set_timeouts(rx.as_raw_fd(), Duration::from_secs(2)).unwrap();
        // The kernel turns arrival stamping on a moment after the first socket asks.
        std::thread::sleep(Duration::from_millis(50));
        let before = realtime_ns();
        tx.send_to(b"stamp me", rx.local_addr().unwrap()).unwrap();
        // Read late on purpose: the stamp must be the arrival, not the read.
        std::thread::sleep(Duration::from_millis(50));
        let mut batch = RecvBatch::new(1, 2048);
        assert_eq!(batch.recv(&rx).unwrap(), 1);
        let read_at = realtime_ns();
        assert_eq!(batch.get(0).0, b"stamp me");
        let stamp = batch.stamp_ns(0).expect("SO_TIMESTAMPNS gives a stamp");
        assert!(stamp >= before, "stamp {stamp} before the send {before}");
        assert!(
            read_at - stamp >= 40_000_000,
            "stamp {stamp} is the read time {read_at}"
        );
    }

    #[test]
    fn tcp_info_of_a_live_connection_makes_sense() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        c.write_all(&[1u8; 100_000]).unwrap();
        let mut buf = vec![0u8; 100_000];
        s.read_exact(&mut buf).unwrap();
        let info = TcpInfo::of(c.as_raw_fd()).unwrap();
        assert_eq!(info.state, 1, "TCP_ESTABLISHED");
        assert!(info.snd_mss > 500 && info.snd_mss <= 65_535, "{info:?}");
        assert!(info.snd_cwnd >= 1, "{info:?}");
        assert!(info.bytes_acked >= 100_000, "{info:?}");
        assert_eq!(info.pmtu, 65_535, "loopback MTU");
    }

    #[test]
    fn short_tcp_info_reads_as_zeroes() {
        let info = TcpInfo::parse(&[1, 0, 0]);
        assert_eq!(info.state, 1);
        assert_eq!(info.snd_cwnd, 0);
    }

    #[test]
    fn batched_udp_round_trip() {
        let a = udp_bind_shared(&"127.0.0.1:0".parse().unwrap()).unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        let payloads: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 100 + i as usize]).collect();
        let refs: Vec<&[u8]> = payloads.iter().map(|p| p.as_slice()).collect();
        assert_eq!(send_batch(&a, &refs).unwrap(), 10);
        set_timeouts(b.as_raw_fd(), Duration::from_millis(500)).unwrap();
        let mut batch = RecvBatch::new(16, 2048);
        let mut got = vec![];
        while got.len() < 10 {
            let n = batch.recv(&b).unwrap();
            for i in 0..n {
                got.push(batch.get(i).0.to_vec());
            }
        }
        assert_eq!(got, payloads);
    }

    #[test]
    fn gso_send_and_gro_receive_keep_datagram_boundaries() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        let gro = enable_gro(&b);
        let buf: Vec<u8> = (0..64 * 30).map(|i| (i / 64) as u8).collect();
        assert_eq!(send_gso(&a, &buf, 64).unwrap(), buf.len());
        set_timeouts(b.as_raw_fd(), Duration::from_millis(500)).unwrap();
        let mut batch = RecvBatch::new(8, 65_536);
        let mut datagrams = vec![];
        while datagrams.len() < 30 {
            let n = batch.recv(&b).unwrap();
            for i in 0..n {
                let (data, seg) = batch.get(i);
                match seg {
                    Some(s) => datagrams.extend(data.chunks(s).map(|c| c.to_vec())),
                    None => datagrams.push(data.to_vec()),
                }
            }
        }
        assert!(gro, "this kernel has UDP GRO");
        assert_eq!(datagrams.len(), 30);
        for (i, d) in datagrams.iter().enumerate() {
            assert_eq!(d.len(), 64);
            assert!(d.iter().all(|&x| x == i as u8));
        }
    }
}
