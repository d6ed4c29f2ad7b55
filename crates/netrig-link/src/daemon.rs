//! The daemon: one worker thread per link direction moves frames from its ingress end,
//! through the direction's stages, out of the other end at their due time; the main
//! thread samples stats at a fixed rate and serves the control socket.
//!
//! Timing: a frame's arrival is the kernel's receive timestamp, and its due time comes
//! from the model (virtual time, exact). A worker sleeps (ppoll on its ingress socket,
//! so arrivals wake it) until shortly before the next due time, by a margin learnt from
//! how late its timers fire (at most 150 µs), then waits out the rest on the clock.
//! Every frame's release lateness is recorded; lateness beyond the budget is counted as
//! overload.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use netrig_core::link::direction::{Counters, Direction, Dropped};
use netrig_core::link::packet::{Ecn, Packet};
use netrig_core::link::schema::LATE_BUDGET_NS;
use netrig_core::link::spec::DirectionSpec;
use netrig_core::wire::ethernet;
use netrig_core::wire::pcap::PcapWriter;
use serde_json::{json, Value};

use crate::afpacket::{self, PacketSocket};
use crate::capture::Capture;
use crate::config::{dir_index, Config};
use crate::control::{Control, Request};
use crate::corrupt;
use crate::gso::{self, Segments};
use crate::rx::Rx;
use crate::stats::{Lateness, LatenessSummary};

mod captures;

pub const DIRS: [&str; 2] = ["a_to_b", "b_to_a"];
pub(crate) const BATCH: usize = 64;
const MIN_MARGIN_NS: u64 = 30_000;
/// The most a worker spins before a due time. A timer that fires later than this was
/// held up by the scheduler (the thread was not running), which spinning longer does not
/// cure: on a busy host it only takes the CPU the late threads are waiting for.
const MAX_MARGIN_NS: u64 = 150_000;
/// How often a worker asks the kernel how many frames it dropped for it.
const HOST_DROPS_NS: u64 = 50_000_000;
/// A worker looks at its state at least this often (spec changes, stop).
pub(crate) const MAX_SLEEP_NS: u64 = 10_000_000;
/// How often what captures have buffered goes to their files (a slow link's capture
/// keeps up with it).
const CAPTURE_FLUSH_NS: u64 = 200_000_000;

pub static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

pub fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
    }
}

pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is valid for writes.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One direction's state, shared by its worker and the main thread.
pub struct DirState {
    pub dir: Direction,
    pub spec: DirectionSpec,
    pub pcap: Option<PcapWriter<BufWriter<File>>>,
    /// The pcapng captures that cover this direction (a capture of both directions is
    /// shared by both).
    pub captures: Vec<SharedCapture>,
    pub lateness: Lateness,
    window: Lateness,
    last: Counters,
    /// Frames lost before the link saw them: the kernel found the receive ring or socket
    /// buffer full (the daemon fell behind), or a ring slot could not be read. Counted
    /// by the worker now and then; `last_host` as `last`.
    pub drops_host: u64,
    last_host: u64,
}

/// What a stats line says of a direction, copied under its lock (the line is made
/// after the lock is let go, so the worker never waits for JSON).
#[derive(Clone, Copy)]
struct DirSnapshot {
    counters: Counters,
    last: Counters,
    qdisc: &'static str,
    queue_packets: usize,
    queue_bytes: u64,
    in_flight: usize,
    drops_host: u64,
    last_host: u64,
}

impl DirState {
    fn snapshot(&self) -> DirSnapshot {
        DirSnapshot {
            counters: self.dir.counters,
            last: self.last,
            qdisc: self.dir.qdisc_name(),
            queue_packets: self.dir.queue_packets(),
            queue_bytes: self.dir.queue_bytes(),
            in_flight: self.dir.in_flight(),
            drops_host: self.drops_host,
            last_host: self.last_host,
        }
    }
}

type Shared = Arc<Mutex<DirState>>;
/// Lock order: a direction's state (a_to_b before b_to_a), then its capture.
type SharedCapture = Arc<Mutex<Capture>>;

fn lock<T>(s: &Mutex<T>) -> MutexGuard<'_, T> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

pub struct Link {
    pub name: String,
    pub dirs: [Shared; 2],
    pub up: bool,
}

struct Worker {
    rx: Rx,
    tx: PacketSocket,
    state: Shared,
    /// The direction this worker moves (0: a_to_b).
    dir: usize,
    vnet: usize,
    waiter: Waiter,
    realtime: bool,
    /// Spent small buffers, and spent receive buffers ([`afpacket::SLOT`] bytes).
    pool: Vec<Vec<u8>>,
    big_pool: Vec<Vec<u8>>,
    /// Dropped frames, written to a capture, whose buffers wait to be reused.
    spent: Vec<Dropped>,
    /// A corrupted superframe's segments (see [`corrupt`]), the buffer reused.
    segs: Segments,
}

/// Frames up to this size are copied out of the receive buffer; larger ones (offload
/// superframes) take the buffer itself, which costs an allocation but no copy.
///
/// The copy is not a cost the bare forwarder escapes: sending straight from the slot,
/// its kernel copy reads the frame cold instead. Made to copy as the daemon does (TCP,
/// offloads off, 2026-11-27), the forwarder moved 0.98 of its own figure (paired median
/// of 6 rounds) for 6 % more CPU per GB: about what holding small frames in their ring
/// slots could win.
const COPY_MAX: usize = 2048;
const POOL_MAX: usize = 4096;
const BIG_POOL_MAX: usize = 256;

impl Worker {
    fn run(mut self) -> io::Result<()> {
        // Precise wake-ups: the default timer slack (50 µs) would be our lateness.
        // SAFETY: PR_SET_TIMERSLACK takes a plain integer.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
        if self.realtime {
            let param = libc::sched_param { sched_priority: 20 };
            // SAFETY: param is valid; pid 0 is this thread.
            unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        }
        let mut out: Vec<(u64, Packet)> = Vec::with_capacity(BATCH);
        let mut next_count = 0;
        let mut due = u64::MAX;
        let state = self.state.clone();
        while !STOP.load(Ordering::Relaxed) {
            // Woken for a due time (or back from a full batch with frames due): they
            // leave before another batch is read and taken in.
            if monotonic_ns() >= due {
                self.release(&mut lock(&state), monotonic_ns(), &mut out);
                self.send(&mut out);
            }
            // One batch read, then the direction's lock once: its frames arrive, what
            // is due is taken out; the lock is let go before the send (which may run the
            // receiver's stack: veth delivers synchronously).
            let n = self.rx.recv(BATCH)?;
            let more = n == BATCH;
            let wake = {
                let mut st = lock(&state);
                if n > 0 {
                    self.receive(&mut st, n);
                }
                let now = monotonic_ns();
                if now >= next_count {
                    self.count_host_drops(&mut st);
                    next_count = now + HOST_DROPS_NS;
                }
                self.release(&mut st, now, &mut out)
            };
            self.recycle_spent();
            self.send(&mut out);
            let now = monotonic_ns();
            due = wake.unwrap_or(u64::MAX);
            let wake = due.min(now + MAX_SLEEP_NS);
            if more {
                continue; // frames wait: the next batch before any sleep
            }
            let mut fd = [pollfd_in(self.rx.raw_fd())];
            self.waiter.wait_until(&mut fd, now, wake);
        }
        self.count_host_drops(&mut lock(&state));
        Ok(())
    }

    fn count_host_drops(&mut self, st: &mut DirState) {
        let (kernel, refused) = self.rx.take_drops();
        st.drops_host += kernel + refused;
    }

    /// Hands the `n` frames of the batch just read to the direction. One batch at a
    /// time, then releases: what is due leaves without waiting for a long backlog to
    /// be read, and the frames of a batch are still in the cache when they are sent.
    fn receive(&mut self, st: &mut DirState, n: usize) {
        let now = monotonic_ns();
        let real_now = wall_ns();
        for i in 0..n {
            let Some(f) = self.rx.frame(i) else { continue };
            // When the frame really arrived (the kernel's stamp), not when we got
            // round to reading it; never before the direction's last event.
            let arrived = f.arrived(now, real_now).max(st.dir.clock_ns());
            let data = f.data;
            if data.len() < self.vnet {
                continue;
            }
            let buf = if data.len() <= COPY_MAX {
                let mut buf = self.pool.pop().unwrap_or_default();
                buf.clear();
                buf.extend_from_slice(data);
                buf
            } else if !self.rx.can_take(i) {
                // A receive buffer (SLOT bytes, all initialised: see recycle), filled
                // anew; a frame beyond SLOT grows it.
                let mut buf = self.big_pool.pop().unwrap_or_else(|| vec![0u8; afpacket::SLOT]);
                buf.clear();
                buf.extend_from_slice(data);
                buf
            } else {
                let spare = self.big_pool.pop().unwrap_or_else(|| vec![0u8; afpacket::SLOT]);
                self.rx.take(i, spare)
            };
            // Read from our copy, which the copy has just brought into the cache.
            let (hdr, frame) = buf.split_at(self.vnet);
            let info = ethernet::inspect(frame);
            let wire = gso::wire(hdr, frame);
            let pkt = Packet {
                len: wire.bytes,
                segments: wire.frames,
                head: self.vnet as u32,
                flow: info.flow,
                ecn: info.ecn,
                data: buf,
                ..Default::default()
            };
            st.dir.arrive(arrived, pkt);
        }
        self.rx.done();
        if st.dir.has_dropped() {
            st.capture_drops(self.dir, self.vnet, &mut self.spent);
        }
    }

    /// Takes what is due out of the direction into `out` (lateness recorded, captures
    /// fed); returns when the direction next needs us.
    fn release(&mut self, st: &mut DirState, now: u64, out: &mut Vec<(u64, Packet)>) -> Option<u64> {
        out.clear();
        st.dir.poll(now, out);
        if !out.is_empty() {
            // Lateness is taken as the frames are handed to the kernel (the send itself
            // may run the receiver's stack: veth delivers synchronously).
            let at = monotonic_ns();
            let vnet = self.vnet;
            for (due, pkt) in out.iter_mut() {
                if pkt.ecn == Ecn::Ce {
                    ethernet::set_ecn_ce(&mut pkt.data[vnet..]);
                }
                let late = at.saturating_sub(*due);
                st.lateness.record(late);
                st.window.record(late);
            }
            // Corrupted frames as a wire would carry them (offloads on: checksums
            // completed, superframes cut), so that the receiver finds the bit wrong.
            corrupt::on_wire_all(out, vnet, &mut self.segs);
            if let Some(w) = st.pcap.as_mut() {
                for (_, pkt) in out.iter() {
                    let _ = w.write(wall_ns(), &pkt.data[vnet..]);
                }
            }
            for c in &st.captures {
                let mut c = lock(c);
                for (_, p) in out.iter() {
                    let (hdr, frame) = p.data.split_at(vnet);
                    c.delivered(self.dir, at, hdr, frame, p.duplicated, p.corrupted);
                }
            }
        }
        if st.dir.has_dropped() {
            st.capture_drops(self.dir, self.vnet, &mut self.spent);
        }
        st.dir.next_wakeup()
    }

    /// Sends what [`Worker::release`] took out, and keeps the buffers.
    fn send(&mut self, out: &mut Vec<(u64, Packet)>) {
        if !out.is_empty() {
            // A full device queue drops frames, as a wire would.
            let _ = self.tx.send_batch(out.iter().map(|(_, p)| p.data.as_slice()));
            for (_, p) in out.drain(..) {
                self.recycle(p.data);
            }
        }
    }
}

impl Worker {
    fn recycle_spent(&mut self) {
        while let Some(x) = self.spent.pop() {
            self.recycle(x.pkt.data);
        }
    }

    fn recycle(&mut self, mut buf: Vec<u8>) {
        if buf.capacity() >= afpacket::SLOT {
            if self.big_pool.len() < BIG_POOL_MAX {
                // SAFETY: only receive buffers are this large (clones of frames are cut
                // to the frame), made as SLOT zeroed bytes and since only truncated, or
                // cleared and refilled (which leaves bytes initialised), or grown past
                // SLOT by a refill (initialised up to their length): the bytes up to
                // SLOT are initialised.
                unsafe { buf.set_len(afpacket::SLOT) };
                self.big_pool.push(buf);
            }
        } else if self.pool.len() < POOL_MAX {
            self.pool.push(buf);
        }
    }
}

/// The worst recent oversleep (decaying 0.5 % a wake-up) and the margin it asks for: 1.2
/// times it plus 20 µs, within MIN..=MAX_MARGIN_NS. Oversleeps beyond the largest margin
/// count as that margin (see MAX_MARGIN_NS).
fn learn_margin(oversleep_ns: f64, over_ns: u64) -> (f64, u64) {
    let over = over_ns.min(MAX_MARGIN_NS) as f64;
    let worst = (oversleep_ns * 0.995).max(over);
    (
        worst,
        ((worst * 1.2) as u64 + 20_000).clamp(MIN_MARGIN_NS, MAX_MARGIN_NS),
    )
}

fn spin_until(t: u64) {
    while monotonic_ns() < t {
        std::hint::spin_loop();
    }
}

/// A poll entry waiting for `fd` to have something to read.
pub(crate) fn pollfd_in(fd: libc::c_int) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// Sleeps until one of `fds` is ready or `ns` have passed.
pub(crate) fn poll_ns(fds: &mut [libc::pollfd], ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_nsec: (ns % 1_000_000_000) as i64,
    };
    // SAFETY: fds and ts are valid for the call; a null sigmask keeps the current one.
    unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
}

/// How a thread that releases frames on time waits for a due time (a daemon worker,
/// and the bare forwarder holding frames): a timer to a margin before it, learnt from
/// how late the timers fire ([`learn_margin`]), then the clock for the rest.
pub(crate) struct Waiter {
    oversleep_ns: f64,
    margin_ns: u64,
}

impl Waiter {
    pub(crate) fn new() -> Waiter {
        Waiter {
            oversleep_ns: 0.0,
            margin_ns: 60_000,
        }
    }

    /// Waits (it being `now`) until `wake`, or until one of `fds` has a frame while the
    /// timer runs (a frame ends the wait early: the caller reads it).
    pub(crate) fn wait_until(&mut self, fds: &mut [libc::pollfd], now: u64, wake: u64) {
        if wake > now + self.margin_ns {
            let target = wake - self.margin_ns;
            poll_ns(fds, target - now);
            let woke = monotonic_ns();
            if woke > target {
                // The timer woke us, not a frame: learn how late timers fire, then wait
                // out the rest on the clock (arrivals keep kernel timestamps).
                (self.oversleep_ns, self.margin_ns) = learn_margin(self.oversleep_ns, woke - target);
                spin_until(wake);
            }
        } else {
            spin_until(wake);
        }
    }
}

pub struct Daemon {
    pub links: Vec<Link>,
    workers: Vec<Worker>,
    stats_out: Option<BufWriter<File>>,
    stats_interval_ns: u64,
    pub control: Option<Control>,
    /// The pcapng captures running.
    captures: Vec<SharedCapture>,
    /// Bytes of virtio-net header in front of each frame.
    vnet: usize,
    start_ns: u64,
    pub events: bool,
    seed: u64,
    realtime: bool,
    /// A stats window's histogram, swapped with a direction's at each sample.
    spare_window: Option<Lateness>,
}

fn read_trace(spec: &mut DirectionSpec) -> io::Result<()> {
    if let Some(t) = spec.trace.as_mut() {
        if t.text.is_none() {
            let path = t.path.clone().unwrap_or_default();
            t.text = Some(
                std::fs::read_to_string(&path)
                    .map_err(|e| io::Error::new(e.kind(), format!("trace {path}: {e}")))?,
            );
        }
    }
    Ok(())
}

impl Daemon {
    pub fn new(cfg: &Config) -> io::Result<Daemon> {
        let start_ns = monotonic_ns();
        let vnet = !cfg.offloads_off;
        let vnet_len = if vnet { afpacket::VNET_HDR_LEN } else { 0 };
        let mut links = vec![];
        let mut workers = vec![];
        for (i, l) in cfg.links.iter().enumerate() {
            if cfg.offloads_off {
                afpacket::offloads_off(&l.a)?;
                afpacket::offloads_off(&l.b)?;
            }
            let ends = [&l.a, &l.b];
            let mut shared = vec![];
            for d in 0..2 {
                let mut spec = l.spec(d);
                read_trace(&mut spec)?;
                let seed = cfg
                    .seed
                    .wrapping_mul(1_000_003)
                    .wrapping_add((i * 2 + d) as u64 + 1);
                let mut dir = spec.build(seed, start_ns).map_err(|e| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("{}.{}: {e}", l.name, DIRS[d]),
                    )
                })?;
                dir.record_events = cfg.events;
                let state = Arc::new(Mutex::new(DirState {
                    dir,
                    spec,
                    pcap: None,
                    captures: vec![],
                    lateness: Lateness::new(LATE_BUDGET_NS),
                    window: Lateness::new(LATE_BUDGET_NS),
                    last: Counters::default(),
                    drops_host: 0,
                    last_host: 0,
                }));
                workers.push(Worker {
                    rx: Rx::open(ends[d], cfg.io, vnet, BATCH, cfg.ring_bytes())
                        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", ends[d])))?,
                    tx: PacketSocket::sender(ends[1 - d], vnet)?,
                    state: state.clone(),
                    dir: d,
                    vnet: vnet_len,
                    waiter: Waiter::new(),
                    realtime: cfg.realtime,
                    pool: vec![],
                    big_pool: vec![],
                    spent: vec![],
                    segs: Segments::default(),
                });
                shared.push(state);
            }
            let [a, b]: [Shared; 2] = shared
                .try_into()
                .map_err(|_| io::Error::other("two directions"))?;
            links.push(Link {
                name: l.name.clone(),
                dirs: [a, b],
                up: true,
            });
        }
        let mut daemon = Daemon {
            links,
            workers,
            stats_out: match &cfg.stats_path {
                Some(p) => Some(BufWriter::new(
                    File::create(p).map_err(|e| io::Error::new(e.kind(), format!("{p}: {e}")))?,
                )),
                None => None,
            },
            stats_interval_ns: (cfg.stats_interval_ms * 1e6) as u64,
            control: match &cfg.control_path {
                Some(p) => Some(Control::bind(p)?),
                None => None,
            },
            captures: vec![],
            vnet: vnet_len,
            start_ns,
            events: cfg.events,
            seed: cfg.seed,
            realtime: cfg.realtime,
            spare_window: None,
        };
        for p in &cfg.pcap {
            daemon.start_pcap(&p.link, dir_index(&p.dir).unwrap_or(0), Some(&p.path))?;
        }
        for c in &cfg.captures {
            daemon.start_capture(c).map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("capture of {}: {e}", c.link))
            })?;
        }
        Ok(daemon)
    }

    fn link_index(&self, name: &str) -> Option<usize> {
        self.links.iter().position(|l| l.name == name)
    }

    pub fn start_pcap(&mut self, link: &str, dir: usize, path: Option<&str>) -> io::Result<()> {
        let i = self
            .link_index(link)
            .ok_or_else(|| io::Error::other(format!("no link '{link}'")))?;
        let mut st = lock(&self.links[i].dirs[dir]);
        if let Some(mut old) = st.pcap.take() {
            old.flush()?;
        }
        if let Some(p) = path {
            let f = File::create(p).map_err(|e| io::Error::new(e.kind(), format!("{p}: {e}")))?;
            st.pcap = Some(PcapWriter::new(BufWriter::new(f), 65_535)?);
        }
        Ok(())
    }

    fn t(&self, now: u64) -> f64 {
        (now - self.start_ns) as f64 / 1e9
    }

    /// Runs until a signal or a shutdown request; returns the totals.
    pub fn run(&mut self) -> io::Result<Value> {
        let handles: Vec<JoinHandle<io::Result<()>>> = self
            .workers
            .drain(..)
            .enumerate()
            .map(|(i, w)| {
                std::thread::Builder::new()
                    .name(format!("link-{i}"))
                    .spawn(move || w.run())
                    .map_err(io::Error::other)
            })
            .collect::<io::Result<_>>()?;
        let mut next_stats = self.start_ns + self.stats_interval_ns;
        let mut next_capture_flush = self.start_ns + CAPTURE_FLUSH_NS;
        let mut last_sample = self.start_ns;
        let mut result = Ok(());
        while !STOP.load(Ordering::Relaxed) {
            if handles.iter().any(|h| h.is_finished()) {
                break; // a worker failed: stop all and report it
            }
            let now = monotonic_ns();
            if now >= next_stats {
                if let Err(e) = self.sample(now, now - last_sample) {
                    result = Err(e);
                    break;
                }
                last_sample = now;
                next_stats += self.stats_interval_ns;
                if next_stats <= now {
                    next_stats = now + self.stats_interval_ns;
                }
            }
            if now >= next_capture_flush {
                for c in &self.captures {
                    lock(c).flush();
                }
                next_capture_flush = now + CAPTURE_FLUSH_NS;
            }
            match self.serve_control(now) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
            self.wait(Duration::from_nanos(next_stats.saturating_sub(monotonic_ns())));
        }
        STOP.store(true, Ordering::SeqCst);
        for h in handles {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => result = result.and(Err(e)),
                Err(_) => result = result.and(Err(io::Error::other("a link worker panicked"))),
            }
        }
        let totals = self.totals()?;
        result.map(|_| totals)
    }

    fn wait(&self, timeout: Duration) {
        let mut fds: Vec<libc::pollfd> = self.control.as_ref().map(|c| c.poll_fds()).unwrap_or_default();
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as i64,
            tv_nsec: timeout.subsec_nanos() as i64,
        };
        // SAFETY: fds and ts are valid for the call; a null sigmask keeps the current one.
        unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as u64, &ts, std::ptr::null()) };
    }

    /// A direction's figures: since the last sample (`span_ns`), or in all with its
    /// `lateness`.
    fn direction_json(
        &self,
        l: &Link,
        d: usize,
        st: &DirSnapshot,
        now: u64,
        span_ns: Option<u64>,
        lateness: Option<LatenessSummary>,
    ) -> Value {
        let c = st.counters;
        let base = if span_ns.is_some() {
            st.last
        } else {
            Counters::default()
        };
        let delta = |a: u64, b: u64| a.saturating_sub(b);
        let mut v = json!({
            "t": (self.t(now) * 1e6).round() / 1e6,
            "link": l.name, "dir": DIRS[d], "up": l.up, "qdisc": st.qdisc,
            "queue_packets": st.queue_packets, "queue_bytes": st.queue_bytes, "in_flight": st.in_flight,
            "arrived": delta(c.arrived, base.arrived),
            "departed": delta(c.departed, base.departed),
            "delivered": delta(c.delivered, base.delivered),
            "delivered_bytes": delta(c.delivered_bytes, base.delivered_bytes),
            "lost": delta(c.lost, base.lost),
            "drops_overflow": delta(c.drops_overflow, base.drops_overflow),
            "drops_aqm": delta(c.drops_aqm, base.drops_aqm),
            "drops_down": delta(c.drops_down, base.drops_down),
            "ecn_marks": delta(c.ecn_marks, base.ecn_marks),
            "duplicated": delta(c.duplicated, base.duplicated),
            "corrupted": delta(c.corrupted, base.corrupted),
            "drops_host": st.drops_host - if span_ns.is_some() { st.last_host } else { 0 },
        });
        if let Some(span) = span_ns {
            let bytes = delta(c.delivered_bytes, base.delivered_bytes);
            v["rate_bps"] = json!(if span > 0 {
                bytes as f64 * 8e9 / span as f64
            } else {
                0.0
            });
        }
        if let Some(late) = lateness {
            v["lateness"] = json!(late);
        }
        v
    }

    fn emit(&mut self, lines: &[String]) -> io::Result<()> {
        if let Some(w) = self.stats_out.as_mut() {
            for line in lines {
                w.write_all(line.as_bytes())?;
                w.write_all(b"\n")?;
            }
            w.flush()?;
        }
        if let Some(c) = self.control.as_mut() {
            c.broadcast(lines);
        }
        Ok(())
    }

    fn sample(&mut self, now: u64, span: u64) -> io::Result<()> {
        let mut lines = vec![];
        // The window's histogram is swapped for the spare under the lock and read and
        // emptied after it: the worker waits for neither.
        let mut window = self
            .spare_window
            .take()
            .unwrap_or_else(|| Lateness::new(LATE_BUDGET_NS));
        for l in &self.links {
            for (d, shared) in l.dirs.iter().enumerate() {
                let (snap, w, events) = {
                    let mut st = lock(shared);
                    std::mem::swap(&mut st.window, &mut window);
                    let snap = st.snapshot();
                    st.last = st.dir.counters;
                    st.last_host = st.drops_host;
                    let events = if self.events { st.dir.take_events() } else { vec![] };
                    (snap, st.dir.take_sojourn(), events)
                };
                let late = window.summary();
                window.reset();
                let mut v = self.direction_json(l, d, &snap, now, Some(span), None);
                v["dequeued"] = json!(w.count);
                v["sojourn_mean_us"] = json!(w.mean_ns() as f64 / 1e3);
                v["sojourn_max_us"] = json!(w.max_ns as f64 / 1e3);
                v["late_p99_us"] = json!(late.p99_us);
                lines.push(v.to_string());
                for e in events {
                    lines.push(json!({ "event": e, "link": l.name, "dir": DIRS[d] }).to_string());
                }
            }
        }
        self.spare_window = Some(window);
        self.emit(&lines)
    }

    /// Whole-run figures per link direction, and lateness.
    pub fn totals(&mut self) -> io::Result<Value> {
        let now = monotonic_ns();
        let mut all = Lateness::new(LATE_BUDGET_NS);
        let mut links = vec![];
        for l in &self.links {
            let mut per = vec![];
            for d in 0..2 {
                let mut st = lock(&l.dirs[d]);
                if !st.captures.is_empty() {
                    st.capture_drops(d, self.vnet, &mut vec![]);
                }
                all.merge(&st.lateness);
                per.push(self.direction_json(l, d, &st.snapshot(), now, None, Some(st.lateness.summary())));
                if let Some(p) = st.pcap.as_mut() {
                    p.flush()?;
                }
            }
            links.push(json!({ "link": l.name, "a_to_b": per[0], "b_to_a": per[1] }));
        }
        for c in &self.captures {
            lock(c).flush();
        }
        let v = json!({ "totals": { "seconds": self.t(now), "links": links, "lateness": all.summary(),
            "seed": self.seed, "realtime": self.realtime, "captures": self.capture_status() } });
        self.emit(&[v.to_string()])?;
        Ok(v)
    }

    /// Serves control requests; true when asked to shut down.
    fn serve_control(&mut self, now: u64) -> io::Result<bool> {
        let Some(mut control) = self.control.take() else {
            return Ok(false);
        };
        let mut stop = false;
        for (client, req) in control.poll_requests() {
            let reply = match req {
                Ok(r) => self.handle(r, now, &mut stop, &mut control, client),
                Err(e) => json!({ "ok": false, "error": e }),
            };
            control.reply(client, &reply);
        }
        self.control = Some(control);
        Ok(stop)
    }

    fn handle(
        &mut self,
        req: Request,
        now: u64,
        stop: &mut bool,
        control: &mut Control,
        client: usize,
    ) -> Value {
        let find = |name: &str| self.links.iter().position(|l| l.name == name);
        match req {
            Request::Stats => {
                let mut links = vec![];
                let mut all = Lateness::new(LATE_BUDGET_NS);
                for l in &self.links {
                    let (a, b) = (lock(&l.dirs[0]), lock(&l.dirs[1]));
                    all.merge(&a.lateness);
                    all.merge(&b.lateness);
                    links.push(json!({ "link": l.name, "up": l.up,
                        "a_to_b": self.direction_json(l, 0, &a.snapshot(), now, None, Some(a.lateness.summary())),
                        "b_to_a": self.direction_json(l, 1, &b.snapshot(), now, None, Some(b.lateness.summary())),
                        "spec": { "a_to_b": a.spec, "b_to_a": b.spec } }));
                }
                json!({ "ok": true, "links": links, "lateness": all.summary(),
                        "captures": self.capture_status() })
            }
            Request::Subscribe => {
                control.subscribe(client);
                json!({ "ok": true, "subscribed": true })
            }
            Request::Set { link, specs } => {
                let Some(i) = find(&link) else {
                    return json!({ "ok": false, "error": format!("no link '{link}'") });
                };
                // A new spec replaces the direction's whole spec (a key it leaves out is
                // off). Every direction is checked first, so a bad change changes nothing.
                let mut new_specs = vec![];
                for (d, spec) in specs {
                    let mut s: DirectionSpec = match serde_json::from_value(spec) {
                        Ok(s) => s,
                        Err(e) => return json!({ "ok": false, "error": format!("{}: spec: {e}", DIRS[d]) }),
                    };
                    if let Err(e) = read_trace(&mut s) {
                        return json!({ "ok": false, "error": e.to_string() });
                    }
                    if let Err(e) = s.build(0, now) {
                        return json!({ "ok": false, "error": format!("{}: {e}", DIRS[d]) });
                    }
                    new_specs.push((d, s));
                }
                for (d, s) in new_specs {
                    let mut st = lock(&self.links[i].dirs[d]);
                    let now = monotonic_ns().max(st.dir.clock_ns());
                    let old = st.spec.clone();
                    if let Err(e) = s.apply(&old, &mut st.dir, now) {
                        return json!({ "ok": false, "error": format!("{}: {e}", DIRS[d]) });
                    }
                    st.spec = s;
                    for c in &st.captures {
                        lock(c).set_spec(d, &st.spec);
                    }
                }
                let l = &self.links[i];
                let (a, b) = (lock(&l.dirs[0]).spec.clone(), lock(&l.dirs[1]).spec.clone());
                json!({ "ok": true, "link": link, "spec": { "a_to_b": a, "b_to_a": b } })
            }
            Request::Up { link, up } => match find(&link) {
                Some(i) => {
                    let l = &mut self.links[i];
                    l.up = up;
                    for d in &l.dirs {
                        lock(d).dir.set_up(up);
                    }
                    json!({ "ok": true, "link": link, "up": up })
                }
                None => json!({ "ok": false, "error": format!("no link '{link}'") }),
            },
            Request::Pcap { link, dir, path } => {
                let Some(d) = dir_index(&dir) else {
                    return json!({ "ok": false, "error": format!("dir: '{dir}'") });
                };
                match self.start_pcap(&link, d, path.as_deref()) {
                    Ok(()) => json!({ "ok": true }),
                    Err(e) => json!({ "ok": false, "error": e.to_string() }),
                }
            }
            Request::CaptureStart(c) => self
                .start_capture(&c)
                .unwrap_or_else(|e| json!({ "ok": false, "error": format!("capture_start: {e}") })),
            Request::CaptureStop { link, path } => self
                .stop_capture(&link, path.as_deref())
                .unwrap_or_else(|e| json!({ "ok": false, "error": format!("capture_stop: {e}") })),
            Request::Shutdown => {
                *stop = true;
                json!({ "ok": true, "stopping": true })
            }
        }
    }
}

pub(crate) fn wall_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is valid for writes.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spin_margin_follows_timers_but_not_stalls() {
        // timers 40 µs late: a margin of 1.2 × 40 + 20 = 68 µs
        let (worst, margin) = learn_margin(0.0, 40_000);
        assert_eq!((worst, margin), (40_000.0, 68_000));
        // a 5 ms stall (the thread was not running) spins no more than MAX_MARGIN_NS
        let (worst, margin) = learn_margin(worst, 5_000_000);
        assert_eq!((worst, margin), (150_000.0, 150_000));
        // and is forgotten: after 1000 punctual wake-ups the margin is back to the minimum
        let mut state = (worst, margin);
        for _ in 0..1000 {
            state = learn_margin(state.0, 1_000);
        }
        assert!(state.0 < 1_500.0 && state.1 == MIN_MARGIN_NS, "{state:?}");
    }
}
