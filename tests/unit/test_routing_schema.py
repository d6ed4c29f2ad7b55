"""The routing section of a topology: who runs OSPF and BGP, with which timers, and
the loopbacks the plan gives them; every mistake named at its key."""

import ipaddress

import pytest
from netrig.topo.load import loads
from netrig.topo.model import Topology, TopologyError
from netrig.topo.plan import make_plan

WAN = """
name: t
routing: {ospf: {hello: 1s}, bgp: {keepalive: 3s, hold: 9s}}
nodes:
  h1: host
  r1: {kind: router, ospf: {area: 0}, bgp: 65001}
  r2: {kind: router, ospf: true, bgp: {as: 65001}}
  r3: {kind: router, bgp: 65002, frr: {bgpd: "! raw"}}
  r4: router
  h2: host
links:
  - [h1, r1]
  - {a: r1, b: r2, cost: 20, area: 1}
  - [r2, r3]
  - [r3, h2]
  - [r3, r4]
"""


def test_routers_say_what_they_run_and_get_loopbacks():
    topo = loads(WAN, "t.yaml")
    assert topo.routing_of("r1").ospf_area == "0.0.0.0" and topo.routing_of("r1").asn == 65001
    assert topo.routing_of("r2").ospf_area == "0.0.0.0"  # ospf: true is area 0
    assert topo.routing_of("r3").ospf_area is None and topo.routing_of("r3").frr == {"bgpd": "! raw"}
    assert not topo.routing_of("r4").dynamic and not topo.routing_of("h1").dynamic
    assert topo.dynamic == ["r1", "r2", "r3"]
    assert topo.links[1].spec.cost == 20 and topo.links[1].spec.area == "0.0.0.1"
    assert topo.routing.ospf.hello_s == 1 and topo.routing.ospf.dead_s == 4
    assert topo.routing.bgp.s("hold") == 9 and topo.routing.bgp.s("advertisement_interval") is None
    plan = make_plan(topo)
    assert {n: str(a) for n, a in plan.loopbacks.items()} == {
        "r1": "10.255.0.1/32", "r2": "10.255.0.2/32", "r3": "10.255.0.3/32"}
    # FRR routes the routers that run it; the static router and the hosts keep netrig's.
    assert plan.routes["r1"] == plan.routes["r2"] == plan.routes["r3"] == []
    assert plan.routes["r4"] and plan.routes["h1"][0].dest == ipaddress.ip_network("0.0.0.0/0")
    assert "10.255.0.3 r3-lo" in plan.hosts_file()


def test_a_static_lab_is_planned_as_before():
    topo = loads("nodes: {h1: host, r1: router, h2: host}\nlinks: [[h1, r1], [r1, h2]]", "s.yaml")
    plan = make_plan(topo)
    assert topo.dynamic == [] and plan.loopbacks == {}
    assert [str(r.dest) for r in plan.routes["r1"]] == []  # both subnets are its own


@pytest.mark.parametrize("text, message", [
    ("nodes: {h1: {kind: host, ospf: true}}",
     "x.yaml:1: nodes.h1: ospf: only a router runs routing protocols (this node is a host)"),
    ("nodes: {r1: {kind: router, bgp: 0}}", "x.yaml:1: nodes.r1: bgp: AS 0: an AS number is 1 ... 4294967294"),
    ("routing: {ospf: {hello: 1.5s}}\nnodes: {r1: router}",
     "x.yaml:1: routing.ospf.hello: '1.5s': give whole seconds, 1 ... 65535"),
    ("routing: {ospf: {hello: 4s, dead: 2s}}\nnodes: {r1: router}",
     "x.yaml:1: routing.ospf: dead (2s) must be longer than hello (4s)"),
    ("nodes: {r1: {kind: router, ospf: {area: x}}}",
     "x.yaml:1: nodes.r1.ospf.area: 'x' is not an OSPF area (a number, or a dotted quad like 0.0.0.1)"),
    ("nodes: {r1: router, r2: router}\nlinks: [{a: r1, b: r2, cost: 5}]",
     "x.yaml:2: links[0].cost: an OSPF cost, but neither r1 nor r2 runs OSPF"),
    ("nodes: {r1: {kind: router, bgp: 1}, r2: {kind: router, bgp: 1}}\nlinks: [[r1, r2]]",
     "x.yaml:1: nodes.r1.ospf: AS 1 has 2 BGP routers (r1, r2) but r1, r2 run no OSPF"),
    ("nodes: {r1: {kind: router, frr: {ripd: x}}}",
     "x.yaml:1: nodes.r1.frr.ripd: 'ripd' is not an FRR daemon netrig runs "
     "(expected 'zebra', 'ospfd', 'bgpd' or 'staticd')"),
    ("routing: {bgp: {keepalive: 60s, hold: 30s}}\nnodes: {r1: router}",
     "x.yaml:1: routing.bgp: keepalive (60s) must be shorter than hold (30s)"),
    ("routing: {ospfx: {}}\nnodes: {r1: router}", "x.yaml:1: routing.ospfx: unknown key; did you mean ospf?"),
    ("addressing: {loopbacks: 10.0.9.0/24}\nnodes: {r1: {kind: router, ospf: true}}",
     "x.yaml:1: addressing.loopbacks: 10.0.9.0/24 overlaps the pool 10.0.0.0/16"),
])
def test_routing_mistakes_are_named_at_their_key(text, message):
    with pytest.raises(TopologyError) as e:
        loads(text, "x.yaml")
    assert str(e.value).startswith(message), str(e.value)


def test_the_python_api_takes_the_same_routing():
    topo = Topology("api", routing={"ospf": {"hello": "2s"}})
    topo.router("r1", ospf={"area": 3}, bgp=65010)
    assert topo.routing_of("r1").ospf_area == "0.0.0.3" and topo.routing_of("r1").asn == 65010
    with pytest.raises(TopologyError, match="node r2: bgp: AS 0"):
        topo.router("r2", bgp=0)
