//! Receiver statistics: RFC 3550 jitter, UDP sequence accounting, latency summaries.

pub mod jitter;
pub mod percentile;
pub mod seq;
pub mod udp_rx;

pub use jitter::Jitter;
pub use percentile::Summary;
pub use seq::{SeqTracker, SeqWidth, Suspicion, Verdict};
pub use udp_rx::UdpReceiver;
