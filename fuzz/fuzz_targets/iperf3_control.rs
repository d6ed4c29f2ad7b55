//! Fuzz target `iperf3_control`: the harness in ../harness/iperf3_control.rs (shared with the crate's
//! regression test, which replays the inputs this target found).
#![no_main]

#[path = "../harness/iperf3_control.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::run(data));
