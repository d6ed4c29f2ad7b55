//! `-d/--debug`: diagnostic lines on stderr ("netrig-perf: debug: ..."), for a person
//! finding out why a test behaves as it does: parameters, control states, socket
//! options as the kernel reports them back, timeouts and limits as they fire.
//!
//! One switch per process, as iperf3 has: set once by the binary before anything runs.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

static ON: AtomicBool = AtomicBool::new(false);

pub fn enable(on: bool) {
    ON.store(on, Relaxed);
}

pub fn enabled() -> bool {
    ON.load(Relaxed)
}

/// Writes one diagnostic line to stderr when `-d` is on.
pub fn line(text: impl FnOnce() -> String) {
    if enabled() {
        eprintln!("netrig-perf: debug: {}", text());
    }
}
