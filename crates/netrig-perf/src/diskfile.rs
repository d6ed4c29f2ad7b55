//! `-F/--file NAME`: a TCP stream that sends a file's bytes instead of generated ones,
//! or writes the bytes it receives to a file, as iperf3's `diskfile_send`/`diskfile_recv`.
//!
//! The sender stops at the file's end (and, on a client, so does the test), after the
//! kernel has every byte acknowledged, so a receiver that drains its socket at the end
//! of the test writes the whole file. The receiver truncates the file first, as iperf3
//! does. One TCP stream only: iperf3 would have every stream send the whole file and
//! every receiver write into the same one, which is never what a person wants.

use std::fs::File;
use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::{RunControl, Stream, POLL};
use crate::error::{PerfError, Result};
use crate::sys::{self, TcpInfo};

/// How long a sender at the file's end waits for its last bytes to be acknowledged.
const ACK_WAIT: Duration = Duration::from_secs(10);
/// How long a receiver keeps reading after the test ended, while bytes still come.
const DRAIN_IDLE: Duration = Duration::from_millis(300);
const DRAIN_MAX: Duration = Duration::from_secs(5);

/// Opens the file a sender reads.
pub fn open_source(path: &Path) -> Result<File> {
    File::open(path).map_err(|e| PerfError::Config(format!("-F {}: cannot read it: {e}", path.display())))
}

/// Creates (truncates) the file a receiver writes.
pub fn open_sink(path: &Path) -> Result<File> {
    File::create(path).map_err(|e| PerfError::Config(format!("-F {}: cannot write it: {e}", path.display())))
}

fn waiting(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

/// Sends the file's bytes, a block of up to `len` at a time, within the run's budget.
pub fn send(stream: Arc<Stream>, mut sock: TcpStream, ctl: Arc<RunControl>, len: usize, mut file: File) {
    let result = (|| -> io::Result<()> {
        sys::set_timeouts(sock.as_raw_fd(), POLL)?;
        let mut buf = vec![0u8; len.max(1)];
        let mut total = 0u64;
        loop {
            if ctl.stopped() {
                return Ok(());
            }
            // Read, then claim what was read: a short read (a pipe) must not use up
            // the budget for bytes that were never sent.
            let got = file.read(&mut buf)?;
            let n = if got == 0 { 0 } else { ctl.claim(got) };
            if n == 0 {
                crate::debug::line(|| format!("-F: end of file or of the budget after {total} bytes"));
                wait_acknowledged(&sock, &ctl);
                return Ok(());
            }
            total += n as u64;
            let mut off = 0;
            while off < n {
                match sock.write(&buf[off..n]) {
                    Ok(0) => return Err(io::Error::new(ErrorKind::WriteZero, "peer closed")),
                    Ok(k) => {
                        off += k;
                        stream.bytes.fetch_add(k as u64, Relaxed);
                    }
                    Err(e) if waiting(&e) => {
                        if ctl.stopped() {
                            return Ok(());
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
            stream.blocks.fetch_add(1, Relaxed);
        }
    })();
    finish(&stream, result);
}

/// Waits (bounded) until the peer has acknowledged every byte sent.
fn wait_acknowledged(sock: &TcpStream, ctl: &RunControl) {
    let until = sys::monotonic_ns() + ACK_WAIT.as_nanos() as u64;
    while sys::monotonic_ns() < until && !ctl.stopped() {
        match TcpInfo::of(sock.as_raw_fd()) {
            Some(i) if i.unacked > 0 => std::thread::sleep(Duration::from_millis(2)),
            _ => return,
        }
    }
}

/// Receives into the file; after the test ends, keeps reading while bytes still come.
pub fn recv(stream: Arc<Stream>, mut sock: TcpStream, ctl: Arc<RunControl>, len: usize, mut file: File) {
    let result = (|| -> io::Result<()> {
        sys::set_timeouts(sock.as_raw_fd(), POLL)?;
        let mut buf = vec![0u8; len.max(1)];
        let mut take = |n: usize, buf: &[u8]| -> io::Result<()> {
            file.write_all(&buf[..n])?;
            stream.bytes.fetch_add(n as u64, Relaxed);
            stream.blocks.fetch_add(1, Relaxed);
            Ok(())
        };
        while !ctl.stopped() {
            match sock.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => take(n, &buf)?,
                Err(e) if waiting(&e) => {}
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        sock.set_read_timeout(Some(DRAIN_IDLE))?;
        let until = sys::monotonic_ns() + DRAIN_MAX.as_nanos() as u64;
        while sys::monotonic_ns() < until {
            match sock.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => take(n, &buf)?,
            }
        }
        Ok(())
    })();
    finish(&stream, result);
}

fn finish(stream: &Stream, result: io::Result<()>) {
    if let Err(e) = result {
        *stream.error.lock().unwrap() = Some(format!("-F: {e}"));
    }
    stream.finished.store(true, Relaxed);
}

/// iperf3's report of a `-F` stream at the end of a test: the bytes this side moved
/// out of the file's size, rendered as the line
/// "        Sent 2.86 MBytes / 2.86 MBytes (100%) of NAME" and the stream's `"diskfile"`
/// JSON object (rendered by the output module).
#[derive(Debug, Clone, PartialEq)]
pub struct DiskfileReport {
    pub filename: String,
    /// The file's size now (0 if it cannot be read).
    pub size: u64,
    pub sent: u64,
    pub received: u64,
    pub local_sender: bool,
}

impl DiskfileReport {
    /// What this side moved: sent if it sends, else received.
    pub fn ours(&self) -> u64 {
        if self.local_sender {
            self.sent
        } else {
            self.received
        }
    }

    /// `bytes` as a whole percentage of the file's size (iperf3 truncates; 100 for an
    /// empty file).
    pub fn percent(&self, bytes: u64) -> i64 {
        if self.size > 0 {
            (bytes as f64 / self.size as f64 * 100.0) as i64
        } else {
            100
        }
    }
}

/// The `-F` report of the file at `path`, its size read now.
pub fn summary(path: &Path, local_sender: bool, sent: u64, received: u64) -> DiskfileReport {
    DiskfileReport {
        filename: path.display().to_string(),
        size: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        sent,
        received,
        local_sender,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_reads_like_iperf3() {
        let p = std::env::temp_dir().join(format!("netrig-diskfile-{}", std::process::id()));
        std::fs::write(&p, vec![0u8; 2048]).unwrap();
        let r = summary(&p, true, 1024, 1000);
        assert_eq!(
            (r.size, r.ours(), r.percent(r.sent), r.percent(r.received)),
            (2048, 1024, 50, 48)
        );
        let _ = std::fs::remove_file(&p);
    }
}
