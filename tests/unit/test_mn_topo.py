"""netrig's mininet.topo and mininet.topolib: the nodes, links, keys, ports and orders
Mininet 2.3 gives. The same topologies are described by Debian's Mininet (run under
/usr/bin/python3, skipped where it is not installed) and by ours, and must agree to the
byte; a few are also written out here, so the test means something without Mininet."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import netrig
import pytest

SHIM = Path(netrig.__file__).resolve().parent / "mnshim"
if str(SHIM) not in sys.path:
    sys.path.insert(0, str(SHIM))

import mininet  # noqa: E402  (netrig's, from SHIM)
from mininet.topo import (  # noqa: E402
    LinearTopo,
    MinimalTopo,
    MultiGraph,
    SingleSwitchReversedTopo,
    SingleSwitchTopo,
    Topo,
    TopoError,
)
from mininet.topolib import TorusTopo, TreeNet, TreeTopo  # noqa: E402

DEBIAN_PY = Path("/usr/bin/python3")

# One script, run by both implementations: every view of each topology, as JSON.
DUMP = r'''
import json
from mininet.topo import (SingleSwitchTopo, SingleSwitchReversedTopo, MinimalTopo,
                          LinearTopo, Topo)
from mininet.topolib import TreeTopo, TorusTopo

class Multi(Topo):
    def build(self):
        s1 = self.addSwitch('s1')
        s10 = self.addSwitch('s10', dpid='a')
        h2 = self.addHost('h2', ip='10.0.0.2/8')
        a = self.addHost('a')
        self.addLink(h2, s1, bw=10)
        self.addLink(s1, h2, delay='5ms')
        self.addLink(s10, s1)
        self.addLink(a, s10, port1=3, port2=7, key='k')
        self.addLink(s1, s10)

class Defaults(Topo):
    def build(self):
        self.addLink(self.addHost('h1'), self.addSwitch('s1'))
        self.addLink(self.addHost('h2', ip='10.9.9.9/8'), 's1', bw=5)

cases = {
    "single3": (SingleSwitchTopo, (3,), {}), "rev4": (SingleSwitchReversedTopo, (4,), {}),
    "min": (MinimalTopo, (), {}), "lin3": (LinearTopo, (3,), {}),
    "lin3_2": (LinearTopo, (3, 2), {}), "lin12": (LinearTopo, (12,), {}),
    "tree23": (TreeTopo, (2, 3), {}), "tree32": (TreeTopo, (3, 2), {}),
    "torus33": (TorusTopo, (3, 3), {}), "torus342": (TorusTopo, (3, 4, 2), {}),
    "multi": (Multi, (), {}),
    "defaults": (Defaults, (), dict(hopts={'cpu': .5}, sopts={'stp': 1}, lopts={'bw': 1})),
}
out = {}
for name, (cls, args, kw) in cases.items():
    t = cls(*args, **kw)
    out[name] = {
        "nodes": t.nodes(), "nodes_unsorted": list(t.nodes(sort=False)),
        "hosts": t.hosts(), "switches": t.switches(), "hosts_unsorted": t.hosts(sort=False),
        "links": t.links(), "links_sorted": t.links(sort=True, withKeys=True, withInfo=True),
        "links_keys": t.links(withKeys=True), "links_info": t.links(withInfo=True),
        "iter": list(t.iterLinks(withKeys=True)),
        "ports": {n: {str(p): v for p, v in d.items()} for n, d in t.ports.items()},
        "port": {"%s,%s" % (a, b): t.port(a, b) for a, b in t.links()},
        "linkinfo": [t.linkInfo(a, b) for a, b in t.links()],
        "nodeinfo": {n: t.nodeInfo(n) for n in t.nodes()},
        "edges": t.g.edges(data=True, keys=True), "len": len(t.g),
    }
print(json.dumps(out, sort_keys=True))
'''


def _debian_has_mininet() -> bool:
    if not DEBIAN_PY.exists():
        return False
    r = subprocess.run([str(DEBIAN_PY), "-c", "import mininet.topolib"], capture_output=True,
                       timeout=60, check=False)
    return r.returncode == 0


def _dump(python: str, path: list[str]) -> dict:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(path)}
    r = subprocess.run([python, "-c", DUMP], capture_output=True, text=True, timeout=60,
                       check=False, env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_every_view_of_every_topology_is_debian_minines():
    if not _debian_has_mininet():
        pytest.skip("Debian's Mininet is not installed (/usr/bin/python3 -c 'import mininet')")
    theirs = _dump(str(DEBIAN_PY), [])
    ours = _dump(sys.executable, [str(SHIM), str(SHIM.parents[1])])
    assert ours.keys() == theirs.keys()
    for name in theirs:
        assert ours[name] == theirs[name], name


def test_ours_answers_import_mininet():
    assert Path(mininet.__file__).resolve().parent == SHIM / "mininet"


def test_single_switch():
    t = SingleSwitchTopo(3)
    assert t.hosts() == ["h1", "h2", "h3"]
    assert t.switches() == ["s1"]
    assert t.links() == [("h1", "s1"), ("h2", "s1"), ("h3", "s1")]
    # hosts number their ports from 0, switches from 1
    assert [t.port(h, "s1") for h in t.hosts()] == [(0, 1), (0, 2), (0, 3)]
    assert t.port("s1", "h2") == (2, 0)
    assert t.isSwitch("s1") and not t.isSwitch("h1")
    assert t.k == 3
    assert SingleSwitchTopo().hosts() == ["h1", "h2"]


def test_reversed_ports():
    t = SingleSwitchReversedTopo(k=3)
    assert [t.port(h, "s1") for h in t.hosts()] == [(0, 3), (0, 2), (0, 1)]
    assert t.linkInfo("h1", "s1") == {"node1": "h1", "node2": "s1", "port1": 0, "port2": 3}


def test_minimal():
    t = MinimalTopo()
    assert t.nodes() == ["h1", "h2", "s1"]
    assert t.links() == [("h1", "s1"), ("h2", "s1")]


def test_linear_names_and_links():
    t = LinearTopo(3)
    assert t.hosts() == ["h1", "h2", "h3"]
    assert t.links(sort=True) == [("h1", "s1"), ("h2", "s2"), ("h3", "s3"),
                                  ("s2", "s1"), ("s3", "s2")]
    assert t.port("s2", "s1") == (2, 2)
    t = LinearTopo(k=3, n=2)  # host j of switch i is hjsi
    assert t.hosts() == ["h1s1", "h1s2", "h1s3", "h2s1", "h2s2", "h2s3"]
    assert t.switches() == ["s1", "s2", "s3"]
    assert ("h2s3", "s3") in t.links()
    assert t.port("s3", "s2") == (3, 4)
    # natural order: s2 before s10
    assert LinearTopo(11).switches()[:3] == ["s1", "s2", "s3"]
    assert LinearTopo(11).switches()[-1] == "s11"


def test_tree_numbers_depth_first():
    t = TreeTopo(depth=2, fanout=2)
    assert t.switches() == ["s1", "s2", "s3"]
    assert t.hosts() == ["h1", "h2", "h3", "h4"]
    assert sorted(t.links()) == sorted([("s1", "s2"), ("s2", "h1"), ("s2", "h2"),
                                        ("s1", "s3"), ("s3", "h3"), ("s3", "h4")])
    assert t.port("s1", "s3") == (2, 3)  # s3's hosts were linked first
    assert len(TreeTopo(depth=2, fanout=32).hosts()) == 1024  # tree1024


def test_torus():
    t = TorusTopo(3, 3)
    assert len(t.switches()) == 9 and len(t.hosts()) == 9
    assert t.switches()[:2] == ["s1x1", "s1x2"]
    assert t.nodeInfo("s2x3") == {"isSwitch": True, "dpid": "203"}
    assert len(t.links()) == 9 + 18
    assert TorusTopo(3, 3, n=2).hosts()[:2] == ["h1x1x1", "h1x1x2"]
    with pytest.raises(TopoError, match="3 or more"):
        TorusTopo(2, 3)


def test_build_gets_the_constructor_arguments_and_default_options():
    seen = {}

    class Mine(Topo):
        def build(self, a, b=2, **params):
            seen.update(a=a, b=b, params=params)
            self.addHost("h1")
            self.addHost("h2", ip="10.0.0.9/8")
            self.addSwitch("s1")
            self.addLink("h1", "s1")
            self.addLink("h2", "s1", bw=10)

    t = Mine(1, b=3, extra=4, hopts={"cpu": 0.5}, sopts={"stp": 1}, lopts={"delay": "1ms"})
    assert seen == {"a": 1, "b": 3, "params": {"extra": 4}}
    # the defaults apply only to a node or link given no options of its own
    assert t.nodeInfo("h1") == {"cpu": 0.5}
    assert t.nodeInfo("h2") == {"ip": "10.0.0.9/8"}
    assert t.nodeInfo("s1") == {"isSwitch": True, "stp": 1}
    assert t.linkInfo("h1", "s1")["delay"] == "1ms"
    assert "delay" not in t.linkInfo("h2", "s1") and t.linkInfo("s1", "h2")["bw"] == 10


def test_several_links_between_two_nodes():
    t = Topo()
    t.addHost("h1")
    t.addSwitch("s1")
    assert t.addLink("h1", "s1") == 1
    assert t.addLink("s1", "h1", bw=5) == 2
    assert t.port("h1", "s1") == [(0, 1), (1, 2)]
    assert t.port("h1", "nobody") == []
    assert t.linkInfo("h1", "s1")["port2"] == 1  # the lowest key
    assert t.linkInfo("h1", "s1", key=2)["bw"] == 5
    assert t.links(withKeys=True) == [("h1", "s1", 1), ("s1", "h1", 2)]
    assert t.addLink("h1", "s1", key="x") == "x"
    assert t.links(withKeys=True)[-1] == ("h1", "s1", "x")
    assert t.linkInfo("h1", "s1", key="x")["port1"] == 2
    t.setlinkInfo("h1", "s1", {"node1": "h1", "node2": "s1", "note": 1}, key=2)
    assert t.linkInfo("s1", "h1", key=2)["note"] == 1
    t.setNodeInfo("h1", {"ip": "10.1.1.1/8"})
    assert t.nodeInfo("h1") == {"ip": "10.1.1.1/8"}


def test_mistakes_name_what_is_missing():
    t = MinimalTopo()
    with pytest.raises(TopoError, match="no link between h1 and h2"):
        t.linkInfo("h1", "h2")
    with pytest.raises(TopoError, match="no link 9 between h1 and s1"):
        t.linkInfo("h1", "s1", key=9)
    with pytest.raises(TopoError, match="no node 'h9'"):
        t.addLink("h9", "s1")


def test_multigraph_and_convert():
    g = MultiGraph()
    g.add_node("a", {"x": 1}, y=2)
    assert g.add_edge("a", "b") == 1 and g.add_edge("b", "a", w=3) == 2
    assert g.edges() == [("a", "b"), ("a", "b")]
    assert g.edges(data=True, keys=True) == [("a", "b", 1, {}), ("a", "b", 2, {"w": 3})]
    assert g["b"]["a"] is g["a"]["b"] and len(g) == 2

    class Other:  # the two methods of networkx.MultiGraph convertTo calls
        def __init__(self):
            self.nodes, self.edges = [], []

        def add_nodes_from(self, nodes):
            self.nodes += list(nodes)

        def add_edges_from(self, edges):
            self.edges += list(edges)

    c = MinimalTopo().convertTo(Other)
    assert ("s1", {"isSwitch": True}) in c.nodes
    assert ("h1", "s1", 1, {"node1": "h1", "node2": "s1", "port1": 0, "port2": 1}) in c.edges


def test_treenet_builds_through_mininet_net(monkeypatch):
    """TreeNet hands a TreeTopo and its keywords to mininet.net.Mininet, imported only
    then (here a stand-in module, so nothing is built)."""
    import types

    made = {}
    fake = types.ModuleType("mininet.net")
    fake.Mininet = lambda topo, **kw: made.update(topo=topo, kw=kw) or "net"
    monkeypatch.setitem(sys.modules, "mininet.net", fake)
    monkeypatch.setattr(mininet, "net", fake, raising=False)
    assert TreeNet(depth=2, fanout=3, waitConnected=True) == "net"
    assert len(made["topo"].hosts()) == 9 and made["kw"] == {"waitConnected": True}
