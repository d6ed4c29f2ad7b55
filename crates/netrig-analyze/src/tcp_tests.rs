//! Each rule on simulated packets. The scenarios are those of the hand-built captures
//! checked against tshark 4.0.17 (tests/fixtures/pcap/build.py; frame numbers in the
//! comments are theirs).

use super::flag::*;
use super::*;

const C: [u8; 4] = [10, 0, 0, 1];
const S: [u8; 4] = [10, 0, 0, 2];
const MS: i128 = 1_000_000;

fn a(ip: [u8; 4]) -> Addr {
    let mut x = [0u8; 16];
    x[10] = 0xFF;
    x[11] = 0xFF;
    x[12..].copy_from_slice(&ip);
    x
}

/// A conversation between C:cport and S:80, frames numbered from 1.
struct Sim {
    an: Analyzer,
    frame: u64,
    cport: u16,
}

impl Sim {
    fn new(cport: u16) -> Sim {
        Sim {
            an: Analyzer::new(),
            frame: 0,
            cport,
        }
    }
    #[allow(clippy::too_many_arguments)]
    fn pkt(
        &mut self,
        t_ms: f64,
        from_client: bool,
        seq: u32,
        ack: u32,
        flags: u16,
        win: u16,
        len: u32,
    ) -> FrameResult {
        self.pkt_ws(t_ms, from_client, seq, ack, flags, win, len, None)
    }
    #[allow(clippy::too_many_arguments)]
    fn pkt_ws(
        &mut self,
        t_ms: f64,
        from_client: bool,
        seq: u32,
        ack: u32,
        flags: u16,
        win: u16,
        len: u32,
        wscale: Option<u8>,
    ) -> FrameResult {
        self.frame += 1;
        let (src, dst, sport, dport) = if from_client {
            (a(C), a(S), self.cport, 80)
        } else {
            (a(S), a(C), 80, self.cport)
        };
        let h = TcpHeader {
            src,
            dst,
            sport,
            dport,
            seq,
            ack,
            flags,
            win,
            hlen: 20,
            reported_len: 20 + len,
            wscale,
            shown: true,
            have_seglen: true,
        };
        self.an.packet(self.frame, (t_ms * MS as f64).round() as i128, &h)
    }
    fn c(&mut self, t: f64, seq: u32, ack: u32, flags: u16, len: u32) -> FrameResult {
        self.pkt(t, true, seq, ack, flags, 65535, len)
    }
    fn s(&mut self, t: f64, seq: u32, ack: u32, flags: u16, len: u32) -> FrameResult {
        self.pkt(t, false, seq, ack, flags, 65535, len)
    }
    /// A handshake at t0 with the given iRTT (ms); returns the next client and server seq.
    fn handshake(&mut self, t0: f64, irtt: f64) -> (u32, u32) {
        self.c(t0, 1000, 0, SYN, 0);
        self.s(t0 + irtt / 2.0, 5000, 1001, SYN | ACK, 0);
        self.c(t0 + irtt, 1001, 5001, ACK, 0);
        (1001, 5001)
    }
}

#[test]
fn a_resend_after_the_threshold_is_a_retransmission_and_rtt_is_from_the_oldest_segment() {
    let mut s = Sim::new(1000);
    let (c, sv) = s.handshake(1000.0, 20.0);
    s.c(1100.0, c, sv, ACK, 100); // 4
    s.c(1200.0, c + 100, sv, ACK, 100); // 5
    let r = s.c(1500.0, c + 100, sv, ACK, 100); // 6
    assert_eq!(r.flags, RETRANSMISSION);
    let r = s.s(1600.0, sv, c + 200, ACK, 0); // 7 acks 201: the original (5), not 6
    assert_eq!((r.acks_frame, r.ack_rtt_ns), (5, Some(400 * MS)));
    let r = s.c(1700.0, c, sv, ACK, 100); // 8: below the other side's ACK
    assert_eq!(r.flags, SPURIOUS_RETRANSMISSION);
    assert_eq!(flag_names(r.flags), ["retransmission", "spurious_retransmission"]);
    let r = s.pkt(1800.0, false, sv, c + 200, ACK, 0, 0); // 9
    assert_eq!(r.flags, ZERO_WINDOW);
    assert_eq!(s.an.streams[0].irtt_ns(), Some(20 * MS as i64));
}

#[test]
fn the_syn_ack_gets_an_rtt_but_a_cumulative_ack_past_every_segment_does_not() {
    let mut s = Sim::new(1000);
    s.c(1000.0, 1000, 0, SYN, 0);
    let r = s.s(1010.0, 5000, 1001, SYN | ACK, 0);
    assert_eq!((r.acks_frame, r.ack_rtt_ns), (1, Some(10 * MS)));
    s.c(1020.0, 1001, 5001, ACK, 0);
    s.c(1030.0, 1001, 5001, ACK, 100);
    let r = s.s(1040.0, 5001, 1501, ACK, 0); // beyond 1101: no segment ends there
    assert_eq!(r.ack_rtt_ns, None);
    assert_eq!(r.flags, ACK_LOST_PACKET);
}

#[test]
fn fast_retransmission_needs_two_dup_acks_within_20ms() {
    let mut s = Sim::new(1001);
    let (c, sv) = s.handshake(1000.0, 20.0);
    for i in 0..5 {
        s.c(1100.0 + i as f64, c + 100 * i, sv, ACK, 100);
    }
    s.s(1110.0, sv, c + 100, ACK, 0);
    for (i, n) in [(1111.0, 1), (1112.0, 2), (1113.0, 3)] {
        let r = s.s(i, sv, c + 100, ACK, 0);
        assert_eq!((r.flags, r.dupack_num), (DUPLICATE_ACK, n));
    }
    let r = s.c(1115.0, c + 100, sv, ACK, 100);
    assert_eq!(r.flags, FAST_RETRANSMISSION);
    assert_eq!(flag_names(r.flags), ["retransmission", "fast_retransmission"]);

    // Two dup ACKs, but the resend comes 28 ms after the last: a plain retransmission.
    let mut s = Sim::new(2003);
    for i in 0..3 {
        s.c(i as f64, 1 + 100 * i, 1, ACK, 100);
    }
    s.s(10.0, 1, 101, ACK, 0);
    s.s(11.0, 1, 101, ACK, 0);
    s.s(12.0, 1, 101, ACK, 0);
    assert_eq!(s.c(40.0, 101, 1, ACK, 100).flags, RETRANSMISSION);

    // One dup ACK only: not fast, and within 3 ms of the highest segment: out of order.
    let mut s = Sim::new(2005);
    for i in 0..3 {
        s.c(0.1 * i as f64, 1 + 100 * i, 1, ACK, 100);
    }
    s.s(0.4, 1, 101, ACK, 0);
    s.s(0.5, 1, 101, ACK, 0);
    assert_eq!(s.c(0.7, 101, 1, ACK, 100).flags, OUT_OF_ORDER);
}

#[test]
fn fast_retransmission_takes_precedence_over_out_of_order() {
    let mut s = Sim::new(2004);
    for i in 0..3 {
        s.c(0.1 * i as f64, 1 + 100 * i, 1, ACK, 100);
    }
    s.s(0.4, 1, 101, ACK, 0);
    s.s(0.5, 1, 101, ACK, 0);
    s.s(0.6, 1, 101, ACK, 0);
    assert_eq!(s.c(0.7, 101, 1, ACK, 100).flags, FAST_RETRANSMISSION);
}

#[test]
fn out_of_order_threshold_is_the_irtt_else_3ms() {
    // With a 20 ms iRTT: 1 ms late is out of order, 49 ms late a retransmission.
    for (late, want) in [(1.0, OUT_OF_ORDER), (49.0, RETRANSMISSION)] {
        let mut s = Sim::new(1002);
        let (c, sv) = s.handshake(2000.0, 20.0);
        s.c(2100.0, c, sv, ACK, 100);
        assert_eq!(s.c(2101.0, c + 200, sv, ACK, 100).flags, LOST_PACKET);
        assert_eq!(
            s.c(2101.0 + late, c + 100, sv, ACK, 100).flags,
            want,
            "late {late} ms"
        );
    }
    // No handshake: 3 ms.
    for (late, want) in [(2.0, OUT_OF_ORDER), (4.0, RETRANSMISSION)] {
        let mut s = Sim::new(1004);
        s.c(4100.0, 7000, 9000, ACK, 100);
        s.c(4101.0, 7200, 9000, ACK, 100);
        assert_eq!(
            s.c(4101.0 + late, 7100, 9000, ACK, 100).flags,
            want,
            "late {late} ms"
        );
    }
}

#[test]
fn spurious_wins_over_out_of_order() {
    let mut s = Sim::new(2000);
    s.c(0.0, 1, 1, ACK, 100);
    s.c(1.0, 101, 1, ACK, 100);
    s.s(1.5, 1, 201, ACK, 0);
    assert_eq!(s.c(2.0, 1, 1, ACK, 100).flags, SPURIOUS_RETRANSMISSION);
}

#[test]
fn an_exact_repeat_of_the_latest_segment_is_never_out_of_order() {
    let mut s = Sim::new(4000);
    s.c(0.0, 1000, 0, SYN, 0);
    assert_eq!(s.c(1000.0, 1000, 0, SYN, 0).flags, RETRANSMISSION); // same ISN: same stream
    s.s(1010.0, 5000, 1001, SYN | ACK, 0);
    s.c(1020.0, 1001, 5001, ACK, 0);
    s.c(1030.0, 1001, 5001, ACK, 10);
    assert_eq!(s.c(1030.5, 1001, 5001, ACK, 10).flags, RETRANSMISSION);
    assert_eq!(s.an.streams.len(), 1);
    // A FIN resent 1 ms later (< 3 ms) counts its +1: a retransmission, not out of order.
    let mut s = Sim::new(3000);
    s.c(0.0, 1, 1, FIN | ACK, 0);
    assert_eq!(s.c(1.0, 1, 1, FIN | ACK, 0).flags, RETRANSMISSION);
}

#[test]
fn keep_alive_suppresses_the_retransmission_family_and_is_acked() {
    let mut s = Sim::new(2001);
    s.c(0.0, 1, 1, ACK, 100);
    s.s(100.0, 1, 101, ACK, 0);
    assert_eq!(s.c(10_000.0, 100, 1, ACK, 1).flags, KEEP_ALIVE);
    assert_eq!(s.s(10_010.0, 1, 101, ACK, 0).flags, KEEP_ALIVE_ACK);
    assert_eq!(s.pkt(11_000.0, false, 1, 101, ACK, 30000, 0).flags, WINDOW_UPDATE);
    // A zero-window ACK is never a duplicate ACK, even repeated.
    assert_eq!(s.pkt(12_000.0, false, 1, 101, ACK, 0, 0).flags, ZERO_WINDOW);
    assert_eq!(s.pkt(12_100.0, false, 1, 101, ACK, 0, 0).flags, ZERO_WINDOW);
    assert_eq!(s.c(13_000.0, 101, 1, ACK, 1).flags, ZERO_WINDOW_PROBE);
    assert_eq!(
        s.pkt(13_010.0, false, 1, 101, ACK, 0, 0).flags,
        ZERO_WINDOW_PROBE_ACK | ZERO_WINDOW
    );
}

#[test]
fn an_ack_of_unseen_data_is_flagged_once() {
    let mut s = Sim::new(3001);
    s.c(0.0, 1, 1, ACK, 100);
    assert_eq!(s.s(100.0, 1, 500, ACK, 0).flags, ACK_LOST_PACKET);
    assert_eq!(s.s(200.0, 1, 500, ACK, 0).flags, DUPLICATE_ACK);
    assert_eq!(s.s(300.0, 1, 600, ACK, 0).flags, 0);
}

#[test]
fn window_full_needs_the_handshake_and_hits_the_edge() {
    let mut s = Sim::new(3002);
    s.c(0.0, 1000, 0, SYN, 0);
    s.pkt(10.0, false, 5000, 1001, SYN | ACK, 200, 0);
    s.c(20.0, 1001, 5001, ACK, 0);
    assert_eq!(s.c(30.0, 1001, 5001, ACK, 200).flags, WINDOW_FULL);
    // Scaling known (7 each way): the receiver's window 2 << 7 = 256 bytes.
    let mut s = Sim::new(3003);
    s.pkt_ws(0.0, true, 1000, 0, SYN, 65535, 0, Some(7));
    s.pkt_ws(10.0, false, 5000, 1001, SYN | ACK, 65535, 0, Some(7));
    s.c(20.0, 1001, 5001, ACK, 0);
    s.pkt(21.0, false, 5001, 1001, ACK, 2, 0);
    assert_eq!(s.c(30.0, 1001, 5001, ACK, 255).flags, 0);
    assert_eq!(s.c(31.0, 1256, 5001, ACK, 1).flags, WINDOW_FULL);
    // No handshake: scaling unknown, never window full.
    let mut s = Sim::new(3004);
    s.pkt(0.0, false, 5001, 1001, ACK, 2, 0);
    assert_eq!(s.c(1.0, 1001, 5001, ACK, 2).flags, 0);
}

#[test]
fn a_syn_with_a_new_isn_starts_a_new_stream() {
    let mut s = Sim::new(5000);
    s.handshake(0.0, 10.0);
    s.c(20.0, 1001, 5001, ACK | FIN, 0);
    let r = s.c(5000.0, 9000, 0, SYN, 0);
    assert_eq!((r.stream, r.flags), (1, REUSED_PORTS));
    let r = s.s(5010.0, 7000, 9001, SYN | ACK, 0);
    assert_eq!((r.stream, r.flags), (1, 0));
    assert_eq!(s.an.streams.len(), 2);
}

#[test]
fn a_syn_at_time_zero_sets_no_irtt() {
    let mut s = Sim::new(1000);
    s.handshake(0.0, 20.0);
    assert_eq!(s.an.streams[0].irtt_ns(), None);
    // ... so the 3 ms default applies: 5 ms late is a retransmission.
    s.c(100.0, 1001, 5001, ACK, 100);
    s.c(101.0, 1201, 5001, ACK, 100);
    assert_eq!(s.c(106.0, 1101, 5001, ACK, 100).flags, RETRANSMISSION);
    // The iRTT comes from the first ACK without SYN, from either side, data or not.
    let mut s = Sim::new(1001);
    s.c(50.0, 1000, 0, SYN, 0);
    s.s(60.0, 5000, 1001, SYN | ACK, 0);
    s.s(75.0, 5001, 1001, ACK, 10);
    assert_eq!(s.an.streams[0].irtt_ns(), Some(25 * MS as i64));
}

#[test]
fn nextseq_zero_means_unknown() {
    // The client's data ends exactly at 2^32: nextseq wraps to 0, "unknown" again, so a
    // gap after it is no lost segment.
    let mut s = Sim::new(6000);
    s.c(0.0, u32::MAX - 99, 1, ACK, 100);
    assert_eq!(s.c(1.0, 500, 1, ACK, 100).flags, 0);
}

#[test]
fn a_packet_stamped_in_the_past_wraps_the_delta() {
    // 1 ms "before" the highest segment: the unsigned delta is huge, not < 3 ms.
    let mut s = Sim::new(6001);
    s.c(10.0, 1, 1, ACK, 100);
    s.c(11.0, 201, 1, ACK, 100);
    assert_eq!(s.c(10.0, 101, 1, ACK, 100).flags, RETRANSMISSION);
}

#[test]
fn at_most_10000_unacked_segments_are_kept() {
    let mut s = Sim::new(6002);
    for i in 0..10_001u32 {
        s.c(i as f64 * 0.01, 1 + i * 10, 1, ACK, 10);
    }
    // The 10001st segment was not stored: acking exactly its end gives no RTT, while the
    // 10000th still gives one.
    let r = s.s(200.0, 1, 1 + 10_000 * 10, ACK, 0);
    assert_eq!(r.acks_frame, 10_000);
    let r = s.s(201.0, 1, 1 + 10_001 * 10, ACK, 0);
    assert_eq!(r.ack_rtt_ns, None);
}

#[test]
fn the_unacked_list_agrees_with_the_full_walk_when_out_of_order() {
    // Sorted and unsorted paths give the same answers as the plain walk.
    let mut q = Segments {
        q: VecDeque::new(),
        sorted: true,
    };
    for (i, (seq, next)) in [(100u32, 200u32), (200, 300), (300, 400), (150, 250), (200, 300)]
        .iter()
        .enumerate()
    {
        q.push(Unacked {
            frame: i as u64 + 1,
            seq: *seq,
            nextseq: *next,
            ts: i as i128,
        });
    }
    assert!(!q.sorted);
    assert_eq!(q.ack(250), Some((4, 3)));
    let left: Vec<_> = q.q.iter().map(|u| (u.frame, u.seq, u.nextseq)).collect();
    assert_eq!(left, [(2, 250, 300), (3, 300, 400), (5, 250, 300)]);
    assert_eq!(q.ack(300), Some((2, 1)));
    assert!(q.sorted);
    assert_eq!(q.ack(350), None);
    assert_eq!(q.q[0].seq, 350);
}

// The rules below were found on real captures (the corpus, tests/corpus/MANIFEST.toml)
// and checked against tshark 4.0.17 there.

#[test]
fn an_ack_of_unseen_data_moves_the_bar_up_to_what_was_sent() {
    let mut s = Sim::new(4001);
    let (c, sv) = s.handshake(0.0, 20.0);
    s.c(100.0, c, sv, ACK, 100);
    assert_eq!(s.c(110.0, c + 200, sv, ACK, 100).flags, LOST_PACKET);
    assert_eq!(s.s(120.0, sv, c + 300, ACK, 0).flags, ACK_LOST_PACKET);
    s.s(130.0, sv, c + 300, ACK, 100);
    s.c(140.0, c + 300, sv + 100, ACK, 0); // the client's ACK moves: its dup count is 0
    s.c(150.0, c + 300, sv + 100, ACK, 100);
    // max-seq-to-be-acked went up to 1301 at frame 6, then to 1401: nothing unseen.
    assert_eq!(s.s(160.0, sv + 100, c + 400, ACK, 0).flags, 0);
}

#[test]
fn an_ack_of_unseen_data_leaves_a_count_that_passes_for_two_dup_acks() {
    let mut s = Sim::new(4002);
    s.c(0.0, 1000, 0, SYN, 0);
    s.s(10.0, 5000, 1001, SYN | ACK, 0);
    s.c(12.0, 1001, 5001, ACK, 0);
    // Acks server data never seen: the server's dup-ACK counter becomes -1 (unsigned).
    assert_eq!(s.c(14.0, 1001, 5501, ACK, 100).flags, ACK_LOST_PACKET);
    // Within 20 ms of the server's last ACK (1001, at 10 ms), resent: "fast".
    assert_eq!(s.c(16.0, 1001, 5501, ACK, 100).flags, FAST_RETRANSMISSION);
}

#[test]
fn the_same_syn_again_puts_nextseq_back() {
    let mut s = Sim::new(4003);
    s.c(0.0, 1000, 0, SYN, 0);
    s.c(100.0, 5000, 0, RST, 0); // an RST whose SEQ moved nextseq to 5000
    assert_eq!(s.c(1000.0, 1000, 0, SYN, 0).flags, RETRANSMISSION);
    s.s(1010.0, 7000, 1001, SYN | ACK, 0);
    s.c(1020.0, 1001, 7001, ACK, 0);
    // Without the restore, 1001 < 5000 would make this a retransmission.
    assert_eq!(s.c(1030.0, 1001, 7001, ACK, 100).flags, 0);
}

fn header(seq: u32, ack: u32, flags: u16, hlen: u32, len: u32, shown: bool) -> TcpHeader {
    TcpHeader {
        src: a(C),
        dst: a(S),
        sport: 4004,
        dport: 80,
        seq,
        ack,
        flags,
        win: 100,
        hlen,
        reported_len: hlen + len,
        wscale: None,
        have_seglen: true,
        shown,
    }
}

#[test]
fn a_header_wireshark_cannot_finish_is_analysed_but_not_shown() {
    let mut an = Analyzer::new();
    an.packet(1, 0, &header(1000, 0, ACK, 20, 100, true));
    // A retransmission cut by the snap length inside its options: counted, not shown.
    let r = an.packet(2, 5 * MS, &header(1000, 0, ACK, 32, 100, false));
    assert_eq!(r.flags, 0);
    // ... but it was analysed: nextseq is still 1100, so this is the next segment.
    assert_eq!(
        an.packet(3, 10 * MS, &header(1100, 0, ACK, 20, 100, true)).flags,
        0
    );
    // A bogus data offset (12 bytes): its header bytes count as payload, unseen.
    let bogus = TcpHeader {
        reported_len: 120,
        ..header(1200, 0, ACK, 12, 0, true)
    };
    let r = an.packet(4, 20 * MS, &bogus);
    assert_eq!((r.flags, r.ack_rtt_ns), (0, None));
    assert_eq!(
        an.packet(5, 30 * MS, &header(1308, 0, ACK, 20, 10, true)).flags,
        0
    );
    assert_eq!(
        an.packet(6, 40 * MS, &header(1200, 0, ACK, 20, 10, true)).flags,
        RETRANSMISSION
    );
}

#[test]
fn time_is_exact_past_the_i64_nanosecond_range() {
    // tcpdump's smb_data_print-segv.pcapng stamps a frame in the year 4139: tshark's
    // ack_rtt there is 66,989,944,945.508677 s, beyond 2^63 ns.
    let mut an = Analyzer::new();
    an.packet(1, 1_480_520_108_641_033_000, &header(1000, 0, ACK, 20, 100, true));
    let later: i128 = 68_470_465_054_149_710_000;
    let r = an.packet(
        2,
        later,
        &TcpHeader {
            src: a(S),
            dst: a(C),
            sport: 80,
            dport: 4004,
            ..header(1, 1100, ACK, 20, 0, true)
        },
    );
    assert_eq!(r.ack_rtt_ns, Some(66_989_944_945_508_677_000));
}
