//! One test's data streams and the timed loop that runs them, shared by client and
//! server: start the workers, report intervals, watch the control connection, stop.

use std::net::{TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use netrig_core::iperf3::{stream_id, Params, Protocol, Results, StreamResult};
use netrig_core::wire::iperf3::State;
use serde_json::json;

use crate::control::Control;
use crate::engine::{self, RunControl, SendOpts, Stream};
use crate::error::Result;
use crate::output::Output;
use crate::report::{CpuUsage, Sample, Sampler};
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
}

impl Session {
    pub fn new(params: &Params) -> Session {
        Session {
            streams: vec![],
            ctl: RunControl::new(params.bytes, params.blocks),
            socks: vec![],
            handles: vec![],
            udp: params.protocol == Protocol::Udp,
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

    /// Starts one worker thread per stream.
    pub fn start(&mut self, params: &Params) -> Result<()> {
        let opts = SendOpts {
            len: params.len as usize,
            rate: params.bandwidth,
            burst: params.burst,
            pacing_timer_us: params.pacing_timer,
            zerocopy: params.zerocopy,
            repeating_payload: params.repeating_payload,
            udp_counters_64bit: params.udp_counters_64bit,
            gso: !params.netrig.as_ref().map(|n| n.no_gso).unwrap_or(false),
        };
        for (s, sock) in self.streams.iter().zip(&self.socks) {
            let (s, ctl, opts) = (s.clone(), self.ctl.clone(), opts.clone());
            let name = format!("stream-{}", s.id);
            let handle = match sock {
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
        self.ctl.stop.store(true, Relaxed);
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
    /// reordering and duplicates, a paced sender's account of its schedule.
    fn stream_extras(&self, s: &Stream, rx: &crate::report::UdpRxSample) -> Option<serde_json::Value> {
        let mut m = serde_json::Map::new();
        if self.udp {
            m.insert("out_of_order".into(), rx.out_of_order.into());
            m.insert("duplicates".into(), rx.duplicates.into());
        }
        if let Some(p) = s.pacing.lock().unwrap().as_ref() {
            m.insert("pacing".into(), crate::report::pacing_json(p));
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
    loop {
        let now = sys::monotonic_ns();
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
        let mut wake = next_report.min(now + ns(TICK));
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
            out.extra(
                "tcp_info",
                json!({
                    "socket": s.socket, "t": (t * 1e6).round() / 1e6, "sender": s.sender,
                    "bytes": s.bytes.load(Relaxed),
                    "snd_cwnd": i.cwnd_bytes(), "snd_cwnd_segments": i.snd_cwnd, "snd_ssthresh": i.snd_ssthresh,
                    "rtt_us": i.rtt_us, "rttvar_us": i.rttvar_us, "min_rtt_us": i.min_rtt_us,
                    "total_retrans": i.total_retrans, "lost": i.lost, "unacked": i.unacked,
                    "pacing_rate_bps": i.pacing_rate.saturating_mul(8),
                    "delivery_rate_bps": i.delivery_rate.saturating_mul(8),
                    "snd_wnd": i.snd_wnd, "snd_mss": i.snd_mss,
                }),
            );
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
