//! The link model: each direction of a link is a pipeline of small stages, driven by
//! the caller's clock (`now` in nanoseconds) and a seeded generator (`rng`).
//!
//! arrival → loss → duplicate → corrupt → queue (discipline) → rate (serializer or
//! trace) → delay (+ jitter, reorder) → delivery
//!
//! - `packet`: a packet as the model sees it (length, flow, ECN; bytes in the daemon).
//! - `loss`, `aqm`, `rate`, `delay`: the stages; `aqm` has one discipline per file.
//! - `direction`: one direction's stages in order, and its counters.
//! - `spec`: a direction's configuration as data, and the one place that builds stages.
//! - `rng`: the seeded generator and the distributions the stages draw from.
//! - `explain`: a direction's shaping and its drops in words (capture comments).
//!
//! Does not own: packets' bytes on the wire (`wire::ethernet` parses them), clocks or
//! sockets (netrig-link's daemon drives the model).

pub mod aqm;
pub mod delay;
pub mod direction;
pub mod explain;
pub mod loss;
pub mod packet;
pub mod rate;
pub mod rng;
pub mod schema;
pub mod spec;

pub use aqm::{DropCause, Drops, Limit, Qdisc, QueueStats};
pub use packet::{BitFlip, Ecn, Packet};
pub use rng::Rng;
