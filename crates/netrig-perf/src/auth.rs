//! Optional shared-key authentication: a client proves it knows the server's key for
//! this one connection and these exact parameters. (iperf3's RSA scheme needs OpenSSL;
//! this needs nothing.)
//!
//! # The exchange
//!
//! It stays inside iperf3's control framing (state bytes and length-prefixed JSON), and
//! happens only when the server has a key; a keyless server speaks plain iperf3:
//!
//! ```text
//! client -> server  cookie (37 bytes)                                  as iperf3
//! server -> client  AUTH_CHALLENGE (state byte 100),                   netrig, keyed
//!                   frame {"netrig_challenge":{"version":1,"nonce":"<64 hex>"}},
//!                   PARAM_EXCHANGE (9)
//! client -> server  frame: the parameter JSON                          as iperf3
//! client -> server  frame {"netrig_proof":"<64 hex>"}                  netrig, keyed
//! server -> client  CREATE_STREAMS, or SERVER_ERROR with IEAUTHTEST     as iperf3
//! ```
//!
//! `proof = HMAC-SHA256(key, "netrig-perf auth v1\0" || nonce (32 bytes) || cookie
//! (37 bytes) || length of the parameters (u32, big-endian) || the parameter bytes)`,
//! over the very bytes the client framed, so a captured proof is worth nothing with
//! other parameters. The nonce is the server's, fresh for every connection (24 random
//! bytes and a counter that never repeats within a server process), kept only in that
//! connection's handshake state and checked once: a proof answers one challenge, and
//! replaying a captured exchange on a new connection meets a new one.
//!
//! A key on one side only fails at once, naming the mismatch: a keyed client that is
//! asked for parameters without a challenge stops (the server has no key, or is iperf3
//! or an older netrig-perf); a keyless client that gets a challenge stops (the server
//! demands a key); an iperf3 client calls the challenge an unknown control message.
//! The server checks the proof in constant time, before it parses the parameters.
//!
//! The key is the bytes of `--auth-key-file` (one trailing newline dropped; the file
//! must be accessible by its owner only, as ssh demands of private keys), of
//! `NETRIG_PERF_KEY`, or of `--auth-key` (visible to every user in `ps`).

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use hmac::{Hmac, Mac};
use netrig_core::wire::iperf3::Cookie;
use serde_json::Value;
use sha2::Sha256;

/// The state byte that announces a challenge (iperf3 uses -2..=16).
pub const CHALLENGE_STATE: u8 = 100;
/// Version of this exchange, in the challenge.
pub const VERSION: u64 = 1;
/// Largest challenge or proof frame either side accepts.
pub const MAX_FRAME: usize = 512;
pub const NONCE_LEN: usize = 32;
const DOMAIN: &[u8] = b"netrig-perf auth v1\0";
/// Longest key file read (a key is a line, not a document).
const MAX_KEY_FILE: u64 = 64 * 1024;

/// A shared key. Its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthKey(Vec<u8>);

impl AuthKey {
    /// None for an empty key: it would prove nothing.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Option<AuthKey> {
        let b = bytes.into();
        (!b.is_empty()).then_some(AuthKey(b))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for AuthKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AuthKey(<{} bytes>)", self.0.len())
    }
}

/// A server's challenge for one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nonce(pub [u8; NONCE_LEN]);

/// Counts challenges of this process: no two connections get the same nonce.
static ISSUED: AtomicU64 = AtomicU64::new(0);

impl Nonce {
    /// A fresh nonce: 24 bytes from the kernel's RNG and the count of nonces issued.
    pub fn fresh() -> std::io::Result<Nonce> {
        let mut n = [0u8; NONCE_LEN];
        let want = NONCE_LEN - 8;
        // SAFETY: n is valid for `want` bytes of writes.
        let got = unsafe { libc::getrandom(n.as_mut_ptr() as *mut libc::c_void, want, 0) };
        if got != want as isize {
            return Err(std::io::Error::other("getrandom gave no nonce"));
        }
        let count = ISSUED.fetch_add(1, Ordering::Relaxed);
        n[want..].copy_from_slice(&count.to_be_bytes());
        Ok(Nonce(n))
    }

    /// The challenge document the server frames after [`CHALLENGE_STATE`].
    pub fn challenge_json(&self) -> Vec<u8> {
        let doc = serde_json::json!({
            "netrig_challenge": { "version": VERSION, "nonce": hex(&self.0) }
        });
        doc.to_string().into_bytes()
    }

    /// Reads a challenge document (the client's side).
    pub fn parse_challenge(body: &[u8]) -> Result<Nonce, String> {
        let v: Value =
            serde_json::from_slice(body).map_err(|e| format!("the server's challenge is not JSON: {e}"))?;
        let c = v
            .get("netrig_challenge")
            .ok_or("the server's challenge lacks \"netrig_challenge\"")?;
        match c.get("version").and_then(Value::as_u64) {
            Some(VERSION) => {}
            other => {
                return Err(format!(
                    "the server's challenge is version {other:?}; this client speaks version {VERSION} (upgrade one side)"
                ))
            }
        }
        let nonce = c
            .get("nonce")
            .and_then(Value::as_str)
            .and_then(unhex)
            .and_then(|b| <[u8; NONCE_LEN]>::try_from(b).ok())
            .ok_or("the server's challenge has no 64-hex-digit nonce")?;
        Ok(Nonce(nonce))
    }
}

/// HMAC-SHA256 over the challenge, the cookie and the exact parameter bytes.
pub fn proof(key: &[u8], nonce: &Nonce, cookie: &Cookie, params: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(DOMAIN);
    mac.update(&nonce.0);
    mac.update(cookie.as_bytes());
    mac.update(&(params.len() as u32).to_be_bytes());
    mac.update(params);
    mac.finalize().into_bytes().into()
}

/// The proof document the client frames after its parameters.
pub fn proof_json(key: &[u8], nonce: &Nonce, cookie: &Cookie, params: &[u8]) -> Vec<u8> {
    let doc = serde_json::json!({ "netrig_proof": hex(&proof(key, nonce, cookie, params)) });
    doc.to_string().into_bytes()
}

/// Why a server refuses a proof.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the client sent no proof document {{\"netrig_proof\": \"<64 hex>\"}} after its parameters")]
    Malformed,
    #[error("wrong key, or a replayed or altered exchange: the client's proof does not match this server's key, this connection's challenge and the parameters it sent")]
    Mismatch,
}

/// Checks a client's proof document in constant time.
pub fn verify(
    key: &[u8],
    nonce: &Nonce,
    cookie: &Cookie,
    params: &[u8],
    proof_doc: &[u8],
) -> Result<(), Refusal> {
    let presented = serde_json::from_slice::<Value>(proof_doc)
        .ok()
        .and_then(|v| v.get("netrig_proof").and_then(Value::as_str).and_then(unhex))
        .ok_or(Refusal::Malformed)?;
    if ct_eq(&presented, &proof(key, nonce, cookie, params)) {
        Ok(())
    } else {
        Err(Refusal::Mismatch)
    }
}

/// Equality whose time depends on the lengths only, never on where the bytes differ.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex digits only: `u8::from_str_radix` alone takes a sign ("+f" is 15).
fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// Why a key file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    #[error("--auth-key-file {path}: {source}")]
    Open { path: String, source: std::io::Error },
    #[error("--auth-key-file {path}: not a regular file")]
    NotAFile { path: String },
    #[error("--auth-key-file {path}: permissions {mode:04o} are too open: the key must be readable by its owner only (chmod 600 {path})")]
    TooOpen { path: String, mode: u32 },
    #[error("--auth-key-file {path}: larger than {MAX_KEY_FILE} bytes; a key is one line")]
    TooLong { path: String },
    #[error("--auth-key-file {path}: the file is empty")]
    Empty { path: String },
}

/// Reads a key from a file only its owner may read; one trailing newline is dropped.
pub fn read_key_file(path: &Path) -> Result<AuthKey, KeyFileError> {
    let p = || path.display().to_string();
    let mut f = File::open(path).map_err(|source| KeyFileError::Open { path: p(), source })?;
    // The opened file's own metadata: no window to swap the file after the check.
    let meta = f
        .metadata()
        .map_err(|source| KeyFileError::Open { path: p(), source })?;
    if !meta.is_file() {
        return Err(KeyFileError::NotAFile { path: p() });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(KeyFileError::TooOpen { path: p(), mode });
    }
    let mut key = vec![];
    (&mut f)
        .take(MAX_KEY_FILE + 1)
        .read_to_end(&mut key)
        .map_err(|source| KeyFileError::Open { path: p(), source })?;
    if key.len() as u64 > MAX_KEY_FILE {
        return Err(KeyFileError::TooLong { path: p() });
    }
    if key.ends_with(b"\n") {
        key.pop();
        if key.ends_with(b"\r") {
            key.pop();
        }
    }
    AuthKey::new(key).ok_or_else(|| KeyFileError::Empty { path: p() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cookie(b: u8) -> Cookie {
        Cookie::from_random(&[b; 36])
    }

    const PARAMS: &[u8] = br#"{"tcp":true,"omit":0,"time":1,"parallel":1,"len":131072}"#;

    fn doc(key: &[u8], n: &Nonce, c: &Cookie, p: &[u8]) -> Vec<u8> {
        proof_json(key, n, c, p)
    }

    #[test]
    fn a_proof_verifies_only_with_the_same_key_nonce_cookie_and_parameters() {
        let (n, c) = (Nonce([7; NONCE_LEN]), cookie(1));
        let d = doc(b"secret", &n, &c, PARAMS);
        assert_eq!(verify(b"secret", &n, &c, PARAMS, &d), Ok(()));
        assert_eq!(verify(b"other", &n, &c, PARAMS, &d), Err(Refusal::Mismatch));
        assert_eq!(
            verify(b"secret", &Nonce([8; NONCE_LEN]), &c, PARAMS, &d),
            Err(Refusal::Mismatch)
        );
        assert_eq!(
            verify(b"secret", &n, &cookie(2), PARAMS, &d),
            Err(Refusal::Mismatch)
        );
    }

    #[test]
    fn the_proof_changes_with_every_byte_of_the_nonce_and_the_parameters() {
        let (n, c) = (Nonce([7; NONCE_LEN]), cookie(1));
        let base = proof(b"k", &n, &c, PARAMS);
        for i in 0..NONCE_LEN {
            let mut m = n;
            m.0[i] ^= 1;
            assert_ne!(proof(b"k", &m, &c, PARAMS), base, "nonce byte {i}");
        }
        for i in 0..PARAMS.len() {
            let mut p = PARAMS.to_vec();
            p[i] ^= 1;
            assert_ne!(proof(b"k", &n, &c, &p), base, "parameter byte {i}");
            assert_eq!(
                verify(b"k", &n, &c, &p, &doc(b"k", &n, &c, PARAMS)),
                Err(Refusal::Mismatch)
            );
        }
        // A byte more or less is other parameters too.
        assert_ne!(proof(b"k", &n, &c, &PARAMS[..PARAMS.len() - 1]), base);
        assert_ne!(proof(b"k", &n, &c, &[PARAMS, b" "].concat()), base);
        let mut raw = *c.as_bytes();
        raw[0] = if raw[0] == b'a' { b'b' } else { b'a' };
        let c2 = Cookie::parse(&raw).unwrap();
        assert_ne!(proof(b"k", &n, &c2, PARAMS), base);
    }

    #[test]
    fn fresh_nonces_never_repeat() {
        let a = Nonce::fresh().unwrap();
        let b = Nonce::fresh().unwrap();
        assert_ne!(a, b);
        assert_ne!(a.0[..24], b.0[..24], "random part");
        let count = |n: &Nonce| u64::from_be_bytes(n.0[24..].try_into().unwrap());
        assert!(count(&b) > count(&a), "the counter part grows");
    }

    #[test]
    fn challenges_round_trip_and_bad_ones_are_named() {
        let n = Nonce::fresh().unwrap();
        assert_eq!(Nonce::parse_challenge(&n.challenge_json()), Ok(n));
        let v2 = br#"{"netrig_challenge":{"version":2,"nonce":"00"}}"#;
        assert!(Nonce::parse_challenge(v2)
            .unwrap_err()
            .contains("version Some(2)"));
        let short = br#"{"netrig_challenge":{"version":1,"nonce":"00ff"}}"#;
        assert!(Nonce::parse_challenge(short)
            .unwrap_err()
            .contains("64-hex-digit"));
        assert!(Nonce::parse_challenge(b"{}").is_err());
        let signed = format!(
            r#"{{"netrig_challenge":{{"version":1,"nonce":"{}"}}}}"#,
            "+1".repeat(32)
        );
        assert!(Nonce::parse_challenge(signed.as_bytes()).is_err());
    }

    #[test]
    fn malformed_proofs_are_refused() {
        let (n, c) = (Nonce([1; NONCE_LEN]), cookie(3));
        for bad in [
            &b""[..],
            b"{}",
            b"not json",
            br#"{"netrig_proof":"zz"}"#,
            br#"{"netrig_proof":1}"#,
            br#"{"netrig_proof":"+f"}"#,
        ] {
            assert_eq!(verify(b"k", &n, &c, PARAMS, bad), Err(Refusal::Malformed));
        }
        let short = br#"{"netrig_proof":"00"}"#;
        assert_eq!(verify(b"k", &n, &c, PARAMS, short), Err(Refusal::Mismatch));
    }

    #[test]
    fn constant_time_compare_finds_a_difference_at_any_position_and_length() {
        let a = [0x5au8; 32];
        assert!(ct_eq(&a, &a));
        assert!(ct_eq(&[], &[]));
        for i in 0..a.len() {
            for bit in 0..8 {
                let mut b = a;
                b[i] ^= 1 << bit;
                assert!(!ct_eq(&a, &b), "byte {i} bit {bit}");
            }
        }
        assert!(!ct_eq(&a, &a[..31]));
        assert!(!ct_eq(&a[..31], &a));
    }

    #[test]
    fn key_files_must_be_private_and_lose_one_trailing_newline() {
        let dir = std::env::temp_dir().join(format!("netrig-auth-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("key");
        let set = |text: &[u8], mode: u32| {
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        set(b"s3cret\n", 0o600);
        assert_eq!(read_key_file(&path).unwrap().as_bytes(), b"s3cret");
        set(b"s3cret\r\n", 0o400);
        assert_eq!(read_key_file(&path).unwrap().as_bytes(), b"s3cret");
        for mode in [0o640, 0o604, 0o644, 0o620] {
            set(b"s3cret\n", mode);
            let e = read_key_file(&path).unwrap_err().to_string();
            assert!(e.contains(&format!("permissions {mode:04o} are too open")), "{e}");
            assert!(e.contains("chmod 600"), "{e}");
        }
        set(b"\n", 0o600);
        assert!(read_key_file(&path).unwrap_err().to_string().contains("empty"));
        assert!(read_key_file(&dir)
            .unwrap_err()
            .to_string()
            .contains("not a regular file"));
        assert_eq!(
            format!("{:?}", AuthKey::new("s3cret").unwrap()),
            "AuthKey(<6 bytes>)"
        );
        assert_eq!(AuthKey::new(""), None);
        let missing = read_key_file(&dir.join("missing")).unwrap_err().to_string();
        assert!(
            missing.starts_with("--auth-key-file ") && missing.contains("No such file"),
            "{missing}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
