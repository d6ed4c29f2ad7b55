//! The link model: each direction of a link is a pipeline of small stages, driven by
//! the caller's clock (`now` in nanoseconds) and a seeded generator.
//!
//! arrival → loss → duplicate → corrupt → queue (discipline) → rate (serializer or
//! trace) → delay (+ jitter, reorder) → delivery

pub mod aqm;
pub mod delay;
pub mod direction;
pub mod loss;
pub mod packet;
pub mod rate;
pub mod rng;
pub mod schema;
pub mod spec;

pub use aqm::{DropCause, Drops, Limit, Qdisc, QueueStats};
pub use packet::{Ecn, Packet};
pub use rng::Rng;
