//! The bare forwarder (`netrig-link forward`): frames from each end out of the other,
//! as they come, with nothing else (no link model, no timestamps, no stats beyond
//! counters). It reads and sends through the daemon's own I/O (`rx`, `afpacket`), so
//! what it moves on given veth ends is the floor of what the daemon can move there:
//! benches print the daemon's figure beside it.
//!
//! Owns the forwarding loops (one thread for both directions, or one per direction) and
//! their counters. Does not own the I/O itself or the emulation.

use std::io;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use crate::afpacket::{self, PacketSocket, VNET_HDR_LEN};
use crate::daemon::{monotonic_ns, STOP};
use crate::rx::{IoKind, Rx};

/// The most frames read (and sent) at once.
pub const MAX_BATCH: usize = 1024;
/// The longest a forwarder may run, and the longest it sleeps between looks at the
/// clock and at its stop flag.
pub const MAX_SECONDS: f64 = 3600.0;
const IDLE_POLL_MS: i32 = 20;

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
}

impl Way {
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

    fn finish(mut self) -> Counters {
        let (dropped, refused) = self.rx.take_drops();
        self.c.kernel_drops += dropped;
        self.c.refused += refused;
        self.c
    }
}

/// Sleeps until one of the ways has frames, or IDLE_POLL_MS.
fn idle(ways: &[&mut Way]) {
    let mut fds: Vec<libc::pollfd> = ways
        .iter()
        .map(|w| libc::pollfd {
            fd: w.rx.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: fds is valid for its length.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, IDLE_POLL_MS) };
}

/// Serves `ways` until `deadline` (monotonic ns) or a stop signal; spins `spin_ns`
/// after the last frame before it sleeps.
fn serve(mut ways: Vec<&mut Way>, deadline: u64, spin_ns: u64) -> io::Result<()> {
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
        Ok(json!({ "forward": {
            "io": self.io.name(), "threads": self.threads, "offloads_off": self.offloads_off,
            "seconds": (secs * 1e6).round() / 1e6,
            "a_to_b": ab.finish(), "b_to_a": ba.finish(),
        } }))
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
}
