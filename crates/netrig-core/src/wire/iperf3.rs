//! iperf3's wire formats (as of iperf3 3.12, `src/iperf_api.c`, `iperf_udp.c`).
//!
//! Control connection: a 37-byte cookie, then single signed state bytes in both
//! directions, and JSON documents framed by a 4-byte big-endian length. UDP datagrams
//! carry a 12-byte header (sec, usec, seq; or 16 with a 64-bit seq).

use thiserror::Error;

/// Length of the cookie, including its terminating NUL.
pub const COOKIE_LEN: usize = 37;
const COOKIE_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// The first datagram of a UDP stream, client to server ("9876": 0x36373839 as a
/// little-endian u32, which is what iperf3 writes on x86).
pub const UDP_CONNECT_MSG: [u8; 4] = *b"9876";
/// The server's reply to [`UDP_CONNECT_MSG`] ("6789").
pub const UDP_CONNECT_REPLY: [u8; 4] = *b"6789";

#[derive(Debug, Error, PartialEq, Eq)]
pub enum WireError {
    #[error("unknown control state byte {0}")]
    UnknownState(i8),
    #[error("malformed cookie")]
    BadCookie,
    #[error("JSON document of {len} bytes exceeds the limit of {max}")]
    TooLong { len: usize, max: usize },
    #[error("empty JSON document")]
    Empty,
    #[error("datagram of {0} bytes is shorter than its header")]
    Truncated(usize),
}

/// The control state machine's messages: one signed byte each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i8)]
pub enum State {
    TestStart = 1,
    TestRunning = 2,
    ResultRequest = 3,
    TestEnd = 4,
    StreamBegin = 5,
    StreamRunning = 6,
    StreamEnd = 7,
    AllStreamsEnd = 8,
    ParamExchange = 9,
    CreateStreams = 10,
    ServerTerminate = 11,
    ClientTerminate = 12,
    ExchangeResults = 13,
    DisplayResults = 14,
    IperfStart = 15,
    IperfDone = 16,
    AccessDenied = -1,
    ServerError = -2,
}

impl State {
    pub fn parse(byte: u8) -> Result<State, WireError> {
        use State::*;
        let b = byte as i8;
        Ok(match b {
            1 => TestStart,
            2 => TestRunning,
            3 => ResultRequest,
            4 => TestEnd,
            5 => StreamBegin,
            6 => StreamRunning,
            7 => StreamEnd,
            8 => AllStreamsEnd,
            9 => ParamExchange,
            10 => CreateStreams,
            11 => ServerTerminate,
            12 => ClientTerminate,
            13 => ExchangeResults,
            14 => DisplayResults,
            15 => IperfStart,
            16 => IperfDone,
            -1 => AccessDenied,
            -2 => ServerError,
            other => return Err(WireError::UnknownState(other)),
        })
    }

    pub fn emit(self) -> u8 {
        self as i8 as u8
    }
}

/// A test's identity: 36 characters of base32 and a NUL.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cookie([u8; COOKIE_LEN]);

impl Cookie {
    /// Builds a cookie from 36 random bytes (the caller owns the randomness).
    pub fn from_random(random: &[u8; COOKIE_LEN - 1]) -> Cookie {
        let mut c = [0u8; COOKIE_LEN];
        for (dst, r) in c.iter_mut().zip(random) {
            *dst = COOKIE_ALPHABET[(*r as usize) % COOKIE_ALPHABET.len()];
        }
        Cookie(c)
    }

    /// Accepts any 37 bytes ending in NUL whose other bytes are printable ASCII
    /// (iperf3 itself compares cookies bytewise).
    pub fn parse(bytes: &[u8]) -> Result<Cookie, WireError> {
        if bytes.len() != COOKIE_LEN || bytes[COOKIE_LEN - 1] != 0 {
            return Err(WireError::BadCookie);
        }
        if !bytes[..COOKIE_LEN - 1].iter().all(|b| b.is_ascii_graphic()) {
            return Err(WireError::BadCookie);
        }
        let mut c = [0u8; COOKIE_LEN];
        c.copy_from_slice(bytes);
        Ok(Cookie(c))
    }

    pub fn as_bytes(&self) -> &[u8; COOKIE_LEN] {
        &self.0
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0[..COOKIE_LEN - 1]).unwrap_or("")
    }
}

impl std::fmt::Debug for Cookie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cookie({})", self.as_str())
    }
}

/// Frames a JSON document: 4-byte big-endian length, then the bytes.
pub fn emit_json_frame(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + json.len());
    out.extend_from_slice(&(json.len() as u32).to_be_bytes());
    out.extend_from_slice(json);
    out
}

/// Checks a frame's length prefix against a limit before anything is allocated.
pub fn parse_json_frame_len(prefix: [u8; 4], max: usize) -> Result<usize, WireError> {
    let len = u32::from_be_bytes(prefix) as usize;
    if len == 0 {
        return Err(WireError::Empty);
    }
    if len > max {
        return Err(WireError::TooLong { len, max });
    }
    Ok(len)
}

/// The header iperf3 puts at the front of every UDP datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpHeader {
    pub sec: u32,
    pub usec: u32,
    pub seq: u64,
}

impl UdpHeader {
    pub const LEN_32: usize = 12;
    pub const LEN_64: usize = 16;

    pub fn len(counters_64bit: bool) -> usize {
        if counters_64bit {
            Self::LEN_64
        } else {
            Self::LEN_32
        }
    }

    pub fn parse(buf: &[u8], counters_64bit: bool) -> Result<UdpHeader, WireError> {
        if buf.len() < Self::len(counters_64bit) {
            return Err(WireError::Truncated(buf.len()));
        }
        let sec = u32::from_be_bytes(buf[0..4].try_into().unwrap());
        let usec = u32::from_be_bytes(buf[4..8].try_into().unwrap());
        let seq = if counters_64bit {
            u64::from_be_bytes(buf[8..16].try_into().unwrap())
        } else {
            u32::from_be_bytes(buf[8..12].try_into().unwrap()) as u64
        };
        Ok(UdpHeader { sec, usec, seq })
    }

    /// Writes the header into the front of `buf`, which must be long enough.
    pub fn emit(&self, buf: &mut [u8], counters_64bit: bool) {
        buf[0..4].copy_from_slice(&self.sec.to_be_bytes());
        buf[4..8].copy_from_slice(&self.usec.to_be_bytes());
        if counters_64bit {
            buf[8..16].copy_from_slice(&self.seq.to_be_bytes());
        } else {
            buf[8..12].copy_from_slice(&(self.seq as u32).to_be_bytes());
        }
    }

    /// Send time in nanoseconds.
    pub fn sent_ns(&self) -> u64 {
        self.sec as u64 * 1_000_000_000 + self.usec as u64 * 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_and_unknown_bytes_are_errors() {
        for b in [1u8, 2, 4, 9, 10, 13, 14, 16, 0xff, 0xfe] {
            assert_eq!(State::parse(b).unwrap().emit(), b);
        }
        assert_eq!(State::parse(0), Err(WireError::UnknownState(0)));
        assert_eq!(State::parse(99), Err(WireError::UnknownState(99)));
        assert_eq!(State::AccessDenied.emit(), 0xff);
    }

    #[test]
    fn cookies_are_base32_and_nul_terminated() {
        let c = Cookie::from_random(&[7u8; 36]);
        assert_eq!(c.as_bytes()[36], 0);
        assert!(c.as_str().bytes().all(|b| COOKIE_ALPHABET.contains(&b)));
        assert_eq!(Cookie::parse(c.as_bytes()).unwrap(), c);
        assert_eq!(Cookie::parse(&[b'a'; 37]), Err(WireError::BadCookie));
        assert_eq!(Cookie::parse(&[0u8; 37]), Err(WireError::BadCookie));
        assert_eq!(Cookie::parse(b"short"), Err(WireError::BadCookie));
    }

    #[test]
    fn json_frames_are_length_prefixed_and_bounded() {
        let f = emit_json_frame(b"{\"a\":1}");
        assert_eq!(&f[..4], &[0, 0, 0, 7]);
        assert_eq!(parse_json_frame_len([0, 0, 0, 7], 100), Ok(7));
        assert_eq!(
            parse_json_frame_len([0xff, 0xff, 0xff, 0xff], 100),
            Err(WireError::TooLong {
                len: u32::MAX as usize,
                max: 100
            })
        );
        assert_eq!(parse_json_frame_len([0; 4], 100), Err(WireError::Empty));
    }

    #[test]
    fn udp_header_layouts() {
        let h = UdpHeader {
            sec: 1_700_000_000,
            usec: 123_456,
            seq: 42,
        };
        let mut b = [0u8; 16];
        h.emit(&mut b, false);
        assert_eq!(&b[8..12], &[0, 0, 0, 42]);
        assert_eq!(UdpHeader::parse(&b, false).unwrap(), h);
        h.emit(&mut b, true);
        assert_eq!(&b[8..16], &[0, 0, 0, 0, 0, 0, 0, 42]);
        assert_eq!(UdpHeader::parse(&b, true).unwrap(), h);
        assert_eq!(UdpHeader::parse(&b[..11], false), Err(WireError::Truncated(11)));
    }
}
