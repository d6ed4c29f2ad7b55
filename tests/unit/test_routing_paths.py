"""Theory that knows the routing (netrig.topo.routing): the path OSPF's costs and BGP's
decision process choose, where it differs from the static shortest-delay path, and
the kernel-path flag's pure parts (netrig.lab.paths, netrig.exp.analysis.why). No root."""

from __future__ import annotations

import pytest
from netrig.topo import routing
from netrig.topo.load import loads
from netrig.topo.model import Topology, TopologyError
from netrig.topo.plan import make_plan, path


def nodes(plan, src: str, dst: str) -> list[str]:
    return routing.nodes_of(src, path(plan, src, dst))


def ring(costs: dict[str, int] | None = None, delays: dict[str, str] | None = None,
         rates: dict[str, str] | None = None, ospf: bool = True) -> Topology:
    """h1 - r1, r1-r2-r4 and r1-r3-r4 (a ring of four), r4 - h2."""
    t = Topology("ring")
    t.host("h1")
    t.host("h2")
    for r in ("r1", "r2", "r3", "r4"):
        t.router(r, ospf=True if ospf else None)
    t.link("h1", "r1")
    for a, b in (("r1", "r2"), ("r2", "r4"), ("r1", "r3"), ("r3", "r4")):
        params: dict = {}
        key = f"{a}{b}"
        if costs and key in costs:
            params["cost"] = costs[key]
        if delays and key in delays:
            params["delay"] = delays[key]
        if rates and key in rates:
            params["rate"] = rates[key]
        t.link(a, b, **params)
    t.link("r4", "h2")
    return t


def test_ospf_takes_the_cheaper_way_round_the_ring_although_it_is_slower():
    # r1-r2-r4 costs 10+10 = 20 with 50 ms; r1-r3-r4 costs 30+30 = 60 with 2 ms:
    # static shortest delay goes by r3, OSPF by r2.
    t = ring(costs={"r1r2": 10, "r2r4": 10, "r1r3": 30, "r3r4": 30},
             delays={"r1r2": "50ms", "r2r4": "50ms", "r1r3": "1ms", "r3r4": "1ms"})
    plan = make_plan(t)
    assert nodes(plan, "h1", "h2") == ["h1", "r1", "r2", "r4", "h2"]
    assert nodes(plan, "h2", "h1") == ["h2", "r4", "r2", "r1", "h1"]
    c = routing.choose_path(plan, "h1", "h2")
    assert not c.ecmp and c.why.startswith("OSPF cost 21 via r1-r2-r4"), c.why  # + 1 for r4's host side
    e = routing.forwarding(plan)["r1"][plan.segments[plan.ifaces["h2"][0].segment].subnet]
    assert e.reason == "ospf cost 21" and [h.node for h in e.nexthops] == ["r2"]
    # The same lab without OSPF: the static way, by delay.
    assert nodes(make_plan(ring(delays={"r1r2": "50ms", "r2r4": "50ms", "r1r3": "1ms", "r3r4": "1ms"},
                                ospf=False)), "h1", "h2") == ["h1", "r1", "r3", "r4", "h2"]


def test_equal_costs_give_ecmp_and_every_equal_path():
    t = ring(costs={"r1r2": 10, "r2r4": 10, "r1r3": 10, "r3r4": 10}, delays={"r1r2": "30ms"})
    plan = make_plan(t)
    c = routing.choose_path(plan, "h1", "h2")
    assert c.ecmp
    assert c.node_paths() == [["h1", "r1", "r2", "r4", "h2"], ["h1", "r1", "r3", "r4", "h2"]]
    assert "(ECMP: 2 equal paths, the first shown)" in c.why
    e = routing.forwarding(plan)["r1"][plan.loopbacks["r4"].network]
    assert sorted(h.node for h in e.nexthops) == ["r2", "r3"] and e.metric == 20


def test_cost_from_rate_uses_the_direction_leaving_the_interface():
    # No costs given: reference 100 Mbit. r1-r2 runs 10 Mbit (cost 10) each way;
    # r1->r3 runs 100 Mbit (cost 1) but r3->r1 only 1 Mbit (cost 100), r3-r4 100 Mbit.
    t = loads("""
name: rate
nodes: {h1: host, h2: host, r1: {kind: router, ospf: true}, r2: {kind: router, ospf: true},
        r3: {kind: router, ospf: true}, r4: {kind: router, ospf: true}}
links:
  - [h1, r1]
  - {a: r1, b: r2, rate: 10Mbit}
  - {a: r2, b: r4, rate: 10Mbit}
  - {a: r1, b: r3, a_to_b: {rate: 100Mbit}, b_to_a: {rate: 1Mbit}}
  - {a: r3, b: r4, rate: 100Mbit}
  - [r4, h2]
""", "rate.yaml")
    plan = make_plan(t)
    r1_to_r3 = next(i for i in plan.ifaces["r1"] if i.link.b == "r3")
    r3_to_r1 = next(i for i in plan.ifaces["r3"] if i.link.a == "r1")
    assert routing.iface_cost(t, r1_to_r3) == 1 and routing.iface_cost(t, r3_to_r1) == 100
    assert routing.iface_cost(t, plan.ifaces["h1"][0]) == 1  # unrated
    # Out: 1 + 1 (r3-r4) beats 10 + 10; back: r4->r3->r1 costs 1 + 100, r4->r2->r1 20.
    assert nodes(plan, "h1", "h2") == ["h1", "r1", "r3", "r4", "h2"]
    assert nodes(plan, "h2", "h1") == ["h2", "r4", "r2", "r1", "h1"]
    # A reference of 1 Gbit makes 10 Mbit cost 100.
    t.routing.ospf.reference_bandwidth = "1Gbit"
    assert routing.iface_cost(t, next(i for i in plan.ifaces["r1"] if i.link.b == "r2")) == 100


def test_a_switch_segment_joins_its_routers_and_its_cost_is_the_leaving_link():
    t = loads("""
name: lan
nodes: {h1: host, h2: host, s1: switch, r1: {kind: router, ospf: true},
        r2: {kind: router, ospf: true}, r3: {kind: router, ospf: true}}
links:
  - [h1, r1]
  - {a: r1, b: s1, cost: 5}
  - {a: r2, b: s1, cost: 50}
  - {a: r3, b: s1, cost: 5}
  - {a: r1, b: r2, cost: 100, delay: 1ms}
  - {a: r2, b: h2}
  - {a: r3, b: r2, cost: 1, delay: 40ms}
""", "lan.yaml")
    plan = make_plan(t)
    # r1 reaches r2 across the switch for 5 (r1's interface), not the 100 link; and
    # r2 answers by r3 (1 + 5 over the switch beats its own 50 onto it).
    assert nodes(plan, "h1", "h2") == ["h1", "r1", "s1", "r2", "h2"]
    assert nodes(plan, "h2", "h1") == ["h2", "r2", "r3", "s1", "r1", "h1"]


AREAS = """
name: areas
nodes:
  h1: host
  h2: host
  r1: {kind: router, ospf: {area: 1}}
  r2: {kind: router, ospf: {area: 0}}
  r3: {kind: router, ospf: {area: 0}}
  r4: {kind: router, ospf: {area: 2}}
links:
  - [h1, r1]
  - {a: r1, b: r2, area: 1, cost: 10}
  - {a: r1, b: r3, area: 1, cost: 50}
  - {a: r2, b: r3, cost: 10}
  - {a: r2, b: r4, area: 2, cost: 40}
  - {a: r3, b: r4, area: 2, cost: 10}
  - [r4, h2]
"""


def test_two_areas_through_the_abrs_are_a_plain_sum():
    plan = make_plan(loads(AREAS, "areas.yaml"))
    c = routing.choose_path(plan, "h1", "h2")
    # r1 -> ABR r2 (10) + r2's route (41) = 51; by ABR r3: 50 + 11 = 61.
    assert c.nodes == ["h1", "r1", "r2", "r4", "h2"], c.why
    assert c.why.startswith("OSPF cost 51 via r1-r2-r4"), c.why
    # Intra-area first: the ABR r2 reaches h2's subnet inside area 2 for 40 + 1,
    # although the backbone's way by r3 (10 + r3's 11) is cheaper.
    h2net = plan.segments[plan.ifaces["h2"][0].segment].subnet
    e = routing.forwarding(plan)["r2"][h2net]
    assert e.metric == 41 and [h.node for h in e.nexthops] == ["r4"]
    # r3, an ABR too, has it inside area 2 for 11; r1 (area 1 only) sums.
    assert routing.forwarding(plan)["r3"][h2net].metric == 11
    # An area with no way to the backbone gets no inter-area routes.
    cut = loads(AREAS.replace("{a: r2, b: r4, area: 2, cost: 40}", "{a: r2, b: r4, area: 3, cost: 40}")
                .replace("{a: r3, b: r4, area: 2, cost: 10}", "{a: r3, b: r4, area: 3, cost: 10}"), "cut.yaml")
    with pytest.raises(TopologyError, match="no route at r1"):
        routing.choose_path(make_plan(cut), "h1", "h2")


TWO_AS = """
name: two
nodes:
  h1: host
  h2: host
  a1: {kind: router, ospf: true, bgp: 65001}
  a2: {kind: router, ospf: true, bgp: 65001}
  b1: {kind: router, ospf: true, bgp: 65002}
links:
  - [h1, a1]
  - {a: a1, b: a2, delay: 1ms}
  - {a: a2, b: b1, delay: 1ms}
  - {a: a1, b: b1, delay: 80ms}
  - [b1, h2]
"""


def test_two_ases_ebgp_beats_ibgp_by_distance():
    plan = make_plan(loads(TWO_AS, "two.yaml"))
    c = routing.choose_path(plan, "h1", "h2")
    # a1's own eBGP route (AS path 65002, distance 20) wins over a2's iBGP one: the
    # slow direct link, not the fast way through a2.
    assert c.nodes == ["h1", "a1", "b1", "h2"], c.why
    assert c.why.startswith("BGP: AS path 65002; via a1-b1"), c.why
    h2net = plan.segments[plan.ifaces["h2"][0].segment].subnet
    assert routing.forwarding(plan)["a2"][h2net].source == "ebgp"
    # a2's loopback reaches a1 by OSPF (110) and iBGP (200, a2 announces it): OSPF's.
    e = routing.forwarding(plan)["a1"][plan.loopbacks["a2"].network]
    assert e.source == "ospf" and e.reason == "ospf cost 1"


THREE_AS = """
name: three
nodes:
  h1: host
  h2: host
  a1: {kind: router, ospf: true, bgp: 65001}
  a2: {kind: router, ospf: true, bgp: 65001}
  b1: {kind: router, ospf: true, bgp: 65002}
  c1: {kind: router, ospf: true, bgp: 65003}
  d1: {kind: router, ospf: true, bgp: 65004}
links:
  - [h1, a1]
  - {a: a1, b: a2, delay: 1ms}
  - {a: a1, b: b1, delay: 1ms}
  - {a: b1, b: c1, delay: 1ms}
  - {a: c1, b: d1, delay: 1ms}
  - {a: a2, b: d1, delay: 60ms}
  - [d1, h2]
"""


def test_the_shorter_as_path_wins_although_it_has_more_delay():
    plan = make_plan(loads(THREE_AS, "three.yaml"))
    c = routing.choose_path(plan, "h1", "h2")
    # By a1-b1-c1-d1: 3 ms, AS path 65002 65003 65004; by a2-d1: 61 ms, AS path 65004.
    assert c.nodes == ["h1", "a1", "a2", "d1", "h2"], c.why
    assert c.why.startswith("BGP: AS path 65004, then OSPF cost 1 to the exit a2; via a1-a2-d1"), c.why
    h2net = plan.segments[plan.ifaces["h2"][0].segment].subnet
    e = routing.forwarding(plan)["a1"][h2net]
    assert e.source == "ibgp" and e.as_path == (65004,) and e.exit == "a2"
    # b1 (AS 65002) hears 65003 65004 from c1 and 65001 65004 from a1: equal length,
    # eBGP both; the lower router ID wins (c1's loopback is above a1's).
    assert routing.forwarding(plan)["b1"][h2net].as_path == (65001, 65004)


HOT_POTATO = """
name: hot
nodes:
  h1: host
  h2: host
  a1: {kind: router, ospf: true, bgp: 65001}
  a2: {kind: router, ospf: true, bgp: 65001}
  a3: {kind: router, ospf: true, bgp: 65001}
  b1: {kind: router, ospf: true, bgp: 65002}
  b2: {kind: router, ospf: true, bgp: 65002}
links:
  - [h1, a1]
  - {a: a1, b: a2, cost: 10, delay: 30ms}
  - {a: a1, b: a3, cost: 20, delay: 1ms}
  - {a: a2, b: b1, delay: 30ms}
  - {a: a3, b: b2, delay: 1ms}
  - {a: b1, b: b2, cost: 1}
  - [b1, h2]
  - [b2, h2]
"""


def test_hot_potato_takes_the_exit_with_the_lowest_igp_cost():
    plan = make_plan(loads(HOT_POTATO, "hot.yaml"))
    c = routing.choose_path(plan, "h1", "h2")
    # Both exits hear AS path 65002; a2 is 10 away, a3 20: leave by a2 although the
    # way by a3 has 60 ms less delay.
    assert c.nodes[:4] == ["h1", "a1", "a2", "b1"], c.why
    assert "then OSPF cost 10 to the exit a2" in c.why
    flipped = make_plan(loads(HOT_POTATO.replace("cost: 10, delay: 30ms", "cost: 30, delay: 30ms"), "h.yaml"))
    assert nodes(flipped, "h1", "h2")[:4] == ["h1", "a1", "a3", "b2"]


def test_a_static_lab_is_unchanged(monkeypatch):
    t = ring(delays={"r1r2": "50ms", "r2r4": "50ms", "r1r3": "1ms", "r3r4": "1ms"}, ospf=False)
    plan = make_plan(t)

    def boom(*a, **k):
        raise AssertionError("routing consulted for a static lab")

    monkeypatch.setattr(routing, "choose_path", boom)
    assert nodes(plan, "h1", "h2") == ["h1", "r1", "r3", "r4", "h2"]
    # forwarding() of a static lab gives the plan's static routes, and the same path.
    monkeypatch.undo()
    c = routing.choose_path(plan, "h1", "h2")
    assert c.nodes == ["h1", "r1", "r3", "r4", "h2"] and c.why.startswith("static routes")
    assert all(e.source in ("connected", "static") for t in routing.forwarding(plan).values() for e in t.values())


def test_path_cost_names_a_paths_cost_in_its_protocols_terms():
    t = ring(costs={"r1r2": 10, "r2r4": 10, "r1r3": 30, "r3r4": 30})
    plan = make_plan(t)
    assert routing.path_cost(plan, ["h1", "r1", "r2", "r4", "h2"]) == "OSPF cost 20"
    assert routing.path_cost(plan, ["h1", "r1", "r3", "r4", "h2"]) == "OSPF cost 60"
    three = make_plan(loads(THREE_AS, "three.yaml"))
    assert routing.path_cost(three, ["h1", "a1", "b1", "c1", "d1", "h2"]) == "AS path 65002 65003 65004"


def test_explain_says_how_the_path_was_chosen_and_lists_equal_paths():
    from netrig.theory import analyse, explain_text

    equal = make_plan(ring(costs={"r1r2": 10, "r2r4": 10, "r1r3": 10, "r3r4": 10}, rates={"r2r4": "10Mbit"}))
    text = explain_text(analyse(equal, "h1", "h2"))
    assert "Routing     OSPF cost 21 via r1-r2-r4 (ECMP: 2 equal paths, the first shown)" in text
    assert "→ h1 r1 r2 r4 h2" in text and "= h1 r1 r3 r4 h2" in text
    assert "back:" not in text  # the way back is the way out reversed
    # Costs that make the way back differ: r4->r3 is cheap, r3->r4 dear.
    t = loads("""
name: asym
nodes: {h1: host, h2: host, r1: {kind: router, ospf: true}, r2: {kind: router, ospf: true},
        r3: {kind: router, ospf: true}, r4: {kind: router, ospf: true}}
links:
  - [h1, r1]
  - {a: r1, b: r2, rate: 50Mbit}
  - {a: r2, b: r4, rate: 50Mbit}
  - {a: r1, b: r3, rate: 100Mbit}
  - {a: r3, b: r4, a_to_b: {rate: 10Mbit}, b_to_a: {rate: 100Mbit}}
  - [r4, h2]
""", "asym.yaml")
    text = explain_text(analyse(make_plan(t), "h1", "h2"))
    assert "Routing     OSPF cost 5 via r1-r2-r4" in text, text
    assert "back: OSPF cost 3 via r4-r3-r1" in text, text
    assert "Return path h2 → h1" in text
    # A static lab says nothing of routing.
    assert "Routing" not in explain_text(analyse(make_plan(ring(ospf=False)), "h1", "h2"))


# The kernel's path (netrig.lab.paths.follow) from canned `ip -j route get` answers.
LAN = """
name: lanring
nodes: {h1: host, h2: host, s1: switch, r1: {kind: router, ospf: true},
        r2: {kind: router, ospf: true}, r3: {kind: router, ospf: true}, r4: {kind: router, ospf: true}}
links:
  - [h1, r1]
  - [r1, s1]
  - [r2, s1]
  - [r1, r3]
  - [r2, r4]
  - [r3, r4]
  - [r4, h2]
"""


def _addr(plan, node: str, toward: str) -> str:
    """node's address on the segment it shares with `toward`."""
    for i in plan.ifaces[node]:
        if any(j.node == toward for j in plan.segments[i.segment].ifaces) or \
                plan.segments[i.segment].switches and toward in plan.segments[i.segment].switches:
            return str(i.addr.ip)
    raise AssertionError((node, toward))


def _dev(plan, node: str, toward: str) -> str:
    for i in plan.ifaces[node]:
        if any(j.node == toward for j in plan.segments[i.segment].ifaces):
            return i.name
    raise AssertionError((node, toward))


def test_follow_walks_the_kernels_answers_and_names_the_switches():
    from netrig.lab import paths

    plan = make_plan(loads(LAN, "lan.yaml"))
    route = {"h1": "r1", "r1": "r2", "r2": "r4"}  # then r4 is on h2's segment
    asked = []

    def ask(node, iif):
        asked.append((node, iif))
        if node == "r4":
            return {"dst": str(plan.addr("h2")), "dev": _dev(plan, "r4", "h2")}
        nxt = route[node]
        return {"dst": str(plan.addr("h2")), "gateway": _addr(plan, nxt, node), "dev": _dev(plan, node, nxt)}

    assert paths.follow(plan, "h1", "h2", ask) == ["h1", "r1", "s1", "r2", "r4", "h2"]
    # Each router is asked as for a forwarded packet: on the interface it arrived by.
    assert asked == [("h1", None), ("r1", _dev(plan, "r1", "h1")), ("r2", _dev(plan, "r2", "r1")),
                     ("r4", _dev(plan, "r4", "r2"))]
    # No route, a loop, an address that is not the lab's: each said where.
    with pytest.raises(paths.PathError, match="no route at r2 toward h2 .*Network is unreachable"):
        paths.follow(plan, "h1", "h2", lambda n, i: "RTNETLINK answers: Network is unreachable"
                     if n == "r2" else ask(n, i))
    back = {"h1": "r1", "r1": "r2", "r2": "r1"}
    with pytest.raises(paths.PathError, match="a routing loop: h1 r1 s1 r2 s1 r1"):
        paths.follow(plan, "h1", "h2", lambda n, i: {"gateway": _addr(plan, back[n], n),
                                                     "dev": _dev(plan, n, back[n])})
    with pytest.raises(paths.PathError, match="r1 sends toward h2 by 192.0.2.1, which is no address"):
        paths.follow(plan, "h1", "h2", lambda n, i: {"gateway": "192.0.2.1", "dev": "eth1"}
                     if n == "r1" else ask(n, i))
    assert paths.route_get_argv("ns1", "10.0.3.10", "10.0.0.10", "eth1",
                                {"proto": "tcp", "sport": 40000, "dport": 5201}) == [
        "ip", "-n", "ns1", "-j", "route", "get", "10.0.3.10", "from", "10.0.0.10", "iif", "eth1",
        "ipproto", "tcp", "sport", "40000", "dport", "5201"]


def test_path_differs_flags_another_path_but_not_an_equal_cost_leg():
    from netrig.exp.analysis import why
    rec = {"predicted": ["h1", "r1", "r2", "r4", "h2"], "kernel": ["h1", "r1", "r3", "r4", "h2"],
           "ecmp": False, "predicted_cost": "OSPF cost 30", "kernel_cost": "OSPF cost 40"}
    assert why.path_differs("bulk", rec) == (
        "flow bulk took h1 r1 r3 r4 h2, theory expected h1 r1 r2 r4 h2 (OSPF cost 30 vs 40): its "
        "figures are compared with the wrong path.")
    equal = {**rec, "ecmp": True, "equal": [rec["predicted"], rec["kernel"]]}
    assert why.path_differs("bulk", equal) is None
    assert why.path_differs("bulk", {**equal, "equal": [rec["predicted"]]}) is not None
    assert why.path_differs("bulk", {**rec, "kernel": rec["predicted"]}) is None
    assert why.path_differs("bulk", {"error": "kernel: no route at r2"}) is None


def test_the_report_flags_a_flow_on_another_path(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from netrig.exp.analysis.results import load
    from netrig.exp.record.files import run_id, write_json
    from netrig.exp.render import report
    from test_report_why import make

    out = make(tmp_path / "r")
    run = out / "runs" / run_id(0, 0) / "run.json"
    import json

    data = json.loads(run.read_text())
    data["flows"]["bulk"]["path"] = {"predicted": ["h1", "s0", "h2"], "kernel": ["h1", "s9", "h2"],
                                     "ecmp": False, "predicted_cost": "OSPF cost 30",
                                     "kernel_cost": "OSPF cost 40"}
    data["flows"]["near"]["path"] = {"predicted": ["h1", "s0", "h2"], "kernel": ["h1", "s0", "h2"],
                                     "ecmp": False}
    write_json(run, data)
    assert report.path_flags(load(out)) == [
        "flow bulk took h1 s9 h2, theory expected h1 s0 h2 (OSPF cost 30 vs 40): its figures are "
        "compared with the wrong path."]
    page = Path(report.build(out)).read_text()
    results = page.split("<h2>Results</h2>", 1)[1].split("<h2>", 1)[0]
    assert "the kernel routed some flows another way than theory expected" in results
    assert "flow bulk took h1 s9 h2" in results and "flow near took" not in page
    # bulk is far from theory: its why says the path first.
    far = page.split("<h2>Far from theory</h2>", 1)[1].split("<h2>", 1)[0]
    assert far.index("flow bulk took h1 s9 h2") < far.index("retransmitted")


def test_a_switch_segment_is_entered_by_the_routers_own_link_to_it():
    """r1 meets r2 on a switch (no delay) and over a direct 50 ms link: the static plan
    routes, and names, the way through the switch, not the direct link's delay under
    the switch segment's name."""
    topo = loads("""
nodes: {h1: host, r1: router, r2: router, s1: switch, h2: host}
links:
  - [h1, r1]
  - {a: r1, b: r2, delay: 50ms}
  - [r1, s1]
  - [s1, r2]
  - [r2, h2]
""", "x.yaml")
    plan = make_plan(topo)
    assert [h.link.name for h in path(plan, "h1", "h2")] == ["h1-r1", "r1-s1", "s1-r2", "r2-h2"]
    (route,) = plan.routes["r1"]
    assert route.dev == "eth2" and str(route.via) == "10.0.2.2"  # r2 on the switch


def test_a_plan_still_finds_its_paths_after_a_link_is_changed_live():
    """Network.set_link replaces the topology's Link (the plan's interfaces keep the
    one they were planned with): the path must still be found, by the link's name."""
    topo = loads("nodes: {h1: host, r1: router, r2: router, h2: host}\n"
                 "links: [[h1, r1], {a: r1, b: r2, delay: 5ms}, [r2, h2]]", "x.yaml")
    plan = make_plan(topo)
    topo.links[1] = topo.links[1].changed({"delay": "10ms"})
    assert [h.link.name for h in path(plan, "h1", "h2")] == ["h1-r1", "r1-r2", "r2-h2"]
