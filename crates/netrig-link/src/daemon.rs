//! The event loop: frames in from every link end, through their direction's stages,
//! out of the other end at their due time; stats sampled at a fixed rate; control
//! requests served between packets. One thread serves every link.
//!
//! Timing: a packet's due time comes from the model (virtual time, exact); the loop
//! sleeps until ~60 µs before the next due time (ppoll, which also wakes for arriving
//! frames) and spins the rest, then releases everything due. Every packet's lateness
//! is recorded; lateness beyond the budget is counted as overload.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use netrig_core::link::direction::{Counters, Direction};
use netrig_core::link::packet::{Ecn, Packet};
use netrig_core::link::spec::DirectionSpec;
use netrig_core::wire::ethernet;
use netrig_core::wire::pcap::PcapWriter;
use serde_json::{json, Value};

use crate::afpacket::{self, PacketSocket};
use crate::config::{dir_index, Config};
use crate::control::{Control, Request};
use crate::stats::Lateness;

pub const DIRS: [&str; 2] = ["a_to_b", "b_to_a"];
const BATCH: usize = 64;
/// Wake this early before a due time, then spin; adapted to the wake-ups we observe.
const MIN_MARGIN_NS: u64 = 30_000;
const MAX_MARGIN_NS: u64 = 500_000;
const LATE_BUDGET_NS: u64 = 1_000_000;

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
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is valid for writes.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub struct Link {
    pub name: String,
    pub ends: [PacketSocket; 2],
    pub dirs: [Direction; 2],
    pub specs: [DirectionSpec; 2],
    pub pcap: [Option<PcapWriter<BufWriter<File>>>; 2],
    last: [Counters; 2],
    pub up: bool,
}

pub struct Daemon {
    pub links: Vec<Link>,
    pub lateness: Lateness,
    window_lateness: Lateness,
    stats_out: Option<BufWriter<File>>,
    stats_interval_ns: u64,
    pub control: Option<Control>,
    start_ns: u64,
    pub events: bool,
    subscribers_lines: Vec<String>,
    seed: u64,
    /// Frames carry a virtio-net header (offloads left on).
    vnet: usize,
    /// How early to wake before a due time (the recent worst oversleep, plus slack).
    margin_ns: u64,
    oversleep_ns: f64,
    realtime: bool,
    /// Frame buffers to reuse (no allocation per packet in steady state).
    pool: Vec<Vec<u8>>,
}

fn read_trace(spec: &mut DirectionSpec) -> io::Result<()> {
    if let Some(t) = spec.trace.as_mut() {
        if t.text.is_none() {
            let path = t.path.clone().unwrap_or_default();
            t.text = Some(
                std::fs::read_to_string(&path).map_err(|e| io::Error::new(e.kind(), format!("trace {path}: {e}")))?,
            );
        }
    }
    Ok(())
}

impl Daemon {
    pub fn new(cfg: &Config) -> io::Result<Daemon> {
        let start_ns = monotonic_ns();
        let mut links = vec![];
        for (i, l) in cfg.links.iter().enumerate() {
            let mut specs = [l.spec(0), l.spec(1)];
            let mut dirs = vec![];
            for (d, spec) in specs.iter_mut().enumerate() {
                read_trace(spec)?;
                let seed = cfg.seed.wrapping_mul(1_000_003).wrapping_add((i * 2 + d) as u64 + 1);
                let mut dir = spec
                    .build(seed, start_ns)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{}.{}: {e}", l.name, DIRS[d])))?;
                dir.record_events = cfg.events;
                dirs.push(dir);
            }
            if cfg.offloads_off {
                afpacket::offloads_off(&l.a)?;
                afpacket::offloads_off(&l.b)?;
            }
            let vnet = !cfg.offloads_off;
            let ends = [PacketSocket::open(&l.a, BATCH, vnet)?, PacketSocket::open(&l.b, BATCH, vnet)?];
            let [d0, d1]: [Direction; 2] = dirs.try_into().map_err(|_| io::Error::other("two directions"))?;
            links.push(Link {
                name: l.name.clone(),
                ends,
                dirs: [d0, d1],
                specs,
                pcap: [None, None],
                last: [Counters::default(); 2],
                up: true,
            });
        }
        let mut daemon = Daemon {
            links,
            lateness: Lateness::new(LATE_BUDGET_NS),
            window_lateness: Lateness::new(LATE_BUDGET_NS),
            stats_out: match &cfg.stats_path {
                Some(p) => Some(BufWriter::new(File::create(p).map_err(|e| io::Error::new(e.kind(), format!("{p}: {e}")))?)),
                None => None,
            },
            stats_interval_ns: (cfg.stats_interval_ms * 1e6) as u64,
            control: match &cfg.control_path {
                Some(p) => Some(Control::bind(p)?),
                None => None,
            },
            start_ns,
            events: cfg.events,
            subscribers_lines: vec![],
            seed: cfg.seed,
            vnet: if cfg.offloads_off { 0 } else { afpacket::VNET_HDR_LEN },
            margin_ns: 60_000,
            oversleep_ns: 0.0,
            realtime: cfg.realtime,
            pool: vec![],
        };
        for p in &cfg.pcap {
            daemon.start_pcap(&p.link, dir_index(&p.dir).unwrap_or(0), Some(&p.path))?;
        }
        Ok(daemon)
    }

    fn link_index(&self, name: &str) -> Option<usize> {
        self.links.iter().position(|l| l.name == name)
    }

    pub fn start_pcap(&mut self, link: &str, dir: usize, path: Option<&str>) -> io::Result<()> {
        let i = self.link_index(link).ok_or_else(|| io::Error::other(format!("no link '{link}'")))?;
        let slot = &mut self.links[i].pcap[dir];
        if let Some(mut old) = slot.take() {
            old.flush()?;
        }
        if let Some(p) = path {
            let f = File::create(p).map_err(|e| io::Error::new(e.kind(), format!("{p}: {e}")))?;
            *slot = Some(PcapWriter::new(BufWriter::new(f), 65_535)?);
        }
        Ok(())
    }

    fn t(&self, now: u64) -> f64 {
        (now - self.start_ns) as f64 / 1e9
    }

    /// Runs until a signal or a shutdown request; returns the totals.
    pub fn run(&mut self) -> io::Result<Value> {
        // Precise wake-ups: the default timer slack (50 µs) would be our lateness.
        // SAFETY: PR_SET_TIMERSLACK takes a plain integer.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
        if self.realtime {
            // Ahead of the traffic's own processes on a busy machine; the loop sleeps
            // whenever nothing is due, so it cannot hog a core.
            let param = libc::sched_param { sched_priority: 20 };
            // SAFETY: param is valid; pid 0 is this thread.
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
                self.realtime = false;
            }
        }
        let mut next_stats = self.start_ns + self.stats_interval_ns;
        let mut out: Vec<(u64, Packet)> = Vec::with_capacity(BATCH);
        let mut last_sample = self.start_ns;
        let mut next_control = self.start_ns;
        while !STOP.load(Ordering::Relaxed) {
            self.receive_all()?;
            let now = monotonic_ns();
            self.release_due(now, &mut out);
            if now >= next_stats {
                self.sample(now, now - last_sample)?;
                last_sample = now;
                next_stats += self.stats_interval_ns;
                if next_stats <= now {
                    next_stats = now + self.stats_interval_ns;
                }
            }
            // Control requests are rare: look every 2 ms, not on every pass (an empty
            // accept() costs the kernel a socket allocation).
            if now >= next_control {
                next_control = now + 2_000_000;
                if self.serve_control(now)? {
                    break;
                }
            }
            let wake = self
                .links
                .iter()
                .flat_map(|l| l.dirs.iter().filter_map(|d| d.next_wakeup()))
                .fold(next_stats, u64::min);
            let now = monotonic_ns();
            if wake > now + self.margin_ns {
                let target = wake - self.margin_ns;
                self.wait(Duration::from_nanos(target - now));
                let woke = monotonic_ns();
                if woke > target {
                    // Woken by the timer (not by a frame): learn how late timers fire,
                    // then wait out the rest on the clock alone (arrivals meanwhile keep
                    // their kernel timestamps).
                    let over = (woke - target) as f64;
                    self.oversleep_ns = (self.oversleep_ns * 0.995).max(over);
                    self.margin_ns = ((self.oversleep_ns * 1.2) as u64 + 20_000).clamp(MIN_MARGIN_NS, MAX_MARGIN_NS);
                    while monotonic_ns() < wake {
                        std::hint::spin_loop();
                    }
                }
            } else if wake > now {
                while monotonic_ns() < wake {
                    std::hint::spin_loop();
                }
            }
        }
        self.totals()
    }

    fn receive_all(&mut self) -> io::Result<()> {
        let vnet = self.vnet;
        let pool = &mut self.pool;
        for link in &mut self.links {
            for side in 0..2 {
                loop {
                    let n = link.ends[side].recv_batch()?;
                    if n == 0 {
                        break;
                    }
                    let now = monotonic_ns();
                    let real_now = wall_ns();
                    for i in 0..n {
                        // When the frame really arrived (the kernel's stamp), not when we
                        // got round to reading it; never before the direction's last event.
                        let arrived = link.ends[side]
                            .stamp_ns(i)
                            .map(|real| now.saturating_sub(real_now.saturating_sub(real)))
                            .unwrap_or(now)
                            .max(link.dirs[side].clock_ns());
                        let Some(data) = link.ends[side].frame(i) else { continue };
                        if data.len() < vnet {
                            continue;
                        }
                        let (hdr, frame) = data.split_at(vnet);
                        let info = ethernet::inspect(frame);
                        let mut buf = pool.pop().unwrap_or_default();
                        buf.clear();
                        buf.extend_from_slice(data);
                        let pkt = Packet {
                            len: afpacket::wire_len(hdr, frame.len()) as u32,
                            flow: info.flow,
                            ecn: info.ecn,
                            data: buf,
                            ..Default::default()
                        };
                        link.dirs[side].arrive(arrived, pkt);
                    }
                    if n < BATCH {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    fn release_due(&mut self, now: u64, out: &mut Vec<(u64, Packet)>) {
        let vnet = self.vnet;
        for link in &mut self.links {
            for d in 0..2 {
                out.clear();
                link.dirs[d].poll(now, out);
                if out.is_empty() {
                    continue;
                }
                // Lateness is taken as the frames are handed to the kernel (the send
                // itself may run the receiver's stack: veth delivers synchronously).
                let at = monotonic_ns();
                for (due, pkt) in out.iter_mut() {
                    if pkt.ecn == Ecn::Ce {
                        ethernet::set_ecn_ce(&mut pkt.data[vnet..]);
                    }
                    let late = at.saturating_sub(*due);
                    self.lateness.record(late);
                    self.window_lateness.record(late);
                    if let Some(w) = link.pcap[d].as_mut() {
                        let _ = w.write(wall_ns(), &pkt.data[vnet..]);
                    }
                }
                // A full device queue drops frames, as a wire would.
                let frames: Vec<&[u8]> = out.iter().map(|(_, p)| p.data.as_slice()).collect();
                let _ = link.ends[1 - d].send_batch(&frames);
                for (_, p) in out.drain(..) {
                    if self.pool.len() < 4096 {
                        self.pool.push(p.data);
                    }
                }
            }
        }
    }

    fn wait(&self, timeout: Duration) {
        let mut fds: Vec<libc::pollfd> = self
            .links
            .iter()
            .flat_map(|l| l.ends.iter().map(|e| libc::pollfd { fd: e.raw_fd(), events: libc::POLLIN, revents: 0 }))
            .collect();
        if let Some(c) = &self.control {
            fds.extend(c.poll_fds());
        }
        let ts = libc::timespec { tv_sec: timeout.as_secs() as i64, tv_nsec: timeout.subsec_nanos() as i64 };
        // SAFETY: fds and ts are valid for the call; a null sigmask keeps the current one.
        unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as u64, &ts, std::ptr::null()) };
    }

    fn direction_json(&self, l: &Link, d: usize, now: u64, span_ns: Option<u64>, sojourn: Option<(u64, u64, u64)>) -> Value {
        let dir = &l.dirs[d];
        let c = dir.counters;
        let base = if span_ns.is_some() { l.last[d] } else { Counters::default() };
        let delta = |a: u64, b: u64| a.saturating_sub(b);
        let mut v = json!({
            "t": (self.t(now) * 1e6).round() / 1e6,
            "link": l.name, "dir": DIRS[d], "up": l.up, "qdisc": dir.qdisc_name(),
            "queue_packets": dir.queue_packets(), "queue_bytes": dir.queue_bytes(), "in_flight": dir.in_flight(),
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
        });
        if let Some(span) = span_ns {
            let bytes = delta(c.delivered_bytes, base.delivered_bytes);
            v["rate_bps"] = json!(if span > 0 { bytes as f64 * 8e9 / span as f64 } else { 0.0 });
        }
        if let Some((n, mean, max)) = sojourn {
            v["dequeued"] = json!(n);
            v["sojourn_mean_us"] = json!(mean as f64 / 1e3);
            v["sojourn_max_us"] = json!(max as f64 / 1e3);
        }
        v
    }

    fn emit(&mut self, line: String) -> io::Result<()> {
        if let Some(w) = self.stats_out.as_mut() {
            w.write_all(line.as_bytes())?;
            w.write_all(b"\n")?;
        }
        self.subscribers_lines.push(line);
        Ok(())
    }

    fn sample(&mut self, now: u64, span: u64) -> io::Result<()> {
        let late = self.window_lateness.summary();
        self.window_lateness = Lateness::new(LATE_BUDGET_NS);
        let mut lines = vec![];
        for li in 0..self.links.len() {
            #[allow(clippy::needless_range_loop)]
            for d in 0..2 {
                let w = self.links[li].dirs[d].take_sojourn();
                let mut v = self.direction_json(&self.links[li], d, now, Some(span), Some((w.count, w.mean_ns(), w.max_ns)));
                v["late_p99_us"] = json!(late.p99_us);
                lines.push(v.to_string());
                self.links[li].last[d] = self.links[li].dirs[d].counters;
                if self.events {
                    for e in self.links[li].dirs[d].take_events() {
                        lines.push(json!({ "event": e, "link": self.links[li].name, "dir": DIRS[d] }).to_string());
                    }
                }
            }
        }
        for l in lines {
            self.emit(l)?;
        }
        if let Some(w) = self.stats_out.as_mut() {
            w.flush()?;
        }
        let pending = std::mem::take(&mut self.subscribers_lines);
        if let Some(c) = self.control.as_mut() {
            c.broadcast(&pending);
        }
        Ok(())
    }

    /// Whole-run figures per link direction, and lateness.
    pub fn totals(&mut self) -> io::Result<Value> {
        let now = monotonic_ns();
        let links: Vec<Value> = self
            .links
            .iter()
            .map(|l| {
                json!({ "link": l.name, "a_to_b": self.direction_json(l, 0, now, None, None),
                        "b_to_a": self.direction_json(l, 1, now, None, None) })
            })
            .collect();
        for l in &mut self.links {
            for p in l.pcap.iter_mut().flatten() {
                p.flush()?;
            }
        }
        let v = json!({ "totals": { "seconds": self.t(now), "links": links, "lateness": self.lateness.summary(),
            "seed": self.seed, "realtime": self.realtime, "wake_margin_us": self.margin_ns as f64 / 1e3 } });
        self.emit(v.to_string())?;
        if let Some(w) = self.stats_out.as_mut() {
            w.flush()?;
        }
        Ok(v)
    }

    /// Serves control requests; true when asked to shut down.
    fn serve_control(&mut self, now: u64) -> io::Result<bool> {
        let Some(mut control) = self.control.take() else { return Ok(false) };
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

    fn handle(&mut self, req: Request, now: u64, stop: &mut bool, control: &mut Control, client: usize) -> Value {
        let find = |name: &str| self.links.iter().position(|l| l.name == name);
        match req {
            Request::Stats => {
                let links: Vec<Value> = self
                    .links
                    .iter()
                    .map(|l| json!({ "link": l.name, "up": l.up,
                        "a_to_b": self.direction_json(l, 0, now, None, None),
                        "b_to_a": self.direction_json(l, 1, now, None, None),
                        "spec": { "a_to_b": l.specs[0], "b_to_a": l.specs[1] } }))
                    .collect();
                json!({ "ok": true, "links": links, "lateness": self.lateness.summary() })
            }
            Request::Subscribe => {
                control.subscribe(client);
                json!({ "ok": true, "subscribed": true })
            }
            Request::Set { link, dir, spec } => {
                let Some(i) = find(&link) else { return json!({ "ok": false, "error": format!("no link '{link}'") }) };
                let dirs: Vec<usize> = match dir.as_deref() {
                    None | Some("both") => vec![0, 1],
                    Some(d) => match dir_index(d) {
                        Some(x) => vec![x],
                        None => return json!({ "ok": false, "error": format!("dir: '{d}' is not a_to_b, b_to_a or both") }),
                    },
                };
                // Check every direction first, so a bad change changes nothing.
                let mut new_specs = vec![];
                for &d in &dirs {
                    let mut merged = serde_json::to_value(&self.links[i].specs[d]).unwrap_or(json!({}));
                    merge(&mut merged, &spec);
                    let mut s: DirectionSpec = match serde_json::from_value(merged) {
                        Ok(s) => s,
                        Err(e) => return json!({ "ok": false, "error": format!("spec: {e}") }),
                    };
                    if let Err(e) = read_trace(&mut s) {
                        return json!({ "ok": false, "error": e.to_string() });
                    }
                    if let Err(e) = s.build(0, now) {
                        return json!({ "ok": false, "error": format!("{}: {e}", DIRS[d]) });
                    }
                    new_specs.push((d, s));
                }
                let l = &mut self.links[i];
                for (d, s) in new_specs {
                    if let Err(e) = s.apply(&l.specs[d], &mut l.dirs[d], now) {
                        return json!({ "ok": false, "error": format!("{}: {e}", DIRS[d]) });
                    }
                    l.specs[d] = s;
                }
                json!({ "ok": true, "link": link, "spec": { "a_to_b": l.specs[0], "b_to_a": l.specs[1] } })
            }
            Request::Up { link, up } => match find(&link) {
                Some(i) => {
                    let l = &mut self.links[i];
                    l.up = up;
                    l.dirs.iter_mut().for_each(|d| d.set_up(up));
                    json!({ "ok": true, "link": link, "up": up })
                }
                None => json!({ "ok": false, "error": format!("no link '{link}'") }),
            },
            Request::Pcap { link, dir, path } => {
                let Some(d) = dir_index(&dir) else { return json!({ "ok": false, "error": format!("dir: '{dir}'") }) };
                match self.start_pcap(&link, d, path.as_deref()) {
                    Ok(()) => json!({ "ok": true }),
                    Err(e) => json!({ "ok": false, "error": e.to_string() }),
                }
            }
            Request::Shutdown => {
                *stop = true;
                json!({ "ok": true, "stopping": true })
            }
        }
    }
}

/// Overlays `patch` onto `base` (objects merge key by key; anything else replaces).
fn merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    b.remove(k);
                } else {
                    merge(b.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (b, p) => *b = p.clone(),
    }
}

fn wall_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is valid for writes.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_overlays_and_removes() {
        let mut base = json!({ "rate_bps": 1, "queue": { "discipline": "pie", "limit_packets": 5 }, "delay_ns": 3 });
        merge(&mut base, &json!({ "queue": { "limit_packets": 9 }, "delay_ns": null, "jitter_ns": 4 }));
        assert_eq!(base, json!({ "rate_bps": 1, "queue": { "discipline": "pie", "limit_packets": 9 }, "jitter_ns": 4 }));
    }
}
