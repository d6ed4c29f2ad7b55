//! The daemon's configuration file (JSON): which interface pairs form which link, each
//! direction's stages, and where stats, control and captures go.

use std::collections::HashSet;

use crate::capture::CaptureRequest;
use crate::rx::IoKind;
use netrig_core::link::schema;
use netrig_core::link::spec::DirectionSpec;
use serde::Deserialize;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("{0}")]
    Json(String),
    #[error("links[{index}] ({name}): {problem}")]
    Link {
        index: usize,
        name: String,
        problem: String,
    },
    #[error("{0}")]
    Other(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    pub name: String,
    /// Interfaces (in the daemon's namespace) of the link's two ends.
    pub a: String,
    pub b: String,
    /// Both directions alike; `a_to_b` / `b_to_a` override per direction.
    #[serde(default)]
    pub both: Option<DirectionSpec>,
    #[serde(default)]
    pub a_to_b: Option<DirectionSpec>,
    #[serde(default)]
    pub b_to_a: Option<DirectionSpec>,
}

impl LinkConfig {
    pub fn spec(&self, dir: usize) -> DirectionSpec {
        let own = if dir == 0 { &self.a_to_b } else { &self.b_to_a };
        own.clone().or_else(|| self.both.clone()).unwrap_or_default()
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcapConfig {
    pub link: String,
    /// "a_to_b" or "b_to_a".
    pub dir: String,
    pub path: String,
}

fn ten() -> f64 {
    10.0
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The link-spec schema version the writer used (`netrig_core::link::schema::VERSION`);
    /// absent: this daemon's own.
    #[serde(default)]
    pub spec_version: Option<u32>,
    pub links: Vec<LinkConfig>,
    /// Milliseconds between stats samples (>= 1; 10 = 100 Hz).
    #[serde(default = "ten")]
    pub stats_interval_ms: f64,
    /// JSON lines of stats (and per-packet events when asked).
    #[serde(default)]
    pub stats_path: Option<String>,
    #[serde(default)]
    pub control_path: Option<String>,
    #[serde(default)]
    pub seed: u64,
    /// Turn the interfaces' offloads off (each frame a wire frame). With false, offload
    /// superframes pass whole (with their virtio-net header) and are charged for the
    /// segments they stand for: faster, for capacity tests; the hosts' ends must then
    /// keep their offloads too.
    #[serde(default = "yes")]
    pub offloads_off: bool,
    #[serde(default)]
    pub pcap: Vec<PcapConfig>,
    /// pcapng captures started with the daemon (as the `capture_start` request).
    #[serde(default)]
    pub captures: Vec<CaptureRequest>,
    /// Record every packet's fate in the stats stream.
    #[serde(default)]
    pub events: bool,
    /// Run the event loop with real-time priority (SCHED_FIFO), so that busy traffic
    /// processes do not delay releases. Off by default: a loop busy for 95 % of a
    /// second is then throttled by the kernel for the rest (a 50 ms stall).
    #[serde(default)]
    pub realtime: bool,
    /// How the links' ends are read: "ring" (a TPACKET_V2 receive ring, read in place;
    /// the default) or "recvmmsg" (batches into the daemon's buffers).
    #[serde(default)]
    pub io: IoKind,
    /// MiB of receive ring per link direction at most (io "ring"): what the kernel can
    /// hold while the daemon is not running. Rings are memory the kernel keeps whether
    /// traffic flows or not, so all of a daemon's rings share RING_BUDGET_MB (at least 1
    /// MiB each): see [`Config::ring_bytes`].
    #[serde(default = "ring_mb")]
    pub ring_mb: u32,
}

fn ring_mb() -> u32 {
    8
}

/// What all of a daemon's receive rings may take together, unless each has 1 MiB.
pub const RING_BUDGET_MB: usize = 256;

pub fn dir_index(name: &str) -> Option<usize> {
    match name {
        "a_to_b" => Some(0),
        "b_to_a" => Some(1),
        _ => None,
    }
}

/// Refuses a spec written for another version of the link-spec schema.
pub fn check_version(v: Option<u32>) -> Result<(), String> {
    match v {
        Some(v) if v != schema::VERSION => Err(format!(
            "spec_version: {v}, but this netrig-link reads version {} of the link spec \
             (`netrig-link schema` prints it): netrig and netrig-link are from different builds",
            schema::VERSION
        )),
        _ => Ok(()),
    }
}

impl Config {
    /// Bytes of receive ring per link direction: `ring_mb`, or an equal share of
    /// RING_BUDGET_MB when that is less, but at least 1 MiB.
    pub fn ring_bytes(&self) -> usize {
        let share = RING_BUDGET_MB / (2 * self.links.len()).max(1);
        (self.ring_mb as usize).min(share).max(1) << 20
    }

    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let cfg: Config = serde_json::from_str(text).map_err(|e| ConfigError::Json(e.to_string()))?;
        cfg.check()?;
        Ok(cfg)
    }

    fn check(&self) -> Result<(), ConfigError> {
        check_version(self.spec_version).map_err(ConfigError::Other)?;
        if self.links.is_empty() {
            return Err(ConfigError::Other("no links to emulate".into()));
        }
        if !(1.0..=60_000.0).contains(&self.stats_interval_ms) {
            return Err(ConfigError::Other(format!(
                "stats_interval_ms: {} is outside 1 .. 60000",
                self.stats_interval_ms
            )));
        }
        if !(1..=1024).contains(&self.ring_mb) {
            return Err(ConfigError::Other(format!(
                "ring_mb: {} is outside 1 .. 1024",
                self.ring_mb
            )));
        }
        let mut names = HashSet::new();
        let mut ifaces = HashSet::new();
        for (index, l) in self.links.iter().enumerate() {
            let err = |problem: String| ConfigError::Link {
                index,
                name: l.name.clone(),
                problem,
            };
            if !names.insert(l.name.clone()) {
                return Err(err("a second link of this name".into()));
            }
            if l.a == l.b {
                return Err(err(format!("both ends are '{}'", l.a)));
            }
            for i in [&l.a, &l.b] {
                if !ifaces.insert(i.clone()) {
                    return Err(err(format!("interface '{i}' already serves another link")));
                }
            }
            for d in 0..2 {
                let mut spec = l.spec(d);
                if let Some(t) = spec.trace.as_mut() {
                    t.text = Some("1".into()); // checked for real when the file is read
                }
                spec.build(0, 0)
                    .map_err(|e| err(format!("{}: {e}", ["a_to_b", "b_to_a"][d])))?;
            }
        }
        for p in &self.pcap {
            if !names.contains(&p.link) || dir_index(&p.dir).is_none() {
                return Err(ConfigError::Other(format!(
                    "pcap: no link direction {}.{}",
                    p.link, p.dir
                )));
            }
        }
        let mut captured = HashSet::new();
        for (i, c) in self.captures.iter().enumerate() {
            let err = |problem: String| ConfigError::Other(format!("captures[{i}] ({}): {problem}", c.link));
            if !names.contains(&c.link) {
                return Err(err("no such link".into()));
            }
            if !captured.insert(c.link.clone()) {
                return Err(err("a second capture of this link".into()));
            }
            c.check().map_err(err)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_config_parses_with_both_and_overrides() {
        let c = Config::parse(
            r#"{"links": [{"name": "l1", "a": "x0", "b": "x1",
                "both": {"rate_bps": 10000000, "delay_ns": 5000000},
                "b_to_a": {"rate_bps": 1000000}}]}"#,
        )
        .unwrap();
        assert_eq!(c.links[0].spec(0).delay_ns, 5_000_000);
        assert_eq!(c.links[0].spec(1).rate_bps, Some(1_000_000));
        assert_eq!(c.links[0].spec(1).delay_ns, 0);
        assert_eq!(c.stats_interval_ms, 10.0);
    }

    #[test]
    fn mistakes_are_named() {
        let e = |t: &str| Config::parse(t).unwrap_err().to_string();
        assert!(e(r#"{"links": [], "bogus": 1}"#).contains("bogus"));
        assert!(e(r#"{"spec_version": 999, "links": []}"#).contains("version"));
        assert!(e(r#"{"links": []}"#).contains("no links"));
        assert!(e(r#"{"links": [{"name": "l", "a": "x", "b": "x"}]}"#).contains("both ends"));
        let two = r#"{"links": [{"name": "l", "a": "x", "b": "y"}, {"name": "l", "a": "p", "b": "q"}]}"#;
        assert!(e(two).contains("second link"));
        let bad =
            r#"{"links": [{"name": "l", "a": "x", "b": "y", "a_to_b": {"loss": {"random": {"p": 2}}}}]}"#;
        assert_eq!(
            e(bad),
            "links[0] (l): a_to_b: loss.random.p: 2 is outside 0 .. 1 (the file's `loss`)"
        );
        let cap =
            |c: &str| format!(r#"{{"links": [{{"name": "l", "a": "x", "b": "y"}}], "captures": [{c}]}}"#);
        assert_eq!(
            e(&cap(r#"{"link": "m", "path": "p"}"#)),
            "captures[0] (m): no such link"
        );
        assert_eq!(
            e(&cap(r#"{"link": "l", "path": "p", "dir": "up"}"#)),
            "captures[0] (l): dir: 'up' is not a_to_b, b_to_a or both"
        );
        assert!(Config::parse(&cap(r#"{"link": "l", "path": "p"}"#)).is_ok());
        let io = |v: &str| format!(r#"{{"links": [{{"name": "l", "a": "x", "b": "y"}}], {v}}}"#);
        assert_eq!(
            Config::parse(&io(r#""io": "recvmmsg""#)).unwrap().io,
            IoKind::Recvmmsg
        );
        assert_eq!(Config::parse(&io(r#""seed": 1"#)).unwrap().io, IoKind::Ring);
        assert!(e(&io(r#""io": "xdp""#)).contains("unknown variant `xdp`"));
        assert!(e(&io(r#""ring_mb": 0"#)).contains("ring_mb: 0 is outside 1 .. 1024"));
    }

    #[test]
    fn rings_share_a_budget_but_keep_a_mebibyte() {
        let links = |n: usize, extra: &str| {
            let l: Vec<String> = (0..n)
                .map(|i| format!(r#"{{"name": "l{i}", "a": "x{i}", "b": "y{i}"}}"#))
                .collect();
            Config::parse(&format!(r#"{{"links": [{}]{extra}}}"#, l.join(","))).unwrap()
        };
        assert_eq!(links(1, "").ring_bytes(), 8 << 20);
        assert_eq!(links(1, r#", "ring_mb": 2"#).ring_bytes(), 2 << 20);
        assert_eq!(links(32, "").ring_bytes(), 4 << 20);
        assert_eq!(links(300, "").ring_bytes(), 1 << 20);
    }
}
