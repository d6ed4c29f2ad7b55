//! AF_PACKET sockets bound to one interface each: whole Ethernet frames in and out,
//! received in batches (recvmmsg), our own transmissions ignored.

use std::ffi::CString;
use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Frames larger than this are cut (offloads are off on emulated links, so a frame is
/// at most an MTU plus headers; 64 KiB leaves room for jumbo frames).
pub const SLOT: usize = 65_536;
const PACKET_IGNORE_OUTGOING: i32 = 23;
const PACKET_VNET_HDR: i32 = 15;
/// The virtio-net header that precedes every frame with PACKET_VNET_HDR.
pub const VNET_HDR_LEN: usize = 10;

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

pub fn ifindex(name: &str) -> io::Result<u32> {
    let c =
        CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "bad interface name"))?;
    // SAFETY: c is a valid NUL-terminated string.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface '{name}'"),
        ));
    }
    Ok(idx)
}

/// What a packet socket is for, set before it is bound.
#[derive(Debug, Clone, Copy, Default)]
pub struct SockOpts {
    /// Frames carry a virtio-net header (PACKET_VNET_HDR).
    pub vnet: bool,
    /// It receives: promiscuous, our own transmissions ignored, kernel timestamps.
    pub receive: bool,
    /// PACKET_VERSION (a ring's TPACKET version), set first.
    pub version: Option<i32>,
}

pub(crate) fn setsockopt<T>(fd: RawFd, level: i32, opt: i32, v: &T) -> io::Result<()> {
    // SAFETY: v is valid for its size.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            v as *const T as *const libc::c_void,
            size_of::<T>() as u32,
        )
    })
    .map(|_| ())
}

/// An AF_PACKET socket for interface `name`, not yet bound ([`bind`] gives it its
/// protocol: made with protocol 0, it sees no frame of any interface before that).
pub fn packet_socket(name: &str, opts: SockOpts) -> io::Result<OwnedFd> {
    let idx = ifindex(name)?;
    // SAFETY: plain socket creation; ownership passes to OwnedFd.
    let raw = check(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: raw is a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let one: i32 = 1;
    if let Some(v) = opts.version {
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_VERSION, &v)?;
    }
    if opts.vnet {
        setsockopt(raw, libc::SOL_PACKET, PACKET_VNET_HDR, &one)?;
    }
    if opts.receive {
        // Not seeing our own transmissions saves a copy per frame (Linux >= 4.20); on
        // older kernels the reader skips PACKET_OUTGOING frames instead.
        let _ = setsockopt(raw, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, &one);
        // SAFETY: a zeroed packet_mreq is valid.
        let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
        mreq.mr_ifindex = idx as i32;
        mreq.mr_type = libc::PACKET_MR_PROMISC as u16;
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)?;
        // Arrival times from the kernel (CLOCK_REALTIME), exact however late we read.
        let _ = setsockopt(raw, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &one);
    }
    Ok(fd)
}

/// Binds a socket made by [`packet_socket`] to `name` for `protocol` (0: none, a socket
/// that only sends).
pub(crate) fn bind(fd: RawFd, name: &str, protocol: u16) -> io::Result<()> {
    let idx = ifindex(name)?;
    // SAFETY: a zeroed sockaddr_ll is valid; we set the fields bind needs.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = protocol.to_be();
    sll.sll_ifindex = idx as i32;
    // SAFETY: sll is valid for its size.
    check(unsafe {
        libc::bind(
            fd,
            &sll as *const _ as *const libc::sockaddr,
            size_of::<libc::sockaddr_ll>() as u32,
        )
    })
    .map(|_| ())
}

/// Frames the kernel dropped for want of room (socket buffer or ring) since the last
/// call (PACKET_STATISTICS, which resets on read).
pub fn drops(fd: RawFd) -> u64 {
    let mut st = libc::tpacket_stats {
        tp_packets: 0,
        tp_drops: 0,
    };
    let mut len = size_of::<libc::tpacket_stats>() as libc::socklen_t;
    // SAFETY: st and len are valid for writes of their sizes.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            &mut st as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    if r < 0 {
        0
    } else {
        st.tp_drops as u64
    }
}

pub struct PacketSocket {
    fd: OwnedFd,
    pub name: String,
    /// One receive buffer per batch entry; a large frame's buffer is handed over
    /// whole ([`PacketSocket::take`]) and replaced, so superframes are not copied.
    slots: Vec<Vec<u8>>,
    iovs: Vec<libc::iovec>,
    addrs: Vec<libc::sockaddr_ll>,
    control: Vec<[u64; 8]>,
    msgs: Vec<libc::mmsghdr>,
    /// sendmmsg's headers, kept between calls (their pointers are set per call).
    tx_iovs: Vec<libc::iovec>,
    tx_msgs: Vec<libc::mmsghdr>,
}

// SAFETY: the raw pointers point into buffers owned by the socket and never reallocated
// (tx_iovs/tx_msgs hold pointers only during a send).
unsafe impl Send for PacketSocket {}

impl PacketSocket {
    /// A socket that only sends (protocol 0: the kernel queues nothing to it).
    pub fn sender(name: &str, vnet: bool) -> io::Result<PacketSocket> {
        Self::sender_with(name, vnet, false)
    }

    /// A sender; `bypass`: frames go straight to the device, past its qdisc
    /// (PACKET_QDISC_BYPASS).
    pub fn sender_with(name: &str, vnet: bool, bypass: bool) -> io::Result<PacketSocket> {
        let fd = packet_socket(
            name,
            SockOpts {
                vnet,
                ..SockOpts::default()
            },
        )?;
        if bypass {
            setsockopt(fd.as_raw_fd(), libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &1i32)?;
        }
        bind(fd.as_raw_fd(), name, 0)?;
        Ok(Self::wrap(fd, name))
    }

    fn wrap(fd: OwnedFd, name: &str) -> PacketSocket {
        PacketSocket {
            fd,
            name: name.to_string(),
            slots: vec![],
            iovs: vec![],
            addrs: vec![],
            control: vec![],
            msgs: vec![],
            tx_iovs: vec![],
            tx_msgs: vec![],
        }
    }

    /// `vnet`: frames carry a virtio-net header, so offload superframes (GSO, and
    /// checksums left to the device) pass through whole.
    pub fn open(name: &str, batch: usize, vnet: bool) -> io::Result<PacketSocket> {
        let opts = SockOpts {
            vnet,
            receive: true,
            version: None,
        };
        let fd = packet_socket(name, opts)?;
        let raw = fd.as_raw_fd();
        let big: i32 = 8 << 20;
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_SNDBUFFORCE] {
            let _ = setsockopt(raw, libc::SOL_SOCKET, opt, &big);
        }
        bind(raw, name, libc::ETH_P_ALL as u16)?;
        Ok(Self::receiver(fd, name, batch))
    }

    /// Receives on `fd` (an open, bound packet socket) in batches of `batch` frames.
    pub fn receiver(fd: OwnedFd, name: &str, batch: usize) -> PacketSocket {
        let mut s = Self::wrap(fd, name);
        s.slots = (0..batch).map(|_| vec![0u8; SLOT]).collect();
        // SAFETY: zeroed sockaddr_ll values are valid.
        s.addrs = vec![unsafe { std::mem::zeroed() }; batch];
        s.control = vec![[0u64; 8]; batch];
        s.iovs = s
            .slots
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr() as *mut _,
                iov_len: SLOT,
            })
            .collect();
        let (iovs, addrs, control) = (s.iovs.as_mut_ptr(), s.addrs.as_mut_ptr(), s.control.as_mut_ptr());
        s.msgs = (0..batch)
            .map(|i| {
                // SAFETY: a zeroed mmsghdr is valid; pointers index owned vectors.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                unsafe {
                    m.msg_hdr.msg_iov = iovs.add(i);
                    m.msg_hdr.msg_name = addrs.add(i) as *mut libc::c_void;
                    m.msg_hdr.msg_control = control.add(i) as *mut libc::c_void;
                }
                m.msg_hdr.msg_iovlen = 1;
                m.msg_hdr.msg_namelen = size_of::<libc::sockaddr_ll>() as u32;
                m
            })
            .collect();
        s
    }

    /// Receives what is queued (never blocks); returns the number of messages.
    pub fn recv_batch(&mut self) -> io::Result<usize> {
        self.recv_upto(self.msgs.len())
    }

    /// Receives what is queued, up to `max` messages (never blocks).
    pub fn recv_upto(&mut self, max: usize) -> io::Result<usize> {
        let max = max.min(self.msgs.len());
        for m in self.msgs[..max].iter_mut() {
            m.msg_hdr.msg_namelen = size_of::<libc::sockaddr_ll>() as u32;
            m.msg_hdr.msg_controllen = 64;
        }
        // SAFETY: msgs point at buffers owned by self.
        let r = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                self.msgs.as_mut_ptr(),
                max as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(0);
            }
            return Err(e);
        }
        Ok(r as usize)
    }

    /// The i-th frame of the last batch; None for our own outgoing frames.
    pub fn frame(&self, i: usize) -> Option<&[u8]> {
        if self.addrs[i].sll_pkttype == libc::PACKET_OUTGOING {
            return None;
        }
        let len = (self.msgs[i].msg_len as usize).min(SLOT);
        Some(&self.slots[i][..len])
    }

    /// Hands over the i-th frame's buffer, cut to the frame, and receives into `spare`
    /// from now on; `spare` must hold at least [`SLOT`] bytes.
    pub fn take(&mut self, i: usize, mut spare: Vec<u8>) -> Vec<u8> {
        assert!(spare.len() >= SLOT, "a receive buffer holds SLOT bytes");
        let len = (self.msgs[i].msg_len as usize).min(SLOT);
        self.iovs[i].iov_base = spare.as_mut_ptr() as *mut _;
        std::mem::swap(&mut self.slots[i], &mut spare);
        spare.truncate(len);
        spare
    }

    /// The kernel's receive timestamp of the i-th frame (CLOCK_REALTIME ns), if any.
    pub fn stamp_ns(&self, i: usize) -> Option<u64> {
        let hdr = &self.msgs[i].msg_hdr;
        // SAFETY: the kernel filled the control buffer up to msg_controllen; CMSG_*
        // walk it within those bounds.
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

    /// Sends one frame out of this interface.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: frame is valid for its length.
        let r = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                frame.as_ptr() as *const _,
                frame.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Sends frames in as few calls as it takes (sendmmsg), as many as the device takes;
    /// returns how many left.
    pub fn send_batch<'a>(&mut self, frames: impl IntoIterator<Item = &'a [u8]>) -> io::Result<usize> {
        self.tx_iovs.clear();
        self.tx_iovs.extend(frames.into_iter().map(|f| libc::iovec {
            iov_base: f.as_ptr() as *mut _,
            iov_len: f.len(),
        }));
        let n = self.tx_iovs.len();
        // SAFETY: a zeroed mmsghdr is valid.
        self.tx_msgs.resize(n, unsafe { std::mem::zeroed() });
        for (m, iov) in self.tx_msgs.iter_mut().zip(self.tx_iovs.iter_mut()) {
            m.msg_hdr.msg_iov = iov;
            m.msg_hdr.msg_iovlen = 1;
        }
        let mut sent = 0;
        let mut result = Ok(());
        while sent < n {
            // SAFETY: tx_msgs[sent..] point at tx_iovs, which point at the caller's
            // frames; all outlive the call.
            let r = unsafe {
                libc::sendmmsg(
                    self.fd.as_raw_fd(),
                    self.tx_msgs[sent..].as_mut_ptr(),
                    (n - sent) as u32,
                    libc::MSG_DONTWAIT,
                )
            };
            if r <= 0 {
                // The device queue is full: the rest are dropped, as on a wire.
                if r < 0 {
                    result = Err(io::Error::last_os_error());
                }
                break;
            }
            sent += r as usize;
        }
        // No pointer into the caller's frames outlives the call.
        self.tx_iovs.clear();
        result.map(|_| sent)
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Turns an interface's offloads off (checksum, segmentation, GRO), so that every
/// frame we see is a wire frame with a correct checksum.
pub fn offloads_off(name: &str) -> io::Result<()> {
    // Legacy ethtool "set" commands, each taking struct ethtool_value { cmd, data }.
    const SET: [(u32, &str); 7] = [
        (0x15, "rx checksum"),    // ETHTOOL_SRXCSUM
        (0x17, "tx checksum"),    // ETHTOOL_STXCSUM
        (0x19, "scatter-gather"), // ETHTOOL_SSG
        (0x1f, "TSO"),            // ETHTOOL_STSO
        (0x24, "GSO"),            // ETHTOOL_SGSO
        (0x2b, "GRO"),            // ETHTOOL_SGRO
        (0x33, "UFO"),            // ETHTOOL_SUFO
    ];
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }
    // SAFETY: a plain datagram socket for the ioctl; closed by OwnedFd.
    let raw = check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: raw is ours.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut failed = vec![];
    for (cmd, what) in SET {
        let mut v = EthtoolValue { cmd, data: 0 };
        // SAFETY: a zeroed ifreq is valid; we copy the name (bounded) and point
        // ifr_data at v, which outlives the call.
        let r = unsafe {
            let mut ifr: libc::ifreq = std::mem::zeroed();
            for (d, s) in ifr.ifr_name.iter_mut().zip(name.bytes().take(libc::IFNAMSIZ - 1)) {
                *d = s as libc::c_char;
            }
            ifr.ifr_ifru.ifru_data = &mut v as *mut EthtoolValue as *mut libc::c_char;
            libc::ioctl(fd.as_raw_fd(), libc::SIOCETHTOOL, &mut ifr)
        };
        // EOPNOTSUPP: the device has no such offload, which is what we want anyway.
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EOPNOTSUPP) && e.raw_os_error() != Some(libc::EINVAL) {
                failed.push(format!("{what}: {e}"));
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{name}: could not turn off {}",
            failed.join(", ")
        )))
    }
}
