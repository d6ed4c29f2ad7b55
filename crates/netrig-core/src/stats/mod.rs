//! Receiver statistics: RFC 3550 jitter (`jitter`), UDP sequence accounting (`seq`),
//! latency summaries (`percentile`), and a UDP test receiver fed datagram by datagram
//! (`udp_rx`). Deterministic: arrival times are arguments; sockets and clocks belong to
//! the caller.

pub mod jitter;
pub mod percentile;
pub mod seq;
pub mod udp_rx;

pub use jitter::Jitter;
pub use percentile::Summary;
pub use seq::{SeqTracker, SeqWidth, Suspicion, Verdict};
pub use udp_rx::UdpReceiver;
