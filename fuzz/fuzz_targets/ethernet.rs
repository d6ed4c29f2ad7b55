//! Fuzz target `ethernet`: the harness in ../harness/ethernet.rs (shared with the crate's
//! regression test, which replays the inputs this target found).
#![no_main]

#[path = "../harness/ethernet.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::run(data));
