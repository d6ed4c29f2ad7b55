//! netrig-perf: netrig's traffic tool.
//!
//! Owns: the iperf3-compatible client and server (TCP and UDP streams, the control
//! protocol, iperf3's text and JSON output, the socket and process options of iperf3's
//! flags: `sockopt`, `diskfile` for -F, `daemon` for -D/-I, `ratelimit` for
//! --server-bitrate-limit), and netrig's latency tools (UDP probes and TCP
//! request/response transactions) served by the same server.
//!
//! Does not own: wire formats, units and statistics (in `netrig-core`), command-line
//! parsing (in the binary crate), or anything about topologies.

pub mod auth;
pub mod client;
pub mod config;
pub mod control;
pub mod daemon;
pub mod debug;
pub mod diskfile;
pub mod engine;
pub mod error;
pub mod latency;
pub mod output;
pub mod probe;
pub mod protocol;
pub mod ratelimit;
pub mod report;
pub mod rr;
pub mod server;
pub mod session;
pub mod sockopt;
pub mod sys;
pub mod tcp_info;
pub mod timestamp;
