//! The two JSON documents of iperf3's control protocol: the client's test parameters
//! and each side's results, with validation at the boundary.
//!
//! Parameters from a peer are checked key by key (type and range) and the first fault is
//! named, so a server can answer a bad client precisely. Keys that are not iperf3's or
//! netrig's are ignored, as iperf3 ignores them; netrig's extras ride under `"netrig"`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

/// Parameter documents larger than this are refused before they are read.
pub const MAX_PARAMS_LEN: usize = 64 * 1024;
/// Result documents (which may carry the server's whole text output) are bounded too.
pub const MAX_RESULTS_LEN: usize = 8 * 1024 * 1024;

#[derive(Debug, Error, PartialEq)]
pub enum ParamError {
    #[error("parameters are not a JSON object: {0}")]
    NotJson(String),
    #[error("parameter '{key}': {problem}")]
    Bad { key: String, problem: String },
    #[error("parameters name neither \"tcp\" nor \"udp\"")]
    NoProtocol,
}

fn bad(key: &str, problem: impl Into<String>) -> ParamError {
    ParamError::Bad {
        key: key.to_string(),
        problem: problem.into(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Tcp,
    Udp,
}

/// What a netrig test does beyond iperf3's bulk transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Bulk,
    /// UDP request/response latency probes.
    Probe,
    /// TCP request/response transactions ("page fetches").
    Rr,
}

/// netrig-only parameters, under the `"netrig"` key.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetrigParams {
    #[serde(default)]
    pub mode: Mode,
    /// Protocol version of the netrig client.
    #[serde(default)]
    pub version: u32,
    /// rr: response bytes per transaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rr_response: Option<u64>,
    /// rr: open a new connection for every transaction.
    #[serde(default)]
    pub rr_new_conn: bool,
    /// Send UDP datagram by datagram, without segmentation offload (GSO).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_gso: bool,
    /// Shared-key authentication: hex HMAC over the cookie.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
}

/// A test's parameters, as a client sends them and a server applies them.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub protocol: Protocol,
    pub omit: u64,
    pub time: u64,
    pub bytes: u64,
    pub blocks: u64,
    pub mss: u32,
    pub nodelay: bool,
    pub parallel: u32,
    pub reverse: bool,
    pub bidirectional: bool,
    pub window: u64,
    pub len: u64,
    pub bandwidth: u64,
    /// `--fq-rate`: SO_MAX_PACING_RATE on every data socket, bit/s (0 = off).
    pub fqrate: u64,
    /// `--pacing-timer`: the sender's pacing timer, microseconds.
    pub pacing_timer: u64,
    pub burst: u64,
    pub tos: u32,
    /// `-A n,m`: the CPU the server should run this test on.
    pub server_affinity: Option<u32>,
    /// `-L`: IPv6 flow label of the client's streams (the server does nothing with it).
    pub flowlabel: u32,
    /// `--dont-fragment`: IP_MTU_DISCOVER=IP_PMTUDISC_DO on UDP streams, both sides.
    pub dont_fragment: bool,
    pub congestion: Option<String>,
    pub title: Option<String>,
    pub extra_data: Option<String>,
    pub get_server_output: bool,
    pub udp_counters_64bit: bool,
    pub repeating_payload: bool,
    pub zerocopy: bool,
    pub client_version: Option<String>,
    pub netrig: Option<NetrigParams>,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            protocol: Protocol::Tcp,
            omit: 0,
            time: 10,
            bytes: 0,
            blocks: 0,
            mss: 0,
            nodelay: false,
            parallel: 1,
            reverse: false,
            bidirectional: false,
            window: 0,
            len: 0,
            bandwidth: 0,
            fqrate: 0,
            pacing_timer: 0,
            burst: 0,
            tos: 0,
            server_affinity: None,
            flowlabel: 0,
            dont_fragment: false,
            congestion: None,
            title: None,
            extra_data: None,
            get_server_output: false,
            udp_counters_64bit: false,
            repeating_payload: false,
            zerocopy: false,
            client_version: None,
            netrig: None,
        }
    }
}

/// Hard limits a server enforces on any client's parameters (and may tighten).
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub max_time: u64,
    pub max_parallel: u32,
    pub max_bandwidth: u64,
    pub max_len: u64,
    pub max_window: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_time: 86_400,
            max_parallel: 128,
            max_bandwidth: 0,
            max_len: 1 << 20,
            max_window: 1 << 30,
        }
    }
}

fn get_uint(obj: &Map<String, Value>, key: &str, max: u64) -> Result<Option<u64>, ParamError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            let v = if let Some(u) = n.as_u64() {
                u
            } else if let Some(f) = n.as_f64() {
                if f < 0.0 || f.fract() != 0.0 || !f.is_finite() {
                    return Err(bad(key, format!("expected a whole number >= 0, got {n}")));
                }
                f as u64
            } else {
                return Err(bad(key, format!("expected a whole number >= 0, got {n}")));
            };
            if v > max {
                return Err(bad(key, format!("{v} is above the limit of {max}")));
            }
            Ok(Some(v))
        }
        Some(other) => Err(bad(key, format!("expected a number, got {other}"))),
    }
}

/// iperf3 sends booleans both as `true` (reverse, nodelay) and as 1 (zerocopy...).
fn get_flag(obj: &Map<String, Value>, key: &str) -> Result<bool, ParamError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::Number(n)) => Ok(n.as_f64().map(|f| f != 0.0).unwrap_or(false)),
        Some(other) => Err(bad(key, format!("expected true/false, got {other}"))),
    }
}

fn get_string(obj: &Map<String, Value>, key: &str, max_len: usize) -> Result<Option<String>, ParamError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.len() <= max_len => Ok(Some(s.clone())),
        Some(Value::String(s)) => Err(bad(key, format!("{} characters, limit {max_len}", s.len()))),
        Some(other) => Err(bad(key, format!("expected a string, got {other}"))),
    }
}

impl Params {
    /// Parses and validates a parameter document against `limits`.
    pub fn parse(json: &[u8], limits: &Limits) -> Result<Params, ParamError> {
        let value: Value = serde_json::from_slice(json).map_err(|e| ParamError::NotJson(e.to_string()))?;
        let Value::Object(obj) = value else {
            return Err(ParamError::NotJson("top level is not an object".into()));
        };
        let tcp = get_flag(&obj, "tcp")?;
        let udp = get_flag(&obj, "udp")?;
        let protocol = match (tcp, udp) {
            (true, false) => Protocol::Tcp,
            (false, true) => Protocol::Udp,
            (true, true) => return Err(bad("udp", "both \"tcp\" and \"udp\" are set")),
            (false, false) => return Err(ParamError::NoProtocol),
        };
        let parallel = get_uint(&obj, "parallel", limits.max_parallel as u64)?.unwrap_or(1);
        if parallel == 0 {
            return Err(bad("parallel", "must be at least 1"));
        }
        let time = get_uint(&obj, "time", limits.max_time)?.unwrap_or(10);
        let bytes = get_uint(&obj, "num", u64::MAX / 2)?.unwrap_or(0);
        let blocks = get_uint(&obj, "blockcount", u64::MAX / 2)?.unwrap_or(0);
        if time == 0 && bytes == 0 && blocks == 0 {
            return Err(bad(
                "time",
                "0 with neither \"num\" nor \"blockcount\": the test would never end",
            ));
        }
        let bandwidth = get_uint(&obj, "bandwidth", u64::MAX / 2)?.unwrap_or(0);
        if limits.max_bandwidth > 0 && (bandwidth == 0 || bandwidth > limits.max_bandwidth) {
            return Err(bad(
                "bandwidth",
                format!("this server limits each stream to {} bit/s", limits.max_bandwidth),
            ));
        }
        let netrig = match obj.get("netrig") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                serde_json::from_value::<NetrigParams>(v.clone())
                    .map_err(|e| bad("netrig", e.to_string()))?,
            ),
        };
        let len = get_uint(&obj, "len", limits.max_len)?.unwrap_or(0);
        if protocol == Protocol::Udp && len > 65_507 {
            return Err(bad(
                "len",
                format!("{len} exceeds the largest UDP payload (65507)"),
            ));
        }
        Ok(Params {
            protocol,
            omit: get_uint(&obj, "omit", limits.max_time)?.unwrap_or(0),
            time,
            bytes,
            blocks,
            mss: get_uint(&obj, "MSS", 65_535)?.unwrap_or(0) as u32,
            nodelay: obj.contains_key("nodelay") && get_flag(&obj, "nodelay")?,
            parallel: parallel as u32,
            reverse: get_flag(&obj, "reverse")?,
            bidirectional: get_flag(&obj, "bidirectional")?,
            window: get_uint(&obj, "window", limits.max_window)?.unwrap_or(0),
            len,
            bandwidth,
            fqrate: get_uint(&obj, "fqrate", u64::MAX / 2)?.unwrap_or(0),
            pacing_timer: get_uint(&obj, "pacing_timer", 10_000_000)?.unwrap_or(0),
            burst: get_uint(&obj, "burst", 1_000_000)?.unwrap_or(0),
            tos: get_uint(&obj, "TOS", 255)?.unwrap_or(0) as u32,
            server_affinity: get_uint(&obj, "server_affinity", 1024)?.map(|c| c as u32),
            flowlabel: get_uint(&obj, "flowlabel", 0xf_ffff)?.unwrap_or(0) as u32,
            dont_fragment: get_flag(&obj, "dont_fragment")?,
            congestion: get_string(&obj, "congestion", 16)?,
            title: get_string(&obj, "title", 1024)?,
            extra_data: get_string(&obj, "extra_data", 4096)?,
            get_server_output: get_flag(&obj, "get_server_output")?,
            udp_counters_64bit: get_flag(&obj, "udp_counters_64bit")?,
            repeating_payload: get_flag(&obj, "repeating_payload")?,
            zerocopy: get_flag(&obj, "zerocopy")?,
            client_version: get_string(&obj, "client_version", 64)?,
            netrig,
        })
    }

    /// The document an iperf3 3.12 client would send for these parameters.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        let t = Value::Bool(true);
        match self.protocol {
            Protocol::Tcp => m.insert("tcp".into(), t.clone()),
            Protocol::Udp => m.insert("udp".into(), t.clone()),
        };
        m.insert("omit".into(), self.omit.into());
        m.insert("time".into(), self.time.into());
        let mut put = |k: &str, v: u64| {
            if v != 0 {
                m.insert(k.into(), v.into());
            }
        };
        put("num", self.bytes);
        put("blockcount", self.blocks);
        put("MSS", self.mss as u64);
        put("window", self.window);
        put("len", self.len);
        put("bandwidth", self.bandwidth);
        put("fqrate", self.fqrate);
        put("pacing_timer", self.pacing_timer);
        put("burst", self.burst);
        put("TOS", self.tos as u64);
        put("flowlabel", self.flowlabel as u64);
        put("dont_fragment", self.dont_fragment as u64);
        put("get_server_output", self.get_server_output as u64);
        put("udp_counters_64bit", self.udp_counters_64bit as u64);
        put("repeating_payload", self.repeating_payload as u64);
        put("zerocopy", self.zerocopy as u64);
        m.insert("parallel".into(), self.parallel.into());
        if let Some(cpu) = self.server_affinity {
            m.insert("server_affinity".into(), cpu.into());
        }
        if self.nodelay {
            m.insert("nodelay".into(), t.clone());
        }
        if self.reverse {
            m.insert("reverse".into(), t.clone());
        }
        if self.bidirectional {
            m.insert("bidirectional".into(), t.clone());
        }
        for (k, v) in [
            ("congestion", &self.congestion),
            ("title", &self.title),
            ("extra_data", &self.extra_data),
            ("client_version", &self.client_version),
        ] {
            if let Some(s) = v {
                m.insert(k.into(), Value::String(s.clone()));
            }
        }
        if let Some(n) = &self.netrig {
            m.insert("netrig".into(), serde_json::to_value(n).unwrap_or(Value::Null));
        }
        Value::Object(m)
    }

    pub fn mode(&self) -> Mode {
        self.netrig.as_ref().map(|n| n.mode).unwrap_or_default()
    }
}

/// iperf3 3.12 prints -1 as 18446744073709551615 (an int64 printed unsigned): read any
/// number, and take values beyond i64 as -1.
fn lenient_i64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let v = Value::deserialize(d)?;
    match v {
        Value::Number(n) => Ok(n
            .as_i64()
            .or_else(|| n.as_u64().map(|_| -1))
            .or_else(|| {
                n.as_f64()
                    .map(|f| if f > i64::MAX as f64 { -1 } else { f as i64 })
            })
            .unwrap_or(-1)),
        Value::Null => Ok(0),
        other => Err(serde::de::Error::custom(format!(
            "expected a number, got {other}"
        ))),
    }
}

/// One stream's entry in a results document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamResult {
    pub id: i64,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default, deserialize_with = "lenient_i64")]
    pub retransmits: i64,
    #[serde(default)]
    pub jitter: f64,
    #[serde(default, deserialize_with = "lenient_i64")]
    pub errors: i64,
    #[serde(default, deserialize_with = "lenient_i64")]
    pub omitted_errors: i64,
    #[serde(default, deserialize_with = "lenient_i64")]
    pub packets: i64,
    #[serde(default, deserialize_with = "lenient_i64")]
    pub omitted_packets: i64,
    #[serde(default)]
    pub start_time: f64,
    #[serde(default)]
    pub end_time: f64,
    /// netrig extras (iperf3 ignores them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netrig: Option<Value>,
}

/// One side's results, exchanged at EXCHANGE_RESULTS.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    #[serde(default)]
    pub cpu_util_total: f64,
    #[serde(default)]
    pub cpu_util_user: f64,
    #[serde(default)]
    pub cpu_util_system: f64,
    #[serde(default, deserialize_with = "lenient_i64")]
    pub sender_has_retransmits: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion_used: Option<String>,
    #[serde(default)]
    pub streams: Vec<StreamResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_json: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netrig: Option<Value>,
}

impl Results {
    pub fn parse(json: &[u8]) -> Result<Results, ParamError> {
        serde_json::from_slice(json).map_err(|e| ParamError::NotJson(e.to_string()))
    }
}

/// iperf3's stream ids: 1, then 3, 4, 5, ... (its `iperf_add_stream` skips 2).
pub fn stream_id(index: usize) -> i64 {
    if index == 0 {
        1
    } else {
        index as i64 + 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Params, ParamError> {
        Params::parse(s.as_bytes(), &Limits::default())
    }

    #[test]
    fn parses_what_iperf3_3_12_sends() {
        let p = parse(
            r#"{"tcp":true,"omit":0,"time":10,"parallel":4,"reverse":true,"len":131072,
               "window":65536,"nodelay":true,"client_version":"3.12","zerocopy":1}"#,
        )
        .unwrap();
        assert_eq!(p.protocol, Protocol::Tcp);
        assert_eq!((p.parallel, p.len, p.window), (4, 131_072, 65_536));
        assert!(p.reverse && p.nodelay && p.zerocopy && !p.bidirectional);
        assert_eq!(p.client_version.as_deref(), Some("3.12"));
        let p = parse(
            r#"{"udp":true,"server_affinity":1,"fqrate":8000000,"pacing_timer":250,
               "flowlabel":74565,"dont_fragment":1}"#,
        )
        .unwrap();
        assert_eq!(p.server_affinity, Some(1));
        assert_eq!((p.fqrate, p.pacing_timer, p.flowlabel), (8_000_000, 250, 0x12345));
        assert!(p.dont_fragment);
        assert!(parse(r#"{"tcp":true,"flowlabel":1048576}"#).is_err());
        assert!(parse(r#"{"tcp":true,"server_affinity":5000}"#).is_err());
    }

    #[test]
    fn round_trips_through_to_json() {
        let p = Params {
            protocol: Protocol::Udp,
            bandwidth: 10_000_000,
            len: 1460,
            bidirectional: true,
            server_affinity: Some(1),
            flowlabel: 0x12345,
            dont_fragment: true,
            fqrate: 8_000_000,
            pacing_timer: 250,
            netrig: Some(NetrigParams {
                mode: Mode::Probe,
                ..Default::default()
            }),
            ..Default::default()
        };
        let bytes = serde_json::to_vec(&p.to_json()).unwrap();
        assert_eq!(Params::parse(&bytes, &Limits::default()).unwrap(), p);
    }

    #[test]
    fn names_the_faulty_key() {
        assert_eq!(
            parse(r#"{"tcp":true,"parallel":"four"}"#),
            Err(bad("parallel", "expected a number, got \"four\""))
        );
        assert_eq!(
            parse(r#"{"tcp":true,"parallel":100000}"#),
            Err(bad("parallel", "100000 is above the limit of 128"))
        );
        assert_eq!(
            parse(r#"{"tcp":true,"time":-1}"#),
            Err(bad("time", "expected a whole number >= 0, got -1"))
        );
        assert_eq!(parse(r#"{"time":1}"#), Err(ParamError::NoProtocol));
        assert!(matches!(parse("[1,2]"), Err(ParamError::NotJson(_))));
        assert!(matches!(parse("{\"tcp\":tru"), Err(ParamError::NotJson(_))));
        assert!(matches!(
            parse(r#"{"udp":true,"len":70000}"#),
            Err(ParamError::Bad { .. })
        ));
        assert!(matches!(
            parse(r#"{"tcp":true,"netrig":{"mode":"warp"}}"#),
            Err(ParamError::Bad { .. })
        ));
        assert!(matches!(
            parse(r#"{"tcp":true,"time":0}"#),
            Err(ParamError::Bad { .. })
        ));
    }

    #[test]
    fn server_limits_apply() {
        let limits = Limits {
            max_time: 30,
            max_bandwidth: 1_000_000,
            ..Default::default()
        };
        let p = Params::parse(br#"{"udp":true,"time":60,"bandwidth":1000}"#, &limits);
        assert_eq!(p, Err(bad("time", "60 is above the limit of 30")));
        let p = Params::parse(br#"{"udp":true,"time":5,"bandwidth":5000000}"#, &limits);
        assert!(matches!(p, Err(ParamError::Bad { ref key, .. }) if key == "bandwidth"));
    }

    #[test]
    fn stream_ids_skip_two_like_iperf3() {
        let ids: Vec<i64> = (0..4).map(stream_id).collect();
        assert_eq!(ids, vec![1, 3, 4, 5]);
    }

    #[test]
    fn results_are_lenient_about_missing_keys() {
        let r = Results::parse(br#"{"streams":[{"id":1,"bytes":5}]}"#).unwrap();
        assert_eq!(r.streams[0].bytes, 5);
        assert!(Results::parse(b"{\"streams\":7}").is_err());
        let r = Results::parse(
            br#"{"sender_has_retransmits":18446744073709551615,"streams":[{"id":1,"bytes":2,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0}]}"#,
        )
        .unwrap();
        assert_eq!((r.sender_has_retransmits, r.streams[0].retransmits), (-1, -1));
    }
}
