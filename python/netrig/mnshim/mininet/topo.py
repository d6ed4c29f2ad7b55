"""mininet.topo: a topology as Mininet 2.3 describes one, before any network exists.

Owns `Topo` (a multigraph of named nodes with option dicts, and links with their
options and port numbers) and the topologies `mn` names: `SingleSwitchTopo`,
`SingleSwitchReversedTopo`, `MinimalTopo`, `LinearTopo`. Pure: no system call; the
network is built from it by mininet.net.

What scripts rely on, kept as Mininet has it:
- `build(*args, **params)` is called by the constructor (after `hopts`, `sopts` and
  `lopts`, the default options of hosts, switches and links, are taken out);
- ports are numbered in the order links are added, hosts from 0 and switches from 1,
  unless given (`addLink(h, s, port1=0, port2=5)`);
- `hosts()`, `switches()` and `nodes()` are in natural order (s2 before s10) unless
  sort=False; `links()` is in the graph's order (each link once, under the node pair
  whose first name sorts first as a string) unless sort=True, which sorts naturally by
  the (node1, node2) names; a link's info dict holds its options plus node1, node2,
  port1 and port2; several links between two nodes have keys 1, 2, ...;
- `port(src, dst)` is a (sport, dport) tuple for one link, a list of them for several
  (an empty list for none).
"""

from __future__ import annotations

from netrig.errors import NetrigError

from .util import irange, natural, naturalSeq


class TopoError(NetrigError):
    """A node or link the topology does not have."""


class MultiGraph:
    """Nodes with attribute dicts, and edges between them with a key and an attribute
    dict each: the part of networkx.MultiGraph that Topo uses. `node[name]` is a node's
    attributes; `edge[a][b]` (the same dict as `edge[b][a]`) maps keys to attributes."""

    def __init__(self):
        self.node: dict = {}
        self.edge: dict = {}

    def add_node(self, node, attr_dict=None, **attrs) -> None:
        """Adds (or replaces) a node; attrs are merged into attr_dict, which is kept."""
        attr_dict = {} if attr_dict is None else attr_dict
        attr_dict.update(attrs)
        self.node[node] = attr_dict

    def add_edge(self, src, dst, key=None, attr_dict=None, **attrs):
        """Adds an edge (and its nodes if new); returns its key, the next whole number
        after those between the two nodes when not given."""
        attr_dict = {} if attr_dict is None else attr_dict
        attr_dict.update(attrs)
        for n in (src, dst):
            self.node.setdefault(n, {})
            self.edge.setdefault(n, {})
        between = self.edge[src].setdefault(dst, {})
        self.edge[dst][src] = between
        if key is None:
            key = 1 + max([0, *(k for k in between if isinstance(k, int))])
        between[key] = attr_dict
        return key

    def nodes(self, data: bool = False):
        """The nodes (a view of their names, or of (name, attrs) with data)."""
        return self.node.items() if data else self.node.keys()

    def edges_iter(self, data: bool = False, keys: bool = False):
        """Each edge once: (src, dst[, key][, attrs]) with src <= dst as strings."""
        for src, row in self.edge.items():
            for dst, between in row.items():
                if src > dst:
                    continue  # the same edge, seen from its other end
                for key, attrs in between.items():
                    yield (src, dst) + ((key,) if keys else ()) + ((attrs,) if data else ())

    def edges(self, data: bool = False, keys: bool = False) -> list:
        return list(self.edges_iter(data=data, keys=keys))

    def __getitem__(self, node):
        """{neighbour: {key: attrs}} of a node."""
        return self.edge[node]

    def __len__(self) -> int:
        return len(self.node)

    def convertTo(self, cls, data: bool = False, keys: bool = False):
        """A new graph of a networkx.MultiGraph-like class `cls` with these nodes and
        edges (and their data, and keys, when asked)."""
        g = cls()
        g.add_nodes_from(self.nodes(data=data))
        g.add_edges_from(self.edges(data=data or keys, keys=keys))
        return g


class Topo:
    """A topology: hosts and switches by name, and the links between them. Subclasses
    describe theirs in `build`, which the constructor calls with its arguments."""

    def __init__(self, *args, **params):
        self.g = MultiGraph()
        self.hopts = params.pop("hopts", {})
        self.sopts = params.pop("sopts", {})
        self.lopts = params.pop("lopts", {})
        self.ports: dict = {}  # ports[node][port] = (peer, peer's port)
        self.build(*args, **params)

    def build(self, *args, **params):
        """Override to add this topology's nodes and links."""

    def addNode(self, name: str, **opts) -> str:
        """Adds a node with options `opts`; returns its name."""
        self.g.add_node(name, **opts)
        return name

    def addHost(self, name: str, **opts) -> str:
        """Adds a host (with hopts when given no options); returns its name."""
        if not opts and self.hopts:
            opts = self.hopts
        return self.addNode(name, **opts)

    def addSwitch(self, name: str, **opts) -> str:
        """Adds a switch (with sopts when given no options); returns its name."""
        if not opts and self.sopts:
            opts = self.sopts
        return self.addNode(name, isSwitch=True, **opts)

    def addLink(self, node1: str, node2: str, port1=None, port2=None, key=None, **opts):
        """Links two nodes (with lopts when given no options), numbering the ports not
        given; returns the link's key."""
        if not opts and self.lopts:
            opts = self.lopts
        port1, port2 = self.addPort(node1, node2, port1, port2)
        info = dict(opts)
        info.update(node1=node1, node2=node2, port1=port1, port2=port2)
        return self.g.add_edge(node1, node2, key, info)

    def nodes(self, sort: bool = True) -> list:
        """Every node's name, in natural order unless sort=False (then as added)."""
        return self.sorted(self.g.nodes()) if sort else list(self.g.nodes())

    def isSwitch(self, n: str) -> bool:
        return bool(self._node(n).get("isSwitch", False))

    def switches(self, sort: bool = True) -> list:
        return [n for n in self.nodes(sort) if self.isSwitch(n)]

    def hosts(self, sort: bool = True) -> list:
        return [n for n in self.nodes(sort) if not self.isSwitch(n)]

    def iterLinks(self, withKeys: bool = False, withInfo: bool = False):
        """Each link as (node1, node2[, key][, info]), node1 and node2 as added."""
        for _, _, key, info in self.g.edges_iter(data=True, keys=True):
            yield ((info["node1"], info["node2"]) + ((key,) if withKeys else ())
                   + ((info,) if withInfo else ()))

    def links(self, sort: bool = False, withKeys: bool = False, withInfo: bool = False) -> list:
        """The links as iterLinks gives them; sort=True orders them naturally by their
        node names (and key), leaving each link's (node1, node2) order alone."""
        links = list(self.iterLinks(withKeys, withInfo))
        if sort:
            width = 3 if withKeys else 2
            links.sort(key=lambda l: naturalSeq(l[:width]))
        return links

    def addPort(self, src: str, dst: str, sport=None, dport=None) -> tuple:
        """Records a link's ports, numbering those not given after the node's ports
        so far (hosts from 0, switches from 1); returns (sport, dport)."""
        src_ports = self.ports.setdefault(src, {})
        dst_ports = self.ports.setdefault(dst, {})
        if sport is None:
            sport = len(src_ports) + (1 if self.isSwitch(src) else 0)
        if dport is None:
            dport = len(dst_ports) + (1 if self.isSwitch(dst) else 0)
        src_ports[sport] = (dst, dport)
        dst_ports[dport] = (src, sport)
        return sport, dport

    def port(self, src: str, dst: str):
        """(port on src, port on dst) of the link between them; a list of such pairs
        when there are several links (or none)."""
        pairs = [(sport, peer_port) for sport, (peer, peer_port) in self.ports.get(src, {}).items()
                 if peer == dst]
        return pairs[0] if len(pairs) == 1 else pairs

    def _linkEntry(self, src: str, dst: str, key=None):
        try:
            between = self.g[src][dst]
        except KeyError:
            raise TopoError(f"the topology has no link between {src} and {dst}") from None
        if key is None:
            key = min(between)
        elif key not in between:
            raise TopoError(f"the topology has no link {key} between {src} and {dst} "
                            f"(keys: {', '.join(map(str, between))})")
        return between, key

    def linkInfo(self, src: str, dst: str, key=None) -> dict:
        """The info dict of the link between src and dst (the first one, or `key`)."""
        between, key = self._linkEntry(src, dst, key)
        return between[key]

    def setlinkInfo(self, src: str, dst: str, info: dict, key=None) -> None:
        between, key = self._linkEntry(src, dst, key)
        between[key] = info

    def nodeInfo(self, name: str) -> dict:
        """A node's options (isSwitch=True for a switch)."""
        return self._node(name)

    def setNodeInfo(self, name: str, info: dict) -> None:
        self.g.node[name] = info

    def convertTo(self, cls, data: bool = True, keys: bool = True):
        """The graph as a networkx.MultiGraph-like `cls`, with data and keys by default."""
        return self.g.convertTo(cls, data=data, keys=keys)

    def _node(self, name: str) -> dict:
        try:
            return self.g.node[name]
        except KeyError:
            raise TopoError(f"the topology has no node '{name}'") from None

    @staticmethod
    def sorted(items) -> list:
        """Items in natural order: h2 before h10."""
        return sorted(items, key=natural)


class SingleSwitchTopo(Topo):
    """One switch, s1, and k hosts h1..hk on it."""

    def build(self, k: int = 2, **_opts):
        self.k = k
        switch = self.addSwitch("s1")
        for h in irange(1, k):
            self.addLink(self.addHost(f"h{h}"), switch)


class SingleSwitchReversedTopo(Topo):
    """SingleSwitchTopo with the switch's ports reversed: h1 on port k, hk on port 1."""

    def build(self, k: int = 2):
        self.k = k
        switch = self.addSwitch("s1")
        for h in irange(1, k):
            self.addLink(self.addHost(f"h{h}"), switch, port1=0, port2=k - h + 1)


class MinimalTopo(SingleSwitchTopo):
    """Two hosts on one switch."""

    def build(self):
        return SingleSwitchTopo.build(self, k=2)


class LinearTopo(Topo):
    """k switches in a line, s1..sk, each with n hosts: h1..hk when n is 1, else
    h1s1..hns1, h1s2... (host j of switch i is hjsi)."""

    def build(self, k: int = 2, n: int = 1, **_opts):
        self.k, self.n = k, n
        previous = None
        for i in irange(1, k):
            switch = self.addSwitch(f"s{i}")
            for j in irange(1, n):
                self.addLink(self.addHost(f"h{i}" if n == 1 else f"h{j}s{i}"), switch)
            if previous:
                self.addLink(switch, previous)
            previous = switch
