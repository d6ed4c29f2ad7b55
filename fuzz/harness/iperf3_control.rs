//! iperf3's control channel as a server or client reads it: the cookie, a state byte,
//! a JSON frame's length prefix, the client's parameters (checked against the default
//! limits, and what was accepted must parse again once written back), the results, and
//! netrig's auth challenge (an accepted nonce is exactly 64 hex digits) and proof.

use netrig_core::iperf3::{Limits, Params, Results};
use netrig_core::wire::iperf3::{parse_json_frame_len, Cookie, State};
use netrig_perf::auth::{self, Nonce};

pub fn run(data: &[u8]) {
    let limits = Limits::default();
    if let Ok(p) = Params::parse(data, &limits) {
        let _ = p.mode();
        let again = serde_json::to_vec(&p.to_json()).expect("parameters serialize");
        let q = Params::parse(&again, &limits).expect("accepted parameters, written back, parse again");
        assert_eq!(p, q, "accepted parameters survive a round trip");
    }
    if let Ok(r) = Results::parse(data) {
        serde_json::to_vec(&r).expect("results serialize");
    }
    let _ = Cookie::parse(data);
    if let Some(&b) = data.first() {
        let _ = State::parse(b);
    }
    if let Some(prefix) = data.get(..4) {
        let _ = parse_json_frame_len(prefix.try_into().expect("4 bytes"), 1 << 20);
    }
    if let Ok(n) = Nonce::parse_challenge(data) {
        // What was accepted is exactly the 64 hex digits the nonce prints as.
        let nonce = |doc: &[u8]| {
            let v: serde_json::Value = serde_json::from_slice(doc).expect("accepted, so JSON");
            v["netrig_challenge"]["nonce"]
                .as_str()
                .map(str::to_ascii_lowercase)
        };
        assert_eq!(
            nonce(data),
            nonce(&n.challenge_json()),
            "a nonce is 64 hex digits"
        );
    }
    let cookie = Cookie::from_random(&[7; 36]);
    let _ = auth::verify(b"key", &Nonce([9; 32]), &cookie, b"{}", data);
}
