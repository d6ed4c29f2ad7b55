"""Mininet's `Mininet` class on a netrig lab.

The network is a `netrig.lab.live.LiveLab` (see `mininet._lab`): hosts in namespaces
`PREFIX-NAME`, switches as Linux bridges in `PREFIX--sw`, TCLinks carried by netrig-link,
the whole taken down by netrig's teardown (every process in the lab's namespaces, the
emulator, the namespaces) when the network stops, when the program exits, or by `netrig
down --prefix PREFIX` (`netrig status` lists it; PREFIX is `mn`, `mn2`, ... or
$NETRIG_PREFIX).

What differs from Mininet, on purpose:
- `pingAll`/`ping` send their one echo request per pair from every source at once (raw
  ICMP sockets in each host's namespace, no `ping` process per pair); what they print
  and return is Mininet's. `pingFull` runs `ping -c1` per pair, as Mininet does, for its
  RTT figures.
- `iperf` never runs `killall iperf` (that would kill iperf processes of the whole
  machine): it stops the server it started.
- Links given shaping parameters are shaped even when they are not TCLinks (Mininet
  ignores them silently there); netrig says so once.

The tests a net runs on its hosts (ping, iperf, the CPU limit test) are `NetTests`, a
part of `Mininet` kept in the private module `mininet._nettests`.
"""

from __future__ import annotations

import ipaddress
import os
import select
from typing import Any

from netrig.lab import build as builder
from netrig.lab.state import LabError

from mininet import _lab
from mininet._nettests import NetTests
from mininet._notes import _say_once
from mininet.link import Intf, Link, TCIntf
from mininet.log import error, info, warn
from mininet.node import Controller, DefaultController, Host, OVSKernelSwitch, Switch
from mininet.util import fixLimits, macColonHex

VERSION = "2.3.0"


class Mininet(NetTests):
    """A network of hosts, switches and links on a netrig lab."""

    def __init__(self, topo: Any = None, switch: Any = OVSKernelSwitch, host: Any = Host,
                 controller: Any = DefaultController, link: Any = Link, intf: Any = Intf,
                 build: bool = True, xterms: bool = False, cleanup: bool = False,
                 ipBase: str = "10.0.0.0/8", inNamespace: bool = False, autoSetMacs: bool = False,
                 autoStaticArp: bool = False, autoPinCpus: bool = False, listenPort: int | None = None,
                 waitConnected: bool = False, prefix: str | None = None) -> None:
        self.topo, self.switch, self.host, self.controller = topo, switch, host, controller
        self.link, self.intf = link, intf
        self.ipBase = ipBase
        net = ipaddress.ip_network(ipBase, strict=False)
        self.ipBaseNum, self.prefixLen = int(net.network_address), net.prefixlen
        hostIP = int(ipaddress.ip_interface(ipBase).ip) - self.ipBaseNum
        self.nextIP = hostIP if hostIP > 0 else 1
        self.inNamespace, self.xterms, self.cleanup = inNamespace, xterms, cleanup
        self.autoSetMacs, self.autoStaticArp, self.autoPinCpus = autoSetMacs, autoStaticArp, autoPinCpus
        self.numCores = os.cpu_count() or 1
        self.nextCore = 0
        self.listenPort = listenPort
        self.waitConn = waitConnected
        self.hosts: list[Host] = []
        self.switches: list[Switch] = []
        self.controllers: list[Controller] = []
        self.links: list[Link] = []
        self.nameToNode: dict[str, Any] = {}
        self.terms: list = []
        self.built = False
        if xterms:
            raise LabError("Mininet(xterms=True): netrig opens no terminals; "
                           "'netrig exec NODE' gives a shell in a node")
        self.lab = _lab.new(prefix)
        self.prefix = self.lab.prefix
        if topo and build:
            self.build()

    # netrig's extras.
    @staticmethod
    def attach(prefix: str) -> Mininet:
        """A running netrig lab (`netrig up`) as a Mininet network (mininet._attach)."""
        from mininet._attach import attach

        return attach(prefix)

    def lab_state(self):
        """The lab's state as it is now (tc lines in the nodes change it on disk)."""
        from netrig.lab.state import LabState

        return LabState.load(self.prefix)

    def set_link(self, node1: str, node2: str, dir: str | None = None, **params: Any) -> None:
        """netrig's `link N1 N2 set delay=50ms [dir=a_to_b|b_to_a]`: changes the named keys
        of a TCLink's directions live (the others stay)."""
        links = self.linksBetween(self.get(node1), self.get(node2))
        if not links:
            raise LabError(f"no link between {node1} and {node2}")
        link = links[0]
        lab = self.lab
        lab._fresh()
        for d, name in enumerate(("a_to_b", "b_to_a")):
            if dir not in (None, name):
                continue
            now = dict((link.live.shaping or ({}, {}))[d])
            now.update(params)
            lab.set_direction(link.live.name, d, now)

    # Nodes.
    def addHost(self, name: str, cls: Any = None, **params: Any) -> Host:
        defaults = {"ip": _ip_add(self.nextIP, self.ipBaseNum, self.prefixLen) + f"/{self.prefixLen}"}
        if self.autoSetMacs:
            defaults["mac"] = macColonHex(self.nextIP)
        if self.autoPinCpus:
            defaults["cores"] = self.nextCore
            self.nextCore = (self.nextCore + 1) % self.numCores
        self.nextIP += 1
        defaults.update(params)
        with _lab.using(self.lab):
            h = (cls or self.host)(name, **defaults)
        self.hosts.append(h)
        self.nameToNode[name] = h
        return h

    def delHost(self, host: Host) -> None:
        self.delNode(host, nodes=self.hosts)

    def addSwitch(self, name: str, cls: Any = None, **params: Any) -> Switch:
        defaults = {"listenPort": self.listenPort, "inNamespace": self.inNamespace}
        defaults.update(params)
        with _lab.using(self.lab):
            sw = (cls or self.switch)(name, **defaults)
        if not self.inNamespace and self.listenPort:
            self.listenPort += 1
        self.switches.append(sw)
        self.nameToNode[name] = sw
        return sw

    def delSwitch(self, switch: Switch) -> None:
        self.delNode(switch, nodes=self.switches)

    def addController(self, name: Any = "c0", controller: Any = None, **params: Any) -> Any:
        if not controller:
            controller = self.controller
        if isinstance(name, Controller):
            c, name = name, name.name
        elif controller is None:
            return None
        else:
            c = controller(name, **params)
        if c:
            self.controllers.append(c)
            self.nameToNode[name] = c
        return c

    def delController(self, controller: Any) -> None:
        self.controllers.remove(controller)
        self.nameToNode.pop(controller.name, None)

    def addNAT(self, *args: Any, **kwargs: Any) -> None:
        raise LabError("addNAT: netrig's labs have no way out to the Internet (a NAT to the "
                       "host's network is left out on purpose: traffic stays inside the lab)")

    def delNode(self, node: Any, nodes: list | None = None) -> None:
        for link in list(self.links):
            if node in (link.intf1.node, link.intf2.node):
                self.delLink(link)
        if nodes is not None and node in nodes:
            nodes.remove(node)
        self.nameToNode.pop(node.name, None)
        node.stop()
        if node.name in self.lab.kinds:
            self.lab.del_node(node.name)

    def getNodeByName(self, *args: str) -> Any:
        if len(args) == 1:
            return self.nameToNode[args[0]]
        return [self.nameToNode[n] for n in args]

    def get(self, *args: str) -> Any:
        return self.getNodeByName(*args)

    def __getitem__(self, key: str) -> Any:
        return self.nameToNode[key]

    def __delitem__(self, key: str) -> None:
        self.delNode(self.nameToNode[key])

    def __contains__(self, item: str) -> bool:
        return item in self.nameToNode

    def keys(self) -> list[str]:
        return list(self)

    def values(self) -> list[Any]:
        return [self[k] for k in self]

    def items(self) -> list[tuple[str, Any]]:
        return list(zip(self.keys(), self.values()))

    def __iter__(self):
        for node in self.hosts + self.switches + self.controllers:
            yield node.name

    def __len__(self) -> int:
        return len(self.hosts) + len(self.switches) + len(self.controllers)

    # Links.
    def addLink(self, node1: Any, node2: Any, port1: int | None = None, port2: int | None = None,
                cls: Any = None, **params: Any) -> Link:
        node1 = node1 if not isinstance(node1, str) else self[node1]
        node2 = node2 if not isinstance(node2, str) else self[node2]
        options = dict(params)
        if port1 is not None:
            options["port1"] = port1
        if port2 is not None:
            options["port2"] = port2
        if self.intf is not None:
            options.setdefault("intf", self.intf)
        cls = self.link if cls is None else cls
        if cls is Link and any(k in options for k in ("bw", "delay", "loss", "jitter", "max_queue_size")):
            _say_once("plain", "netrig: links given bw/delay/loss/jitter/max_queue_size are "
                                   "shaped even when they are not TCLinks (Mininet would ignore them)")
        with _lab.using(self.lab):
            link = cls(node1, node2, **options)
        self.links.append(link)
        return link

    def delLink(self, link: Link) -> None:
        link.delete()
        self.links.remove(link)

    def linksBetween(self, node1: Any, node2: Any) -> list[Link]:
        return [l for l in self.links if (node1, node2) in ((l.intf1.node, l.intf2.node),
                                                             (l.intf2.node, l.intf1.node))]

    def delLinkBetween(self, node1: Any, node2: Any, index: int = 0, allLinks: bool = False) -> Any:
        links = self.linksBetween(node1, node2)
        if not allLinks:
            links = links[index:index + 1]
        for link in links:
            self.delLink(link)
        return links

    # Building.
    def configHosts(self) -> None:
        for host in self.hosts:
            info(host.name + " ")
            if host.defaultIntf() is not None:
                host.configDefault()
            else:
                host.configDefault(ip=None, mac=None)
        info("\n")

    def buildFromTopo(self, topo: Any = None) -> None:
        info("*** Creating network\n")
        if not self.controllers and self.controller:
            classes = self.controller if isinstance(self.controller, list) else [self.controller]
            for i, cls in enumerate(classes):
                if isinstance(cls, Controller):
                    self.addController(cls)
                else:
                    self.addController(f"c{i}", cls)
        info("*** Adding hosts:\n")
        for name in topo.hosts():
            self.addHost(name, **topo.nodeInfo(name))
            info(name + " ")
        info("\n*** Adding switches:\n")
        for name in topo.switches():
            params = dict(topo.nodeInfo(name))
            cls = params.pop("cls", self.switch)
            self.addSwitch(name, cls=cls, **params)
            info(name + " ")
        info("\n*** Adding links:\n")
        for src, dst, params in topo.links(sort=True, withInfo=True):
            self.addLink(**params)
            info(f"({src}, {dst}) ")
        info("\n")

    def configureControlNetwork(self) -> None:
        raise LabError("Mininet(inNamespace=True): switches here are Linux bridges and need "
                       "no control network")

    def build(self) -> None:
        fixLimits()
        if self.inNamespace:
            self.configureControlNetwork()
        if self.topo:
            self.buildFromTopo(self.topo)
        info("*** Configuring hosts\n")
        self.lab.realize()
        self.configHosts()
        self.lab.built()
        if self.autoStaticArp:
            self.staticArp()
        self.built = True

    def startTerms(self) -> None:
        raise LabError("startTerms: netrig opens no terminals; 'netrig exec NODE' gives a shell in a node")

    def stopXterms(self) -> None:
        pass

    def staticArp(self) -> None:
        """Every host knows every other host's MAC (one batch per host)."""
        self.lab.flush()
        known = [(h.IP(), h.MAC(), h) for h in self.hosts if h.defaultIntf() is not None]
        for src in self.hosts:
            if src.defaultIntf() is None:
                continue
            src._ip_lines([f"neigh replace {ip} lladdr {mac} dev {src.defaultIntf()} nud permanent"
                           for ip, mac, dst in known if dst is not src and ip and mac])

    def start(self) -> None:
        if not self.built:
            self.build()
        info("*** Starting controller\n")
        for c in self.controllers:
            info(c.name + " ")
            c.start()
        info("\n")
        info(f"*** Starting {len(self.switches)} switches\n")
        for sw in self.switches:
            info(sw.name + " ")
            sw.start(self.controllers)
        info("\n")
        if self.waitConn:
            self.waitConnected()

    def stop(self) -> None:
        info(f"*** Stopping {len(self.controllers)} controllers\n")
        for c in self.controllers:
            info(c.name + " ")
            c.stop()
        info("\n")
        info(f"*** Stopping {len(self.links)} links\n")
        info("." * len(self.links) + "\n")
        info(f"*** Stopping {len(self.switches)} switches\n")
        info(" ".join(s.name for s in self.switches) + " \n")
        info(f"*** Stopping {len(self.hosts)} hosts\n")
        info(" ".join(h.name for h in self.hosts) + " \n")
        notes: list[str] = []
        errors = self.lab.stop(notes)
        for n in self.hosts + self.switches:
            n.cleanup()
        for line in notes + errors:
            warn(f"*** {line}\n")
        info("\n*** Done\n")

    def run(self, test: Any, *args: Any, **kwargs: Any) -> Any:
        self.start()
        try:
            return test(*args, **kwargs)
        finally:
            self.stop()

    def __enter__(self) -> Mininet:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def waitConnected(self, timeout: float | None = None, delay: float = 0.5) -> bool:
        info("*** Waiting for switches to connect\n")
        for sw in self.switches:
            info(sw.name + " ")
        info("\n")
        return True

    def monitor(self, hosts: list | None = None, timeoutms: float = -1):
        hosts = hosts or self.hosts
        poller = select.poll()
        h1 = hosts[0]
        for h in hosts:
            poller.register(h.stdout)
        while True:
            ready = poller.poll(timeoutms)
            for fd, event in ready:
                host = h1.fdToNode(fd)
                if event & select.POLLIN:
                    line = host.readline()
                    if line is not None:
                        yield host, line
            if not ready:
                yield None, None

    def configLinkStatus(self, src: str, dst: str, status: str) -> None:
        if src not in self.nameToNode:
            error(f"src not in network: {src}\n")
        elif dst not in self.nameToNode:
            error(f"dst not in network: {dst}\n")
        else:
            a, b = self.nameToNode[src], self.nameToNode[dst]
            connections = a.connectionsTo(b)
            if not connections:
                error(f"src and dst not connected: {a} {b}\n")
            for ia, ib in connections:
                for i in (ia, ib):
                    result = i.ifconfig(status)
                    if result:
                        error(f"link src status change failed: {result}\n")
            if status == "up" and connections and any(isinstance(n, Switch) for n in (a, b)):
                # A bridge port forwards again only once the kernel's linkwatch has seen
                # its carrier (up to a second): until then its frames are lost.
                builder._wait_bridges([self.lab.sw_ns])

    def interact(self) -> Any:
        from mininet.cli import CLI

        self.start()
        result = CLI(self)
        self.stop()
        return result

    inited = False

    @classmethod
    def init(cls) -> None:
        cls.inited = True


class MininetWithControlNet(Mininet):
    def configureControlNetwork(self) -> None:
        Mininet.configureControlNetwork(self)


def _ip_add(i: int, base: int, prefixLen: int) -> str:
    imax = 0xffffffff >> prefixLen
    if i > imax:
        raise LabError(f"Not enough IP addresses in the subnet (host {i} of a /{prefixLen})")
    mask = 0xffffffff ^ imax
    return str(ipaddress.IPv4Address((base & mask) + i))


__all__ = ["Mininet", "MininetWithControlNet", "VERSION", "TCIntf"]
