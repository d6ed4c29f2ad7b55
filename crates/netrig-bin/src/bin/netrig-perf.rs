//! netrig-perf: iperf3's command line and protocol, with netrig's extras.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Parser;
use netrig_core::iperf3::{Limits, Protocol};
use netrig_core::units::{parse_rate, parse_size};
use netrig_perf::client;
use netrig_perf::config::{ClientConfig, ClientMode, Common, Family, Format, ServerConfig};
use netrig_perf::output::Sink;
use netrig_perf::server;

/// Sizes (-n, -l, -w, -k) take K/M/G in 1024s; rates (-b) in 1000s, as iperf3.
#[derive(Parser, Debug)]
#[command(
    name = "netrig-perf",
    version,
    about = "iperf3-compatible traffic tool with latency probes",
    disable_version_flag = true,
    args_override_self = true
)]
struct Cli {
    /// Print the version.
    #[arg(short = 'v', long = "version", action = clap::ArgAction::Version)]
    version: Option<bool>,
    /// Run as a server.
    #[arg(short = 's', long)]
    server: bool,
    /// Run as a client, connecting to HOST.
    #[arg(short = 'c', long, value_name = "HOST")]
    client: Option<String>,
    /// Server port to listen on / connect to.
    #[arg(short = 'p', long, default_value_t = 5201)]
    port: u16,
    /// Seconds between periodic reports (0 disables; down to 0.1).
    #[arg(short = 'i', long, default_value = "1")]
    interval: f64,
    /// Bind to this local address (client: source address; server: listen address).
    #[arg(short = 'B', long)]
    bind: Option<String>,
    /// IPv4 only.
    #[arg(short = '4', long = "version4")]
    v4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "version6")]
    v6: bool,
    /// One iperf3 JSON document at the end.
    #[arg(short = 'J', long)]
    json: bool,
    /// One JSON event per line as the test runs.
    #[arg(long)]
    json_stream: bool,
    /// Write output to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    logfile: Option<PathBuf>,
    /// Flush output at every line (always on; accepted for iperf3 compatibility).
    #[arg(long)]
    forceflush: bool,
    /// More detail (CPU use, parameters).
    #[arg(short = 'V', long)]
    verbose: bool,
    /// Shared key: a client proves it, a server demands it.
    #[arg(long, value_name = "KEY", env = "NETRIG_PERF_KEY")]
    auth_key: Option<String>,

    // --- server ---
    /// Serve one client, then exit.
    #[arg(short = '1', long = "one-off")]
    one_off: bool,
    /// Server: longest test allowed, seconds.
    #[arg(long, default_value_t = 86_400)]
    max_duration: u64,
    /// Server: most streams per test.
    #[arg(long, default_value_t = 128)]
    max_parallel: u32,
    /// Server: highest rate per stream a client may ask for (e.g. 1G; 0 = no limit).
    #[arg(long, default_value = "0")]
    max_rate: String,
    /// Server: tests served at once; more are refused as busy.
    #[arg(long, default_value_t = 64)]
    max_tests: usize,
    /// Server: seconds a new connection may take to send its cookie and parameters.
    #[arg(long, default_value_t = 5.0)]
    handshake_timeout: f64,

    // --- client ---
    /// UDP instead of TCP.
    #[arg(short = 'u', long)]
    udp: bool,
    /// Seconds to transmit.
    #[arg(short = 't', long, default_value_t = 10)]
    time: u64,
    /// Bytes to transmit (instead of -t), e.g. 10M.
    #[arg(short = 'n', long = "bytes")]
    bytes: Option<String>,
    /// Blocks to transmit (instead of -t or -n).
    #[arg(short = 'k', long = "blockcount")]
    blocks: Option<String>,
    /// Rate per stream in bit/s, optionally /burst packets (UDP default 1M, TCP unlimited).
    #[arg(short = 'b', long = "bitrate", value_name = "RATE[/BURST]")]
    bitrate: Option<String>,
    /// Block length (TCP default 128K; UDP default the path MSS).
    #[arg(short = 'l', long = "length")]
    length: Option<String>,
    /// Parallel streams.
    #[arg(short = 'P', long, default_value_t = 1)]
    parallel: u32,
    /// Server sends, client receives.
    #[arg(short = 'R', long)]
    reverse: bool,
    /// Both directions at once.
    #[arg(long)]
    bidir: bool,
    /// Socket buffer size (and so TCP window), e.g. 64K.
    #[arg(short = 'w', long)]
    window: Option<String>,
    /// TCP maximum segment size.
    #[arg(short = 'M', long = "set-mss")]
    mss: Option<u32>,
    /// TCP congestion control algorithm.
    #[arg(short = 'C', long = "congestion")]
    congestion: Option<String>,
    /// TCP_NODELAY.
    #[arg(short = 'N', long = "no-delay")]
    nodelay: bool,
    /// Send with sendfile (zero copy).
    #[arg(short = 'Z', long = "zerocopy")]
    zerocopy: bool,
    /// Seconds of warm-up to leave out of the results.
    #[arg(short = 'O', long, default_value_t = 0)]
    omit: u64,
    /// IP type of service byte.
    #[arg(short = 'S', long = "tos", default_value_t = 0)]
    tos: u32,
    /// Prefix every output line with this title.
    #[arg(short = 'T', long)]
    title: Option<String>,
    /// Free text carried in the JSON output.
    #[arg(long)]
    extra_data: Option<String>,
    /// Fetch the server's output into ours.
    #[arg(long)]
    get_server_output: bool,
    /// 64-bit UDP sequence numbers.
    #[arg(long)]
    udp_counters_64bit: bool,
    /// Payload "0123456789..." instead of random bytes.
    #[arg(long)]
    repeating_payload: bool,
    /// Client data streams' source port (the i-th stream uses PORT+i).
    #[arg(long)]
    cport: Option<u16>,
    /// Milliseconds to wait for a connection.
    #[arg(long, default_value_t = 10_000)]
    connect_timeout: u64,
    /// netrig: UDP without segmentation offload (one send per datagram batch entry).
    #[arg(long)]
    no_gso: bool,
    /// netrig: stream TCP_INFO samples (cwnd, RTT, rates) every MS milliseconds.
    #[arg(long, value_name = "MS")]
    tcp_info_interval: Option<f64>,

    /// netrig: UDP latency probes instead of a bulk transfer.
    #[arg(long)]
    probe: bool,
    /// netrig: milliseconds between probes.
    #[arg(long, default_value_t = 10.0)]
    probe_interval: f64,
    /// netrig: probe datagram size in bytes (>= 40).
    #[arg(long, default_value_t = 64)]
    probe_size: usize,
    /// netrig: request/response transactions: ask for SIZE bytes per request (e.g. 100K).
    #[arg(long, value_name = "SIZE")]
    rr: Option<String>,
    /// netrig: open a new connection for every transaction.
    #[arg(long)]
    rr_new_conn: bool,
    /// netrig: milliseconds between transaction starts (0 = back to back).
    #[arg(long, default_value_t = 0.0)]
    rr_interval: f64,
}

fn size(flag: &str, v: &Option<String>) -> anyhow::Result<u64> {
    match v {
        None => Ok(0),
        Some(t) => parse_size(t).map_err(|e| anyhow::anyhow!("{flag}: {e}")),
    }
}

fn common(cli: &Cli) -> anyhow::Result<Common> {
    if cli.interval != 0.0 && !(0.1..=60.0).contains(&cli.interval) {
        anyhow::bail!(
            "-i: interval must be 0 or between 0.1 and 60 seconds, got {}",
            cli.interval
        );
    }
    if cli.v4 && cli.v6 {
        anyhow::bail!("-4 and -6 exclude each other");
    }
    Ok(Common {
        port: cli.port,
        bind: cli.bind.clone(),
        family: if cli.v4 {
            Family::V4
        } else if cli.v6 {
            Family::V6
        } else {
            Family::Any
        },
        interval: Duration::from_secs_f64(cli.interval),
        format: if cli.json_stream {
            Format::JsonStream
        } else if cli.json {
            Format::Json
        } else {
            Format::Text
        },
        logfile: cli.logfile.clone(),
        forceflush: cli.forceflush,
        verbose: cli.verbose,
        auth_key: cli.auth_key.clone(),
    })
}

fn client_config(cli: &Cli, host: &str) -> anyhow::Result<ClientConfig> {
    let (rate, burst) = match &cli.bitrate {
        None => (None, 0),
        Some(t) => {
            let (r, b) = match t.split_once('/') {
                Some((r, b)) => (
                    r,
                    b.parse::<u64>()
                        .map_err(|_| anyhow::anyhow!("-b: bad burst '{b}'"))?,
                ),
                None => (t.as_str(), 0),
            };
            (Some(parse_rate(r).map_err(|e| anyhow::anyhow!("-b: {e}"))?), b)
        }
    };
    if cli.parallel == 0 || cli.parallel > 128 {
        anyhow::bail!("-P: number of streams must be 1..128, got {}", cli.parallel);
    }
    if cli.reverse && cli.bidir {
        anyhow::bail!("-R and --bidir exclude each other");
    }
    let len = size("-l", &cli.length)?;
    if cli.udp && len > 65_507 {
        anyhow::bail!("-l: {len} bytes exceeds the largest UDP datagram (65507)");
    }
    let mode = if cli.probe {
        if cli.probe_size < 40 || cli.probe_size > 65_507 {
            anyhow::bail!("--probe-size must be 40..65507 bytes, got {}", cli.probe_size);
        }
        if cli.probe_interval < 0.05 {
            anyhow::bail!(
                "--probe-interval must be at least 0.05 ms, got {}",
                cli.probe_interval
            );
        }
        ClientMode::Probe {
            interval: Duration::from_secs_f64(cli.probe_interval / 1000.0),
            size: cli.probe_size,
        }
    } else if let Some(r) = &cli.rr {
        ClientMode::Rr {
            response: parse_size(r).map_err(|e| anyhow::anyhow!("--rr: {e}"))?,
            new_conn: cli.rr_new_conn,
            interval: Duration::from_secs_f64(cli.rr_interval.max(0.0) / 1000.0),
        }
    } else {
        ClientMode::Bulk
    };
    Ok(ClientConfig {
        common: common(cli)?,
        host: host.to_string(),
        mode,
        protocol: if cli.udp { Protocol::Udp } else { Protocol::Tcp },
        time: cli.time,
        bytes: size("-n", &cli.bytes)?,
        blocks: size("-k", &cli.blocks)?,
        parallel: cli.parallel,
        reverse: cli.reverse,
        bidir: cli.bidir,
        window: size("-w", &cli.window)?,
        len,
        rate,
        burst,
        mss: cli.mss.unwrap_or(0),
        congestion: cli.congestion.clone(),
        nodelay: cli.nodelay,
        zerocopy: cli.zerocopy,
        omit: cli.omit,
        tos: cli.tos,
        title: cli.title.clone(),
        extra_data: cli.extra_data.clone(),
        get_server_output: cli.get_server_output,
        udp_counters_64bit: cli.udp_counters_64bit,
        repeating_payload: cli.repeating_payload,
        connect_timeout: Duration::from_millis(cli.connect_timeout.max(1)),
        cport: cli.cport,
        no_gso: cli.no_gso,
        tcp_info_interval: cli
            .tcp_info_interval
            .map(|ms| Duration::from_secs_f64(ms.max(1.0) / 1000.0)),
    })
}

fn server_config(cli: &Cli) -> anyhow::Result<ServerConfig> {
    Ok(ServerConfig {
        common: common(cli)?,
        one_off: cli.one_off,
        limits: Limits {
            max_time: cli.max_duration,
            max_parallel: cli.max_parallel,
            max_bandwidth: parse_rate(&cli.max_rate).map_err(|e| anyhow::anyhow!("--max-rate: {e}"))?,
            ..Limits::default()
        },
        max_tests: cli.max_tests.max(1),
        handshake_timeout: Duration::from_secs_f64(cli.handshake_timeout.max(0.1)),
        ..ServerConfig::default()
    })
}

fn sink(cli: &Cli) -> anyhow::Result<Sink> {
    Ok(match &cli.logfile {
        Some(p) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| anyhow::anyhow!("--logfile {}: {e}", p.display()))?;
            Sink::File(Arc::new(Mutex::new(f)))
        }
        None => Sink::Stdout,
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let run = || -> anyhow::Result<()> {
        match (&cli.client, cli.server) {
            (Some(_), true) => anyhow::bail!("cannot be both server (-s) and client (-c)"),
            (None, false) => anyhow::bail!("parameter error - must either be a client (-c) or server (-s)"),
            (Some(host), false) => {
                let cfg = client_config(&cli, host)?;
                client::run(&cfg, sink(&cli)?)?;
            }
            (None, true) => {
                let cfg = server_config(&cli)?;
                server::run(&cfg, sink(&cli)?)?;
            }
        }
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("netrig-perf: error - {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn iperf3_style_flags_parse() {
        let cli = Cli::try_parse_from([
            "netrig-perf",
            "-c",
            "h",
            "-u",
            "-b",
            "10M/5",
            "-l",
            "1K",
            "-P",
            "2",
            "-R",
            "-1",
        ])
        .unwrap();
        let cfg = client_config(&cli, "h").unwrap();
        assert_eq!(
            (cfg.rate, cfg.burst, cfg.len, cfg.parallel, cfg.reverse),
            (Some(10_000_000), 5, 1024, 2, true)
        );
    }
}
