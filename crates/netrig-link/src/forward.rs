//! The bare forwarder (`netrig-link forward`): frames from each end out of the other,
//! as they come, with nothing else (no link model, no timestamps, no stats beyond
//! counters). It reads and sends through the daemon's own I/O (`rx`, `afpacket`), so
//! what it moves on given veth ends is the floor of what the daemon can move there:
//! benches print the daemon's figure beside it.
//!
//! With `hold` (`--delay-us`, `--rate-mbit`, `--limit`) it is the floor of a delay
//! line instead: each frame leaves when a link of that rate and delay would hand it over
//! (a drop-tail FIFO, then the delay; nothing else), the thread waits for due times as a
//! daemon worker does (timer to a learnt margin before, then the clock), and how late
//! each frame is handed to the kernel is recorded as the worker records it. That is the
//! least work any emulator must do to release frames on time, so its lateness is the
//! floor of the daemon's on the same ends under the same traffic.
//!
//! Owns the forwarding loops (one thread for both directions, or one per direction) and
//! their counters. Does not own the I/O itself or the emulation.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use crate::afpacket::{self, PacketSocket, VNET_HDR_LEN};
use crate::daemon::{monotonic_ns, poll_ns, pollfd_in, wall_ns, Waiter, MAX_SLEEP_NS, STOP};
use crate::rx::{IoKind, Rx};
use crate::stats::{Lateness, LatenessSummary};
use netrig_core::link::schema::LATE_BUDGET_NS;

/// The most frames read (and sent) at once.
pub const MAX_BATCH: usize = 1024;
/// The longest a forwarder may run, and the longest it sleeps between looks at the
/// clock and at its stop flag.
pub const MAX_SECONDS: f64 = 3600.0;
const IDLE_POLL_MS: u64 = 20;

/// What to forward between, and how.
#[derive(Debug, Clone)]
pub struct Forward {
    pub a: String,
    pub b: String,
    pub io: IoKind,
    /// 1: one thread serves both directions; 2: a thread per direction.
    pub threads: usize,
    pub seconds: f64,
    /// Turn the ends' offloads off (wire frames); false: superframes with their
    /// virtio-net header pass whole.
    pub offloads_off: bool,
    /// Bytes of ring per direction (ring only).
    pub ring_bytes: usize,
    /// The most frames read and sent at once.
    pub batch: usize,
    /// Send past the qdisc (PACKET_QDISC_BYPASS).
    pub bypass: bool,
    /// Keep looking for frames this long after the last before sleeping (0: sleep at
    /// once).
    pub spin_ns: u64,
    /// Hold frames as a link would and release them on time (None: as they come).
    pub hold: Option<Hold>,
}

/// A link's least schedule: frames wait in a drop-tail FIFO of `limit` frames for a
/// wire of `rate_bps` (0: no rate), then `delay_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold {
    pub delay_ns: u64,
    pub rate_bps: u64,
    pub limit: usize,
}

/// The due times of [`Hold`], deterministic: [`Schedule::due`] takes the arrival time.
#[derive(Debug)]
struct Schedule {
    hold: Hold,
    /// When the wire has sent everything queued so far.
    wire_free: u64,
    /// When each frame still in the FIFO leaves the wire.
    on_wire: VecDeque<u64>,
}

impl Schedule {
    fn new(hold: Hold) -> Schedule {
        Schedule {
            hold,
            wire_free: 0,
            on_wire: VecDeque::new(),
        }
    }

    /// When a frame of `bytes` arriving at `arrived` is due out; None: the FIFO is full
    /// (dropped).
    fn due(&mut self, arrived: u64, bytes: usize) -> Option<u64> {
        while self.on_wire.front().is_some_and(|&t| t <= arrived) {
            self.on_wire.pop_front();
        }
        if self.hold.rate_bps == 0 {
            return Some(arrived + self.hold.delay_ns);
        }
        if self.on_wire.len() >= self.hold.limit {
            return None;
        }
        let tx_ns = (bytes as u128 * 8 * 1_000_000_000 / self.hold.rate_bps as u128) as u64;
        self.wire_free = self.wire_free.max(arrived) + tx_ns;
        self.on_wire.push_back(self.wire_free);
        Some(self.wire_free + self.hold.delay_ns)
    }
}

/// One direction's held frames (see [`Hold`]).
struct Held {
    schedule: Schedule,
    /// Frames and their due times, in due order (a FIFO: due times never decrease).
    frames: VecDeque<(u64, Vec<u8>)>,
    pool: Vec<Vec<u8>>,
    out: Vec<Vec<u8>>,
    late: Lateness,
    /// Frames the FIFO was full for.
    dropped: u64,
}

/// One direction's counters.
#[derive(Debug, Default, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Counters {
    /// Frames handed to the other end, and their bytes (without virtio-net headers).
    pub frames: u64,
    pub bytes: u64,
    /// Frames the other end's device did not take (sendmmsg stopped short or failed).
    pub send_dropped: u64,
    /// Frames the kernel dropped before we read them (socket buffer or ring full).
    pub kernel_drops: u64,
    /// Ring slots refused: cut (larger than a slot) or corrupt.
    pub refused: u64,
    /// Batches read (a send call each).
    pub batches: u64,
}

struct Way {
    rx: Rx,
    batch: usize,
    tx: PacketSocket,
    vnet: usize,
    c: Counters,
    held: Option<Held>,
}

impl Way {
    /// Reads one batch into the held frames (copied: the ring slot goes back at once),
    /// each due when the schedule says from the kernel's stamp of its arrival; true
    /// when the batch was full (more wait).
    fn hold(&mut self) -> io::Result<bool> {
        let n = self.rx.recv(self.batch)?;
        let Some(h) = self.held.as_mut() else {
            return Ok(false);
        };
        if n == 0 {
            return Ok(false);
        }
        let (now, real_now) = (monotonic_ns(), wall_ns());
        for i in 0..n {
            let Some(f) = self.rx.frame(i) else { continue };
            let arrived = f.arrived(now, real_now);
            let bytes = f.data.len() - self.vnet.min(f.data.len());
            let Some(due) = h.schedule.due(arrived, bytes) else {
                h.dropped += 1;
                continue;
            };
            // Never before the frame ahead (a stamp may be older than the last one's).
            let due = h.frames.back().map_or(due, |&(last, _)| due.max(last));
            let mut buf = h.pool.pop().unwrap_or_default();
            buf.clear();
            buf.extend_from_slice(f.data);
            h.frames.push_back((due, buf));
        }
        self.rx.done();
        Ok(n == self.batch)
    }

    /// Sends every held frame due by now (their lateness taken as they go to the
    /// kernel, as a daemon worker takes it); returns the next due time.
    fn release(&mut self) -> Option<u64> {
        let h = self.held.as_mut()?;
        let at = monotonic_ns();
        while h.frames.front().is_some_and(|&(due, _)| due <= at) && h.out.len() < self.batch {
            let (due, buf) = h.frames.pop_front().expect("a front frame");
            h.late.record(at - due);
            h.out.push(buf);
        }
        if !h.out.is_empty() {
            let sent = self
                .tx
                .send_batch(h.out.iter().map(|b| b.as_slice()))
                .unwrap_or(0) as u64;
            let frames = h.out.len() as u64;
            let bytes: u64 = h
                .out
                .iter()
                .map(|b| (b.len() - self.vnet.min(b.len())) as u64)
                .sum();
            self.c.batches += 1;
            self.c.frames += sent;
            self.c.bytes += bytes * sent / frames;
            self.c.send_dropped += frames - sent;
            h.pool.append(&mut h.out);
        }
        h.frames.front().map(|&(due, _)| due)
    }

    /// Moves one batch; false when nothing had arrived.
    fn pump(&mut self) -> io::Result<bool> {
        let n = self.rx.recv(self.batch)?;
        if n == 0 {
            return Ok(false);
        }
        let (rx, vnet) = (&self.rx, self.vnet);
        let (mut frames, mut bytes) = (0u64, 0u64);
        let batch = (0..n).filter_map(|i| rx.frame(i)).map(|f| {
            frames += 1;
            bytes += (f.data.len() - vnet.min(f.data.len())) as u64;
            f.data
        });
        let sent = self.tx.send_batch(batch).unwrap_or(0) as u64;
        self.rx.done();
        self.c.batches += 1;
        self.c.frames += sent;
        self.c.bytes += if sent == frames {
            bytes
        } else {
            bytes * sent / frames.max(1)
        };
        self.c.send_dropped += frames - sent;
        Ok(true)
    }

    fn finish(mut self) -> (Counters, Option<(Lateness, u64)>) {
        let (dropped, refused) = self.rx.take_drops();
        self.c.kernel_drops += dropped;
        self.c.refused += refused;
        (self.c, self.held.map(|h| (h.late, h.dropped)))
    }
}

/// What to poll to wake when one of `ways` has frames.
fn poll_fds(ways: &[&mut Way]) -> Vec<libc::pollfd> {
    ways.iter().map(|w| pollfd_in(w.rx.raw_fd())).collect()
}

/// Serves held `ways` until `deadline` or a stop signal, as a daemon worker serves its
/// direction: a batch read, what is due sent, then (unless the batch was full) a timer
/// to a learnt margin before the next due time and the clock for the rest.
fn serve_held(mut ways: Vec<&mut Way>, deadline: u64) -> io::Result<()> {
    // Precise wake-ups, as the daemon's workers (the default slack is 50 µs).
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    let mut waiter = Waiter::new();
    let mut fds = poll_fds(&ways);
    let mut now = monotonic_ns();
    let mut due = u64::MAX;
    while !STOP.load(Ordering::Relaxed) && now < deadline {
        if now >= due {
            // Woken for a due time: what is due leaves before another batch is read.
            for w in ways.iter_mut() {
                w.release();
            }
        }
        let mut more = false;
        let mut wake = u64::MAX;
        for w in ways.iter_mut() {
            more |= w.hold()?;
            if let Some(due) = w.release() {
                wake = wake.min(due);
            }
        }
        now = monotonic_ns();
        due = wake;
        let wake = wake.min(now + MAX_SLEEP_NS);
        if more {
            continue;
        }
        waiter.wait_until(&mut fds, now, wake);
        now = monotonic_ns();
    }
    Ok(())
}

/// Sleeps until one of the ways has frames, or IDLE_POLL_MS.
fn idle(ways: &[&mut Way]) {
    poll_ns(&mut poll_fds(ways), IDLE_POLL_MS * 1_000_000);
}

/// Serves `ways` until `deadline` (monotonic ns) or a stop signal; spins `spin_ns`
/// after the last frame before it sleeps.
fn serve(mut ways: Vec<&mut Way>, deadline: u64, spin_ns: u64) -> io::Result<()> {
    if ways.iter().any(|w| w.held.is_some()) {
        return serve_held(ways, deadline);
    }
    let mut last = 0;
    let mut now = monotonic_ns();
    while !STOP.load(Ordering::Relaxed) && now < deadline {
        let mut moved = false;
        for w in ways.iter_mut() {
            moved |= w.pump()?;
        }
        now = monotonic_ns();
        if moved {
            last = now;
        } else if now >= last + spin_ns {
            idle(&ways);
            now = monotonic_ns();
        } else {
            std::hint::spin_loop();
        }
    }
    Ok(())
}

impl Forward {
    /// Refuses what cannot run, in words a user can act on.
    pub fn check(&self) -> Result<(), String> {
        if self.a == self.b {
            return Err(format!(
                "--a and --b are both '{}': forward between two interfaces",
                self.a
            ));
        }
        if !(1..=2).contains(&self.threads) {
            return Err(format!(
                "--threads {}: 1 (both directions) or 2 (one each)",
                self.threads
            ));
        }
        if !(self.seconds > 0.0 && self.seconds <= MAX_SECONDS) {
            return Err(format!(
                "--seconds {}: more than 0, at most {MAX_SECONDS}",
                self.seconds
            ));
        }
        if !(1..=MAX_BATCH).contains(&self.batch) {
            return Err(format!("--batch {}: 1 to {MAX_BATCH}", self.batch));
        }
        if self.spin_ns > 10_000_000 {
            return Err(format!("--spin-us {}: at most 10000", self.spin_ns / 1000));
        }
        if !(1 << 20..=1 << 30).contains(&self.ring_bytes) {
            return Err(format!("ring of {} bytes: 1 MiB to 1 GiB", self.ring_bytes));
        }
        if let Some(h) = self.hold {
            if h.delay_ns > 10_000_000_000 {
                return Err(format!(
                    "--delay-us {}: at most 10000000 (10 s)",
                    h.delay_ns / 1000
                ));
            }
            if h.rate_bps > 0 && h.rate_bps < 1000 {
                return Err(format!("--rate-mbit {}: at least 0.001", h.rate_bps as f64 / 1e6));
            }
            if !(1..=1_000_000).contains(&h.limit) {
                return Err(format!("--limit {}: 1 to 1000000 frames", h.limit));
            }
        }
        Ok(())
    }

    /// Opens both ends, prints `ready` through `ready`, forwards until the time is up or
    /// a signal; returns the counters.
    pub fn run(&self, ready: impl FnOnce(&Value)) -> io::Result<Value> {
        self.check()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let vnet = !self.offloads_off;
        if self.offloads_off {
            afpacket::offloads_off(&self.a)?;
            afpacket::offloads_off(&self.b)?;
        }
        let open = |from: &str, to: &str| -> io::Result<Way> {
            Ok(Way {
                rx: Rx::open(from, self.io, vnet, self.batch, self.ring_bytes)?,
                batch: self.batch,
                tx: PacketSocket::sender_with(to, vnet, self.bypass)?,
                vnet: if vnet { VNET_HDR_LEN } else { 0 },
                c: Counters::default(),
                held: self.hold.map(|h| Held {
                    schedule: Schedule::new(h),
                    frames: VecDeque::new(),
                    pool: Vec::new(),
                    out: Vec::with_capacity(self.batch),
                    late: Lateness::new(LATE_BUDGET_NS),
                    dropped: 0,
                }),
            })
        };
        let (mut ab, mut ba) = (open(&self.a, &self.b)?, open(&self.b, &self.a)?);
        ready(&json!({ "event": "ready", "pid": std::process::id() }));
        let start = monotonic_ns();
        let deadline = start + (self.seconds * 1e9) as u64;
        if self.threads == 1 {
            serve(vec![&mut ab, &mut ba], deadline, self.spin_ns)?;
        } else {
            std::thread::scope(|s| -> io::Result<()> {
                let h = s.spawn(|| serve(vec![&mut ba], deadline, self.spin_ns));
                let mine = serve(vec![&mut ab], deadline, self.spin_ns);
                let theirs = h
                    .join()
                    .map_err(|_| io::Error::other("a forwarding thread panicked"))?;
                mine.and(theirs)
            })?;
        }
        let secs = Duration::from_nanos(monotonic_ns() - start).as_secs_f64();
        let ((ab, ab_late), (ba, ba_late)) = (ab.finish(), ba.finish());
        let mut v = json!({ "forward": {
            "io": self.io.name(), "threads": self.threads, "offloads_off": self.offloads_off,
            "seconds": (secs * 1e6).round() / 1e6,
            "a_to_b": ab, "b_to_a": ba,
        } });
        if let (Some(h), Some((abl, abd)), Some((bal, bad))) = (self.hold, ab_late, ba_late) {
            let mut all = Lateness::new(LATE_BUDGET_NS);
            all.merge(&abl);
            all.merge(&bal);
            let summary: LatenessSummary = all.summary();
            v["forward"]["hold"] = json!({
                "delay_ns": h.delay_ns, "rate_bps": h.rate_bps, "limit": h.limit,
                "lateness": summary,
                "a_to_b": { "lateness": abl.summary(), "fifo_dropped": abd },
                "b_to_a": { "lateness": bal.summary(), "fifo_dropped": bad },
            });
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fwd() -> Forward {
        Forward {
            a: "x1".into(),
            b: "x2".into(),
            io: IoKind::Ring,
            threads: 1,
            seconds: 5.0,
            offloads_off: true,
            ring_bytes: 8 << 20,
            batch: 64,
            bypass: false,
            spin_ns: 0,
            hold: None,
        }
    }

    #[test]
    fn bad_requests_are_refused_with_the_flag_named() {
        assert_eq!(fwd().check(), Ok(()));
        let same = Forward {
            b: "x1".into(),
            ..fwd()
        };
        assert!(same.check().unwrap_err().contains("--a and --b"));
        let threads = Forward { threads: 3, ..fwd() };
        assert!(threads.check().unwrap_err().contains("--threads 3"));
        for s in [0.0, -1.0, f64::NAN, 4000.0] {
            let secs = Forward { seconds: s, ..fwd() };
            assert!(secs.check().unwrap_err().contains("--seconds"), "{s}");
        }
        let ring = Forward {
            ring_bytes: 4096,
            ..fwd()
        };
        assert!(ring.check().unwrap_err().contains("ring"));
    }

    #[test]
    fn a_held_frame_is_due_after_the_wire_and_the_delay() {
        let mut s = Schedule::new(Hold {
            delay_ns: 5_000_000,
            rate_bps: 0,
            limit: 3,
        });
        assert_eq!(s.due(100, 1514), Some(5_000_100));
        assert_eq!(s.due(100, 1514), Some(5_000_100), "no wire, no FIFO: never full");
        // 1 Gbit/s: a 1514-byte frame takes 12,112 ns; a burst leaves one after another.
        let mut s = Schedule::new(Hold {
            delay_ns: 5_000_000,
            rate_bps: 1_000_000_000,
            limit: 3,
        });
        assert_eq!(s.due(0, 1514), Some(12_112 + 5_000_000));
        assert_eq!(s.due(0, 1514), Some(2 * 12_112 + 5_000_000));
        assert_eq!(s.due(0, 64), Some(2 * 12_112 + 512 + 5_000_000));
        assert_eq!(s.due(0, 1514), None, "three on the wire: the fourth is dropped");
        // Once the first has left the wire there is room; the wire is still busy.
        assert_eq!(s.due(12_112, 1514), Some(3 * 12_112 + 512 + 5_000_000));
        // An idle wire starts at the arrival.
        assert_eq!(s.due(1_000_000, 1514), Some(1_012_112 + 5_000_000));
    }

    #[test]
    fn bad_holds_are_refused_with_the_flag_named() {
        let hold = |delay_ns, rate_bps, limit| Forward {
            hold: Some(Hold {
                delay_ns,
                rate_bps,
                limit,
            }),
            ..fwd()
        };
        assert_eq!(hold(5_000_000, 1_000_000_000, 1000).check(), Ok(()));
        assert!(hold(20_000_000_000, 0, 1000)
            .check()
            .unwrap_err()
            .contains("--delay-us"));
        assert!(hold(0, 10, 1000).check().unwrap_err().contains("--rate-mbit"));
        assert!(hold(0, 1_000_000, 0).check().unwrap_err().contains("--limit 0"));
    }
}
