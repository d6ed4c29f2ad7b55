"""The path the routing protocols will choose: OSPF's costs and BGP's decision process
worked out from the plan, then followed hop by hop as the routers forward.

    forwarding(plan)            per node, per destination prefix: an `Entry` (where it
                                came from, its next hops, and a reason: `connected`,
                                `ospf cost 30`, `bgp AS path [65002 65003]`, `static`)
    choose_path(plan, src, dst) the hops a packet takes (`PathChoice`): the path shown,
                                every equal-cost alternative, and one line saying why

Pure computation on a `Plan` (the rules netrig configures FRR with, DESIGN's issue 15):

- OSPF runs between the OSPF routers of one AS (or of no AS) that share a segment:
  point-to-point over a link, broadcast over a switch segment, each interface in the
  link's `area` or else its router's. An interface's cost is the link's `cost`, else
  ceil(reference_bandwidth / the rate of the direction leaving it), 1 ... 65535 (an
  unrated link costs 1). Interfaces toward hosts are passive (their subnet is
  announced); an interface whose segment holds only routers outside the router's OSPF
  domain (an eBGP link) is not in OSPF. A loopback is a stub of cost 0 in its
  router's area. Routes: intra-area first (SPF in each area); else inter-area through
  the area border routers (ABRs: in the backbone and another area) as a plain sum of
  costs: a router of area A adds its cost to an ABR of A to that ABR's route; an ABR
  takes other ABRs' intra-area routes over the backbone. That is what OSPF gives when
  every area touches the backbone. Equal costs keep every next hop (ECMP).
  Not modelled: virtual links, stub/NSSA areas, summarisation, external (type 5)
  routes, areas cut off from the backbone, the DR's role on a broadcast segment
  (costs are the same either way), and anything in raw `frr:` lines.
- BGP: each BGP router announces its connected subnets and loopback; eBGP over every
  segment it shares with a BGP router of another AS (the AS path prepended, a path
  holding the receiver's AS refused); iBGP between every two routers of one AS whose
  loopbacks OSPF joins (next-hop-self; routes learnt over iBGP are not passed to iBGP
  peers). Best path: locally announced, then the shortest AS path, then eBGP over
  iBGP, then the lowest OSPF cost to the next hop, then the peer's lowest router ID
  (its loopback). FRR breaks a tie between two eBGP routes by the older one, which
  nothing here can know: the kernel path flag (`netrig.lab.paths`) shows when that
  differs. Routes with the same AS path, kind and OSPF cost share the traffic (FRR's
  default multipath). Not modelled: local preference, MED, communities, route maps,
  aggregation: whatever raw `frr:` lines add.
- A router picks among its protocols by administrative distance: connected < eBGP
  (20) < OSPF (110) < iBGP (200); an iBGP route's next hop (the exit's loopback) is
  resolved through OSPF. Static routers and hosts keep the plan's static routes.
"""

from __future__ import annotations

import heapq
import ipaddress
import math
from dataclasses import dataclass, field

from netrig.topo.l3 import Hop, Iface, Plan, check_ends
from netrig.topo.model import Topology, TopologyError

Net = ipaddress.IPv4Network
MAX_COST = 65535
MAX_HOPS = 64
MAX_PATHS = 16  # equal-cost paths enumerated at most
BACKBONE = "0.0.0.0"
DISTANCE = {"connected": 0, "static": 1, "ebgp": 20, "ospf": 110, "ibgp": 200}


@dataclass(frozen=True)
class NextHop:
    """Leave by `out` toward `peer`, the neighbour's interface on the same segment."""

    out: Iface
    peer: Iface

    @property
    def node(self) -> str:
        return self.peer.node

    @property
    def key(self) -> tuple[str, str, str]:
        """The order equal next hops are tried in: the neighbour's name, then the
        interfaces' (the path `choose_path` shows is the first)."""
        return (self.peer.node, self.out.name, self.peer.name)

    def __hash__(self) -> int:
        return hash((self.out.node, self.out.name, self.peer.node, self.peer.name))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NextHop) and (self.out.node, self.out.name, self.peer.node, self.peer.name) \
            == (other.out.node, other.out.name, other.peer.node, other.peer.name)


@dataclass(frozen=True)
class Entry:
    """A node's route to `prefix`: the protocol it came from, its next hops (none:
    connected), and what the protocol chose it by."""

    prefix: Net
    source: str  # connected, static, ospf, ebgp, ibgp
    nexthops: tuple[NextHop, ...] = ()
    metric: int = 0  # OSPF: the cost; iBGP: the OSPF cost to the exit
    as_path: tuple[int, ...] = ()
    exit: str | None = None  # iBGP: the router that leaves the AS

    @property
    def reason(self) -> str:
        if self.source == "ospf":
            return f"ospf cost {self.metric}"
        if self.source in ("ebgp", "ibgp"):
            path = " ".join(map(str, self.as_path))
            text = f"bgp AS path [{path}]"
            return text + (f", ospf cost {self.metric} to {self.exit}" if self.source == "ibgp" else "")
        return self.source


Fib = dict[str, dict[Net, Entry]]


@dataclass(frozen=True)
class PathChoice:
    """The way from src to dst: `hops` (as `plan.path` gives them), every equal-cost
    path (`alternatives`, the one shown first) and one line saying why."""

    src: str
    dst: str
    hops: list[Hop]
    alternatives: list[list[Hop]]
    why: str

    @property
    def ecmp(self) -> bool:
        return len(self.alternatives) > 1

    @property
    def nodes(self) -> list[str]:
        return nodes_of(self.src, self.hops)

    def node_paths(self) -> list[list[str]]:
        """Every equal path as node names, switches included."""
        return [nodes_of(self.src, hs) for hs in self.alternatives]


def nodes_of(src: str, hops: list[Hop]) -> list[str]:
    return [src, *(h.to for h in hops)]


# OSPF.
def iface_cost(topo: Topology, i: Iface) -> int:
    """The link's `cost`, else ceil(reference / the rate leaving by i); unrated: 1."""
    if i.link.spec.cost is not None:
        return int(i.link.spec.cost)
    rate = i.link.direction(i.end).rate_bps
    if not rate:
        return 1
    return max(1, min(MAX_COST, math.ceil(topo.routing.ospf.reference_bps / rate)))


def _domain(topo: Topology, node: str) -> tuple[int | None] | None:
    """The OSPF domain a router is in (its AS, or None without BGP); None: no OSPF."""
    r = topo.routing_of(node)
    return (r.asn,) if r.ospf_area is not None and topo.nodes.get(node) == "router" else None


def _area(topo: Topology, i: Iface) -> str:
    return i.link.spec.area or topo.routing_of(i.node).ospf_area or BACKBONE


@dataclass
class _Ospf:
    """One router's OSPF view: the areas it is in, its SPF per area, its stubs."""

    areas: set[str] = field(default_factory=set)
    # area -> node -> (cost, first next hops)
    spf: dict[str, dict[str, tuple[int, frozenset[NextHop]]]] = field(default_factory=dict)
    intra: dict[Net, tuple[int, frozenset[NextHop]]] = field(default_factory=dict)
    routes: dict[Net, tuple[int, frozenset[NextHop]]] = field(default_factory=dict)


def _ospf(plan: Plan) -> dict[str, _Ospf]:
    topo = plan.topo
    routers = [n for n in topo.nodes if _domain(topo, n) is not None]
    # Each router's OSPF interfaces (area, cost) and adjacencies per area.
    adj: dict[str, dict[str, list[tuple[NextHop, int]]]] = {r: {} for r in routers}
    stubs: dict[str, list[tuple[str, Net, int]]] = {}  # area -> (router, prefix, cost)
    state = {r: _Ospf() for r in routers}
    for r in routers:
        dom = _domain(topo, r)
        for i in plan.ifaces[r]:
            seg = plan.segments[i.segment]
            others = [j for j in seg.ifaces if j.node != r]
            outside = [j for j in others if topo.nodes[j.node] == "router" and _domain(topo, j.node) != dom]
            if others and len(outside) == len(others):
                continue  # an eBGP (or static) link: not in OSPF
            area, cost = _area(topo, i), iface_cost(topo, i)
            state[r].areas.add(area)
            if seg.subnet is not None:
                stubs.setdefault(area, []).append((r, seg.subnet, cost))
            for j in others:
                if _domain(topo, j.node) == dom and _area(topo, j) == area:
                    adj[r].setdefault(area, []).append((NextHop(i, j), cost))
        area = topo.routing_of(r).ospf_area or BACKBONE
        state[r].areas.add(area)
        if r in plan.loopbacks:
            stubs.setdefault(area, []).append((r, plan.loopbacks[r].network, 0))
    for r in routers:
        for area in state[r].areas:
            state[r].spf[area] = _spf(r, area, adj)
    # Intra-area routes: the cheapest stub in any of the router's areas.
    for r in routers:
        for area, dist in state[r].spf.items():
            for x, prefix, c in stubs.get(area, []):
                if x in dist:
                    _offer(state[r].intra, prefix, dist[x][0] + c, dist[x][1])
        state[r].routes = dict(state[r].intra)
    abrs = [r for r in routers if BACKBONE in state[r].areas and len(state[r].areas) > 1]
    # Inter-area: ABRs take other ABRs' intra-area routes over the backbone ...
    for b in abrs:
        for b2 in abrs:
            if b2 == b or b2 not in state[b].spf[BACKBONE] or _domain(topo, b2) != _domain(topo, b):
                continue
            to, hops = state[b].spf[BACKBONE][b2]
            for prefix, (c, _) in state[b2].intra.items():
                if prefix not in state[b].intra:
                    _offer(state[b].routes, prefix, to + c, hops)
    # ... and every other router adds its cost to an ABR of its area to the ABR's route
    # (an ABR summarises into the backbone only its intra-area routes).
    for r in routers:
        if r in abrs:
            continue
        for area, dist in state[r].spf.items():
            for b in abrs:
                if b not in dist or area not in state[b].areas:
                    continue
                theirs = state[b].intra if area == BACKBONE else state[b].routes
                for prefix, (c, _) in theirs.items():
                    if prefix not in state[r].intra:
                        _offer(state[r].routes, prefix, dist[b][0] + c, dist[b][1])
    return state


def _offer(table: dict[Net, tuple[int, frozenset[NextHop]]], prefix: Net, cost: int,
           hops: frozenset[NextHop]) -> None:
    """Keep the cheapest; equal costs pool their next hops."""
    old = table.get(prefix)
    if old is None or cost < old[0]:
        table[prefix] = (cost, hops)
    elif cost == old[0]:
        table[prefix] = (cost, old[1] | hops)


def _spf(src: str, area: str, adj: dict[str, dict[str, list[tuple[NextHop, int]]]]
         ) -> dict[str, tuple[int, frozenset[NextHop]]]:
    """Dijkstra in one area: each router's cost and every first hop of its cheapest paths."""
    dist: dict[str, int] = {src: 0}
    first: dict[str, set[NextHop]] = {src: set()}
    heap = [(0, src)]
    done: set[str] = set()
    while heap:
        d, n = heapq.heappop(heap)
        if n in done:
            continue
        done.add(n)
        for nh, c in adj.get(n, {}).get(area, []):
            v, nd = nh.node, d + c
            hops = first[n] if n != src else {nh}
            if v not in dist or nd < dist[v]:
                dist[v], first[v] = nd, set(hops)
                heapq.heappush(heap, (nd, v))
            elif nd == dist[v] and v not in done:
                first[v] |= hops
    return {n: (dist[n], frozenset(first[n])) for n in dist}


# BGP.
@dataclass(frozen=True)
class _Bgp:
    """A BGP route at one router: its AS path, how it was learnt (local, ebgp, ibgp),
    from which peer, the OSPF cost to that peer (iBGP) and the next hops."""

    as_path: tuple[int, ...]
    kind: str
    peer: str | None
    igp: int
    nexthops: frozenset[NextHop]
    peer_id: int = 0

    def rank(self) -> tuple:
        return (self.kind != "local", len(self.as_path), self.kind != "ebgp", self.igp, self.peer_id)


def _bgp(plan: Plan, ospf: dict[str, _Ospf]) -> dict[str, dict[Net, list[_Bgp]]]:
    """Each BGP router's best routes per prefix (the best first, then its multipath
    peers), worked out to a fixed point."""
    topo = plan.topo
    asn = {n: topo.routing_of(n).asn for n in topo.nodes if topo.nodes[n] == "router"}
    speakers = [n for n, a in asn.items() if a is not None]
    rid = {n: int(plan.loopbacks[n].ip) if n in plan.loopbacks else 0 for n in speakers}
    # Sessions into each router: (peer, kind, the next hops toward it, OSPF cost).
    into: dict[str, list[tuple[str, str, frozenset[NextHop], int]]] = {n: [] for n in speakers}
    for r in speakers:
        for i in plan.ifaces[r]:
            for j in plan.segments[i.segment].ifaces:
                if j.node != r and asn.get(j.node) is not None and asn[j.node] != asn[r]:
                    into[r].append((j.node, "ebgp", frozenset({NextHop(i, j)}), 0))
        for s in speakers:
            if s != r and asn[s] == asn[r] and s in plan.loopbacks and r in ospf:
                reach = ospf[r].routes.get(plan.loopbacks[s].network)
                if reach is not None:
                    into[r].append((s, "ibgp", reach[1], reach[0]))
    local: dict[str, dict[Net, _Bgp]] = {}
    for r in speakers:
        mine = {plan.segments[i.segment].subnet for i in plan.ifaces[r]} - {None}
        if r in plan.loopbacks:
            mine.add(plan.loopbacks[r].network)
        local[r] = {p: _Bgp((), "local", None, 0, frozenset()) for p in mine if p is not None}
    best: dict[str, dict[Net, list[_Bgp]]] = {r: {p: [b] for p, b in local[r].items()} for r in speakers}
    for _ in range(4 * len(speakers) + 8):
        new: dict[str, dict[Net, list[_Bgp]]] = {}
        for r in speakers:
            cands: dict[Net, list[_Bgp]] = {p: [b] for p, b in local[r].items()}
            for peer, kind, hops, igp in into[r]:
                for prefix, routes in best[peer].items():
                    b = routes[0]
                    if kind == "ibgp" and b.kind == "ibgp":
                        continue  # iBGP routes are not passed to iBGP peers
                    path = (asn[peer], *b.as_path) if kind == "ebgp" else b.as_path
                    if asn[r] in path:
                        continue  # a loop
                    cands.setdefault(prefix, []).append(_Bgp(path, kind, peer, igp, hops, rid[peer]))
            new[r] = {}
            for prefix, cs in cands.items():
                cs.sort(key=_Bgp.rank)
                top = cs[0]
                same = [c for c in cs if c.kind == top.kind and c.as_path == top.as_path and c.igp == top.igp]
                new[r][prefix] = same if top.kind != "local" else [top]
        if new == best:
            break
        best = new
    return best


# Forwarding.
def forwarding(plan: Plan) -> Fib:
    """Every host's and router's routes as the protocols (or the plan's static routes)
    install them."""
    cached = plan.__dict__.get("_routing_fib")
    if cached is not None:
        return cached
    topo = plan.topo
    ospf = _ospf(plan)
    bgp = _bgp(plan, ospf)
    fib: Fib = {}
    for node, kind in topo.nodes.items():
        if kind == "switch" or not plan.ifaces[node]:
            continue
        table: dict[Net, Entry] = {}
        for i in plan.ifaces[node]:
            subnet = plan.segments[i.segment].subnet
            if subnet is not None:
                table[subnet] = Entry(subnet, "connected")
        if node in plan.loopbacks:
            table[plan.loopbacks[node].network] = Entry(plan.loopbacks[node].network, "connected")
        if not topo.routing_of(node).dynamic:
            for r in plan.routes.get(node, []):
                nh = _static_hop(plan, node, r.dev, r.via)
                if nh is not None and r.dest not in table:
                    table[r.dest] = Entry(r.dest, "static", (nh,))
            fib[node] = table
            continue
        offers: dict[Net, list[Entry]] = {}
        for prefix, (cost, hops) in (ospf[node].routes if node in ospf else {}).items():
            if hops:
                offers.setdefault(prefix, []).append(Entry(prefix, "ospf", _sorted(hops), cost))
        for prefix, routes in bgp.get(node, {}).items():
            top = routes[0]
            if top.kind == "ebgp":
                hops = frozenset().union(*(b.nexthops for b in routes))
                offers.setdefault(prefix, []).append(Entry(prefix, "ebgp", _sorted(hops), 0, top.as_path))
            elif top.kind == "ibgp":
                hops = frozenset().union(*(b.nexthops for b in routes))
                if hops:
                    exits = sorted(b.peer or "" for b in routes)
                    offers.setdefault(prefix, []).append(
                        Entry(prefix, "ibgp", _sorted(hops), top.igp, top.as_path, ", ".join(exits)))
        for prefix, es in offers.items():
            if prefix not in table:
                table[prefix] = min(es, key=lambda e: DISTANCE[e.source])
        fib[node] = table
    plan.__dict__["_routing_fib"] = fib
    return fib


def _sorted(hops: frozenset[NextHop]) -> tuple[NextHop, ...]:
    return tuple(sorted(hops, key=lambda h: h.key))


def _static_hop(plan: Plan, node: str, dev: str, via: ipaddress.IPv4Address) -> NextHop | None:
    out = next((i for i in plan.ifaces[node] if i.name == dev), None)
    if out is None:
        return None
    peer = next((j for j in plan.segments[out.segment].ifaces if j.addr is not None and j.addr.ip == via), None)
    return NextHop(out, peer) if peer is not None else None


def lookup(table: dict[Net, Entry], addr: ipaddress.IPv4Address) -> Entry | None:
    """The longest prefix of the table holding addr."""
    best = None
    for prefix, e in table.items():
        if addr in prefix and (best is None or prefix.prefixlen > best.prefix.prefixlen):
            best = e
    return best


def step_hops(plan: Plan, nh: NextHop) -> list[Hop]:
    """The links from nh.out to nh.peer: the link itself, or across the segment's
    switches. (Leaving by nh.out's link only: the plan's static graph, `l3.Graph`,
    also walks a router's other links here, so between two routers that share a
    switch and a direct link it names the direct link for the switch's way.)"""
    first = Hop(nh.out.link, nh.out.node, nh.out.link.b if nh.out.end == 0 else nh.out.link.a, nh.out.end)
    seg = plan.segments[nh.out.segment]
    if not seg.switches:
        return [first]
    switches = set(seg.switches)
    prev: dict[str, Hop] = {first.to: first}
    todo = [first.to]
    while todo:
        n = todo.pop()
        for link in plan.topo.links:
            if n not in (link.a, link.b):
                continue
            m, d = (link.b, 0) if link.a == n else (link.a, 1)
            if m not in prev and m != nh.out.node:
                prev[m] = Hop(link, n, m, d)
                if m in switches:
                    todo.append(m)
    out, n = [], nh.peer.node
    while n in prev:
        out.append(prev[n])
        n = prev[n].frm
        if n == nh.out.node:
            break
    return out[::-1]


def next_hops(plan: Plan, node: str, dst: str) -> tuple[list[NextHop], Entry | None]:
    """Where `node` sends a packet for dst (its first address): the peer on a shared
    segment when dst is on it, else its route's next hops. ([], None): no route."""
    addr = plan.addr(dst)
    for i in plan.ifaces[node]:
        for j in plan.segments[i.segment].ifaces:
            if j.node == dst and j.addr is not None and j.addr.ip == addr:
                return [NextHop(i, j)], Entry(plan.segments[i.segment].subnet or Net("0.0.0.0/0"), "connected")
    e = lookup(forwarding(plan).get(node, {}), addr)
    return (list(e.nexthops), e) if e is not None else ([], None)


def _walk(plan: Plan, src: str, dst: str) -> tuple[list[list[NextHop]], list[Entry]]:
    """Every equal path as next hops (depth first, next hops in `NextHop.key` order, at
    most MAX_PATHS), and the routes the first path followed."""
    paths: list[list[NextHop]] = []
    used: list[Entry] = []
    problems: list[str] = []

    def go(node: str, trail: list[NextHop], seen: list[str], entries: list[Entry]) -> None:
        if len(paths) >= MAX_PATHS:
            return
        if node == dst:
            if not paths:
                used.extend(entries)
            paths.append(list(trail))
            return
        if len(trail) >= MAX_HOPS:
            problems.append(f"more than {MAX_HOPS} hops from {src} to {dst}")
            return
        if node != src and plan.topo.nodes[node] != "router":
            problems.append(f"{node} is a host: it does not forward toward {dst}")
            return
        nhs, entry = next_hops(plan, node, dst)
        if not nhs:
            problems.append(f"no route at {node} toward {dst} ({plan.addr(dst)})")
            return
        for nh in nhs:
            if nh.node in seen:
                problems.append(f"a routing loop: {' '.join([*seen, nh.node])}")
                continue
            go(nh.node, [*trail, nh], [*seen, nh.node], [*entries, entry] if entry else entries)

    go(src, [], [src], [])
    if not paths:
        raise TopologyError([f"no route from {src} to {dst}: {problems[0] if problems else 'unreachable'}"])
    return paths, used


def choose_path(plan: Plan, src: str, dst: str) -> PathChoice:
    """The path the routing chooses from src to dst: the first of the equal paths in
    `NextHop.key` order (neighbour names, then interface names)."""
    topo = plan.topo
    check_ends(topo, src, dst)
    if src == dst:
        return PathChoice(src, dst, [], [[]], "the same node")
    paths, used = _walk(plan, src, dst)
    alternatives = [[h for nh in p for h in step_hops(plan, nh)] for p in paths]
    return PathChoice(src, dst, alternatives[0], alternatives, _why(plan, paths[0], used, len(paths)))


def _why(plan: Plan, path: list[NextHop], used: list[Entry], n: int) -> str:
    """One line: the route of the first router on the way that a protocol chose."""
    routers = [nh.out.node for nh in path if plan.topo.nodes[nh.out.node] == "router"]
    via = "-".join(routers)
    chosen = next((e for e in used if e.source in ("ospf", "ebgp", "ibgp")), None)
    if chosen is None:
        static = any(e.source == "static" for e in used)
        text = (f"static routes (shortest delay) via {via}" if static and via
                else f"connected via {via}" if via else "one segment")
    elif chosen.source == "ospf":
        text = f"OSPF cost {chosen.metric} via {via}"
    else:
        text = f"BGP: AS path {' '.join(map(str, chosen.as_path)) or '(own AS)'}"
        if chosen.source == "ibgp":
            text += f", then OSPF cost {chosen.metric} to the exit {chosen.exit}"
        text += f"; via {via}"
    if n > 1:
        more = f"{MAX_PATHS} or more" if n >= MAX_PATHS else str(n)
        text += f" (ECMP: {more} equal paths, the first shown)"
    return text


def path_cost(plan: Plan, nodes: list[str]) -> str:
    """What a path (node names, switches included) costs in the terms of its first
    protocol: `OSPF cost 40`, `AS path 65002 65003`; '' for static routing."""
    topo = plan.topo
    l3 = [n for n in nodes if topo.nodes.get(n) != "switch"]
    routers = [n for n in l3 if topo.nodes.get(n) == "router"]
    if not routers or not any(topo.routing_of(r).dynamic for r in routers):
        return ""
    asns = [topo.routing_of(r).asn for r in routers]
    if len(set(asns)) > 1 and None not in asns:
        hops = [a for k, a in enumerate(asns) if k == 0 or a != asns[k - 1]][1:]
        return f"AS path {' '.join(map(str, hops))}"
    cost = 0
    for a, b in zip(l3, l3[1:]):
        if topo.nodes[a] != "router" or topo.nodes[b] != "router":
            continue
        out = [i for i in plan.ifaces[a] for j in plan.segments[i.segment].ifaces if j.node == b]
        if not out:
            return ""
        cost += min(iface_cost(topo, i) for i in out)
    return f"OSPF cost {cost}"


def routed(plan: Plan) -> bool:
    """Do protocols route this lab (any router runs FRR)?"""
    return bool(plan.topo.dynamic)

