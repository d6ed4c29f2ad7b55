//! What can go wrong in a test, in words a person can act on.

use std::io;

use netrig_core::iperf3::ParamError;
use netrig_core::wire::iperf3::WireError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum PerfError {
    #[error("cannot resolve host '{0}'")]
    Resolve(String),
    #[error("unable to connect to server {addr}: {source}")]
    Connect { addr: String, source: io::Error },
    #[error("the server is busy running a test; try again later")]
    Busy,
    #[error("the server refused the test: {0}")]
    Server(String),
    #[error("authentication failed: {0}")]
    Auth(String),
    #[error("control connection: {0}")]
    Protocol(String),
    #[error("timed out {0}")]
    Timeout(String),
    #[error("the peer closed the control connection {0}")]
    PeerClosed(String),
    #[error("bad parameters: {0}")]
    Params(#[from] ParamError),
    #[error("malformed message: {0}")]
    Wire(#[from] WireError),
    #[error("idle timeout for receiving data: nothing arrived for {ms} ms (--rcv-timeout)")]
    NoData { ms: u128 },
    #[error("total required bandwidth is larger than server limit: {measured_bps} bit/s averaged over {window_s} s, limit {limit_bps} bit/s (--server-bitrate-limit)")]
    TotalRate {
        measured_bps: u64,
        limit_bps: u64,
        window_s: f64,
    },
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Io(#[from] io::Error),
}

pub type Result<T> = std::result::Result<T, PerfError>;

/// iperf3's error numbers (`iperf_api.h`) that travel after a SERVER_ERROR state byte,
/// with the words iperf3 prints for them. Only those a server sends are listed.
pub mod ierr {
    pub const IEPROTOCOL: i32 = 13; // "unsupported" -> we use IEUNIMP
    pub const IEUNIMP: i32 = 13;
    pub const IEACCESSDENIED: i32 = 121;
    pub const IERECVPARAMS: i32 = 114;
    pub const IECTRLREAD: i32 = 108;
    pub const IESTREAMACCEPT: i32 = 201;
    pub const IEAUTHTEST: i32 = 142;
    pub const IETOTALRATE: i32 = 27;
    pub const IEAFFINITY: i32 = 132;
    pub const IENOMSG: i32 = 144;

    pub fn describe(code: i32) -> String {
        match code {
            13 => "an option you are trying to set is not implemented yet".into(),
            27 => "total required bandwidth is larger than server limit".into(),
            132 => "unable to set CPU affinity".into(),
            144 => "idle timeout for receiving data".into(),
            108 => "unable to read from the control socket".into(),
            110 => "received an unknown control message".into(),
            112 => "unable to receive control message".into(),
            114 => "unable to receive parameters from client".into(),
            117 => "unable to receive results".into(),
            119 => "the client has terminated".into(),
            120 => "the server has terminated".into(),
            121 => "the server is busy running a test. try again later".into(),
            142 => "test authorization failed".into(),
            201 => "unable to accept stream connection".into(),
            other => format!("iperf3 error {other}"),
        }
    }
}
