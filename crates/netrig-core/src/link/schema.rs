//! The link-spec contract: every key a topology file may give one direction of a link,
//! where it goes in netrig-link's [`DirectionSpec`](crate::link::spec::DirectionSpec)
//! JSON, its unit, its range and its default, and each queue discipline with its
//! parameters and default limit.
//!
//! Defined here once. `build` checks a spec against these ranges; `netrig-link schema`
//! prints [`schema`] as JSON; netrig's Python side reads that printed copy
//! (`python/netrig/link/schema.json`) to parse topology files, and a test on each side
//! fails when the copy and this table differ. Adding a link key is one row here (or in
//! [`disciplines`]) plus its field in the spec and its stage.

use serde_json::{json, Value};

use crate::link::aqm::{self, Limit};

/// Bumped when a spec's meaning changes; netrig-link refuses a configuration or a live
/// change written for another version.
pub const VERSION: u32 = 1;

/// How a release lateness is judged: a packet released more than this after its due
/// time counts as late, and a run with more than [`LATE_SHARE`] of its packets late is
/// flagged as one the emulator could not time.
pub const LATE_BUDGET_NS: u64 = 1_000_000;
pub const LATE_SHARE: f64 = 0.01;

/// What a key holds, in the topology file and in the JSON.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// "30Mbit" in the file, bit/s in the JSON.
    Rate,
    /// "10ms" in the file, nanoseconds in the JSON.
    Duration,
    /// "1%" in the file, a probability in the JSON.
    Fraction,
    /// "64KB" in the file, bytes in the JSON.
    Bytes,
    /// A whole number.
    Count,
    /// A positive real number.
    Number,
    Bool,
    /// One of the given words.
    Choice(&'static [&'static str]),
    /// A file's path.
    Path,
    /// Packets ("100", "100p") or bytes ("64KB"): `queue.limit_packets` or `queue.limit_bytes`.
    Queue,
    /// Gilbert-Elliott loss: a mapping of four fractions.
    Gemodel,
    /// The queue discipline: a name, or a mapping with `type` and its parameters.
    Discipline,
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Rate => "rate",
            Kind::Duration => "duration",
            Kind::Fraction => "fraction",
            Kind::Bytes => "bytes",
            Kind::Count => "count",
            Kind::Number => "number",
            Kind::Bool => "bool",
            Kind::Choice(_) => "choice",
            Kind::Path => "path",
            Kind::Queue => "queue",
            Kind::Gemodel => "gemodel",
            Kind::Discipline => "discipline",
        }
    }

    /// The JSON value's unit.
    fn unit(&self) -> &'static str {
        match self {
            Kind::Rate => "bit/s",
            Kind::Duration => "ns",
            Kind::Bytes | Kind::Queue => "bytes",
            _ => "",
        }
    }
}

/// One key: `name` in the file, `json` its dotted path in the spec.
#[derive(Debug, Clone)]
pub struct Key {
    pub name: &'static str,
    pub json: &'static str,
    pub kind: Kind,
    /// The range of the JSON value (inclusive), where it has one.
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// What an absent key means (null: the stage is off).
    pub default: Value,
    pub doc: &'static str,
}

const HOUR_NS: f64 = 3600e9;

fn key(name: &'static str, json: &'static str, kind: Kind, doc: &'static str) -> Key {
    let (min, max) = match kind {
        Kind::Fraction => (Some(0.0), Some(1.0)),
        Kind::Duration => (Some(0.0), Some(HOUR_NS)),
        _ => (None, None),
    };
    Key {
        name,
        json,
        kind,
        min,
        max,
        default: Value::Null,
        doc,
    }
}

impl Key {
    fn range(mut self, min: f64, max: f64) -> Key {
        (self.min, self.max) = (Some(min), Some(max));
        self
    }

    fn default(mut self, v: Value) -> Key {
        self.default = v;
        self
    }

    fn to_json(&self) -> Value {
        let mut v = json!({
            "name": self.name, "json": self.json, "kind": self.kind.name(),
            "unit": self.kind.unit(), "default": self.default, "doc": self.doc,
        });
        if let Some(m) = self.min {
            v["min"] = json!(m);
        }
        if let Some(m) = self.max {
            v["max"] = json!(m);
        }
        if let Kind::Choice(c) = self.kind {
            v["choices"] = json!(c);
        }
        v
    }
}

pub const DISTRIBUTIONS: &[&str] = &["uniform", "normal", "pareto", "paretonormal"];
pub const DISCIPLINES: &[&str] = &["droptail", "red", "codel", "pie", "fq_codel"];
/// Queue limits: packets, and bytes.
pub const QUEUE_PACKETS: (f64, f64) = (1.0, 1_000_000.0);
pub const QUEUE_BYTES: (f64, f64) = (64.0, 4_294_967_296.0);

/// Every key of one direction, in the order a topology file's reader shows them.
pub fn keys() -> Vec<Key> {
    use Kind::*;
    vec![
        key(
            "rate",
            "rate_bps",
            Rate,
            "serialization rate (no limit when absent)",
        )
        .range(1e3, 1e11),
        key(
            "overhead",
            "overhead_bytes",
            Count,
            "bytes added to every frame's size for the rate",
        )
        .range(0.0, 1000.0)
        .default(json!(0)),
        key(
            "trace",
            "trace.path",
            Path,
            "a mahimahi delivery trace replayed instead of a rate",
        ),
        key(
            "trace_repeat",
            "trace.repeat",
            Bool,
            "start the trace again at its end",
        )
        .default(json!(true)),
        key("delay", "delay_ns", Duration, "one-way delay").default(json!(0)),
        key(
            "jitter",
            "jitter_ns",
            Duration,
            "delay variation (± around the delay)",
        )
        .default(json!(0)),
        key(
            "distribution",
            "distribution",
            Choice(DISTRIBUTIONS),
            "the jitter's distribution",
        )
        .default(json!("uniform")),
        key(
            "correlation",
            "delay_correlation",
            Fraction,
            "correlation of successive jitters",
        )
        .default(json!(0.0)),
        key("no_reorder", "no_reorder", Bool, "jitter never reorders packets").default(json!(false)),
        key("loss", "loss.random.p", Fraction, "random loss"),
        key(
            "loss_correlation",
            "loss.random.correlation",
            Fraction,
            "correlation of successive losses",
        )
        .default(json!(0.0)),
        key(
            "gemodel",
            "loss.gemodel",
            Gemodel,
            "Gilbert-Elliott loss (p, r, loss_good, loss_bad)",
        ),
        // Added as issue 13's example of a new key: this row, the spec's field and the
        // loss stage's marking; Python reads it from the printed schema.
        key(
            "ecn",
            "ecn",
            Bool,
            "loss marks ECN-capable packets CE instead of dropping them (netem's ecn)",
        )
        .default(json!(false)),
        key("duplicate", "duplicate.p", Fraction, "packets sent twice"),
        key("corrupt", "corrupt.p", Fraction, "packets with one bit flipped"),
        key(
            "reorder",
            "reorder.p",
            Fraction,
            "packets sent at once, ahead of the delayed ones",
        ),
        key("reorder_gap", "reorder.gap", Count, "reorder every gap-th packet")
            .range(1.0, 1e6)
            .default(json!(1)),
        key(
            "queue",
            "queue.limit",
            Queue,
            "the queue's limit: packets (100, 100p) or bytes (64KB); \
             the discipline's default when absent",
        ),
        key(
            "aqm",
            "queue.discipline",
            Discipline,
            "the queue discipline and its parameters",
        )
        .default(json!("droptail")),
    ]
}

/// A queue discipline: its parameters (JSON paths under `queue.`) and default limit.
#[derive(Debug, Clone)]
pub struct DisciplineInfo {
    pub name: &'static str,
    pub params: Vec<Key>,
    pub limit: Limit,
    /// What the discipline fixes that a user cannot set but a translator to another
    /// implementation (tc) must match: RED's average packet and averaging weight.
    pub constants: Value,
    pub doc: &'static str,
}

fn param(name: &'static str, json: &'static str, kind: Kind, default: Value, doc: &'static str) -> Key {
    key(name, json, kind, doc).default(default)
}

/// Every discipline, its parameters and their defaults (the AQMs' own `Config::default`).
pub fn disciplines() -> Vec<DisciplineInfo> {
    use Kind::*;
    let ms = |ns: u64| json!(ns);
    let (codel, fq, pie, red) = (
        aqm::codel::Config::default(),
        aqm::fq_codel::Config::default(),
        aqm::pie::Config::default(),
        aqm::red::Config::default(),
    );
    let positive_ns = |k: Key| k.range(1.0, HOUR_NS);
    vec![
        DisciplineInfo {
            name: "droptail",
            params: vec![],
            limit: Limit::packets(1000),
            constants: json!({}),
            doc: "first in, first out; drops arrivals at the limit",
        },
        DisciplineInfo {
            name: "red",
            params: vec![
                param(
                    "min_th",
                    "min_th_bytes",
                    Bytes,
                    json!(red.min_th_bytes),
                    "average backlog where marking starts",
                )
                .range(1.0, QUEUE_BYTES.1),
                param(
                    "max_th",
                    "max_th_bytes",
                    Bytes,
                    json!(red.max_th_bytes),
                    "average backlog of max_p",
                )
                .range(1.0, QUEUE_BYTES.1),
                param(
                    "max_p",
                    "max_p",
                    Number,
                    json!(red.max_p),
                    "the drop probability at max_th, e.g. 0.02",
                )
                .range(1e-9, 1.0),
                param(
                    "gentle",
                    "gentle",
                    Bool,
                    json!(red.gentle),
                    "ramp to 1 between max_th and 2 max_th",
                ),
                param(
                    "ecn",
                    "ecn",
                    Bool,
                    json!(red.ecn),
                    "mark ECN-capable packets instead of dropping",
                ),
            ],
            limit: red.limit,
            constants: json!({ "avpkt_bytes": red.avpkt, "wq": red.wq }),
            doc: "Random Early Detection (Floyd & Jacobson 1993)",
        },
        DisciplineInfo {
            name: "codel",
            params: vec![
                positive_ns(param(
                    "target",
                    "target_ns",
                    Duration,
                    ms(codel.target_ns),
                    "acceptable standing delay",
                )),
                positive_ns(param(
                    "interval",
                    "interval_ns",
                    Duration,
                    ms(codel.interval_ns),
                    "sliding window",
                )),
                param(
                    "ecn",
                    "ecn",
                    Bool,
                    json!(codel.ecn),
                    "mark ECN-capable packets instead of dropping",
                ),
            ],
            limit: codel.limit,
            constants: json!({}),
            doc: "Controlled Delay (RFC 8289)",
        },
        DisciplineInfo {
            name: "pie",
            params: vec![
                positive_ns(param(
                    "target",
                    "target_ns",
                    Duration,
                    ms(pie.target_ns),
                    "target queueing delay",
                )),
                positive_ns(param(
                    "tupdate",
                    "tupdate_ns",
                    Duration,
                    ms(pie.tupdate_ns),
                    "update interval",
                )),
                param(
                    "alpha",
                    "alpha",
                    Number,
                    json!(pie.alpha),
                    "weight of the delay's distance from target",
                )
                .range(1e-9, 1e3),
                param(
                    "beta",
                    "beta",
                    Number,
                    json!(pie.beta),
                    "weight of the delay's trend",
                )
                .range(1e-9, 1e3),
                param(
                    "max_burst",
                    "max_burst_ns",
                    Duration,
                    ms(pie.max_burst_ns),
                    "burst allowed unharmed",
                ),
                param(
                    "ecn",
                    "ecn",
                    Bool,
                    json!(pie.ecn),
                    "mark ECN-capable packets instead of dropping",
                ),
            ],
            limit: pie.limit,
            constants: json!({}),
            doc: "Proportional Integral controller Enhanced (RFC 8033)",
        },
        DisciplineInfo {
            name: "fq_codel",
            params: vec![
                positive_ns(param(
                    "target",
                    "target_ns",
                    Duration,
                    ms(fq.target_ns),
                    "acceptable standing delay",
                )),
                positive_ns(param(
                    "interval",
                    "interval_ns",
                    Duration,
                    ms(fq.interval_ns),
                    "sliding window",
                )),
                param("flows", "flows", Count, json!(fq.flows), "flow queues").range(1.0, 65536.0),
                param(
                    "quantum",
                    "quantum",
                    Count,
                    json!(fq.quantum),
                    "bytes each queue sends per round",
                )
                .range(64.0, 1_048_576.0),
                param(
                    "ecn",
                    "ecn",
                    Bool,
                    json!(fq.ecn),
                    "mark ECN-capable packets instead of dropping",
                ),
            ],
            limit: fq.limit,
            constants: json!({}),
            doc: "Flow Queue CoDel (RFC 8290)",
        },
    ]
}

/// A rule between two keys of a direction (file names; a discipline's parameter as
/// `aqm.NAME`, in force only under that discipline).
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub kind: RuleKind,
    pub key: &'static str,
    pub other: &'static str,
    pub why: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RuleKind {
    /// `key` set needs `other` set (to something other than its neutral value).
    Requires,
    /// `key` and `other` are not both set.
    Excludes,
    /// `key`'s value (or default) is below `other`'s.
    Below,
}

/// The rules between keys, checked by `DirectionSpec::build` and by netrig's Python
/// when it reads a topology file.
pub fn rules() -> Vec<Rule> {
    use RuleKind::*;
    let rule = |kind, key, other, why| Rule {
        kind,
        key,
        other,
        why,
    };
    vec![
        rule(Excludes, "rate", "trace", "give either rate or trace, not both"),
        rule(
            Excludes,
            "loss",
            "gemodel",
            "give either loss or gemodel, not both",
        ),
        rule(
            Excludes,
            "overhead",
            "trace",
            "a trace's deliveries are whole frames: overhead applies to a rate",
        ),
        rule(
            Requires,
            "reorder",
            "delay",
            "reordering needs a delay to jump ahead of",
        ),
        rule(
            Below,
            "aqm.min_th",
            "aqm.max_th",
            "RED's min_th must be below its max_th",
        ),
    ]
}

/// The JSON path of a file key (`aqm.min_th` under `discipline`), and its default.
fn place(name: &str, discipline: &str) -> Option<(String, Value)> {
    if let Some(param) = name.strip_prefix("aqm.") {
        let d = disciplines().into_iter().find(|d| d.name == discipline)?;
        let k = d.params.into_iter().find(|k| k.name == param)?;
        return Some((format!("queue.{}", k.json), k.default));
    }
    let k = keys().into_iter().find(|k| k.name == name)?;
    let json = if k.kind == Kind::Queue {
        "queue.limit_packets".to_string()
    } else {
        k.json.to_string()
    };
    Some((json, k.default))
}

/// Is a value set to something other than neutral (absent, null, 0, false)?
fn set(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(_) => true,
    }
}

/// The first rule a spec (as JSON) breaks: (the JSON field, why).
pub fn broken_rule(spec: &Value) -> Option<(String, &'static str)> {
    let discipline = at(spec, "queue.discipline")
        .and_then(Value::as_str)
        .unwrap_or("droptail");
    for r in rules() {
        let (Some((a, a_default)), Some((b, b_default))) =
            (place(r.key, discipline), place(r.other, discipline))
        else {
            continue; // a parameter of another discipline
        };
        let (va, vb) = (at(spec, &a), at(spec, &b));
        let broken = match r.kind {
            RuleKind::Requires => set(va) && !set(vb),
            RuleKind::Excludes => set(va) && set(vb),
            RuleKind::Below => {
                let x = va.unwrap_or(&a_default).as_f64();
                let y = vb.unwrap_or(&b_default).as_f64();
                matches!((x, y), (Some(x), Some(y)) if x >= y)
            }
        };
        if broken {
            return Some((a, r.why));
        }
    }
    None
}

/// The contract as JSON: what `netrig-link schema` prints.
pub fn schema() -> Value {
    let limit = |l: Limit| json!({ "packets": l.packets, "bytes": l.bytes });
    json!({
        "schema": "netrig-link direction spec",
        "version": VERSION,
        "keys": keys().iter().map(Key::to_json).collect::<Vec<_>>(),
        "queue": {
            "packets": { "min": QUEUE_PACKETS.0, "max": QUEUE_PACKETS.1 },
            "bytes": { "min": QUEUE_BYTES.0, "max": QUEUE_BYTES.1 },
        },
        "disciplines": disciplines().iter().map(|d| json!({
            "name": d.name, "doc": d.doc, "limit": limit(d.limit), "constants": d.constants,
            "params": d.params.iter().map(Key::to_json).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "rules": rules().iter().map(|r| json!({
            "kind": format!("{:?}", r.kind).to_lowercase(), "key": r.key, "other": r.other, "why": r.why,
        })).collect::<Vec<_>>(),
        "lateness": { "budget_ns": LATE_BUDGET_NS, "late_share": LATE_SHARE },
    })
}

/// The JSON value at a dotted path, if present and not null.
pub fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(v, |v, k| v.get(k))
        .filter(|v| !v.is_null())
}

/// "`field`: `value` is outside min .. max" for the first value out of its key's range.
pub fn out_of_range(spec: &Value, keys: &[Key], prefix: &str) -> Option<(String, String)> {
    for k in keys {
        let path = format!("{prefix}{}", k.json);
        let Some(x) = at(spec, &path).and_then(Value::as_f64) else {
            continue;
        };
        let (lo, hi) = (k.min.unwrap_or(f64::MIN), k.max.unwrap_or(f64::MAX));
        if !(lo..=hi).contains(&x) || x.is_nan() {
            return Some((
                path,
                format!("{x} is outside {lo} .. {hi} (the file's `{}`)", k.name),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::delay::Distribution;

    /// The copy Python reads is this table, printed: regenerate it with
    /// `target/release/netrig-link schema > python/netrig/link/schema.json`.
    #[test]
    fn pythons_copy_is_this_schema() {
        let copy: Value = serde_json::from_str(include_str!("../../../../python/netrig/link/schema.json"))
            .expect("python/netrig/link/schema.json is JSON");
        assert!(
            copy == schema(),
            "python/netrig/link/schema.json differs from the schema: regenerate it with \
             `netrig-link schema > python/netrig/link/schema.json`"
        );
    }

    /// A key's default in the schema is what the spec holds when the key is left out
    /// (Python leaves out a key at its default): serde's defaults cannot drift from it.
    #[test]
    fn a_left_out_key_is_its_schema_default() {
        use crate::link::spec::DirectionSpec;
        fn put(v: &mut Value, path: &str, x: Value) {
            let parts: Vec<&str> = path.split('.').collect();
            let mut at = v;
            for p in &parts[..parts.len() - 1] {
                at = at
                    .as_object_mut()
                    .unwrap()
                    .entry(p.to_string())
                    .or_insert(json!({}));
            }
            at[parts[parts.len() - 1]] = x;
        }
        let all = keys();
        for k in all
            .iter()
            .filter(|k| !k.default.is_null() && !matches!(k.kind, Kind::Queue | Kind::Discipline))
        {
            // The stage the key modifies, on (its own key with a null default).
            let mut spec = json!({});
            if let Some((parent, _)) = k.json.rsplit_once('.') {
                let stage = all
                    .iter()
                    .find(|s| s.default.is_null() && s.json.starts_with(&format!("{parent}.")))
                    .unwrap_or_else(|| panic!("{}: no key turns its stage on", k.name));
                put(
                    &mut spec,
                    stage.json,
                    if stage.kind == Kind::Path {
                        json!("x")
                    } else {
                        json!(0.5)
                    },
                );
            }
            let s: DirectionSpec =
                serde_json::from_value(spec.clone()).unwrap_or_else(|e| panic!("{}: {e}", k.name));
            let back = serde_json::to_value(&s).unwrap();
            match at(&back, k.json) {
                Some(v) => assert_eq!(
                    v.as_f64().map(|x| json!(x)).unwrap_or(v.clone()),
                    k.default.as_f64().map(|x| json!(x)).unwrap_or(k.default.clone()),
                    "{}: left out, the spec holds {v}, the schema says {}",
                    k.name,
                    k.default
                ),
                // Not written when at its default: false, or (distribution) the build's uniform.
                None => assert!(
                    k.default == json!(false)
                        || (k.name == "distribution"
                            && s.build_delay().unwrap().distribution == Distribution::Uniform
                            && k.default == json!("uniform")),
                    "{}: left out, the spec holds nothing; the schema says {}",
                    k.name,
                    k.default
                ),
            }
        }
    }

    #[test]
    fn every_key_and_parameter_has_a_place_in_the_spec() {
        use crate::link::spec::DirectionSpec;
        // A spec with every key set parses: no key of the schema is missing from the spec.
        let mut full = json!({});
        for k in keys() {
            let value = match k.kind {
                Kind::Queue | Kind::Discipline | Kind::Gemodel | Kind::Path => continue,
                Kind::Choice(c) => json!(c[0]),
                Kind::Bool => json!(true),
                Kind::Fraction | Kind::Number => json!(1.0),
                _ => json!(k.min.unwrap_or(1.0).max(1.0) as u64),
            };
            let mut at = &mut full;
            let parts: Vec<&str> = k.json.split('.').collect();
            for p in &parts[..parts.len() - 1] {
                at = at
                    .as_object_mut()
                    .unwrap()
                    .entry(p.to_string())
                    .or_insert(json!({}));
            }
            at[parts[parts.len() - 1]] = value;
        }
        let s: DirectionSpec = serde_json::from_value(full.clone()).unwrap_or_else(|e| panic!("{e}: {full}"));
        assert_eq!(serde_json::to_value(&s).unwrap()["delay_ns"], json!(1));
        for d in disciplines() {
            let mut q = json!({ "discipline": d.name });
            for p in &d.params {
                q[p.json] = p.default.clone();
            }
            let spec: DirectionSpec = serde_json::from_value(json!({ "queue": q })).unwrap();
            spec.build(1, 0).unwrap_or_else(|e| panic!("{}: {e}", d.name));
        }
    }
}
