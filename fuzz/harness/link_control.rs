//! netrig-link's control socket as the daemon reads it: a client's bytes cut into
//! request lines and parsed, then what the daemon does with each before touching a
//! link: a `set` request's specs deserialized and built (every stage, a trace given
//! inline included), a `capture_start` request checked. The whole input is also parsed
//! as one line.

use netrig_core::link::spec::DirectionSpec;
use netrig_link::control::{parse_request, take_requests, Request};

pub fn run(data: &[u8]) {
    let mut buf = data.to_vec();
    for r in take_requests(&mut buf) {
        match r {
            Ok(Request::Set { specs, .. }) => {
                for (_, spec) in specs {
                    if let Ok(s) = serde_json::from_value::<DirectionSpec>(spec) {
                        if let Ok(mut d) = s.build(0, 0) {
                            let _ = s.apply(&DirectionSpec::default(), &mut d, 1);
                        }
                    }
                }
            }
            Ok(Request::CaptureStart(c)) => {
                let _ = c.check();
            }
            _ => {}
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_request(text);
    }
}
