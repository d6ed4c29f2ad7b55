//! netrig's own latency formats (netrig-only; iperf3 peers never see them).
//!
//! A UDP probe datagram (request and reply share one layout, padded to the chosen size):
//!
//! ```text
//! 0      4    5    6      8        16              24              32              40
//! | NRPB | v  |kind| 0    |  seq   | client_send_ns| server_recv_ns| server_send_ns|
//! ```
//!
//! A request/response transaction header on TCP (16 bytes): `NRRQ`, version, three zero
//! bytes, then the number of response bytes wanted (u64). All integers big-endian;
//! timestamps are CLOCK_REALTIME nanoseconds, so one-way delays are exact when both ends
//! share a clock (namespaces on one machine).

use thiserror::Error;

pub const PROBE_MAGIC: [u8; 4] = *b"NRPB";
pub const RR_MAGIC: [u8; 4] = *b"NRRQ";
pub const VERSION: u8 = 1;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ProbeError {
    #[error("datagram of {0} bytes is shorter than a probe header")]
    Truncated(usize),
    #[error("not a netrig probe (bad magic)")]
    BadMagic,
    #[error("probe version {0} is not supported (this is version {VERSION})")]
    Version(u8),
    #[error("unknown probe kind {0}")]
    Kind(u8),
    #[error("response of {0} bytes exceeds the limit of {1}")]
    TooLarge(u64, u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeKind {
    Request = 1,
    Reply = 2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbePacket {
    pub kind: ProbeKind,
    pub seq: u64,
    pub client_send_ns: u64,
    pub server_recv_ns: u64,
    pub server_send_ns: u64,
}

impl ProbePacket {
    pub const LEN: usize = 40;

    pub fn parse(buf: &[u8]) -> Result<ProbePacket, ProbeError> {
        if buf.len() < Self::LEN {
            return Err(ProbeError::Truncated(buf.len()));
        }
        if buf[0..4] != PROBE_MAGIC {
            return Err(ProbeError::BadMagic);
        }
        if buf[4] != VERSION {
            return Err(ProbeError::Version(buf[4]));
        }
        let kind = match buf[5] {
            1 => ProbeKind::Request,
            2 => ProbeKind::Reply,
            k => return Err(ProbeError::Kind(k)),
        };
        let u64_at = |o: usize| u64::from_be_bytes(buf[o..o + 8].try_into().unwrap());
        Ok(ProbePacket {
            kind,
            seq: u64_at(8),
            client_send_ns: u64_at(16),
            server_recv_ns: u64_at(24),
            server_send_ns: u64_at(32),
        })
    }

    /// Writes the header into the front of `buf` (at least [`Self::LEN`] bytes).
    pub fn emit(&self, buf: &mut [u8]) {
        buf[0..4].copy_from_slice(&PROBE_MAGIC);
        buf[4] = VERSION;
        buf[5] = self.kind as u8;
        buf[6..8].fill(0);
        buf[8..16].copy_from_slice(&self.seq.to_be_bytes());
        buf[16..24].copy_from_slice(&self.client_send_ns.to_be_bytes());
        buf[24..32].copy_from_slice(&self.server_recv_ns.to_be_bytes());
        buf[32..40].copy_from_slice(&self.server_send_ns.to_be_bytes());
    }
}

/// A request/response transaction's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RrRequest {
    pub response_len: u64,
}

impl RrRequest {
    pub const LEN: usize = 16;

    pub fn parse(buf: &[u8], max_response: u64) -> Result<RrRequest, ProbeError> {
        if buf.len() < Self::LEN {
            return Err(ProbeError::Truncated(buf.len()));
        }
        if buf[0..4] != RR_MAGIC {
            return Err(ProbeError::BadMagic);
        }
        if buf[4] != VERSION {
            return Err(ProbeError::Version(buf[4]));
        }
        let response_len = u64::from_be_bytes(buf[8..16].try_into().unwrap());
        if response_len > max_response {
            return Err(ProbeError::TooLarge(response_len, max_response));
        }
        Ok(RrRequest { response_len })
    }

    pub fn emit(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..4].copy_from_slice(&RR_MAGIC);
        b[4] = VERSION;
        b[8..16].copy_from_slice(&self.response_len.to_be_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_round_trip_and_rejections() {
        let p = ProbePacket {
            kind: ProbeKind::Reply,
            seq: 9,
            client_send_ns: 1,
            server_recv_ns: 2,
            server_send_ns: 3,
        };
        let mut b = [0u8; 64];
        p.emit(&mut b);
        assert_eq!(ProbePacket::parse(&b).unwrap(), p);
        assert_eq!(ProbePacket::parse(&b[..39]), Err(ProbeError::Truncated(39)));
        let mut bad = b;
        bad[0] = b'X';
        assert_eq!(ProbePacket::parse(&bad), Err(ProbeError::BadMagic));
        let mut bad = b;
        bad[4] = 7;
        assert_eq!(ProbePacket::parse(&bad), Err(ProbeError::Version(7)));
        let mut bad = b;
        bad[5] = 3;
        assert_eq!(ProbePacket::parse(&bad), Err(ProbeError::Kind(3)));
    }

    #[test]
    fn rr_request_is_bounded() {
        let r = RrRequest {
            response_len: 100_000,
        };
        assert_eq!(RrRequest::parse(&r.emit(), 1 << 20).unwrap(), r);
        assert_eq!(
            RrRequest::parse(&r.emit(), 1000),
            Err(ProbeError::TooLarge(100_000, 1000))
        );
    }
}
