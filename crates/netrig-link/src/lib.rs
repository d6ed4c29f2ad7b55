//! netrig-link: the link emulator daemon.
//!
//! Owns: packet I/O on the middle ends of veth pairs (AF_PACKET), the event loop that
//! releases each frame at the time netrig-core's link model says, the control socket
//! (stats, live changes, captures), and the standalone `shell` mode.
//!
//! Does not own: the link model itself (rate, queues, AQMs, delay, loss: netrig-core,
//! deterministic), or topologies (the Python side builds namespaces and veths and
//! writes this daemon's configuration).

pub mod afpacket;
pub mod config;
pub mod control;
pub mod daemon;
pub mod netns;
pub mod shell;
pub mod stats;
