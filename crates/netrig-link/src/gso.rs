//! Segmentation of offload superframes into the frames a wire would carry, for captures.
//!
//! With offloads on (a link without `offloads_off`), netrig-link reads each frame with a
//! virtio-net header: a GSO superframe (up to 64 KiB and more) carries in it how a NIC
//! would cut it (`gso_type`, `gso_size`), and a frame whose checksum the kernel left to
//! the device carries `VIRTIO_NET_HDR_F_NEEDS_CSUM` with `csum_start`/`csum_offset`
//! (the field then holds only the pseudo-header's sum). The link emulates the superframe
//! as one packet whose wire size counts its segments; a capture writes what the wire
//! would have carried instead, as this module makes it:
//!
//! - TCP over IPv4 or IPv6 (`TCPV4`, `TCPV6`, with or without the ECN bit) is cut as TSO
//!   does: every segment repeats the headers with at most `gso_size` bytes of payload;
//!   its sequence number advances by the payload before it; IPv4's total length, ID
//!   (the superframe's, plus the segment's index) and header checksum, or IPv6's payload
//!   length, are the segment's; FIN and PSH stay on the last segment only, CWR on the
//!   first only; the TCP checksum is computed whole (pseudo-header, header, payload).
//! - UDP (`UDP_L4`, UDP GSO) is cut into datagrams of at most `gso_size` bytes, each with
//!   its own UDP length and checksum (0 is sent as 0xffff), IPv4 ID and checksum or IPv6
//!   payload length.
//! - A frame that is not a superframe but carries a partial checksum gets it completed
//!   as a device does (the one's-complement sum from `csum_start` to the end of the IP
//!   packet, stored at `csum_start + csum_offset`).
//!
//! What it cannot cut it refuses with the reason ([`Unsegmented`]), and the capture
//! writes the frame as it came with that reason in its comment: a `gso_size` of 0, a
//! header length or checksum start past the frame, a checksum start that is not the
//! transport header, headers cut short, a `gso_type` that does not match the headers
//! (or that no NIC segments here: UFO, IP fragments, IPv6 extension headers), or more
//! than [`MAX_SEGMENTS`] segments. Nothing here can panic on what a frame says: every
//! offset is checked against the frame before it is used.
//!
//! Pure: no I/O, no clock; the caller owns the output buffer ([`Segments`]), which is
//! reused from one superframe to the next.

use std::fmt;

use crate::afpacket::VNET_HDR_LEN;

/// `flags`: the device must complete the checksum at `csum_start + csum_offset`.
pub const F_NEEDS_CSUM: u8 = 1;
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
/// UFO: UDP cut into IP fragments (not offered by current kernels).
pub const GSO_UDP: u8 = 3;
pub const GSO_TCPV6: u8 = 4;
pub const GSO_UDP_L4: u8 = 5;
/// Set with TCPV4/TCPV6 when the flow uses ECN (CWR goes on the first segment only).
pub const GSO_ECN: u8 = 0x80;
/// More segments than this (a 64 KiB superframe of 16-byte segments) are refused.
pub const MAX_SEGMENTS: usize = 4096;

const ETH_HLEN: usize = 14;
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

/// A virtio-net header (little-endian fields, as PACKET_VNET_HDR gives them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    /// None when `b` is shorter than a header.
    pub fn parse(b: &[u8]) -> Option<VnetHdr> {
        if b.len() < VNET_HDR_LEN {
            return None;
        }
        let u = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Some(VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u(2),
            gso_size: u(4),
            csum_start: u(6),
            csum_offset: u(8),
        })
    }

    pub fn to_bytes(self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0u8; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
        b
    }
}

/// Why a frame is written as it came (the capture's comment says it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsegmented {
    ZeroGsoSize,
    HdrLenPastFrame {
        hdr_len: u16,
        len: usize,
    },
    CsumPastFrame {
        start: u16,
        offset: u16,
        len: usize,
    },
    CsumNotTransport {
        start: u16,
        offset: u16,
        l4: usize,
    },
    /// The headers end before they should: which header, and where the frame ends.
    Short {
        what: &'static str,
        len: usize,
    },
    /// Headers that are not what `gso_type` says, or that no NIC cuts.
    Headers(&'static str),
    UnknownType(u8),
    TooManySegments(usize),
}

impl fmt::Display for Unsegmented {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unsegmented::ZeroGsoSize => write!(f, "its gso_size is 0"),
            Unsegmented::HdrLenPastFrame { hdr_len, len } => {
                write!(f, "its header length {hdr_len} is past its {len} bytes")
            }
            Unsegmented::CsumPastFrame { start, offset, len } => write!(
                f,
                "its checksum at csum_start {start} + csum_offset {offset} is past its {len} bytes"
            ),
            Unsegmented::CsumNotTransport { start, offset, l4 } => write!(
                f,
                "its csum_start {start}/csum_offset {offset} is not the checksum of the \
                 transport header at byte {l4}"
            ),
            Unsegmented::Short { what, len } => write!(f, "its {what} is cut short ({len} bytes)"),
            Unsegmented::Headers(what) => write!(f, "{what}"),
            Unsegmented::UnknownType(t) => write!(f, "its gso_type {t:#04x} is not one netrig-link cuts"),
            Unsegmented::TooManySegments(n) => {
                write!(f, "it would be {n} segments (more than {MAX_SEGMENTS})")
            }
        }
    }
}

/// Frames made from one superframe, back to back in one buffer.
#[derive(Debug, Default)]
pub struct Segments {
    buf: Vec<u8>,
    ends: Vec<usize>,
}

impl Segments {
    pub fn clear(&mut self) {
        self.buf.clear();
        self.ends.clear();
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The k-th frame.
    pub fn get(&self, k: usize) -> &[u8] {
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        &self.buf[start..self.ends[k]]
    }

    /// The k-th frame, to change.
    pub fn get_mut(&mut self, k: usize) -> &mut [u8] {
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        &mut self.buf[start..self.ends[k]]
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.len()).map(|k| self.get(k))
    }

    fn push(&mut self, parts: &[&[u8]]) -> usize {
        let start = self.buf.len();
        for p in parts {
            self.buf.extend_from_slice(p);
        }
        self.ends.push(self.buf.len());
        start
    }
}

/// Where a frame's headers are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    l3: usize,
    v6: bool,
    l4: usize,
    proto: u8,
    /// End of the transport header: where the payload begins.
    payload: usize,
    /// End of the IP packet as its header says (bounded by the frame).
    ip_end: usize,
}

fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

fn put16(b: &mut [u8], i: usize, v: u16) {
    b[i..i + 2].copy_from_slice(&v.to_be_bytes());
}

/// The frame's Ethernet (up to two VLAN tags), IP and TCP/UDP headers, checked against
/// its length.
fn layout(frame: &[u8]) -> Result<Layout, Unsegmented> {
    let len = frame.len();
    let short = |what| Err(Unsegmented::Short { what, len });
    if len < ETH_HLEN {
        return short("Ethernet header");
    }
    let mut l3 = ETH_HLEN;
    let mut ethertype = be16(frame, 12);
    for _ in 0..2 {
        if ethertype != 0x8100 && ethertype != 0x88a8 {
            break;
        }
        if len < l3 + 4 {
            return short("VLAN tag");
        }
        ethertype = be16(frame, l3 + 2);
        l3 += 4;
    }
    let (v6, l4, proto, ip_end) = match ethertype {
        0x0800 => {
            if len < l3 + 20 || frame[l3] >> 4 != 4 {
                return short("IPv4 header");
            }
            let ihl = (frame[l3] & 0x0f) as usize * 4;
            if ihl < 20 || len < l3 + ihl {
                return short("IPv4 header");
            }
            if be16(frame, l3 + 6) & 0x3fff != 0 {
                return Err(Unsegmented::Headers("it is an IPv4 fragment"));
            }
            let total = be16(frame, l3 + 2) as usize;
            // A superframe's total length may be 0 (BIG TCP) or short of the frame.
            let ip_end = if total >= ihl { (l3 + total).min(len) } else { len };
            (false, l3 + ihl, frame[l3 + 9], ip_end)
        }
        0x86dd => {
            if len < l3 + 40 || frame[l3] >> 4 != 6 {
                return short("IPv6 header");
            }
            let next = frame[l3 + 6];
            if next != IPPROTO_TCP && next != IPPROTO_UDP {
                return Err(Unsegmented::Headers(
                    "its IPv6 header is followed by an extension header, which netrig-link does not cut",
                ));
            }
            let plen = be16(frame, l3 + 4) as usize;
            let ip_end = if plen > 0 { (l3 + 40 + plen).min(len) } else { len };
            (true, l3 + 40, next, ip_end)
        }
        _ => return Err(Unsegmented::Headers("it is not IPv4 or IPv6")),
    };
    let payload = match proto {
        IPPROTO_TCP => {
            if len < l4 + 20 {
                return short("TCP header");
            }
            let doff = (frame[l4 + 12] >> 4) as usize * 4;
            if doff < 20 || len < l4 + doff {
                return short("TCP header");
            }
            l4 + doff
        }
        IPPROTO_UDP => {
            if len < l4 + 8 {
                return short("UDP header");
            }
            l4 + 8
        }
        _ => return Err(Unsegmented::Headers("it is not TCP or UDP")),
    };
    Ok(Layout {
        l3,
        v6,
        l4,
        proto,
        payload,
        ip_end: ip_end.max(payload),
    })
}

/// One's-complement sum of `data` (as 16-bit big-endian words, an odd last byte
/// padded), added to `acc`; not folded.
pub fn sum(data: &[u8], mut acc: u64) -> u64 {
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        acc += u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as u64;
    }
    let rest = chunks.remainder();
    let mut i = 0;
    while i + 1 < rest.len() {
        acc += u16::from_be_bytes([rest[i], rest[i + 1]]) as u64;
        i += 2;
    }
    if i < rest.len() {
        acc += (rest[i] as u64) << 8;
    }
    acc
}

/// Folds a sum to 16 bits (not complemented).
pub fn fold(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The sum of the pseudo-header of a transport segment of `l4_len` bytes.
fn pseudo(frame: &[u8], lay: &Layout, l4_len: usize) -> u64 {
    let l3 = lay.l3;
    if lay.v6 {
        sum(&frame[l3 + 8..l3 + 40], 0) + l4_len as u64 + lay.proto as u64
    } else {
        sum(&frame[l3 + 12..l3 + 20], 0) + l4_len as u64 + lay.proto as u64
    }
}

/// Rewrites one segment's lengths, IPv4 ID and checksums in place (`seg` is a whole
/// frame: the superframe's headers and this segment's payload).
fn finish(seg: &mut [u8], lay: &Layout, ip_id: u16) {
    let l3 = lay.l3;
    let l4_len = seg.len() - lay.l4;
    if lay.v6 {
        put16(seg, l3 + 4, (seg.len() - l3 - 40) as u16);
    } else {
        put16(seg, l3 + 2, (seg.len() - l3) as u16);
        put16(seg, l3 + 4, ip_id);
        put16(seg, l3 + 10, 0);
        let c = !fold(sum(&seg[l3..lay.l4], 0));
        put16(seg, l3 + 10, c);
    }
    let at = if lay.proto == IPPROTO_TCP {
        lay.l4 + 16
    } else {
        put16(seg, lay.l4 + 4, l4_len as u16);
        lay.l4 + 6
    };
    put16(seg, at, 0);
    let mut c = !fold(sum(&seg[lay.l4..], pseudo(seg, lay, l4_len)));
    if c == 0 && lay.proto == IPPROTO_UDP {
        c = 0xffff; // 0 would say "no checksum"
    }
    put16(seg, at, c);
}

/// What the wire carries for a frame: its bytes (a superframe's segments each repeat its
/// headers) and how many frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wire {
    pub bytes: u32,
    pub frames: u32,
}

/// What the wire carries for `frame`, read with virtio-net header `vnet`, without
/// cutting it: a superframe counts every segment and every segment's headers (Ethernet,
/// IP, TCP/UDP as the frame has them: `hdr_len` is only the kernel's hint of how much
/// of the frame is linear). A superframe whose headers this module cannot read counts
/// `hdr_len` bytes of headers a segment, or TCP over IPv4's 66 when that is no length
/// within the frame. Every other frame is one frame of its own length.
pub fn wire(vnet: &[u8], frame: &[u8]) -> Wire {
    let len = frame.len();
    let one = Wire {
        bytes: u32::try_from(len).unwrap_or(u32::MAX),
        frames: 1,
    };
    let Some(h) = VnetHdr::parse(vnet) else { return one };
    if h.gso_type == GSO_NONE || h.gso_size == 0 {
        return one;
    }
    let headers = match layout(frame) {
        Ok(lay) => lay.payload,
        Err(_) if h.hdr_len > 0 && (h.hdr_len as usize) < len => h.hdr_len as usize,
        Err(_) => 66,
    };
    if len <= headers {
        return one;
    }
    let n = (len - headers).div_ceil(h.gso_size as usize);
    let bytes = (len as u64).saturating_add((n as u64 - 1).saturating_mul(headers as u64));
    Wire {
        bytes: u32::try_from(bytes).unwrap_or(u32::MAX),
        frames: u32::try_from(n).unwrap_or(u32::MAX),
    }
}

/// Completes a partial checksum as a device does: the one's-complement sum from
/// `start` to the end of the IP packet (a frame's padding is not in it), the field at
/// `start + offset` holding the pseudo-header's sum; a sum of 0 is written 0xffff, as
/// the kernel's skb_checksum_help does (for UDP, 0 would say "no checksum"). The caller
/// has checked that the field lies within the frame.
fn complete_csum(frame: &mut [u8], start: usize, offset: usize) {
    let end = layout(frame)
        .map(|l| l.ip_end)
        .unwrap_or(frame.len())
        .max(start + offset + 2);
    let c = match !fold(sum(&frame[start..end], 0)) {
        0 => 0xffff,
        c => c,
    };
    put16(frame, start + offset, c);
}

/// Gives `frame` (not a superframe) the checksum a device would have completed, if its
/// virtio-net header `vnet` says it needs one. Ok(true): completed; Ok(false): it needs
/// none; Err: its checksum lies past the frame.
pub fn complete(vnet: &VnetHdr, frame: &mut [u8]) -> Result<bool, Unsegmented> {
    if vnet.flags & F_NEEDS_CSUM == 0 {
        return Ok(false);
    }
    let (start, offset) = (vnet.csum_start as usize, vnet.csum_offset as usize);
    if start + offset + 2 > frame.len() {
        return Err(Unsegmented::CsumPastFrame {
            start: vnet.csum_start,
            offset: vnet.csum_offset,
            len: frame.len(),
        });
    }
    complete_csum(frame, start, offset);
    Ok(true)
}

/// Bytes of the headers every segment of a superframe repeats (Ethernet to TCP/UDP),
/// if this module can read them.
pub fn header_len(frame: &[u8]) -> Option<usize> {
    layout(frame).ok().map(|l| l.payload)
}

/// How many frames the wire would carry for `frame` (1 for all but a superframe this
/// module cuts), without cutting it.
pub fn count(vnet: &[u8], frame: &[u8]) -> usize {
    let Some(h) = VnetHdr::parse(vnet) else { return 1 };
    if h.gso_type == GSO_NONE || h.gso_size == 0 {
        return 1;
    }
    match layout(frame) {
        Ok(lay) => {
            let n = (frame.len() - lay.payload).div_ceil(h.gso_size as usize).max(1);
            if n > MAX_SEGMENTS {
                1
            } else {
                n
            }
        }
        Err(_) => 1,
    }
}

/// Makes the frames the wire would carry for `frame`, read with virtio-net header
/// `vnet`, into `out` (cleared first). Ok(false): the frame goes as it is (no header,
/// or neither a superframe nor a partial checksum); Ok(true): `out` holds its frames
/// (one, for a completed checksum or a superframe of one segment); Err: it must be
/// written as it came, for that reason.
pub fn segment(vnet: &[u8], frame: &[u8], out: &mut Segments) -> Result<bool, Unsegmented> {
    out.clear();
    let Some(h) = VnetHdr::parse(vnet) else {
        return Ok(false);
    };
    let len = frame.len();
    let needs_csum = h.flags & F_NEEDS_CSUM != 0;
    let (start, offset) = (h.csum_start as usize, h.csum_offset as usize);
    if needs_csum && start + offset + 2 > len {
        return Err(Unsegmented::CsumPastFrame {
            start: h.csum_start,
            offset: h.csum_offset,
            len,
        });
    }
    if h.gso_type == GSO_NONE {
        if !needs_csum {
            return Ok(false);
        }
        let s = out.push(&[frame]);
        complete_csum(&mut out.buf[s..], start, offset);
        return Ok(true);
    }
    if h.gso_size == 0 {
        return Err(Unsegmented::ZeroGsoSize);
    }
    if h.hdr_len as usize > len {
        return Err(Unsegmented::HdrLenPastFrame {
            hdr_len: h.hdr_len,
            len,
        });
    }
    let lay = layout(frame)?;
    let tcp = lay.proto == IPPROTO_TCP;
    match h.gso_type & !GSO_ECN {
        GSO_TCPV4 if tcp && !lay.v6 => {}
        GSO_TCPV6 if tcp && lay.v6 => {}
        GSO_UDP_L4 if !tcp => {}
        GSO_TCPV4 => {
            return Err(Unsegmented::Headers(
                "its gso_type is TCPV4 but it is not TCP over IPv4",
            ))
        }
        GSO_TCPV6 => {
            return Err(Unsegmented::Headers(
                "its gso_type is TCPV6 but it is not TCP over IPv6",
            ))
        }
        GSO_UDP_L4 => return Err(Unsegmented::Headers("its gso_type is UDP_L4 but it is not UDP")),
        GSO_UDP => {
            return Err(Unsegmented::Headers(
                "its gso_type is UFO (UDP cut into IP fragments), which netrig-link does not cut",
            ))
        }
        t => return Err(Unsegmented::UnknownType(t | (h.gso_type & GSO_ECN))),
    }
    let field = if tcp { 16 } else { 6 };
    if needs_csum && (start != lay.l4 || offset != field) {
        return Err(Unsegmented::CsumNotTransport {
            start: h.csum_start,
            offset: h.csum_offset,
            l4: lay.l4,
        });
    }
    let hl = lay.payload;
    let payload = &frame[hl..];
    let gso = h.gso_size as usize;
    let n = payload.len().div_ceil(gso).max(1);
    if n > MAX_SEGMENTS {
        return Err(Unsegmented::TooManySegments(n));
    }
    let ip_id = if lay.v6 { 0 } else { be16(frame, lay.l3 + 4) };
    let seq = if tcp {
        u32::from_be_bytes([
            frame[lay.l4 + 4],
            frame[lay.l4 + 5],
            frame[lay.l4 + 6],
            frame[lay.l4 + 7],
        ])
    } else {
        0
    };
    out.buf.reserve(len + n * hl);
    for k in 0..n {
        let chunk = &payload[(k * gso).min(payload.len())..((k + 1) * gso).min(payload.len())];
        let s = out.push(&[&frame[..hl], chunk]);
        let f = &mut out.buf[s..];
        if tcp {
            let l4 = lay.l4;
            f[l4 + 4..l4 + 8].copy_from_slice(&seq.wrapping_add((k * gso) as u32).to_be_bytes());
            if k > 0 {
                f[l4 + 13] &= !TCP_CWR;
            }
            if k + 1 < n {
                f[l4 + 13] &= !(TCP_FIN | TCP_PSH);
            }
        }
        finish(f, &lay, ip_id.wrapping_add(k as u16));
    }
    Ok(true)
}

#[cfg(test)]
pub(crate) mod tests;
