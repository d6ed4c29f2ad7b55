//! One direction of a link: the stages in order, and the counters an experimenter reads.
//!
//! The serializer's departure times are computed from virtual time: a packet starts
//! when the link is free (`free_at`) or when it arrived, whichever is later, however
//! late the caller wakes up; so the rate is exact over any span. Call [`arrive`] for
//! every packet at its arrival time, and [`poll`] at (or after) [`next_wakeup`].
//!
//! [`arrive`]: Direction::arrive
//! [`poll`]: Direction::poll
//! [`next_wakeup`]: Direction::next_wakeup

use serde::Serialize;

use crate::link::aqm::{DropCause, Drops, Qdisc};
use crate::link::delay::{Delay, DelayLine};
use crate::link::loss::{self, Chance, Loss};
use crate::link::packet::Packet;
use crate::link::rate::Rate;
use crate::link::rng::Rng;

/// Counters since the direction was made (monotonic; readers take differences).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Counters {
    pub arrived: u64,
    pub arrived_bytes: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub corrupted: u64,
    pub drops_overflow: u64,
    pub drops_aqm: u64,
    pub drops_down: u64,
    pub ecn_marks: u64,
    pub departed: u64,
    pub departed_bytes: u64,
    pub delivered: u64,
    pub delivered_bytes: u64,
}

/// Queueing delay (sojourn) of the packets dequeued since the last look.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SojournWindow {
    pub count: u64,
    pub sum_ns: u64,
    pub max_ns: u64,
}

impl SojournWindow {
    fn add(&mut self, ns: u64) {
        self.count += 1;
        self.sum_ns += ns;
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn mean_ns(&self) -> u64 {
        self.sum_ns.checked_div(self.count).unwrap_or(0)
    }
}

/// A per-packet record, kept when asked for (`record_events`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Event {
    pub id: u64,
    pub len: u32,
    pub arrived_ns: u64,
    /// `None` if the packet was dropped (see `dropped`).
    pub dequeued_ns: Option<u64>,
    pub departed_ns: Option<u64>,
    pub delivery_ns: Option<u64>,
    pub dropped: Option<&'static str>,
}

/// Why the link dropped a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DropReason {
    /// The link was down when the packet arrived.
    Down,
    /// The loss stage (random or Gilbert-Elliott).
    Loss,
    /// The queue was full.
    Overflow,
    /// The queue's AQM chose it.
    Aqm,
    /// A play-once delivery trace had ended.
    TraceEnded,
}

impl DropReason {
    /// The short name stats and per-packet events use.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Down => "down",
            DropReason::Loss => "loss",
            DropReason::Overflow => "overflow",
            DropReason::Aqm => "aqm",
            DropReason::TraceEnded => "trace-ended",
        }
    }
}

impl From<DropCause> for DropReason {
    fn from(c: DropCause) -> DropReason {
        match c {
            DropCause::Overflow => DropReason::Overflow,
            DropCause::Aqm => DropReason::Aqm,
        }
    }
}

/// A dropped packet, kept (bytes and all) when asked for (`keep_dropped`), so that a
/// capture can show it; `at_ns` is when it was dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct Dropped {
    pub at_ns: u64,
    pub reason: DropReason,
    pub pkt: Packet,
}

pub struct Direction {
    pub loss: Loss,
    pub duplicate: Chance,
    pub corrupt: Chance,
    /// Loss marks an ECN-capable packet Congestion Experienced instead of dropping it
    /// (netem's `ecn`); a packet that is not ECN-capable is dropped as before.
    pub loss_marks: bool,
    qdisc: Box<dyn Qdisc>,
    pub rate: Rate,
    pub delay: Delay,
    line: DelayLine,
    rng: Rng,
    free_at: u64,
    last_arrival: u64,
    clock: u64,
    next_id: u64,
    up: bool,
    scratch: Drops,
    pub counters: Counters,
    window: SojournWindow,
    pub record_events: bool,
    events: Vec<Event>,
    /// Keep every dropped packet until [`Direction::take_dropped`] (a capture wants them).
    keep_dropped: bool,
    dropped: Vec<Dropped>,
}

impl Direction {
    pub fn new(qdisc: Box<dyn Qdisc>, rate: Rate, delay: Delay, seed: u64) -> Direction {
        Direction {
            loss: Loss::None,
            duplicate: Chance::default(),
            corrupt: Chance::default(),
            loss_marks: false,
            qdisc,
            rate,
            delay,
            line: DelayLine::default(),
            rng: Rng::new(seed),
            free_at: 0,
            last_arrival: 0,
            clock: 0,
            next_id: 0,
            up: true,
            scratch: Drops::new(),
            counters: Counters::default(),
            window: SojournWindow::default(),
            record_events: false,
            events: vec![],
            keep_dropped: false,
            dropped: vec![],
        }
    }

    /// Counts the queue's drops (made at `now_ns`), records and keeps them.
    fn account_drops(&mut self, now_ns: u64) {
        if self.scratch.is_empty() {
            return; // the common case, once or twice a packet
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        for (p, cause) in scratch.drain(..) {
            match cause {
                DropCause::Overflow => self.counters.drops_overflow += 1,
                DropCause::Aqm => self.counters.drops_aqm += 1,
            }
            let arrived = p.enqueued_ns;
            self.drop_event(p, arrived, now_ns, cause.into());
        }
        self.scratch = scratch;
    }

    /// Records a drop (the event shows `arrived_ns`) and keeps the packet if asked.
    fn drop_event(&mut self, pkt: Packet, arrived_ns: u64, now_ns: u64, why: DropReason) {
        if self.record_events {
            self.events.push(Event {
                id: pkt.id,
                len: pkt.len,
                arrived_ns,
                dequeued_ns: None,
                departed_ns: None,
                delivery_ns: None,
                dropped: Some(why.name()),
            });
        }
        if self.keep_dropped {
            self.dropped.push(Dropped {
                at_ns: now_ns,
                reason: why,
                pkt,
            });
        }
    }

    /// A packet arrives at `now_ns`.
    pub fn arrive(&mut self, now_ns: u64, mut pkt: Packet) {
        self.service(now_ns);
        self.next_id += 1;
        pkt.id = self.next_id;
        self.counters.arrived += 1;
        self.counters.arrived_bytes += pkt.len as u64;
        self.last_arrival = self.last_arrival.max(now_ns);
        if !self.up {
            self.counters.drops_down += 1;
            self.drop_event(pkt, now_ns, now_ns, DropReason::Down);
            return;
        }
        if self.loss.lose(&mut self.rng) {
            if self.loss_marks && pkt.mark_ce() {
                self.counters.ecn_marks += 1;
            } else {
                self.counters.lost += 1;
                self.drop_event(pkt, now_ns, now_ns, DropReason::Loss);
                return;
            }
        }
        if self.duplicate.happens(&mut self.rng) {
            self.counters.duplicated += 1;
            let mut copy = pkt.clone();
            copy.duplicated = true;
            self.next_id += 1;
            copy.id = self.next_id;
            self.enqueue(now_ns, copy);
        }
        if self.corrupt.happens(&mut self.rng) {
            self.counters.corrupted += 1;
            loss::corrupt(&mut pkt, &mut self.rng);
            pkt.corrupted = true;
        }
        self.enqueue(now_ns, pkt);
        self.service(now_ns);
    }

    fn enqueue(&mut self, now_ns: u64, mut pkt: Packet) {
        pkt.enqueued_ns = now_ns; // also the arrival time a drop record shows
        let before = self.qdisc.stats().ecn_marks;
        self.qdisc.enqueue(now_ns, pkt, &mut self.rng, &mut self.scratch);
        self.counters.ecn_marks += self.qdisc.stats().ecn_marks - before;
        self.account_drops(now_ns);
    }

    /// Starts every transmission whose time has come, in virtual time.
    fn service(&mut self, now_ns: u64) {
        self.clock = self.clock.max(now_ns);
        while self.free_at <= now_ns && self.qdisc.len_packets() > 0 {
            let t = self.free_at.max(self.last_arrival);
            let before = self.qdisc.stats().ecn_marks;
            let next = self.qdisc.dequeue(t, &mut self.rng, &mut self.scratch);
            self.counters.ecn_marks += self.qdisc.stats().ecn_marks - before;
            self.account_drops(t);
            let Some(p) = next else { break };
            let sojourn = t.saturating_sub(p.enqueued_ns);
            self.window.add(sojourn);
            let departed = self.rate.departure(t, p.len, p.frames());
            if departed == u64::MAX {
                // A play-once trace has ended: the link carries nothing more.
                self.counters.drops_down += 1;
                self.drop_event(p, t, t, DropReason::TraceEnded);
                continue;
            }
            self.free_at = departed;
            self.counters.departed += 1;
            self.counters.departed_bytes += p.len as u64;
            let delivery = self.delay.delivery(departed, &mut self.rng);
            if self.record_events {
                self.events.push(Event {
                    id: p.id,
                    len: p.len,
                    arrived_ns: p.enqueued_ns,
                    dequeued_ns: Some(t),
                    departed_ns: Some(departed),
                    delivery_ns: Some(delivery),
                    dropped: None,
                });
            }
            self.line.push(delivery, p);
        }
    }

    /// Moves time to `now_ns` and hands over every packet due, with its due time.
    pub fn poll(&mut self, now_ns: u64, out: &mut Vec<(u64, Packet)>) {
        self.service(now_ns);
        while let Some((at, p)) = self.line.pop_due(now_ns) {
            self.counters.delivered += 1;
            self.counters.delivered_bytes += p.len as u64;
            out.push((at, p));
        }
    }

    /// When something next happens (a transmission starts or a delivery is due).
    pub fn next_wakeup(&self) -> Option<u64> {
        let tx = (self.qdisc.len_packets() > 0).then_some(self.free_at);
        match (tx, self.line.next_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The latest time this direction has seen (an arrival or a poll).
    pub fn clock_ns(&self) -> u64 {
        self.clock
    }

    pub fn queue_packets(&self) -> usize {
        self.qdisc.len_packets()
    }

    pub fn queue_bytes(&self) -> u64 {
        self.qdisc.len_bytes()
    }

    pub fn in_flight(&self) -> usize {
        self.line.len()
    }

    pub fn qdisc_name(&self) -> &'static str {
        self.qdisc.name()
    }

    /// The sojourn window since the last call, reset.
    pub fn take_sojourn(&mut self) -> SojournWindow {
        std::mem::take(&mut self.window)
    }

    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// Moves the packets dropped and kept since the last call into `out`, oldest first.
    pub fn take_dropped(&mut self, out: &mut Vec<Dropped>) {
        out.append(&mut self.dropped);
    }

    /// Whether dropped packets wait for [`take_dropped`](Self::take_dropped).
    pub fn has_dropped(&self) -> bool {
        !self.dropped.is_empty()
    }

    /// Keeps dropped packets from now on, or stops (forgetting those not yet taken).
    pub fn set_keep_dropped(&mut self, keep: bool) {
        self.keep_dropped = keep;
        if !keep {
            self.dropped.clear();
        }
    }

    /// Takes the link down (arrivals are dropped; what is queued or in flight stays)
    /// or up.
    pub fn set_up(&mut self, up: bool) {
        self.up = up;
    }

    pub fn is_up(&self) -> bool {
        self.up
    }

    /// Swaps the queue discipline, moving the queued packets into the new one.
    pub fn replace_qdisc(&mut self, now_ns: u64, mut qdisc: Box<dyn Qdisc>) {
        while let Some(p) = self.qdisc.dequeue(now_ns, &mut self.rng, &mut self.scratch) {
            qdisc.enqueue(now_ns, p, &mut self.rng, &mut self.scratch);
        }
        self.account_drops(now_ns);
        self.qdisc = qdisc;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::aqm::droptail::{Config as DropTailConfig, DropTail};
    use crate::link::aqm::Limit;
    use crate::link::delay::Distribution;

    fn link(bps: u64, delay_ns: u64, limit: u32) -> Direction {
        Direction::new(
            Box::new(DropTail::new(DropTailConfig {
                limit: Limit::packets(limit),
            })),
            Rate::fixed(bps, 0),
            Delay::new(delay_ns, 0, Distribution::Uniform, 0.0),
            1,
        )
    }

    /// Runs the direction to completion from a list of (arrival time, len).
    fn run(d: &mut Direction, arrivals: &[(u64, u32)]) -> Vec<(u64, Packet)> {
        let mut out = vec![];
        for &(t, len) in arrivals {
            while let Some(w) = d.next_wakeup() {
                if w > t {
                    break;
                }
                d.poll(w, &mut out);
            }
            d.arrive(t, Packet::sized(0, len, 0));
        }
        while let Some(w) = d.next_wakeup() {
            d.poll(w, &mut out);
        }
        out
    }

    #[test]
    fn serialization_then_propagation() {
        let mut d = link(10_000_000, 5_000_000, 1000);
        let arrivals: Vec<(u64, u32)> = (0..10_000).map(|_| (0, 1500)).collect();
        let out = run(&mut d, &arrivals);
        assert_eq!(out.len(), 1001, "the queue holds 1000 and one is on the wire");
        // First departs at 1.2 ms, delivered 5 ms later; then one every 1.2 ms.
        assert_eq!(out[0].0, 6_200_000);
        assert!(out.windows(2).all(|w| w[1].0 - w[0].0 == 1_200_000));
        assert_eq!(d.counters.drops_overflow, 10_000 - 1001);
    }

    #[test]
    fn a_drop_tail_queue_of_100_overflows_where_arithmetic_says() {
        // 20 Mbit/s arrivals into a 10 Mbit/s link: the queue grows by one packet every
        // 1.2 ms (arrivals every 0.6 ms, departures every 1.2 ms), so it is full (100)
        // after ~120 ms; from then on, every other arrival is dropped.
        let mut d = link(10_000_000, 0, 100);
        let arrivals: Vec<(u64, u32)> = (0..2000).map(|i| (i * 600_000, 1500)).collect();
        let out = run(&mut d, &arrivals);
        let c = d.counters;
        assert_eq!(c.arrived, 2000);
        assert_eq!(c.delivered as usize, out.len());
        assert_eq!(c.delivered + c.drops_overflow, 2000);
        // Arrivals over 1.2 s: about 1000 + 100 (queue) + 1 (on the wire) delivered.
        let delivered = c.delivered as i64;
        assert!((delivered - 1101).abs() <= 2, "{delivered}");
        let first_drop_ms = {
            let mut d = link(10_000_000, 0, 100);
            d.record_events = true;
            run(&mut d, &arrivals);
            let e = d.take_events();
            e.iter().find(|e| e.dropped.is_some()).unwrap().arrived_ns as f64 / 1e6
        };
        assert!((first_drop_ms - 121.2).abs() < 1.5, "{first_drop_ms}");
    }

    #[test]
    fn late_wakeups_do_not_change_the_rate() {
        let mut d = link(100_000_000, 0, 10_000);
        for _ in 0..5000 {
            d.arrive(0, Packet::sized(0, 1500, 0));
        }
        // Poll only every 7 ms (a sleepy event loop): departures keep their schedule.
        let mut out = vec![];
        let mut t = 0;
        while d.next_wakeup().is_some() {
            t += 7_000_000;
            d.poll(t, &mut out);
        }
        let last = out.last().unwrap().0;
        assert_eq!(last, 5000 * 120_000);
    }

    #[test]
    fn down_links_drop_arrivals_and_loss_is_counted() {
        let mut d = link(10_000_000, 0, 100);
        d.set_up(false);
        d.arrive(0, Packet::sized(0, 100, 0));
        d.set_up(true);
        d.loss = Loss::random(1.0, 0.0);
        d.arrive(1, Packet::sized(0, 100, 0));
        d.loss = Loss::None;
        d.duplicate = Chance::new(1.0, 0.0);
        d.arrive(2, Packet::sized(0, 100, 0));
        let c = d.counters;
        assert_eq!((c.drops_down, c.lost, c.duplicated), (1, 1, 1));
        assert_eq!(d.queue_packets() + d.in_flight(), 2);
    }

    #[test]
    fn loss_with_ecn_marks_capable_packets_and_drops_the_rest() {
        use crate::link::packet::Ecn;
        let mut d = link(10_000_000, 0, 100);
        d.loss = Loss::random(1.0, 0.0);
        d.loss_marks = true;
        let mut ect = Packet::sized(0, 100, 0);
        ect.ecn = Ecn::Ect0;
        d.arrive(0, ect);
        d.arrive(1, Packet::sized(0, 100, 0)); // not ECN-capable: lost
        let c = d.counters;
        assert_eq!((c.lost, c.ecn_marks), (1, 1));
        let mut out = vec![];
        d.poll(1_000_000_000, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].1.ecn, Ecn::Ce);
    }

    #[test]
    fn dropped_packets_are_kept_with_their_bytes_reason_and_time_when_asked() {
        let pkt = |b: u8| Packet {
            len: 100,
            data: vec![b; 100],
            ..Default::default()
        };
        let mut d = link(8_000_000, 0, 1);
        d.arrive(0, pkt(1)); // on the wire at once (the queue holds one more)
        assert!(!d.has_dropped(), "nothing kept unless asked");
        d.set_keep_dropped(true);
        d.arrive(10, pkt(2)); // queued
        d.arrive(20, pkt(3)); // queue full
        d.set_up(false);
        d.arrive(30, pkt(4));
        d.set_up(true);
        d.loss = Loss::random(1.0, 0.0);
        d.arrive(40, pkt(5));
        let mut out = vec![];
        d.take_dropped(&mut out);
        let got: Vec<(u64, DropReason, u8, usize)> = out
            .iter()
            .map(|x| (x.at_ns, x.reason, x.pkt.data[0], x.pkt.data.len()))
            .collect();
        assert_eq!(
            got,
            [
                (20, DropReason::Overflow, 3, 100),
                (30, DropReason::Down, 4, 100),
                (40, DropReason::Loss, 5, 100)
            ]
        );
        let c = d.counters;
        assert_eq!((c.drops_overflow, c.drops_down, c.lost), (1, 1, 1));
        assert!(!d.has_dropped());
        d.arrive(50, pkt(6));
        d.set_keep_dropped(false);
        assert!(!d.has_dropped(), "stopping forgets what was kept");
    }

    #[test]
    fn duplicates_and_corrupted_packets_are_marked() {
        let mut d = link(8_000_000, 0, 100);
        d.duplicate = Chance::new(1.0, 0.0);
        d.corrupt = Chance::new(1.0, 0.0);
        d.arrive(
            0,
            Packet {
                len: 60,
                data: vec![0; 60],
                ..Default::default()
            },
        );
        let mut out = vec![];
        d.poll(1_000_000_000, &mut out);
        let marks: Vec<(bool, bool)> = out.iter().map(|(_, p)| (p.duplicated, p.corrupted)).collect();
        // The copy is made before the original is corrupted, and goes first.
        assert_eq!(marks, [(true, false), (false, true)]);
        assert_ne!(out[1].1.data, vec![0; 60]);
    }

    #[test]
    fn a_superframe_is_delivered_when_its_segments_sent_apart_would_be() {
        // Ethernet's 20 bytes of overhead at 100 Mbit/s, 3 ms of delay: 8 segments of
        // 1514 bytes as one superframe, then as 8 frames, each at time 0.
        let direction = || {
            Direction::new(
                Box::new(DropTail::new(DropTailConfig {
                    limit: Limit::packets(100),
                })),
                Rate::fixed(100_000_000, 20),
                Delay::new(3_000_000, 0, Distribution::Uniform, 0.0),
                1,
            )
        };
        let drain = |d: &mut Direction| {
            let mut out = vec![];
            while let Some(w) = d.next_wakeup() {
                d.poll(w, &mut out);
            }
            out
        };
        let mut whole = direction();
        let mut superframe = Packet::sized(0, 8 * 1514, 0);
        superframe.segments = 8;
        whole.arrive(0, superframe);
        let whole = drain(&mut whole);
        let mut apart = direction();
        for _ in 0..8 {
            apart.arrive(0, Packet::sized(0, 1514, 0));
        }
        let apart = drain(&mut apart);
        assert_eq!(whole.len(), 1);
        assert_eq!(whole[0].0, apart.last().unwrap().0);
        assert_eq!(whole[0].0, 3_000_000 + 8 * (1514 + 20) * 80);
    }

    #[test]
    fn sojourn_window_measures_queueing_delay() {
        let mut d = link(10_000_000, 0, 1000);
        let arrivals: Vec<(u64, u32)> = (0..11).map(|_| (0, 1500)).collect();
        run(&mut d, &arrivals);
        let w = d.take_sojourn();
        // The k-th packet waits k * 1.2 ms (k = 0..10): mean 6 ms, max 12 ms.
        assert_eq!((w.count, w.mean_ns(), w.max_ns), (11, 6_000_000, 12_000_000));
        assert_eq!(d.take_sojourn().count, 0);
    }
}
