"""A running netrig lab (`netrig up`) seen as a Mininet network: `Mininet.attach(prefix)`.

What `netrig cli --prefix P` gives the `mininet>` prompt: the lab's hosts and routers as
hosts, its switches as switches (ports named as netrig names them, `s0-p1`), its links
with both ends, each node's commands in a shell of its own in the node's namespace.
Nothing is built and nothing is taken down: `stop()` ends the shells it started and
leaves the lab to `netrig down`. `set_link` is netrig's `link set` (the lab's topology
file must still be the one it was built from).
"""

from __future__ import annotations

from typing import Any

from netrig.lab import build as builder
from netrig.lab import netns
from netrig.lab.live import LiveLink
from netrig.lab.network import Network
from netrig.lab.state import LabError, LabState

from mininet import _lab
from mininet.link import Intf, Link
from mininet.net import Mininet
from mininet.node import Host, Switch


class AttachedLab:
    """The lab protocol nodes use (`mininet._lab.MnLab`'s), over a lab that exists."""

    def __init__(self, prefix: str) -> None:
        self.st = LabState.load(prefix)
        if self.st.status != "up":
            raise LabError(f"lab '{prefix}' is {self.st.status}, not up")
        self.prefix = prefix
        self.sw_ns = f"{prefix}-{builder.SW}"
        self.network = Network.attach(prefix)
        self.bindir = self.st.dir / "bin"
        self.shells: list = []
        self.cgroups: list = []
        self.realized, self.batching, self.stopped = True, False, False

    def add_node(self, name: str, kind: str) -> str:
        return self.st.node_ns[name]

    def flush(self) -> None:
        pass

    def ip(self, ns: str | None, lines: list[str]) -> str:
        try:
            netns.ip_batch(lines, ns)
        except netns.NetnsError as e:
            return str(e)
        return ""

    def stop(self, notes: list[str] | None = None) -> list[str]:
        _lab.hangup(self.shells)
        self.stopped = True
        return []


class AttachedMininet(Mininet):
    def __init__(self, prefix: str) -> None:  # noqa: super().__init__ would build a lab
        self.lab = AttachedLab(prefix)
        self.prefix = prefix
        self.hosts, self.switches, self.controllers, self.links = [], [], [], []
        self.nameToNode: dict[str, Any] = {}
        self.built, self.topo, self.terms = True, None, []
        plan = self.lab.network.plan
        topo = plan.topo
        with _lab.using(self.lab):  # type: ignore[arg-type]
            for name, kind in topo.nodes.items():
                node = Switch(name) if kind == "switch" else Host(name)
                (self.switches if kind == "switch" else self.hosts).append(node)
                self.nameToNode[name] = node
        ends = builder._ends(plan, prefix)
        for i, l in enumerate(topo.links):
            link = Link.__new__(Link)
            link.live = LiveLink(l.name, l.a, ends[i][0].dev, l.b, ends[i][1].dev, None, made=True)
            link.fast, link._deferred = True, False
            intfs = []
            for e, node_name in enumerate((l.a, l.b)):
                node = self.nameToNode[node_name]
                iface = plan.iface(l, e)
                intf = Intf(ends[i][e].dev, node=node, link=link, up=None)
                if iface is not None:
                    intf.ip, intf.prefixLen = str(iface.addr.ip), iface.addr.network.prefixlen
                intfs.append(intf)
            link.intf1, link.intf2 = intfs
            self.links.append(link)

    def set_link(self, node1: str, node2: str, dir: str | None = None, **params: Any) -> None:
        self.lab.network.set_link(node1, node2, dir=dir, **params)

    def build(self) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self) -> None:
        self.lab.stop()
        for n in self.hosts + self.switches:
            n.cleanup()


def attach(prefix: str) -> Mininet:
    return AttachedMininet(prefix)
