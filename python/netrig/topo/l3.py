"""What a plan is made of, and the L3 graph across its segments.

`Iface`, `Segment`, `Hop`, `Route` and `Plan` (`netrig.topo.plan` makes one and
re-exports them all); `l3_graph` joins the hosts and routers that share a segment,
with the one-way delay and the hops (switches included) between them, and
`edge_hops` gives an edge's hops. Both the static routes (`plan`) and the protocols'
(`routing`) walk this graph. Pure: nothing here touches the system.
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
class Edge:
    """Two hosts/routers on one segment: the one-way delay and hops between them."""

    to: str
    delay: float
    hops: int
    out: Iface  # leaves by this interface
    peer: Iface  # arrives at this one
    prev: dict[str, Hop | None]  # the BFS tree from `out.node`, to rebuild the hops


Adjacency = dict[str, list[tuple[Link, str, float]]]  # node -> (link, neighbour, delay)


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


def l3_graph(topo: Topology, ifaces: dict[str, list[Iface]], segments: list[Segment]) -> dict[str, list[Edge]]:
    """Edges between the hosts and routers that share a segment."""
    adj: Adjacency = {n: [] for n in topo.nodes}
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


def edge_hops(e: Edge) -> list[Hop]:
    out = []
    n = e.to
    while (h := e.prev.get(n)) is not None:
        out.append(h)
        n = h.frm
    return out[::-1]
