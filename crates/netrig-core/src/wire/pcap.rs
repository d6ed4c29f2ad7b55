//! The classic libpcap capture file with nanosecond timestamps, as bytes.
//!
//! ```text
//! global header (24 bytes): magic a1b23c4d | major 2 | minor 4 | thiszone 0 | sigfigs 0
//!                           | snaplen | linktype 1 (Ethernet)
//! per packet (16 bytes):    ts_sec | ts_nsec | captured length | original length,
//!                           then the captured bytes
//! ```
//!
//! Every field is little-endian, as libpcap writes it on x86; readers recognise the byte
//! order from the magic. `ts_sec` is 32 bits, so seconds wrap in 2106. The header
//! functions are pure; [`PcapWriter`] frames packets onto any `io::Write` its caller
//! opened (a file in the daemon, a `Vec<u8>` in tests).

use std::io::{self, Write};

/// The nanosecond-resolution variant of the libpcap magic number.
pub const MAGIC_NS: u32 = 0xa1b2_3c4d;
pub const VERSION_MAJOR: u16 = 2;
pub const VERSION_MINOR: u16 = 4;
pub const LINKTYPE_ETHERNET: u32 = 1;
pub const GLOBAL_HEADER_LEN: usize = 24;
pub const RECORD_HEADER_LEN: usize = 16;

const NS_PER_SEC: u64 = 1_000_000_000;

/// Field offsets of the two headers.
mod field {
    pub type Field = core::ops::Range<usize>;

    pub const MAGIC: Field = 0..4;
    pub const VERSION_MAJOR: Field = 4..6;
    pub const VERSION_MINOR: Field = 6..8;
    pub const THISZONE: Field = 8..12;
    pub const SIGFIGS: Field = 12..16;
    pub const SNAPLEN: Field = 16..20;
    pub const LINKTYPE: Field = 20..24;

    pub const TS_SEC: Field = 0..4;
    pub const TS_NSEC: Field = 4..8;
    pub const CAPTURED_LEN: Field = 8..12;
    pub const ORIGINAL_LEN: Field = 12..16;
}

/// The file's global header for Ethernet frames cut to at most `snaplen` bytes.
pub fn global_header(snaplen: u32) -> [u8; GLOBAL_HEADER_LEN] {
    let mut h = [0u8; GLOBAL_HEADER_LEN];
    h[field::MAGIC].copy_from_slice(&MAGIC_NS.to_le_bytes());
    h[field::VERSION_MAJOR].copy_from_slice(&VERSION_MAJOR.to_le_bytes());
    h[field::VERSION_MINOR].copy_from_slice(&VERSION_MINOR.to_le_bytes());
    h[field::THISZONE].copy_from_slice(&0i32.to_le_bytes());
    h[field::SIGFIGS].copy_from_slice(&0u32.to_le_bytes());
    h[field::SNAPLEN].copy_from_slice(&snaplen.to_le_bytes());
    h[field::LINKTYPE].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
    h
}

/// The header in front of one packet's bytes; `ts_ns` is nanoseconds since the Unix epoch.
pub fn record_header(ts_ns: u64, captured_len: u32, original_len: u32) -> [u8; RECORD_HEADER_LEN] {
    let mut h = [0u8; RECORD_HEADER_LEN];
    h[field::TS_SEC].copy_from_slice(&((ts_ns / NS_PER_SEC) as u32).to_le_bytes());
    h[field::TS_NSEC].copy_from_slice(&((ts_ns % NS_PER_SEC) as u32).to_le_bytes());
    h[field::CAPTURED_LEN].copy_from_slice(&captured_len.to_le_bytes());
    h[field::ORIGINAL_LEN].copy_from_slice(&original_len.to_le_bytes());
    h
}

/// Writes a capture: the global header on creation, then one record per frame. Frames
/// longer than the snaplen are cut, and their original length is recorded. Wrap a file
/// in a `BufWriter`: each frame is two `write_all` calls.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    snaplen: u32,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the global header. A snaplen of 0 (which would keep no bytes at all) is an
    /// `InvalidInput` error.
    pub fn new(mut out: W, snaplen: u32) -> io::Result<Self> {
        if snaplen == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "pcap snaplen must be at least 1 byte",
            ));
        }
        out.write_all(&global_header(snaplen))?;
        Ok(PcapWriter { out, snaplen })
    }

    /// Appends one frame seen at `ts_ns` (nanoseconds since the Unix epoch).
    pub fn write(&mut self, ts_ns: u64, frame: &[u8]) -> io::Result<()> {
        let original_len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        let captured_len = original_len.min(self.snaplen);
        self.out
            .write_all(&record_header(ts_ns, captured_len, original_len))?;
        self.out.write_all(&frame[..captured_len as usize])
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
    use std::process::{Command, Stdio};

    fn le32(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    fn le16(b: &[u8], at: usize) -> u16 {
        u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
    }

    /// A minimal Ethernet + IPv4 + UDP frame with `payload` bytes of data (checksums are
    /// not checked by readers that only list packets).
    fn udp_frame(payload: usize) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
        let ip_len = 20 + 8 + payload;
        f.extend_from_slice(&[
            0x45,
            0,
            (ip_len >> 8) as u8,
            ip_len as u8,
            0,
            1,
            0x40,
            0,
            64,
            17,
            0,
            0,
        ]);
        f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&[
            0x13,
            0x88,
            0x13,
            0x89,
            ((8 + payload) >> 8) as u8,
            (8 + payload) as u8,
            0,
            0,
        ]);
        f.extend((0..payload).map(|i| i as u8));
        f
    }

    const TIMES: [u64; 3] = [
        1_700_000_000_000_000_001,
        1_700_000_000_123_456_789,
        1_700_000_001_999_999_999,
    ];

    fn capture(snaplen: u32) -> (Vec<Vec<u8>>, Vec<u8>) {
        let frames = vec![udp_frame(0), udp_frame(100), udp_frame(1000)];
        let mut w = PcapWriter::new(Vec::new(), snaplen).unwrap();
        for (ts, f) in TIMES.iter().zip(&frames) {
            w.write(*ts, f).unwrap();
        }
        (frames, w.into_inner())
    }

    #[test]
    fn global_header_layout() {
        let h = global_header(65535);
        assert_eq!(&h[0..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!((le16(&h, 4), le16(&h, 6)), (2, 4));
        assert_eq!((le32(&h, 8), le32(&h, 12)), (0, 0));
        assert_eq!(le32(&h, 16), 65535);
        assert_eq!(le32(&h, 20), 1);
    }

    #[test]
    fn record_header_splits_nanoseconds() {
        let h = record_header(1_700_000_000_123_456_789, 60, 1514);
        assert_eq!(le32(&h, 0), 1_700_000_000);
        assert_eq!(le32(&h, 4), 123_456_789);
        assert_eq!((le32(&h, 8), le32(&h, 12)), (60, 1514));
        let h = record_header(999_999_999, 1, 1);
        assert_eq!((le32(&h, 0), le32(&h, 4)), (0, 999_999_999));
    }

    #[test]
    fn writer_output_parses_back_with_truncation() {
        let snaplen = 200;
        let (frames, bytes) = capture(snaplen);
        assert_eq!(bytes[..GLOBAL_HEADER_LEN], global_header(snaplen));
        let mut at = GLOBAL_HEADER_LEN;
        for (ts, frame) in TIMES.iter().zip(&frames) {
            let captured = le32(&bytes, at + 8) as usize;
            assert_eq!(
                le32(&bytes, at) as u64 * NS_PER_SEC + le32(&bytes, at + 4) as u64,
                *ts
            );
            assert!(le32(&bytes, at + 4) < 1_000_000_000);
            assert_eq!(captured, frame.len().min(snaplen as usize));
            assert_eq!(le32(&bytes, at + 12) as usize, frame.len());
            at += RECORD_HEADER_LEN;
            assert_eq!(&bytes[at..at + captured], &frame[..captured]);
            at += captured;
        }
        assert_eq!(at, bytes.len());
    }

    #[test]
    fn writer_rejects_a_zero_snaplen() {
        let err = PcapWriter::new(Vec::new(), 0).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    fn installed(tool: &str) -> bool {
        Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    }

    /// Reads the capture with whichever of tcpdump and tshark is installed; skipped if
    /// neither is.
    #[test]
    fn tcpdump_and_tshark_read_the_capture() {
        let tools: Vec<(&str, Vec<&str>)> = vec![
            ("tcpdump", vec!["-nn", "--nano", "-tt", "-r"]),
            ("tshark", vec!["-n", "-t", "e", "-r"]),
        ];
        let tools: Vec<_> = tools.into_iter().filter(|(t, _)| installed(t)).collect();
        if tools.is_empty() {
            eprintln!("neither tcpdump nor tshark is installed; skipping");
            return;
        }
        let (_, bytes) = capture(200);
        let path = std::env::temp_dir().join(format!("netrig-pcap-test-{}.pcap", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        let outputs: Vec<_> = tools
            .iter()
            .map(|(tool, args)| (*tool, Command::new(tool).args(args).arg(&path).output()))
            .collect();
        std::fs::remove_file(&path).unwrap();
        for (tool, output) in outputs {
            let output = output.unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(output.status.success(), "{tool} failed: {stderr}");
            assert_eq!(stdout.lines().count(), 3, "{tool} printed:\n{stdout}\n{stderr}");
            assert!(
                stdout.contains("1700000000.123456789"),
                "{tool} printed:\n{stdout}"
            );
            assert!(
                stdout.contains("1700000001.999999999"),
                "{tool} printed:\n{stdout}"
            );
        }
    }
}
