//! netrig-core: the deterministic heart of netrig.
//!
//! Owns: units (iperf3's size and rate conventions), wire formats (iperf3's control and
//! UDP formats, netrig's probe packets) as checked views, the iperf3 parameter and result
//! documents with their validation, and the statistics every receiver computes (RFC 3550
//! jitter, sequence accounting, percentiles), and the TOS byte from DSCP names.
//!
//! Does not own: sockets, clocks, threads or files. Everything here takes its inputs
//! (bytes, timestamps) as arguments, so it runs the same in a test as on the wire.

pub mod iperf3;
pub mod link;
pub mod pacing;
pub mod stats;
pub mod tos;
pub mod units;
pub mod wire;

#[cfg(test)]
mod fuzz {
    //! Bounded fuzzing of every parser that sees peer input: random and mutated bytes
    //! must give errors, never panics.

    use crate::iperf3::{Limits, Params, Results};
    use crate::wire::iperf3::{parse_json_frame_len, Cookie, State, UdpHeader};
    use crate::wire::probe::{ProbePacket, RrRequest};

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn bytes(&mut self, max: usize) -> Vec<u8> {
            let n = (self.next() as usize) % (max + 1);
            (0..n).map(|_| self.next() as u8).collect()
        }
    }

    const SEEDS: &[&str] = &[
        r#"{"tcp":true,"omit":0,"time":10,"parallel":4,"len":131072,"client_version":"3.12"}"#,
        r#"{"udp":true,"bandwidth":1048576,"len":1460,"netrig":{"mode":"probe","version":1}}"#,
        r#"{"cpu_util_total":1.5,"sender_has_retransmits":1,"streams":[{"id":1,"bytes":5,"retransmits":0,"jitter":0,"errors":0,"packets":0}]}"#,
    ];

    #[test]
    fn parsers_never_panic_on_random_or_mutated_input() {
        let mut rng = Rng(0x5EED_2026);
        let limits = Limits::default();
        for i in 0..20_000 {
            let input = if i % 2 == 0 {
                rng.bytes(256)
            } else {
                let mut s = SEEDS[i % SEEDS.len()].as_bytes().to_vec();
                for _ in 0..1 + rng.next() % 4 {
                    let at = (rng.next() as usize) % s.len();
                    match rng.next() % 3 {
                        0 => s[at] = rng.next() as u8,
                        1 => s.truncate(at),
                        _ => s.insert(at, b"{}[]\",:-e9"[(rng.next() % 10) as usize]),
                    }
                    if s.is_empty() {
                        break;
                    }
                }
                s
            };
            let _ = Params::parse(&input, &limits);
            let _ = Results::parse(&input);
            let _ = Cookie::parse(&input);
            let _ = UdpHeader::parse(&input, i % 3 == 0);
            let _ = ProbePacket::parse(&input);
            let _ = RrRequest::parse(&input, 1 << 20);
            if let Some(&b) = input.first() {
                let _ = State::parse(b);
            }
            if input.len() >= 4 {
                let _ = parse_json_frame_len(input[..4].try_into().unwrap(), 65_536);
            }
        }
    }
}
