//! Units as iperf3 has them, on its own flags (documented in the README):
//! sizes (`-n`, `-l`, `-w`, `-k` suffixes) are binary, `64K` = 65 536 bytes;
//! rates (`-b`) are decimal, `10M` = 10 000 000 bit/s. Output follows iperf3 too:
//! byte counts in 1024s ("KBytes"), rates in 1000s ("Mbits/sec").

use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum UnitError {
    #[error("'{0}' is not a number with an optional K/M/G/T suffix")]
    Malformed(String),
    #[error("'{0}' is negative")]
    Negative(String),
    #[error("'{0}' is too large")]
    TooLarge(String),
}

fn split_suffix(text: &str) -> Result<(f64, Option<char>), UnitError> {
    let t = text.trim();
    let (num, suffix) = match t.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => (&t[..t.len() - 1], Some(c.to_ascii_uppercase())),
        _ => (t, None),
    };
    let value: f64 = num.parse().map_err(|_| UnitError::Malformed(text.to_string()))?;
    if !value.is_finite() {
        return Err(UnitError::Malformed(text.to_string()));
    }
    if value < 0.0 {
        return Err(UnitError::Negative(text.to_string()));
    }
    Ok((value, suffix))
}

fn scale(text: &str, base: f64) -> Result<f64, UnitError> {
    let (value, suffix) = split_suffix(text)?;
    let power = match suffix {
        None => 0,
        Some('K') => 1,
        Some('M') => 2,
        Some('G') => 3,
        Some('T') => 4,
        Some(_) => return Err(UnitError::Malformed(text.to_string())),
    };
    Ok(value * base.powi(power))
}

/// A size with binary suffixes, as iperf3 parses `-n 10M` (10 485 760 bytes).
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let v = scale(text, 1024.0)?;
    if v >= u64::MAX as f64 {
        return Err(UnitError::TooLarge(text.to_string()));
    }
    Ok(v as u64)
}

/// A rate in bit/s with decimal suffixes, as iperf3 parses `-b 10M` (10 000 000 bit/s).
pub fn parse_rate(text: &str) -> Result<u64, UnitError> {
    let v = scale(text, 1000.0)?;
    if v >= u64::MAX as f64 {
        return Err(UnitError::TooLarge(text.to_string()));
    }
    Ok(v as u64)
}

const BYTE_LABELS: [&str; 5] = ["Bytes", "KBytes", "MBytes", "GBytes", "TBytes"];
const BIT_LABELS: [&str; 5] = ["bits", "Kbits", "Mbits", "Gbits", "Tbits"];

fn fit(value: f64, base: f64, labels: &[&str; 5]) -> String {
    let mut v = value;
    let mut i = 0;
    while v >= base && i < labels.len() - 1 {
        v /= base;
        i += 1;
    }
    // Always four significant places, as iperf3 prints.
    if v < 9.995 {
        format!("{v:4.2} {}", labels[i])
    } else if v < 99.95 {
        format!("{v:4.1} {}", labels[i])
    } else {
        format!("{v:4.0} {}", labels[i])
    }
}

/// "1.10 GBytes": a byte count in 1024s.
pub fn format_bytes(bytes: f64) -> String {
    fit(bytes, 1024.0, &BYTE_LABELS)
}

/// "9.42 Gbits/sec": a rate in 1000s.
pub fn format_rate(bits_per_second: f64) -> String {
    format_rate_as(bits_per_second, UnitFormat::default())
}

/// The unit rates are printed in: iperf3's `-f` letter, as its `unit_snprintf` reads it.
/// Lowercase letters are bits with decimal prefixes (`m`: Mbits/sec = 10^6 bit/s),
/// uppercase are bytes with binary prefixes (`M`: MBytes/sec = 2^20 byte/s); `a`/`A`
/// pick the prefix that fits (iperf3's default is `a`). As in iperf3, transfer columns
/// stay adaptive bytes whatever the letter: `-f` changes the bitrate column only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UnitFormat {
    /// true: bytes (1024s); false: bits (1000s).
    pub bytes: bool,
    /// Fixed prefix power (0 = none, 1 = K .. 4 = T); None = adaptive (the default, `a`).
    pub power: Option<u8>,
}

impl UnitFormat {
    /// iperf3's letters `k m g t K M G T`, its `unit_snprintf` letters `a A b B`, and
    /// the words `KB MB GB TB` (simpleperf's style of `-f`, the same as `K M G T`).
    pub fn parse(text: &str) -> Result<UnitFormat, UnitError> {
        let bad = || UnitError::Malformed(text.to_string());
        let letter = match text {
            "KB" | "MB" | "GB" | "TB" => text.chars().next().ok_or_else(bad)?,
            t if t.chars().count() == 1 => t.chars().next().ok_or_else(bad)?,
            _ => return Err(bad()),
        };
        let power = match letter.to_ascii_lowercase() {
            'a' => None,
            'b' => Some(0),
            'k' => Some(1),
            'm' => Some(2),
            'g' => Some(3),
            't' => Some(4),
            _ => return Err(bad()),
        };
        Ok(UnitFormat {
            bytes: letter.is_ascii_uppercase(),
            power,
        })
    }
}

/// A rate as iperf3 prints it with `-f`: "9.42 Gbits/sec", "1123 MBytes/sec".
pub fn format_rate_as(bits_per_second: f64, unit: UnitFormat) -> String {
    let (value, base, labels) = if unit.bytes {
        (bits_per_second / 8.0, 1024.0, &BYTE_LABELS)
    } else {
        (bits_per_second, 1000.0, &BIT_LABELS)
    };
    let text = match unit.power {
        None => fit(value, base, labels),
        Some(p) => {
            let v = value / base.powi(p as i32);
            let label = labels[p as usize];
            if v < 9.995 {
                format!("{v:4.2} {label}")
            } else if v < 99.95 {
                format!("{v:4.1} {label}")
            } else {
                format!("{v:4.0} {label}")
            }
        }
    };
    format!("{text}/sec")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_binary_and_rates_decimal() {
        assert_eq!(parse_size("10M").unwrap(), 10 * 1024 * 1024);
        assert_eq!(parse_size("128K").unwrap(), 131_072);
        assert_eq!(parse_size("1470").unwrap(), 1470);
        assert_eq!(parse_size("1.5k").unwrap(), 1536);
        assert_eq!(parse_rate("10M").unwrap(), 10_000_000);
        assert_eq!(parse_rate("1.5G").unwrap(), 1_500_000_000);
        assert_eq!(parse_rate("0").unwrap(), 0);
    }

    #[test]
    fn bad_units_are_rejected_with_the_text() {
        assert_eq!(parse_size("10X"), Err(UnitError::Malformed("10X".into())));
        assert_eq!(parse_rate("-5M"), Err(UnitError::Negative("-5M".into())));
        assert!(parse_rate("abc").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("nan").is_err());
    }

    #[test]
    fn formats_like_iperf3() {
        assert_eq!(format_bytes(1_181_116_006.0), "1.10 GBytes");
        assert_eq!(format_bytes(3_342_336.0), "3.19 MBytes");
        assert_eq!(format_bytes(0.0), "0.00 Bytes");
        assert_eq!(format_bytes(131_072.0), " 128 KBytes");
        assert_eq!(format_rate(9_420_000_000.0), "9.42 Gbits/sec");
        assert_eq!(format_rate(27_600_000_000.0), "27.6 Gbits/sec");
        assert_eq!(format_rate(950_000.0), " 950 Kbits/sec");
    }

    #[test]
    fn format_letters_are_iperf3s() {
        let f = |t: &str| UnitFormat::parse(t).unwrap();
        // 1 Gbit/s = 125 000 000 byte/s = 119.2 MiB/s.
        assert_eq!(format_rate_as(1e9, f("m")), "1000 Mbits/sec");
        assert_eq!(format_rate_as(1e9, f("M")), " 119 MBytes/sec");
        assert_eq!(format_rate_as(1e9, f("k")), "1000000 Kbits/sec");
        assert_eq!(format_rate_as(1e9, f("K")), "122070 KBytes/sec");
        assert_eq!(format_rate_as(1e9, f("g")), "1.00 Gbits/sec");
        assert_eq!(format_rate_as(1e9, f("G")), "0.12 GBytes/sec");
        assert_eq!(format_rate_as(1e9, f("t")), "0.00 Tbits/sec");
        assert_eq!(format_rate_as(1e9, f("a")), "1.00 Gbits/sec");
        assert_eq!(format_rate_as(1e9, f("A")), " 119 MBytes/sec");
        assert_eq!(format_rate_as(8000.0, f("B")), "1000 Bytes/sec");
        assert_eq!(format_rate_as(8000.0, f("b")), "8000 bits/sec");
        // simpleperf's words are the uppercase letters.
        assert_eq!(f("KB"), f("K"));
        assert_eq!(f("MB"), f("M"));
        assert_eq!(f("GB"), f("G"));
        assert_eq!(UnitFormat::default(), f("a"));
        for bad in ["", "x", "mb", "Mb", "MBytes", "kk", "1"] {
            assert!(UnitFormat::parse(bad).is_err(), "{bad}");
        }
    }
}

/// netrig's own unit strings (scenario files, netrig-link flags): rates are decimal
/// with an explicit unit, "30Mbit", "1.5Gbit", "64kbit", "100bit"; "bps" forms too.
pub fn parse_bitrate(text: &str) -> Result<u64, UnitError> {
    let lower = text.trim().to_ascii_lowercase();
    // "bit/s", "bps" and "b/s" all mean "bit", as in netrig's Python.
    let t = match ["bit/s", "bps", "b/s"].iter().find_map(|u| lower.strip_suffix(u)) {
        Some(n) => format!("{n}bit"),
        None => lower.clone(),
    };
    scaled(
        text,
        &t,
        // A bare number is bit/s, as in topology files.
        &[
            ("tbit", 1e12),
            ("gbit", 1e9),
            ("mbit", 1e6),
            ("kbit", 1e3),
            ("bit", 1.0),
            ("", 1.0),
        ],
    )
}

/// "20ms", "1.5s", "250us", "100ns", "2min" → nanoseconds; a bare 0 needs no unit.
pub fn parse_duration_ns(text: &str) -> Result<u64, UnitError> {
    let t = text.trim().to_ascii_lowercase();
    if t == "0" || t == "0.0" {
        return Ok(0);
    }
    scaled(
        text,
        &t,
        &[
            ("min", 60e9),
            ("ms", 1e6),
            ("us", 1e3),
            ("µs", 1e3),
            ("ns", 1.0),
            ("sec", 1e9),
            ("s", 1e9),
        ],
    )
}

/// A non-negative number followed by one of `units` (tried in order), scaled.
fn scaled(text: &str, lower: &str, units: &[(&str, f64)]) -> Result<u64, UnitError> {
    let malformed = || UnitError::Malformed(text.to_string());
    let (num, mult) = units
        .iter()
        .find_map(|(suffix, mult)| lower.strip_suffix(suffix).map(|n| (n, *mult)))
        .ok_or_else(malformed)?;
    let num = num.trim();
    if !plain_number(num.strip_prefix('-').unwrap_or(num)) {
        return Err(malformed());
    }
    let v: f64 = num.parse().map_err(|_| malformed())?;
    if !v.is_finite() {
        return Err(malformed());
    }
    if v < 0.0 {
        return Err(UnitError::Negative(text.to_string()));
    }
    Ok((v * mult).round() as u64)
}

/// Digits with at most one point that has a digit after it, and an optional exponent:
/// what netrig's Python reads as a number ("5", "0.5", ".5", "1e3"; not "5.", "+5").
fn plain_number(s: &str) -> bool {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or(("", mantissa));
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let whole = (int.is_empty() || digits(int)) && digits(frac);
    whole && exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)))
}

/// "1%", "0.5%" → a probability. The % is required, as in topology files: a bare "1"
/// could mean 1 % or 100 %.
pub fn parse_probability(text: &str) -> Result<f64, UnitError> {
    let t = text.trim();
    let v = t
        .strip_suffix('%')
        .map(str::trim)
        .filter(|n| plain_number(n.strip_prefix('-').unwrap_or(n)))
        .and_then(|n| n.parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .map(|x| x / 100.0)
        .ok_or_else(|| UnitError::Malformed(format!("{text} (a percentage, e.g. 1% or 0.5%)")))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(UnitError::TooLarge(text.to_string()));
    }
    Ok(v)
}

#[cfg(test)]
mod netrig_unit_tests {
    use super::*;

    #[test]
    fn netrig_units() {
        assert_eq!(parse_bitrate("30Mbit").unwrap(), 30_000_000);
        assert_eq!(parse_bitrate("1.5Mbit").unwrap(), 1_500_000);
        assert_eq!(parse_bitrate("64kbit").unwrap(), 64_000);
        assert_eq!(parse_bitrate("10Gbps").unwrap(), 10_000_000_000);
        assert!(parse_bitrate("30Mbitt").is_err());
        assert_eq!(parse_bitrate("30").unwrap(), 30);
        assert_eq!(parse_duration_ns("20ms").unwrap(), 20_000_000);
        assert_eq!(parse_duration_ns("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_duration_ns("250us").unwrap(), 250_000);
        assert!(parse_duration_ns("-1ms").is_err());
        assert!(parse_duration_ns("10").is_err());
        assert_eq!(parse_duration_ns("0").unwrap(), 0);
        assert_eq!(parse_probability("1%").unwrap(), 0.01);
        assert!(parse_probability("0.25").is_err());
        assert!(parse_probability("150%").is_err());
    }

    /// The same texts, the same values, as netrig's Python (tests/fixtures/units.json).
    #[test]
    fn the_shared_unit_fixture() {
        let f: serde_json::Value =
            serde_json::from_str(include_str!("../../../tests/fixtures/units.json")).unwrap();
        let check = |kind: &str, parse: &dyn Fn(&str) -> Option<f64>| {
            for case in f[kind].as_array().unwrap() {
                let (text, want) = (case[0].as_str().unwrap(), case[1].as_f64());
                let got = parse(text);
                let same = match (got, want) {
                    (Some(g), Some(w)) => (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                    (None, None) => true,
                    _ => false,
                };
                assert!(same, "{kind} {text:?}: {got:?}, want {want:?}");
            }
        };
        check("rate_bps", &|t| parse_bitrate(t).ok().map(|v| v as f64));
        check("duration_ns", &|t| parse_duration_ns(t).ok().map(|v| v as f64));
        check("probability", &|t| parse_probability(t).ok());
    }
}
