//! `--timestamps[=FORMAT]`: the local time in a strftime(3) format, as iperf3 prefixes
//! every text line with it (default "%c ", e.g. "Mon Nov 23 22:05:01 2026 ").

use std::ffi::CString;

/// iperf3's default format.
pub const DEFAULT_FORMAT: &str = "%c ";

/// Why a format cannot be used.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TimestampError {
    #[error("--timestamps format contains a NUL byte")]
    Nul,
    #[error("--timestamps format '{0}' gives no text (or more than 256 bytes)")]
    Empty(String),
}

/// The local time now in `format`.
pub fn now(format: &str) -> Result<String, TimestampError> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as libc::time_t)
        .unwrap_or(0);
    at(secs, format)
}

/// The local time of `secs` (since the epoch) in `format`.
pub fn at(secs: libc::time_t, format: &str) -> Result<String, TimestampError> {
    let c = CString::new(format).map_err(|_| TimestampError::Nul)?;
    // SAFETY: tm is plain data that localtime_r fills; buf is valid for its length and
    // strftime writes at most that many bytes.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&secs, &mut tm).is_null() {
            return Err(TimestampError::Empty(format.to_string()));
        }
        let mut buf = [0u8; 256];
        let n = libc::strftime(buf.as_mut_ptr() as *mut libc::c_char, buf.len(), c.as_ptr(), &tm);
        if n == 0 && !format.is_empty() {
            return Err(TimestampError::Empty(format.to_string()));
        }
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_strftime() {
        // 2026-11-21 08:53:44 UTC: the 21st or 22nd in any time zone (no TZ is set
        // here: the environment is the whole process's, shared by parallel tests).
        let day = at(1_795_251_224, "%Y-%m-%d %M:%S").unwrap();
        assert!(day == "2026-11-21 53:44" || day == "2026-11-22 53:44", "{day}");
        assert_eq!(at(1_795_251_224, "%s").unwrap(), "1795251224");
        assert_eq!(at(0, "[%s]").unwrap(), "[0]");
        assert!(at(0, "a\0b").is_err());
        assert!(!now(DEFAULT_FORMAT).unwrap().is_empty());
    }
}
