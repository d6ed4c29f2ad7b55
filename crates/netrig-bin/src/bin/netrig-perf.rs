//! netrig-perf: iperf3's command line and protocol, with netrig's extras.
//!
//! Owns only the command line: iperf3's flags (checked as iperf3 checks them, values
//! in `perf_flags`) turned into the `netrig-perf` crate's client or server
//! configuration, then run. The protocol, the tests and their output live in that
//! crate; errors reach the user through `anyhow` here only.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Parser;
use netrig_core::iperf3::{Limits, Protocol};
use netrig_core::tos::parse_dscp;
use netrig_core::units::{parse_rate, parse_size, UnitFormat};
use netrig_perf::auth::AuthKey;
use netrig_perf::client;
use netrig_perf::config::{
    ClientConfig, ClientMode, Common, Family, Format, ServerConfig, DEFAULT_RCV_TIMEOUT,
};
use netrig_perf::daemon::{self, Pidfile};

#[path = "../perf_flags.rs"]
mod perf_flags;
use netrig_perf::output::Sink;
use netrig_perf::server;
use perf_flags::{parse_affinity, parse_bitrate_limit, parse_flowlabel, seconds, server_caps};

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
    /// Shared key: a client proves it, a server demands it (a proof per connection,
    /// over the server's challenge and the test's parameters). Visible to every user in
    /// ps: prefer --auth-key-file, or the key in NETRIG_PERF_KEY (used when neither
    /// flag is given).
    #[arg(long, value_name = "KEY")]
    auth_key: Option<String>,
    /// Shared key, read from FILE (readable by its owner only, as ssh demands of
    /// private keys; one trailing newline is dropped).
    #[arg(long, value_name = "FILE", conflicts_with = "auth_key")]
    auth_key_file: Option<PathBuf>,

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
    /// Server: seconds a new connection may take, from its accept, to send its cookie
    /// and parameters (one deadline, not per read).
    #[arg(long, default_value_t = 5.0)]
    handshake_timeout: f64,
    /// Server, netrig only: connections waiting for their handshake, in all; past it
    /// the longest-waiting one is closed.
    #[arg(long, default_value_t = 256)]
    max_pending: usize,
    /// Server, netrig only: connections waiting for their handshake per source address
    /// (IPv6: per /64); past it that source's longest-waiting one is closed.
    #[arg(long, default_value_t = 16)]
    max_pending_per_source: usize,
    /// Server, netrig only: tests served at once from one address (IPv6: per /64),
    /// below --max-tests (default a quarter of it, at least 1); more are refused as busy.
    #[arg(long, value_name = "N")]
    max_tests_per_source: Option<usize>,
    /// Server, netrig only: data streams (a thread each) of all tests at once (default
    /// 1024); one address's tests hold at most its share (as --max-tests-per-source is
    /// of --max-tests). A test that would go over is refused as busy.
    #[arg(long, value_name = "N")]
    max_streams: Option<usize>,
    /// Server, netrig only: seconds past a test's declared end (-O and -t, or
    /// --max-duration for -n/-k) its client has to end it (default 10, at least
    /// --handshake-timeout); then the server ends the test, and closes it whatever the
    /// client does one --handshake-timeout later.
    #[arg(long, value_name = "SECS")]
    grace: Option<f64>,
    /// Server, netrig only: end every test and exit SECS after starting.
    #[arg(long, value_name = "SECS")]
    exit_after: Option<f64>,

    // --- client ---
    /// UDP instead of TCP.
    #[arg(short = 'u', long)]
    udp: bool,
    /// Seconds to transmit (default 10).
    #[arg(short = 't', long)]
    time: Option<u64>,
    /// Bytes to transmit (instead of -t), e.g. 10M.
    #[arg(short = 'n', long = "bytes")]
    bytes: Option<String>,
    /// Blocks to transmit (instead of -t or -n).
    #[arg(short = 'k', long = "blockcount")]
    blocks: Option<String>,
    /// Rate per stream in bit/s, optionally /burst packets (UDP default 1M, TCP unlimited).
    #[arg(
        short = 'b',
        long = "bitrate",
        alias = "bandwidth",
        value_name = "RATE[/BURST]"
    )]
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
    #[arg(short = 'C', long = "congestion", alias = "linux-congestion")]
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

    // --- iperf3 3.12's other flags ---
    /// Bitrate unit: k/m/g/t = Kbits..Tbits/sec, K/M/G/T = KBytes..TBytes/sec (1024s);
    /// also a/A adaptive (default a), b/B, and KB/MB/GB/TB (= K/M/G/T).
    #[arg(short = 'f', long = "format", value_name = "UNIT")]
    format_unit: Option<String>,
    /// Prefix every text line with the local time in strftime FORMAT (default "%c ").
    #[arg(long, value_name = "FORMAT", num_args = 0..=1, require_equals = true, default_missing_value = netrig_perf::timestamp::DEFAULT_FORMAT)]
    timestamps: Option<String>,
    /// Send the file's bytes (client; the test ends at its end), or write what arrives
    /// (server, or client with -R). One TCP stream.
    #[arg(short = 'F', long = "file", value_name = "NAME")]
    file: Option<PathBuf>,
    /// Run on CPU n; a client's ",m" asks the server to run the test on CPU m.
    #[arg(short = 'A', long = "affinity", value_name = "n[,m]")]
    affinity: Option<String>,
    /// Server: run in the background (returns once it listens).
    #[arg(short = 'D', long)]
    daemon: bool,
    /// Write the PID to FILE (removed at exit).
    #[arg(short = 'I', long = "pidfile", value_name = "FILE")]
    pidfile: Option<PathBuf>,
    /// DSCP code point 0-63 or a name (EF, AF11..AF43, CS0..CS7); sets TOS = DSCP << 2.
    #[arg(long, value_name = "VAL")]
    dscp: Option<String>,
    /// SO_MAX_PACING_RATE on every data socket, in bit/s (e.g. 100M).
    #[arg(long, value_name = "RATE")]
    fq_rate: Option<String>,
    /// Deprecated in iperf3: no socket pacing (--fq-rate 0, the default).
    #[arg(long, hide = true)]
    no_fq_socket_pacing: bool,
    /// TCP_USER_TIMEOUT on the client's TCP streams: ms unacknowledged data may wait.
    #[arg(long, value_name = "MS")]
    snd_timeout: Option<u64>,
    /// End a test when the receiving side gets nothing for MS (default 120000).
    #[arg(long, value_name = "MS")]
    rcv_timeout: Option<u64>,
    /// Server: with no test for SECS, reopen the listening socket (-1: exit).
    #[arg(long, value_name = "SECS")]
    idle_timeout: Option<u64>,
    /// Server: end a test whose total rate, averaged over SECS (default 5), exceeds RATE.
    #[arg(long, value_name = "RATE[/SECS]")]
    server_bitrate_limit: Option<String>,
    /// Pacing timer in microseconds (default 1000), sent to the server as iperf3 does.
    #[arg(long, value_name = "USEC")]
    pacing_timer: Option<String>,
    /// UDP: set Don't Fragment (IP_MTU_DISCOVER = IP_PMTUDISC_DO).
    #[arg(long)]
    dont_fragment: bool,
    /// Bind every socket to the interface DEV (SO_BINDTODEVICE).
    #[arg(long, value_name = "DEV")]
    bind_dev: Option<String>,
    /// Diagnostic lines on stderr (parameters, socket options read back, timeouts).
    #[arg(short = 'd', long)]
    debug: bool,
    /// IPv6 flow label of the TCP streams (1..0xfffff; decimal, 0x hex or 0 octal).
    #[arg(short = 'L', long = "flowlabel", value_name = "N")]
    flowlabel: Option<String>,

    // --- iperf3 flags that cannot mean anything here: accepted only to say why ---
    /// Not supported: SCTP (use TCP or -u).
    #[arg(long, hide = true)]
    sctp: bool,
    /// Not supported: SCTP address binding (use -B).
    #[arg(short = 'X', long = "xbind", value_name = "NAME", hide = true)]
    xbind: Option<String>,
    /// Not supported: SCTP streams (use -P).
    #[arg(long, value_name = "N", hide = true)]
    nstreams: Option<String>,
    /// Not supported: iperf3's RSA authentication (use --auth-key).
    #[arg(long, hide = true)]
    username: Option<String>,
    #[arg(long, hide = true)]
    rsa_public_key_path: Option<String>,
    #[arg(long, hide = true)]
    rsa_private_key_path: Option<String>,
    #[arg(long, hide = true)]
    authorized_users_path: Option<String>,
    #[arg(long, hide = true)]
    time_skew_threshold: Option<String>,
    #[arg(long, hide = true)]
    use_pkcs1_padding: bool,
}

/// Why each iperf3 flag netrig-perf cannot honour is refused, and what to use instead.
fn unsupported(cli: &Cli) -> anyhow::Result<()> {
    const SCTP: &str = "netrig-perf has no SCTP (iperf3 has it only when built with libsctp)";
    const RSA: &str = "iperf3's RSA authentication is not implemented; use --auth-key-file FILE (or NETRIG_PERF_KEY, or --auth-key KEY) on client and server: a shared key, proven with HMAC-SHA256 over the server's challenge, the cookie and the test's parameters";
    let given: [(bool, &str, &str, &str); 9] = [
        (cli.sctp, "--sctp", SCTP, "; test TCP (the default) or UDP (-u)"),
        (
            cli.xbind.is_some(),
            "-X/--xbind",
            SCTP,
            "; to choose the local address use -B ADDR",
        ),
        (
            cli.nstreams.is_some(),
            "--nstreams",
            SCTP,
            "; for parallel streams use -P N",
        ),
        (cli.username.is_some(), "--username", RSA, ""),
        (
            cli.rsa_public_key_path.is_some(),
            "--rsa-public-key-path",
            RSA,
            "",
        ),
        (
            cli.rsa_private_key_path.is_some(),
            "--rsa-private-key-path",
            RSA,
            "",
        ),
        (
            cli.authorized_users_path.is_some(),
            "--authorized-users-path",
            RSA,
            "",
        ),
        (
            cli.time_skew_threshold.is_some(),
            "--time-skew-threshold",
            RSA,
            "",
        ),
        (cli.use_pkcs1_padding, "--use-pkcs1-padding", RSA, ""),
    ];
    match given.iter().find(|g| g.0) {
        Some((_, flag, why, instead)) => anyhow::bail!("{flag} is not supported: {why}{instead}"),
        None => Ok(()),
    }
}

/// Flags of the other role are errors, as in iperf3 (IECLIENTONLY, IESERVERONLY).
fn role_checks(cli: &Cli) -> anyhow::Result<()> {
    let client_only: [(bool, &str); 8] = [
        (cli.dscp.is_some(), "--dscp"),
        (cli.fq_rate.is_some(), "--fq-rate"),
        (cli.no_fq_socket_pacing, "--no-fq-socket-pacing"),
        (cli.flowlabel.is_some(), "-L/--flowlabel"),
        (cli.dont_fragment, "--dont-fragment"),
        (cli.pacing_timer.is_some(), "--pacing-timer"),
        (cli.snd_timeout.is_some(), "--snd-timeout"),
        (cli.affinity.as_deref().is_some_and(|a| a.contains(',')), "-A n,m"),
    ];
    let server_only: [(bool, &str); 7] = [
        (cli.daemon, "-D/--daemon"),
        (cli.idle_timeout.is_some(), "--idle-timeout"),
        (cli.server_bitrate_limit.is_some(), "--server-bitrate-limit"),
        (cli.max_tests_per_source.is_some(), "--max-tests-per-source"),
        (cli.max_streams.is_some(), "--max-streams"),
        (cli.grace.is_some(), "--grace"),
        (cli.exit_after.is_some(), "--exit-after"),
    ];
    if cli.server {
        if let Some((_, f)) = client_only.iter().find(|c| c.0) {
            anyhow::bail!("{f} is a client option (the client sends it to the server)");
        }
    } else if let Some((_, f)) = server_only.iter().find(|c| c.0) {
        anyhow::bail!("{f} is a server option (-s)");
    }
    Ok(())
}

fn size(flag: &str, v: &Option<String>) -> anyhow::Result<u64> {
    match v {
        None => Ok(0),
        Some(t) => parse_size(t).map_err(|e| anyhow::anyhow!("{flag}: {e}")),
    }
}

/// The shared key: from --auth-key-file or --auth-key, else from NETRIG_PERF_KEY.
fn auth_key(cli: &Cli) -> anyhow::Result<Option<AuthKey>> {
    if let Some(path) = &cli.auth_key_file {
        return Ok(Some(netrig_perf::auth::read_key_file(path)?));
    }
    let (key, whence) = match &cli.auth_key {
        Some(k) => (k.as_bytes().to_vec(), "--auth-key"),
        None => match std::env::var_os("NETRIG_PERF_KEY") {
            Some(k) => (k.into_encoded_bytes(), "NETRIG_PERF_KEY"),
            None => return Ok(None),
        },
    };
    AuthKey::new(key)
        .map(Some)
        .ok_or_else(|| anyhow::anyhow!("{whence}: the key is empty"))
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
        auth_key: auth_key(cli)?,
        units: match &cli.format_unit {
            Some(f) => UnitFormat::parse(f).map_err(|_| {
                anyhow::anyhow!("-f: '{f}' is not a unit: k m g t (bits), K M G T (bytes), a A (adaptive), b B, KB MB GB TB")
            })?,
            None => UnitFormat::default(),
        },
        timestamps: match &cli.timestamps {
            Some(f) => {
                netrig_perf::timestamp::now(f).map_err(|e| anyhow::anyhow!("{e}"))?;
                Some(f.clone())
            }
            None => None,
        },
        debug: cli.debug,
        bind_dev: cli.bind_dev.clone(),
        affinity: cli.affinity.as_deref().map(parse_affinity).transpose()?.map(|a| a.0),
        file: cli.file.as_deref().map(std::path::absolute).transpose()?,
        rcv_timeout: match cli.rcv_timeout {
            Some(ms) if !(100..=86_400_000).contains(&ms) => {
                anyhow::bail!("--rcv-timeout: {ms} ms is outside 100..86400000")
            }
            Some(ms) => Duration::from_millis(ms),
            None => DEFAULT_RCV_TIMEOUT,
        },
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
    let receives = cli.reverse || cli.bidir;
    if cli.rcv_timeout.is_some() && !receives {
        anyhow::bail!(
            "--rcv-timeout: client receive timeout is valid only in receiving mode (-R or --bidir)"
        );
    }
    if cli.reverse && cli.snd_timeout.is_some() {
        anyhow::bail!(
            "--snd-timeout sets TCP_USER_TIMEOUT on the client's sockets, as iperf3; with -R the server sends, so it would do nothing"
        );
    }
    if cli.udp && cli.snd_timeout.is_some() {
        anyhow::bail!("--snd-timeout sets TCP_USER_TIMEOUT, a TCP option; it does nothing for UDP (-u)");
    }
    if !cli.udp && cli.dont_fragment {
        anyhow::bail!("--dont-fragment applies to UDP (-u), as in iperf3; TCP sets Don't Fragment itself (path MTU discovery)");
    }
    let flowlabel = cli
        .flowlabel
        .as_deref()
        .map(parse_flowlabel)
        .transpose()?
        .unwrap_or(0);
    if flowlabel > 0 && (cli.udp || cli.v4) {
        anyhow::bail!("-L/--flowlabel labels IPv6 TCP streams, as iperf3; not with -u or -4");
    }
    let tos = match (&cli.dscp, cli.tos) {
        (Some(_), t) if t != 0 => anyhow::bail!("-S and --dscp both set the TOS byte; give one"),
        (Some(d), _) => parse_dscp(d).map_err(|e| anyhow::anyhow!("--dscp: {e}"))? as u32,
        (None, t) if t > 255 => anyhow::bail!("-S: {t} is not a TOS byte 0-255"),
        (None, t) => t,
    };
    let mut bytes = size("-n", &cli.bytes)?;
    if let Some(f) = &cli.file {
        let why = if cli.probe || cli.rr.is_some() {
            Some("--probe or --rr: their payloads are requests and replies, not a transfer")
        } else if cli.udp {
            Some("UDP (-u): the sequence header overwrites file bytes and datagrams may be lost")
        } else if cli.parallel > 1 {
            Some("-P above 1: every stream would send the whole file, into one receiving file")
        } else if cli.bidir {
            Some("--bidir: one file cannot be both read and written")
        } else if !cli.reverse && (cli.bitrate.is_some() || cli.zerocopy || cli.repeating_payload) {
            Some("-b, -Z or --repeating-payload: the file's bytes are sent as they are read, as fast as TCP takes them")
        } else {
            None
        };
        if let Some(why) = why {
            anyhow::bail!("-F {} cannot be used with {why}", f.display());
        }
        if !cli.reverse {
            let meta = std::fs::metadata(f).map_err(|e| anyhow::anyhow!("-F {}: {e}", f.display()))?;
            // As iperf3: without -t, -n or -k, the file's size is the test's length.
            if cli.time.is_none() && bytes == 0 && cli.blocks.is_none() {
                if meta.len() == 0 {
                    anyhow::bail!("-F {}: the file is empty", f.display());
                }
                bytes = meta.len();
            }
        }
    }
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
        time: cli.time.unwrap_or(10),
        bytes,
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
        tos,
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
        server_affinity: cli
            .affinity
            .as_deref()
            .map(parse_affinity)
            .transpose()?
            .and_then(|a| a.1),
        fq_rate: match (&cli.fq_rate, cli.no_fq_socket_pacing) {
            (Some(_), true) => anyhow::bail!("--fq-rate and --no-fq-socket-pacing contradict each other"),
            (Some(r), false) => parse_rate(r).map_err(|e| anyhow::anyhow!("--fq-rate: {e}"))?,
            (None, _) => 0,
        },
        snd_timeout: match cli.snd_timeout {
            Some(ms) if ms > 86_400_000 => anyhow::bail!("--snd-timeout: {ms} ms is above 86400000"),
            Some(ms) => Some(Duration::from_millis(ms)),
            None => None,
        },
        pacing_timer_us: match &cli.pacing_timer {
            Some(t) => match parse_size(t) {
                Ok(us) if (1..=10_000_000).contains(&us) => us,
                _ => anyhow::bail!("--pacing-timer: '{t}' is not 1..10000000 microseconds"),
            },
            None => 1000,
        },
        dont_fragment: cli.dont_fragment,
        flowlabel,
    })
}

fn server_config(cli: &Cli) -> anyhow::Result<ServerConfig> {
    let max_tests = cli.max_tests.max(1);
    let (max_tests_per_source, max_streams) =
        server_caps(max_tests, cli.max_tests_per_source, cli.max_streams)?;
    Ok(ServerConfig {
        common: common(cli)?,
        one_off: cli.one_off,
        limits: Limits {
            max_time: cli.max_duration,
            max_parallel: cli.max_parallel,
            max_bandwidth: parse_rate(&cli.max_rate).map_err(|e| anyhow::anyhow!("--max-rate: {e}"))?,
            ..Limits::default()
        },
        max_tests,
        max_tests_per_source,
        max_streams,
        grace: match cli.grace {
            Some(s) => seconds("--grace", s, 0.0, 86_400.0)?,
            None => ServerConfig::default().grace,
        },
        exit_after: cli
            .exit_after
            .map(|s| seconds("--exit-after", s, 0.1, 2_592_000.0))
            .transpose()?,
        handshake_timeout: Duration::from_secs_f64(cli.handshake_timeout.max(0.1)),
        max_pending: match cli.max_pending {
            n @ 1..=65_536 => n,
            n => anyhow::bail!("--max-pending: {n} is outside 1..65536"),
        },
        max_pending_per_source: match cli.max_pending_per_source {
            n @ 1..=65_536 => n,
            n => anyhow::bail!("--max-pending-per-source: {n} is outside 1..65536"),
        },
        idle_timeout: match cli.idle_timeout {
            Some(s) if !(1..=86_400).contains(&s) => {
                anyhow::bail!("--idle-timeout: {s} s is outside 1..86400")
            }
            Some(s) => Some(Duration::from_secs(s)),
            None => None,
        },
        bitrate_limit: cli
            .server_bitrate_limit
            .as_deref()
            .map(parse_bitrate_limit)
            .transpose()?
            .flatten(),
        ..ServerConfig::default()
    })
}

/// `-A n`: this process's CPU (before any thread starts, so all inherit it).
fn pin(common: &Common) -> anyhow::Result<()> {
    if let Some(cpu) = common.affinity {
        netrig_perf::sockopt::set_cpu_affinity(cpu).map_err(|e| anyhow::anyhow!("-A: {e}"))?;
        netrig_perf::debug::line(|| {
            format!("pinned to CPU {cpu}: {:?}", netrig_perf::sockopt::cpu_affinity())
        });
    }
    Ok(())
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
    let mut cli = Cli::parse();
    let run = |cli: &mut Cli| -> anyhow::Result<()> {
        unsupported(cli)?;
        role_checks(cli)?;
        // -D leaves the working directory: every path becomes absolute first.
        cli.logfile = cli.logfile.as_deref().map(std::path::absolute).transpose()?;
        cli.pidfile = cli.pidfile.as_deref().map(std::path::absolute).transpose()?;
        netrig_perf::debug::enable(cli.debug);
        if cli.no_fq_socket_pacing {
            eprintln!("netrig-perf: warning - --no-fq-socket-pacing is deprecated (as in iperf3); socket pacing is off unless --fq-rate is given");
        }
        if cli.format_unit.is_some() && (cli.json || cli.json_stream) {
            eprintln!("netrig-perf: warning - report format (-f) flag ignored with JSON output (-J)");
        }
        let cli = &*cli;
        match (&cli.client, cli.server) {
            (Some(_), true) => anyhow::bail!("cannot be both server (-s) and client (-c)"),
            (None, false) => anyhow::bail!("parameter error - must either be a client (-c) or server (-s)"),
            (Some(host), false) => {
                let cfg = client_config(cli, host)?;
                let _pidfile = cli.pidfile.as_deref().map(Pidfile::create).transpose()?;
                pin(&cfg.common)?;
                client::run(&cfg, sink(cli)?)?;
            }
            (None, true) => {
                let cfg = server_config(cli)?;
                let ready = if cli.daemon {
                    // SAFETY: main has started no thread yet; the server starts its own
                    // after this returns, in the child.
                    Some(unsafe { daemon::daemonize(cli.logfile.as_deref()) }?)
                } else {
                    None
                };
                if let Err(e) = pin(&cfg.common) {
                    if let Some(r) = ready {
                        r.report(Err(e.to_string()));
                    }
                    return Err(e);
                }
                // The pidfile is written once the server listens, so a daemon that
                // cannot listen leaves none behind.
                let mut pidfile = None;
                server::run_then(&cfg, sink(cli)?, |outcome| {
                    let outcome = outcome.and_then(|()| {
                        pidfile = cli
                            .pidfile
                            .as_deref()
                            .map(Pidfile::create)
                            .transpose()
                            .map_err(|e| e.to_string())?;
                        Ok(())
                    });
                    if let Some(r) = ready {
                        r.report(outcome.clone());
                    }
                    outcome
                })?;
                drop(pidfile);
            }
        }
        Ok(())
    };
    match run(&mut cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("netrig-perf: error - {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
#[path = "../perf_cli_tests.rs"]
mod tests;
