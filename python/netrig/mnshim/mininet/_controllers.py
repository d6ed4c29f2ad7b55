"""Mininet's controllers on a netrig lab (re-exported by `mininet.node`, where scripts
import them): each (Controller, OVSController, NOX, Ryu, RemoteController, and
DefaultController, findController, NullController) is accepted, is a node of the root
namespace as Mininet's, and is never started: the switches are Linux bridges and need
none (each says so once, on stderr). Mininet has no such module.
"""

from __future__ import annotations

from typing import Any

from mininet._nodebase import Node
from mininet._notes import _say_once


class Controller(Node):
    """An OpenFlow controller: a node of the root namespace (as Mininet's), accepted and
    never started (the bridges need none). It can be linked to, as Mininet's control
    networks do, and runs commands in the root namespace."""

    kind = "host"

    def __init__(self, name: str, inNamespace: bool = False, command: str = "controller",
                 cargs: str = "", cdir: Any = None, ip: str = "127.0.0.1", port: int = 6653,
                 protocol: str = "tcp", **params: Any) -> None:
        Node.__init__(self, name, inNamespace=inNamespace, **params)
        self.ip, self.port, self.protocol = ip, port, protocol
        self.command, self.cargs, self.cdir = command, cargs, cdir
        _say_once("controller", f"netrig: controller {name} ({type(self).__name__}) is not started: "
                                "the switches are Linux bridges and need none")

    def start(self) -> None:
        pass

    def stop(self, *args: Any, **kwargs: Any) -> None:
        pass

    def checkListening(self) -> None:
        pass

    def IP(self, intf: Any = None) -> str:
        return Node.IP(self, intf) if self.inNamespace or self.intfs else self.ip

    @classmethod
    def isAvailable(cls) -> bool:
        return True

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__} {self.name}: {self.ip}:{self.port} (not started)>"

    def __str__(self) -> str:
        return self.name


class OVSController(Controller):
    pass


class NOX(Controller):
    def __init__(self, name: str, *noxArgs: Any, **kwargs: Any) -> None:
        Controller.__init__(self, name, **kwargs)


class Ryu(Controller):
    def __init__(self, name: str, ryuArgs: Any = "ryu.app.simple_switch", command: str = "ryu run",
                 **kwargs: Any) -> None:
        Controller.__init__(self, name, **kwargs)


class RemoteController(Controller):
    def __init__(self, name: str, ip: str = "127.0.0.1", port: int | None = None, **kwargs: Any) -> None:
        Controller.__init__(self, name, ip=ip, port=port or 6653, **kwargs)

    def isListening(self, ip: str, port: int) -> bool:
        return False


DefaultControllers = (Controller, OVSController)


def findController(controllers: Any = DefaultControllers) -> type:
    return controllers[0]


def DefaultController(name: str, controllers: Any = DefaultControllers, **kwargs: Any) -> Controller:
    return Controller(name, **kwargs)


def NullController(*_args: Any, **_kwargs: Any) -> None:
    return None
