//! Fuzz target `datagrams`: the harness in ../harness/datagrams.rs (shared with the crate's
//! regression test, which replays the inputs this target found).
#![no_main]

#[path = "../harness/datagrams.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::run(data));
