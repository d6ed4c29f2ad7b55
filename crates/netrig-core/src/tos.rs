//! The IP TOS byte from iperf3's `--dscp` and `-S` values, as its `dscp.c` and
//! `iperf_api.c` read them.
//!
//! `--dscp` takes a DSCP code point, 0..63 (decimal, `0x` hex or `0` octal, as C's
//! `strtol(.., 0)`), shifted left by 2 into the TOS byte; or a name (case-insensitive)
//! that stands for a whole TOS byte: `ef` = 0xb8 (DSCP 46), `af41` = 0x88 (DSCP 34),
//! `cs1` = 0x20 (DSCP 8), and the RFC 1349 names `lowdelay`, `throughput`,
//! `reliability`. `-S` takes the TOS byte itself, 0..255.

use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum TosError {
    #[error("'{0}' is neither a DSCP value 0-63 nor a name (ef, af11..af43, cs0..cs7, lowdelay, throughput, reliability)")]
    BadDscp(String),
    #[error("'{0}' is not a TOS byte 0-255")]
    BadTos(String),
}

/// iperf3's table: each name with the TOS byte it sets.
pub const DSCP_NAMES: [(&str, u8); 24] = [
    ("af11", 0x28),
    ("af12", 0x30),
    ("af13", 0x38),
    ("af21", 0x48),
    ("af22", 0x50),
    ("af23", 0x58),
    ("af31", 0x68),
    ("af32", 0x70),
    ("af33", 0x78),
    ("af41", 0x88),
    ("af42", 0x90),
    ("af43", 0x98),
    ("cs0", 0x00),
    ("cs1", 0x20),
    ("cs2", 0x40),
    ("cs3", 0x60),
    ("cs4", 0x80),
    ("cs5", 0xa0),
    ("cs6", 0xc0),
    ("cs7", 0xe0),
    ("ef", 0xb8),
    ("lowdelay", 0x10),
    ("throughput", 0x08),
    ("reliability", 0x04),
];

/// A whole number as C's `strtol(text, &end, 0)` reads it when all of `text` is used.
fn c_integer(text: &str) -> Option<u64> {
    let t = text;
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    }
}

/// `--dscp VAL` → the TOS byte.
pub fn parse_dscp(text: &str) -> Result<u8, TosError> {
    if let Some((_, tos)) = DSCP_NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(text)) {
        return Ok(*tos);
    }
    match c_integer(text) {
        Some(v) if v <= 63 => Ok((v as u8) << 2),
        _ => Err(TosError::BadDscp(text.to_string())),
    }
}

/// `-S TOS` → the TOS byte (decimal, 0x hex or 0 octal).
pub fn parse_tos(text: &str) -> Result<u8, TosError> {
    match c_integer(text) {
        Some(v) if v <= 255 => Ok(v as u8),
        _ => Err(TosError::BadTos(text.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_set_iperf3s_tos_bytes() {
        assert_eq!(parse_dscp("EF"), Ok(0xb8));
        assert_eq!(parse_dscp("ef"), Ok(46 << 2));
        assert_eq!(parse_dscp("AF41"), Ok(34 << 2));
        assert_eq!(parse_dscp("af11"), Ok(10 << 2));
        assert_eq!(parse_dscp("CS1"), Ok(8 << 2));
        assert_eq!(parse_dscp("cs7"), Ok(56 << 2));
        assert_eq!(parse_dscp("lowdelay"), Ok(0x10));
    }

    #[test]
    fn numbers_are_code_points_shifted_into_the_tos_byte() {
        assert_eq!(parse_dscp("46"), Ok(184));
        assert_eq!(parse_dscp("0x2e"), Ok(184));
        assert_eq!(parse_dscp("056"), Ok(184));
        assert_eq!(parse_dscp("0"), Ok(0));
        assert_eq!(parse_dscp("63"), Ok(252));
        for bad in ["64", "-1", "", "ef1", "4 6", "0x", "af44", "1.5"] {
            assert!(parse_dscp(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tos_takes_the_byte_itself() {
        assert_eq!(parse_tos("52"), Ok(52));
        assert_eq!(parse_tos("064"), Ok(52));
        assert_eq!(parse_tos("0x34"), Ok(52));
        assert!(parse_tos("256").is_err());
        assert!(parse_tos("low").is_err());
    }
}
