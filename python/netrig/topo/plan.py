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

import heapq
import ipaddress

from netrig.topo.l3 import Edge as _Edge
from netrig.topo.l3 import Hop, Iface, Plan, Route, Segment, check_ends
from netrig.topo.l3 import edge_hops as _hops
from netrig.topo.l3 import l3_graph as _l3_graph
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


def _address(topo: Topology, segments: list[Segment]) -> None:
    pool = ipaddress.ip_network(topo.addressing.pool)
    plen = topo.addressing.prefix_len
    if plen < pool.prefixlen:
        raise TopologyError([f"addressing: prefix_len {plen} is wider than the pool {pool}"])
    taken: set[ipaddress.IPv4Network] = set()
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
            if any(seg.subnet.overlaps(t) for t in taken):
                raise TopologyError([f"subnet {seg.subnet} is used by two segments"])
            taken.add(seg.subnet)
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


def _shortest(topo: Topology, edges: dict[str, list[_Edge]], src: str) -> dict[str, tuple[float, int, list[_Edge]]]:
    """Dijkstra from src by (delay, hops); only routers are passed through. Returns
    node -> (delay, hops, the edges taken)."""
    best: dict[str, tuple[float, int, list[_Edge]]] = {src: (0.0, 0, [])}
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


def _routes(topo: Topology, ifaces, segments) -> dict[str, list[Route]]:
    routers = [n for n, k in topo.nodes.items() if k == "router"]
    # No router, no route: every host reaches only its own segment, and the L3 graph
    # (quadratic in a segment's members) is not needed.
    edges = _l3_graph(topo, ifaces, segments) if routers else {}
    routes: dict[str, list[Route]] = {}
    for node, kind in topo.nodes.items():
        if kind == "switch" or not ifaces[node]:
            continue
        routes[node] = []
        if not routers:
            continue  # no router: every host reaches only its own segment
        own = {segments[i.segment].subnet for i in ifaces[node]}
        best = _shortest(topo, edges, node)
        table: list[Route] = []
        for seg in segments:
            if seg.subnet is None or seg.subnet in own or not seg.ifaces:
                continue
            # Reach the segment through whichever of its members is closest; the first
            # step must be a router (hosts do not forward).
            reach = [best[i.node] for i in seg.ifaces if i.node in best and best[i.node][2]]
            if not reach:
                continue
            first = min(reach, key=lambda b: b[:2])[2][0]
            if topo.nodes[first.to] != "router":
                continue
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
    edges = _l3_graph(topo, plan.ifaces, plan.segments)
    best = _shortest(topo, edges, src)
    if dst not in best:
        raise TopologyError([f"no route from {src} to {dst}"])
    return [h for e in best[dst][2] for h in _hops(e)]
