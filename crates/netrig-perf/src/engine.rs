//! The data path: one thread per stream, moving bytes as fast as allowed and counting.
//!
//! Workers share counters with the reporter through atomics (TCP) or a mutex taken once
//! per received batch (UDP). They stop when the run's stop flag is set, when the run's
//! byte or block budget is spent (senders), or when the peer goes away; sockets carry a
//! short timeout so a blocked call notices the flag within [`POLL`].

use std::io::{self, ErrorKind, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use netrig_core::pacing::{Pacer, PacerConfig, PacingReport};
use netrig_core::stats::UdpReceiver;
use netrig_core::wire::iperf3::{UdpHeader, UDP_CONNECT_MSG, UDP_CONNECT_REPLY};

use crate::sys;

pub const POLL: Duration = Duration::from_millis(50);
const UDP_BATCH: usize = 64;
/// Largest GSO buffer: the datagrams of one send must fit one IP packet's worth.
const GSO_BYTES: usize = 65_000;

/// What a run has to stop on, shared by every stream of one test.
#[derive(Debug, Default)]
pub struct RunControl {
    pub stop: AtomicBool,
    /// When the run was stopped (CLOCK_MONOTONIC ns; 0 while it runs): the end of the
    /// test, as the reporter measured it, for the senders' accounts.
    pub stopped_at_ns: AtomicU64,
    pub bytes_limit: u64,
    pub blocks_limit: u64,
    pub sent_bytes: AtomicU64,
    pub sent_blocks: AtomicU64,
}

impl RunControl {
    pub fn new(bytes_limit: u64, blocks_limit: u64) -> Arc<RunControl> {
        Arc::new(RunControl {
            bytes_limit,
            blocks_limit,
            ..Default::default()
        })
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Relaxed)
    }

    /// Stops the run, which ended at `now_ns`.
    pub fn stop_at(&self, now_ns: u64) {
        let _ = self.stopped_at_ns.compare_exchange(0, now_ns, Relaxed, Relaxed);
        self.stop.store(true, Relaxed);
    }

    /// The end of the run for an account taken at `now_ns`: when it was stopped, or
    /// now for a sender that ended by itself (its budget spent, its peer gone).
    fn ended_at(&self, now_ns: u64) -> u64 {
        match self.stopped_at_ns.load(Relaxed) {
            0 => now_ns,
            t => t.min(now_ns),
        }
    }

    /// Whether the byte or block budget is spent.
    pub fn budget_spent(&self) -> bool {
        (self.bytes_limit > 0 && self.sent_bytes.load(Relaxed) >= self.bytes_limit)
            || (self.blocks_limit > 0 && self.sent_blocks.load(Relaxed) >= self.blocks_limit)
    }

    /// Claims one block of `len` bytes of the budget; returns how many bytes to send
    /// (0 when the budget is spent).
    pub(crate) fn claim(&self, len: usize) -> usize {
        if self.blocks_limit > 0 && self.sent_blocks.fetch_add(1, Relaxed) >= self.blocks_limit {
            return 0;
        }
        if self.bytes_limit > 0 {
            let before = self.sent_bytes.fetch_add(len as u64, Relaxed);
            if before >= self.bytes_limit {
                return 0;
            }
            return len.min((self.bytes_limit - before) as usize);
        }
        len
    }
}

/// One stream's identity and counters.
#[derive(Debug)]
pub struct Stream {
    /// iperf3's stream id (1, 3, 4, ...).
    pub id: i64,
    /// The socket's descriptor number, which iperf3 prints as the stream's name.
    pub socket: i32,
    pub sender: bool,
    pub local: String,
    pub remote: String,
    pub bytes: AtomicU64,
    /// Writes or reads (TCP), datagrams (UDP).
    pub blocks: AtomicU64,
    /// UDP receiver state, guarded by one mutex taken per batch.
    pub udp_rx: Mutex<UdpReceiver>,
    /// Set by the worker when it ends; the error, if any, is kept.
    pub finished: AtomicBool,
    pub error: Mutex<Option<String>>,
    /// A paced sender's account of its schedule, left by the worker when it ends.
    pub pacing: Mutex<Option<PacingReport>>,
}

impl Stream {
    pub fn new(id: i64, socket: i32, sender: bool, local: String, remote: String) -> Arc<Stream> {
        Arc::new(Stream {
            id,
            socket,
            sender,
            local,
            remote,
            bytes: AtomicU64::new(0),
            blocks: AtomicU64::new(0),
            udp_rx: Mutex::new(UdpReceiver::default()),
            finished: AtomicBool::new(false),
            error: Mutex::new(None),
            pacing: Mutex::new(None),
        })
    }

    fn finish(&self, result: io::Result<()>) {
        if let Err(e) = result {
            *self.error.lock().unwrap() = Some(e.to_string());
        }
        self.finished.store(true, Relaxed);
    }
}

/// Sender options for one stream.
#[derive(Debug, Clone)]
pub struct SendOpts {
    pub len: usize,
    /// bit/s per stream; 0 = as fast as possible.
    pub rate: u64,
    /// Blocks that may leave back to back (iperf3's `-b rate/burst`).
    pub burst: u64,
    /// iperf3's `--pacing-timer`: the pacer's slack, µs: a sender this late is not yet
    /// behind its schedule (0: 1000).
    pub pacing_timer_us: u64,
    /// When the test started (CLOCK_MONOTONIC ns): the schedule starts there, so a
    /// worker thread that starts late owes the time it lost.
    pub start_ns: u64,
    pub zerocopy: bool,
    pub repeating_payload: bool,
    pub udp_counters_64bit: bool,
    /// UDP: let the kernel segment batches (GSO) where the path can.
    pub gso: bool,
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

fn is_peer_gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionReset | ErrorKind::BrokenPipe | ErrorKind::ConnectionRefused
    )
}

fn payload(len: usize, repeating: bool) -> Vec<u8> {
    if repeating {
        // iperf3's --repeating-payload: "0123456789" repeated.
        (0..len).map(|i| b'0' + (i % 10) as u8).collect()
    } else {
        // Pseudo-random filler so that compressing links see realistic bytes.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }
}

fn pacer_for(opts: &SendOpts) -> Option<Pacer> {
    (opts.rate > 0).then(|| {
        let mut cfg = PacerConfig::new(opts.rate);
        cfg.burst_bytes = if opts.burst > 1 {
            opts.burst * opts.len as u64
        } else {
            0
        };
        if opts.pacing_timer_us > 0 {
            cfg.tolerance_ns = opts.pacing_timer_us.saturating_mul(1000);
        }
        Pacer::new(cfg, opts.start_ns)
    })
}

/// Waits until the pacer allows a block and returns the time it did; None if the run
/// stopped meanwhile.
fn wait_for_pacer(pacer: &mut Pacer, ctl: &RunControl) -> Option<u64> {
    loop {
        if ctl.stopped() {
            return None;
        }
        let now = sys::monotonic_ns();
        if pacer.ready(now) {
            return Some(now);
        }
        let due = pacer.due_ns().min(now + POLL.as_nanos() as u64);
        sys::sleep_until_ns(due);
    }
}

/// Leaves the pacer's account, as of the end of the test, on the stream.
fn keep_report(stream: &Stream, pacer: Option<&Pacer>, ctl: &RunControl) {
    if let Some(p) = pacer {
        let end = ctl.ended_at(sys::monotonic_ns());
        *stream.pacing.lock().unwrap() = Some(p.report(end));
    }
}

pub fn tcp_send(stream: Arc<Stream>, mut sock: TcpStream, ctl: Arc<RunControl>, opts: SendOpts) {
    let mut pacer = pacer_for(&opts);
    let result = (|| -> io::Result<()> {
        sys::set_timeouts(sock.as_raw_fd(), POLL)?;
        let buf = payload(opts.len, opts.repeating_payload);
        let file = if opts.zerocopy {
            Some(sys::memfd_with(&buf)?)
        } else {
            None
        };
        let mut pending = 0usize; // bytes of the current block not yet written
        let mut offset = 0usize;
        loop {
            if pending == 0 {
                if ctl.stopped() {
                    return Ok(());
                }
                let ready_at = match pacer.as_mut() {
                    Some(p) => match wait_for_pacer(p, &ctl) {
                        Some(now) => now,
                        None => return Ok(()),
                    },
                    None => 0,
                };
                pending = ctl.claim(opts.len);
                if pending == 0 {
                    return Ok(());
                }
                offset = 0;
                if let Some(p) = pacer.as_mut() {
                    p.sent(ready_at, pending as u64);
                }
            }
            let r = match &file {
                Some(f) => {
                    let mut off = offset as i64;
                    sys::sendfile(sock.as_raw_fd(), f.as_raw_fd(), &mut off, pending)
                }
                None => sock.write(&buf[offset..offset + pending]),
            };
            match r {
                Ok(0) => return Err(io::Error::new(ErrorKind::WriteZero, "peer closed")),
                Ok(n) => {
                    stream.bytes.fetch_add(n as u64, Relaxed);
                    pending -= n;
                    offset += n;
                    if pending == 0 {
                        stream.blocks.fetch_add(1, Relaxed);
                    }
                }
                Err(e) if is_timeout(&e) => {
                    if ctl.stopped() {
                        return Ok(());
                    }
                }
                Err(e) if is_peer_gone(&e) && ctl.stopped() => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    })();
    keep_report(&stream, pacer.as_ref(), &ctl);
    stream.finish(result);
}

pub fn tcp_recv(stream: Arc<Stream>, mut sock: TcpStream, ctl: Arc<RunControl>, len: usize) {
    let result = (|| -> io::Result<()> {
        sys::set_timeouts(sock.as_raw_fd(), POLL)?;
        let mut buf = vec![0u8; len.max(1)];
        // A byte or block budget is watched by the reads' counts: wait for nothing more.
        let budget = ctl.bytes_limit > 0 || ctl.blocks_limit > 0;
        let (mut last, mut gap_ns, mut read_at) = (0usize, u64::MAX, sys::monotonic_ns());
        while !ctl.stopped() {
            let flags = if !budget && wait_for_whole_buffer(last, buf.len(), gap_ns) {
                libc::MSG_WAITALL
            } else {
                0
            };
            match sys::recv(sock.as_raw_fd(), &mut buf, flags) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    stream.bytes.fetch_add(n as u64, Relaxed);
                    stream.blocks.fetch_add(1, Relaxed);
                    let now = sys::monotonic_ns();
                    (last, gap_ns, read_at) = (n, now - read_at, now);
                }
                Err(e) if is_timeout(&e) => {
                    last = 0;
                    if ctl.stopped() {
                        return Ok(());
                    }
                }
                Err(e) if is_peer_gone(&e) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        // What arrived before the end counts, so a busy receiver does not under-report:
        // read what the kernel has already queued, without waiting for more. Data still
        // in flight (in the sender's buffer or a link's queue) is not counted, as in
        // iperf3, so the receiver's rate can never exceed what the path delivered.
        sock.set_nonblocking(true)?;
        let until = sys::monotonic_ns() + DRAIN_MAX.as_nanos() as u64;
        while sys::monotonic_ns() < until {
            match sock.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    stream.bytes.fetch_add(n as u64, Relaxed);
                    stream.blocks.fetch_add(1, Relaxed);
                }
            }
        }
        Ok(())
    })();
    stream.finish(result);
}

const DRAIN_MAX: Duration = Duration::from_secs(1);

/// Whether a TCP receiver's next read should wait for a whole buffer (MSG_WAITALL).
///
/// Only while the last read filled the buffer: the sender is then faster than we
/// read. A read that returns whatever is queued comes back with about one 64 KiB
/// loopback segment, and the many small reads and window updates cost the sender
/// more per byte (on loopback it runs our receive path). Waiting for a whole buffer
/// (measured, one stream, sender-bound: 106 -> 131 KB per read, the sender's CPU per
/// GB -18 %, 0.88x -> 1.08x iperf3's rate). A slower stream, or one that
/// paused (a partial or timed-out read), goes back to returning what is there, so
/// its counts never lag by more than the time one buffer takes to arrive, and a
/// stop is still seen within [`POLL`] (SO_RCVTIMEO bounds the whole wait). And only
/// when that buffer came within [`WAITALL_MAX_GAP_NS`] of the read before: a slow
/// path's receiver that found a full buffer after a stall would otherwise hold its
/// count back for up to [`POLL`], moving bytes between intervals.
fn wait_for_whole_buffer(last_read: usize, buf_len: usize, gap_ns: u64) -> bool {
    last_read > 0 && last_read >= buf_len && gap_ns <= WAITALL_MAX_GAP_NS
}

/// A whole buffer (128 KiB) in 2 ms is over 500 Mbit/s: waiting for the next costs the
/// counts at most about that long.
const WAITALL_MAX_GAP_NS: u64 = 2_000_000;

/// Answers a repeated "9876" (the client did not get our "6789") on a stream socket.
pub fn answer_repeated_hello(s: &UdpSocket) {
    let mut b = [0u8; 16];
    // SAFETY: b is valid for its length; MSG_DONTWAIT keeps this non-blocking.
    let n = unsafe {
        libc::recv(
            s.as_raw_fd(),
            b.as_mut_ptr() as *mut libc::c_void,
            b.len(),
            libc::MSG_DONTWAIT,
        )
    };
    if n == 4 && b[..4] == UDP_CONNECT_MSG {
        let _ = s.send(&UDP_CONNECT_REPLY);
    }
}

/// Writes the iperf3 header; `now` is read once per batch by the caller, since every
/// datagram of a batch leaves in the same call.
fn stamp(buf: &mut [u8], seq: u64, now: u64, counters_64bit: bool) {
    let h = UdpHeader {
        sec: (now / 1_000_000_000) as u32,
        usec: ((now % 1_000_000_000) / 1000) as u32,
        seq,
    };
    h.emit(buf, counters_64bit);
}

pub fn udp_send(stream: Arc<Stream>, sock: UdpSocket, ctl: Arc<RunControl>, opts: SendOpts) {
    let mut pacer = pacer_for(&opts);
    let result = (|| -> io::Result<()> {
        sys::set_timeouts(sock.as_raw_fd(), POLL)?;
        sys::set_timer_slack_ns(1000);
        let len = opts.len.max(UdpHeader::len(opts.udp_counters_64bit));
        let template = payload(len, opts.repeating_payload);
        // GSO sends a batch as one buffer of back-to-back datagrams.
        let gso_max = (GSO_BYTES / len).min(UDP_BATCH);
        let mut use_gso = opts.gso && gso_max >= 2;
        let mut flat: Vec<u8> = template
            .iter()
            .copied()
            .cycle()
            .take(len * gso_max.max(1))
            .collect();
        let mut bufs: Vec<Vec<u8>> = vec![template; UDP_BATCH];
        let mut sender = sys::SendBatch::new(UDP_BATCH);
        let mut seq: u64 = 0;
        let mut next_hello_check = 0u64;
        loop {
            if ctl.stopped() {
                return Ok(());
            }
            let now = sys::monotonic_ns();
            if now >= next_hello_check {
                answer_repeated_hello(&sock);
                next_hello_check = now + 100_000_000;
            }
            // How many datagrams may leave now.
            let mut n = 0;
            match pacer.as_mut() {
                Some(p) => {
                    let Some(now) = wait_for_pacer(p, &ctl) else {
                        return Ok(());
                    };
                    // Everything due now leaves in one batch (within the catch-up limit).
                    while n < UDP_BATCH && (n == 0 || p.ready(now)) {
                        if ctl.claim(len) == 0 {
                            break;
                        }
                        p.sent(now, len as u64);
                        n += 1;
                    }
                }
                None => {
                    while n < UDP_BATCH && ctl.claim(len) > 0 {
                        n += 1;
                    }
                }
            }
            if n == 0 {
                return Ok(());
            }
            let sent_at = sys::realtime_ns();
            if use_gso && n >= 2 && n <= gso_max {
                for i in 0..n {
                    stamp(
                        &mut flat[i * len..(i + 1) * len],
                        seq + 1 + i as u64,
                        sent_at,
                        opts.udp_counters_64bit,
                    );
                }
                match sys::send_gso(&sock, &flat[..n * len], len as u16) {
                    Ok(_) => {
                        seq += n as u64;
                        stream.bytes.fetch_add((n * len) as u64, Relaxed);
                        stream.blocks.fetch_add(n as u64, Relaxed);
                        continue;
                    }
                    Err(e)
                        if matches!(
                            e.raw_os_error(),
                            Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT | libc::EOPNOTSUPP)
                        ) =>
                    {
                        use_gso = false; // this path cannot segment: plain batches from now on
                    }
                    Err(e) if is_timeout(&e) || e.raw_os_error() == Some(libc::ENOBUFS) => {
                        if ctl.stopped() {
                            return Ok(());
                        }
                        std::thread::sleep(Duration::from_micros(100));
                    }
                    Err(e) if e.kind() == ErrorKind::ConnectionRefused => {}
                    Err(e) => return Err(e),
                }
            }
            for (i, b) in bufs.iter_mut().take(n).enumerate() {
                stamp(b, seq + 1 + i as u64, sent_at, opts.udp_counters_64bit);
            }
            let mut sent = 0;
            while sent < n {
                match sender.send(&sock, &bufs[sent..n]) {
                    Ok(k) => {
                        sent += k;
                    }
                    Err(e) if is_timeout(&e) => {
                        if ctl.stopped() {
                            return Ok(());
                        }
                    }
                    // A receiver that is not (yet, or any more) there: datagrams are lost.
                    Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                        if ctl.stopped() {
                            return Ok(());
                        }
                        sent = n;
                    }
                    Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                        std::thread::sleep(Duration::from_micros(100));
                    }
                    Err(e) => return Err(e),
                }
            }
            seq += n as u64;
            stream.bytes.fetch_add((n * len) as u64, Relaxed);
            stream.blocks.fetch_add(n as u64, Relaxed);
        }
    })();
    keep_report(&stream, pacer.as_ref(), &ctl);
    stream.finish(result);
}

/// Longest pause of a UDP receiver that outruns its sender.
const RX_BACKOFF_MAX_NS: u64 = 200_000;
/// Below this arrival rate (one datagram per 10 µs) a receiver never pauses: a paced
/// stream's datagrams are read as they come, so jitter is measured without our pauses.
const RX_BACKOFF_MAX_GAP_NS: u64 = 10_000;
/// Socket-buffer cost of one queued datagram beyond its payload (skb and bookkeeping),
/// rounded up from what loopback charges for a 64-byte datagram.
const RX_TRUESIZE_OVERHEAD: usize = 1024;

/// How many datagrams of `len` bytes the socket's receive buffer holds.
fn queue_capacity(sock: &UdpSocket, len: usize) -> usize {
    let rcvbuf = sys::getsockopt_int(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF).unwrap_or(0);
    rcvbuf.max(0) as usize / (len + RX_TRUESIZE_OVERHEAD)
}

/// How long a UDP receiver waits before its next read, given that the last read took
/// `got` datagrams of a `batch`, `elapsed_ns` after the read before it returned.
///
/// A receiver faster than its sender would wake for one or two datagrams each time,
/// and every wake-up is paid by the sender (on loopback it runs the receive path and
/// wakes us). Pausing lets about a batch accumulate first, so both sides move whole
/// batches. It never pauses for a slow stream, never long enough to fill more than a
/// batch at the rate just seen, and never when the socket buffer holds fewer than
/// eight batches (a small `-w`), so the pause cannot overflow the buffer.
fn rx_backoff_ns(got: usize, batch: usize, elapsed_ns: u64, capacity: usize) -> u64 {
    if got == 0 || got * 2 >= batch || capacity < 8 * batch {
        return 0;
    }
    let gap_ns = elapsed_ns / got as u64; // time per datagram just seen
    if gap_ns >= RX_BACKOFF_MAX_GAP_NS {
        return 0;
    }
    (gap_ns * batch as u64).min(RX_BACKOFF_MAX_NS)
}

pub fn udp_recv(
    stream: Arc<Stream>,
    sock: UdpSocket,
    ctl: Arc<RunControl>,
    len: usize,
    counters_64bit: bool,
) {
    let result = (|| -> io::Result<()> {
        sys::set_timeouts(sock.as_raw_fd(), POLL)?;
        let gro = sys::enable_gro(&sock);
        // Jitter from the kernel's arrival stamps, not from when we read: a receiver
        // that pauses to let a batch queue (or that the host delays) must not add its
        // own lateness to the path's jitter.
        let _ = sys::enable_rx_timestamps(&sock);
        let slot = if gro { 65_536 } else { len.clamp(64, 65_536) };
        let mut batch = sys::RecvBatch::new(UDP_BATCH, slot);
        // Arrival stamps are CLOCK_REALTIME: the count starts on that clock.
        *stream.udp_rx.lock().unwrap() = UdpReceiver::new(counters_64bit, sys::realtime_ns());
        let take = |batch: &sys::RecvBatch, n: usize| {
            let now = sys::realtime_ns();
            let (mut bytes, mut count) = (0u64, 0u64);
            let mut rx = stream.udp_rx.lock().unwrap();
            for i in 0..n {
                let (data, seg) = batch.get(i);
                let arrived = batch.stamp_ns(i).unwrap_or(now);
                for d in data.chunks(seg.unwrap_or(data.len()).max(1)) {
                    if d.len() == 4 && d == UDP_CONNECT_MSG {
                        let _ = sock.send(&UDP_CONNECT_REPLY);
                        continue;
                    }
                    // A datagram judged not the sender's (a forged or mangled one on
                    // our 4-tuple) is counted apart, not as received traffic.
                    if rx.on_datagram(d, arrived).is_senders() {
                        bytes += d.len() as u64;
                        count += 1;
                    }
                }
            }
            drop(rx);
            stream.bytes.fetch_add(bytes, Relaxed);
            stream.blocks.fetch_add(count, Relaxed);
            count as usize
        };
        let capacity = queue_capacity(&sock, len);
        let mut last_ns = sys::monotonic_ns();
        while !ctl.stopped() {
            match batch.recv(&sock) {
                Ok(n) => {
                    // Datagrams, not messages: one GRO message may carry dozens.
                    let got = take(&batch, n);
                    let now = sys::monotonic_ns();
                    let pause = rx_backoff_ns(got, UDP_BATCH, now.saturating_sub(last_ns), capacity);
                    if pause > 0 {
                        std::thread::sleep(Duration::from_nanos(pause));
                    }
                    last_ns = sys::monotonic_ns();
                }
                Err(e) if is_timeout(&e) => {
                    if ctl.stopped() {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    if ctl.stopped() {
                        return Ok(());
                    }
                }
                Err(e) => return Err(e),
            }
        }
        // What already arrived counts: drain the socket before reporting.
        while let Ok(n) = batch.recv_queued(&sock) {
            if n == 0 {
                break;
            }
            take(&batch, n);
        }
        Ok(())
    })();
    stream.finish(result);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_claims_stop_at_the_byte_limit() {
        let ctl = RunControl::new(1000, 0);
        assert_eq!(ctl.claim(400), 400);
        assert_eq!(ctl.claim(400), 400);
        assert_eq!(ctl.claim(400), 200);
        assert_eq!(ctl.claim(400), 0);
        assert!(ctl.budget_spent());
        let ctl = RunControl::new(0, 2);
        assert_eq!((ctl.claim(10), ctl.claim(10), ctl.claim(10)), (10, 10, 0));
    }

    #[test]
    fn tcp_receiver_waits_for_whole_buffers_only_behind_a_fast_sender() {
        assert!(wait_for_whole_buffer(131_072, 131_072, 100_000));
        assert!(!wait_for_whole_buffer(65_483, 131_072, 100_000));
        assert!(!wait_for_whole_buffer(0, 131_072, 100_000)); // start, or after a timeout
                                                              // A full buffer after a long gap: a slow path's backlog, not a fast sender.
        assert!(!wait_for_whole_buffer(131_072, 131_072, 30_000_000));
    }

    #[test]
    fn udp_receiver_pauses_only_when_it_outruns_a_fast_sender() {
        let cap = 4000;
        // A full or half-full batch: the sender keeps up, read on.
        assert_eq!(rx_backoff_ns(64, 64, 50_000, cap), 0);
        assert_eq!(rx_backoff_ns(32, 64, 1_000, cap), 0);
        // Two datagrams 2 µs apart: wait for about a batch at that rate.
        assert_eq!(rx_backoff_ns(2, 64, 4_000, cap), 2_000 * 64);
        // Faster still: a shorter wait. Slower: capped.
        assert_eq!(rx_backoff_ns(1, 64, 1_000, cap), 64_000);
        assert_eq!(rx_backoff_ns(1, 64, 9_000, cap), RX_BACKOFF_MAX_NS);
        // A paced, slow stream (one datagram per 10 µs or slower) is read as it comes.
        assert_eq!(rx_backoff_ns(1, 64, 10_000, cap), 0);
        assert_eq!(rx_backoff_ns(3, 64, 1_000_000, cap), 0);
        // A small socket buffer (-w) or an empty read: never pause.
        assert_eq!(rx_backoff_ns(1, 64, 1_000, 8 * 64 - 1), 0);
        assert_eq!(rx_backoff_ns(0, 64, 1_000, cap), 0);
    }

    #[test]
    fn repeating_payload_is_iperf3s() {
        assert_eq!(&payload(12, true), b"012345678901");
    }
}
