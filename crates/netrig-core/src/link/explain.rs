//! A direction in words, for the people reading a capture: its shaping (an interface's
//! description), and why it dropped, duplicated or corrupted a frame (a frame's comment),
//! with the parameters that made it do so.
//!
//! Rates are decimal (1 Mbit/s = 10^6 bit/s), times in ms or µs, probabilities in
//! percent. A queue with no limit set shows its discipline's default (the schema's).
//! Does not own the numbers: they come from a [`DirectionSpec`] as it was checked.

use crate::link::aqm::Limit;
use crate::link::direction::DropReason;
use crate::link::spec::{ChanceSpec, DirectionSpec, LossSpec, QueueSpec};

/// What every comment starts with, so a reader can filter them
/// (`frame.comment contains "netrig-link dropped"`).
pub const DROPPED: &str = "netrig-link dropped this frame";
pub const DUPLICATED: &str = "netrig-link duplicated this frame";
pub const CORRUPTED: &str = "netrig-link corrupted this frame";

/// A number without float noise: at most 6 decimals, trailing zeros cut.
fn num(x: f64) -> String {
    let s = format!("{:.6}", x);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

fn percent(p: f64) -> String {
    format!("{}%", num(p * 100.0))
}

fn rate(bps: u64) -> String {
    match bps {
        b if b >= 1_000_000_000 => format!("{} Gbit/s", num(b as f64 / 1e9)),
        b if b >= 1_000_000 => format!("{} Mbit/s", num(b as f64 / 1e6)),
        b if b >= 1_000 => format!("{} kbit/s", num(b as f64 / 1e3)),
        b => format!("{b} bit/s"),
    }
}

fn time(ns: u64) -> String {
    if ns >= 1_000_000 || ns == 0 {
        format!("{} ms", num(ns as f64 / 1e6))
    } else {
        format!("{} µs", num(ns as f64 / 1e3))
    }
}

fn discipline(q: &QueueSpec) -> &str {
    match q.discipline.as_str() {
        "droptail" | "fifo" | "pfifo" | "bfifo" => "drop-tail",
        d => d,
    }
}

fn limit(q: &QueueSpec) -> String {
    let l = crate::link::spec::queue_limit(q).unwrap_or(Limit::UNLIMITED);
    match (l.packets, l.bytes) {
        (Some(p), Some(b)) => format!("{p} packets or {b} bytes"),
        (Some(p), None) => format!("{p} packets"),
        (None, Some(b)) => format!("{b} bytes"),
        (None, None) => "no limit".into(),
    }
}

fn chance(c: &ChanceSpec) -> String {
    if c.correlation > 0.0 {
        format!("{}, correlation {}", percent(c.p), percent(c.correlation))
    } else {
        percent(c.p)
    }
}

fn loss(l: &LossSpec) -> String {
    match l {
        LossSpec::Random(c) => format!("random loss (loss {})", chance(c)),
        LossSpec::Gemodel {
            p,
            r,
            loss_good,
            loss_bad,
        } => format!(
            "Gilbert-Elliott loss (p {}, r {}, loss {} good, {} bad)",
            percent(*p),
            percent(*r),
            percent(*loss_good),
            percent(*loss_bad)
        ),
    }
}

/// The direction's shaping, e.g. "rate 100 Mbit/s, delay 10 ms, queue drop-tail 100
/// packets, random loss (loss 5%)".
pub fn describe(spec: &DirectionSpec) -> String {
    let mut parts = vec![];
    match (&spec.trace, spec.rate_bps) {
        (Some(t), _) => parts.push(format!(
            "rate from trace {}",
            t.path.as_deref().unwrap_or("(inline)")
        )),
        (None, Some(bps)) => parts.push(format!("rate {}", rate(bps))),
        (None, None) => parts.push("no rate limit".into()),
    }
    if spec.overhead_bytes > 0 {
        parts.push(format!("overhead {} bytes", spec.overhead_bytes));
    }
    parts.push(format!("delay {}", time(spec.delay_ns)));
    if spec.jitter_ns > 0 {
        parts.push(format!("jitter {}", time(spec.jitter_ns)));
    }
    let q = &spec.queue;
    let mut queue = format!("queue {} {}", discipline(q), limit(q));
    if let Some(t) = q.target_ns {
        queue += &format!(" target {}", time(t));
    }
    parts.push(queue);
    if let Some(l) = &spec.loss {
        parts.push(loss(l));
    }
    if let Some(c) = &spec.duplicate {
        parts.push(format!("duplicate {}", chance(c)));
    }
    if let Some(c) = &spec.corrupt {
        parts.push(format!("corrupt {}", chance(c)));
    }
    if let Some(r) = &spec.reorder {
        parts.push(format!("reorder {} gap {}", percent(r.p), r.gap));
    }
    if spec.ecn {
        parts.push("loss marks ECN".into());
    }
    parts.join(", ")
}

/// The comment on a frame the direction dropped, e.g. "netrig-link dropped this frame:
/// queue full (drop-tail, 100 packets)".
pub fn drop_comment(reason: DropReason, spec: &DirectionSpec) -> String {
    let q = &spec.queue;
    let why = match reason {
        DropReason::Down => "link down".to_string(),
        DropReason::Loss => match &spec.loss {
            Some(l) => loss(l),
            None => "loss".into(),
        },
        DropReason::Overflow => format!("queue full ({}, {})", discipline(q), limit(q)),
        DropReason::Aqm => match q.target_ns {
            Some(t) => format!("AQM drop ({}, target {})", discipline(q), time(t)),
            None => format!("AQM drop ({})", discipline(q)),
        },
        DropReason::TraceEnded => "delivery trace ended (play-once trace)".into(),
    };
    format!("{DROPPED}: {why}")
}

/// The comment on a frame the duplicate stage copied (the copy carries it).
pub fn duplicate_comment(spec: &DirectionSpec) -> String {
    match &spec.duplicate {
        Some(c) => format!("{DUPLICATED} (duplicate {})", chance(c)),
        None => DUPLICATED.into(),
    }
}

/// The comment on a frame the corrupt stage changed (one bit flipped past the Ethernet
/// header; the capture shows the changed bytes).
pub fn corrupt_comment(spec: &DirectionSpec) -> String {
    match &spec.corrupt {
        Some(c) => format!("{CORRUPTED}: one bit flipped (corrupt {})", chance(c)),
        None => format!("{CORRUPTED}: one bit flipped"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> DirectionSpec {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn shaping_reads_as_the_user_wrote_it() {
        let s = spec(
            r#"{"rate_bps": 100000000, "delay_ns": 10000000, "jitter_ns": 500000,
                "queue": {"limit_packets": 100}, "loss": {"random": {"p": 0.05}},
                "duplicate": {"p": 0.001}}"#,
        );
        assert_eq!(
            describe(&s),
            "rate 100 Mbit/s, delay 10 ms, jitter 500 µs, queue drop-tail 100 packets, \
             random loss (loss 5%), duplicate 0.1%"
        );
        assert_eq!(
            describe(&DirectionSpec::default()),
            "no rate limit, delay 0 ms, queue drop-tail 1000 packets"
        );
        let s = spec(r#"{"rate_bps": 1500000, "queue": {"discipline": "pie", "target_ns": 20000000}}"#);
        assert!(
            describe(&s).starts_with("rate 1.5 Mbit/s, delay 0 ms, queue pie "),
            "{}",
            describe(&s)
        );
        assert!(describe(&s).ends_with("target 20 ms"), "{}", describe(&s));
    }

    #[test]
    fn drop_comments_name_the_cause_and_its_parameters() {
        let s = spec(r#"{"queue": {"limit_packets": 100}, "loss": {"random": {"p": 0.02}}}"#);
        assert_eq!(
            drop_comment(DropReason::Overflow, &s),
            "netrig-link dropped this frame: queue full (drop-tail, 100 packets)"
        );
        assert_eq!(
            drop_comment(DropReason::Loss, &s),
            "netrig-link dropped this frame: random loss (loss 2%)"
        );
        assert_eq!(
            drop_comment(DropReason::Down, &s),
            "netrig-link dropped this frame: link down"
        );
        let pie = spec(r#"{"queue": {"discipline": "pie", "limit_bytes": 64000}}"#);
        assert_eq!(
            drop_comment(DropReason::Aqm, &pie),
            "netrig-link dropped this frame: AQM drop (pie)"
        );
        assert_eq!(
            drop_comment(DropReason::Overflow, &pie),
            "netrig-link dropped this frame: queue full (pie, 64000 bytes)"
        );
        let ge = spec(r#"{"loss": {"gemodel": {"p": 0.01, "r": 0.1, "loss_good": 0, "loss_bad": 1}}}"#);
        assert_eq!(
            drop_comment(DropReason::Loss, &ge),
            "netrig-link dropped this frame: Gilbert-Elliott loss (p 1%, r 10%, loss 0% good, 100% bad)"
        );
        let dup = spec(r#"{"duplicate": {"p": 0.01, "correlation": 0.25}, "corrupt": {"p": 0.001}}"#);
        assert_eq!(
            duplicate_comment(&dup),
            "netrig-link duplicated this frame (duplicate 1%, correlation 25%)"
        );
        assert_eq!(
            corrupt_comment(&dup),
            "netrig-link corrupted this frame: one bit flipped (corrupt 0.1%)"
        );
    }
}
