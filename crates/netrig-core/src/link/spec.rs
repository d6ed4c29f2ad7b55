//! A direction's configuration as data (what netrig-link reads from JSON and changes
//! live), and the one place that turns it into stages. Numbers carry their unit in
//! their name; the Python side converts "30Mbit" and "10ms" before writing them.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::link::aqm::{self, Limit, Qdisc};
use crate::link::delay::{Delay, Distribution};
use crate::link::direction::Direction;
use crate::link::loss::{Chance, Loss};
use crate::link::rate::{Rate, Trace, TraceError};
use crate::link::schema;

#[derive(Debug, Error, PartialEq)]
pub enum SpecError {
    #[error("{field}: {problem}")]
    Bad { field: String, problem: String },
    #[error("trace: {0}")]
    Trace(#[from] TraceError),
}

fn bad(field: &str, problem: impl Into<String>) -> SpecError {
    SpecError::Bad {
        field: field.into(),
        problem: problem.into(),
    }
}

fn probability(field: &str, p: f64) -> Result<f64, SpecError> {
    if !(0.0..=1.0).contains(&p) || p.is_nan() {
        return Err(bad(field, format!("{p} is not a probability in [0, 1]")));
    }
    Ok(p)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// The trace's lines (the daemon fills this from `path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default = "yes")]
    pub repeat: bool,
    #[serde(default = "mtu")]
    pub bytes_per_opportunity: u32,
}

fn yes() -> bool {
    true
}
fn mtu() -> u32 {
    1500
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChanceSpec {
    pub p: f64,
    #[serde(default)]
    pub correlation: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReorderSpec {
    pub p: f64,
    #[serde(default)]
    pub correlation: f64,
    #[serde(default = "one")]
    pub gap: u32,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum LossSpec {
    Random(ChanceSpec),
    /// Gilbert-Elliott: p (good→bad), r (bad→good), loss in good, loss in bad.
    Gemodel {
        p: f64,
        r: f64,
        loss_good: f64,
        loss_bad: f64,
    },
}

/// The queue and its discipline; unset parameters take the RFC's and Linux's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    #[serde(default = "droptail")]
    pub discipline: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_packets: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tupdate_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_burst_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_th_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_th_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gentle: Option<bool>,
}

fn droptail() -> String {
    "droptail".into()
}

impl Default for QueueSpec {
    fn default() -> Self {
        serde_json::from_str("{}").expect("every field has a default")
    }
}

/// One direction of a link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct DirectionSpec {
    /// None: no rate limit (and no serialization delay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<u64>,
    #[serde(default)]
    pub overhead_bytes: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceSpec>,
    #[serde(default)]
    pub queue: QueueSpec,
    #[serde(default)]
    pub delay_ns: u64,
    #[serde(default)]
    pub jitter_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<String>,
    #[serde(default)]
    pub delay_correlation: f64,
    #[serde(default)]
    pub no_reorder: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<LossSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate: Option<ChanceSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrupt: Option<ChanceSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<ReorderSpec>,
    /// Loss marks ECN-capable packets instead of dropping them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
}

/// The discipline a queue names, from the schema ("fifo", "pfifo" and "bfifo" are
/// drop-tail).
fn discipline(name: &str) -> Option<schema::DisciplineInfo> {
    let name = match name {
        "fifo" | "pfifo" | "bfifo" => "droptail",
        n => n,
    };
    schema::disciplines().into_iter().find(|d| d.name == name)
}

/// The limit a queue spec gives its queue: its own, or its discipline's default; None
/// for a discipline the schema does not know.
pub fn queue_limit(q: &QueueSpec) -> Option<Limit> {
    let info = discipline(&q.discipline)?;
    Some(match (q.limit_packets, q.limit_bytes) {
        (None, None) => info.limit,
        (p, b) => Limit { packets: p, bytes: b },
    })
}

/// The parameters set in a queue spec (JSON names), limits and the discipline aside.
fn set_params(q: &QueueSpec) -> Vec<String> {
    let v = serde_json::to_value(q).unwrap_or_default();
    let Some(m) = v.as_object() else { return vec![] };
    m.iter()
        .filter(|(k, v)| {
            !v.is_null() && !matches!(k.as_str(), "discipline" | "limit_packets" | "limit_bytes")
        })
        .map(|(k, _)| k.clone())
        .collect()
}

fn positive(field: &str, v: Option<u64>) -> Result<Option<u64>, SpecError> {
    match v {
        Some(0) => Err(bad(field, "must be positive")),
        other => Ok(other),
    }
}

/// The discipline a queue spec names, with its defaults filled in; `rate_bps` (if the
/// link has one) lets RED age its average over idle time.
pub fn build_qdisc(q: &QueueSpec, rate_bps: Option<u64>) -> Result<Box<dyn Qdisc>, SpecError> {
    let Some(info) = discipline(&q.discipline) else {
        return Err(bad(
            "queue.discipline",
            format!(
                "unknown discipline '{}' ({})",
                q.discipline,
                schema::DISCIPLINES.join(", ")
            ),
        ));
    };
    let name = info.name;
    if let Some(p) = set_params(q)
        .into_iter()
        .find(|p| !info.params.iter().any(|k| k.json == p))
    {
        return Err(bad(
            &format!("queue.{p}"),
            format!("is not a parameter of {name}"),
        ));
    }
    if q.limit_packets == Some(0) || q.limit_bytes == Some(0) {
        return Err(bad("queue.limit", "a queue must hold at least one packet"));
    }
    let (packets, bytes) = (schema::QUEUE_PACKETS, schema::QUEUE_BYTES);
    if q.limit_packets
        .is_some_and(|n| !(packets.0..=packets.1).contains(&(n as f64)))
    {
        return Err(bad(
            "queue.limit_packets",
            format!("a queue holds {} .. {} packets", packets.0, packets.1),
        ));
    }
    if q.limit_bytes
        .is_some_and(|n| !(bytes.0..=bytes.1).contains(&(n as f64)))
    {
        return Err(bad(
            "queue.limit_bytes",
            format!("a queue holds {} .. {} bytes", bytes.0, bytes.1),
        ));
    }
    let queue = serde_json::to_value(q).unwrap_or_default();
    if let Some((field, problem)) = schema::out_of_range(&queue, &info.params, "") {
        return Err(bad(&format!("queue.{field}"), problem));
    }
    let limit = |q: &QueueSpec| match (q.limit_packets, q.limit_bytes) {
        (None, None) => info.limit,
        (p, b) => Limit { packets: p, bytes: b },
    };
    let target = positive("queue.target_ns", q.target_ns)?;
    let interval = positive("queue.interval_ns", q.interval_ns)?;
    Ok(match name {
        "droptail" => Box::new(aqm::droptail::DropTail::new(aqm::droptail::Config {
            limit: limit(q),
        })),
        "codel" => {
            let d = aqm::codel::Config::default();
            Box::new(aqm::codel::Codel::new(aqm::codel::Config {
                target_ns: target.unwrap_or(d.target_ns),
                interval_ns: interval.unwrap_or(d.interval_ns),
                limit: limit(q),
                ecn: q.ecn.unwrap_or(d.ecn),
                ..d
            }))
        }
        "fq_codel" => {
            let d = aqm::fq_codel::Config::default();
            if q.flows == Some(0) || q.quantum == Some(0) {
                return Err(bad("queue.flows", "flows and quantum must be positive"));
            }
            Box::new(aqm::fq_codel::FqCodel::new(aqm::fq_codel::Config {
                flows: q.flows.unwrap_or(d.flows),
                quantum: q.quantum.unwrap_or(d.quantum),
                target_ns: target.unwrap_or(d.target_ns),
                interval_ns: interval.unwrap_or(d.interval_ns),
                limit: limit(q),
                ecn: q.ecn.unwrap_or(d.ecn),
                ..d
            }))
        }
        "pie" => {
            let d = aqm::pie::Config::default();
            for (f, v) in [("queue.alpha", q.alpha), ("queue.beta", q.beta)] {
                if v.is_some_and(|x| !(x > 0.0 && x.is_finite())) {
                    return Err(bad(f, "must be a positive number"));
                }
            }
            Box::new(aqm::pie::Pie::new(aqm::pie::Config {
                target_ns: target.unwrap_or(d.target_ns),
                tupdate_ns: positive("queue.tupdate_ns", q.tupdate_ns)?.unwrap_or(d.tupdate_ns),
                alpha: q.alpha.unwrap_or(d.alpha),
                beta: q.beta.unwrap_or(d.beta),
                max_burst_ns: q.max_burst_ns.unwrap_or(d.max_burst_ns),
                limit: limit(q),
                ecn: q.ecn.unwrap_or(d.ecn),
                ..d
            }))
        }
        "red" => {
            let d = aqm::red::Config::default();
            let (min, max) = (
                q.min_th_bytes.unwrap_or(d.min_th_bytes),
                q.max_th_bytes.unwrap_or(d.max_th_bytes),
            );
            if min >= max {
                return Err(bad(
                    "queue.min_th_bytes",
                    format!("{min} must be below max_th_bytes ({max})"),
                ));
            }
            let max_p = probability("queue.max_p", q.max_p.unwrap_or(d.max_p))?;
            Box::new(aqm::red::Red::new(aqm::red::Config {
                min_th_bytes: min,
                max_th_bytes: max,
                max_p,
                limit: limit(q),
                ecn: q.ecn.unwrap_or(d.ecn),
                gentle: q.gentle.unwrap_or(d.gentle),
                link_rate_bps: rate_bps,
                ..d
            }))
        }
        _ => unreachable!("PARAMS lists every discipline"),
    })
}

impl DirectionSpec {
    pub fn build_rate(&self, origin_ns: u64) -> Result<Rate, SpecError> {
        match (&self.trace, self.rate_bps) {
            (Some(_), Some(_)) => Err(bad("trace", "a direction has a rate or a trace, not both")),
            (Some(t), None) => {
                let text = t
                    .text
                    .as_deref()
                    .ok_or_else(|| bad("trace", "no trace text (give 'path')"))?;
                if t.bytes_per_opportunity == 0 {
                    return Err(bad("trace.bytes_per_opportunity", "must be positive"));
                }
                Ok(Rate::trace(
                    Trace::parse(text, t.repeat, t.bytes_per_opportunity)?,
                    origin_ns,
                ))
            }
            (None, Some(0)) => Err(bad(
                "rate_bps",
                "0 bit/s carries nothing (omit the rate for no limit)",
            )),
            (None, Some(bps)) => Ok(Rate::fixed(bps, self.overhead_bytes)),
            (None, None) => Ok(Rate::unlimited()),
        }
    }

    pub fn build_delay(&self) -> Result<Delay, SpecError> {
        let dist = match self.distribution.as_deref() {
            None => Distribution::Uniform,
            Some(name) => Distribution::parse(name).ok_or_else(|| {
                bad(
                    "distribution",
                    format!("unknown '{name}' (uniform, normal, pareto, paretonormal)"),
                )
            })?,
        };
        let mut d = Delay::new(
            self.delay_ns,
            self.jitter_ns,
            dist,
            probability("delay_correlation", self.delay_correlation)?,
        );
        d.no_reorder = self.no_reorder;
        if let Some(r) = self.reorder {
            if self.delay_ns == 0 {
                return Err(bad("reorder", "reordering needs a delay to jump ahead of"));
            }
            d = d.with_reorder(
                probability("reorder.p", r.p)?,
                probability("reorder.correlation", r.correlation)?,
                r.gap,
            );
        }
        Ok(d)
    }

    pub fn build_loss(&self) -> Result<Loss, SpecError> {
        Ok(match self.loss {
            None => Loss::None,
            Some(LossSpec::Random(c)) => Loss::random(
                probability("loss.p", c.p)?,
                probability("loss.correlation", c.correlation)?,
            ),
            Some(LossSpec::Gemodel {
                p,
                r,
                loss_good,
                loss_bad,
            }) => Loss::gilbert_elliott(
                probability("loss.p", p)?,
                probability("loss.r", r)?,
                probability("loss.loss_good", loss_good)?,
                probability("loss.loss_bad", loss_bad)?,
            ),
        })
    }

    fn chance(field: &str, c: &Option<ChanceSpec>) -> Result<Chance, SpecError> {
        Ok(match c {
            None => Chance::default(),
            Some(c) => Chance::new(probability(field, c.p)?, probability(field, c.correlation)?),
        })
    }

    /// Every value within its range in the schema, and no rule between keys broken.
    pub fn check_ranges(&self) -> Result<(), SpecError> {
        let v = serde_json::to_value(self).unwrap_or_default();
        if let Some((field, problem)) = schema::out_of_range(&v, &schema::keys(), "") {
            return Err(bad(&field, problem));
        }
        match schema::broken_rule(&v) {
            Some((field, why)) => Err(bad(&field, why)),
            None => Ok(()),
        }
    }

    /// Every stage, checked; `origin_ns` is time zero of a trace.
    pub fn build(&self, seed: u64, origin_ns: u64) -> Result<Direction, SpecError> {
        self.check_ranges()?;
        let mut d = Direction::new(
            build_qdisc(&self.queue, self.rate_bps)?,
            self.build_rate(origin_ns)?,
            self.build_delay()?,
            seed,
        );
        d.loss = self.build_loss()?;
        d.duplicate = Self::chance("duplicate", &self.duplicate)?;
        d.corrupt = Self::chance("corrupt", &self.corrupt)?;
        d.loss_marks = self.ecn;
        Ok(d)
    }

    /// Applies this spec to a running direction, keeping its queue's packets (the
    /// discipline is rebuilt only if the queue spec changed).
    pub fn apply(&self, old: &DirectionSpec, d: &mut Direction, now_ns: u64) -> Result<(), SpecError> {
        self.check_ranges()?;
        let rate = self.build_rate(now_ns)?;
        let delay = self.build_delay()?;
        let loss = self.build_loss()?;
        let dup = Self::chance("duplicate", &self.duplicate)?;
        let corrupt = Self::chance("corrupt", &self.corrupt)?;
        // RED ages its average at the link's rate: a new rate is a new RED.
        let red_rate = self.queue.discipline == "red" && self.rate_bps != old.rate_bps;
        let qdisc = if self.queue != old.queue || red_rate {
            Some(build_qdisc(&self.queue, self.rate_bps)?)
        } else {
            None
        };
        // A trace keeps its place when something else changes.
        let same_rate = (self.rate_bps, &self.trace, self.overhead_bytes)
            == (old.rate_bps, &old.trace, old.overhead_bytes);
        // Everything checked: now change.
        if !same_rate {
            d.rate = rate;
        }
        d.delay = delay;
        d.loss = loss;
        d.duplicate = dup;
        d.corrupt = corrupt;
        d.loss_marks = self.ecn;
        if let Some(q) = qdisc {
            d.replace_qdisc(now_ns, q);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> Result<DirectionSpec, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn a_full_spec_parses_and_builds() {
        let s = spec(
            r#"{"rate_bps": 30000000, "queue": {"discipline": "droptail", "limit_packets": 100},
                "delay_ns": 20000000, "jitter_ns": 1000000, "distribution": "normal",
                "loss": {"random": {"p": 0.01}}, "duplicate": {"p": 0.001}, "reorder": {"p": 0.1, "gap": 5}}"#,
        )
        .unwrap();
        let d = s.build(1, 0).unwrap();
        assert_eq!(d.qdisc_name(), "droptail");
        assert_eq!(d.rate.bps(), Some(30_000_000));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_named() {
        assert!(spec(r#"{"rate": 5}"#)
            .unwrap_err()
            .contains("unknown field `rate`"));
        assert!(spec(r#"{"queue": {"limitt": 5}}"#)
            .unwrap_err()
            .contains("limitt"));
        let e = |j: &str| spec(j).unwrap().build(1, 0).err().unwrap().to_string();
        assert_eq!(
            e(r#"{"loss": {"random": {"p": 1.5}}}"#),
            "loss.random.p: 1.5 is outside 0 .. 1 (the file's `loss`)"
        );
        assert!(e(r#"{"queue": {"discipline": "sfq"}}"#).contains("unknown discipline 'sfq'"));
        assert_eq!(
            e(r#"{"queue": {"target_ns": 5}}"#),
            "queue.target_ns: is not a parameter of droptail"
        );
        assert_eq!(
            e(r#"{"queue": {"discipline": "pie", "quantum": 5}}"#),
            "queue.quantum: is not a parameter of pie"
        );
        assert!(
            e(r#"{"queue": {"discipline": "red", "min_th_bytes": 9, "max_th_bytes": 9}}"#).contains("below")
        );
        assert!(e(r#"{"queue": {"discipline": "pie", "tupdate_ns": 0}}"#).contains("outside 1 .."));
        assert!(e(r#"{"queue": {"limit_packets": 0}}"#).contains("at least one"));
        assert!(e(r#"{"rate_bps": 0}"#).starts_with("rate_bps"));
        assert!(e(r#"{"distribution": "cauchy", "jitter_ns": 5}"#).contains("cauchy"));
        assert!(e(r#"{"reorder": {"p": 0.5}}"#).contains("needs a delay"));
        assert!(e(r#"{"rate_bps": 1000000, "trace": {"text": "1"}}"#).contains("not both"));
        assert!(e(r#"{"trace": {"text": "1\nx"}}"#).contains("line 2"));
    }

    /// The fixture pytest checks netrig's Python writes: each spec parses, builds, and
    /// serializes back unchanged (a field renamed on one side fails here or there).
    #[test]
    fn the_golden_specs_python_writes_build_here() {
        let golden: serde_json::Value = serde_json::from_str(include_str!(
            "../../../../tests/fixtures/link-spec/directions.json"
        ))
        .unwrap();
        assert_eq!(golden["version"], serde_json::json!(crate::link::schema::VERSION));
        let cases = golden["cases"].as_array().unwrap();
        assert!(cases.len() >= 10);
        for case in cases {
            let name = &case["name"];
            let s: DirectionSpec =
                serde_json::from_value(case["spec"].clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
            s.build(1, 0).unwrap_or_else(|e| panic!("{name}: {e}"));
            let back = serde_json::to_value(&s).unwrap();
            // Serde writes the defaults of the fields Python leaves out; compare what Python wrote.
            fn within(written: &serde_json::Value, back: &serde_json::Value) -> bool {
                match written {
                    serde_json::Value::Object(m) => m.iter().all(|(k, v)| within(v, &back[k])),
                    v => v == back,
                }
            }
            assert!(
                within(&case["spec"], &back),
                "{name}: {} became {back}",
                case["spec"]
            );
        }
    }

    #[test]
    fn every_discipline_builds_with_its_defaults() {
        for info in schema::disciplines() {
            let name = info.name;
            let q = QueueSpec {
                discipline: name.to_string(),
                ..QueueSpec::default()
            };
            assert_eq!(build_qdisc(&q, Some(10_000_000)).unwrap().name(), name);
        }
        let q = QueueSpec {
            discipline: "pie".into(),
            target_ns: Some(20_000_000),
            limit_packets: Some(1000),
            ..QueueSpec::default()
        };
        assert_eq!(build_qdisc(&q, None).unwrap().name(), "pie");
    }

    #[test]
    fn live_changes_keep_queued_packets() {
        use crate::link::packet::Packet;
        let old = spec(r#"{"rate_bps": 1000000, "queue": {"limit_packets": 50}}"#).unwrap();
        let mut d = old.build(1, 0).unwrap();
        for _ in 0..10 {
            d.arrive(0, Packet::sized(0, 1500, 0));
        }
        let new =
            spec(r#"{"rate_bps": 2000000, "delay_ns": 5000000, "queue": {"limit_packets": 100}}"#).unwrap();
        new.apply(&old, &mut d, 1).unwrap();
        assert_eq!(d.queue_packets(), 9);
        assert_eq!(d.rate.bps(), Some(2_000_000));
        assert_eq!(d.delay.base_ns, 5_000_000);
        // A bad change changes nothing.
        let broken = spec(r#"{"rate_bps": 5, "delay_ns": 1}"#).unwrap();
        assert!(broken.apply(&new, &mut d, 2).is_err());
        assert_eq!(d.delay.base_ns, 5_000_000);
    }
}
