//! Captures of links into pcapng files: what a link delivers, as it leaves the emulator,
//! and (unless turned off) what it drops, at the moment it drops it, with a comment
//! naming the cause and its parameters.
//!
//! A capture covers one direction of a link or both; each captured direction is one
//! interface of the file, named "LINK a->b" or "LINK b->a", its description the
//! direction's shaping. Frames carry `epb_flags` direction bits: outbound (0b10) for a
//! frame the link delivered, inbound (0b01) for one it received and dropped. Frames the
//! link duplicated or corrupted carry a comment too. With `drops: false`, dropped frames
//! are not written; the next frame written on the direction carries how many there were
//! in `epb_dropcount`.
//!
//! A BPF filter (a classic program, as `tcpdump -ddd` prints it) sees each whole frame
//! and its length; a frame it returns 0 for is counted, not written. Frames are then
//! cut to the snap length.
//!
//! Offload superframes (a link with offloads on reads each frame with a virtio-net
//! header) are written as the frames the wire would have carried, not as one frame of up
//! to 64 KiB: [`crate::gso`] cuts a TCP superframe as TSO would (sequence numbers,
//! lengths, IPv4 IDs, checksums, FIN/PSH on the last segment, CWR on the first) and a UDP
//! GSO one into its datagrams, and completes a partial checksum the kernel left to the
//! device; so no frame is larger than the MTU and every checksum is right. Each segment
//! is one frame of the file: the filter sees it and the snap length cuts it; a dropped
//! superframe is written as its segments, each with the drop's comment (with `drops:
//! false`, each segment counts in the next frame's `epb_dropcount`). A delivered
//! superframe's segments are stamped with the times they would have left at the link's
//! rate: the last at the superframe's own time (the emulator released it when its last
//! bit was due), each earlier one the serialization time of the bytes after it (each
//! segment with the link's per-frame overhead) sooner,
//! never before the direction's previous delivered frame; so a capture shows the wire's
//! spacing (1.2 µs per 1514 bytes at 10 Gbit/s), and tools that read rates or gaps from
//! timestamps see the link, not a burst. Without a fixed rate (unlimited, or a trace)
//! they all take the superframe's time; dropped segments all take the drop's time (the
//! superframe was dropped whole, on arrival). A superframe that cannot be cut (a
//! `gso_size` of 0, a header length or checksum start past the frame, headers that are
//! not what its `gso_type` says...) is written whole, with a comment saying why; the
//! status counts `superframes` (written as segments) and `unsegmented` (written whole;
//! a frame that is no superframe but whose partial checksum lies past its end is written
//! "as it came", counted there too).
//! A link with offloads off passes frames through untouched: cutting costs nothing there,
//! nor on any link while no capture covers it.
//!
//! Size bound: with `file_size`, a file is closed before a frame would take it past
//! `file_size` bytes and the next one started, `files` of them in a ring named `P`,
//! `P.1`, `P.2`, ... inserted before the extension (`cap.pcapng`, `cap.1.pcapng`, ...);
//! after the last, the first is overwritten. Each file is a whole pcapng (its own header
//! and interfaces). So a ring never holds more than `files` × `file_size` bytes. With
//! one file there is no ring: the capture stops writing at `file_size` (what it has is
//! the run's beginning, whole), and counts the frames it then leaves out (`over_size`).
//!
//! Frames are written to a buffer; full buffers go to the capture's own writer thread,
//! so a slow disk never holds up forwarding (if the writer falls 64 MiB behind, frames
//! are lost to the capture and counted). A write error (a full disk) ends the capture's
//! writing, not the link, and is reported in its status.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use netrig_core::link::direction::DropReason;
use netrig_core::link::explain;
use netrig_core::link::spec::DirectionSpec;
use netrig_core::wire::bpf::{Insn, Program};
use netrig_core::wire::pcapng::{
    self, Interface, PacketOptions, FLAG_INBOUND, FLAG_OUTBOUND, LINKTYPE_ETHERNET,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::gso::{self, Segments};

pub const DEFAULT_SNAPLEN: u32 = 262_144;
/// A buffer of blocks is handed to the writer thread when it holds this much.
const CHUNK_BYTES: usize = 1 << 20;
/// The writer thread's nice value (the workers run at 0, or real-time).
const WRITER_NICE: libc::c_int = 10;
/// Buffers the writer may fall behind by (64 MiB) before frames are lost.
pub const QUEUE_CHUNKS: usize = 64;
/// Room for one frame's block beyond its bytes: fixed fields, padding and options
/// (comments are short).
const BLOCK_ROOM: u64 = 1024;

fn default_dir() -> String {
    "both".into()
}

fn default_snaplen() -> u32 {
    DEFAULT_SNAPLEN
}

fn yes() -> bool {
    true
}

fn one() -> u32 {
    1
}

/// A capture as asked for, in the control request `capture_start` and the config's
/// `captures`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureRequest {
    pub link: String,
    /// "a_to_b", "b_to_a" or "both".
    #[serde(default = "default_dir")]
    pub dir: String,
    pub path: String,
    #[serde(default = "default_snaplen")]
    pub snaplen: u32,
    /// A classic BPF program: [code, jt, jf, k] per instruction; null: every frame.
    #[serde(default)]
    pub bpf: Option<Vec<[u32; 4]>>,
    /// Write the frames the link drops (with their cause).
    #[serde(default = "yes")]
    pub drops: bool,
    /// Bytes per file; null: one file, unbounded.
    #[serde(default)]
    pub file_size: Option<u64>,
    /// Files in the ring (with `file_size`).
    #[serde(default = "one")]
    pub files: u32,
}

/// A checked request.
#[derive(Debug, Clone)]
pub struct Options {
    pub dirs: [bool; 2],
    pub path: PathBuf,
    pub snaplen: u32,
    pub filter: Option<Program>,
    pub drops: bool,
    pub file_size: Option<u64>,
    pub files: u32,
}

impl CaptureRequest {
    /// Checks every field; the error names the field.
    pub fn check(&self) -> Result<Options, String> {
        let dirs = match self.dir.as_str() {
            "a_to_b" => [true, false],
            "b_to_a" => [false, true],
            "both" => [true, true],
            d => return Err(format!("dir: '{d}' is not a_to_b, b_to_a or both")),
        };
        if self.path.is_empty() {
            return Err("path: empty".into());
        }
        if self.snaplen == 0 {
            return Err("snaplen: must be at least 1 byte".into());
        }
        let filter = match &self.bpf {
            None => None,
            Some(insns) => {
                let mut prog = Vec::with_capacity(insns.len());
                for (pc, &[code, jt, jf, k]) in insns.iter().enumerate() {
                    let field = |name: &str, v: u32, max: u32| {
                        if v > max {
                            Err(format!("bpf: instruction {pc}: {name} {v} is above {max}"))
                        } else {
                            Ok(v)
                        }
                    };
                    prog.push(Insn::new(
                        field("code", code, u16::MAX as u32)? as u16,
                        field("jt", jt, u8::MAX as u32)? as u8,
                        field("jf", jf, u8::MAX as u32)? as u8,
                        k,
                    ));
                }
                Some(Program::new(prog).map_err(|e| format!("bpf: {e}"))?)
            }
        };
        if self.files == 0 {
            return Err("files: must be at least 1".into());
        }
        if let Some(size) = self.file_size {
            let least = header_room() + self.snaplen as u64 + BLOCK_ROOM;
            if size < least {
                return Err(format!(
                    "file_size: {size} bytes cannot hold one frame of snaplen {} \
                     (at least {least} bytes)",
                    self.snaplen
                ));
            }
        } else if self.files != 1 {
            return Err("files: a ring of files needs file_size".into());
        }
        Ok(Options {
            dirs,
            path: PathBuf::from(&self.path),
            snaplen: self.snaplen,
            filter,
            drops: self.drops,
            file_size: self.file_size,
            files: self.files,
        })
    }
}

/// The most a file's header (section and two interfaces, their names and descriptions
/// cut to 64 KiB) can take: a generous bound.
fn header_room() -> u64 {
    4096
}

/// The file of the ring with this index: `P` for 0, else `.N` inserted before the
/// extension (`cap.pcapng` → `cap.1.pcapng`; `cap` → `cap.1`).
pub fn ring_path(base: &Path, index: u32) -> PathBuf {
    if index == 0 {
        return base.to_path_buf();
    }
    let stem = base
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match base.extension() {
        Some(ext) => format!("{stem}.{index}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{index}"),
    };
    base.with_file_name(name)
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Frames written (delivered and dropped).
    pub frames: u64,
    /// Frames the filter did not keep.
    pub filtered: u64,
    /// Of `frames`, those the link dropped.
    pub drops: u64,
    /// Bytes written to files, headers included.
    pub bytes: u64,
    /// Times a full file was closed and the next begun.
    pub files_rotated: u64,
    /// Frames not kept because the file writer fell behind (and not in `frames`).
    pub lost: u64,
    /// Frames not kept because a one-file capture had reached its size (not in `frames`).
    pub over_size: u64,
    /// Offload superframes written as the frames the wire would have carried.
    pub superframes: u64,
    /// Superframes written whole, as they came (their comment says why).
    pub unsegmented: u64,
}

/// What a frame's comment says, per direction, from its spec.
#[derive(Debug, Clone)]
struct Comments {
    down: String,
    loss: String,
    overflow: String,
    aqm: String,
    trace_ended: String,
    duplicated: String,
    corrupted: String,
}

impl Comments {
    fn new(spec: &DirectionSpec) -> Comments {
        let d = |r| explain::drop_comment(r, spec);
        Comments {
            down: d(DropReason::Down),
            loss: d(DropReason::Loss),
            overflow: d(DropReason::Overflow),
            aqm: d(DropReason::Aqm),
            trace_ended: d(DropReason::TraceEnded),
            duplicated: explain::duplicate_comment(spec),
            corrupted: explain::corrupt_comment(spec),
        }
    }

    fn dropped(&self, r: DropReason) -> &str {
        match r {
            DropReason::Down => &self.down,
            DropReason::Loss => &self.loss,
            DropReason::Overflow => &self.overflow,
            DropReason::Aqm => &self.aqm,
            DropReason::TraceEnded => &self.trace_ended,
        }
    }
}

/// What the producer (a link's worker) asks of the capture's writer thread.
enum Job {
    /// Bytes to append to the current file: whole blocks.
    Data(Vec<u8>),
    /// Close the current file and start this one (truncated) with this header.
    Open { path: PathBuf, header: Vec<u8> },
}

/// The writer thread's failure, shared with the producer.
#[derive(Default)]
struct Failure {
    failed: AtomicBool,
    error: Mutex<Option<String>>,
}

impl Failure {
    fn set(&self, e: String) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
        self.failed.store(true, Ordering::Relaxed);
    }

    fn get(&self) -> Option<String> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The writer thread: writes what it is sent, in order; hands spent buffers back.
fn write_files(
    mut file: File,
    mut path: PathBuf,
    jobs: Receiver<Job>,
    spent: Sender<Vec<u8>>,
    failure: Arc<Failure>,
) {
    // Below the link workers: on a busy host, forwarding comes first and the writer
    // catches up in the slack its buffers give it.
    // SAFETY: gettid takes no arguments; setpriority on this thread's id changes only it.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, WRITER_NICE);
    }
    for job in jobs {
        if failure.failed.load(Ordering::Relaxed) {
            continue; // drain, so the producer never blocks on a dead writer
        }
        let result = match job {
            Job::Data(mut buf) => {
                let r = file.write_all(&buf);
                buf.clear();
                let _ = spent.send(buf);
                r
            }
            Job::Open { path: next, header } => {
                path = next;
                create(&path).and_then(|f| {
                    file = f;
                    file.write_all(&header)
                })
            }
        };
        if let Err(e) = result {
            failure.set(format!("{}: {e}", path.display()));
        }
    }
}

/// One capture: the producer's side. Frames become blocks in a buffer; full buffers
/// (and the start of each file of a ring) go to a writer thread, so that file I/O
/// (and a kernel throttling a writer of dirty pages) never holds up forwarding. If the
/// writer falls [`QUEUE_CHUNKS`] buffers behind, a full buffer is thrown away and its
/// frames counted as `lost`, as a kernel drops what a slow tcpdump does not read.
pub struct Capture {
    link: String,
    opts: Options,
    /// This section's interfaces (the captured directions, in order).
    interfaces: Vec<Interface>,
    if_id: [Option<u32>; 2],
    comments: [Comments; 2],
    userappl: String,
    buf: Vec<u8>,
    /// Frames and drops in `buf`.
    buf_frames: u64,
    buf_drops: u64,
    jobs: Option<SyncSender<Job>>,
    spent: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<()>>,
    failure: Arc<Failure>,
    /// Bytes of the current file, what is still in `buf` included.
    in_file: u64,
    index: u32,
    files_used: u32,
    counters: Counters,
    /// Drops not written (drops off) since the direction's last frame written.
    unwritten_drops: [u64; 2],
    /// Wall clock minus the monotonic clock, at the start (ns).
    wall_offset_ns: i128,
    /// Each direction's fixed rate (bit/s) and per-frame overhead (bytes), which space
    /// a superframe's segments.
    bps: [Option<u64>; 2],
    overhead: [u32; 2],
    /// The time of each direction's last delivered frame (ns, monotonic).
    last_delivered: [u64; 2],
    /// A superframe's segments, the buffer reused.
    segs: Segments,
}

const DIR_NAMES: [&str; 2] = ["a->b", "b->a"];

impl Capture {
    /// Opens the first file (an error here is the caller's) and starts the writer.
    /// `specs` are the link's two directions now; `mono_ns` and `wall_ns` the two
    /// clocks read together.
    pub fn start(
        link: &str,
        opts: Options,
        specs: [&DirectionSpec; 2],
        mono_ns: u64,
        wall_ns: u64,
    ) -> io::Result<Capture> {
        let mut interfaces = vec![];
        let mut if_id = [None, None];
        for d in 0..2 {
            if opts.dirs[d] {
                if_id[d] = Some(interfaces.len() as u32);
                interfaces.push(Interface {
                    name: format!("{link} {}", DIR_NAMES[d]),
                    description: Some(explain::describe(specs[d])),
                    snaplen: opts.snaplen,
                    linktype: LINKTYPE_ETHERNET,
                });
            }
        }
        let userappl = format!("netrig-link {}", env!("CARGO_PKG_VERSION"));
        let path = ring_path(&opts.path, 0);
        let mut file =
            create(&path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let header = file_header(&userappl, &interfaces);
        file.write_all(&header)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let (jobs, job_rx) = sync_channel(QUEUE_CHUNKS);
        let (spent_tx, spent) = channel();
        let failure = Arc::new(Failure::default());
        let f = failure.clone();
        let thread = std::thread::Builder::new()
            .name(format!("capture-{link}"))
            .spawn(move || write_files(file, path, job_rx, spent_tx, f))?;
        Ok(Capture {
            link: link.to_string(),
            interfaces,
            if_id,
            comments: [Comments::new(specs[0]), Comments::new(specs[1])],
            userappl,
            buf: Vec::with_capacity(CHUNK_BYTES + 2 * BLOCK_ROOM as usize),
            buf_frames: 0,
            buf_drops: 0,
            jobs: Some(jobs),
            spent,
            thread: Some(thread),
            failure,
            in_file: header.len() as u64,
            index: 0,
            files_used: 1,
            counters: Counters {
                bytes: header.len() as u64,
                ..Counters::default()
            },
            unwritten_drops: [0, 0],
            wall_offset_ns: wall_ns as i128 - mono_ns as i128,
            bps: [specs[0].rate_bps, specs[1].rate_bps],
            overhead: [specs[0].overhead_bytes, specs[1].overhead_bytes],
            last_delivered: [0, 0],
            segs: Segments::default(),
            opts,
        })
    }

    pub fn link(&self) -> &str {
        &self.link
    }

    pub fn path(&self) -> &Path {
        &self.opts.path
    }

    pub fn covers(&self, dir: usize) -> bool {
        self.opts.dirs[dir]
    }

    /// A live change: later comments, and the interfaces of later files, say the new
    /// shaping.
    pub fn set_spec(&mut self, dir: usize, spec: &DirectionSpec) {
        self.comments[dir] = Comments::new(spec);
        self.bps[dir] = spec.rate_bps;
        self.overhead[dir] = spec.overhead_bytes;
        if let Some(i) = self.if_id[dir] {
            self.interfaces[i as usize].description = Some(explain::describe(spec));
        }
    }

    /// Whether frames of this direction are written at all (covered, writer alive).
    fn writes(&self, dir: usize) -> bool {
        self.if_id[dir].is_some() && self.jobs.is_some() && !self.failure.failed.load(Ordering::Relaxed)
    }

    /// A frame the direction delivered (handed to the kernel at `mono_ns`); `vnet` is
    /// its virtio-net header (empty with offloads off).
    pub fn delivered(
        &mut self,
        dir: usize,
        mono_ns: u64,
        vnet: &[u8],
        frame: &[u8],
        duplicated: bool,
        corrupted: bool,
    ) {
        if !self.writes(dir) {
            return;
        }
        let comments = &self.comments[dir];
        let comment = match (duplicated, corrupted) {
            (true, _) => Some(comments.duplicated.clone()),
            (_, true) => Some(comments.corrupted.clone()),
            _ => None,
        };
        self.write_wire(dir, mono_ns, vnet, frame, comment.as_deref(), false);
    }

    /// A frame the direction dropped at `mono_ns`; `vnet` as in [`Capture::delivered`].
    pub fn dropped(&mut self, dir: usize, mono_ns: u64, vnet: &[u8], frame: &[u8], reason: DropReason) {
        if !self.opts.dirs[dir] {
            return;
        }
        if !self.opts.drops {
            self.unwritten_drops[dir] += gso::count(vnet, frame) as u64;
            return;
        }
        if !self.writes(dir) {
            return;
        }
        let comment = self.comments[dir].dropped(reason).to_string();
        self.write_wire(dir, mono_ns, vnet, frame, Some(&comment), true);
    }

    /// Writes what the wire would have carried for `frame`: itself, or the segments of a
    /// superframe (see the module's doc for their times), or the superframe whole with
    /// the reason it could not be cut.
    fn write_wire(
        &mut self,
        dir: usize,
        mono_ns: u64,
        vnet: &[u8],
        frame: &[u8],
        comment: Option<&str>,
        drop: bool,
    ) {
        let flags = if drop { FLAG_INBOUND } else { FLAG_OUTBOUND };
        if vnet.is_empty() {
            self.write(dir, mono_ns, frame, comment, flags, drop);
            if !drop {
                self.last_delivered[dir] = mono_ns;
            }
            return;
        }
        let mut segs = std::mem::take(&mut self.segs);
        match gso::segment(vnet, frame, &mut segs) {
            Ok(false) => self.write(dir, mono_ns, frame, comment, flags, drop),
            Ok(true) => {
                if segs.len() > 1 {
                    self.counters.superframes += 1;
                }
                let bps = if drop { None } else { self.bps[dir] };
                // Bytes on the wire of the segments after the one being written, each
                // with the link's per-frame overhead (as the rate stage charges them).
                let overhead = self.overhead[dir] as u64;
                let mut after: u64 = segs.iter().map(|s| s.len() as u64 + overhead).sum();
                for k in 0..segs.len() {
                    let seg = segs.get(k);
                    after -= seg.len() as u64 + overhead;
                    let ts = match bps {
                        Some(bps) if bps > 0 => {
                            let sooner = (after as u128 * 8_000_000_000).div_ceil(bps as u128);
                            mono_ns
                                .saturating_sub(u64::try_from(sooner).unwrap_or(u64::MAX))
                                .max(self.last_delivered[dir].min(mono_ns))
                        }
                        _ => mono_ns,
                    };
                    self.write(dir, ts, seg, comment, flags, drop);
                }
            }
            Err(why) => {
                self.counters.unsegmented += 1;
                // A frame that is no superframe may still carry a checksum it cannot complete.
                let what = if vnet.get(1).is_some_and(|&t| t != gso::GSO_NONE) {
                    "netrig-link wrote this superframe whole"
                } else {
                    "netrig-link wrote this frame as it came"
                };
                let why = match comment {
                    Some(c) => format!("{c}; {what}: {why}"),
                    None => format!("{what}: {why}"),
                };
                self.write(dir, mono_ns, frame, Some(&why), flags, drop);
            }
        }
        self.segs = segs;
        if !drop {
            self.last_delivered[dir] = mono_ns;
        }
    }

    fn write(
        &mut self,
        dir: usize,
        mono_ns: u64,
        frame: &[u8],
        comment: Option<&str>,
        flags: u32,
        drop: bool,
    ) {
        let Some(if_id) = self.if_id[dir] else { return };
        if self.jobs.is_none() || self.failure.failed.load(Ordering::Relaxed) {
            return;
        }
        if let Some(p) = &self.opts.filter {
            if !p.matches(frame, frame.len() as u32) {
                self.counters.filtered += 1;
                return;
            }
        }
        let dropcount = std::mem::take(&mut self.unwritten_drops[dir]);
        let opts = PacketOptions {
            comment,
            flags: Some(flags),
            dropcount: (dropcount > 0).then_some(dropcount),
        };
        let len = pcapng::enhanced_packet_len(frame.len(), self.opts.snaplen, &opts) as u64;
        if self.opts.file_size.is_some_and(|size| self.in_file + len > size) {
            if self.opts.files == 1 {
                self.counters.over_size += 1;
                self.unwritten_drops[dir] += dropcount;
                return;
            }
            self.rotate();
        }
        let ts = (mono_ns as i128 + self.wall_offset_ns).max(0) as u64;
        pcapng::enhanced_packet(&mut self.buf, if_id, ts, frame, self.opts.snaplen, &opts);
        self.in_file += len;
        self.counters.bytes += len;
        self.counters.frames += 1;
        self.buf_frames += 1;
        if drop {
            self.counters.drops += 1;
            self.buf_drops += 1;
        }
        if self.buf.len() >= CHUNK_BYTES {
            self.send_buf();
        }
    }

    /// Closes the current file of the ring and starts the next.
    fn rotate(&mut self) {
        self.send_buf();
        self.index = (self.index + 1) % self.opts.files;
        self.files_used = self.files_used.max(self.index + 1);
        self.counters.files_rotated += 1;
        let header = file_header(&self.userappl, &self.interfaces);
        self.in_file = header.len() as u64;
        self.counters.bytes += header.len() as u64;
        let job = Job::Open {
            path: ring_path(&self.opts.path, self.index),
            header,
        };
        if let Some(jobs) = &self.jobs {
            // Rare and small: worth waiting for, or the ring's files would be mixed up.
            if jobs.send(job).is_err() {
                self.failure.set("the capture's writer thread ended".into());
            }
        }
    }

    /// Hands the buffer to the writer, or throws it away (counted) if the writer is
    /// too far behind.
    fn send_buf(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let fresh = self
            .spent
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(self.buf.capacity()));
        let full = std::mem::replace(&mut self.buf, fresh);
        let Some(jobs) = &self.jobs else { return };
        let (frames, drops) = (
            std::mem::take(&mut self.buf_frames),
            std::mem::take(&mut self.buf_drops),
        );
        match jobs.try_send(Job::Data(full)) {
            Ok(()) => {}
            Err(TrySendError::Full(Job::Data(lost))) => {
                self.counters.lost += frames;
                self.counters.frames -= frames;
                self.counters.drops -= drops;
                self.counters.bytes -= lost.len() as u64;
                self.in_file -= lost.len() as u64;
            }
            Err(_) => self.failure.set("the capture's writer thread ended".into()),
        }
    }

    /// Hands what is buffered to the writer (the daemon calls this a few times a second,
    /// so that a file keeps up with a slow link).
    pub fn flush(&mut self) {
        self.send_buf();
    }

    /// The files written, oldest first (the one being written last).
    pub fn files(&self) -> Vec<PathBuf> {
        (1..=self.files_used)
            .map(|k| ring_path(&self.opts.path, (self.index + k) % self.files_used))
            .collect()
    }

    pub fn counters(&self) -> Counters {
        self.counters
    }

    pub fn status(&self) -> Value {
        json!({
            "link": self.link,
            "dir": match self.opts.dirs { [true, true] => "both", [true, false] => "a_to_b", _ => "b_to_a" },
            "path": self.opts.path,
            "files": self.files(),
            "interfaces": self.interfaces.iter().map(|i| &i.name).collect::<Vec<_>>(),
            "snaplen": self.opts.snaplen,
            "filtered": self.opts.filter.is_some(),
            "drops": self.opts.drops,
            "file_size": self.opts.file_size,
            "ring_files": self.opts.files,
            "counters": self.counters,
            "error": self.failure.get(),
        })
    }

    /// Writes what is buffered, waits for the writer to finish and close the file; the
    /// final status.
    pub fn finish(mut self) -> Value {
        if let Some(jobs) = self.jobs.take() {
            if !self.buf.is_empty() {
                let _ = jobs.send(Job::Data(std::mem::take(&mut self.buf)));
            }
        }
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                self.failure.set("the capture's writer thread panicked".into());
            }
        }
        self.status()
    }
}

/// Creates (or truncates) a capture file; a symbolic link at its name is refused, not
/// written through (the daemon runs as root; a ring rewrites its files).
fn create(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

fn file_header(userappl: &str, interfaces: &[Interface]) -> Vec<u8> {
    let mut h = vec![];
    pcapng::section_header(&mut h, userappl);
    for i in interfaces {
        pcapng::interface_description(&mut h, i);
    }
    h
}

impl Drop for Capture {
    fn drop(&mut self) {
        // The writer ends when its channel closes; what is buffered is written first.
        if let Some(jobs) = self.jobs.take() {
            if !self.buf.is_empty() {
                let _ = jobs.send(Job::Data(std::mem::take(&mut self.buf)));
            }
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests;
