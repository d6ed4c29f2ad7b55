"""The address plan, routes and paths, without building anything."""

from __future__ import annotations

import ipaddress

import pytest
from netrig.topo.model import Topology, TopologyError
from netrig.topo.plan import make_plan, path


def chain() -> Topology:
    """h1 - s1 - r1 ==(5 ms)== r2 ==(1 ms)== r3 - h2, and a slow shortcut r1 ==(50 ms)== r3."""
    t = Topology("chain")
    for n in ("h1", "h2"):
        t.host(n)
    t.switch("s1")
    for r in ("r1", "r2", "r3"):
        t.router(r)
    t.link("h1", "s1")
    t.link("s1", "r1")
    t.link("r1", "r2", delay="5ms")
    t.link("r2", "r3", delay="1ms")
    t.link("r1", "r3", delay="50ms", name="shortcut")
    t.link("r3", "h2")
    return t


def test_routers_take_the_first_addresses_and_hosts_start_at_10():
    p = make_plan(chain())
    assert p.addr("r1") == ipaddress.ip_address("10.0.0.1")
    assert p.addr("h1") == ipaddress.ip_address("10.0.0.10")
    assert [str(s.subnet) for s in p.segments] == [f"10.0.{i}.0/24" for i in range(5)]


def test_routes_follow_the_lowest_delay_not_the_fewest_hops():
    p = make_plan(chain())
    hops = [h.link.name for h in path(p, "h1", "h2")]
    assert hops == ["h1-s1", "s1-r1", "r1-r2", "r2-r3", "r3-h2"]  # 6 ms, not the 50 ms shortcut
    (default,) = p.routes["h1"]
    assert str(default.dest) == "0.0.0.0/0" and default.via == p.addr("r1")
    r1 = {str(r.dest): str(r.via) for r in p.routes["r1"]}
    h2_net = str(p.iface(p.topo.link_named("r3", "h2"), 1).addr.network)
    assert r1[h2_net] == str(next(i.addr.ip for i in p.ifaces["r2"] if i.link.name == "r1-r2"))


def test_a_segment_too_big_for_a_24_gets_a_wider_subnet():
    t = Topology("big")
    t.switch("s")
    for i in range(300):
        t.host(f"h{i}")
        t.link(f"h{i}", "s")
    p = make_plan(t)
    assert p.segments[0].subnet.prefixlen == 23
    assert len({i.addr.ip for ifs in p.ifaces.values() for i in ifs}) == 300


def test_explicit_addresses_are_kept_and_checked():
    t = Topology("x")
    t.host("a")
    t.host("b")
    t.link("a", "b", addr_a="192.168.7.1/24")
    p = make_plan(t)
    assert str(p.addr("a")) == "192.168.7.1" and str(p.addr("b")).startswith("192.168.7.")
    t2 = Topology("y")
    t2.host("a")
    t2.host("b")
    t2.link("a", "b", addr_a="192.168.7.1/24", addr_b="192.168.8.1/24")
    with pytest.raises(TopologyError, match="not in its segment's subnet"):
        make_plan(t2)


def test_without_routers_hosts_get_no_routes_and_paths_need_a_route():
    t = Topology("l2")
    t.host("a")
    t.host("b")
    t.switch("s")
    t.link("a", "s")
    t.link("b", "s")
    p = make_plan(t)
    assert p.routes == {"a": [], "b": []}
    assert [h.link.name for h in path(p, "a", "b")] == ["a-s", "b-s"]
    with pytest.raises(TopologyError, match="is a switch"):
        path(p, "a", "s")


def test_hosts_file_names_every_address():
    text = make_plan(chain()).hosts_file()
    assert "10.0.0.10 h1 h1-eth0" in text
    assert "10.0.0.1 r1 r1-eth0" in text and " r1-eth1" in text
