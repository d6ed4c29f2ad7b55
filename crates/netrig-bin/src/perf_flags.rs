//! Values of netrig-perf's iperf3 flags that take more than a number: `-A n[,m]`,
//! `--server-bitrate-limit RATE[/SECS]`, `-L N`, each checked as iperf3 checks it; and
//! the server's own limits that depend on each other (`--max-tests-per-source`,
//! `--max-streams`) and its seconds (`--grace`, `--exit-after`).

use std::time::Duration;

use netrig_core::units::parse_rate;
use netrig_perf::config::{tests_per_source, BitrateLimit, DEFAULT_MAX_STREAMS};

/// `-A n[,m]`: this side's CPU and the one asked of the server (0..1024, as iperf3).
pub fn parse_affinity(text: &str) -> anyhow::Result<(usize, Option<u32>)> {
    let cpu = |t: &str| -> anyhow::Result<u32> {
        match t.trim().parse::<u32>() {
            Ok(n) if n <= 1024 => Ok(n),
            _ => anyhow::bail!("-A: '{t}' is not a CPU number 0-1024 (-A n or -A n,m)"),
        }
    };
    match text.split_once(',') {
        Some((n, m)) => Ok((cpu(n)? as usize, Some(cpu(m)?))),
        None => Ok((cpu(text)? as usize, None)),
    }
}

/// `--server-bitrate-limit RATE[/SECS]`: RATE in bit/s (K/M/G in 1000s), SECS of
/// averaging 0.1..60 (default 5, as iperf3); RATE 0 = no limit.
pub fn parse_bitrate_limit(text: &str) -> anyhow::Result<Option<BitrateLimit>> {
    let (rate, window) = match text.split_once('/') {
        Some((r, w)) => {
            let secs: f64 = w
                .parse()
                .map_err(|_| anyhow::anyhow!("--server-bitrate-limit: '{w}' is not a number of seconds"))?;
            if !(0.1..=60.0).contains(&secs) {
                anyhow::bail!(
                    "--server-bitrate-limit: the averaging interval must be 0.1..60 seconds, got {w}"
                );
            }
            (r, Duration::from_secs_f64(secs))
        }
        None => (text, Duration::from_secs(5)),
    };
    let bps = parse_rate(rate).map_err(|e| anyhow::anyhow!("--server-bitrate-limit: {e}"))?;
    Ok((bps > 0).then_some(BitrateLimit {
        bits_per_second: bps,
        window,
    }))
}

/// `-L N`: as C's strtol(.., 0), 1..0xfffff.
pub fn parse_flowlabel(text: &str) -> anyhow::Result<u32> {
    let v = if let Some(h) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()
    } else if text.len() > 1 && text.starts_with('0') {
        u32::from_str_radix(&text[1..], 8).ok()
    } else {
        text.parse().ok()
    };
    match v {
        Some(n) if (1..=0xf_ffff).contains(&n) => Ok(n),
        _ => anyhow::bail!("-L: '{text}' is not a flow label 1..0xfffff"),
    }
}

/// `--max-tests-per-source` (default a quarter of `--max-tests`, at least 1) and
/// `--max-streams` (default 1024), each 1..65536; one address's share of the slots is
/// below all of them (unless the server runs one test at a time).
pub fn server_caps(
    max_tests: usize,
    per_source: Option<usize>,
    streams: Option<usize>,
) -> anyhow::Result<(usize, usize)> {
    let per_source = match per_source {
        None => tests_per_source(max_tests),
        Some(n @ 1..=65_536) if n < max_tests || (max_tests == 1 && n == 1) => n,
        Some(n @ 1..=65_536) => anyhow::bail!(
            "--max-tests-per-source {n} must be below --max-tests {max_tests}, so that one address cannot take every test slot (raise --max-tests)"
        ),
        Some(n) => anyhow::bail!("--max-tests-per-source: {n} is outside 1..65536"),
    };
    let streams = match streams {
        None => DEFAULT_MAX_STREAMS,
        Some(n @ 1..=65_536) => n,
        Some(n) => anyhow::bail!("--max-streams: {n} is outside 1..65536"),
    };
    Ok((per_source, streams))
}

/// A server's seconds flag, within `lo..=hi`.
pub fn seconds(flag: &str, secs: f64, lo: f64, hi: f64) -> anyhow::Result<Duration> {
    if !(lo..=hi).contains(&secs) {
        anyhow::bail!("{flag}: {secs} s is outside {lo}..{hi} seconds");
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_bitrate_limit_syntax() {
        let l = |t: &str| parse_bitrate_limit(t);
        let secs = |s: f64| Duration::from_secs_f64(s);
        assert_eq!(l("10M").unwrap().unwrap().window, secs(5.0));
        assert_eq!(l("10M").unwrap().unwrap().bits_per_second, 10_000_000);
        assert_eq!(l("2.5G/0.5").unwrap().unwrap().bits_per_second, 2_500_000_000);
        assert_eq!(l("2.5G/0.5").unwrap().unwrap().window, secs(0.5));
        assert_eq!(l("0").unwrap(), None);
        assert!(l("10M/0").unwrap_err().to_string().contains("0.1..60"));
        assert!(l("10M/61").is_err());
        assert!(l("10M/x").unwrap_err().to_string().contains("seconds"));
        assert!(l("fast").is_err());
    }

    #[test]
    fn one_address_gets_a_share_of_the_slots_below_all_of_them() {
        assert_eq!(server_caps(64, None, None).unwrap(), (16, 1024));
        assert_eq!(server_caps(4, None, None).unwrap(), (1, 1024));
        assert_eq!(server_caps(1, None, None).unwrap(), (1, 1024));
        assert_eq!(server_caps(1, Some(1), None).unwrap(), (1, 1024));
        assert_eq!(server_caps(8, Some(7), Some(64)).unwrap(), (7, 64));
        let e = server_caps(4, Some(4), None).unwrap_err().to_string();
        assert!(e.contains("must be below --max-tests 4"), "{e}");
        assert!(server_caps(4, Some(0), None).is_err());
        assert!(server_caps(4, None, Some(0))
            .unwrap_err()
            .to_string()
            .contains("--max-streams"));
    }

    #[test]
    fn server_seconds_are_bounded() {
        assert_eq!(
            seconds("--grace", 1.5, 0.0, 10.0).unwrap(),
            Duration::from_millis(1500)
        );
        let e = seconds("--exit-after", 0.0, 0.1, 10.0).unwrap_err().to_string();
        assert!(e.starts_with("--exit-after: 0 s is outside"), "{e}");
        assert!(seconds("--grace", f64::NAN, 0.0, 10.0).is_err());
    }

    #[test]
    fn affinity_syntax() {
        assert_eq!(parse_affinity("3").unwrap(), (3, None));
        assert_eq!(parse_affinity("0,1").unwrap(), (0, Some(1)));
        assert!(parse_affinity("1025").is_err());
        assert!(parse_affinity("a,1").is_err());
        assert!(parse_affinity("1,").is_err());
    }
}
