//! Replays every input kept under tests/fuzz/ethernet (what the fuzz target `ethernet`
//! found, and a few seeds) through its own harness (fuzz/harness/ethernet.rs): each must
//! end without a panic, within 1 GiB (fuzz/harness/replay.rs).

#[path = "../../../fuzz/harness/replay.rs"]
mod replay;

#[path = "../../../fuzz/harness/ethernet.rs"]
mod ethernet;

#[test]
fn kept_frames_end_without_panic() {
    replay::replay(env!("CARGO_MANIFEST_DIR"), "ethernet", ethernet::run);
}
