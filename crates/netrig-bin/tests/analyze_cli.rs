//! netrig-analyze's command line on hostile files: it exits 2 with a sentence, never
//! aborts or runs out of memory.

use std::path::Path;
use std::process::Command;

/// The crafted capture of issue 24: 184 bytes, two TCP segments stamped 136 years
/// apart. `--series 0.1` (the Stevens graph's bins) asked for 343 GB and aborted.
#[test]
fn a_pcap_spanning_136_years_exits_2_with_a_sentence() {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../netrig-analyze/tests/fuzz/pcap/series-136-years.pcap");
    let out = Command::new(env!("CARGO_BIN_EXE_netrig-analyze"))
        .args(["tcp", file.to_str().unwrap(), "--series", "0.1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    assert!(
        err.contains(
            "frame 2 is stamped 136.1 years after the file's first packet: time series in bins of 0.1 s"
        ),
        "{err}"
    );
    assert!(
        err.contains("keeps at most 4194304 per file; pass a larger --series interval"),
        "{err}"
    );
    assert!(err.contains("(this span needs at least 2048 s)"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // The same file without a series is analysed.
    let out = Command::new(env!("CARGO_BIN_EXE_netrig-analyze"))
        .args(["tcp", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["file"]["packets"], 2);
}
