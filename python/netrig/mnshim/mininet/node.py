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

CPULimitedHost uses cgroups directly (v1: cpu.cfs_quota_us / cfs_period_us and cpuset;
v2: cpu.max and cpuset.cpus), one group per host named netrig-PREFIX-HOST.
"""

from __future__ import annotations

import codecs
import fcntl
import json
import os
import pty
import re
import select
import subprocess
import sys
import termios
from subprocess import PIPE
from typing import Any

from netrig.lab.state import LabError

from mininet import _lab
from mininet.link import Intf, Link
from mininet.log import debug, error, info, warn


def _is_builtin(cmd: str) -> bool:
    word = cmd.split(" ")[0]
    return word in ("cd", "export", "set", "unset", "source", ".", "alias", "wait", "jobs",
                    "kill", "echo", "printf", "read", "exit", "ulimit", "umask", "trap")


class Node:
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
        self.readbuf = ""
        self.lastCmd = self.lastPid = None
        self.execed = False
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._stopped = False

    # The shell, started when first needed.
    @property
    def pid(self) -> int | None:
        return self.shell.pid if self.shell else None

    @property
    def shell(self) -> subprocess.Popen | None:
        """The node's bash (started now if it has not been)."""
        if self._shell is None and not self._stopped:
            self.startShell()
        return self._shell

    @shell.setter
    def shell(self, value: subprocess.Popen | None) -> None:
        self._shell = value

    @property
    def stdin(self):
        return self._stdin if self.shell else None

    @property
    def stdout(self):
        return self.stdin

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PATH"] = f"{self.lab.bindir}:{env.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"
        return env

    def _enter(self) -> list[str]:
        """The argv prefix that runs a program in this node's namespaces."""
        if self.ns is None:
            return []
        if self._shell is not None and self._shell.poll() is None:
            return ["nsenter", "--target", str(self._shell.pid), "--net", "--mount", "--"]
        return ["ip", "netns", "exec", self.ns]

    def startShell(self, mnopts: Any = None) -> None:
        if self._shell is not None:
            error(f"{self.name}: shell is already running\n")
            return
        self.lab.flush()
        self.master, self.slave = pty.openpty()
        argv = [*self._enter(), "env", "PS1=" + chr(127), "bash", "--norc", "--noediting", "-is",
                "mininet:" + self.name]

        def own_terminal() -> None:  # the pty is the shell's terminal: ^C reaches its job
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self._shell = subprocess.Popen(argv, stdin=self.slave, stdout=self.slave, stderr=self.slave,
                                      close_fds=True, preexec_fn=own_terminal, env=self._env())
        self.lab.shells.append(self._shell)
        self._stdin = os.fdopen(self.master, "r", closefd=False)
        self.pollOut = select.poll()
        self.pollOut.register(self.master, select.POLLIN)
        self.outToNode[self.master] = self
        self.inToNode[self.master] = self
        self.readbuf = ""
        while True:
            data = self.read(1024)
            if data.endswith(chr(127)):
                break
            if self._shell.poll() is not None:
                raise LabError(f"{self.name}: its shell exited at once: {data.strip()[-300:]}")
            self.pollOut.poll(1000)
        self.waiting = False
        self.cmd("unset HISTFILE; stty -echo; set +m")
        self.mountPrivateDirs()
        self._shell_started()

    def _shell_started(self) -> None:
        """Subclasses' hook: the shell runs (a CPU-limited host joins its cgroup)."""

    def mountPrivateDirs(self) -> None:
        """Each private directory mounted in the node's own mount namespace (its shell's:
        `ip netns exec` gives it one): a (dir, source) pair is bound from source
        (`%(name)s` is the node's name), a lone dir is a fresh tmpfs."""
        for d in self.privateDirs:
            if isinstance(d, tuple):
                src = d[1] % {**self.__dict__, "name": self.name}
                self.cmd(f"mkdir -p {src}; mkdir -p {d[0]}; mount --bind {src} {d[0]}")
            else:
                self.cmd(f"mkdir -p {d}; mount -n -t tmpfs tmpfs {d}")

    def unmountPrivateDirs(self) -> None:
        for d in self.privateDirs:
            self.cmd(f"umount {d[0] if isinstance(d, tuple) else d}")

    def read(self, size: int = 1024) -> str:
        if self.master is None and self.shell is None:
            return ""
        count = len(self.readbuf)
        if count < size:
            try:
                data = os.read(self.master, size - count)
            except OSError:
                data = b""
            self.readbuf += self._decoder.decode(data)
        result, self.readbuf = self.readbuf[:size], self.readbuf[size:]
        return result

    def readline(self) -> str:
        while "\n" not in self.readbuf:
            self.readbuf += self.read(1024)
        line, self.readbuf = self.readbuf.split("\n", 1)
        return line + "\n"

    def write(self, data: str) -> None:
        if self._shell is None:
            self.startShell()
        os.write(self.master, data.encode())

    def waitReadable(self, timeoutms: float | None = None) -> list:
        if self.shell is None:
            return []
        if self.readbuf:
            return [(self.master, select.POLLIN)]
        return self.pollOut.poll(timeoutms)

    def sendCmd(self, *args: Any, **kwargs: Any) -> None:
        if self._shell is None:
            self.startShell()
        if self.waiting:
            raise LabError(f"{self.name}: a command is still running ({self.lastCmd!r}); "
                           "waitOutput() first")
        cmd = args[0] if len(args) == 1 and isinstance(args[0], list) else args
        cmd = cmd if isinstance(cmd, str) else " ".join(str(c) for c in cmd)
        if not re.search(r"\w", cmd):
            cmd = "echo -n"
        self.lastCmd = cmd
        if cmd.rstrip().endswith("&"):
            cmd += ' printf "\\001%d\\012" $! '
        self.write(cmd + "\n")
        self.lastPid = None
        self.waiting = True

    def sendInt(self, intr: str = chr(3)) -> None:
        debug(f"sendInt: writing chr({ord(intr)})\n")
        self.write(intr)

    def monitor(self, timeoutms: float | None = None, findPid: bool = True) -> str:
        if not self.waitReadable(timeoutms):
            return ""
        data = self.read(1024)
        marker = chr(1) + r"\d+\r\n"
        if findPid and chr(1) in data:
            data = re.sub(r"\[\d+\] \d+\r\n", "", data)
            while not re.findall(marker, data):
                data += self.read(1024)
            found = re.findall(marker, data)
            if found:
                self.lastPid = int(found[0][1:])
                data = re.sub(marker, "", data)
        if data.endswith(chr(127)):
            self.waiting = False
            data = data[:-1]
        elif chr(127) in data:
            self.waiting = False
            data = data.replace(chr(127), "")
        return data

    def waitOutput(self, verbose: bool = False, findPid: bool = True) -> str:
        log = info if verbose else debug
        out = ""
        while self.waiting:
            data = self.monitor(findPid=findPid)
            if not data and self._shell is not None and self._shell.poll() is not None:
                self.waiting = False
                break
            out += data
            log(data)
        return out

    def cmd(self, *args: Any, **kwargs: Any) -> str | None:
        verbose = kwargs.get("verbose", False)
        (info if verbose else debug)(f"*** {self.name} : {args}\n")
        if self._stopped:
            warn(f"({self} exited - ignoring cmd{args})\n")
            return None
        if self._shell is not None and self._shell.poll() is not None:
            print("shell died on ", self.name)
            self._shell = None
        self.sendCmd(*args, **kwargs)
        return self.waitOutput(verbose)

    def cmdPrint(self, *args: Any) -> str | None:
        return self.cmd(*args, verbose=True)

    def popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen:
        """A process in this node's namespaces (Popen's keywords; shell=True runs the
        line through $SHELL -c)."""
        defaults: dict[str, Any] = {"stdout": PIPE, "stderr": PIPE}
        defaults.update(kwargs)
        shell = defaults.pop("shell", False)
        defaults.pop("mncmd", None)
        if len(args) == 1:
            if isinstance(args[0], list):
                cmd = list(args[0])
            elif isinstance(args[0], str):
                cmd = [args[0]] if shell else args[0].split()
            else:
                raise TypeError("popen() requires a string or list")
        else:
            cmd = [str(a) for a in args]
        if shell:
            cmd = [os.environ.get("SHELL", "/bin/sh"), "-c", " ".join(cmd)]
        self.lab.flush()
        if self.privateDirs and self._shell is None:
            self.startShell()  # its mounts are the node's
        defaults.setdefault("env", self._env())
        pre = self._popen_hook()
        if pre is not None:
            defaults["preexec_fn"] = pre
        p = subprocess.Popen([*self._enter(), *cmd], **defaults)
        debug("_popen", cmd, p.pid)
        return p

    def _popen_hook(self):
        return None

    def pexec(self, *args: Any, **kwargs: Any) -> tuple[str, str, int]:
        defaults = {"stdout": PIPE, "stderr": PIPE, "stdin": PIPE}
        defaults.update(kwargs)
        p = self.popen(*args, **defaults)
        out, err = p.communicate()
        return (out.decode(errors="replace") if isinstance(out, bytes) else out or "",
                err.decode(errors="replace") if isinstance(err, bytes) else err or "", p.wait())

    # Interfaces.
    def newPort(self) -> int:
        return max(self.ports.values()) + 1 if self.ports else self.portBase

    def addIntf(self, intf: Intf, port: int | None = None, moveIntfFn: Any = None) -> None:
        if port is None:
            port = self.newPort()
        self.intfs[port] = intf
        self.ports[intf] = port
        self.nameToIntf[intf.name] = intf

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
            raise LabError(f"Unable to derive default datapath ID - please either specify a dpid "
                           f"or use a canonical switch name such as s23 (not '{self.name}')")
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

_said: set[str] = set()


def _say_once(key: str, text: str) -> None:
    if key not in _said:
        _said.add(key)
        print(text, file=sys.stderr)


def quiet(key: str) -> None:
    """The note `key` ("controller", "ovs", "user", "stp") is not said: the caller says
    its own (netrig mn notes --controller itself, and its default c0 is mn's, not asked for)."""
    _said.add(key)


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

