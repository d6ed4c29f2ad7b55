//! Wireshark 4.0's TCP sequence analysis (`tcp_analyze_sequence_number` in
//! epan/dissectors/packet-tcp.c, and the parts of `dissect_tcp` around it), rule for rule,
//! so that the flags agree frame for frame with `tshark -Y tcp.analysis.*`.
//!
//! The rules below were read from Wireshark 4.0.17's source and checked against tshark
//! 4.0.17 on hand-built captures (tests/fixtures/pcap, `tcp_tests.rs`) and on 125
//! real-world captures (tests/corpus/MANIFEST.toml). Where this departs from a "correct"
//! TCP analysis, it does so on purpose, because Wireshark does:
//! - `nextseq == 0` means "unknown": a flow whose sequence really reaches 0 loses its
//!   lost-segment and out-of-order tests, and keep-alive compares with 0xFFFFFFFF.
//! - Time deltas are unsigned: a packet stamped before the one it is compared with gives
//!   a huge delta, and every "sooner than" test fails. Times are exact (i128 ns), as
//!   Wireshark's seconds-and-nanoseconds are: a stamp in the year 4139 (a fuzzed file)
//!   still gives tshark's ack_rtt.
//! - The out-of-order threshold is the iRTT when known, else 3 ms; a fast retransmission
//!   needs at least 2 duplicate ACKs and the other side's last packet within 20 ms.
//! - A spurious retransmission is tested before fast retransmission and out-of-order.
//! - The duplicate-ACK counter is unsigned: the -1 that an "ACKed unseen segment" leaves
//!   in it passes the fast retransmission's ">= 2 duplicate ACKs" test.
//! - "ACKed unseen segment" moves the other side's max-seq-to-be-acked up to its nextseq
//!   (and flags) only when it was below it; otherwise it flags only when that side has no
//!   duplicate ACK counted, and marks the counter -1 so the same gap is flagged once.
//! - ack_rtt is measured against the OLDEST unacked segment ending exactly at the ACK
//!   (after a retransmission: the original), and a cumulative ACK ending inside no stored
//!   segment gets none. At most 10000 unacked segments are kept per direction.
//! - The iRTT is set by the first packet with ACK and without SYN after a SYN, from either
//!   side, data or not; a SYN stamped at exactly t=0 sets no iRTT.
//! - A TCP header length below 20 (a bogus data offset) still opens the stream and is
//!   analysed, but nothing of it is shown, and its SYN/iRTT/window-scale bookkeeping is
//!   skipped (dissect_tcp returns at the header-length check).
//! - A header whose captured bytes end before its 20th byte, or inside an option that
//!   Wireshark reads (a snap length cutting the options), is analysed and its SYN/iRTT
//!   bookkeeping done, but nothing of it is shown: dissect_tcp throws reading it, after
//!   the analysis and before it prints it (decode::options walks the options its way).
//! - A same-ISN SYN is not a new stream (and 4.0.17 does not flag it as reused ports); it
//!   sets nextseq back to max-seq-to-be-acked (Wireshark issue 17616).
//!
//! Departures from Wireshark: IP fragments are skipped rather than reassembled; MPTCP's
//! tolerance of duplicate ACKs is not modelled; an application dissector that opens a
//! new conversation on a TCP connection's addresses (VNC's heuristic does) splits it
//! into two tcp.streams in Wireshark and not here.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use crate::decode::{Addr, TcpHeader, ACK, FIN, RST, SYN};

/// The analysis flags (packet-tcp.c's TCP_A_*).
pub mod flag {
    pub const RETRANSMISSION: u32 = 0x0001;
    pub const LOST_PACKET: u32 = 0x0002;
    pub const ACK_LOST_PACKET: u32 = 0x0004;
    pub const KEEP_ALIVE: u32 = 0x0008;
    pub const DUPLICATE_ACK: u32 = 0x0010;
    pub const ZERO_WINDOW: u32 = 0x0020;
    pub const ZERO_WINDOW_PROBE: u32 = 0x0040;
    pub const ZERO_WINDOW_PROBE_ACK: u32 = 0x0080;
    pub const KEEP_ALIVE_ACK: u32 = 0x0100;
    pub const OUT_OF_ORDER: u32 = 0x0200;
    pub const FAST_RETRANSMISSION: u32 = 0x0400;
    pub const WINDOW_UPDATE: u32 = 0x0800;
    pub const WINDOW_FULL: u32 = 0x1000;
    pub const REUSED_PORTS: u32 = 0x2000;
    pub const SPURIOUS_RETRANSMISSION: u32 = 0x4000;
}

/// The display filter fields (`tcp.analysis.NAME`) and the frames each matches. The
/// retransmission field matches fast and spurious retransmissions too, as tshark's does.
pub const FIELDS: [(&str, u32); 15] = [
    (
        "retransmission",
        flag::RETRANSMISSION | flag::FAST_RETRANSMISSION | flag::SPURIOUS_RETRANSMISSION,
    ),
    ("fast_retransmission", flag::FAST_RETRANSMISSION),
    ("spurious_retransmission", flag::SPURIOUS_RETRANSMISSION),
    ("out_of_order", flag::OUT_OF_ORDER),
    ("duplicate_ack", flag::DUPLICATE_ACK),
    ("zero_window", flag::ZERO_WINDOW),
    ("lost_segment", flag::LOST_PACKET),
    ("ack_lost_segment", flag::ACK_LOST_PACKET),
    ("keep_alive", flag::KEEP_ALIVE),
    ("keep_alive_ack", flag::KEEP_ALIVE_ACK),
    ("window_update", flag::WINDOW_UPDATE),
    ("window_full", flag::WINDOW_FULL),
    ("zero_window_probe", flag::ZERO_WINDOW_PROBE),
    ("zero_window_probe_ack", flag::ZERO_WINDOW_PROBE_ACK),
    ("reused_ports", flag::REUSED_PORTS),
];

/// The names of the fields a frame's flags match.
pub fn flag_names(flags: u32) -> Vec<&'static str> {
    FIELDS
        .iter()
        .filter(|(_, m)| flags & m != 0)
        .map(|(n, _)| *n)
        .collect()
}

const MAX_UNACKED: usize = 10_000;
const FAST_RTX_WINDOW_NS: u64 = 20_000_000;
const OOO_DEFAULT_NS: u64 = 3_000_000;

fn gt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}
fn lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}
fn le(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) <= 0
}
/// Wireshark's guint64 delta: a negative one wraps to a huge number. Times are exact
/// nanoseconds (i128: Wireshark keeps seconds and nanoseconds apart, so no stamp a file
/// can carry overflows), truncated to 64 bits as its `t` is.
fn delta(now: i128, then: i128) -> u64 {
    now.wrapping_sub(then) as u64
}

#[derive(Debug, Clone, Copy)]
struct Unacked {
    frame: u64,
    seq: u32,
    nextseq: u32,
    ts: i128,
}

/// One direction's unacked segments, oldest first. While they are in ascending,
/// non-overlapping order (the usual case) an ACK touches only a prefix of them.
#[derive(Debug, Default)]
struct Segments {
    q: VecDeque<Unacked>,
    sorted: bool,
}

const SPAN_LIMIT: u32 = 1 << 30;

impl Segments {
    fn push(&mut self, u: Unacked) {
        match (self.q.front(), self.q.back()) {
            (Some(f), Some(b)) => {
                if !(le(b.nextseq, u.seq) && u.nextseq.wrapping_sub(f.seq) < SPAN_LIMIT) {
                    self.sorted = false;
                }
            }
            _ => self.sorted = u.nextseq.wrapping_sub(u.seq) < SPAN_LIMIT,
        }
        self.q.push_back(u);
    }

    /// Wireshark's walk over the other side's unacked list for an ACK: entries ending at
    /// `ack` are acked (the oldest gives the RTT), entries it cuts are trimmed, entries
    /// below it are dropped silently. Returns the acked (frame, timestamp).
    fn ack(&mut self, ack: u32) -> Option<(u64, i128)> {
        let front = *self.q.front()?;
        let mut matched = None;
        let d = ack.wrapping_sub(front.seq) as i32;
        if self.sorted && d.unsigned_abs() < SPAN_LIMIT {
            while let Some(u) = self.q.front_mut() {
                if !gt(ack, u.seq) {
                    break;
                }
                if ack == u.nextseq {
                    matched.get_or_insert((u.frame, u.ts));
                } else if le(ack, u.nextseq) {
                    u.seq = ack;
                    break;
                }
                self.q.pop_front();
            }
            return matched;
        }
        self.q.retain_mut(|u| {
            if ack == u.nextseq {
                matched.get_or_insert((u.frame, u.ts));
                false
            } else if gt(ack, u.seq) && le(ack, u.nextseq) {
                u.seq = ack;
                true
            } else {
                gt(u.nextseq, ack)
            }
        });
        self.sorted = match (self.q.front(), self.q.back()) {
            (Some(f), Some(b)) => {
                b.nextseq.wrapping_sub(f.seq) < SPAN_LIMIT
                    && self
                        .q
                        .iter()
                        .zip(self.q.iter().skip(1))
                        .all(|(a, b)| le(a.nextseq, b.seq) && lt(a.seq, a.nextseq))
            }
            _ => true,
        };
        matched
    }
}

/// One direction's state (`tcp_flow_t` and its `tcp_analyze_seq_info`).
#[derive(Debug)]
struct Flow {
    base_seq: u32,
    base_seq_set: bool,
    window: u32,
    win_scale: i8,
    is_first_ack: bool,
    lastsegmentflags: u32,
    nextseq: u32,
    nextseqtime: i128,
    maxseqtobeacked: u32,
    lastack: u32,
    lastacktime: i128,
    dupacknum: i32,
    segments: Segments,
}

impl Flow {
    fn new() -> Flow {
        Flow {
            base_seq: 0,
            base_seq_set: false,
            window: u32::MAX,
            win_scale: -1,
            is_first_ack: false,
            lastsegmentflags: 0,
            nextseq: 0,
            nextseqtime: 0,
            maxseqtobeacked: 0,
            lastack: 0,
            lastacktime: 0,
            dupacknum: 0,
            segments: Segments {
                q: VecDeque::new(),
                sorted: true,
            },
        }
    }

    /// The shift applied to this side's window fields, or None while unknown.
    pub fn scale(&self) -> Option<u32> {
        match self.win_scale {
            s if s >= 0 => Some(s as u32),
            -2 => Some(0),
            _ => None,
        }
    }
}

/// A TCP conversation (`tcp.stream`): endpoint 0 sent its first packet.
#[derive(Debug)]
pub struct Stream {
    pub index: u32,
    pub ends: [(Addr, u16); 2],
    flows: [Flow; 2],
    ts_mru_syn: i128,
    ts_first_rtt: i128,
}

impl Stream {
    /// The iRTT in ns, once known.
    pub fn irtt_ns(&self) -> Option<i64> {
        (self.ts_first_rtt != 0).then_some(self.ts_first_rtt.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
    }
    /// Direction `dir`'s base sequence number (Wireshark's relative 0), if seen.
    pub fn base_seq(&self, dir: usize) -> Option<u32> {
        self.flows[dir].base_seq_set.then_some(self.flows[dir].base_seq)
    }
    /// The window shift of direction `dir` (0 for "no scaling"), None while unknown.
    pub fn window_shift(&self, dir: usize) -> Option<u32> {
        self.flows[dir].scale()
    }
}

/// What the analysis found in one frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameResult {
    pub stream: u32,
    /// 0: from `ends[0]`, 1: from `ends[1]`.
    pub dir: usize,
    pub flags: u32,
    /// `tcp.analysis.ack_rtt`, as tshark shows it (never zero).
    pub ack_rtt_ns: Option<i128>,
    pub acks_frame: u64,
    pub dupack_num: i32,
}

type Key = [u8; 36];

/// FNV-1a over the key: fast, and the key is not attacker-chosen in a way that matters
/// for an offline file.
#[derive(Default)]
pub struct Fnv(u64);
impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h = (h ^ *b as u64).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

fn key(h: &TcpHeader) -> Key {
    let a = (h.src, h.sport);
    let b = (h.dst, h.dport);
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let mut k = [0u8; 36];
    k[..16].copy_from_slice(&lo.0);
    k[16..18].copy_from_slice(&lo.1.to_be_bytes());
    k[18..34].copy_from_slice(&hi.0);
    k[34..].copy_from_slice(&hi.1.to_be_bytes());
    k
}

/// The analysis over a whole file, fed frame by frame in file order.
#[derive(Default)]
pub struct Analyzer {
    map: HashMap<Key, u32, BuildHasherDefault<Fnv>>,
    pub streams: Vec<Stream>,
    last: Option<(Key, u32)>,
}

impl Analyzer {
    pub fn new() -> Analyzer {
        Analyzer::default()
    }

    fn new_stream(&mut self, h: &TcpHeader, k: Key) -> u32 {
        let index = self.streams.len() as u32;
        self.streams.push(Stream {
            index,
            ends: [(h.src, h.sport), (h.dst, h.dport)],
            flows: [Flow::new(), Flow::new()],
            ts_mru_syn: 0,
            ts_first_rtt: 0,
        });
        self.map.insert(k, index);
        self.last = Some((k, index));
        index
    }

    /// Analyses one TCP frame (`frame` 1-based over the file, `now` in ns).
    pub fn packet(&mut self, frame: u64, now: i128, h: &TcpHeader) -> FrameResult {
        let k = key(h);
        let mut sid = match self.last {
            Some((lk, id)) if lk == k => id,
            _ => match self.map.get(&k) {
                Some(&id) => {
                    self.last = Some((k, id));
                    id
                }
                None => self.new_stream(h, k),
            },
        };
        let mut flags = 0;
        let dir_of = |s: &Stream| usize::from(s.ends[0] != (h.src, h.sport));
        let synack = h.flags & (SYN | ACK);
        // R0.4: a SYN with another ISN starts a new conversation on the same ports.
        {
            let s = &mut self.streams[sid as usize];
            let d = dir_of(s);
            let fwd = &mut s.flows[d];
            if synack == SYN && fwd.base_seq_set {
                if h.seq != fwd.base_seq {
                    sid = self.new_stream(h, k);
                    flags |= flag::REUSED_PORTS;
                } else {
                    // The same SYN again: a RST sent with SEQ equal to the ACK it got
                    // (RFC 793 3.4) may have moved nextseq on; Wireshark puts it back
                    // (its issue 17616), so the SYN is then a plain retransmission.
                    fwd.nextseq = fwd.maxseqtobeacked;
                }
            }
        }
        let s = &mut self.streams[sid as usize];
        let dir = dir_of(s);
        if synack == SYN | ACK && s.flows[dir].base_seq_set && h.seq != s.flows[dir].base_seq {
            s.flows[dir].base_seq = h.seq;
            flags |= flag::REUSED_PORTS;
        }
        let mut out = FrameResult {
            stream: sid,
            dir,
            flags,
            ..Default::default()
        };
        if let Some(seglen) = h.seglen() {
            analyze(s, dir, frame, now, h, seglen, &mut out);
        }
        if h.hlen < 20 {
            // A bogus header length: Wireshark has analysed the segment (its length
            // counting the header's bytes as payload) but gives up before it shows the
            // analysis or reads the flags' and options' bookkeeping below.
            return hidden(out);
        }
        // After the analysis, in dissect_tcp's order: SYN bookkeeping, the iRTT, the
        // first-ACK marker, then the options (window scale) and their check.
        if h.flags & SYN != 0 {
            if h.flags & ACK == 0 {
                s.ts_mru_syn = now;
            }
            s.flows[dir].is_first_ack = true;
        }
        if synack == ACK {
            if s.ts_mru_syn != 0 && s.ts_first_rtt == 0 {
                s.ts_first_rtt = now.wrapping_sub(s.ts_mru_syn);
            }
            s.flows[dir].is_first_ack = false;
        }
        if let Some(ws) = h.wscale {
            s.flows[dir].win_scale = ws as i8;
        }
        if !h.shown {
            // The captured bytes end inside the header: dissect_tcp throws before it
            // shows the analysis and before it checks the SYN's window scaling.
            return hidden(out);
        }
        if h.flags & SYN != 0 {
            let rev = 1 - dir;
            if s.flows[dir].win_scale == -1 {
                s.flows[dir].win_scale = -2;
                s.flows[rev].win_scale = -2;
            } else if h.flags & ACK != 0 && s.flows[rev].win_scale == -2 {
                s.flows[dir].win_scale = -2;
            }
        }
        out
    }
}

/// A frame whose analysis Wireshark computes but never shows.
fn hidden(out: FrameResult) -> FrameResult {
    FrameResult {
        flags: 0,
        ack_rtt_ns: None,
        acks_frame: 0,
        dupack_num: 0,
        ..out
    }
}

/// `tcp_analyze_sequence_number`: rules R1-R11 in the order the code runs them.
fn analyze(
    s: &mut Stream,
    dir: usize,
    frame: u64,
    now: i128,
    h: &TcpHeader,
    seglen: u32,
    out: &mut FrameResult,
) {
    let (seq, ack, th) = (h.seq, h.ack, h.flags);
    let window = h.win as u32;
    let irtt = s.ts_first_rtt;
    let [f0, f1] = &mut s.flows;
    let (fwd, rev) = if dir == 0 { (f0, f1) } else { (f1, f0) };
    let mut f = out.flags;
    let sfr = th & (SYN | FIN | RST) != 0;

    // R1: base sequence numbers (display only, kept for relative numbers).
    if !fwd.base_seq_set {
        fwd.base_seq = if th & SYN != 0 { seq } else { seq.wrapping_sub(1) };
        fwd.base_seq_set = true;
    }
    if !rev.base_seq_set && th & ACK != 0 {
        rev.base_seq = ack.wrapping_sub(1);
        rev.base_seq_set = true;
    }

    'fwd: {
        // R2: zero window probe.
        if seglen == 1 && seq == fwd.nextseq && rev.window == 0 {
            f |= flag::ZERO_WINDOW_PROBE;
            break 'fwd;
        }
        // R3: zero window.
        if window == 0 && !sfr {
            f |= flag::ZERO_WINDOW;
        }
        // R4: previous segment not captured.
        if fwd.nextseq != 0 && gt(seq, fwd.nextseq) && th & RST == 0 {
            f |= flag::LOST_PACKET;
        }
        // R5: keep-alive.
        if seglen <= 1 && seq == fwd.nextseq.wrapping_sub(1) && !sfr {
            f |= flag::KEEP_ALIVE;
        }
        let same = seglen == 0 && seq == fwd.nextseq && ack == fwd.lastack && !sfr;
        // R6: window update.
        if same && window != 0 && window != fwd.window {
            f |= flag::WINDOW_UPDATE;
        }
        // R7: window full (only once the other side's scaling is known).
        if seglen > 0 && rev.win_scale != -1 && !sfr {
            let shift = if rev.is_first_ack || rev.win_scale == -2 {
                0
            } else {
                rev.win_scale as u32
            };
            if seq.wrapping_add(seglen) == rev.lastack.wrapping_add(rev.window << shift) {
                f |= flag::WINDOW_FULL;
            }
        }
        // R8a/b/c: keep-alive ACK, zero-window-probe ACK, duplicate ACK.
        if same && window != 0 && window == fwd.window && rev.lastsegmentflags & flag::KEEP_ALIVE != 0 {
            f |= flag::KEEP_ALIVE_ACK;
            break 'fwd;
        }
        if same && window == 0 && window == fwd.window && rev.lastsegmentflags & flag::ZERO_WINDOW_PROBE != 0
        {
            f |= flag::ZERO_WINDOW_PROBE_ACK;
            break 'fwd;
        }
        if same && window != 0 && window == fwd.window {
            fwd.dupacknum = if fwd.dupacknum == -1 { 1 } else { fwd.dupacknum + 1 };
            f |= flag::DUPLICATE_ACK;
            out.dupack_num = fwd.dupacknum;
        }
    }

    // R10: finished_fwd.
    if ack != fwd.lastack {
        fwd.dupacknum = 0;
    }
    if rev.maxseqtobeacked != 0 && gt(ack, rev.maxseqtobeacked) && th & ACK != 0 {
        if lt(rev.maxseqtobeacked, rev.nextseq) {
            rev.maxseqtobeacked = rev.nextseq;
            f |= flag::ACK_LOST_PACKET;
        } else {
            if rev.dupacknum == 0 {
                f |= flag::ACK_LOST_PACKET;
            }
            rev.dupacknum = -1;
        }
    }

    // R9: the retransmission family.
    let synfin = th & (SYN | FIN) != 0;
    'rtx: {
        if !(seglen > 0 || synfin) || f & flag::KEEP_ALIVE != 0 {
            break 'rtx;
        }
        let mut not_advanced = fwd.nextseq != 0 && lt(seq, fwd.nextseq);
        if seglen > 1 && fwd.nextseq.wrapping_sub(1) == seq {
            not_advanced = false;
        }
        if seglen > 0 && rev.lastack != 0 && le(seq.wrapping_add(seglen), rev.lastack) {
            f |= flag::SPURIOUS_RETRANSMISSION;
            break 'rtx;
        }
        if not_advanced
            // guint32 in Wireshark: the -1 an ACK of unseen data leaves counts as >= 2.
            && rev.dupacknum as u32 >= 2
            && rev.lastack == seq
            && delta(now, rev.lastacktime) < FAST_RTX_WINDOW_NS
        {
            f |= flag::FAST_RETRANSMISSION;
            break 'rtx;
        }
        let thres = if irtt == 0 { OOO_DEFAULT_NS } else { irtt as u64 };
        if not_advanced
            && delta(now, fwd.nextseqtime) < thres
            && fwd.nextseq != seq.wrapping_add(seglen).wrapping_add(synfin as u32)
        {
            f |= flag::OUT_OF_ORDER;
            break 'rtx;
        }
        if not_advanced {
            f |= flag::RETRANSMISSION;
        }
    }

    // R11: state update.
    let mut nextseq = seq.wrapping_add(seglen);
    if (seglen > 0 || synfin) && fwd.segments.q.len() < MAX_UNACKED {
        if synfin {
            nextseq = nextseq.wrapping_add(1);
        }
        fwd.segments.push(Unacked {
            frame,
            seq,
            nextseq,
            ts: now,
        });
    }
    let zwp = f & flag::ZERO_WINDOW_PROBE != 0;
    if (gt(nextseq, fwd.nextseq) || fwd.nextseq == 0) && !zwp {
        fwd.nextseq = nextseq;
        fwd.nextseqtime = now;
    }
    if (seq == fwd.maxseqtobeacked || fwd.maxseqtobeacked == 0) && !zwp {
        fwd.maxseqtobeacked = fwd.nextseq;
    }
    fwd.window = window;
    fwd.lastack = ack;
    fwd.lastacktime = now;
    fwd.lastsegmentflags = f;
    if let Some((acked, ts)) = rev.segments.ack(ack) {
        out.acks_frame = acked;
        let rtt = now.wrapping_sub(ts);
        if rtt != 0 {
            out.ack_rtt_ns = Some(rtt);
        }
    }
    out.flags = f;
}

#[cfg(test)]
#[path = "tcp_tests.rs"]
mod tests;
