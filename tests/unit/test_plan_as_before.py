"""The plan's addresses, static routes and paths are exactly what they were before
plan.py chose subnets with a cursor (not a rescan of the pool per segment), skipped
the routes of routers FRR routes, kept one step per node in Dijkstra (not a copy of the
path) and built only the edges routing needs: the code as it was is kept below, and
random topologies (hosts, switches, static and OSPF routers, explicit addresses, pools
and prefix lengths of several sizes, odd delays) are planned both ways, errors
included."""

from __future__ import annotations

import heapq
import ipaddress
import random

import pytest
from netrig.topo import plan as planmod
from netrig.topo.l3 import Edge, check_ends, edge_hops, mean_delay, segment_tree
from netrig.topo.model import Topology, TopologyError
from netrig.topo.plan import make_plan, path

# The code as it was (main at 6580953), verbatim but for names.


def old_address(topo, segments) -> None:
    pool = ipaddress.ip_network(topo.addressing.pool)
    plen = topo.addressing.prefix_len
    if plen < pool.prefixlen:
        raise TopologyError([f"addressing: prefix_len {plen} is wider than the pool {pool}"])
    taken: set[ipaddress.IPv4Network] = set()
    for seg in segments:
        for i in seg.ifaces:
            given = planmod._explicit(topo, i)
            if given is None:
                continue
            if seg.subnet is not None and given.network != seg.subnet:
                raise TopologyError([f"{i.node} {i.name}: {given} is not in its segment's subnet {seg.subnet}"])
            seg.subnet = given.network
            i.addr = given
        if seg.subnet is not None:
            if any(seg.subnet.overlaps(t) for t in taken):
                raise TopologyError([f"subnet {seg.subnet} is used by two segments"])
            taken.add(seg.subnet)
    for seg in segments:
        if not seg.ifaces:
            continue
        if seg.subnet is None:
            need = len(seg.ifaces) + 11
            size = min(plen, 32 - max(2, (need - 1).bit_length()))
            if size < pool.prefixlen:
                raise TopologyError([f"addressing: {len(seg.ifaces)} interfaces on one segment do not "
                                     f"fit in the pool {pool}"])
            seg.subnet = next((n for n in pool.subnets(new_prefix=size)
                               if not any(n.overlaps(t) for t in taken)), None)
            if seg.subnet is None:
                raise TopologyError([f"addressing: the pool {pool} has no /{size} left "
                                     f"for {len(segments)} segments"])
            taken.add(seg.subnet)
        hosts = list(seg.subnet.hosts())
        used = {i.addr.ip for i in seg.ifaces if i.addr is not None}
        order = sorted((i for i in seg.ifaces if i.addr is None),
                       key=lambda i: topo.nodes[i.node] != "router")
        r_next, h_next = 0, 9
        for i in order:
            is_router = topo.nodes[i.node] == "router"
            k = r_next if is_router else max(h_next, r_next)
            while k < len(hosts) and hosts[k] in used:
                k += 1
            if k >= len(hosts):
                raise TopologyError([f"subnet {seg.subnet} has no address left for {i.node}"])
            i.addr = ipaddress.IPv4Interface(f"{hosts[k]}/{seg.subnet.prefixlen}")
            used.add(hosts[k])
            if is_router:
                r_next = k + 1
            else:
                h_next = k + 1


def old_l3_graph(topo, ifaces, segments) -> dict[str, list[Edge]]:
    adj: dict = {n: [] for n in topo.nodes}
    for l in topo.links:
        delay = mean_delay(l)
        adj[l.a].append((l, l.b, delay))
        adj[l.b].append((l, l.a, delay))
    edges: dict[str, list[Edge]] = {}
    for seg in segments:
        switches = set(seg.switches)
        for i in seg.ifaces:
            tree = segment_tree(adj, i.node, switches, i.link)
            prev = {n: t[2] for n, t in tree.items()}
            for j in seg.ifaces:
                if j is i or j.node not in tree:
                    continue
                if not switches and j.link is not i.link:
                    continue
                delay, hops, _ = tree[j.node]
                edges.setdefault(i.node, []).append(Edge(j.node, delay, hops, i, j, prev))
    return edges


def old_shortest(topo, edges, src):
    best = {src: (0.0, 0, [])}
    heap = [(0.0, 0, src)]
    done = set()
    while heap:
        d, h, n = heapq.heappop(heap)
        if n in done:
            continue
        done.add(n)
        if n != src and topo.nodes[n] != "router":
            continue
        for e in edges.get(n, []):
            cand = (d + e.delay, h + e.hops)
            if e.to not in best or cand < best[e.to][:2]:
                best[e.to] = (cand[0], cand[1], best[n][2] + [e])
                heapq.heappush(heap, (cand[0], cand[1], e.to))
    return best


def old_routes(topo, ifaces, segments):
    routers = [n for n, k in topo.nodes.items() if k == "router"]
    edges = old_l3_graph(topo, ifaces, segments) if routers else {}
    routes = {}
    for node, kind in topo.nodes.items():
        if kind == "switch" or not ifaces[node]:
            continue
        routes[node] = []
        if not routers:
            continue
        own = {segments[i.segment].subnet for i in ifaces[node]}
        best = old_shortest(topo, edges, node)
        table = []
        for seg in segments:
            if seg.subnet is None or seg.subnet in own or not seg.ifaces:
                continue
            reach = [best[i.node] for i in seg.ifaces if i.node in best and best[i.node][2]]
            if not reach:
                continue
            first = min(reach, key=lambda b: b[:2])[2][0]
            if topo.nodes[first.to] != "router":
                continue
            table.append(planmod.Route(seg.subnet, first.peer.addr.ip, first.out.name))
        if kind == "host" and table and len({(r.via, r.dev) for r in table}) == 1:
            table = [planmod.Route(ipaddress.IPv4Network("0.0.0.0/0"), table[0].via, table[0].dev)]
        routes[node] = table
    return routes


def old_path(plan, src, dst):
    topo = plan.topo
    check_ends(topo, src, dst)
    if src == dst:
        return []
    edges = old_l3_graph(topo, plan.ifaces, plan.segments)
    best = old_shortest(topo, edges, src)
    if dst not in best:
        raise TopologyError([f"no route from {src} to {dst}"])
    return [h for e in best[dst][2] for h in edge_hops(e)]


# Random topologies.

POOLS = [("10.0.0.0/16", 24), ("10.0.0.0/16", 28), ("10.0.0.0/20", 26), ("10.0.0.0/22", 24),
         ("172.16.0.0/22", 28), ("192.168.0.0/24", 28), ("192.168.0.0/24", 30)]
DELAYS = [None, "1ms", "2ms", "0.1ms", "0.7ms", "0.3ms"]


def _explicit(rng: random.Random, pool: str) -> str:
    """An address near the pool's first subnets (so that it collides with them, or
    with another explicit one), of an ordinary or an odd prefix length."""
    base = int(ipaddress.ip_network(pool).network_address)
    plen = rng.choice([24, 24, 24, 24, 25, 26, 28, 30, 31, 32, 23])
    addr = ipaddress.IPv4Address(base + rng.randrange(0, 6 * 256))
    return f"{addr}/{plen}"


def random_topology(rng: random.Random, size: int) -> Topology:
    pool, plen = rng.choice(POOLS)
    t = Topology("r", pool=pool, prefix_len=plen)
    hosts = [t.host(f"h{k}") for k in range(rng.randint(1, size))]
    switches = [t.switch(f"s{k}") for k in range(rng.randint(0, max(1, size // 3)))]
    ospf = rng.random() < 0.3
    routers = [t.router(f"r{k}", ospf=True if ospf and rng.random() < 0.7 else None)
               for k in range(rng.randint(0, max(1, size // 2)))]
    pairs: set[frozenset[str]] = set()

    def link(a: str, b: str) -> None:
        if a == b or frozenset((a, b)) in pairs:
            return
        pairs.add(frozenset((a, b)))
        params: dict = {}
        if rng.random() < 0.5:
            params["delay"] = rng.choice(DELAYS[1:])
        if rng.random() < 0.2:
            params["a_to_b"] = {"delay": rng.choice(DELAYS[1:])}
        for end in ("addr_a", "addr_b"):
            if rng.random() < 0.04:
                params[end] = _explicit(rng, pool)
        t.link(a, b, **{k: v for k, v in params.items() if v is not None})

    for k, s in enumerate(switches[1:], 1):  # a forest of switches (a loop is refused)
        if rng.random() < 0.6:
            link(s, rng.choice(switches[:k]))
    others = hosts + routers
    for n in others:
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            link(n, rng.choice(switches + routers + hosts))
    for r in routers:
        for _ in range(rng.randint(0, 2)):
            link(r, rng.choice(routers + switches))
    return t


def _plan_or_error(topo: Topology, old: bool):
    if old:
        saved = planmod._address, planmod._routes
        planmod._address, planmod._routes = old_address, old_routes
    try:
        return make_plan(topo)
    except TopologyError as e:
        return e
    finally:
        if old:
            planmod._address, planmod._routes = saved


def _facts(p) -> object:
    if isinstance(p, TopologyError):
        return ("error", str(p))
    return ([(s.index, str(s.subnet), s.switches, [(i.node, i.name) for i in s.ifaces]) for s in p.segments],
            {n: [(i.name, str(i.addr), i.segment) for i in ifs] for n, ifs in p.ifaces.items()},
            {n: [(str(r.dest), str(r.via), r.dev) for r in rs] for n, rs in p.routes.items()},
            {n: str(lo) for n, lo in p.loopbacks.items()})


def _same_steps(plan) -> int:
    """Each node's steps in the routes' graph are the old graph's edges to the nodes
    routing needs (routers, nodes on two segments or more), in the same order, with
    the same delay to the last bit; returns how many were compared."""
    old = old_l3_graph(plan.topo, plan.ifaces, plan.segments)
    g = planmod.RouteGraph(plan.topo, plan.ifaces, plan.segments)
    needed = {j.node for seg in plan.segments for j in g.members(seg)}
    n = 0
    for node in plan.ifaces:
        want = [(e.to, e.delay, e.hops, e.out.name, e.peer.node, e.peer.name) for e in old.get(node, [])
                if e.to in needed]
        assert [(e.to, e.delay, e.hops, e.out.name, e.peer.node, e.peer.name) for e in g(node)] == want, node
        n += len(want)
    return n


def _hops(plan, old: bool, a: str, b: str) -> object:
    try:
        got = (old_path if old else path)(plan, a, b)
    except TopologyError as e:
        return str(e)
    return [(h.link.name, h.frm, h.to, h.d) for h in got]


@pytest.mark.parametrize("size,seeds", [(6, range(300)), (14, range(300, 500)), (40, range(500, 520))])
def test_random_plans_are_as_before(size: int, seeds: range) -> None:
    kinds = {"plans": 0, "errors": 0, "routes": 0, "steps": 0, "paths": 0}
    for seed in seeds:
        rng = random.Random(seed)
        topo = random_topology(rng, size)
        old, new = _plan_or_error(topo, old=True), _plan_or_error(topo, old=False)
        assert _facts(new) == _facts(old), f"seed {seed}"
        if isinstance(new, TopologyError):
            kinds["errors"] += 1
            continue
        kinds["plans"] += 1
        kinds["routes"] += sum(len(r) for r in new.routes.values())
        kinds["steps"] += _same_steps(new)
        if topo.dynamic or not new.ifaces:
            continue  # paths are the protocols' (netrig.topo.routing), not the plan's
        ends = [n for n, k in topo.nodes.items() if k != "switch" and new.ifaces[n]]
        for _ in range(6 if ends else 0):
            a, b = rng.choice(ends), rng.choice(ends)
            assert _hops(new, False, a, b) == _hops(old, True, a, b), f"seed {seed}: {a} -> {b}"
            kinds["paths"] += 1
    # The random topologies reach every part: plans, errors, routes, paths.
    assert all(v > 0 for v in kinds.values()), kinds


def test_every_address_error_is_as_before() -> None:
    """Each error of the address plan, from a topology made to hit it."""

    def two(pool: str = "10.0.0.0/16", plen: int = 24, **params) -> Topology:
        t = Topology("e", pool=pool, prefix_len=plen)
        t.host("a")
        t.host("b")
        t.host("c")
        t.link("a", "b", **params)
        t.link("b", "c", addr_a="10.0.0.9/24")
        return t

    many = Topology("m", pool="10.0.0.0/24", prefix_len=26)
    many.switch("s")
    for k in range(250):
        many.host(f"h{k}")
        many.link(f"h{k}", "s")
    lines = Topology("l", pool="10.0.0.0/24", prefix_len=28)
    for k in range(18):
        lines.host(f"h{k}")
    for k in range(17):
        lines.link(f"h{k}", f"h{k + 1}")
    cases = {
        "wider than the pool": two(pool="10.0.0.0/16", plen=15),
        "used by two segments": two(addr_a="10.0.0.1/25"),
        "not in its segment's subnet": two(addr_a="10.1.0.1/24", addr_b="10.2.0.1/24"),
        "has no address left": two(addr_a="10.5.0.1/31"),
        "do not fit in the pool": many,
        "has no /28 left": lines,
    }
    for words, topo in cases.items():
        old, new = _plan_or_error(topo, old=True), _plan_or_error(topo, old=False)
        assert isinstance(new, TopologyError) and words in str(new), (words, new)
        assert str(new) == str(old)


def test_a_big_switch_segment_is_planned_without_its_square() -> None:
    """200 hosts on one switch behind a router: the routes and a path as before, and
    no step made between two hosts (each host's routes need only the router)."""
    t = Topology("big", pool="10.0.0.0/16", prefix_len=24)
    t.switch("s")
    t.router("r")
    t.host("far")
    t.link("r", "far", delay="1ms")
    t.link("r", "s")
    for k in range(200):
        t.host(f"h{k}")
        t.link(f"h{k}", "s", delay="0.1ms")
    new, old = _plan_or_error(t, old=False), _plan_or_error(t, old=True)
    assert _facts(new) == _facts(old)
    assert _hops(new, False, "h5", "far") == _hops(old, True, "h5", "far")
    g = planmod.RouteGraph(t, new.ifaces, new.segments)
    assert [e.to for e in g("h5")] == ["r"]
    assert len(g("r")) == 0  # far and the hosts are on one segment each: not needed
