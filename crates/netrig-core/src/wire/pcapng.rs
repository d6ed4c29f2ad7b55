//! The pcapng capture file (draft-ietf-opsawg-pcapng): the blocks netrig writes, as
//! bytes. One section; one interface per captured link direction; one enhanced packet
//! block per frame, with optional comment, flags and drop count.
//!
//! ```text
//! every block:  type u32 | total length u32 | body | options | total length u32
//! option:       code u16 | length u16 | value, padded to 4 bytes; the list ends 0, 0
//! SHB (0x0a0d0d0a): byte-order magic 0x1a2b3c4d | major 1 | minor 0 | section length -1 (i64)
//!               options: shb_userappl (4)
//! IDB (1):      linktype u16 | reserved u16 | snaplen u32
//!               options: if_name (2), if_description (3), if_tsresol (9, 1 byte)
//! EPB (6):      interface id u32 | ts high u32 | ts low u32 | captured len u32
//!               | original len u32 | data, padded to 4 bytes
//!               options: opt_comment (1), epb_flags (2, u32), epb_dropcount (4, u64)
//! ```
//!
//! Every field is little-endian (readers take the order from the section's magic).
//! Interfaces carry `if_tsresol` 9, so timestamps are nanoseconds since the Unix epoch
//! in 64 bits. The block builders are pure and append to a caller's `Vec<u8>`;
//! [`PcapngWriter`] writes a section onto any `io::Write` and counts its bytes, so a
//! caller can bound a file's size before it writes.

use std::io::{self, Write};

pub const BLOCK_SHB: u32 = 0x0a0d_0d0a;
pub const BLOCK_IDB: u32 = 1;
pub const BLOCK_EPB: u32 = 6;
pub const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;
pub const LINKTYPE_ETHERNET: u16 = 1;

/// Option codes, by the block they belong to.
pub mod opt {
    pub const END: u16 = 0;
    pub const COMMENT: u16 = 1;
    pub const SHB_USERAPPL: u16 = 4;
    pub const IF_NAME: u16 = 2;
    pub const IF_DESCRIPTION: u16 = 3;
    pub const IF_TSRESOL: u16 = 9;
    pub const EPB_FLAGS: u16 = 2;
    pub const EPB_DROPCOUNT: u16 = 4;
}

/// `epb_flags` bits 0-1: the packet's direction.
pub const FLAG_INBOUND: u32 = 0b01;
pub const FLAG_OUTBOUND: u32 = 0b10;

/// Nanosecond timestamps (`if_tsresol` = 10^-9).
pub const TSRESOL_NS: u8 = 9;

/// Block type, total length (twice) and the EPB's fixed fields.
const EPB_FIXED: usize = 4 + 4 + 20 + 4;

fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// The bytes one option takes (header, value, padding); values are cut at 65 535 bytes.
fn option_len(value_len: usize) -> usize {
    4 + pad4(value_len.min(u16::MAX as usize))
}

fn put_option(out: &mut Vec<u8>, code: u16, value: &[u8]) {
    let value = &value[..value.len().min(u16::MAX as usize)];
    put_u16(out, code);
    put_u16(out, value.len() as u16);
    out.extend_from_slice(value);
    out.resize(out.len() + pad4(value.len()) - value.len(), 0);
}

/// Starts a block at the end of `out`; returns where it starts, for [`end_block`].
fn begin_block(out: &mut Vec<u8>, block_type: u32) -> usize {
    let start = out.len();
    put_u32(out, block_type);
    put_u32(out, 0); // total length, filled in by end_block
    start
}

/// Ends the option list (if `options` were written) and the block, writing its length
/// at both ends.
fn end_block(out: &mut Vec<u8>, start: usize, options: bool) {
    if options {
        put_u32(out, 0); // opt_endofopt: code 0, length 0
    }
    let total = (out.len() - start + 4) as u32;
    put_u32(out, total);
    out[start + 4..start + 8].copy_from_slice(&total.to_le_bytes());
}

/// Appends a section header block naming the writing application.
pub fn section_header(out: &mut Vec<u8>, userappl: &str) {
    let start = begin_block(out, BLOCK_SHB);
    put_u32(out, BYTE_ORDER_MAGIC);
    put_u16(out, 1);
    put_u16(out, 0);
    out.extend_from_slice(&(-1i64).to_le_bytes()); // section length not given
    put_option(out, opt::SHB_USERAPPL, userappl.as_bytes());
    end_block(out, start, true);
}

/// One captured interface: in netrig-link, one direction of one link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// `if_name`, e.g. "r12-r21 a->b".
    pub name: String,
    /// `if_description`, e.g. the link's shaping.
    pub description: Option<String>,
    pub snaplen: u32,
    pub linktype: u16,
}

/// Appends an interface description block (nanosecond timestamps).
pub fn interface_description(out: &mut Vec<u8>, iface: &Interface) {
    let start = begin_block(out, BLOCK_IDB);
    put_u16(out, iface.linktype);
    put_u16(out, 0);
    put_u32(out, iface.snaplen);
    put_option(out, opt::IF_NAME, iface.name.as_bytes());
    if let Some(d) = &iface.description {
        put_option(out, opt::IF_DESCRIPTION, d.as_bytes());
    }
    put_option(out, opt::IF_TSRESOL, &[TSRESOL_NS]);
    end_block(out, start, true);
}

/// The options an enhanced packet block may carry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacketOptions<'a> {
    pub comment: Option<&'a str>,
    /// `epb_flags`: direction bits ([`FLAG_INBOUND`], [`FLAG_OUTBOUND`]) and others.
    pub flags: Option<u32>,
    /// `epb_dropcount`: packets lost between this one and the one before it.
    pub dropcount: Option<u64>,
}

impl PacketOptions<'_> {
    fn is_empty(&self) -> bool {
        self.comment.is_none() && self.flags.is_none() && self.dropcount.is_none()
    }

    /// The bytes the options take, their end marker included (0 if there are none).
    fn len(&self) -> usize {
        if self.is_empty() {
            return 0;
        }
        self.comment.map_or(0, |c| option_len(c.len()))
            + self.flags.map_or(0, |_| option_len(4))
            + self.dropcount.map_or(0, |_| option_len(8))
            + 4
    }
}

/// The size of the enhanced packet block of a frame of `frame_len` bytes cut to
/// `snaplen`, with `opts`.
pub fn enhanced_packet_len(frame_len: usize, snaplen: u32, opts: &PacketOptions) -> usize {
    EPB_FIXED + pad4(frame_len.min(snaplen as usize)) + opts.len()
}

/// Appends an enhanced packet block: `frame` seen on interface `if_id` at `ts_ns`
/// (nanoseconds since the Unix epoch), cut to `snaplen` bytes (its original length is
/// recorded).
pub fn enhanced_packet(
    out: &mut Vec<u8>,
    if_id: u32,
    ts_ns: u64,
    frame: &[u8],
    snaplen: u32,
    opts: &PacketOptions,
) {
    let original = u32::try_from(frame.len()).unwrap_or(u32::MAX);
    let captured = original.min(snaplen) as usize;
    let start = begin_block(out, BLOCK_EPB);
    put_u32(out, if_id);
    put_u32(out, (ts_ns >> 32) as u32);
    put_u32(out, ts_ns as u32);
    put_u32(out, captured as u32);
    put_u32(out, original);
    out.extend_from_slice(&frame[..captured]);
    out.resize(out.len() + pad4(captured) - captured, 0);
    if let Some(c) = opts.comment {
        put_option(out, opt::COMMENT, c.as_bytes());
    }
    if let Some(f) = opts.flags {
        put_option(out, opt::EPB_FLAGS, &f.to_le_bytes());
    }
    if let Some(d) = opts.dropcount {
        put_option(out, opt::EPB_DROPCOUNT, &d.to_le_bytes());
    }
    end_block(out, start, !opts.is_empty());
}

/// Writes one section: its header and interfaces on creation, then packets. Counts the
/// bytes written so far (headers included). Wrap a file in a `BufWriter`: each packet
/// is one `write_all` of a block built in a reused buffer.
#[derive(Debug)]
pub struct PcapngWriter<W: Write> {
    out: W,
    snaplens: Vec<u32>,
    block: Vec<u8>,
    written: u64,
}

impl<W: Write> PcapngWriter<W> {
    /// Writes the section header and one interface block per interface (interface ids
    /// are their indices). A snaplen of 0 is an `InvalidInput` error.
    pub fn new(mut out: W, userappl: &str, interfaces: &[Interface]) -> io::Result<Self> {
        if interfaces.iter().any(|i| i.snaplen == 0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "pcapng snaplen must be at least 1 byte",
            ));
        }
        let mut block = Vec::with_capacity(4096);
        section_header(&mut block, userappl);
        for i in interfaces {
            interface_description(&mut block, i);
        }
        out.write_all(&block)?;
        Ok(PcapngWriter {
            out,
            snaplens: interfaces.iter().map(|i| i.snaplen).collect(),
            written: block.len() as u64,
            block,
        })
    }

    /// The bytes [`write_packet`](Self::write_packet) would write for this frame.
    pub fn packet_len(&self, if_id: u32, frame_len: usize, opts: &PacketOptions) -> usize {
        let snaplen = self.snaplens.get(if_id as usize).copied().unwrap_or(u32::MAX);
        enhanced_packet_len(frame_len, snaplen, opts)
    }

    /// Appends one frame seen on interface `if_id` at `ts_ns`; returns the bytes
    /// written. An interface this section does not have is an `InvalidInput` error.
    pub fn write_packet(
        &mut self,
        if_id: u32,
        ts_ns: u64,
        frame: &[u8],
        opts: &PacketOptions,
    ) -> io::Result<usize> {
        let Some(&snaplen) = self.snaplens.get(if_id as usize) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("pcapng: no interface {if_id} in this section"),
            ));
        };
        self.block.clear();
        enhanced_packet(&mut self.block, if_id, ts_ns, frame, snaplen, opts);
        self.out.write_all(&self.block)?;
        self.written += self.block.len() as u64;
        Ok(self.block.len())
    }

    /// Bytes written so far, the section's header and interfaces included.
    pub fn written(&self) -> u64 {
        self.written
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// The underlying writer, unflushed.
    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le16(b: &[u8], at: usize) -> u16 {
        u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
    }

    fn le32(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    /// The options of a block whose options start at `at` and which ends at `end`
    /// (before its trailing length): (code, value) pairs, the end marker checked.
    fn options(b: &[u8], mut at: usize, end: usize) -> Vec<(u16, Vec<u8>)> {
        let mut out = vec![];
        loop {
            let (code, len) = (le16(b, at), le16(b, at + 2) as usize);
            if code == opt::END {
                assert_eq!(len, 0);
                assert_eq!(at + 4, end, "the end marker closes the list");
                return out;
            }
            out.push((code, b[at + 4..at + 4 + len].to_vec()));
            at += 4 + pad4(len);
        }
    }

    fn iface(name: &str) -> Interface {
        Interface {
            name: name.into(),
            description: Some("rate 10 Mbit/s".into()),
            snaplen: 100,
            linktype: LINKTYPE_ETHERNET,
        }
    }

    #[test]
    fn section_header_layout() {
        let mut b = vec![];
        section_header(&mut b, "netrig-link 0.1.0");
        assert_eq!(&b[0..4], &[0x0a, 0x0d, 0x0d, 0x0a]);
        let total = le32(&b, 4) as usize;
        assert_eq!(total, b.len());
        assert_eq!(le32(&b, total - 4) as usize, total);
        assert_eq!(le32(&b, 8), 0x1a2b_3c4d);
        assert_eq!(&b[8..12], &[0x4d, 0x3c, 0x2b, 0x1a]);
        assert_eq!((le16(&b, 12), le16(&b, 14)), (1, 0));
        assert_eq!(&b[16..24], &[0xff; 8]);
        let o = options(&b, 24, total - 4);
        assert_eq!(o, vec![(opt::SHB_USERAPPL, b"netrig-link 0.1.0".to_vec())]);
        // "netrig-link 0.1.0" is 17 bytes: padded to 20.
        assert_eq!(total, 24 + 4 + 20 + 4 + 4);
    }

    #[test]
    fn interface_block_layout() {
        let mut b = vec![];
        interface_description(&mut b, &iface("r12-r21 a->b"));
        assert_eq!(le32(&b, 0), 1);
        let total = le32(&b, 4) as usize;
        assert_eq!((total, le32(&b, total - 4) as usize), (b.len(), b.len()));
        assert_eq!((le16(&b, 8), le16(&b, 10), le32(&b, 12)), (1, 0, 100));
        let o = options(&b, 16, total - 4);
        assert_eq!(
            o,
            vec![
                (opt::IF_NAME, b"r12-r21 a->b".to_vec()),
                (opt::IF_DESCRIPTION, b"rate 10 Mbit/s".to_vec()),
                (opt::IF_TSRESOL, vec![9]),
            ]
        );
    }

    #[test]
    fn packet_block_layout_with_every_option() {
        let frame: Vec<u8> = (0..150u8).collect();
        let opts = PacketOptions {
            comment: Some("dropped"),
            flags: Some(FLAG_INBOUND),
            dropcount: Some(3),
        };
        let ts = 1_700_000_000_123_456_789u64;
        let mut b = vec![];
        enhanced_packet(&mut b, 1, ts, &frame, 101, &opts);
        assert_eq!(b.len(), enhanced_packet_len(frame.len(), 101, &opts));
        assert_eq!(le32(&b, 0), 6);
        let total = le32(&b, 4) as usize;
        assert_eq!((total, le32(&b, total - 4) as usize), (b.len(), b.len()));
        assert_eq!(le32(&b, 8), 1);
        assert_eq!(((le32(&b, 12) as u64) << 32) | le32(&b, 16) as u64, ts);
        assert_eq!((le32(&b, 20), le32(&b, 24)), (101, 150));
        assert_eq!(&b[28..129], &frame[..101]);
        assert_eq!(&b[129..132], &[0, 0, 0], "data padded to 4 bytes");
        let o = options(&b, 132, total - 4);
        assert_eq!(
            o,
            vec![
                (opt::COMMENT, b"dropped".to_vec()),
                (opt::EPB_FLAGS, 1u32.to_le_bytes().to_vec()),
                (opt::EPB_DROPCOUNT, 3u64.to_le_bytes().to_vec()),
            ]
        );
    }

    #[test]
    fn a_packet_without_options_has_no_end_marker() {
        let mut b = vec![];
        enhanced_packet(&mut b, 0, 5, &[1, 2, 3, 4], 100, &PacketOptions::default());
        assert_eq!(b.len(), 32 + 4);
        assert_eq!(le32(&b, 4), 36);
        assert_eq!(le32(&b, 32), 36);
    }

    #[test]
    fn the_writer_counts_its_bytes_and_refuses_unknown_interfaces() {
        let mut w = PcapngWriter::new(Vec::new(), "t", &[iface("a"), iface("b")]).unwrap();
        let head = w.written();
        assert_eq!(head as usize, w.get_ref().len());
        let opts = PacketOptions {
            comment: Some("x"),
            ..Default::default()
        };
        let expect = w.packet_len(1, 60, &opts);
        assert_eq!(w.write_packet(1, 0, &[0; 60], &opts).unwrap(), expect);
        assert_eq!(w.written(), head + expect as u64);
        assert_eq!(w.get_ref().len() as u64, w.written());
        let e = w.write_packet(2, 0, &[0; 60], &opts).unwrap_err();
        assert!(e.to_string().contains("no interface 2"), "{e}");
        let zero = Interface {
            snaplen: 0,
            ..iface("a")
        };
        assert!(PcapngWriter::new(Vec::new(), "t", &[zero]).is_err());
    }

    /// tshark reads what the writer wrote: interface names and descriptions, comments,
    /// direction flags and drop counts (the fields research16 section 6 names for tshark
    /// 4.0). Skipped if tshark is not installed.
    #[test]
    fn tshark_reads_interfaces_comments_flags_and_drop_counts() {
        use std::process::{Command, Stdio};
        let installed = Command::new("tshark")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !installed {
            eprintln!("tshark is not installed; skipping");
            return;
        }
        let ifaces = [iface("r12-r21 a->b"), iface("r12-r21 b->a")];
        let mut w = PcapngWriter::new(Vec::new(), "netrig-link test", &ifaces).unwrap();
        let frame = [0u8; 60];
        let t0 = 1_700_000_000_000_000_000u64;
        w.write_packet(
            0,
            t0 + 1,
            &frame,
            &PacketOptions {
                flags: Some(FLAG_OUTBOUND),
                ..Default::default()
            },
        )
        .unwrap();
        let dropped = PacketOptions {
            comment: Some("netrig-link dropped this frame: link down"),
            flags: Some(FLAG_INBOUND),
            dropcount: None,
        };
        w.write_packet(1, t0 + 2, &frame, &dropped).unwrap();
        w.write_packet(
            1,
            t0 + 3,
            &frame,
            &PacketOptions {
                dropcount: Some(7),
                ..Default::default()
            },
        )
        .unwrap();
        let path = std::env::temp_dir().join(format!("netrig-pcapng-test-{}.pcapng", std::process::id()));
        std::fs::write(&path, w.into_inner()).unwrap();
        let out = Command::new("tshark")
            .args(["-n", "-r"])
            .arg(&path)
            .args(["-T", "fields", "-E", "separator=|"])
            .args(["-e", "frame.interface_name", "-e", "frame.interface_description"])
            .args([
                "-e",
                "frame.packet_flags",
                "-e",
                "frame.drop_count",
                "-e",
                "frame.comment",
            ])
            .args(["-e", "frame.time_epoch"])
            .output()
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('|').collect()).collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert_eq!(
            rows[0][..5],
            ["r12-r21 a->b", "rate 10 Mbit/s", "0x00000002", "", ""]
        );
        assert_eq!(
            rows[1][..5],
            [
                "r12-r21 b->a",
                "rate 10 Mbit/s",
                "0x00000001",
                "",
                "netrig-link dropped this frame: link down"
            ]
        );
        assert_eq!(rows[2][3], "7");
        assert_eq!(rows[2][5], "1700000000.000000003", "nanoseconds: {text}");
    }
}
