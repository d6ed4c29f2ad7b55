//! netrig-link: the link emulator daemon.
//!
//! Owns, one module each:
//! - `afpacket`: packet I/O on the middle ends of veth pairs (AF_PACKET sockets, batched
//!   receive and send, kernel receive timestamps).
//! - `ring`: a TPACKET_V2 receive ring (mmap), its slots read with checked bounds.
//! - `rx`: a link end's receive side, recvmmsg or ring, as the daemon and the forwarder
//!   both read it.
//! - `forward`: the bare forwarder (`netrig-link forward`), the floor of the daemon's I/O.
//! - `gso`: offload superframes cut into the frames a wire would carry (for captures),
//!   and what the wire carries for a frame (its bytes and segments, for the rate).
//! - `corrupt`: a corrupted frame made what the wire would carry with offloads on
//!   (its checksum completed before the bit flips; a superframe cut, one segment hit).
//! - `daemon`: the event loop, one worker per link direction, that releases each frame
//!   at the time netrig-core's link model says, and samples stats.
//! - `capture`: captures of links into pcapng files, delivered and dropped frames, with
//!   the emulator's reasons as comments, a BPF filter and a ring of files.
//! - `config`: the daemon's JSON configuration (links, their directions, stats, control
//!   and capture paths), checked before anything starts.
//! - `control`: the control socket (JSON lines: stats, live changes, captures).
//! - `stats`: release lateness, how late each frame left against its due time.
//! - `shell`: the standalone `netrig-link shell` mode (a command in a namespace behind
//!   one emulated link).
//! - `netns`: the namespaces and veth pairs of the standalone modes, named by run.
//!
//! Does not own: the link model itself (rate, queues, AQMs, delay, loss: netrig-core,
//! deterministic), frame parsing (netrig-core's `wire::ethernet`), or a lab's topology
//! (the Python side builds a lab's namespaces and veths and writes this daemon's
//! configuration; `netns` serves only the standalone modes).

pub mod afpacket;
pub mod capture;
pub mod config;
pub mod control;
pub mod corrupt;
pub mod daemon;
pub mod forward;
pub mod gso;
pub mod netns;
pub mod ring;
pub mod rx;
pub mod shell;
pub mod stats;
