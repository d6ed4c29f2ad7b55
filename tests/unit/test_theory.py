"""netrig.theory: the formulas' arithmetic, max-min fair shares, and the 002 portfolio
topology's path figures (EXPERIMENTS.md) as analyse() and explain_text() give them."""

from __future__ import annotations

import math

import pytest
from netrig.theory import (
    ETH_WIRE,
    Flow,
    Leg,
    TheoryError,
    analyse,
    base_rtt,
    bdp,
    combined_loss,
    explain_text,
    framing,
    goodput,
    jain,
    mathis,
    max_min_fair,
    padhye,
    parse_flow,
    queue_delay,
    tcp_expected,
    udp_fragments,
    udp_loss,
    window_limit,
)
from netrig.topo.model import Topology
from netrig.topo.plan import Plan, make_plan

M = 1e6


# --- formulas -------------------------------------------------------------------------


def test_tcp_goodput_as_netrig_charges_and_on_real_ethernet():
    assert goodput(100 * M) == pytest.approx(100 * M * 1448 / 1514, rel=1e-15)
    assert goodput(100 * M, frame_overhead=ETH_WIRE) == pytest.approx(
        100 * M * 1448 / 1538, rel=1e-15)
    assert goodput(100 * M, frame_overhead=38) / M == pytest.approx(94.15, abs=0.01)
    assert goodput(30 * M) / M == pytest.approx(28.692, abs=0.001)
    assert goodput(100 * M, timestamps=False) == pytest.approx(100 * M * 1460 / 1514)
    assert goodput(100 * M, mtu=9000) == pytest.approx(100 * M * 8948 / 9014)


def test_udp_goodput_default_and_given_datagram():
    assert goodput(100 * M, "udp") == pytest.approx(100 * M * 1472 / 1514)
    assert goodput(100 * M, "udp", payload=1470) == pytest.approx(100 * M * 1470 / 1512)
    assert goodput(100 * M, "udp", payload=1470, frame_overhead=38) == pytest.approx(
        100 * M * 1470 / 1536)
    assert goodput(1 * M, "udp", payload=160) == pytest.approx(1 * M * 160 / 202)


def test_udp_fragmentation_pays_a_header_and_frame_per_fragment():
    assert udp_fragments(1472) == 1
    assert udp_fragments(1473) == 2  # 1481 bytes of UDP: 1480 + 1
    assert udp_fragments(2952) == 2 and udp_fragments(2953) == 3
    f = framing("udp", payload=3000)
    assert (f.packets, f.payload, f.wire) == (3, 3000, 3000 + 8 + 3 * 20 + 3 * 14)
    assert goodput(10 * M, "udp", payload=3000) == pytest.approx(10 * M * 3000 / 3110)


def test_framing_rejects_impossible_sizes():
    with pytest.raises(TheoryError):
        goodput(10 * M, mtu=40)
    with pytest.raises(TheoryError):
        goodput(10 * M, "tcp", payload=1449)
    with pytest.raises(TheoryError):
        goodput(0)
    with pytest.raises(TheoryError):
        framing("sctp")  # type: ignore[arg-type]


def test_base_rtt_is_propagation_plus_one_serialization_per_leg_each_way():
    legs = [Leg(None, 0.0), Leg(40 * M, 0.010), Leg(30 * M, 0.020)]
    ser = 1514 * 8 / 40e6 + 1514 * 8 / 30e6
    assert base_rtt(legs) == pytest.approx(0.060 + 2 * ser, rel=1e-12)
    ping = 98 * 8 / 40e6 + 98 * 8 / 30e6
    assert base_rtt(legs, frame_bytes=98) == pytest.approx(0.060 + 2 * ping, rel=1e-12)
    ack = 66 * 8 / 40e6 + 66 * 8 / 30e6
    assert base_rtt(legs, frame_bytes=1514, back_frame_bytes=66) == pytest.approx(0.060 + ser + ack)
    # An asymmetric return, and a per-packet overhead charged on top of the frame.
    assert base_rtt([Leg(10 * M, 0.005, 24)], [Leg(None, 0.015)], 1000) == pytest.approx(
        0.020 + 1024 * 8 / 10e6)


def test_bdp_window_queue_and_udp_loss():
    assert bdp(30 * M, 0.060) == pytest.approx(225_000)
    assert window_limit(64_000, 0.040) == pytest.approx(12.8 * M)
    assert window_limit(125_000, 0.040) == pytest.approx(25 * M)
    assert queue_delay(30 * M, packets=100) == pytest.approx(100 * 1514 * 8 / 30e6)
    assert queue_delay(10 * M, nbytes=125_000) == pytest.approx(0.1)
    assert queue_delay(10 * M, packets=100, nbytes=15_140) == pytest.approx(15_140 * 8 / 10e6)
    assert queue_delay(10 * M) is None
    assert udp_loss(40 * M, 30 * M) == pytest.approx(0.25)
    assert udp_loss(20 * M, 30 * M) == 0.0
    assert combined_loss([0.01, 0.02]) == pytest.approx(1 - 0.99 * 0.98)
    assert combined_loss([]) == 0.0


def test_padhye_is_mathis_at_low_loss_and_far_below_it_at_high_loss():
    # T0 = RTT + 200 ms; p = 0.01%: time-outs cost 0.2 % of Mathis's rate
    assert padhye(1448, 0.040, 1e-4) / mathis(1448, 0.040, 1e-4) == pytest.approx(0.998, abs=0.002)
    # p = 10 %: 1 / (0.04·√(2·0.1/3) + 0.24·min(1, 3·√(0.3/8))·0.1·1.32) segments/s
    p = 0.1
    by_hand = 1448 * 8 / (0.040 * math.sqrt(2 * p / 3) + 0.24 * 3 * math.sqrt(3 * p / 8) * p * 1.32)
    assert padhye(1448, 0.040, p) == pytest.approx(by_hand)
    assert padhye(1448, 0.040, p) < 0.45 * mathis(1448, 0.040, p)
    assert padhye(1448, 0.040, 0.0) == math.inf
    assert padhye(1448, 0.040, p, rto_s=1.0) < padhye(1448, 0.040, p)


def test_mathis():
    expected = 1448 * 8 / 0.040 * math.sqrt(1.5) / math.sqrt(0.01)
    assert mathis(1448, 0.040, 0.01) == pytest.approx(expected, rel=1e-15)
    assert mathis(1448, 0.040, 0.01) / M == pytest.approx(3.547, abs=0.001)
    assert mathis(1448, 0.040, 0.01, c=math.sqrt(0.75)) == pytest.approx(expected / math.sqrt(2))
    assert mathis(1448, 0.040, 0.0) == math.inf
    with pytest.raises(TheoryError):
        mathis(1448, 0.040, 1.5)


def test_tcp_expected_names_the_binding_limit():
    link = goodput(100 * M)
    e = tcp_expected(link, 0.040, window_bytes=64_000)
    assert (e.value, e.limit) == (pytest.approx(12.8 * M), "window")
    assert set(e.limits) == {"link", "window"} and "window" in e.detail
    e = tcp_expected(link, 0.000637, window_bytes=1_000_000)
    assert (e.value, e.limit) == (link, "link")
    e = tcp_expected(link, 0.040, loss=0.01)
    assert (e.value, e.limit) == (pytest.approx(padhye(1448, 0.040, 0.01)), "loss")
    e = tcp_expected(None, 0.040)
    assert (e.value, e.limit) == (math.inf, "none")


# --- fairness ---------------------------------------------------------------------------


def _rates(flows, capacity):
    return {n: s.rate for n, s in max_min_fair(flows, capacity).items()}


def test_max_min_on_the_002_links():
    cap = {"L1": 40 * M, "L2": 30 * M, "L3": 20 * M}
    a, b, c = Flow("h1-h4", ("L1", "L2")), Flow("h2-h5", ("L1", "L2")), Flow("h3-h6", ("L1", "L2"))
    assert _rates([a, b], cap) == {"h1-h4": 15 * M, "h2-h5": 15 * M}
    assert _rates([a, b, c], cap) == {"h1-h4": 10 * M, "h2-h5": 10 * M, "h3-h6": 10 * M}
    assert _rates([a, Flow("h7-h9", ("L2", "L3"))], cap) == {"h1-h4": 15 * M, "h7-h9": 15 * M}
    assert _rates([a, Flow("h8-h9", ("L3",))], cap) == {"h1-h4": 30 * M, "h8-h9": 20 * M}
    got = max_min_fair([a, Flow("h8-h9", ("L3",))], cap)
    assert (got["h1-h4"].limit, got["h8-h9"].limit) == ("L2", "L3")
    # -P 2 beside two other flows: four connections over L2, 7.5 each; h1 gets 15 of 30.
    p2 = [Flow("h1-h4.0", ("L1", "L2")), Flow("h1-h4.1", ("L1", "L2")), b, c]
    assert set(_rates(p2, cap).values()) == {7.5 * M}


def test_max_min_with_demands_and_unequal_bottlenecks():
    cap = {"wire": 100 * M}
    udp = Flow("udp", ("wire",), demand=5 * M)
    got = _rates([udp, Flow("t1", ("wire",)), Flow("t2", ("wire",))], cap)
    assert got == {"udp": 5 * M, "t1": 47.5 * M, "t2": 47.5 * M}
    assert max_min_fair([udp], cap)["udp"].limit == "demand"
    # A demand above the fair share is cut to the share.
    got = _rates([Flow("u", ("wire",), 80 * M), Flow("t", ("wire",))], cap)
    assert got == {"u": 50 * M, "t": 50 * M}
    # The classic: A over links 1 and 2, B over 1, C over 2; link 1 = 10, link 2 = 4.
    flows = [Flow("A", ("1", "2")), Flow("B", ("1",)), Flow("C", ("2",))]
    got = _rates(flows, {"1": 10.0, "2": 4.0})
    assert got == {"A": 2.0, "B": 8.0, "C": 2.0}
    # A flow over no limited link is unlimited, unless it has a demand.
    assert _rates([Flow("x", ("veth",)), Flow("y", (), 3.0)], cap) == {"x": math.inf, "y": 3.0}


def test_max_min_rejects_bad_input():
    with pytest.raises(TheoryError):
        max_min_fair([Flow("a", ()), Flow("a", ())], {})
    with pytest.raises(TheoryError):
        max_min_fair([Flow("a", ("l",))], {"l": 0.0})


def test_jain():
    assert jain([15, 15]) == 1.0
    assert jain([30, 20]) == pytest.approx(2500 / (2 * 1300))
    assert jain([1, 0, 0, 0]) == pytest.approx(0.25)
    assert jain([0, 0]) == 1.0
    with pytest.raises(TheoryError):
        jain([])


# --- the 002 portfolio topology ----------------------------------------------------------


@pytest.fixture(scope="module")
def portfolio() -> Plan:
    t = Topology("portfolio")
    for n in ("h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9"):
        t.host(n)
    t.switch("s1")
    t.switch("s2")
    for n in ("r1", "r2", "r3", "r4"):
        t.router(n)
    for h in ("h1", "h2", "h3"):
        t.link(h, "s1")
    t.link("s1", "r1")
    t.link("r1", "r2", name="L1", rate="40Mbit", delay="10ms", queue=67)
    t.link("r2", "h7")
    t.link("r2", "r3", name="L2", rate="30Mbit", delay="20ms", queue=100)
    for h in ("h4", "h5", "h6"):
        t.link(h, "s2")
    t.link("s2", "r3")
    t.link("r3", "h8")
    t.link("r3", "r4", name="L3", rate="20Mbit", delay="10ms", queue=33)
    t.link("r4", "h9")
    return make_plan(t)


PING = 98 * 8  # bits of a default ping frame: 56 data + 8 ICMP + 20 IP + 14 Ethernet


def test_portfolio_paths_bottlenecks_and_rtts(portfolio):
    r = analyse(portfolio, "h1", "h9")
    assert [h.link for h in r.hops] == ["h1-s1", "s1-r1", "L1", "L2", "L3", "r4-h9"]
    assert r.bottleneck is not None and (r.bottleneck.link, r.bottleneck.rate_bps) == ("L3", 20 * M)
    assert r.propagation_s == pytest.approx(0.080)
    ping = PING / 40e6 + PING / 30e6 + PING / 20e6
    assert r.base_rtt_s == pytest.approx(0.080 + 2 * ping, rel=1e-12)
    assert 0.080 < r.base_rtt_s < 0.081
    data = 1514 * 8 * (1 / 40e6 + 1 / 30e6 + 1 / 20e6) + 66 * 8 * (1 / 40e6 + 1 / 30e6 + 1 / 20e6)
    assert r.data_rtt_s == pytest.approx(0.080 + data, rel=1e-12)
    assert r.tcp_goodput_bps == pytest.approx(20 * M * 1448 / 1514)
    assert r.queue_delay_s == pytest.approx(33 * 1514 * 8 / 20e6)

    r = analyse(portfolio, "h1", "h4")
    assert r.bottleneck is not None and (r.bottleneck.link, r.bottleneck.rate_bps) == ("L2", 30 * M)
    assert r.base_rtt_s == pytest.approx(0.060 + 2 * (PING / 40e6 + PING / 30e6), rel=1e-12)
    assert 0.060 < r.base_rtt_s < 0.061
    assert r.bdp_bytes == pytest.approx(30 * M * r.data_rtt_s / 8)
    assert r.tcp_expected.limit == "link" and r.window_bps is None and r.mathis_bps is None

    r = analyse(portfolio, "h7", "h9")
    assert [h.link for h in r.hops] == ["r2-h7", "L2", "L3", "r4-h9"]
    assert 0.060 < r.base_rtt_s < 0.061 and r.bottleneck is not None and r.bottleneck.link == "L3"


def test_portfolio_udp_loss_window_and_mathis(portfolio):
    r = analyse(portfolio, "h1", "h4", udp_rate="40Mbit")
    c = 30 * M * 1472 / 1514
    assert r.udp_loss == pytest.approx(1 - c / (40 * M))
    assert r.udp_received_bps == pytest.approx(c)
    r = analyse(portfolio, "h1", "h4", window="64KB", loss="1%")
    assert r.window_bps == pytest.approx(64_000 * 8 / r.data_rtt_s)
    assert r.mathis_bps == pytest.approx(mathis(1448, r.data_rtt_s, 0.01))
    assert r.tcp_expected.limit == "loss"
    assert r.tcp_expected.value == pytest.approx(padhye(1448, r.data_rtt_s, 0.01))
    assert r.tcp_expected.value < r.mathis_bps


def test_configured_link_loss_counts_in_each_direction():
    t = Topology("lossy")
    t.host("a")
    t.host("b")
    t.router("r")
    t.link("a", "r", rate="10Mbit", delay="5ms", a_to_b={"loss": "1%"}, b_to_a={"loss": "2%"})
    t.link("r", "b", delay="5ms", loss="1%")
    r = analyse(make_plan(t), "a", "b", loss=0.01)
    assert r.loss_out == pytest.approx(1 - 0.99 * 0.99)
    assert r.loss_back == pytest.approx(1 - 0.98 * 0.99)
    assert r.loss == pytest.approx(1 - 0.99 ** 3)
    assert r.tcp_expected.limit == "loss"


def test_no_rate_on_the_path_is_said_so():
    t = Topology("bare")
    t.host("a")
    t.host("b")
    t.link("a", "b", delay="1ms")
    r = analyse(make_plan(t), "a", "b")
    assert r.bottleneck is None and r.tcp_goodput_bps is None and r.bdp_bytes is None
    assert r.base_rtt_s == pytest.approx(0.002)
    assert r.tcp_expected.limit == "none"
    assert "no link on the path has a rate" in explain_text(r)


@pytest.mark.parametrize("flows, expected", [
    (["h1:h4", "h2:h5"], {"h1:h4": 15, "h2:h5": 15}),
    (["h1:h4", "h2:h5", "h3:h6"], {"h1:h4": 10, "h2:h5": 10, "h3:h6": 10}),
    (["h1:h4", ("h7", "h9")], {"h1:h4": 15, "h7:h9": 15}),
    (["h1:h4", "h8:h9"], {"h1:h4": 30, "h8:h9": 20}),
    (["h1:h4x2", "h2:h5", "h3:h6"], {"h1:h4x2": 15, "h2:h5": 7.5, "h3:h6": 7.5}),
])
def test_portfolio_fair_shares(portfolio, flows, expected):
    r = analyse(portfolio, "h1", "h4", flows=flows)
    assert {s.name: s.share_bps / M for s in r.flows} == pytest.approx(expected)
    for s in r.flows:
        assert s.goodput_bps == pytest.approx(s.share_bps * 1448 / 1514)


def test_portfolio_udp_flow_keeps_its_rate(portfolio):
    r = analyse(portfolio, "h1", "h4", flows=["h3:h6@5Mbit", "h1:h4", "h2:h5"])
    udp, t1, t2 = r.flows
    assert udp.limit == "demand" and udp.goodput_bps == pytest.approx(5 * M)
    assert udp.share_bps == pytest.approx(5 * M * 1514 / 1472)
    assert t1.share_bps == pytest.approx((30 * M - udp.share_bps) / 2) == t2.share_bps
    assert t1.limit == "L2 r2→r3"


def test_parse_flow():
    assert parse_flow("h1:h4") == ("h1", "h4", 1, None)
    assert parse_flow("h1:h4x3") == ("h1", "h4", 3, None)
    assert parse_flow("h1:h4@5Mbit") == ("h1", "h4", 1, "5Mbit")
    assert parse_flow("a:box2x2", ["a", "box2"]) == ("a", "box2", 2, None)
    assert parse_flow("a:box2", ["a", "box2"]) == ("a", "box2", 1, None)
    with pytest.raises(TheoryError):
        parse_flow("h1-h4")


def test_explain_shows_the_figures_and_the_arithmetic(portfolio):
    r = analyse(portfolio, "h1", "h4", window="64KB", flows=["h1:h4", "h2:h5"])
    text = explain_text(r)
    assert "Bottleneck  L2 (r2 → r3) at 30 Mbit/s" in text
    assert "2 × (10 + 20) ms = 60 ms propagation" in text
    assert "= 60.09 ms (what ping shows" in text
    assert "30 Mbit/s × 1448/1514 = 28.69 Mbit/s" in text
    assert "30 Mbit/s × 1472/1514 = 29.17 Mbit/s" in text
    assert "100 packets × 403.7 us = 40.37 ms" in text
    assert "64,000 bytes × 8 / 60.74 ms = 8.43 Mbit/s" in text
    assert "limited by the window" in text
    assert "h2:h5  1      15 Mbit/s" in text and "Jain's index over connections: 1.000" in text
    text = explain_text(analyse(portfolio, "h1", "h9", loss="1%"))
    assert "Bottleneck  L3 (r3 → r4) at 20 Mbit/s" in text
    assert "2 × (10 + 20 + 10) ms = 80 ms propagation" in text and "= 80.17 ms" in text
    assert "20 Mbit/s × 1448/1514 = 19.13 Mbit/s" in text
    assert "Mathis 1448 × 8 / 81.37 ms" in text and "limited by loss" in text
    text = explain_text(analyse(portfolio, "h1", "h9", proto="udp", udp_rate="25Mbit"))
    assert "UDP offered 25 Mbit/s: loss 22.22 %, received 19.45 Mbit/s" in text
    assert "UDP: up to 19.45 Mbit/s" in explain_text(analyse(portfolio, "h1", "h9", proto="udp"))


def test_a_path_with_no_delay_or_rate_has_no_window_or_loss_limit():
    t = Topology("flat")
    t.host("h1")
    t.host("h2")
    t.switch("s1")
    t.link("h1", "s1")
    t.link("s1", "h2")
    r = analyse(make_plan(t), "h1", "h2", window="64KB", loss="1%")
    assert r.data_rtt_s == 0 and r.window_bps is None and r.mathis_bps is None
    assert r.tcp_expected.limit == "none"
