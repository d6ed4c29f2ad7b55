"""What a plan is made of, and the L3 graph across its segments.

`Iface`, `Segment`, `Hop`, `Route` and `Plan` (`netrig.topo.plan` makes one and
re-exports them all); `Graph` joins the hosts and routers that share a segment,
with the one-way delay and the hops (switches included) between them, and
`edge_hops` gives an edge's hops; `RouteGraph` is the part of it static routes need
(`plan`'s paths walk `Graph`). Pure: nothing here touches the system.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from netrig.topo.model import Link, Topology, TopologyError


@dataclass
class Iface:
    node: str
    name: str
    link: Link
    end: int  # 0: the link's a end, 1: its b end
    segment: int = -1
    addr: ipaddress.IPv4Interface | None = None


@dataclass
class Segment:
    index: int
    switches: list[str] = field(default_factory=list)
    ifaces: list[Iface] = field(default_factory=list)
    subnet: ipaddress.IPv4Network | None = None


@dataclass(frozen=True)
class Hop:
    """One link crossed from `frm` to `to`; `d` is the link direction (0: a->b)."""

    link: Link
    frm: str
    to: str
    d: int


@dataclass
class Route:
    dest: ipaddress.IPv4Network  # 0.0.0.0/0 for a default route
    via: ipaddress.IPv4Address
    dev: str


@dataclass
class Plan:
    topo: Topology
    ifaces: dict[str, list[Iface]]  # node -> its interfaces
    segments: list[Segment]
    routes: dict[str, list[Route]]
    # Routers running OSPF or BGP: their loopback (/32 on lo, the router ID).
    loopbacks: dict[str, ipaddress.IPv4Interface] = field(default_factory=dict)

    def addr(self, node: str) -> ipaddress.IPv4Address:
        """The node's first address (its name resolves to it)."""
        for i in self.ifaces.get(node, []):
            if i.addr is not None:
                return i.addr.ip
        raise TopologyError([f"node '{node}' has no address (a switch, or not linked)"])

    def iface(self, link: Link, end: int) -> Iface | None:
        node = link.a if end == 0 else link.b
        return next((i for i in self.ifaces.get(node, []) if i.link is link), None)

    def hosts_file(self) -> str:
        lines = ["127.0.0.1 localhost", "::1 localhost"]
        for node, ifs in self.ifaces.items():
            names = [node]
            for i in ifs:
                if i.addr is not None:
                    lines.append(" ".join([str(i.addr.ip), *names, f"{node}-{i.name}"]))
                    names = []
            if node in self.loopbacks:
                lines.append(f"{self.loopbacks[node].ip} {node}-lo")
        return "\n".join(lines) + "\n"


def check_ends(topo: Topology, src: str, dst: str) -> None:
    """Traffic runs between two hosts or routers of the topology: TopologyError if not."""
    for n in (src, dst):
        if n not in topo.nodes:
            raise TopologyError([f"no node named '{n}'"])
        if topo.nodes[n] == "switch":
            raise TopologyError([f"'{n}' is a switch: traffic runs between hosts and routers"])


def mean_delay(link: Link) -> float:
    return (link.direction(0).delay_s + link.direction(1).delay_s) / 2


@dataclass
class Step:
    """Two hosts/routers on one segment: the one-way delay and hops between them."""

    to: str
    delay: float
    hops: int
    out: Iface  # leaves by this interface
    peer: Iface  # arrives at this one


@dataclass
class Edge(Step):
    """A step that can name its hops (`edge_hops`)."""

    prev: dict[str, Hop | None]  # the BFS tree from `out.node`, to rebuild the hops


Adjacency = dict[str, list[tuple[Link, str, float]]]  # node -> (link, neighbour, delay)


def adjacency(topo: Topology) -> Adjacency:
    adj: Adjacency = {n: [] for n in topo.nodes}
    for l in topo.links:
        delay = mean_delay(l)
        adj[l.a].append((l, l.b, delay))
        adj[l.b].append((l, l.a, delay))
    return adj


def segment_tree(adj: Adjacency, src: str, switches: set[str],
                 first: Link) -> dict[str, tuple[float, int, Hop | None]]:
    """Delay, hop count and last hop to every node reachable from src through the
    segment's switches only, leaving src by its link `first` onto the segment (a
    segment is a tree, so the first way found is the way; src's other links, say a
    direct one to a router it also meets on the segment, are other segments)."""
    seen: dict[str, tuple[float, int, Hop | None]] = {src: (0.0, 0, None)}
    todo = [src]
    while todo:
        n = todo.pop()
        if n != src and n not in switches:
            continue
        d, h, _ = seen[n]
        for l, m, delay in adj[n]:
            if n == src and l.name != first.name:  # by name: a live change replaces a Link
                continue
            if m not in seen:
                seen[m] = (d + delay, h + 1, Hop(l, n, m, 0 if l.a == n else 1))
                todo.append(m)
    return seen


class Graph:
    """The L3 graph: edges between the hosts and routers that share a segment, each
    node's made when it is first asked for (`graph(node)`, in segment order): a path
    walks only its source's and the routers' edges, so a segment of a thousand hosts
    costs a path its source's thousand edges, not a million."""

    def __init__(self, topo: Topology, ifaces: dict[str, list[Iface]], segments: list[Segment]) -> None:
        self.adj = adjacency(topo)
        self.ifaces = ifaces
        self.segments = segments
        self._switches: dict[int, set[str]] = {}
        self._made: dict[str, list[Edge]] = {}

    def switches(self, seg: Segment) -> set[str]:
        if seg.index not in self._switches:
            self._switches[seg.index] = set(seg.switches)
        return self._switches[seg.index]

    def own(self, node: str) -> list[Iface]:
        """The node's interfaces in segment order (the order of its edges)."""
        return sorted(self.ifaces.get(node, []), key=lambda i: i.segment)

    def __call__(self, node: str) -> list[Edge]:
        if node not in self._made:
            self._made[node] = [e for i in self.own(node) for e in self._from(i, self.segments[i.segment].ifaces)]
        return self._made[node]

    def _from(self, i: Iface, to: list[Iface]) -> list[Edge]:
        """Edges from interface i to those of `to` on its segment, by the segment's tree
        from i."""
        switches = self.switches(self.segments[i.segment])
        tree = segment_tree(self.adj, i.node, switches, i.link)
        prev = {n: t[2] for n, t in tree.items()}
        out = []
        for j in to:
            if j is i or j.node not in tree:
                continue
            if not switches and j.link is not i.link:
                continue
            delay, hops, _ = tree[j.node]
            out.append(Edge(j.node, delay, hops, i, j, prev))
        return out


class RouteGraph(Graph):
    """The part of the L3 graph that static routes need: steps only to routers and to
    nodes on more than one segment (`members`). A node on one segment alone is never the
    closest member of a segment another node routes to: the router it is reached
    through is on that segment too, and closer; nor does it forward. On a segment where
    every node has one interface (a tree with the nodes as leaves, one way between any
    two), the way from each member to a needed one is read off one tree from the needed
    one, its delay summed from the member's end as the member's own tree would (the same
    float): trees from the few routers, not one per host."""

    def __init__(self, topo: Topology, ifaces: dict[str, list[Iface]], segments: list[Segment]) -> None:
        super().__init__(topo, ifaces, segments)
        kinds = topo.nodes
        needed = {n for n, ifs in ifaces.items()
                  if kinds[n] == "router" or len({i.segment for i in ifs}) > 1}
        self._members = [[j for j in seg.ifaces if j.node in needed] for seg in segments]
        self._simple = [len({j.node for j in seg.ifaces}) == len(seg.ifaces) for seg in segments]
        self._trees: dict[int, dict[str, tuple[float, int, Hop | None]]] = {}  # id(iface) -> its tree
        self._steps: dict[str, list[Step]] = {}
        self._delay = {l.name: delay for links in self.adj.values() for l, _, delay in links}

    def members(self, seg: Segment) -> list[Iface]:
        """The segment's interfaces of routers and of nodes on more than one segment."""
        return self._members[seg.index]

    def __call__(self, node: str) -> list[Step]:  # type: ignore[override]
        if node not in self._steps:
            out: list[Step] = []
            for i in self.own(node):
                to = self._members[i.segment]
                if self._simple[i.segment]:
                    out += self._steps_to(i, to)
                else:
                    out += self._from(i, to)
            self._steps[node] = out
        return self._steps[node]

    def _steps_to(self, i: Iface, to: list[Iface]) -> list[Step]:
        switches = self.switches(self.segments[i.segment])
        out = []
        for j in to:
            if j is i or (not switches and j.link is not i.link):
                continue
            tree = self._tree(j, switches)
            if i.node not in tree:
                continue
            delay, hops, n = 0.0, 0, i.node
            while n != j.node:  # from i's end, as segment_tree from i sums it
                h = tree[n][2]
                assert h is not None
                delay += self._delay[h.link.name]
                hops += 1
                n = h.frm
            out.append(Step(j.node, delay, hops, i, j))
        return out

    def _tree(self, j: Iface, switches: set[str]) -> dict[str, tuple[float, int, Hop | None]]:
        if id(j) not in self._trees:
            self._trees[id(j)] = segment_tree(self.adj, j.node, switches, j.link)
        return self._trees[id(j)]


def edge_hops(e: Edge) -> list[Hop]:
    out = []
    n = e.to
    while (h := e.prev.get(n)) is not None:
        out.append(h)
        n = h.frm
    return out[::-1]
