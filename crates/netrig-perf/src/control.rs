//! The control connection: state bytes and framed JSON, every read bounded in size and
//! time, so a peer can neither wedge nor flood us.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Duration;

use netrig_core::wire::iperf3::{emit_json_frame, parse_json_frame_len, State};
use serde_json::Value;

use crate::error::{PerfError, Result};

pub struct Control {
    pub sock: TcpStream,
    /// How long the client waits for each setup step (None: the default).
    pub setup_timeout: Option<Duration>,
}

fn io_context(e: std::io::Error, what: &str) -> PerfError {
    match e.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => PerfError::Timeout(format!("waiting for {what}")),
        ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset | ErrorKind::BrokenPipe => {
            PerfError::PeerClosed(format!("while waiting for {what}"))
        }
        _ => PerfError::Io(e),
    }
}

impl Control {
    pub fn new(sock: TcpStream) -> Control {
        let _ = sock.set_nodelay(true);
        Control {
            sock,
            setup_timeout: None,
        }
    }

    pub fn send_state(&mut self, state: State) -> Result<()> {
        crate::debug::line(|| format!("control: sending {state:?}"));
        self.sock
            .write_all(&[state.emit()])
            .map_err(|e| io_context(e, "sending a state"))
    }

    /// Reads one state byte, waiting at most `timeout`.
    pub fn recv_state(&mut self, timeout: Duration, what: &str) -> Result<State> {
        let state = State::parse(self.recv_byte(timeout, what)?)?;
        crate::debug::line(|| format!("control: received {state:?}"));
        Ok(state)
    }

    /// Reads one raw byte, for a state netrig adds to iperf3's (see [`crate::auth`]).
    pub fn recv_byte(&mut self, timeout: Duration, what: &str) -> Result<u8> {
        self.sock.set_read_timeout(Some(timeout))?;
        let mut b = [0u8; 1];
        match self.sock.read(&mut b) {
            Ok(0) => Err(PerfError::PeerClosed(format!("while waiting for {what}"))),
            Ok(_) => Ok(b[0]),
            Err(e) => Err(io_context(e, what)),
        }
    }

    /// A state byte if one arrives within `timeout`; None if none did.
    pub fn poll_state(&mut self, timeout: Duration) -> Result<Option<State>> {
        let mut pfd = libc::pollfd {
            fd: self.sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: pfd is valid for the call.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                return Ok(None);
            }
            return Err(e.into());
        }
        if r == 0 {
            return Ok(None);
        }
        self.recv_state(Duration::from_secs(1), "a control message")
            .map(Some)
    }

    pub fn send_json(&mut self, v: &Value) -> Result<()> {
        let body = serde_json::to_vec(v).map_err(|e| PerfError::Protocol(e.to_string()))?;
        self.sock
            .write_all(&emit_json_frame(&body))
            .map_err(|e| io_context(e, "sending JSON"))
    }

    /// Frames and sends a JSON document's exact bytes (say, ones a proof covers).
    pub fn send_frame(&mut self, body: &[u8]) -> Result<()> {
        self.sock
            .write_all(&emit_json_frame(body))
            .map_err(|e| io_context(e, "sending JSON"))
    }

    /// Reads one framed JSON document of at most `max` bytes within `timeout`.
    pub fn recv_json(&mut self, max: usize, timeout: Duration, what: &str) -> Result<Vec<u8>> {
        self.sock.set_read_timeout(Some(timeout))?;
        let mut prefix = [0u8; 4];
        self.sock
            .read_exact(&mut prefix)
            .map_err(|e| io_context(e, what))?;
        let len = parse_json_frame_len(prefix, max)?;
        let mut body = vec![0u8; len];
        self.sock.read_exact(&mut body).map_err(|e| io_context(e, what))?;
        Ok(body)
    }

    /// SERVER_ERROR as iperf3 sends it: the state, then i_errno and errno as 32-bit
    /// big-endian integers; then netrig's words as an extra framed JSON document
    /// (iperf3 clients stop reading before it).
    pub fn send_error(&mut self, ierrno: i32, message: &str) -> Result<()> {
        let mut out = vec![State::ServerError.emit()];
        out.extend_from_slice(&ierrno.to_be_bytes());
        out.extend_from_slice(&0i32.to_be_bytes());
        let doc = serde_json::json!({ "netrig_error": message });
        out.extend_from_slice(&emit_json_frame(doc.to_string().as_bytes()));
        self.sock
            .write_all(&out)
            .map_err(|e| io_context(e, "sending an error"))
    }

    /// Reads what follows a SERVER_ERROR state and turns it into words.
    pub fn read_error(&mut self) -> PerfError {
        let _ = self.sock.set_read_timeout(Some(Duration::from_secs(2)));
        let mut ints = [0u8; 8];
        if self.sock.read_exact(&mut ints).is_err() {
            return PerfError::Server("the server reported an error".into());
        }
        let code = i32::from_be_bytes(ints[0..4].try_into().unwrap());
        let errno = i32::from_be_bytes(ints[4..8].try_into().unwrap());
        if let Ok(body) = self.recv_json(64 * 1024, Duration::from_millis(500), "error text") {
            if let Ok(v) = serde_json::from_slice::<Value>(&body) {
                if let Some(m) = v.get("netrig_error").and_then(Value::as_str) {
                    if code == crate::error::ierr::IEAUTHTEST {
                        // The server's words already say "authentication failed: ".
                        let m = m.strip_prefix("authentication failed: ").unwrap_or(m);
                        return PerfError::Auth(m.to_string());
                    }
                    return PerfError::Server(m.to_string());
                }
            }
        }
        let mut text = crate::error::ierr::describe(code);
        if errno != 0 {
            text.push_str(&format!(": {}", std::io::Error::from_raw_os_error(errno)));
        }
        if code == crate::error::ierr::IEAUTHTEST {
            return PerfError::Auth(text);
        }
        PerfError::Server(text)
    }
}
