"""Theory's outage windows (netrig.theory.outage): OSPF's dead interval and SPF, carrier
loss, eBGP's hold timer and fast failover, a router stopped, static routes, a link off
the path, and a link coming back."""

from __future__ import annotations

import math

import pytest
from netrig.theory.outage import FLOOD_S, Event, Window, expect, judge, span
from netrig.topo.load import loads
from netrig.topo.plan import make_plan

RING = """\
nodes:
  h1: host
  h2: host
  r1: {kind: router, ospf: {area: 0}}
  r2: {kind: router, ospf: {area: 0}}
  r3: {kind: router, ospf: {area: 0}}
  h3: host
routing:
  ospf: {hello: 1s, dead: 4s, spf_delay: 20ms, spf_hold: 100ms}
links:
  - [h1, r1]
  - {a: r1, b: r2, delay: 5ms}
  - {a: r1, b: r3, delay: 20ms}
  - {a: r3, b: r2, delay: 20ms}
  - [r2, h2]
  - [r3, h3]
"""

TWO_AS = """\
nodes:
  h1: host
  h2: host
  a1: {kind: router, bgp: 65001}
  b1: {kind: router, bgp: 65002, ospf: true}
  b2: {kind: router, bgp: 65002, ospf: true}
routing:
  bgp: {keepalive: 3s, hold: 9s}
links:
  - [h1, a1]
  - {a: a1, b: b1, delay: 5ms}
  - {a: a1, b: b2, delay: 30ms}
  - [b1, h2]
  - [b2, h2]
"""

STATIC = """\
nodes: {h1: host, r1: router, r2: router, h2: host}
links:
  - [h1, r1]
  - {a: r1, b: r2, delay: 5ms}
  - [r2, h2]
"""


def plan(text):
    return make_plan(loads(text, source="t.yaml"))


def test_ospf_silent_failure_is_the_dead_interval_less_a_hello_to_it_plus_spf():
    w = expect(plan(RING), Event("down", 2.0, link="r1-r2"), "h1", "h2")
    assert (w.low_s, w.high_s) == pytest.approx((3.02, 4.02 + FLOOD_S))
    assert "dead 4 s" in w.why and "hello 1 s" in w.why and "SPF 20 ms" in w.why
    # Another SPF shortly before: its hold too.
    held = expect(plan(RING), Event("down", 2.0, link="r1-r2", spf_recent=True), "h1", "h2")
    assert held.high_s == pytest.approx(w.high_s + 0.1)


def test_ospf_carrier_loss_is_only_spf():
    w = expect(plan(RING), Event("carrier_down", 2.0, link="r1-r2"), "h1", "h2", both_ways=True)
    assert (w.low_s, w.high_s) == pytest.approx((0.02, 0.02 + FLOOD_S))


def test_a_link_off_the_path_and_a_link_coming_back_cut_nothing():
    off = expect(plan(RING), Event("down", 2.0, link="r3-r2"), "h1", "h2")
    assert (off.low_s, off.high_s) == (0.0, 0.0) and "not on the path" in off.why
    back = expect(plan(RING), Event("up", 4.0, link="r1-r2"), "h1", "h2")
    assert (back.low_s, back.high_s) == (0.0, 0.0)
    assert expect(plan(RING), Event("command", 1.0), "h1", "h2") is None


SQUARE = """\
nodes:
  h1: host
  h2: host
  r1: {kind: router, ospf: true}
  r2: {kind: router, ospf: true}
  r3: {kind: router, ospf: true}
  r4: {kind: router, ospf: true}
routing:
  ospf: {hello: 2s}
links:
  - [h1, r1]
  - {a: r1, b: r2, delay: 5ms}
  - {a: r2, b: r4, delay: 5ms}
  - {a: r1, b: r3, delay: 20ms}
  - {a: r3, b: r4, delay: 20ms}
  - [r4, h2]
"""


def test_a_stopped_ospf_router_on_the_path_is_noticed_by_its_neighbours_dead_interval():
    w = expect(plan(SQUARE), Event("stop", 1.0, router="r2"), "h1", "h2")
    assert (w.low_s, w.high_s) == pytest.approx((6.0, 8.0 + FLOOD_S))  # dead 4 × hello 2
    assert expect(plan(SQUARE), Event("stop", 1.0, router="r3"), "h1", "h2").high_s == 0.0
    # r1 is h1's only router: nothing can route around it; cut until it starts again.
    cut = expect(plan(RING), Event("stop", 1.0, router="r1", back_s=3.5), "h1", "h2")
    assert (cut.low_s, cut.high_s) == (2.5, 2.5) and "no other way" in cut.why


def test_ebgp_silent_failure_waits_for_hold_carrier_loss_and_a_stop_do_not():
    p = plan(TWO_AS)
    silent = expect(p, Event("down", 1.0, link="a1-b1"), "h1", "h2")
    assert (silent.low_s, silent.high_s) == pytest.approx((6.0, 9.0 + FLOOD_S))
    assert "hold 9 s" in silent.why
    fast = expect(p, Event("carrier_down", 1.0, link="a1-b1"), "h1", "h2")
    assert (fast.low_s, fast.high_s) == (0.0, FLOOD_S) and "fast external failover" in fast.why
    stop = expect(p, Event("stop", 1.0, router="b1"), "h1", "h2")
    assert stop.high_s == FLOOD_S and "NOTIFICATION" in stop.why


def test_static_routes_do_not_reroute_the_cut_lasts_until_the_link_is_back():
    p = plan(STATIC)
    w = expect(p, Event("down", 2.0, link="r1-r2", back_s=4.0), "h1", "h2")
    assert (w.low_s, w.high_s) == (2.0, 2.0) and "comes back at 4 s" in w.why
    never = expect(p, Event("down", 2.0, link="r1-r2", end_s=6.0), "h1", "h2")
    assert never.low_s == 4.0


def test_judge_and_words():
    w = Window(3.0, 4.05, "OSPF dead 4 s, hello 1 s, SPF 0 ms")
    assert w.text() == "3–4.05 s (OSPF dead 4 s, hello 1 s, SPF 0 ms)"
    assert judge(3.62, w, 0.06) == "within"
    assert judge(2.5, w, 0.06) == "below"
    assert judge(4.2, w, 0.06) == "above"
    assert judge(None, w, 0.06) == ""
    assert span(2.0, math.inf) == "≥ 2 s" and span(0.0, 0.0) == "0 s"
