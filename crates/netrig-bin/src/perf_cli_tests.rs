//! Tests of netrig-perf's command line: flags to configurations, refusals and their words.

use super::*;
use clap::CommandFactory;
use netrig_perf::config::BitrateLimit;

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

fn cli(args: &[&str]) -> Cli {
    let mut all = vec!["netrig-perf"];
    all.extend_from_slice(args);
    Cli::try_parse_from(all).unwrap()
}

fn client(args: &[&str]) -> anyhow::Result<ClientConfig> {
    let mut all = vec!["-c", "h"];
    all.extend_from_slice(args);
    let c = cli(&all);
    unsupported(&c)?;
    role_checks(&c)?;
    client_config(&c, "h")
}

fn server(args: &[&str]) -> anyhow::Result<ServerConfig> {
    let mut all = vec!["-s"];
    all.extend_from_slice(args);
    let c = cli(&all);
    unsupported(&c)?;
    role_checks(&c)?;
    server_config(&c)
}

fn err(r: anyhow::Result<impl std::fmt::Debug>) -> String {
    r.unwrap_err().to_string()
}

#[test]
fn iperf3_3_12_flags_reach_the_config() {
    let c = client(&[
        "--bidir",
        "-f",
        "M",
        "--timestamps",
        "-d",
        "--bind-dev",
        "lo",
        "-A",
        "0,1",
        "--dscp",
        "AF41",
        "--fq-rate",
        "100M",
        "--snd-timeout",
        "2500",
        "--rcv-timeout",
        "1500",
        "--pacing-timer",
        "250",
        "-6",
        "-L",
        "0x12345",
    ])
    .unwrap();
    assert_eq!(c.common.units, UnitFormat::parse("M").unwrap());
    assert_eq!(c.common.timestamps.as_deref(), Some("%c "));
    assert!(c.common.debug);
    assert_eq!(c.common.bind_dev.as_deref(), Some("lo"));
    assert_eq!((c.common.affinity, c.server_affinity), (Some(0), Some(1)));
    assert_eq!(c.tos, 136);
    assert_eq!(c.fq_rate, 100_000_000);
    assert_eq!(c.snd_timeout, Some(Duration::from_millis(2500)));
    assert_eq!(c.common.rcv_timeout, Duration::from_millis(1500));
    assert_eq!((c.pacing_timer_us, c.flowlabel), (250, 0x12345));
    let c = client(&["-u", "--dont-fragment", "--timestamps=%s: "]).unwrap();
    assert!(c.dont_fragment);
    assert_eq!(c.common.timestamps.as_deref(), Some("%s: "));
    assert_eq!(c.common.rcv_timeout, DEFAULT_RCV_TIMEOUT);
    assert_eq!(c.pacing_timer_us, 1000);

    let s = server(&[
        "-D",
        "-I",
        "p.pid",
        "--idle-timeout",
        "30",
        "--server-bitrate-limit",
        "1G/2",
        "-A",
        "1",
    ])
    .unwrap();
    assert_eq!(s.idle_timeout, Some(Duration::from_secs(30)));
    assert_eq!(
        s.bitrate_limit,
        Some(BitrateLimit {
            bits_per_second: 1_000_000_000,
            window: Duration::from_secs(2)
        })
    );
    assert_eq!(s.common.affinity, Some(1));
}

#[test]
fn iperf3_aliases_and_deprecated_flags() {
    let c = client(&["--bandwidth", "5M", "--linux-congestion", "reno"]).unwrap();
    assert_eq!((c.rate, c.congestion.as_deref()), (Some(5_000_000), Some("reno")));
    assert_eq!(client(&["--no-fq-socket-pacing"]).unwrap().fq_rate, 0);
    assert!(err(client(&["--no-fq-socket-pacing", "--fq-rate", "1M"])).contains("contradict"));
}

#[test]
fn dscp_names_and_numbers_set_the_tos_byte() {
    for (v, tos) in [
        ("EF", 184),
        ("ef", 184),
        ("46", 184),
        ("AF11", 40),
        ("CS1", 32),
        ("0x3f", 252),
    ] {
        assert_eq!(client(&["--dscp", v]).unwrap().tos, tos, "{v}");
    }
    assert!(err(client(&["--dscp", "64"])).contains("--dscp"));
    assert!(err(client(&["--dscp", "EF2"])).contains("ef, af11..af43"));
    assert!(err(client(&["--dscp", "EF", "-S", "16"])).contains("both set the TOS"));
    assert_eq!(client(&["-S", "16"]).unwrap().tos, 16);
}

#[test]
fn format_letters_and_words() {
    for f in ["k", "m", "g", "t", "K", "M", "G", "T", "a", "A", "KB", "MB", "GB"] {
        assert!(client(&["-f", f]).is_ok(), "{f}");
    }
    assert_eq!(
        client(&["-f", "MB"]).unwrap().common.units,
        UnitFormat::parse("M").unwrap()
    );
    assert!(!client(&["-f", "m"]).unwrap().common.units.bytes);
    assert!(err(client(&["-f", "x"])).contains("-f: 'x' is not a unit"));
    assert!(err(client(&["-f", "Mbit"])).contains("not a unit"));
}

#[test]
fn flags_of_the_other_role_are_refused() {
    assert!(err(server(&["-A", "0,1"])).contains("client option"));
    assert!(err(server(&["--dscp", "EF"])).contains("--dscp is a client option"));
    assert!(err(server(&["--fq-rate", "1M"])).contains("client option"));
    assert!(err(client(&["--idle-timeout", "5"])).contains("--idle-timeout is a server option"));
    assert!(err(client(&["-D"])).contains("server option"));
    assert!(err(client(&["--server-bitrate-limit", "1M"])).contains("server option"));
}

#[test]
fn unsupported_flags_say_why_and_what_instead() {
    for (args, want) in [
        (vec!["--sctp"], "no SCTP"),
        (vec!["-X", "eth0"], "-B ADDR"),
        (vec!["--nstreams", "2"], "-P N"),
        (vec!["--username", "u"], "--auth-key"),
        (vec!["--rsa-public-key-path", "k"], "--auth-key"),
        (vec!["--use-pkcs1-padding"], "--auth-key"),
    ] {
        let e = err(client(&args));
        assert!(
            e.contains("is not supported") && e.contains(want),
            "{args:?}: {e}"
        );
    }
    for args in [
        vec!["--rsa-private-key-path", "k"],
        vec!["--authorized-users-path", "f"],
        vec!["--time-skew-threshold", "10"],
    ] {
        assert!(err(server(&args)).contains("RSA authentication is not implemented"));
    }
}

#[test]
fn timeouts_are_checked_as_iperf3_checks_them() {
    assert!(err(client(&["--rcv-timeout", "1000"])).contains("only in receiving mode"));
    assert!(client(&["--bidir", "--rcv-timeout", "1000"]).is_ok());
    assert!(err(client(&["-R", "--rcv-timeout", "50"])).contains("100..86400000"));
    assert!(err(client(&["-u", "--snd-timeout", "100"])).contains("TCP option"));
    assert!(err(client(&["-R", "--snd-timeout", "100"])).contains("with -R the server sends"));
    assert!(client(&["--bidir", "--snd-timeout", "100"]).is_ok());
    assert!(err(server(&["--idle-timeout", "0"])).contains("1..86400"));
    assert!(err(client(&["--pacing-timer", "0"])).contains("--pacing-timer"));
    assert_eq!(client(&["--pacing-timer", "2K"]).unwrap().pacing_timer_us, 2048);
}

#[test]
fn flowlabel_and_dont_fragment_rules() {
    assert_eq!(parse_flowlabel("0x12345").unwrap(), 0x12345);
    assert_eq!(parse_flowlabel("010").unwrap(), 8);
    assert!(parse_flowlabel("0").is_err());
    assert!(parse_flowlabel("0x100000").is_err());
    assert!(err(client(&["-L", "5", "-4"])).contains("IPv6"));
    assert!(err(client(&["-L", "5", "-u"])).contains("IPv6"));
    assert!(err(client(&["--dont-fragment"])).contains("UDP"));
}

#[test]
fn file_sets_the_length_and_its_limits() {
    let dir = std::env::temp_dir().join(format!("netrig-perf-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("data.bin");
    std::fs::write(&f, vec![7u8; 12_345]).unwrap();
    let name = f.to_str().unwrap();
    let c = client(&["-F", name]).unwrap();
    assert_eq!((c.bytes, c.common.file.as_deref()), (12_345, Some(f.as_path())));
    assert_eq!(
        client(&["-F", name, "-t", "3"]).unwrap().bytes,
        0,
        "-t overrides, as iperf3"
    );
    assert_eq!(client(&["-F", name, "-n", "1K"]).unwrap().bytes, 1024);
    assert!(err(client(&["-F", name, "-u"])).contains("UDP"));
    assert!(err(client(&["-F", name, "--probe"])).contains("--probe or --rr"));
    assert!(err(client(&["-F", name, "-P", "2"])).contains("-P above 1"));
    assert!(err(client(&["-F", name, "-b", "1M"])).contains("-b"));
    assert!(
        client(&["-F", name, "-R", "-b", "1M"]).is_ok(),
        "-b paces the server's sending"
    );
    assert!(err(client(&["-F", "/nonexistent/x"])).contains("/nonexistent/x"));
    std::fs::write(&f, b"").unwrap();
    assert!(err(client(&["-F", name])).contains("empty"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_key_comes_from_a_private_file_or_the_flag() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("netrig-perf-cli-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("key");
    std::fs::write(&f, b"s3cret\n").unwrap();
    let name = f.to_str().unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let c = client(&["--auth-key-file", name]).unwrap();
    assert_eq!(c.common.auth_key.unwrap().as_bytes(), b"s3cret");
    let s = server(&["--auth-key-file", name]).unwrap();
    assert_eq!(s.common.auth_key.unwrap().as_bytes(), b"s3cret");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = err(server(&["--auth-key-file", name]));
    assert!(
        e.contains(&format!("--auth-key-file {name}: permissions 0644 are too open")),
        "{e}"
    );
    assert!(
        Cli::try_parse_from(["netrig-perf", "-s", "--auth-key", "k", "--auth-key-file", name]).is_err(),
        "one key source at a time"
    );
    assert_eq!(
        client(&["--auth-key", "k"])
            .unwrap()
            .common
            .auth_key
            .unwrap()
            .as_bytes(),
        b"k"
    );
    assert!(err(client(&["--auth-key", ""])).contains("the key is empty"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_servers_share_per_address_its_streams_its_grace_and_its_end() {
    let d = server(&[]).unwrap();
    assert_eq!(
        (d.max_tests, d.max_tests_per_source, d.max_streams),
        (64, 16, 1024)
    );
    assert_eq!((d.grace, d.exit_after), (Duration::from_secs(10), None));
    let s = server(&[
        "--max-tests",
        "4",
        "--max-streams",
        "8",
        "--grace",
        "1",
        "--exit-after",
        "2.5",
    ])
    .unwrap();
    assert_eq!((s.max_tests, s.max_tests_per_source, s.max_streams), (4, 1, 8));
    assert_eq!(s.grace, Duration::from_secs(1));
    assert_eq!(s.exit_after, Some(Duration::from_millis(2500)));
    assert_eq!(
        server(&["--max-tests", "4", "--max-tests-per-source", "3"])
            .unwrap()
            .max_tests_per_source,
        3
    );
    assert!(err(server(&["--max-tests", "4", "--max-tests-per-source", "4"]))
        .contains("must be below --max-tests 4"));
    assert!(err(server(&["--exit-after", "0"])).contains("--exit-after: 0 s is outside"));
    for flag in [
        "--max-tests-per-source",
        "--max-streams",
        "--grace",
        "--exit-after",
    ] {
        assert!(
            err(client(&[flag, "2"])).contains(&format!("{flag} is a server option")),
            "{flag}"
        );
    }
}
