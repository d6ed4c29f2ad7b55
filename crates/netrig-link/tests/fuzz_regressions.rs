//! Replays every input kept under tests/fuzz/link_control (what the fuzz target
//! `link_control` found, and a few seeds) through its own harness
//! (fuzz/harness/link_control.rs): each must end without a panic, within 1 GiB
//! (fuzz/harness/replay.rs).

#[path = "../../../fuzz/harness/replay.rs"]
mod replay;

#[path = "../../../fuzz/harness/link_control.rs"]
mod link_control;

#[test]
fn kept_control_requests_end_without_panic() {
    replay::replay(env!("CARGO_MANIFEST_DIR"), "link_control", link_control::run);
}
