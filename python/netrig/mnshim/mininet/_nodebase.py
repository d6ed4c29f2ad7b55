"""Mininet's `Node` on a netrig lab (re-exported by `mininet.node`, where scripts import
it): a host or router, a network namespace of the lab (`mininet._lab`) with a shell in
it (`mininet._shell`), its interfaces and their addresses, routes and ARP entries, and
its end. Mininet has no such module: its `Node` is in `mininet.node`, and so is ours to
every script.
"""

from __future__ import annotations

import codecs
import json
import os
import subprocess
from typing import Any

from mininet import _lab
from mininet._shell import NodeShell
from mininet.link import Intf, Link
from mininet.log import debug, warn


class Node(NodeShell):
    """A host or router: a network namespace and a shell in it."""

    portBase = 0  # hosts count ports from 0, switches from 1
    kind = "host"
    outToNode: dict[int, Node] = {}
    inToNode: dict[int, Node] = {}

    def __init__(self, name: str, inNamespace: bool = True, **params: Any) -> None:
        self.name = params.get("name", name)
        self.privateDirs = params.get("privateDirs", [])
        self.inNamespace = params.get("inNamespace", inNamespace)
        self.params = params
        self.intfs: dict[int, Intf] = {}
        self.ports: dict[Intf, int] = {}
        self.nameToIntf: dict[str, Intf] = {}
        self.lab = _lab.current()
        kind = self.kind if self.inNamespace else "root"
        self.ns: str | None = self.lab.add_node(self.name, kind)
        self._shell: subprocess.Popen | None = None
        self._stdin = None
        self.master = self.slave = None
        self.waiting = False
        self._interrupts = 0  # sendInt's and sendCmd's count: a ^C's watch is of one command
        self.readbuf = ""
        self.lastCmd = self.lastPid = None
        self.execed = False
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._stopped = False

    # Interfaces.
    def newPort(self) -> int:
        return max(self.ports.values()) + 1 if self.ports else self.portBase

    def addIntf(self, intf: Intf, port: int | None = None, moveIntfFn: Any = None) -> None:
        if port is None:
            port = self.newPort()
        self.intfs[port] = intf
        self.ports[intf] = port
        self.nameToIntf[intf.name] = intf
        debug("\n")
        debug(f"added intf {intf} ({port}) to node {self.name}\n")
        if self.inNamespace:
            debug("moving", intf, "into namespace for", self.name, "\n")

    def delIntf(self, intf: Intf) -> None:
        port = self.ports.pop(intf, None)
        if port is not None:
            del self.intfs[port]
            self.nameToIntf.pop(intf.name, None)

    def defaultIntf(self) -> Intf | None:
        if self.intfs:
            return self.intfs[min(self.intfs)]
        warn("*** defaultIntf: warning:", self.name, "has no interfaces\n")
        return None

    def intf(self, intf: Any = None) -> Any:
        if not intf:
            return self.defaultIntf()
        if isinstance(intf, str):
            return self.nameToIntf[intf]
        return intf

    def connectionsTo(self, node: Node) -> list[tuple[Intf, Intf]]:
        out = []
        for intf in self.intfList():
            link = intf.link
            if link:
                n1, n2 = link.intf1.node, link.intf2.node
                if n1 is self and n2 is node:
                    out.append((intf, link.intf2))
                elif n1 is node and n2 is self:
                    out.append((intf, link.intf1))
        return out

    def deleteIntfs(self, checkName: bool = True) -> None:
        for intf in list(self.intfs.values()):
            if self.name in intf.name or not checkName:
                intf.delete()

    def _ip_lines(self, lines: list[str]) -> str:
        return self.lab.ip(self.ns, lines)

    def _link_show(self, dev: str) -> dict[str, Any]:
        self.lab.flush()
        argv = ["ip", *(["-n", self.ns] if self.ns else []), "-j", "addr", "show", "dev", dev]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        try:
            found = json.loads(p.stdout or "[]")
        except json.JSONDecodeError:
            found = []
        return found[0] if found else {}

    def setARP(self, ip: str, mac: str) -> str:
        return self._ip_lines([f"neigh replace {ip} lladdr {mac} dev {self.defaultIntf()} nud permanent"])

    def setHostRoute(self, ip: str, intf: Any) -> str:
        return self._ip_lines([f"route replace {ip}/32 dev {intf}"])

    def setDefaultRoute(self, intf: Any = None) -> str:
        params = intf if isinstance(intf, str) and " " in intf else f"dev {intf}"
        return self._ip_lines([f"route replace default {params}"])

    def setMAC(self, mac: str, intf: Any = None) -> str:
        return self.intf(intf).setMAC(mac)

    def setIP(self, ip: str, prefixLen: int = 8, intf: Any = None, **kwargs: Any) -> str:
        return self.intf(intf).setIP(ip, prefixLen, **kwargs)

    def IP(self, intf: Any = None) -> str | None:
        i = self.intf(intf)
        return i.IP() if i is not None else None

    def MAC(self, intf: Any = None) -> str | None:
        i = self.intf(intf)
        return i.MAC() if i is not None else None

    def intfIsUp(self, intf: Any = None) -> bool:
        return self.intf(intf).isUp()

    def setParam(self, results: dict, method: str, **param: Any) -> Any:
        name, value = next(iter(param.items()))
        if value is None:
            return None
        f = getattr(self, method, None)
        if not f:
            return None
        result = f(*value) if isinstance(value, list) else f(**value) if isinstance(value, dict) else f(value)
        results[name] = result
        return result

    def config(self, mac: str | None = None, ip: str | None = None, defaultRoute: Any = None,
               lo: str = "up", **_params: Any) -> dict:
        r: dict = {}
        self.setParam(r, "setMAC", mac=mac)
        self.setParam(r, "setIP", ip=ip)
        self.setParam(r, "setDefaultRoute", defaultRoute=defaultRoute)
        self._ip_lines([f"link set dev lo {lo}"])
        return r

    def configDefault(self, **moreParams: Any) -> None:
        self.params.update(moreParams)
        self.config(**self.params)

    def linkTo(self, node: Node, link: type = Link) -> Link:
        return link(self, node)

    def intfList(self) -> list[Intf]:
        return [self.intfs[p] for p in sorted(self.intfs)]

    def intfNames(self) -> list[str]:
        return [str(i) for i in self.intfList()]

    # The end.
    def terminate(self) -> None:
        if self._shell is not None:
            _lab.hangup([self._shell])
        self.cleanup()

    def cleanup(self) -> None:
        self._stdin = None
        if self.master is not None:
            self.outToNode.pop(self.master, None)
            self.inToNode.pop(self.master, None)
            for fd in (self.master, self.slave):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.master = self.slave = None
        self._shell = None
        self._stopped = True

    def stop(self, deleteIntfs: bool = False) -> None:
        if deleteIntfs:
            self.deleteIntfs()
        self.terminate()

    @classmethod
    def fdToNode(cls, fd: int) -> Node | None:
        return cls.outToNode.get(fd) or cls.inToNode.get(fd)

    @classmethod
    def checkSetup(cls) -> None:
        pass

    @classmethod
    def setup(cls) -> None:
        pass

    def __repr__(self) -> str:
        intfs = ",".join(f"{i.name}:{i.IP()}" for i in self.intfList())
        return f"<{self.__class__.__name__} {self.name}: {intfs} pid={self._shell.pid if self._shell else None}> "

    def __str__(self) -> str:
        return self.name
