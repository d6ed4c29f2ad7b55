"""Mininet's nodes on a netrig lab: hosts in namespaces, switches as Linux bridges.

A node's `cmd` runs in a bash of its own, in the node's namespace, behind a
pseudo-terminal (as Mininet's: commands share the shell's state, `sendCmd` /
`waitOutput` / `monitor` stream it, `sendInt` interrupts it, output lines end in \\r\\n).
The shell starts the first time the node is used (a 1,024-host tree builds without
1,024 shells); `popen`/`pexec` run beside it, in the same namespaces. The lab itself
(namespaces, links, teardown) is `netrig.lab.live.LiveLab`: a node belongs to the
network it was made for, or, made alone (Mininet's low-level API), to a lab of its own
that `mininet.clean.cleanup()` or the end of the program takes down.

Every switch kind (OVSSwitch, OVSKernelSwitch, OVSBridge, UserSwitch, LinuxBridge,
IVSSwitch) is a Linux bridge in the lab's switch namespace: it learns and forwards at
once; no OpenFlow table exists, so `dpctl` is refused with a sentence. Controllers are
accepted and never started (each class says so once, on stderr).

This module owns Host and CPULimitedHost; the rest of Mininet's `mininet.node` is
importable from here as from Mininet's, and lives in private modules: `Node` in
`_nodebase` (its shell in `_shell`), the switch kinds in `_switches`, the controllers in
`_controllers`, the notes said once in `_notes`.

CPULimitedHost uses cgroups directly (v1: cpu.cfs_quota_us / cfs_period_us and cpuset;
v2: cpu.max and cpuset.cpus), one group per host named netrig-PREFIX-HOST.
"""

from __future__ import annotations

import os
from typing import Any

from netrig.lab.state import LabError

from mininet import _lab
from mininet._controllers import (
    NOX,
    Controller,
    DefaultController,
    DefaultControllers,
    NullController,
    OVSController,
    RemoteController,
    Ryu,
    findController,
)
from mininet._nodebase import Node
from mininet._notes import _say_once, quiet
from mininet._switches import (
    IVSSwitch,
    KernelSwitch,
    LinuxBridge,
    OVSBridge,
    OVSKernelSwitch,
    OVSLegacyKernelSwitch,
    OVSSwitch,
    Switch,
    UserSwitch,
)
from mininet.log import info

__all__ = ["NOX", "CPULimitedHost", "Controller", "DefaultController", "DefaultControllers", "Host",
           "IVSSwitch", "KernelSwitch", "LinuxBridge", "Node", "NullController", "OVSBridge",
           "OVSController", "OVSKernelSwitch", "OVSLegacyKernelSwitch", "OVSSwitch", "RemoteController",
           "Ryu", "Switch", "UserSwitch", "findController", "quiet"]


class Host(Node):
    """A host: a Node."""


class CPULimitedHost(Host):
    """A host whose processes share a CPU limit (a cgroup of its own)."""

    inited = False

    def __init__(self, name: str, sched: str = "cfs", **kwargs: Any) -> None:
        Host.__init__(self, name, **kwargs)
        if sched not in ("cfs", "rt"):
            raise LabError(f"{name}: sched '{sched}': use 'cfs' or 'rt'")
        self.sched = sched
        self.period_us = int(kwargs.get("period_us", 100000))
        self.cgroup = f"netrig-{self.lab.prefix}-{self.name}"
        self.cg = _lab.cgroup_create(self.cgroup)
        self.lab.cgroups.append(self.cg)
        if sched == "rt":
            # Real-time busy loops throttled only by the group's RT runtime can starve a
            # shared machine when that throttling is off or misconfigured; CFS bandwidth
            # gives the same share without that risk.
            _say_once("rt", "netrig: sched='rt' is limited by CFS bandwidth (the same share "
                            "of the CPU, without real-time priority)")
            self.sched = "cfs"

    def _shell_started(self) -> None:
        self.cg.join(self._shell.pid)

    def _popen_hook(self):
        cg = self.cg
        return lambda: cg.join(os.getpid())

    def cgroupSet(self, param: str, value: Any, resource: str = "cpu") -> Any:
        self.cg.set(resource, f"{resource}.{param}", value)
        got = self.cgroupGet(param, resource)
        return got

    def cgroupGet(self, param: str, resource: str = "cpu") -> Any:
        text = self.cg.get(resource, f"{resource}.{param}")
        return int(text) if text.lstrip("-").isdigit() else text

    def cfsInfo(self, f: float) -> tuple[str, str, int, int]:
        cores = os.cpu_count() or 1
        quota, period = int(self.period_us * f * cores), self.period_us
        if f > 0 and quota < 1000:
            quota = 1000
            period = int(quota / f / cores)
        return "cfs_period_us", "cfs_quota_us", period, quota if quota >= 0 else -1

    def setCPUFrac(self, f: float, sched: str | None = None) -> None:
        sched = sched or self.sched
        if sched == "rt":
            if not f or f < 0:
                raise LabError(f"{self.name}: sched='rt' needs a positive CPU fraction")
            period, quota = self.period_us, int(self.period_us * f)
            self.cg.set("cpu", "cpu.rt_period_us", period)
            self.cg.set("cpu", "cpu.rt_runtime_us", quota)
        else:
            _, _, period, quota = self.cfsInfo(f)
            self.cg.limit(quota, period)
        info(f"({sched} {quota}/{period}us) ")

    def setCPUs(self, cores: Any, mems: int = 0) -> None:
        if not cores and cores != 0:
            return
        text = ",".join(str(c) for c in cores) if isinstance(cores, list) else str(cores)
        self.cg.cpus(text, str(mems))

    def config(self, cpu: float = -1, cores: Any = None, **params: Any) -> dict:
        r = Node.config(self, **params)
        self.setParam(r, "setCPUFrac", cpu=cpu)
        self.setParam(r, "setCPUs", cores=cores)
        return r

    def cpu_seconds(self) -> float:
        """CPU time the host's processes have used (seconds)."""
        return self.cg.usage_s()

    @classmethod
    def init(cls) -> None:
        cls.inited = True
