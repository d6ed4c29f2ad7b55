//! Replays every input kept under tests/fuzz/iperf3_control and tests/fuzz/datagrams
//! (what those fuzz targets found, and a few seeds) through the targets' own harnesses
//! (fuzz/harness/): each must end without a panic, within 1 GiB (fuzz/harness/replay.rs).

#[path = "../../../fuzz/harness/replay.rs"]
mod replay;

#[path = "../../../fuzz/harness/iperf3_control.rs"]
mod iperf3_control;

#[path = "../../../fuzz/harness/datagrams.rs"]
mod datagrams;

#[test]
fn kept_control_messages_end_without_panic() {
    replay::replay(env!("CARGO_MANIFEST_DIR"), "iperf3_control", iperf3_control::run);
}

#[test]
fn kept_datagram_trains_end_without_panic() {
    replay::replay(env!("CARGO_MANIFEST_DIR"), "datagrams", datagrams::run);
}
