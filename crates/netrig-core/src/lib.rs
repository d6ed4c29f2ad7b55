//! netrig-core: the deterministic heart of netrig.
//!
//! Owns: units (iperf3's size and rate conventions), wire formats (iperf3's control and
//! UDP formats, netrig's probe packets) as checked views, the iperf3 parameter and result
//! documents with their validation, and the statistics every receiver computes (RFC 3550
//! jitter, sequence accounting, percentiles).
//!
//! Does not own: sockets, clocks, threads or files. Everything here takes its inputs
//! (bytes, timestamps) as arguments, so it runs the same in a test as on the wire.

pub mod iperf3;
pub mod stats;
pub mod units;
pub mod wire;
pub mod pacing;
