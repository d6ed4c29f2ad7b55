//! Receiver statistics: RFC 3550 jitter, UDP sequence accounting, latency summaries.

pub mod jitter;
pub mod percentile;
pub mod seq;

pub use jitter::Jitter;
pub use percentile::Summary;
pub use seq::SeqTracker;
