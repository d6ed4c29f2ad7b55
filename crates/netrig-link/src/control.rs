//! The control socket: a Unix stream socket speaking JSON lines. Each request line
//! gets one reply line; subscribers also get every stats line. Requests:
//!
//! ```text
//! {"cmd": "stats"}                                      counters, queues, specs, lateness
//! {"cmd": "subscribe"}                                  stream the stats lines
//! {"cmd": "set", "link": L, "dir": "a_to_b"|"b_to_a"|"both", "spec": {...},
//!  "version": V}                                        live change: the spec replaces
//!                                                       the direction's whole spec
//! {"cmd": "set", "link": L, "specs": {"a_to_b": {...}, "b_to_a": {...}}, "version": V}
//!                                                       both at once, each its own
//! {"cmd": "down", "link": L} / {"cmd": "up", "link": L}
//! {"cmd": "pcap", "link": L, "dir": D, "path": P|null}  start / stop a classic pcap of
//!                                                       one direction's deliveries
//! {"cmd": "capture_start", "link": L, "dir": "a_to_b"|"b_to_a"|"both", "path": P,
//!  "snaplen": 262144, "bpf": [[code, jt, jf, k], ...]|null, "drops": true,
//!  "file_size": N|null, "files": 1}                     a pcapng capture (see `capture`);
//!                                                       several may run, to distinct paths
//! {"cmd": "capture_stop", "link": L, "path": P|absent}  flush and close it (the link's
//!                                                       only one, or the one to P)
//! {"cmd": "shutdown"}
//! ```

use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use crate::capture::CaptureRequest;

const MAX_LINE: usize = 1 << 20;

#[derive(Debug, Deserialize)]
#[serde(tag = "cmd", rename_all = "lowercase", deny_unknown_fields)]
enum Wire {
    Stats,
    Subscribe,
    Set {
        link: String,
        #[serde(default)]
        dir: Option<String>,
        #[serde(default)]
        spec: Option<Value>,
        #[serde(default)]
        specs: Option<Value>,
        #[serde(default)]
        version: Option<u32>,
    },
    Down {
        link: String,
    },
    Up {
        link: String,
    },
    Pcap {
        link: String,
        dir: String,
        #[serde(default)]
        path: Option<String>,
    },
    #[serde(rename = "capture_start")]
    CaptureStart(CaptureRequest),
    #[serde(rename = "capture_stop")]
    CaptureStop {
        link: String,
        #[serde(default)]
        path: Option<String>,
    },
    Shutdown,
}

#[derive(Debug)]
pub enum Request {
    Stats,
    Subscribe,
    /// New specs by direction (0: a_to_b, 1: b_to_a), each replacing the whole spec;
    /// all are checked before any is applied.
    Set {
        link: String,
        specs: Vec<(usize, Value)>,
    },
    Up {
        link: String,
        up: bool,
    },
    Pcap {
        link: String,
        dir: String,
        path: Option<String>,
    },
    CaptureStart(CaptureRequest),
    /// The capture writing to `path`, or the link's only one.
    CaptureStop {
        link: String,
        path: Option<String>,
    },
    Shutdown,
}

pub fn parse_request(line: &str) -> Result<Request, String> {
    let w: Wire = serde_json::from_str(line).map_err(|e| format!("bad request: {e}"))?;
    Ok(match w {
        Wire::Stats => Request::Stats,
        Wire::Subscribe => Request::Subscribe,
        Wire::Set {
            link,
            dir,
            spec,
            specs,
            version,
        } => {
            crate::config::check_version(version).map_err(|e| format!("bad request: {e}"))?;
            let specs = match (spec, specs, dir.as_deref()) {
                (Some(s), None, None | Some("both")) => vec![(0, s.clone()), (1, s)],
                (Some(s), None, Some(d)) => match crate::config::dir_index(d) {
                    Some(i) => vec![(i, s)],
                    None => return Err(format!("bad request: dir: '{d}' is not a_to_b, b_to_a or both")),
                },
                (None, Some(Value::Object(m)), None) => {
                    let mut out = vec![];
                    for (d, s) in m {
                        match crate::config::dir_index(&d) {
                            Some(i) => out.push((i, s)),
                            None => return Err(format!("bad request: specs: '{d}' is not a_to_b or b_to_a")),
                        }
                    }
                    out
                }
                _ => return Err("bad request: give spec (with dir), or specs by direction".into()),
            };
            if specs.iter().any(|(_, s)| !s.is_object()) {
                return Err("bad request: spec must be an object".into());
            }
            Request::Set { link, specs }
        }
        Wire::Down { link } => Request::Up { link, up: false },
        Wire::Up { link } => Request::Up { link, up: true },
        Wire::Pcap { link, dir, path } => Request::Pcap { link, dir, path },
        Wire::CaptureStart(c) => Request::CaptureStart(c),
        Wire::CaptureStop { link, path } => Request::CaptureStop { link, path },
        Wire::Shutdown => Request::Shutdown,
    })
}

/// Takes every complete line out of a client's received bytes and parses each as a
/// request (blank lines are skipped); what follows the last newline stays for the next
/// read, unless it is longer than a request may be. Pure, so it can be fuzzed.
pub fn take_requests(buf: &mut Vec<u8>) -> Vec<Result<Request, String>> {
    let mut out = vec![];
    let mut start = 0;
    while let Some(n) = buf[start..].iter().position(|&b| b == b'\n') {
        let line = &buf[start..start + n];
        start += n + 1;
        if line.len() > MAX_LINE {
            out.push(Err(format!("request longer than {MAX_LINE} bytes")));
            continue;
        }
        let text = String::from_utf8_lossy(line);
        let text = text.trim();
        if !text.is_empty() {
            out.push(parse_request(text));
        }
    }
    buf.drain(..start);
    if buf.len() > MAX_LINE {
        out.push(Err(format!("request longer than {MAX_LINE} bytes")));
        buf.clear();
    }
    out
}

struct Client {
    stream: UnixStream,
    buf: Vec<u8>,
    subscribed: bool,
    dead: bool,
}

pub struct Control {
    listener: UnixListener,
    path: PathBuf,
    clients: Vec<Client>,
}

impl Control {
    pub fn bind(path: &str) -> io::Result<Control> {
        let p = PathBuf::from(path);
        if p.exists() {
            // A stale socket of a dead daemon: refuse a live one.
            if UnixStream::connect(&p).is_ok() {
                return Err(io::Error::new(
                    ErrorKind::AddrInUse,
                    format!("{path}: another daemon is listening"),
                ));
            }
            std::fs::remove_file(&p)?;
        }
        let listener =
            UnixListener::bind(&p).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
        listener.set_nonblocking(true)?;
        Ok(Control {
            listener,
            path: p,
            clients: vec![],
        })
    }

    pub fn poll_fds(&self) -> Vec<libc::pollfd> {
        std::iter::once(self.listener.as_raw_fd())
            .chain(self.clients.iter().map(|c| c.stream.as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect()
    }

    /// Accepts new clients and returns every complete request line received.
    pub fn poll_requests(&mut self) -> Vec<(usize, Result<Request, String>)> {
        while let Ok((s, _)) = self.listener.accept() {
            if s.set_nonblocking(true).is_ok() {
                self.clients.push(Client {
                    stream: s,
                    buf: vec![],
                    subscribed: false,
                    dead: false,
                });
            }
        }
        let mut out = vec![];
        for (i, c) in self.clients.iter_mut().enumerate() {
            let mut chunk = [0u8; 4096];
            loop {
                match c.stream.read(&mut chunk) {
                    Ok(0) => {
                        c.dead = true;
                        break;
                    }
                    Ok(n) => {
                        c.buf.extend_from_slice(&chunk[..n]);
                        // The rest waits in the socket: a client holds one request's
                        // worth of our memory, however fast it writes.
                        if c.buf.len() > MAX_LINE {
                            break;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => {
                        c.dead = true;
                        break;
                    }
                }
            }
            out.extend(take_requests(&mut c.buf).into_iter().map(|r| (i, r)));
        }
        out
    }

    fn send(c: &mut Client, line: &str) {
        if c.dead {
            return;
        }
        // A client that does not read its replies is dropped rather than waited for.
        let _ = c.stream.set_nonblocking(false);
        let _ = c
            .stream
            .set_write_timeout(Some(std::time::Duration::from_millis(100)));
        if c.stream
            .write_all(line.as_bytes())
            .and_then(|_| c.stream.write_all(b"\n"))
            .is_err()
        {
            c.dead = true;
        }
        let _ = c.stream.set_nonblocking(true);
    }

    pub fn reply(&mut self, client: usize, v: &Value) {
        if let Some(c) = self.clients.get_mut(client) {
            Self::send(c, &v.to_string());
        }
    }

    pub fn subscribe(&mut self, client: usize) {
        if let Some(c) = self.clients.get_mut(client) {
            c.subscribed = true;
        }
    }

    pub fn broadcast(&mut self, lines: &[String]) {
        for c in self.clients.iter_mut().filter(|c| c.subscribed) {
            for l in lines {
                Self::send(c, l);
            }
        }
        self.clients.retain(|c| !c.dead);
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_taken_whole_and_the_rest_waits() {
        let mut buf = b"{\"cmd\":\"stats\"}\n\n  \r\nnot json\n{\"cmd\":".to_vec();
        let got = take_requests(&mut buf);
        assert!(matches!(got[..], [Ok(Request::Stats), Err(_)]), "{got:?}");
        assert_eq!(buf, b"{\"cmd\":");
        buf.extend(b"\"shutdown\"}\n");
        assert!(matches!(take_requests(&mut buf)[..], [Ok(Request::Shutdown)]));
        assert!(buf.is_empty());
        // A megabyte of empty lines is one pass, not a million shifts of the buffer.
        let mut buf = vec![b'\n'; MAX_LINE];
        assert!(take_requests(&mut buf).is_empty() && buf.is_empty());
        let mut buf = vec![b' '; MAX_LINE + 1];
        let got = take_requests(&mut buf);
        assert!(got[0].as_ref().unwrap_err().contains("longer than"));
        assert!(buf.is_empty());
    }

    #[test]
    fn a_flood_of_empty_lines_leaves_the_daemon_its_loop() {
        // 8 MiB of newlines from one client: each poll takes at most a request's worth
        // and cuts it in one pass (it was read whole and shifted once per line: over
        // 60 s in one poll_requests, while every link waited).
        let path = format!("/tmp/netrig-link-ctl-test-{}.sock", std::process::id());
        let mut c = Control::bind(&path).unwrap();
        let mut s = UnixStream::connect(&path).unwrap();
        let writer = std::thread::spawn(move || {
            let _ = s.write_all(&vec![b'\n'; 8 << 20]);
        });
        let t0 = std::time::Instant::now();
        let mut slowest = std::time::Duration::ZERO;
        while !writer.is_finished() && t0.elapsed().as_secs() < 60 {
            let t = std::time::Instant::now();
            assert!(c.poll_requests().is_empty());
            slowest = slowest.max(t.elapsed());
        }
        assert!(writer.is_finished(), "8 MiB not taken in 60 s");
        assert!(slowest.as_secs_f64() < 5.0, "one poll took {slowest:?}");
        drop(c);
    }

    #[test]
    fn requests_parse_and_mistakes_are_named() {
        assert!(matches!(parse_request(r#"{"cmd":"stats"}"#), Ok(Request::Stats)));
        assert!(matches!(
            parse_request(r#"{"cmd":"down","link":"l1"}"#),
            Ok(Request::Up { up: false, .. })
        ));
        assert!(matches!(
            parse_request(r#"{"cmd":"set","link":"l1","spec":{"delay_ns":5}}"#),
            Ok(Request::Set { .. })
        ));
        assert!(parse_request(r#"{"cmd":"warp"}"#).unwrap_err().contains("warp"));
        match parse_request(r#"{"cmd":"set","link":"l1","specs":{"b_to_a":{},"a_to_b":{"delay_ns":5}}}"#) {
            Ok(Request::Set { specs, .. }) => {
                let mut dirs: Vec<usize> = specs.iter().map(|(d, _)| *d).collect();
                dirs.sort();
                assert_eq!(dirs, [0, 1]);
            }
            other => panic!("{other:?}"),
        }
        match parse_request(r#"{"cmd":"set","link":"l1","dir":"b_to_a","spec":{}}"#) {
            Ok(Request::Set { specs, .. }) => assert_eq!(specs.len(), 1),
            other => panic!("{other:?}"),
        }
        for bad in [
            r#"{"cmd":"set","link":"l1","specs":{"up":{}}}"#,
            r#"{"cmd":"set","link":"l1","dir":"up","spec":{}}"#,
            r#"{"cmd":"set","link":"l1"}"#,
            r#"{"cmd":"set","link":"l1","spec":{},"version":99}"#,
        ] {
            assert!(
                parse_request(bad).unwrap_err().starts_with("bad request"),
                "{bad}"
            );
        }
        assert!(parse_request(r#"{"cmd":"set","link":"l1","spec":3}"#)
            .unwrap_err()
            .contains("object"));
        assert!(parse_request("not json").unwrap_err().starts_with("bad request"));
        assert!(parse_request(r#"{"cmd":"down"}"#).unwrap_err().contains("link"));
        match parse_request(r#"{"cmd":"capture_start","link":"l1","path":"/tmp/c.pcapng","bpf":[[6,0,0,1]]}"#)
        {
            Ok(Request::CaptureStart(c)) => {
                assert_eq!(
                    (c.link.as_str(), c.dir.as_str(), c.snaplen),
                    ("l1", "both", 262_144)
                );
                assert_eq!(c.bpf, Some(vec![[6, 0, 0, 1]]));
            }
            other => panic!("{other:?}"),
        }
        assert!(
            parse_request(r#"{"cmd":"capture_start","link":"l1","path":"p","snap":1}"#)
                .unwrap_err()
                .contains("snap")
        );
        assert!(matches!(
            parse_request(r#"{"cmd":"capture_stop","link":"l1"}"#),
            Ok(Request::CaptureStop { .. })
        ));
    }
}
