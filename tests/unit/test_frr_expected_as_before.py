"""What each router should route once converged (`frrconf.expected_routes`) is what it
was before it gathered one prefix set per OSPF domain and BGP group (not, per router,
every other router's prefixes through lists): the code as it was is kept below, and
random labs of OSPF and BGP routers, static routers, hosts and switches are compared."""

from __future__ import annotations

import ipaddress
import random

import pytest
from netrig.lab import frrconf
from netrig.topo.model import Topology, TopologyError
from netrig.topo.plan import make_plan


def old_expected_routes(plan) -> dict[str, dict[ipaddress.IPv4Network, str]]:
    """frrconf.expected_routes at main 6580953, verbatim but for the module prefix."""
    topo = plan.topo
    routers = topo.dynamic
    ospf = [r for r in routers if topo.routing_of(r).ospf_area is not None]
    bgp = [r for r in routers if topo.routing_of(r).asn is not None]
    adj, ebgp = [], []
    for r in routers:
        for i in plan.ifaces[r]:
            for j in frrconf._others(plan, i):
                if j.node in ospf and r in ospf and frrconf._ospf_peers(topo, r, j.node):
                    adj.append((r, j.node))
                if r in bgp and j.node in bgp and topo.routing_of(r).asn != topo.routing_of(j.node).asn:
                    ebgp.append((topo.routing_of(r).asn, topo.routing_of(j.node).asn))
    domain = frrconf._components(ospf, adj)
    ases = {topo.routing_of(r).asn for r in bgp}
    as_group = frrconf._components(ases, ebgp)
    labels: dict[ipaddress.IPv4Network, str] = {}
    for seg in plan.segments:
        if seg.subnet is not None:
            labels.setdefault(seg.subnet, frrconf.segment_label(plan, seg))
    for r, lo in plan.loopbacks.items():
        labels[lo.network] = f"loopback of {r}"

    def own(r: str) -> list[ipaddress.IPv4Network]:
        nets = [plan.segments[i.segment].subnet for i in plan.ifaces[r]]
        return [n for n in nets if n is not None] + [plan.loopbacks[r].network]

    out: dict[str, dict[ipaddress.IPv4Network, str]] = {}
    for r in routers:
        want: set[ipaddress.IPv4Network] = set()
        if r in domain:
            want.update(n for m in ospf if domain[m] == domain[r] for n in own(m))
        if r in bgp:
            group = as_group[topo.routing_of(r).asn]
            want.update(n for m in bgp if as_group[topo.routing_of(m).asn] == group
                        for n in frrconf._announced(plan, m))
        want -= set(own(r))
        out[r] = {n: labels[n] for n in sorted(want)}
    return out


def random_lab(rng: random.Random) -> Topology:
    """OSPF and BGP routers in up to three ASes (every router of an AS with more than
    one also runs OSPF, as iBGP needs), static routers, hosts and switches."""
    t = Topology("x", routing={"ospf": {"hello": "1s", "dead": "4s"}})
    kinds = [rng.choice(["ospf", "ospf", "bgp", "static"]) for _ in range(rng.randint(1, 9))]
    asns = [rng.choice([65001, 65002, 65003]) if k == "bgp" else None for k in kinds]
    routers = []
    for k, (kind, asn) in enumerate(zip(kinds, asns)):
        shared = asns.count(asn) > 1 if asn is not None else False
        ospf = kind == "ospf" or (kind == "bgp" and (shared or rng.random() < 0.5))
        routers.append(t.router(f"r{k}", ospf=True if ospf else None, bgp=asn))
    switches = [t.switch(f"s{k}") for k in range(rng.randint(0, 2))]
    hosts = [t.host(f"h{k}") for k in range(rng.randint(0, 3))]
    pairs: set[frozenset[str]] = set()
    for n in routers + hosts:
        for _ in range(rng.choice([1, 2, 2, 3])):
            m = rng.choice(routers + switches)
            if m != n and frozenset((n, m)) not in pairs:
                pairs.add(frozenset((n, m)))
                t.link(n, m)
    return t


@pytest.mark.parametrize("seeds", [range(0, 200), range(200, 400)])
def test_random_labs_expect_the_same_routes(seeds: range) -> None:
    compared = 0
    for seed in seeds:
        try:
            plan = make_plan(random_lab(random.Random(seed)))
        except TopologyError:
            continue
        old, new = old_expected_routes(plan), frrconf.expected_routes(plan)
        assert list(new) == list(old), seed
        for r in old:
            assert list(new[r].items()) == list(old[r].items()), (seed, r)
            assert len(new[r]) == len(old[r]) and dict(new[r]) == old[r]
            assert new[r].texts() == [(str(n), n) for n in old[r]]
            compared += len(old[r])
    assert compared > 1000  # the labs route something


def test_a_routers_own_prefixes_are_not_in_its_table_though_its_domain_shares_one() -> None:
    t = Topology("x")
    for r in ("r1", "r2", "r3"):
        t.router(r, ospf=True)
    t.link("r1", "r2")
    t.link("r2", "r3")
    plan = make_plan(t)
    want = frrconf.expected_routes(plan)
    r1_r2 = plan.segments[0].subnet
    assert r1_r2 not in want["r1"] and r1_r2 in want["r3"]
    with pytest.raises(KeyError):
        want["r1"][r1_r2]
    assert want["r3"][r1_r2] == "link r1-r2"
    assert plan.loopbacks["r1"].network not in want["r1"] and len(want["r1"]) == 3  # r2-r3, r2's and r3's loopbacks
