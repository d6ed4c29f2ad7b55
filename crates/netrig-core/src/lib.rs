//! netrig-core: the deterministic heart of netrig.
//!
//! Owns, one module each:
//! - `units`: iperf3's size and rate conventions, parsed and formatted.
//! - `ecn`: the IP header's ECN code point, shared by the wire formats and the link model.
//! - `wire`: wire formats as checked views (iperf3's control and UDP formats, netrig's
//!   probe packets, Ethernet/IP frames as the link emulator sees them, pcap files).
//! - `iperf3`: the iperf3 parameter and result documents with their validation.
//! - `stats`: the statistics every receiver computes (RFC 3550 jitter, sequence
//!   accounting, percentiles).
//! - `tos`: the TOS byte from iperf3's `--dscp` and `-S` values.
//! - `pacing`: when a sender may send its next block at a target rate, and what a late
//!   sender owes.
//! - `link`: the link model, one direction as a pipeline of stages (loss, queue and its
//!   AQM, rate, delay and jitter) built from a direction's spec.
//!
//! Layers depend one way: `stats` uses `wire` (iperf3's UDP header), `wire` and `link`
//! use `ecn`, and every other module uses nothing else here; in particular nothing uses
//! `link` or `pacing` (`scripts/import_cycles --rust-only --edges` lists every edge).
//!
//! Does not own: sockets, clocks, threads or files (netrig-perf and netrig-link do the
//! I/O). Everything here takes its inputs (bytes, timestamps, a seeded generator) as
//! arguments, so it runs the same in a test as on the wire.

pub mod ecn;
pub mod iperf3;
pub mod link;
pub mod pacing;
pub mod stats;
pub mod tos;
pub mod units;
pub mod wire;

#[cfg(test)]
mod fuzz {
    //! Bounded fuzzing of every parser that sees peer input: random and mutated bytes
    //! must give errors, never panics.

    use crate::iperf3::{Limits, Params, Results};
    use crate::wire::iperf3::{parse_json_frame_len, Cookie, State, UdpHeader};
    use crate::wire::probe::{ProbePacket, RrRequest};

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn bytes(&mut self, max: usize) -> Vec<u8> {
            let n = (self.next() as usize) % (max + 1);
            (0..n).map(|_| self.next() as u8).collect()
        }
    }

    const SEEDS: &[&str] = &[
        r#"{"tcp":true,"omit":0,"time":10,"parallel":4,"len":131072,"client_version":"3.12"}"#,
        r#"{"udp":true,"bandwidth":1048576,"len":1460,"netrig":{"mode":"probe","version":1}}"#,
        r#"{"cpu_util_total":1.5,"sender_has_retransmits":1,"streams":[{"id":1,"bytes":5,"retransmits":0,"jitter":0,"errors":0,"packets":0}]}"#,
    ];

    #[test]
    fn parsers_never_panic_on_random_or_mutated_input() {
        let mut rng = Rng(0x5EED_2026);
        let limits = Limits::default();
        for i in 0..20_000 {
            let input = if i % 2 == 0 {
                rng.bytes(256)
            } else {
                let mut s = SEEDS[i % SEEDS.len()].as_bytes().to_vec();
                for _ in 0..1 + rng.next() % 4 {
                    let at = (rng.next() as usize) % s.len();
                    match rng.next() % 3 {
                        0 => s[at] = rng.next() as u8,
                        1 => s.truncate(at),
                        _ => s.insert(at, b"{}[]\",:-e9"[(rng.next() % 10) as usize]),
                    }
                    if s.is_empty() {
                        break;
                    }
                }
                s
            };
            let _ = Params::parse(&input, &limits);
            let _ = Results::parse(&input);
            let _ = Cookie::parse(&input);
            let _ = UdpHeader::parse(&input, i % 3 == 0);
            let _ = ProbePacket::parse(&input);
            let _ = RrRequest::parse(&input, 1 << 20);
            if let Some(&b) = input.first() {
                let _ = State::parse(b);
            }
            if input.len() >= 4 {
                let _ = parse_json_frame_len(input[..4].try_into().unwrap(), 65_536);
            }
        }
    }
}

#[cfg(test)]
mod layers {
    //! The modules below the link model and the pacer never name them: wire formats,
    //! statistics, units and the ECN code point sit underneath (the source is read as text;
    //! `scripts/import_cycles --rust-only --edges` shows the whole graph).

    use std::path::{Path, PathBuf};

    /// Top-level modules that must not use `link` or `pacing`.
    const BELOW: &[&str] = &["ecn", "iperf3", "stats", "tos", "units", "wire"];
    const ABOVE: &[&str] = &["link", "pacing"];

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// The modules each `crate::` path in `code` names first: `crate::a::b` gives `a`,
    /// `crate::{a::b, c}` gives `a` and `c`. Line comments are left out.
    fn crate_paths(code: &str) -> Vec<(usize, String)> {
        let mut found = Vec::new();
        for (n, line) in code.lines().enumerate() {
            let line = line.split("//").next().unwrap_or("");
            for (at, _) in line.match_indices("crate::") {
                let rest = &line[at + "crate::".len()..];
                let path: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || "_:{}, ".contains(*c))
                    .collect();
                // A group (`{a::b, c}`) names one module per item; a path only its first.
                let group = path.starts_with('{');
                let (mut depth, mut expect, mut word) = (0, true, String::new());
                for c in path.chars().chain([';']) {
                    if c.is_alphanumeric() || c == '_' {
                        word.push(c);
                        continue;
                    }
                    if !word.is_empty() {
                        if expect && (!group || depth == 1) {
                            found.push((n + 1, word.clone()));
                        }
                        (expect, word) = (false, String::new());
                    }
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 1 => expect = true,
                        _ => {}
                    }
                }
            }
        }
        found
    }

    #[test]
    fn crate_paths_reads_single_paths_and_groups() {
        let code = "use crate::ecn::Ecn;\nuse crate::{a::b, c, d::{e, f}}; // crate::x\n";
        let names: Vec<_> = crate_paths(code).into_iter().map(|(_, m)| m).collect();
        assert_eq!(names, ["ecn", "a", "c", "d"]);
    }

    #[test]
    fn lower_layers_do_not_use_the_link_model_or_the_pacer() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        files.sort();
        let mut upward = Vec::new();
        for file in &files {
            let rel = file.strip_prefix(&src).unwrap();
            let top = rel.components().next().unwrap().as_os_str().to_string_lossy();
            let top = top.trim_end_matches(".rs");
            if !BELOW.contains(&top) {
                continue;
            }
            let code = std::fs::read_to_string(file).unwrap();
            for (line, module) in crate_paths(&code) {
                if ABOVE.contains(&module.as_str()) {
                    upward.push(format!("src/{}:{line} uses crate::{module}", rel.display()));
                }
            }
        }
        assert!(
            files.len() > 20,
            "read only {} files under {}",
            files.len(),
            src.display()
        );
        assert!(
            upward.is_empty(),
            "lower layers use the link model or the pacer: {upward:#?}"
        );
    }
}
