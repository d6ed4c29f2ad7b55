//! FQ-CoDel, Flow Queue CoDel (RFC 8290), as Linux's `sch_fq_codel` runs it.
//!
//! Arrivals go to one of `flows` queues by flow (here `pkt.flow % flows`; §4.1). The
//! queues share the link by deficit round robin in bytes (§4.2): a queue that becomes
//! active joins the new-flows list with one `quantum` of credit, and new flows are served
//! before old ones, which gives sparse flows (DNS, ACKs, voice) almost no queueing delay.
//! A queue that has spent its credit gets another quantum and moves to the end of the
//! old-flows list. A queue found empty on the new list moves to the end of the old list
//! if that is not empty (so a flow cannot keep its priority by emptying and refilling,
//! nor starve the old flows); one found empty on the old list leaves the lists. Each
//! queue runs its own CoDel ([`CodelState`]) with shared parameters (§5.2; ECN on by
//! default, as in Linux).
//!
//! When the discipline is over its limit, the arriving packet is queued anyway and the
//! queue holding the most bytes loses packets from its head (§4.1). Linux's
//! `fq_codel_drop` does this in a batch: it drops until at least half of that queue's
//! bytes are gone, at most 64 packets, and adds the number dropped to the queue's CoDel
//! count so that CoDel pushes back harder too. These drops are [`DropCause::Overflow`]
//! even when the arriving packet survives; CoDel's are [`DropCause::Aqm`].
//!
//! Where a simulation has to choose:
//! - CoDel's one-MTU rule looks at the whole discipline's backlog, as in Linux.
//! - Linux charges `memory_limit` by `skb->truesize`; a simulated packet has no buffer,
//!   so it is charged its length and `memory_limit` acts as a second byte limit.
//! - Linux drops one batch per arrival, which always clears its packet limit. A byte
//!   limit can need more, so batches repeat until the discipline is within its limits.
//! - Hash perturbation and external classifiers are not modelled.

use std::collections::VecDeque;

use super::codel::{CodelQueue, CodelState, Params, MTU_BYTES};
use super::{DropCause, Drops, Limit, Qdisc, QueueStats};
use crate::link::packet::Packet;
use crate::link::rng::Rng;

/// Most packets one overflow drops from the fattest queue (Linux `drop_batch_size`).
const DROP_BATCH: u32 = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Number of queues (RFC 8290 §5.2.5).
    pub flows: u32,
    /// Bytes of credit a queue gets per round (§5.2.4).
    pub quantum: u32,
    pub target_ns: u64,
    pub interval_ns: u64,
    /// The whole discipline's capacity (§5.2.3).
    pub limit: Limit,
    /// Bytes the queued packets may use (Linux `memory_limit`).
    pub memory_limit: u64,
    /// Mark ECN-capable packets instead of dropping them (§5.2.6).
    pub ecn: bool,
    /// Mark every ECN-capable packet whose sojourn time exceeds this (§5.2.7).
    pub ce_threshold_ns: Option<u64>,
}

impl Default for Config {
    /// Linux `sch_fq_codel`: 1024 flows, quantum one Ethernet MTU (1514), target 5 ms,
    /// interval 100 ms, 10240 packets, 32 MiB, ECN on.
    fn default() -> Self {
        Config {
            flows: 1024,
            quantum: MTU_BYTES as u32,
            target_ns: 5_000_000,
            interval_ns: 100_000_000,
            limit: Limit::packets(10240),
            memory_limit: 32 << 20,
            ecn: true,
            ce_threshold_ns: None,
        }
    }
}

/// One queue with its scheduling and CoDel state.
#[derive(Debug, Default)]
struct Flow {
    q: VecDeque<Packet>,
    bytes: u64,
    /// Bytes it may still send this round.
    deficit: i64,
    /// Whether it is on the new or the old list.
    listed: bool,
    codel: CodelState,
}

/// Packets and bytes queued in the whole discipline.
#[derive(Debug, Default)]
struct Backlog {
    packets: usize,
    bytes: u64,
}

/// One flow's queue as its CoDel sees it: taking a packet also updates the discipline's
/// backlog, which is what the one-MTU rule looks at.
struct FlowQueue<'a> {
    q: &'a mut VecDeque<Packet>,
    bytes: &'a mut u64,
    total: &'a mut Backlog,
}

impl CodelQueue for FlowQueue<'_> {
    fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        *self.bytes -= u64::from(p.len);
        self.total.packets -= 1;
        self.total.bytes -= u64::from(p.len);
        Some(p)
    }

    fn backlog_bytes(&self) -> u64 {
        self.total.bytes
    }
}

#[derive(Debug)]
pub struct FqCodel {
    params: Params,
    quantum: i64,
    limit: Limit,
    memory_limit: u64,
    flows: Vec<Flow>,
    /// Indices into `flows`, served first to last.
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    total: Backlog,
    stats: QueueStats,
}

impl FqCodel {
    /// # Panics
    ///
    /// If `flows` is not in 1..=65536 or `quantum` is 0. The configuration schema
    /// rejects these; Linux does too (and raises a quantum below 256 to 256).
    pub fn new(cfg: Config) -> FqCodel {
        let valid = (1..=65536).contains(&cfg.flows) && cfg.quantum > 0;
        assert!(valid, "fq_codel needs 1..=65536 flows and a quantum above 0");
        FqCodel {
            params: Params {
                target_ns: cfg.target_ns,
                interval_ns: cfg.interval_ns,
                mtu_bytes: MTU_BYTES,
                ecn: cfg.ecn,
                ce_threshold_ns: cfg.ce_threshold_ns,
            },
            quantum: i64::from(cfg.quantum),
            limit: cfg.limit,
            memory_limit: cfg.memory_limit,
            flows: (0..cfg.flows).map(|_| Flow::default()).collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            total: Backlog::default(),
            stats: QueueStats::default(),
        }
    }

    fn over_limit(&self) -> bool {
        self.limit
            .packets
            .is_some_and(|p| self.total.packets > p as usize)
            || self.limit.bytes.is_some_and(|b| self.total.bytes > b)
            || self.total.bytes > self.memory_limit
    }

    /// The non-empty queue holding the most bytes, the first of equals (as Linux scans).
    fn fattest(&self) -> Option<usize> {
        let mut fattest: Option<usize> = None;
        for (i, f) in self.flows.iter().enumerate() {
            if !f.q.is_empty() && fattest.is_none_or(|j| f.bytes > self.flows[j].bytes) {
                fattest = Some(i);
            }
        }
        fattest
    }

    /// Linux `fq_codel_drop`: drops from the head of the fattest queue until at least
    /// half its bytes are gone or [`DROP_BATCH`] packets have been dropped, and counts
    /// them towards its CoDel drop rate. False if there was nothing to drop.
    fn drop_from_fattest(&mut self, drops: &mut Drops) -> bool {
        let Some(i) = self.fattest() else { return false };
        let flow = &mut self.flows[i];
        let threshold = flow.bytes / 2;
        let (mut n, mut bytes) = (0, 0);
        while let Some(p) = flow.q.pop_front() {
            n += 1;
            bytes += u64::from(p.len);
            drops.push((p, DropCause::Overflow));
            if n >= DROP_BATCH || bytes >= threshold {
                break;
            }
        }
        flow.bytes -= bytes;
        flow.codel.add_to_count(n);
        self.total.packets -= n as usize;
        self.total.bytes -= bytes;
        self.stats.drops_overflow += u64::from(n);
        true
    }

    fn list(&mut self, new: bool) -> &mut VecDeque<usize> {
        if new {
            &mut self.new_flows
        } else {
            &mut self.old_flows
        }
    }
}

impl Qdisc for FqCodel {
    fn enqueue(&mut self, now_ns: u64, mut pkt: Packet, _rng: &mut Rng, drops: &mut Drops) {
        let i = (pkt.flow % self.flows.len() as u64) as usize;
        let len = u64::from(pkt.len);
        pkt.enqueued_ns = now_ns;
        let flow = &mut self.flows[i];
        flow.q.push_back(pkt);
        flow.bytes += len;
        if !flow.listed {
            flow.listed = true;
            flow.deficit = self.quantum;
            self.new_flows.push_back(i);
        }
        self.total.packets += 1;
        self.total.bytes += len;
        self.stats.enqueued += 1;
        while self.over_limit() && self.drop_from_fattest(drops) {}
    }

    fn dequeue(&mut self, now_ns: u64, _rng: &mut Rng, drops: &mut Drops) -> Option<Packet> {
        loop {
            let from_new = !self.new_flows.is_empty();
            let i = *self.list(from_new).front()?;
            let flow = &mut self.flows[i];
            if flow.deficit <= 0 {
                // Spent its credit for this round: another quantum, at the back of the old list.
                flow.deficit += self.quantum;
                self.list(from_new).pop_front();
                self.old_flows.push_back(i);
                continue;
            }
            let mut q = FlowQueue {
                q: &mut flow.q,
                bytes: &mut flow.bytes,
                total: &mut self.total,
            };
            if let Some(p) = flow
                .codel
                .dequeue(now_ns, &self.params, &mut q, &mut self.stats, drops)
            {
                flow.deficit -= i64::from(p.len);
                self.stats.dequeued += 1;
                self.stats.dequeued_bytes += u64::from(p.len);
                return Some(p);
            }
            // Empty (perhaps CoDel dropped what was left). A new flow passes through the
            // old list before it can be new again; an old one leaves the lists.
            self.list(from_new).pop_front();
            if from_new && !self.old_flows.is_empty() {
                self.old_flows.push_back(i);
            } else {
                self.flows[i].listed = false;
            }
        }
    }

    fn len_packets(&self) -> usize {
        self.total.packets
    }

    fn len_bytes(&self) -> u64 {
        self.total.bytes
    }

    fn stats(&self) -> QueueStats {
        self.stats
    }

    fn name(&self) -> &'static str {
        "fq_codel"
    }
}

#[cfg(test)]
mod tests {
    use super::super::codel::sim::{quantile, run, Run, Source};
    use super::*;

    const MS: u64 = 1_000_000;
    /// 10 Mbit/s: a 1500-byte packet takes 1.2 ms.
    const NS_PER_BYTE_10M: u64 = 800;

    /// Runs `sources` through a default FQ-CoDel onto a link of `ns_per_byte` for 10 s,
    /// and checks that every packet that came in was sent, dropped, or is still queued.
    fn run_10s(sources: &[Source], ns_per_byte: u64) -> Run {
        let mut q = FqCodel::new(Config::default());
        let r = run(&mut q, sources, ns_per_byte, 10_000 * MS);
        let s = q.stats();
        assert_eq!(
            s.enqueued,
            s.dequeued + s.drops_overflow + s.drops_aqm + q.len_packets() as u64
        );
        assert_eq!(
            (s.dequeued, s.drops_overflow + s.drops_aqm),
            (r.sent.len() as u64, r.drops.len() as u64)
        );
        r
    }

    fn bytes_sent(r: &Run, flow: u64) -> f64 {
        let sent = r.sent.iter().filter(|(_, p)| p.flow == flow);
        sent.map(|(_, p)| f64::from(p.len)).sum()
    }

    /// `n` packets of `len` bytes on `flow`, all at time 0, with ids `flow * 1000 + i`.
    fn fill(q: &mut FqCodel, flow: u64, n: u64, len: u32, drops: &mut Drops) {
        let mut rng = Rng::new(1);
        for id in 0..n {
            q.enqueue(0, Packet::sized(flow * 1000 + id, len, flow), &mut rng, drops);
        }
    }

    fn limited(limit: Limit) -> FqCodel {
        FqCodel::new(Config {
            limit,
            ..Config::default()
        })
    }

    #[test]
    fn a_sparse_flow_skips_the_bulk_queue() {
        // 100 Mbit/s (a 1500 B packet takes 120 us). A bulk flow offers 1500 B every
        // 100 us, 20% more than the link carries, so its queue never empties; a sparse
        // flow sends 100 B every 20 ms.
        let bulk = Source::new(1, 1500, 100_000);
        let sparse = Source::new(2, 100, 20 * MS).starting_at(333_333);
        let r = run_10s(&[bulk, sparse], 80);

        // Each sparse packet finds its queue empty and joins the new list, so it waits at
        // most for the bulk packet on the wire: 120 us. The bulk flow's packets wait behind
        // its own standing queue (an unresponsive 20% overload, which CoDel takes seconds
        // to pull down at this rate).
        let (sparse_s, bulk_s) = (r.sojourns(2, 0), r.sojourns(1, 1_000 * MS));
        let (sparse_max, bulk_median) = (*sparse_s.last().unwrap(), quantile(&bulk_s, 0.5));
        assert_eq!(sparse_s.len(), 500);
        assert!(
            sparse_max <= 120_000 && quantile(&sparse_s, 0.99) < MS,
            "sparse max {sparse_max}"
        );
        assert!(bulk_median > 5 * MS, "bulk median {bulk_median}");
        assert!(r.drops.iter().all(|(_, p, _)| p.flow == 1));
    }

    #[test]
    fn overloading_flows_get_equal_service() {
        // 10 Mbit/s; each flow's fair share is 1500 B every 2.4 ms. Both offer more, once
        // equally and once 2:1; either way each gets half the link.
        for (period_a, period_b) in [(1_500_000, 1_500_000), (MS, 2 * MS)] {
            let pair = [Source::new(1, 1500, period_a), Source::new(2, 1500, period_b)];
            let r = run_10s(&pair, NS_PER_BYTE_10M);
            let (a, b) = (bytes_sent(&r, 1), bytes_sent(&r, 2));
            assert!((a - b).abs() / (a + b) < 0.01, "{a} vs {b}");
            assert!(a + b > 0.99 * 10_000.0 * MS as f64 / NS_PER_BYTE_10M as f64);
        }
    }

    #[test]
    fn the_quantum_shares_bytes_not_packets() {
        // 10 Mbit/s; 1500 B packets against 300 B packets, both offering 1.5 MB/s against
        // a fair share of 0.625 MB/s. DRR in bytes gives each the same bytes, so the
        // small-packet flow sends five times the packets.
        let r = run_10s(
            &[Source::new(1, 1500, MS), Source::new(2, 300, 200_000)],
            NS_PER_BYTE_10M,
        );
        let (big, small) = (bytes_sent(&r, 1), bytes_sent(&r, 2));
        assert!((big - small).abs() / (big + small) < 0.02, "{big} vs {small}");
        let packets = |flow| r.sent.iter().filter(|(_, p)| p.flow == flow).count() as f64;
        let ratio = packets(2) / packets(1);
        assert!((4.8..5.2).contains(&ratio), "{ratio}");
    }

    #[test]
    fn overflow_drops_half_the_fattest_flow() {
        let mut q = limited(Limit::packets(100));
        let mut drops = Drops::new();
        fill(&mut q, 1, 70, 1500, &mut drops);
        fill(&mut q, 2, 30, 1500, &mut drops);
        assert!(drops.is_empty());
        // One sparse packet over the limit: flow 1 (105 000 B) loses 35 packets from
        // its head, half its bytes; the newcomer and flow 2 keep all theirs.
        fill(&mut q, 3, 1, 100, &mut drops);
        let dropped: Vec<_> = drops.iter().map(|(p, c)| (p.id, *c)).collect();
        let head_of_1: Vec<_> = (1000..1035).map(|id| (id, DropCause::Overflow)).collect();
        assert_eq!(dropped, head_of_1);
        let lens: Vec<usize> = q.flows[1..4].iter().map(|f| f.q.len()).collect();
        assert_eq!((q.len_packets(), lens), (66, vec![35, 30, 1]));
        assert_eq!((q.flows[1].codel.count(), q.stats().drops_overflow), (35, 35));

        // At most 64 in one batch, even when half the fattest flow is more.
        let (mut q, mut drops) = (limited(Limit::packets(200)), Drops::new());
        fill(&mut q, 1, 200, 1500, &mut drops);
        fill(&mut q, 3, 1, 100, &mut drops);
        assert_eq!((drops.len(), q.len_packets()), (64, 137));

        // The memory limit triggers the same drop.
        let mut q = FqCodel::new(Config {
            memory_limit: 15_000,
            ..Config::default()
        });
        let mut drops = Drops::new();
        fill(&mut q, 1, 10, 1500, &mut drops);
        fill(&mut q, 3, 1, 100, &mut drops);
        assert_eq!(drops.len(), 5);
        assert!(drops.iter().all(|(p, _)| p.flow == 1));
    }

    #[test]
    fn byte_limits_drop_until_within_the_limit() {
        let (mut q, mut drops) = (limited(Limit::bytes(10_000)), Drops::new());
        fill(&mut q, 1, 4, 1500, &mut drops);
        fill(&mut q, 2, 4, 1000, &mut drops);
        // A 5000 B arrival puts the queue 5000 B over: flow 1 loses half (3000 B), then
        // the newcomer is the fattest and goes.
        fill(&mut q, 3, 1, 5000, &mut drops);
        assert!(q.len_bytes() <= 10_000, "{}", q.len_bytes());
        let flows: Vec<u64> = drops.iter().map(|(p, _)| p.flow).collect();
        assert_eq!(flows, [1, 1, 3]);
    }

    #[test]
    fn emptied_flows_pass_through_the_old_list() {
        let mut q = FqCodel::new(Config::default());
        let (mut rng, mut drops) = (Rng::new(1), Drops::new());
        fill(&mut q, 1, 10, 1500, &mut drops);
        fill(&mut q, 2, 1, 100, &mut drops);
        assert_eq!(q.new_flows, [1, 2]);
        let mut next = |q: &mut FqCodel| q.dequeue(0, &mut rng, &mut Drops::new()).map(|p| p.flow);
        let lists = |q: &FqCodel| (Vec::from(q.new_flows.clone()), Vec::from(q.old_flows.clone()));
        // Flow 1 spends its 1514 B quantum on two packets, then goes to the old list.
        assert_eq!(
            [next(&mut q), next(&mut q), next(&mut q)],
            [Some(1), Some(1), Some(2)]
        );
        assert_eq!(lists(&q), (vec![2], vec![1]));

        // Flow 2 is now empty on the new list: it moves behind flow 1 on the old list.
        assert_eq!(next(&mut q), Some(1));
        assert_eq!(lists(&q), (vec![], vec![1, 2]));
        // A packet for it now does not make it new again.
        fill(&mut q, 2, 1, 100, &mut drops);
        assert_eq!(lists(&q), (vec![], vec![1, 2]));
        // Flow 1 has spent its credit again; flow 2 is next, and once empty on the old
        // list it leaves the lists.
        assert_eq!([next(&mut q), next(&mut q)], [Some(2), Some(1)]);
        assert_eq!(lists(&q), (vec![], vec![1]));
        assert!(!q.flows[2].listed);
    }
}
