//! The capture reader and the TCP analysis (netrig-analyze): a whole file's bytes, as
//! `netrig-analyze tcp` reads them, with the report serialized. The options come from
//! the input's length (not its bytes, so a capture stays a valid seed): time series in
//! bins of 0.1 s (the Stevens graph's) or 1 ms, or none; every other input one interface.
//! Also the link-layer decoders on the bytes taken as one frame of each link type.

use netrig_analyze::decode::decode;
use netrig_analyze::{analyze_bytes, Options};

pub fn run(data: &[u8]) {
    let opts = Options {
        frames: true,
        series_interval_ns: [Some(100_000_000), Some(1_000_000), None][data.len() % 3],
        interface: data.len().is_multiple_of(2).then_some(0),
    };
    if let Ok(doc) = analyze_bytes("fuzz.pcap", data, &opts) {
        serde_json::to_writer(std::io::sink(), &doc).expect("a report serializes");
    }
    for link in netrig_analyze::decode::LINK_TYPES {
        if let Ok(Some(h)) = decode(link, data, data.len() as u32) {
            let _ = h.seglen();
        }
    }
}
