//! netrig-analyze: what a capture file says about its TCP flows.
//!
//! Owns reading capture files (`capture`: pcap and pcapng, gzip-compressed or not),
//! decoding frames of every common link type and tunnel down to the TCP header
//! (`decode`; frames of a link type it cannot decode are counted, not refused),
//! Wireshark 4.0's TCP sequence analysis reproduced flag for flag
//! (`tcp`), and the report built from it (`report`: counts, ack_rtt, time series).
//! It does not capture packets, run tshark, or draw anything: the Python side
//! (`netrig.capture.tcp`, `netrig.capture.stevens`) runs the binary and plots its JSON.
//!
//! Every byte of a capture is untrusted (a results directory may come from anyone):
//! lengths and counts are checked against the bytes there are, and memory follows the
//! file's size, never a length or a timestamp it claims (see `report::MAX_SERIES_BINS`).
//! `fuzz/` at the top of the repository fuzzes [`analyze_reader`] (see fuzz/FUZZING.md).

pub mod capture;
pub mod decode;
pub mod report;
pub mod tcp;

use serde::Serialize;
use serde_json::{json, Value};

pub use capture::CaptureError;

/// The JSON document's schema name; bumped when its layout changes incompatibly.
pub const SCHEMA: &str = "netrig.analyze.tcp/1";

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// List every flagged frame (and every frame with an ack_rtt) per stream.
    pub frames: bool,
    /// Add per-direction time series in bins of this many ns.
    pub series_interval_ns: Option<i64>,
    /// Analyse only the packets of this interface (pcapng interface index over the file).
    pub interface: Option<usize>,
}

/// The report: file facts and totals, then the streams (serialized as one JSON object).
#[derive(Debug, Serialize)]
pub struct Report {
    #[serde(flatten)]
    pub head: serde_json::Map<String, Value>,
    pub streams: Vec<report::StreamOut>,
}

/// Analyses every TCP flow of the capture at `path`.
pub fn analyze_tcp(path: &str, opts: &Options) -> Result<Report, CaptureError> {
    analyze_reader(capture::Reader::open(path)?, opts)
}

/// Analyses every TCP flow of a capture's bytes (`path` only names them in errors).
pub fn analyze_bytes(path: &str, bytes: &[u8], opts: &Options) -> Result<Report, CaptureError> {
    analyze_reader(capture::Reader::new(path, bytes)?, opts)
}

/// Analyses every TCP flow of a capture being read.
pub fn analyze_reader<R: std::io::Read>(
    mut rd: capture::Reader<R>,
    opts: &Options,
) -> Result<Report, CaptureError> {
    let path = rd.path().to_string();
    let path = path.as_str();
    let mut an = tcp::Analyzer::new();
    let mut col = report::Collector::new(report::Options {
        frames: opts.frames,
        series_interval_ns: opts.series_interval_ns,
    });
    let (mut packets, mut tcp_packets, mut wire_bytes) = (0u64, 0u64, 0u64);
    let (mut first, mut last) = (None::<i64>, None::<i64>);
    let mut links: Vec<u32> = Vec::new();
    let mut checked: Vec<bool> = Vec::new();
    // Frames of a link type netrig-analyze cannot decode: (link type, frames).
    let mut undecoded: Vec<(u32, u64)> = Vec::new();
    let mut found: Vec<decode::TcpHeader> = Vec::new();
    while let Some(p) = rd.next_packet()? {
        packets += 1;
        wire_bytes += p.orig_len as u64;
        first.get_or_insert(p.ts_ns);
        last = Some(p.ts_ns);
        col.set_origin(p.ts_ns);
        if opts.interface.is_some_and(|i| i != p.iface) {
            continue;
        }
        let (frame, ts, exact, iface) = (p.frame, p.ts_ns, p.ts_exact_ns, p.iface);
        let link = p.link_type;
        found.clear();
        let decodable = decode::decode_all(link, p.data, p.orig_len, &mut found).is_ok();
        if checked.len() <= iface {
            checked.resize(iface + 1, false);
        }
        if !checked[iface] {
            checked[iface] = true;
            if !links.contains(&link) {
                links.push(link);
            }
        }
        if !decodable {
            // Counted and named in the report; the rest of the file is still analysed.
            match undecoded.iter_mut().find(|(lt, _)| *lt == link) {
                Some((_, n)) => *n += 1,
                None => undecoded.push((link, 1)),
            }
            continue;
        }
        if !found.is_empty() {
            tcp_packets += 1;
        }
        for h in &found {
            let r = an.packet(frame, exact, h);
            col.add(frame, ts, h, &r, &an.streams[r.stream as usize])
                .map_err(|e| CaptureError::Request {
                    path: path.into(),
                    what: e.to_string(),
                })?;
        }
    }
    if let Some(want) = opts.interface {
        let have = rd.interfaces().len();
        if want >= have {
            return Err(CaptureError::Request {
                path: path.into(),
                what: format!("--interface {want}: the file has {have} interface(s), numbered from 0"),
            });
        }
    }
    let format = match rd.format {
        capture::Format::Pcap { nanos: false } => "pcap",
        capture::Format::Pcap { nanos: true } => "pcap-ns",
        capture::Format::Pcapng => "pcapng",
    };
    let interfaces: Vec<Value> = rd
        .interfaces()
        .iter()
        .enumerate()
        .map(
            |(i, f)| json!({"id": i, "name": f.name, "description": f.description, "link_type": f.link_type}),
        )
        .collect();
    let (streams, totals) = col.finish(&an.streams);
    let secs = |t: Option<i64>| t.map(|x| x as f64 / 1e9);
    let head = json!({
        "schema": SCHEMA,
        "netrig_version": env!("CARGO_PKG_VERSION"),
        "file": {
            "path": path,
            "format": format,
            "file_bytes": rd.file_bytes(),
            "compression": rd.gzip().then_some("gzip"),
            "capture_bytes": rd.bytes_read,
            "packets": packets,
            "wire_bytes": wire_bytes,
            "tcp_packets": tcp_packets,
            "link_types": links,
            "undecoded_frames": undecoded.iter().map(|(_, n)| n).sum::<u64>(),
            "undecoded_link_types": undecoded
                .iter()
                .map(|&(lt, n)| json!({"link_type": lt, "name": decode::link_type_name(lt), "frames": n}))
                .collect::<Vec<_>>(),
            "interfaces": interfaces,
            "first_epoch_s": secs(first),
            "last_epoch_s": secs(last),
        },
        "interface": opts.interface,
        "totals": totals,
    });
    let Value::Object(head) = head else {
        unreachable!("json! of an object")
    };
    Ok(Report { head, streams })
}
