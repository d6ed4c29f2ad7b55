"""The plan of a topology: interfaces, L2 segments, addresses, routes and paths.

Pure computation on a checked `Topology`; nothing here touches the system.

- Every link end on a host or router is an IP interface (`eth0`, `eth1`, ... in link
  order); switch ports are not.
- An L2 segment is a switch with everything on it (switches joined by links form one
  segment), or a point-to-point link between two non-switches. Each segment gets one
  subnet: the network of an explicit address on it, else the next free /prefix_len
  of the pool (10.0.0.0/24, 10.0.1.0/24, ... by default, in the order links appear),
  or the smallest wider subnet that holds the segment when a /prefix_len cannot.
- Routers get the lowest addresses on a segment (.1, .2, ...), hosts the next ones
  from .10 up, unless given.
- Routes: shortest path between hosts and routers, by one-way delay, then hop count;
  only routers forward. A host whose routes all leave by one router gets a default
  route through it.
- A router that runs OSPF or BGP (FRR) gets a loopback, the next /32 of
  `addressing.loopbacks` (its router ID), and no static routes: its protocols route
  it. Hosts keep their static routes to their gateways.
- Paths (`path`): the static routes' way; in a lab with such routers, the way their
  protocols choose (`netrig.topo.routing`).
"""

from __future__ import annotations

import bisect
import heapq
import ipaddress
from collections.abc import Callable

from netrig.topo.l3 import (
    Edge,
    Graph,
    Hop,
    Iface,
    Plan,
    Route,
    RouteGraph,
    Segment,
    Step,
    check_ends,
)
from netrig.topo.l3 import edge_hops as _hops
from netrig.topo.model import Topology, TopologyError

__all__ = ["Hop", "Iface", "Plan", "Route", "Segment", "make_plan", "path"]


def make_plan(topo: Topology) -> Plan:
    topo.check()
    kinds = topo.nodes
    ifaces: dict[str, list[Iface]] = {n: [] for n in kinds}
    # Switch components (union-find), then one segment per component or p2p link.
    parent = {n: n for n, k in kinds.items() if k == "switch"}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for l in topo.links:
        if l.a in parent and l.b in parent:
            parent[find(l.a)] = find(l.b)
    segments: list[Segment] = []
    of_switch: dict[str, Segment] = {}

    def switch_segment(s: str) -> Segment:
        root = find(s)
        if root not in of_switch:
            of_switch[root] = Segment(len(segments))
            segments.append(of_switch[root])
        seg = of_switch[root]
        if s not in seg.switches:
            seg.switches.append(s)
        return seg

    for l in topo.links:
        ends = []
        for end, node in enumerate((l.a, l.b)):
            if kinds[node] != "switch":
                i = Iface(node, f"eth{len(ifaces[node])}", l, end)
                ifaces[node].append(i)
                ends.append(i)
        if len(ends) == 2:
            seg = Segment(len(segments))
            segments.append(seg)
        else:
            seg = switch_segment(l.a if kinds[l.a] == "switch" else l.b)
            if kinds[l.a] == "switch" and kinds[l.b] == "switch":
                switch_segment(l.b)
        for i in ends:
            i.segment = seg.index
            seg.ifaces.append(i)
    for s in kinds:
        if kinds[s] == "switch":
            switch_segment(s)
    _address(topo, segments)
    routes = _routes(topo, ifaces, segments)
    pool = ipaddress.ip_network(topo.addressing.loopbacks).hosts()
    loopbacks = {n: ipaddress.IPv4Interface(f"{next(pool)}/32") for n in topo.dynamic}
    for n in loopbacks:
        routes[n] = []  # FRR routes it
    return Plan(topo, ifaces, segments, routes, loopbacks)


def _explicit(topo: Topology, i: Iface) -> ipaddress.IPv4Interface | None:
    text = i.link.spec.addr_a if i.end == 0 else i.link.spec.addr_b
    return ipaddress.IPv4Interface(text) if text else None


class _Taken:
    """The address space taken so far, as sorted disjoint [start, end) integer ranges
    (touching ones merged), with a cursor per block size below which every aligned
    block of that size is known to be taken (taken space only grows): choosing the
    first free block walks from the cursor over the ranges, not from the pool's start
    over every subnet taken."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.cursor: dict[int, int] = {}

    def overlaps(self, a: int, b: int) -> bool:
        k = bisect.bisect_right(self.starts, a) - 1
        if k >= 0 and self.ends[k] > a:
            return True
        return k + 1 < len(self.starts) and self.starts[k + 1] < b

    def add(self, a: int, b: int) -> None:
        """Takes [a, b), which overlaps nothing taken."""
        k = bisect.bisect_right(self.starts, a)
        if k > 0 and self.ends[k - 1] == a:  # joins the range before it
            k -= 1
            self.ends[k] = b
        else:
            self.starts.insert(k, a)
            self.ends.insert(k, b)
        if k + 1 < len(self.starts) and self.starts[k + 1] == b:  # and the one after
            self.ends[k] = self.ends.pop(k + 1)
            del self.starts[k + 1]

    def first_free(self, lo: int, hi: int, size: int) -> int | None:
        """The lowest block of `size` addresses, aligned on its size, in [lo, hi) that
        overlaps nothing taken (None if there is none); the caller takes it."""
        cand = max(lo, self.cursor.get(size, lo))
        k = bisect.bisect_right(self.starts, cand) - 1
        if k < 0 or self.ends[k] <= cand:
            k += 1  # ranges[k] is the first that ends after cand
        while k < len(self.starts) and self.starts[k] < cand + size:
            cand = -(-self.ends[k] // size) * size  # the first aligned block after it
            k += 1
        if cand + size > hi:
            return None
        self.cursor[size] = cand + size
        return cand


def _hosts(subnet: ipaddress.IPv4Network) -> tuple[int, int]:
    """(first, count) of `subnet.hosts()`: all of a /31 or /32, else the addresses
    between the network and broadcast addresses."""
    net, plen = int(subnet.network_address), subnet.prefixlen
    if plen >= 31:
        return net, 2 ** (32 - plen)
    return net + 1, 2 ** (32 - plen) - 2


def _address(topo: Topology, segments: list[Segment]) -> None:
    pool = ipaddress.ip_network(topo.addressing.pool)
    plen = topo.addressing.prefix_len
    if plen < pool.prefixlen:
        raise TopologyError([f"addressing: prefix_len {plen} is wider than the pool {pool}"])
    taken = _Taken()
    for seg in segments:
        for i in seg.ifaces:
            given = _explicit(topo, i)
            if given is None:
                continue
            if seg.subnet is not None and given.network != seg.subnet:
                raise TopologyError([f"{i.node} {i.name}: {given} is not in its segment's subnet {seg.subnet}"])
            seg.subnet = given.network
            i.addr = given
        if seg.subnet is not None:
            a = int(seg.subnet.network_address)
            b = a + seg.subnet.num_addresses
            if taken.overlaps(a, b):
                raise TopologyError([f"subnet {seg.subnet} is used by two segments"])
            taken.add(a, b)
    lo = int(pool.network_address)
    hi = lo + pool.num_addresses
    kinds = topo.nodes
    for seg in segments:
        if not seg.ifaces:
            continue
        if seg.subnet is None:
            # A /prefix_len, or a wider one when the segment has more members than fit
            # (hosts are numbered from .10, so a /24 holds 245 of them).
            need = len(seg.ifaces) + 11
            size = min(plen, 32 - max(2, (need - 1).bit_length()))
            if size < pool.prefixlen:
                raise TopologyError([f"addressing: {len(seg.ifaces)} interfaces on one segment do not "
                                     f"fit in the pool {pool}"])
            at = taken.first_free(lo, hi, 2 ** (32 - size))
            if at is None:
                raise TopologyError([f"addressing: the pool {pool} has no /{size} left "
                                     f"for {len(segments)} segments"])
            taken.add(at, at + 2 ** (32 - size))
            seg.subnet = ipaddress.IPv4Network((at, size))
        first, count = _hosts(seg.subnet)
        sub_len = seg.subnet.prefixlen
        used = {int(i.addr.ip) for i in seg.ifaces if i.addr is not None}
        order = sorted((i for i in seg.ifaces if i.addr is None), key=lambda i: kinds[i.node] != "router")
        r_next, h_next = 0, 9
        for i in order:
            is_router = kinds[i.node] == "router"
            k = r_next if is_router else max(h_next, r_next)
            while k < count and first + k in used:
                k += 1
            if k >= count:
                raise TopologyError([f"subnet {seg.subnet} has no address left for {i.node}"])
            i.addr = ipaddress.IPv4Interface((first + k, sub_len))
            used.add(first + k)
            if is_router:
                r_next = k + 1
            else:
                h_next = k + 1


# node -> (delay, hops, the step into it, the first step from the source)
Best = dict[str, tuple[float, int, Step | None, Step | None]]


def _shortest(topo: Topology, edges: Callable[[str], list[Step]], src: str) -> Best:
    """Dijkstra from src by (delay, hops), the first way found kept on a tie; only
    routers are passed through. Each node keeps the step into it (the way back is
    the chain of those) and the way's first step."""
    kinds = topo.nodes
    best: Best = {src: (0.0, 0, None, None)}
    heap = [(0.0, 0, src)]
    done = set()
    while heap:
        d, h, n = heapq.heappop(heap)
        if n in done:
            continue
        done.add(n)
        if n != src and kinds[n] != "router":
            continue
        first = best[n][3]
        for e in edges(n):
            cd, ch = d + e.delay, h + e.hops
            b = best.get(e.to)
            if b is None or (cd, ch) < (b[0], b[1]):
                best[e.to] = (cd, ch, e, e if first is None else first)
                heapq.heappush(heap, (cd, ch, e.to))
    return best


def _routes(topo: Topology, ifaces, segments) -> dict[str, list[Route]]:
    routers = [n for n, k in topo.nodes.items() if k == "router"]
    # No router, no route: every host reaches only its own segment, and the L3 graph
    # (quadratic in a segment's members) is not needed.
    edges = RouteGraph(topo, ifaces, segments) if routers else None
    dynamic = set(topo.dynamic)  # FRR routes them: make_plan gives them no static route
    routes: dict[str, list[Route]] = {}
    for node, kind in topo.nodes.items():
        if kind == "switch" or not ifaces[node]:
            continue
        routes[node] = []
        if edges is None or node in dynamic:
            continue  # no router: every host reaches only its own segment
        own = {segments[i.segment].subnet for i in ifaces[node]}
        best = _shortest(topo, edges, node)
        table: list[Route] = []
        for seg in segments:
            if seg.subnet is None or seg.subnet in own or not seg.ifaces:
                continue
            # Reach the segment through whichever of its members is closest (the first
            # of equals); the first step must be a router (hosts do not forward).
            reach = [b for b in (best.get(i.node) for i in edges.members(seg)) if b is not None and b[2]]
            if not reach:
                continue
            first = min(reach, key=lambda b: (b[0], b[1]))[3]
            assert first is not None
            if topo.nodes[first.to] != "router":
                continue
            assert first.peer.addr is not None
            table.append(Route(seg.subnet, first.peer.addr.ip, first.out.name))
        if kind == "host" and table and len({(r.via, r.dev) for r in table}) == 1:
            table = [Route(ipaddress.IPv4Network("0.0.0.0/0"), table[0].via, table[0].dev)]
        routes[node] = table
    return routes


def path(plan: Plan, src: str, dst: str) -> list[Hop]:
    """The hops a packet from src to dst crosses, switches included, as routed: in a
    lab whose routers run OSPF or BGP, the path the protocols choose (the first of
    equal-cost paths: `netrig.topo.routing.choose_path`); else the static routes'."""
    topo = plan.topo
    if topo.dynamic:
        from netrig.topo.routing import choose_path

        return choose_path(plan, src, dst).hops
    check_ends(topo, src, dst)
    if src == dst:
        return []
    best = _shortest(topo, Graph(topo, plan.ifaces, plan.segments), src)
    if dst not in best:
        raise TopologyError([f"no route from {src} to {dst}"])
    steps: list[Edge] = []
    n = dst
    while (e := best[n][2]) is not None:
        assert isinstance(e, Edge)
        steps.append(e)
        n = e.out.node
    return [h for e in reversed(steps) for h in _hops(e)]
