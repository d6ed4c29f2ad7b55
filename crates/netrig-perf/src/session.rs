//! One test's data streams and the timed loop that runs them, shared by client and
//! server: start the workers, report intervals, watch the control connection, stop.

use std::net::{TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use netrig_core::iperf3::{stream_id, Params, Protocol, Results, StreamResult};
use netrig_core::wire::iperf3::State;

use crate::config::BitrateLimit;
use crate::control::Control;
use crate::diskfile;
use crate::engine::{self, RunControl, SendOpts, Stream};
use crate::error::{PerfError, Result};
use crate::output::Output;
use crate::ratelimit::TotalRateCheck;
use crate::report::{CpuUsage, Sample, Sampler, TcpExtremes};
use crate::sys::{self, TcpInfo};

pub enum DataSock {
    Tcp(TcpStream),
    Udp(UdpSocket),
}

impl DataSock {
    pub fn fd(&self) -> i32 {
        match self {
            DataSock::Tcp(s) => s.as_raw_fd(),
            DataSock::Udp(s) => s.as_raw_fd(),
        }
    }
}

/// The default block length: 128 KiB for TCP; for UDP, iperf3's choice of the control
/// connection's MSS (1460 if unknown or too large).
pub fn default_len(protocol: Protocol, control_mss: u32) -> u64 {
    match protocol {
        Protocol::Tcp => 128 * 1024,
        Protocol::Udp if control_mss > 0 && control_mss <= 65_507 => control_mss as u64,
        Protocol::Udp => 1460,
    }
}

pub struct Session {
    pub streams: Vec<Arc<Stream>>,
    pub ctl: Arc<RunControl>,
    socks: Vec<DataSock>,
    handles: Vec<JoinHandle<()>>,
    pub udp: bool,
    /// `-F`: this side's streams send from, or receive into, this file.
    pub file: Option<PathBuf>,
}

impl Session {
    pub fn new(params: &Params) -> Session {
        Session {
            streams: vec![],
            ctl: RunControl::new(params.bytes, params.blocks),
            socks: vec![],
            handles: vec![],
            udp: params.protocol == Protocol::Udp,
            file: None,
        }
    }

    /// Adds a stream; ids follow iperf3's numbering in the order streams are added.
    pub fn add(&mut self, sock: DataSock, sender: bool, local: String, remote: String) -> Arc<Stream> {
        let s = Stream::new(stream_id(self.streams.len()), sock.fd(), sender, local, remote);
        self.streams.push(s.clone());
        self.socks.push(sock);
        s
    }

    pub fn sock(&self, i: usize) -> Option<&DataSock> {
        self.socks.get(i)
    }

    /// Starts one worker thread per stream, for a test that started at `start_ns`.
    pub fn start(&mut self, params: &Params, start_ns: u64) -> Result<()> {
        let opts = SendOpts {
            len: params.len as usize,
            rate: params.bandwidth,
            burst: params.burst,
            pacing_timer_us: params.pacing_timer,
            start_ns,
            zerocopy: params.zerocopy,
            repeating_payload: params.repeating_payload,
            udp_counters_64bit: params.udp_counters_64bit,
            gso: !params.netrig.as_ref().map(|n| n.no_gso).unwrap_or(false),
        };
        for (s, sock) in self.streams.iter().zip(&self.socks) {
            let (s, ctl, opts) = (s.clone(), self.ctl.clone(), opts.clone());
            let name = format!("stream-{}", s.id);
            let handle = match sock {
                DataSock::Tcp(t) if self.file.is_some() => {
                    let (t, path) = (t.try_clone()?, self.file.as_deref().unwrap_or(Path::new("")));
                    let len = opts.len;
                    let thread = std::thread::Builder::new().name(name);
                    if s.sender {
                        let f = diskfile::open_source(path)?;
                        thread.spawn(move || diskfile::send(s, t, ctl, len, f))?
                    } else {
                        let f = diskfile::open_sink(path)?;
                        thread.spawn(move || diskfile::recv(s, t, ctl, len, f))?
                    }
                }
                DataSock::Tcp(t) => {
                    let t = t.try_clone()?;
                    if s.sender {
                        std::thread::Builder::new()
                            .name(name)
                            .spawn(move || engine::tcp_send(s, t, ctl, opts))?
                    } else {
                        std::thread::Builder::new()
                            .name(name)
                            .spawn(move || engine::tcp_recv(s, t, ctl, opts.len))?
                    }
                }
                DataSock::Udp(u) => {
                    let u = u.try_clone()?;
                    if s.sender {
                        std::thread::Builder::new()
                            .name(name)
                            .spawn(move || engine::udp_send(s, u, ctl, opts))?
                    } else {
                        let c64 = opts.udp_counters_64bit;
                        std::thread::Builder::new()
                            .name(name)
                            .spawn(move || engine::udp_recv(s, u, ctl, opts.len, c64))?
                    }
                }
            };
            self.handles.push(handle);
        }
        Ok(())
    }

    pub fn stop(&mut self) {
        self.stop_at(sys::monotonic_ns());
    }

    /// Stops the workers of a test that ended at `end_ns` and waits for them.
    pub fn stop_at(&mut self, end_ns: u64) {
        self.ctl.stop_at(end_ns);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }

    /// Shuts every data socket down, as iperf3's server does on TEST_END: a peer
    /// blocked reading its data socket sees the end.
    pub fn shutdown_sockets(&self) {
        for s in &self.socks {
            if let DataSock::Tcp(t) = s {
                let _ = t.shutdown(std::net::Shutdown::Both);
            }
        }
    }

    /// Whether every sending stream has ended (its budget spent or its peer gone).
    pub fn senders_done(&self) -> bool {
        let mut any = false;
        for s in self.streams.iter().filter(|s| s.sender) {
            any = true;
            if !s.finished.load(Relaxed) {
                return false;
            }
        }
        any
    }

    pub fn received(&self) -> (u64, u64) {
        self.streams
            .iter()
            .filter(|s| !s.sender)
            .fold((0, 0), |(b, k), s| {
                (b + s.bytes.load(Relaxed), k + s.blocks.load(Relaxed))
            })
    }

    /// The first error a worker hit, if any.
    pub fn worker_error(&self) -> Option<String> {
        self.streams.iter().find_map(|s| s.error.lock().unwrap().clone())
    }

    pub fn congestion(&self) -> Option<String> {
        if self.udp {
            return None;
        }
        self.socks.first().and_then(|s| sys::get_congestion(s.fd()))
    }

    /// netrig's keys in a stream's results (iperf3 ignores them): the UDP receiver's
    /// reordering, duplicates and suspicious datagrams, a paced sender's account of its
    /// schedule.
    fn stream_extras(&self, s: &Stream, rx: &crate::report::UdpRxSample) -> Option<serde_json::Value> {
        let mut m = serde_json::Map::new();
        if self.udp {
            m.insert("out_of_order".into(), rx.out_of_order.into());
            m.insert("duplicates".into(), rx.duplicates.into());
            if !s.sender {
                m.insert("suspicious".into(), rx.suspicious.into());
            }
        }
        if let Some(p) = s.pacing.lock().unwrap().as_ref() {
            let pacing = crate::extras::Pacing::from(p);
            m.insert("pacing".into(), crate::extras::to_value(&pacing));
        }
        (!m.is_empty()).then_some(serde_json::Value::Object(m))
    }

    /// This side's results document for the exchange.
    pub fn results(&self, totals: &[Sample], cpu: CpuUsage) -> Results {
        let tcp_sender = !self.udp && self.streams.iter().any(|s| s.sender);
        let udp_sender = self.udp && self.streams.iter().any(|s| s.sender);
        let streams = totals
            .iter()
            .map(|t| {
                let s = &t.stream;
                let rx = t.udp_rx.unwrap_or_default();
                StreamResult {
                    id: s.id,
                    bytes: t.bytes,
                    retransmits: t.tcp.map(|x| x.retransmits as i64).unwrap_or(-1),
                    jitter: rx.jitter_ms / 1000.0,
                    errors: rx.lost as i64,
                    omitted_errors: 0,
                    packets: if self.udp {
                        if s.sender {
                            s.blocks.load(Relaxed) as i64
                        } else {
                            rx.packets as i64
                        }
                    } else {
                        0
                    },
                    omitted_packets: 0,
                    start_time: 0.0,
                    end_time: (t.end * 1e6).round() / 1e6,
                    netrig: self.stream_extras(s, &rx),
                }
            })
            .collect();
        Results {
            cpu_util_total: cpu.total,
            cpu_util_user: cpu.user,
            cpu_util_system: cpu.system,
            sender_has_retransmits: if tcp_sender {
                1
            } else if udp_sender {
                0
            } else {
                -1
            },
            congestion_used: self.congestion(),
            streams,
            ..Default::default()
        }
    }
}

/// Puts each sending TCP stream's TCP_INFO extremes (RTT min/max/mean in µs, largest
/// cwnd and send window in bytes) into its result's netrig extras, so that a client whose
/// peer sent (`-R`, `--bidir`) reports them as iperf3 reports its own sender's.
pub fn add_sender_extremes(results: &mut Results, totals: &[Sample], extremes: &[TcpExtremes]) {
    for ((r, t), x) in results.streams.iter_mut().zip(totals).zip(extremes) {
        if !t.stream.sender || t.tcp.is_none() {
            continue;
        }
        let mut extra = match r.netrig.take() {
            Some(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        for (k, v) in [
            ("max_snd_cwnd", x.max_snd_cwnd),
            ("max_snd_wnd", x.max_snd_wnd),
            ("max_rtt", x.max_rtt as u64),
            ("min_rtt", x.min_rtt as u64),
            ("mean_rtt", x.mean_rtt() as u64),
        ] {
            extra.insert(k.into(), v.into());
        }
        r.netrig = Some(serde_json::Value::Object(extra));
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How the timed loop knows it is over.
#[derive(Debug, Clone)]
pub struct DriveOpts {
    pub interval: Duration,
    pub omit: Duration,
    /// Client with `-t`: end after omit + duration.
    pub duration: Option<Duration>,
    /// Client: end when the byte/block budget is sent or received.
    pub bytes: u64,
    pub blocks: u64,
    pub is_client: bool,
    /// Server: give up on a client that never ends the test.
    pub deadline: Option<Duration>,
    pub tcp_info_interval: Option<Duration>,
    /// `--rcv-timeout`: with receiving streams, end with an error when nothing arrives
    /// this long (None: never).
    pub rcv_timeout: Option<Duration>,
    /// Server `--server-bitrate-limit`: end with an error when the test's total rate,
    /// averaged over the limit's window, is above it.
    pub rate_limit: Option<BitrateLimit>,
    /// Client `-F`: the test ends when every sender reached the file's end.
    pub end_when_senders_done: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The client's own end condition (time, bytes, blocks).
    Done,
    /// A control message from the peer.
    Peer(State),
    /// The server's deadline passed without TEST_END.
    Deadline,
}

const TICK: Duration = Duration::from_millis(20);
/// A client ending on a byte or block count checks it this often: a 100 MB loopback
/// transfer takes 50 ms, and a 20 ms tick would add up to 40 % to its time.
const BUDGET_TICK: Duration = Duration::from_millis(1);

/// Runs the test's timed loop: intervals, omit, TCP_INFO samples, end conditions.
pub fn drive(
    ctrl: &mut Control,
    session: &Session,
    out: &mut Output,
    sampler: &mut Sampler,
    o: &DriveOpts,
) -> Result<Ended> {
    let ns = |d: Duration| d.as_nanos() as u64;
    let start = sys::monotonic_ns();
    let omit_end = start + ns(o.omit);
    let end_at = o.duration.map(|d| omit_end + ns(d));
    let deadline = o.deadline.map(|d| start + ns(d));
    let interval = ns(o.interval);
    let mut next_report = if interval > 0 { start + interval } else { u64::MAX };
    let mut next_info = o.tcp_info_interval.map(|d| start + ns(d));
    let receives = session.streams.iter().any(|s| !s.sender);
    let mut last_rx = (session.received().0, start);
    let mut rate_check = o.rate_limit.map(|l| TotalRateCheck::new(l, o.interval, start));
    loop {
        let now = sys::monotonic_ns();
        if let (Some(limit), true) = (o.rcv_timeout, receives) {
            let (rb, _) = session.received();
            if rb != last_rx.0 {
                last_rx = (rb, now);
            } else if now.saturating_sub(last_rx.1) >= ns(limit) {
                return Err(PerfError::NoData {
                    ms: limit.as_millis(),
                });
            }
        }
        if let Some(c) = rate_check.as_mut() {
            let total: u64 = session.streams.iter().map(|s| s.bytes.load(Relaxed)).sum();
            if let Some(e) = c.check(now, total) {
                return Err(PerfError::TotalRate {
                    measured_bps: e.measured_bps,
                    limit_bps: e.limit_bps,
                    window_s: e.window_s,
                });
            }
        }
        if o.is_client && o.end_when_senders_done && session.senders_done() {
            return Ok(Ended::Done);
        }
        if sampler.omitting() && now >= omit_end {
            if interval > 0 {
                let samples = sampler.interval(now);
                out.interval(&samples);
            }
            sampler.end_omit(now);
            next_report = if interval > 0 { now + interval } else { u64::MAX };
        }
        if o.is_client && !sampler.omitting() {
            let time_up = end_at.map(|e| now >= e).unwrap_or(false);
            let (rb, rk) = session.received();
            let budget = (o.bytes > 0 || o.blocks > 0)
                && (session.senders_done()
                    || (o.bytes > 0 && rb >= o.bytes)
                    || (o.blocks > 0 && rk >= o.blocks));
            if time_up || budget {
                return Ok(Ended::Done);
            }
        }
        if now >= next_report {
            let samples = sampler.interval(now);
            out.interval(&samples);
            next_report += interval;
            if next_report <= now {
                next_report = now + interval;
            }
        }
        if let (Some(t), Some(every)) = (next_info, o.tcp_info_interval) {
            if now >= t {
                tcp_info_event(session, out, sampler.elapsed(now));
                next_info = Some(t + ns(every));
            }
        }
        if let Some(d) = deadline {
            if now >= d {
                return Ok(Ended::Deadline);
            }
        }
        let tick = if o.is_client && (o.bytes > 0 || o.blocks > 0) {
            BUDGET_TICK
        } else {
            TICK
        };
        let mut wake = next_report.min(now + ns(tick));
        if sampler.omitting() {
            wake = wake.min(omit_end);
        }
        if let Some(e) = end_at {
            wake = wake.min(e.max(omit_end));
        }
        if let Some(t) = next_info {
            wake = wake.min(t);
        }
        let wait = Duration::from_nanos(wake.saturating_sub(now));
        if let Some(state) = ctrl.poll_state(wait)? {
            return Ok(Ended::Peer(state));
        }
    }
}

/// One TCP_INFO sample per TCP stream, as a netrig event (for cwnd/RTT time series).
fn tcp_info_event(session: &Session, out: &mut Output, t: f64) {
    if session.udp {
        return;
    }
    for s in &session.streams {
        if let Some(i) = TcpInfo::of(s.socket) {
            out.tcp_info(crate::tcp_info::sample(
                s.socket,
                t,
                s.sender,
                s.bytes.load(Relaxed),
                &i,
            ));
        }
    }
}

/// Whether a short last interval is worth printing (iperf3 drops one under 10 % of
/// the interval that moved nothing).
pub fn final_interval(sampler: &mut Sampler, out: &mut Output, now_ns: u64, interval: Duration) {
    if interval.is_zero() {
        return;
    }
    let samples = sampler.interval(now_ns);
    let Some(first) = samples.first() else { return };
    let span = first.seconds();
    let moved: u64 = samples.iter().map(|s| s.bytes).sum();
    if span > 0.001 && (span >= 0.1 * interval.as_secs_f64() || moved > 0) {
        out.interval(&samples);
    }
}
