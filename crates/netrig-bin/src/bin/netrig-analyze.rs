//! netrig-analyze: the command line of the `netrig-analyze` crate.
//!
//! `netrig-analyze tcp FILE [--frames] [--series INTERVAL] [--interface N]` prints one
//! JSON document (schema `netrig.analyze.tcp/1`). A file that cannot be read exits 2 with
//! a message naming the file and the byte offset; frames of a link type it cannot decode
//! are counted in the document (`file.undecoded_link_types`), not refused.

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use netrig_analyze::{analyze_tcp, Options};
use netrig_core::units::parse_duration_ns;

#[derive(Parser)]
#[command(
    name = "netrig-analyze",
    version,
    about = "Analyse capture files (Wireshark-compatible TCP analysis)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// TCP analysis of a pcap/pcapng file: per-stream counts, ack_rtt, flags, series.
    Tcp {
        /// The capture file (pcap or pcapng, gzip-compressed or not).
        file: String,
        /// List each flagged frame (and each frame with an ack_rtt) per stream.
        #[arg(long)]
        frames: bool,
        /// Add time series in bins of INTERVAL (seconds, or with a unit: 100ms).
        #[arg(long, value_name = "INTERVAL")]
        series: Option<String>,
        /// Only the packets of pcapng interface N (0-based over the file).
        #[arg(long, value_name = "N")]
        interface: Option<usize>,
    },
}

fn interval_ns(s: &str) -> Result<i64, String> {
    let ns = match s.parse::<f64>() {
        Ok(x) if x.is_finite() => (x * 1e9).round() as i64,
        _ => parse_duration_ns(s).map_err(|e| format!("--series {s}: {e}"))? as i64,
    };
    if ns <= 0 {
        return Err(format!("--series {s}: the interval must be positive"));
    }
    Ok(ns)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Cmd::Tcp {
        file,
        frames,
        series,
        interface,
    } = cli.cmd;
    let series_interval_ns = match series.as_deref().map(interval_ns).transpose() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("netrig-analyze: {e}");
            return ExitCode::from(2);
        }
    };
    let opts = Options {
        frames,
        series_interval_ns,
        interface,
    };
    match analyze_tcp(&file, &opts) {
        Ok(doc) => {
            let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
            if serde_json::to_writer(&mut out, &doc).is_err()
                || writeln!(out).is_err()
                || out.flush().is_err()
            {
                eprintln!("netrig-analyze: cannot write the report to stdout");
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("netrig-analyze: {e}");
            ExitCode::from(2)
        }
    }
}
