//! Optional shared-key authentication: the client proves it knows the key by sending
//! HMAC-SHA256(key, cookie) as a netrig parameter; the server checks it before it
//! creates any stream. (iperf3's RSA scheme needs OpenSSL; this needs nothing.)

use hmac::{Hmac, Mac};
use sha2::Sha256;

use netrig_core::wire::iperf3::Cookie;

pub fn token(key: &str, cookie: &Cookie) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("HMAC takes any key length");
    mac.update(cookie.as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Constant-time check of a client's token.
pub fn verify(key: &str, cookie: &Cookie, presented: Option<&str>) -> bool {
    let Some(p) = presented else { return false };
    let expected = token(key, cookie);
    if p.len() != expected.len() {
        return false;
    }
    p.bytes()
        .zip(expected.bytes())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_only_with_the_same_key_and_cookie() {
        let c1 = Cookie::from_random(&[1; 36]);
        let c2 = Cookie::from_random(&[2; 36]);
        let t = token("secret", &c1);
        assert_eq!(t.len(), 64);
        assert!(verify("secret", &c1, Some(&t)));
        assert!(!verify("other", &c1, Some(&t)));
        assert!(!verify("secret", &c2, Some(&t)));
        assert!(!verify("secret", &c1, None));
        assert!(!verify("secret", &c1, Some("00")));
    }
}
