//! Reading capture files: classic pcap (µs and ns magic, either byte order) and pcapng
//! (SHB, IDB, EPB, SPB and the obsolete PB, either byte order, `if_tsresol`,
//! `if_tsoffset`, several sections), either of them gzip-compressed (`.pcap.gz`, as
//! tshark reads them: recognised by the gzip magic 1f 8b, not by the name; concatenated
//! gzip members are one stream).
//!
//! The file is read in large chunks into one buffer and each packet is handed out as a
//! slice of it: no allocation per packet. A compressed file is inflated as it is read,
//! into the same buffer: memory stays bounded by the largest record (`MAX_RECORD`),
//! whatever the file inflates to. Frames are numbered as Wireshark numbers them,
//! 1-based over every packet block of the file, whatever its interface or contents.
//! Any structural fault (a wrong magic, a record cut short, a block whose two lengths
//! differ) is an error naming the file and the byte offset where the fault starts.

use std::fs::File;
use std::io::{self, Cursor, Read};

use flate2::read::MultiGzDecoder;

/// How large a record or block may claim to be before the file is called corrupt.
const MAX_RECORD: usize = 64 << 20;
const CHUNK: usize = 4 << 20;
/// The buffer a reader starts with; it grows to CHUNK once the file proves larger.
const FIRST_CHUNK: usize = 64 << 10;

#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("{path}: byte offset {offset}: {what}")]
    Format { path: String, offset: u64, what: String },
    /// A request the file cannot answer (an interface it does not have).
    #[error("{path}: {what}")]
    Request { path: String, what: String },
}

/// How a pcapng interface counts time: units of 10^-n or 2^-n seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TsResol {
    Pow10(u8),
    Pow2(u8),
}

impl TsResol {
    /// `units` of this resolution in nanoseconds (saturating far outside any real clock).
    pub fn to_ns(self, units: u64) -> i64 {
        self.to_ns_exact(units).min(i64::MAX as i128) as i64
    }

    /// `units` of this resolution in nanoseconds, exact (a u64 of units at any
    /// resolution fits an i128 of nanoseconds).
    pub fn to_ns_exact(self, units: u64) -> i128 {
        let ns: u128 = match self {
            TsResol::Pow10(n) if n <= 9 => units as u128 * 10u128.pow(9 - n as u32),
            TsResol::Pow10(n) => units as u128 / 10u128.pow((n as u32 - 9).min(38)),
            TsResol::Pow2(n) => ((units as u128) * 1_000_000_000u128) >> n.min(127),
        };
        ns as i128
    }
}

/// A capture interface: one for a classic pcap, one per IDB for pcapng.
#[derive(Debug, Clone)]
pub struct Interface {
    pub link_type: u32,
    pub name: Option<String>,
    pub description: Option<String>,
    pub snaplen: u32,
    pub tsresol: TsResol,
    pub tsoffset_s: i64,
    /// Where the interface was declared (file header or IDB).
    pub declared_at: u64,
}

/// One packet: a view into the reader's buffer, valid until the next call.
#[derive(Debug)]
pub struct Packet<'a> {
    /// 1-based, over every packet of the file.
    pub frame: u64,
    /// Nanoseconds since the epoch; a clock past the i64 range (±292 years) saturates.
    pub ts_ns: i64,
    /// The same, exact: Wireshark keeps seconds and nanoseconds apart, so its time
    /// deltas (and ack_rtt) hold for any stamp a file can carry.
    pub ts_exact_ns: i128,
    /// Index into `Reader::interfaces` (pcapng: over all sections).
    pub iface: usize,
    pub link_type: u32,
    pub orig_len: u32,
    pub data: &'a [u8],
    /// Where the packet's record or block starts.
    pub offset: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Pcap { nanos: bool },
    Pcapng,
}

/// A source that counts the bytes read from it (a compressed file's own size).
pub struct Counted<R> {
    inner: R,
    bytes: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

/// The first bytes read to tell gzip from the rest, then the rest of the source.
type Sniffed<R> = io::Chain<Cursor<Vec<u8>>, Counted<R>>;

/// A capture's bytes: as stored, or inflated from gzip.
pub enum Input<R: Read> {
    Plain(Sniffed<R>),
    Gzip(Box<MultiGzDecoder<Sniffed<R>>>),
}

impl<R: Read> Input<R> {
    /// Reads the first two bytes of `src` and picks the decoder they call for.
    fn sniff(src: R) -> io::Result<Input<R>> {
        let mut src = Counted { inner: src, bytes: 0 };
        let mut head = [0u8; 2];
        let mut got = 0;
        while got < 2 {
            match src.read(&mut head[got..]) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let rest = Cursor::new(head[..got].to_vec()).chain(src);
        Ok(if head[..got] == [0x1F, 0x8B] {
            Input::Gzip(Box::new(MultiGzDecoder::new(rest)))
        } else {
            Input::Plain(rest)
        })
    }

    /// Bytes read from the source itself (compressed bytes for a gzip file).
    fn source_bytes(&self) -> u64 {
        match self {
            Input::Plain(c) => c.get_ref().1.bytes,
            Input::Gzip(g) => g.get_ref().get_ref().1.bytes,
        }
    }
}

impl<R: Read> Read for Input<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Input::Plain(c) => c.read(buf),
            Input::Gzip(g) => g.read(buf),
        }
    }
}

pub struct Reader<R: Read = File> {
    path: String,
    src: Input<R>,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// File offset of `buf[start]`.
    pos: u64,
    eof: bool,
    pub format: Format,
    big_endian: bool,
    interfaces: Vec<Interface>,
    /// pcapng: index in `interfaces` of the current section's interface 0.
    section_base: usize,
    frame: u64,
    /// Bytes of the capture read so far (inflated, for a gzip file).
    pub bytes_read: u64,
}

impl Reader<File> {
    pub fn open(path: &str) -> Result<Self, CaptureError> {
        let f = File::open(path).map_err(|source| CaptureError::Io {
            path: path.into(),
            source,
        })?;
        Reader::new(path, f)
    }
}

fn u16_at(b: &[u8], be: bool) -> u16 {
    let a = [b[0], b[1]];
    if be {
        u16::from_be_bytes(a)
    } else {
        u16::from_le_bytes(a)
    }
}

fn u32_at(b: &[u8], be: bool) -> u32 {
    let a = [b[0], b[1], b[2], b[3]];
    if be {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}

const PCAPNG_SHB: u32 = 0x0A0D_0D0A;
const PCAPNG_BOM: u32 = 0x1A2B_3C4D;

impl<R: Read> Reader<R> {
    /// Reads the file header (pcap) or the first section header (pcapng), inflating a
    /// gzip-compressed source.
    pub fn new(path: &str, src: R) -> Result<Self, CaptureError> {
        let src = Input::sniff(src).map_err(|source| CaptureError::Io {
            path: path.into(),
            source,
        })?;
        let mut r = Reader {
            path: path.into(),
            src,
            buf: vec![0; FIRST_CHUNK],
            start: 0,
            end: 0,
            pos: 0,
            eof: false,
            format: Format::Pcapng,
            big_endian: false,
            interfaces: Vec::new(),
            section_base: 0,
            frame: 0,
            bytes_read: 0,
        };
        if !r.fill(4)? {
            return Err(r.err(0, "too short for a capture file (no magic number)"));
        }
        let m = &r.buf[r.start..r.start + 4];
        let magic_le = u32::from_le_bytes([m[0], m[1], m[2], m[3]]);
        let magic_be = u32::from_be_bytes([m[0], m[1], m[2], m[3]]);
        let pcap = |m: u32| match m {
            0xA1B2_C3D4 => Some(false),
            0xA1B2_3C4D => Some(true),
            _ => None,
        };
        if let Some(nanos) = pcap(magic_le) {
            r.big_endian = false;
            r.format = Format::Pcap { nanos };
        } else if let Some(nanos) = pcap(magic_be) {
            r.big_endian = true;
            r.format = Format::Pcap { nanos };
        } else if magic_le == PCAPNG_SHB {
            r.format = Format::Pcapng;
            return Ok(r);
        } else {
            return Err(r.err(
                0,
                &format!("not a pcap or pcapng file (magic number 0x{magic_be:08x})"),
            ));
        }
        if !r.fill(24)? {
            return Err(r.err(0, "pcap file header cut short (24 bytes needed)"));
        }
        let h = &r.buf[r.start..r.start + 24];
        let snaplen = u32_at(&h[16..], r.big_endian);
        // The upper bits of the link-type field carry FCS information.
        let link_type = u32_at(&h[20..], r.big_endian) & 0x0FFF_FFFF;
        r.interfaces.push(Interface {
            link_type,
            name: None,
            description: None,
            snaplen,
            tsresol: TsResol::Pow10(if matches!(r.format, Format::Pcap { nanos: true }) {
                9
            } else {
                6
            }),
            tsoffset_s: 0,
            declared_at: 0,
        });
        r.consume(24);
        Ok(r)
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether the file is gzip-compressed.
    pub fn gzip(&self) -> bool {
        matches!(self.src, Input::Gzip(_))
    }

    /// Bytes read from the file itself (its compressed bytes, for a gzip file).
    pub fn file_bytes(&self) -> u64 {
        self.src.source_bytes()
    }

    pub fn interfaces(&self) -> &[Interface] {
        &self.interfaces
    }

    fn err(&self, offset: u64, what: &str) -> CaptureError {
        let what = if self.gzip() {
            format!("{what} (offsets count the decompressed bytes)")
        } else {
            what.into()
        };
        CaptureError::Format {
            path: self.path.clone(),
            offset,
            what,
        }
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.pos += n as u64;
    }

    /// Makes `n` bytes available at `buf[start..]`; false if the file ends first.
    fn fill(&mut self, n: usize) -> Result<bool, CaptureError> {
        if self.end - self.start >= n {
            return Ok(true);
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        // A file that filled the first buffer is read in CHUNKs from then on.
        let big = self.bytes_read >= self.buf.len() as u64;
        if n > self.buf.len() || (big && self.buf.len() < CHUNK) {
            self.buf.resize(n.max(CHUNK), 0);
        }
        while self.end < n && !self.eof {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(k) => {
                    self.end += k;
                    self.bytes_read += k as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if self.gzip()
                        && matches!(
                            e.kind(),
                            io::ErrorKind::InvalidData
                                | io::ErrorKind::InvalidInput
                                | io::ErrorKind::UnexpectedEof
                        ) =>
                {
                    // A corrupt or truncated gzip stream: say so, and where.
                    return Err(CaptureError::Format {
                        path: self.path.clone(),
                        offset: self.src.source_bytes(),
                        what: format!(
                            "the gzip-compressed data is damaged ({e}) after {} bytes of capture \
                             were inflated (the offset counts the compressed bytes)",
                            self.bytes_read
                        ),
                    });
                }
                Err(source) => {
                    return Err(CaptureError::Io {
                        path: self.path.clone(),
                        source,
                    })
                }
            }
        }
        Ok(self.end - self.start >= n)
    }

    fn available(&self) -> usize {
        self.end - self.start
    }

    /// The next packet, or None at the end of the file.
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, CaptureError> {
        match self.format {
            Format::Pcap { .. } => self.next_pcap(),
            Format::Pcapng => self.next_pcapng(),
        }
    }

    fn next_pcap(&mut self) -> Result<Option<Packet<'_>>, CaptureError> {
        if !self.fill(16)? {
            if self.available() == 0 {
                return Ok(None);
            }
            let have = self.available();
            return Err(self.err(
                self.pos,
                &format!("packet record header cut short ({have} of 16 bytes): the file is truncated"),
            ));
        }
        let be = self.big_endian;
        let h = &self.buf[self.start..self.start + 16];
        let (sec, frac, caplen, orig_len) = (
            u32_at(h, be),
            u32_at(&h[4..], be),
            u32_at(&h[8..], be),
            u32_at(&h[12..], be),
        );
        let offset = self.pos;
        if caplen as usize > MAX_RECORD {
            return Err(self.err(
                offset,
                &format!("packet record claims {caplen} captured bytes: corrupt file"),
            ));
        }
        if !self.fill(16 + caplen as usize)? {
            let have = self.available() - 16;
            return Err(self.err(
                offset,
                &format!(
                    "packet {} cut short ({have} of {caplen} bytes): the file is truncated",
                    self.frame + 1
                ),
            ));
        }
        // As wiretap: a microsecond field becomes nanoseconds in 32 bits, so a bogus one
        // of 1 s or more wraps (tcpflow's bug8.pcap holds 8915240 µs: tshark reads
        // 0.325305408 s, and its ack_rtt follows).
        let nsecs = if matches!(self.format, Format::Pcap { nanos: true }) {
            frac
        } else {
            frac.wrapping_mul(1000)
        };
        let ts_ns = sec as i64 * 1_000_000_000 + nsecs as i64;
        self.frame += 1;
        let s = self.start + 16;
        self.consume(16 + caplen as usize);
        Ok(Some(Packet {
            frame: self.frame,
            ts_ns,
            ts_exact_ns: ts_ns as i128,
            iface: 0,
            link_type: self.interfaces[0].link_type,
            orig_len,
            data: &self.buf[s..s + caplen as usize],
            offset,
        }))
    }

    fn next_pcapng(&mut self) -> Result<Option<Packet<'_>>, CaptureError> {
        loop {
            if !self.fill(8)? {
                if self.available() == 0 {
                    return Ok(None);
                }
                return Err(self.err(self.pos, "pcapng block header cut short: the file is truncated"));
            }
            let offset = self.pos;
            let btype_le = u32_at(&self.buf[self.start..], false);
            if btype_le == PCAPNG_SHB {
                if !self.fill(12)? {
                    return Err(self.err(offset, "pcapng section header cut short: the file is truncated"));
                }
                let bom = &self.buf[self.start + 8..self.start + 12];
                self.big_endian = if u32_at(bom, false) == PCAPNG_BOM {
                    false
                } else if u32_at(bom, true) == PCAPNG_BOM {
                    true
                } else {
                    return Err(self.err(offset + 8, "pcapng section header has no valid byte-order magic"));
                };
            }
            let be = self.big_endian;
            let btype = u32_at(&self.buf[self.start..], be);
            let len = u32_at(&self.buf[self.start + 4..], be) as usize;
            if len < 12 || len & 3 != 0 || len > MAX_RECORD {
                return Err(self.err(
                    offset,
                    &format!("pcapng block (type 0x{btype:x}) has a bad length {len}"),
                ));
            }
            if !self.fill(len)? {
                let have = self.available();
                return Err(self.err(
                    offset,
                    &format!("pcapng block (type 0x{btype:x}) cut short ({have} of {len} bytes): the file is truncated"),
                ));
            }
            let blk = &self.buf[self.start..self.start + len];
            if u32_at(&blk[len - 4..], be) as usize != len {
                return Err(self.err(
                    offset,
                    "pcapng block's trailing length differs from its leading length",
                ));
            }
            match btype {
                PCAPNG_SHB => {
                    self.section_base = self.interfaces.len();
                    self.consume(len);
                }
                1 => {
                    let iface = self.parse_idb(offset, len)?;
                    self.interfaces.push(iface);
                    self.consume(len);
                }
                6 | 2 | 3 => {
                    let (iface_rel, ts_units, caplen, orig_len, data_at) = match btype {
                        6 | 2 => {
                            if len < 32 {
                                return Err(self.err(offset, "packet block too short"));
                            }
                            let id = if btype == 6 {
                                u32_at(&blk[8..], be)
                            } else {
                                u16_at(&blk[8..], be) as u32
                            };
                            let ts = ((u32_at(&blk[12..], be) as u64) << 32) | u32_at(&blk[16..], be) as u64;
                            (
                                id as usize,
                                Some(ts),
                                u32_at(&blk[20..], be),
                                u32_at(&blk[24..], be),
                                28,
                            )
                        }
                        _ => {
                            if len < 16 {
                                return Err(self.err(offset, "simple packet block too short"));
                            }
                            let orig = u32_at(&blk[8..], be);
                            let snap = self.interfaces.get(self.section_base).map_or(0, |i| i.snaplen);
                            let room = (len - 16) as u32;
                            let cap = orig.min(if snap == 0 { room } else { snap.min(room) });
                            (0, None, cap, orig, 12)
                        }
                    };
                    if data_at + caplen as usize > len - 4 {
                        return Err(self.err(
                            offset,
                            &format!(
                                "packet block claims {caplen} captured bytes, more than the block holds"
                            ),
                        ));
                    }
                    let iface = self.section_base + iface_rel;
                    let Some(i) = self.interfaces.get(iface) else {
                        return Err(self.err(
                            offset,
                            &format!(
                                "packet on interface {iface_rel}, which no IDB of this section declared"
                            ),
                        ));
                    };
                    let link_type = i.link_type;
                    let ts_exact_ns = ts_units.map_or(0, |u| {
                        i.tsresol.to_ns_exact(u) + i.tsoffset_s as i128 * 1_000_000_000
                    });
                    let ts_ns = ts_exact_ns.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
                    self.frame += 1;
                    let s = self.start + data_at;
                    self.consume(len);
                    return Ok(Some(Packet {
                        frame: self.frame,
                        ts_ns,
                        ts_exact_ns,
                        iface,
                        link_type,
                        orig_len,
                        data: &self.buf[s..s + caplen as usize],
                        offset,
                    }));
                }
                _ => self.consume(len), // NRB, ISB, DSB, custom blocks: nothing for us
            }
        }
    }

    fn parse_idb(&self, offset: u64, len: usize) -> Result<Interface, CaptureError> {
        let be = self.big_endian;
        let blk = &self.buf[self.start..self.start + len];
        if len < 20 {
            return Err(self.err(offset, "interface description block too short"));
        }
        let mut iface = Interface {
            link_type: u16_at(&blk[8..], be) as u32,
            name: None,
            description: None,
            snaplen: u32_at(&blk[12..], be),
            tsresol: TsResol::Pow10(6),
            tsoffset_s: 0,
            declared_at: offset,
        };
        let mut o = 16;
        while o + 4 <= len - 4 {
            let code = u16_at(&blk[o..], be);
            let olen = u16_at(&blk[o + 2..], be) as usize;
            let v = o + 4;
            if code == 0 || v + olen > len - 4 {
                break;
            }
            let val = &blk[v..v + olen];
            match (code, olen) {
                (2, _) => iface.name = Some(String::from_utf8_lossy(val).trim_end_matches('\0').into()),
                (3, _) => {
                    iface.description = Some(String::from_utf8_lossy(val).trim_end_matches('\0').into())
                }
                (9, 1) => {
                    let r = val[0];
                    iface.tsresol = if r & 0x80 != 0 {
                        TsResol::Pow2(r & 0x7F)
                    } else {
                        TsResol::Pow10(r)
                    };
                }
                (14, 8) => {
                    let a: [u8; 8] = val.try_into().unwrap_or([0; 8]);
                    iface.tsoffset_s = if be {
                        i64::from_be_bytes(a)
                    } else {
                        i64::from_le_bytes(a)
                    };
                }
                _ => {}
            }
            o = v + olen.div_ceil(4) * 4;
        }
        Ok(iface)
    }
}

#[cfg(test)]
#[path = "capture_tests.rs"]
mod tests;
