//! netrig-perf: netrig's traffic tool.
//!
//! Owns: the iperf3-compatible client and server (TCP and UDP streams, the control
//! protocol, iperf3's text and JSON output, the socket and process options of iperf3's
//! flags), and netrig's latency tools (UDP probes and TCP request/response
//! transactions) served by the same server.
//!
//! Does not own: wire formats, units and statistics (in `netrig-core`), command-line
//! parsing (in the binary crate), or anything about topologies.
//!
//! Its modules, each depending only on those below it (no module imports one that
//! imports it back):
//! - the modes: `client` (the bulk test, and the entry that hands `probe` and `rr`
//!   their turn), `probe` (UDP latency probes), `rr` (TCP request/response), `server`
//!   (every test, of every mode, at once; `server/gate` holds connections until their
//!   cookie arrives, `server/params` judges a test's parameters, `server/slots` shares
//!   test slots and streams per source, `server/watch` ends each test at its declared
//!   end and grace, `server/udp` matches UDP streams to tests);
//! - `protocol`: the control exchange those clients share (connect, cookie, parameters
//!   and auth challenge, results, done) and opening data streams; `control` frames the
//!   control channel; `auth` owns the shared-key challenge;
//! - `session` runs a test's streams (`engine`: the per-stream senders and receivers;
//!   `ratelimit`: --server-bitrate-limit; `diskfile`: -F); `report` samples them
//!   (intervals, totals, CPU); `latency` keeps the netrig modes' records;
//! - `output`: what a test prints, the typed figures once (`output::result`) rendered
//!   as iperf3 3.12's text (`output::text`) and JSON (`output::json`); `extras` types
//!   netrig's additions to that JSON (probe, rr, pacing, TCP_INFO samples, UDP counts)
//!   and their schema version; `tcp_info` and `timestamp` format the
//!   --tcp-info-interval and --timestamps lines;
//! - the system: `sockopt` (the socket and CPU options of iperf3's flags, and the TCP
//!   connect that sets them), `sys` (thin wrappers over socket and clock calls),
//!   `daemon` (-D/-I), `debug` (-d), `config` and `error` (the types everything shares).

pub mod auth;
pub mod client;
pub mod config;
pub mod control;
pub mod daemon;
pub mod debug;
pub mod diskfile;
pub mod engine;
pub mod error;
pub mod extras;
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
