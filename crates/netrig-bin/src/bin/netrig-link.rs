//! netrig-link: the user-space link emulator (delay, loss, jitter, rate, AQMs).
//!
//! Owns only the command line: `run` (the daemon on a configuration file), `shell` (a
//! command behind one emulated link, its direction built from flags), `clean`, and the
//! hidden `forward` (the bare forwarder benches measure the floor with), turned
//! into the `netrig-link` crate's `Config` and `DirectionSpec` (netrig-core). The daemon,
//! the shell and the link model live in those crates; errors reach the user through
//! `anyhow` here only.

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use netrig_core::link::spec::{ChanceSpec, DirectionSpec, LossSpec, QueueSpec, TraceSpec};
use netrig_core::units::{parse_bitrate, parse_duration_ns, parse_probability};
use netrig_link::config::Config;
use netrig_link::daemon::{self, Daemon};
use netrig_link::forward;
use netrig_link::shell::{self, Shell};

#[derive(Parser)]
#[command(
    name = "netrig-link",
    version,
    about = "User-space link emulator: rate, delay, jitter, loss, AQMs"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Emulate the links of a JSON configuration until SIGTERM or a shutdown request.
    Run {
        /// The configuration file.
        #[arg(long)]
        config: String,
    },
    /// Run COMMAND in a namespace behind one emulated link to this host (mahimahi-style).
    Shell(Box<ShellArgs>),
    /// Remove namespaces and links left by shells whose process is gone.
    Clean,
    /// Print the link-spec schema (JSON): every key of a link direction, its unit, range
    /// and default, and each queue discipline's parameters.
    Schema,
    /// Forward frames both ways between two interfaces with nothing else (no emulation):
    /// the floor of the daemon's I/O, for benches.
    #[command(hide = true)]
    Forward(ForwardArgs),
}

#[derive(Args)]
struct ForwardArgs {
    /// One end (an interface in this namespace).
    #[arg(long)]
    a: String,
    /// The other end.
    #[arg(long)]
    b: String,
    /// How frames are read: recvmmsg or ring (TPACKET_V2, mmap).
    #[arg(long, default_value = "recvmmsg")]
    io: String,
    /// 1: one thread for both directions; 2: one per direction.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Stop after this many seconds (or on SIGTERM).
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Keep the ends' offloads (superframes pass whole, with a virtio-net header).
    #[arg(long)]
    offloads_on: bool,
    /// MiB of receive ring per direction (--io ring).
    #[arg(long, default_value_t = 8)]
    ring_mb: usize,
    /// The most frames read and sent at once.
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// Send past the devices' qdiscs (PACKET_QDISC_BYPASS).
    #[arg(long)]
    qdisc_bypass: bool,
    /// Keep looking for frames this many µs after the last before sleeping.
    #[arg(long, default_value_t = 0)]
    spin_us: u64,
    /// Hold each frame this many µs and release it on time, recording how late (the
    /// floor of a delay line's release lateness; with --rate-mbit, after the wire).
    #[arg(long)]
    delay_us: Option<u64>,
    /// With --delay-us: a wire of this rate ahead of the delay (0: none).
    #[arg(long, default_value_t = 0.0)]
    rate_mbit: f64,
    /// With --delay-us and --rate-mbit: the FIFO's size in frames (drop-tail).
    #[arg(long, default_value_t = 1000)]
    limit: usize,
}

#[derive(Args)]
#[command(
    after_help = "Example: netrig-link shell --rate 10Mbit --delay 20ms --aqm pie -- ping $NETRIG_LINK_HOST"
)]
struct ShellArgs {
    /// Rate of both directions (e.g. 10Mbit); unlimited if not given.
    #[arg(long)]
    rate: Option<String>,
    /// Rate from the shell outwards (overrides --rate).
    #[arg(long)]
    uplink_rate: Option<String>,
    /// Rate towards the shell (overrides --rate).
    #[arg(long)]
    downlink_rate: Option<String>,
    /// One-way delay of each direction (e.g. 20ms: RTT 40ms).
    #[arg(long, default_value = "0ms")]
    delay: String,
    /// Jitter of each direction's delay.
    #[arg(long, default_value = "0ms")]
    jitter: String,
    /// Jitter distribution: uniform, normal, pareto, paretonormal.
    #[arg(long)]
    distribution: Option<String>,
    /// Random loss of each direction (e.g. 1%).
    #[arg(long)]
    loss: Option<String>,
    /// Queue limit in packets.
    #[arg(long)]
    queue: Option<u32>,
    /// Queue discipline: droptail, red, codel, pie, fq_codel.
    #[arg(long, default_value = "droptail")]
    aqm: String,
    /// A mahimahi trace for the uplink (replaces the rate).
    #[arg(long)]
    uplink_trace: Option<String>,
    /// A mahimahi trace for the downlink.
    #[arg(long)]
    downlink_trace: Option<String>,
    /// Stats as JSON lines to this file.
    #[arg(long)]
    stats: Option<String>,
    /// Control socket path.
    #[arg(long)]
    control: Option<String>,
    /// Seed for every random element.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The command (after --).
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

fn direction(a: &ShellArgs, rate: &Option<String>, trace: &Option<String>) -> anyhow::Result<DirectionSpec> {
    let rate_bps = match (rate.as_ref().or(a.rate.as_ref()), trace) {
        (_, Some(_)) => None,
        (Some(r), None) => Some(parse_bitrate(r).map_err(|e| anyhow::anyhow!("rate: {e}"))?),
        (None, None) => None,
    };
    Ok(DirectionSpec {
        rate_bps,
        trace: trace.as_ref().map(|p| TraceSpec {
            path: Some(p.clone()),
            text: None,
            repeat: true,
            bytes_per_opportunity: 1500,
        }),
        queue: QueueSpec {
            discipline: a.aqm.clone(),
            limit_packets: a.queue,
            ..QueueSpec::default()
        },
        delay_ns: parse_duration_ns(&a.delay).map_err(|e| anyhow::anyhow!("--delay: {e}"))?,
        jitter_ns: parse_duration_ns(&a.jitter).map_err(|e| anyhow::anyhow!("--jitter: {e}"))?,
        distribution: a.distribution.clone(),
        loss: match &a.loss {
            Some(l) => Some(LossSpec::Random(ChanceSpec {
                p: parse_probability(l).map_err(|e| anyhow::anyhow!("--loss: {e}"))?,
                correlation: 0.0,
            })),
            None => None,
        },
        ..DirectionSpec::default()
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    daemon::install_signal_handlers();
    let result = (|| -> anyhow::Result<i32> {
        match cli.cmd {
            Cmd::Run { config } => {
                let text = std::fs::read_to_string(&config).map_err(|e| anyhow::anyhow!("{config}: {e}"))?;
                let cfg = Config::parse(&text).map_err(|e| anyhow::anyhow!("{config}: {e}"))?;
                let mut d = Daemon::new(&cfg)?;
                let names: Vec<&str> = cfg.links.iter().map(|l| l.name.as_str()).collect();
                println!(
                    "{}",
                    serde_json::json!({ "event": "ready", "pid": std::process::id(), "links": names, "control": cfg.control_path })
                );
                let totals = d.run()?;
                println!("{totals}");
                Ok(0)
            }
            Cmd::Shell(a) => {
                let up = direction(&a, &a.uplink_rate, &a.uplink_trace)?;
                let down = direction(&a, &a.downlink_rate, &a.downlink_trace)?;
                let cfg = Config {
                    spec_version: None,
                    links: vec![],
                    stats_interval_ms: 10.0,
                    stats_path: a.stats.clone(),
                    control_path: a.control.clone(),
                    seed: a.seed,
                    offloads_off: true,
                    pcap: vec![],
                    captures: vec![],
                    events: false,
                    realtime: false,
                    io: Default::default(),
                    ring_mb: 4,
                };
                let mut sh = Shell::new();
                eprintln!(
                    "netrig-link shell: {} inside, {} outside; {}",
                    sh.inner_addr(),
                    sh.host_addr(),
                    a.command.join(" ")
                );
                Ok(sh.run(cfg, up, down, &a.command)?)
            }
            Cmd::Schema => {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&netrig_core::link::schema::schema())?
                );
                Ok(0)
            }
            Cmd::Forward(f) => {
                let fwd = forward::Forward {
                    io: f.io.parse().map_err(|e: String| anyhow::anyhow!("--{e}"))?,
                    a: f.a,
                    b: f.b,
                    threads: f.threads,
                    seconds: f.seconds,
                    offloads_off: !f.offloads_on,
                    ring_bytes: f.ring_mb.saturating_mul(1 << 20),
                    batch: f.batch,
                    bypass: f.qdisc_bypass,
                    spin_ns: f.spin_us.saturating_mul(1000),
                    hold: f.delay_us.map(|us| forward::Hold {
                        delay_ns: us.saturating_mul(1000),
                        rate_bps: (f.rate_mbit.max(0.0) * 1e6) as u64,
                        limit: f.limit,
                    }),
                };
                if !(f.rate_mbit >= 0.0 && f.rate_mbit.is_finite()) {
                    anyhow::bail!("--rate-mbit {}: a rate of 0 (none) or more", f.rate_mbit);
                }
                if fwd.hold.is_none() && f.rate_mbit != 0.0 {
                    anyhow::bail!("--rate-mbit holds frames: give --delay-us too (0 for none)");
                }
                let done = fwd.run(|ready| println!("{ready}"))?;
                println!("{done}");
                Ok(0)
            }
            Cmd::Clean => {
                for ns in shell::clean() {
                    println!("removed {ns}");
                }
                Ok(0)
            }
        }
    })();
    match result {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("netrig-link: error - {e}");
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
    fn shell_flags_become_direction_specs() {
        let cli = Cli::try_parse_from([
            "netrig-link",
            "shell",
            "--rate",
            "10Mbit",
            "--downlink-rate",
            "2Mbit",
            "--delay",
            "20ms",
            "--loss",
            "1%",
            "--queue",
            "100",
            "--aqm",
            "pie",
            "--",
            "true",
        ])
        .unwrap();
        let Cmd::Shell(a) = cli.cmd else {
            panic!("not a shell")
        };
        let up = direction(&a, &a.uplink_rate, &a.uplink_trace).unwrap();
        let down = direction(&a, &a.downlink_rate, &a.downlink_trace).unwrap();
        assert_eq!((up.rate_bps, down.rate_bps), (Some(10_000_000), Some(2_000_000)));
        assert_eq!(up.delay_ns, 20_000_000);
        assert_eq!(up.queue.discipline, "pie");
        assert!(up.build(1, 0).is_ok());
        let bad = Cli::try_parse_from(["netrig-link", "shell", "--delay", "20", "--", "true"]).unwrap();
        let Cmd::Shell(a) = bad.cmd else { panic!() };
        assert!(direction(&a, &None, &None)
            .unwrap_err()
            .to_string()
            .contains("--delay"));
    }
}
