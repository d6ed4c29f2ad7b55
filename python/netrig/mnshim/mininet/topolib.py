"""mininet.topolib: Mininet 2.3's library topologies, `TreeTopo` and `TorusTopo`, and
`TreeNet` (a Mininet network of a tree).

Pure, like mininet.topo: `TreeNet` imports mininet.net only when called, so importing
this module builds and imports nothing of the running lab.
"""

from __future__ import annotations

from .topo import Topo, TopoError


class TreeTopo(Topo):
    """A tree of switches `depth` levels deep, each with `fanout` children, and hosts as
    leaves: switches s1.. and hosts h1.. numbered depth first, as Mininet numbers them."""

    def build(self, depth: int = 1, fanout: int = 2):
        self.hostNum = 1
        self.switchNum = 1
        self.addTree(depth, fanout)

    def addTree(self, depth: int, fanout: int) -> str:
        """Adds a subtree `depth` levels deep (a host at depth 0); returns its root."""
        if depth <= 0:
            name = self.addHost(f"h{self.hostNum}")
            self.hostNum += 1
            return name
        name = self.addSwitch(f"s{self.switchNum}")
        self.switchNum += 1
        for _ in range(fanout):
            self.addLink(name, self.addTree(depth - 1, fanout))
        return name


def TreeNet(depth: int = 1, fanout: int = 2, **kwargs):
    """A mininet.net.Mininet of TreeTopo(depth, fanout); kwargs go to Mininet."""
    from .net import Mininet

    return Mininet(TreeTopo(depth, fanout), **kwargs)


class TorusTopo(Topo):
    """An x by y grid of switches (sIxJ, dpid I*256+J in hex) wrapped round both ways,
    with n hosts each (hIxJ, or hIxJxK when n > 1). It has loops: it needs switches
    that run STP (`--switch lxbr,stp=1`)."""

    def build(self, x: int, y: int, n: int = 1):
        if x < 3 or y < 3:
            raise TopoError(f"TorusTopo({x}, {y}): each side must be 3 or more, as in "
                            "Mininet since 2.1 (e.g. torus,3,3)")
        switches = {}
        for i in range(x):
            for j in range(y):
                loc = f"{i + 1}x{j + 1}"
                switch = switches[i, j] = self.addSwitch(f"s{loc}",
                                                         dpid=f"{(i + 1) * 256 + j + 1:x}")
                for k in range(n):
                    self.addLink(self.addHost(f"h{loc}" if n == 1 else f"h{loc}x{k + 1}"),
                                 switch)
        for i in range(x):
            for j in range(y):
                self.addLink(switches[i, j], switches[i, (j + 1) % y])
                self.addLink(switches[i, j], switches[(i + 1) % x, j])
