"""Mininet's switch kinds on a netrig lab (re-exported by `mininet.node`, where scripts
import them): every one (Switch, LinuxBridge, OVSSwitch and its aliases OVSKernelSwitch,
OVSLegacyKernelSwitch and KernelSwitch, OVSBridge, UserSwitch, IVSSwitch) is a Linux
bridge in the lab's switch namespace that learns and forwards at once; no OpenFlow table
exists, so `dpctl` and `vsctl` are refused with a sentence. Mininet has no such module.
"""

from __future__ import annotations

import re
from typing import Any

from netrig.lab.state import LabError

from mininet._nodebase import Node
from mininet._notes import _say_once
from mininet.link import Intf


class Switch(Node):
    """A switch: a Linux bridge named as the switch in the lab's switch namespace."""

    portBase = 1
    kind = "switch"
    dpidLen = 16

    def __init__(self, name: str, dpid: str | None = None, opts: str = "", listenPort: int | None = None,
                 **params: Any) -> None:
        params.pop("inNamespace", None)
        Node.__init__(self, name, **params)
        self.dpid = self.defaultDpid(dpid)
        self.opts, self.listenPort = opts, listenPort
        # Mininet's switches (of the root namespace) list `lo` as port 0; ours is the
        # switch namespace's own loopback.
        self.controlIntf = Intf("lo", self, port=0, up=None)

    def defaultDpid(self, dpid: str | None = None) -> str:
        if dpid:
            return dpid.replace(":", "").rjust(self.dpidLen, "0")
        nums = re.findall(r"\d+", self.name)
        if not nums:
            raise LabError("Unable to derive default datapath ID - please either specify a dpid "
                           f"or use a canonical switch name such as s23. (switch '{self.name}')")
        return hex(int(nums[0]))[2:].rjust(self.dpidLen, "0")

    def defaultIntf(self) -> Intf | None:
        return self.controlIntf or Node.defaultIntf(self)

    def start(self, controllers: list) -> None:
        """The bridge forwards from the moment it is made; nothing to start."""

    def stop(self, deleteIntfs: bool = True) -> None:
        Node.stop(self, deleteIntfs=False)

    def connected(self) -> bool:
        return True

    def dpctl(self, *args: Any) -> str:
        raise LabError(f"{self.name}: dpctl: netrig's switches are Linux bridges (they learn "
                       "and forward by themselves); there is no OpenFlow table to show or change")

    def __repr__(self) -> str:
        intfs = ",".join(f"{i.name}:{i.IP()}" for i in self.intfList())
        return f"<{self.__class__.__name__} {self.name}: {intfs} pid={self._shell.pid if self._shell else None}> "


class LinuxBridge(Switch):
    def __init__(self, name: str, stp: bool = False, prio: int | None = None, **kwargs: Any) -> None:
        if stp:
            _say_once("stp", "netrig: LinuxBridge(stp=True): the bridges run without spanning "
                             "tree (a loop in the topology floods)")
        Switch.__init__(self, name, **kwargs)


class OVSSwitch(Switch):
    def __init__(self, name: str, failMode: str = "secure", datapath: str = "kernel",
                 inband: bool = False, protocols: Any = None, reconnectms: int = 1000,
                 stp: bool = False, batch: bool = False, **params: Any) -> None:
        _say_once("ovs", "netrig: Open vSwitch switches run as Linux bridges (learning, no "
                         "OpenFlow tables)")
        Switch.__init__(self, name, **params)

    def vsctl(self, *args: Any, **kwargs: Any) -> str:
        raise LabError(f"{self.name}: ovs-vsctl: netrig's switches are Linux bridges, not Open vSwitch")

    @classmethod
    def isOldOVS(cls) -> bool:
        """No Open vSwitch runs: the switches are Linux bridges (never an old OVS)."""
        return False

    @classmethod
    def batchStartup(cls, switches: list, run: Any = None) -> list:
        return switches

    @classmethod
    def batchShutdown(cls, switches: list, run: Any = None) -> list:
        for s in switches:
            s.stop()
        return switches


class OVSBridge(OVSSwitch):
    pass


class UserSwitch(Switch):
    def __init__(self, name: str, dpopts: str = "--no-slicing", **kwargs: Any) -> None:
        _say_once("user", "netrig: UserSwitch runs as a Linux bridge")
        Switch.__init__(self, name, **kwargs)


class IVSSwitch(Switch):
    pass


OVSKernelSwitch = OVSSwitch
OVSLegacyKernelSwitch = OVSSwitch
KernelSwitch = OVSSwitch
