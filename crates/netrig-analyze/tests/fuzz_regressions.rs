//! Replays every input kept under tests/fuzz/pcap (what the fuzz target `pcap` found,
//! and crafted files) through that target's own harness (fuzz/harness/pcap.rs): each
//! must end in a report or an error, without a panic, within 1 GiB (see
//! fuzz/harness/replay.rs).

use std::path::Path;

#[path = "../../../fuzz/harness/replay.rs"]
mod replay;

#[path = "../../../fuzz/harness/pcap.rs"]
mod harness;

#[test]
fn every_kept_input_ends_without_panic_within_memory() {
    replay::replay(env!("CARGO_MANIFEST_DIR"), "pcap", harness::run);
}

/// The crafted file of issue 24: two packets 136 years apart. Its series in bins of
/// 0.1 s asked for 343 GB; now the analysis refuses it, naming the frame and the bound.
#[test]
fn a_series_over_136_years_is_refused_by_name() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/pcap/series-136-years.pcap");
    let data = std::fs::read(&f).unwrap();
    assert_eq!(data.len(), 184);
    let opts = netrig_analyze::Options {
        series_interval_ns: Some(100_000_000),
        ..Default::default()
    };
    let e = netrig_analyze::analyze_bytes("x.pcap", &data, &opts)
        .expect_err("refused")
        .to_string();
    assert!(
        e.starts_with("x.pcap: frame 2 is stamped 136.1 years after the file's first packet"),
        "{e}"
    );
    assert!(e.contains("at most 4194304"), "{e}");
    assert!(e.contains("(this span needs at least 2048 s)"), "{e}");
    // Without a series, or in the bins the sentence suggests, the same file is analysed.
    for iv in [None, Some(2_048_000_000_000)] {
        let opts = netrig_analyze::Options {
            series_interval_ns: iv,
            ..Default::default()
        };
        let r = netrig_analyze::analyze_bytes("x.pcap", &data, &opts).expect("analysed");
        assert_eq!(r.streams.len(), 1);
    }
}
