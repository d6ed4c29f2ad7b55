"""mininet.util: Mininet 2.3's helpers, with its names, arguments and return formats.

Owns: running commands (`quietRun`, `errRun`, `errFail`, `run`, `checkRun`, `which`,
`isShellBuiltin`, `pmonitor`, `waitListening`), printing a network's wiring
(`dumpNodeConnections`, `dumpNetConnections`, `dumpNodes`, `dumpPorts`: through the node
API only, `intfList()`, `intf.link`, `ports`, so they serve any Mininet-like nodes),
address arithmetic (`ipStr`, `ipParse`, `ipNum`, `ipAdd`, `netParse`, `macColonHex`),
natural sort (`natural`, `naturalSeq`, `irange`), class customising (`custom`,
`customClass`, `specialClass`, `splitArgs`, `buildTopo`), and Python 2/3 shims
(`decode`, `encode`, `BaseString`, `Python3`), plus `pexpect` as Mininet's tests use it
(spawn speaks str, utf-8).

Does not own interfaces or the host: netrig's lab makes and moves every interface, so
`makeIntfPair` and `moveIntf` refuse with a sentence; `fixLimits` and `mountCgroups` do
nothing (netrig changes no host-wide limit or sysctl, and CPULimitedHost finds the
cgroup file system itself); `sysctlTestAndSet` refuses.
"""

from __future__ import annotations

import codecs
import os
import re
import selectors
import shlex
import socket
import subprocess
import sys
import time
from collections import namedtuple
from fcntl import F_GETFL, F_SETFL, fcntl
from pathlib import Path
from resource import RLIM_INFINITY, getrlimit, setrlimit
from select import POLLHUP, POLLIN, poll
from subprocess import PIPE, STDOUT

from netrig.errors import NetrigError

from .log import debug, error, info, output

Python3 = True
BaseString = str
Encoding = "utf-8"
getincrementaldecoder = codecs.getincrementaldecoder(Encoding)
CmdResult = namedtuple("CmdResult", "out err ret")


class MininetUtilError(NetrigError):
    """A mininet.util call that cannot be done, or whose command failed (errFail)."""


class NotNetrigs(MininetUtilError):
    """A call that would make, move or tune something netrig's lab owns."""


def decode(buf: bytes) -> str:
    return buf.decode(Encoding)


def encode(buf: str) -> bytes:
    return buf.encode(Encoding)


class _Pexpect:
    """The pexpect module, imported when first used, whose `spawn` speaks str (utf-8)
    unless told otherwise, as Mininet's `mininet.util.pexpect` does."""

    def _module(self):
        try:
            import pexpect
        except ImportError as e:
            raise MininetUtilError("mininet.util.pexpect needs the pexpect module, which is "
                                   "not installed (pip install pexpect)") from e
        return pexpect

    def spawn(self, *args, **kwargs):
        kwargs.setdefault("encoding", "utf-8")
        return self._module().spawn(*args, **kwargs)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._module(), name)


pexpect = _Pexpect()


def StrictVersion(text: str):
    """A comparable version (Mininet's name for packaging's parse)."""
    try:
        from packaging.version import parse
    except ImportError:  # the tuple of its numbers compares the same for plain versions
        return tuple(int(x) for x in re.findall(r"\d+", text))
    return parse(text)


# Running commands

def run(cmd: str) -> int:
    """Runs `cmd` split on spaces; returns its exit status."""
    return subprocess.call(cmd.split(" "))


def checkRun(cmd: str) -> int:
    """Runs `cmd` split on spaces; raises CalledProcessError if it fails."""
    return subprocess.check_call(cmd.split(" "))


def _argv(cmd: tuple, shell: bool):
    """Mininet's rule: one string is split on spaces unless run by the shell; a list
    is joined for the shell."""
    if len(cmd) == 1:
        cmd = cmd[0]
    if isinstance(cmd, str) and not shell:
        return [str(a) for a in cmd.split(" ")]
    if isinstance(cmd, (list, tuple)) and shell:
        return " ".join(str(a) for a in cmd)
    if isinstance(cmd, tuple):
        return [str(a) for a in cmd]
    return cmd


def errRun(*cmd, stderr=PIPE, shell: bool = False, echo: bool = False) -> CmdResult:
    """Runs a command (a string split on spaces, a list, or with shell=True a shell
    line); returns (out, err, returncode) as str. stderr=STDOUT merges the two;
    echo=True prints the command and its output as it comes."""
    if echo:
        info(cmd, "\n")
    argv = _argv(cmd, shell)
    debug("*** errRun:", argv, "\n")
    popen = subprocess.Popen(argv, stdout=PIPE, stderr=stderr, shell=shell)
    pipes = {popen.stdout: []}
    if popen.stderr is not None:
        pipes[popen.stderr] = []
    decoders = {f: getincrementaldecoder(errors="replace") for f in pipes}
    with selectors.DefaultSelector() as sel:
        for f in pipes:
            sel.register(f, selectors.EVENT_READ)
        while sel.get_map():
            for key, _ in sel.select():
                f = key.fileobj
                data = os.read(f.fileno(), 65536)
                text = decoders[f].decode(data, final=not data)
                if echo and text:
                    output(text)
                pipes[f].append(text)
                if not data:
                    sel.unregister(f)
    ret = popen.wait()
    for f in pipes:
        f.close()
    out = "".join(pipes[popen.stdout])
    err = "".join(pipes[popen.stderr]) if popen.stderr is not None else ""
    debug(out, err, ret)
    return CmdResult(out, err, ret)


def errFail(*cmd, **kwargs) -> CmdResult:
    """errRun, raising MininetUtilError (naming the command, its status and stderr)
    when the command fails."""
    result = errRun(*cmd, **kwargs)
    if result.ret:
        shown = cmd[0] if len(cmd) == 1 else " ".join(str(c) for c in cmd)
        raise MininetUtilError(f"errFail: '{shown}' exited with status {result.ret}: "
                               f"{result.err.strip() or '(nothing on stderr)'}")
    return result


def quietRun(cmd, **kwargs) -> str:
    """Runs a command; returns its stdout and stderr merged, as str."""
    return errRun(cmd, stderr=STDOUT, **kwargs)[0]


def which(cmd: str, **kwargs) -> str | None:
    """The path of `cmd` on PATH, or None."""
    out, _, ret = errRun(["which", cmd], stderr=STDOUT, **kwargs)
    return out.rstrip() if ret == 0 else None


def isShellBuiltin(cmd: str) -> bool:
    """True if the command's first word is a bash builtin."""
    if isShellBuiltin.builtIns is None:
        isShellBuiltin.builtIns = set(quietRun("bash -c enable").split())
    return cmd.split(" ", 1)[0] in isShellBuiltin.builtIns


isShellBuiltin.builtIns = None


def retry(retries: int, delaySecs: float, fn, *args, **keywords) -> None:
    """Calls fn until it returns true, at most retries + 1 times, delaySecs apart;
    exits the program (status 1) if it never did."""
    if fn(*args, **keywords):
        return
    for _ in range(retries):
        time.sleep(delaySecs)
        if fn(*args, **keywords):
            return
    error(f"*** gave up after {retries} retries of {getattr(fn, '__name__', fn)}\n")
    sys.exit(1)


# Interfaces and the host: netrig's

def makeIntfPair(intf1, intf2, *args, **kwargs):
    raise NotNetrigs(f"makeIntfPair({intf1}, {intf2}): netrig's lab makes every interface "
                     "itself (a link is net.addLink(node1, node2), which names its ends)")


def moveIntf(intf, dstNode, *args, **kwargs):
    raise NotNetrigs(f"moveIntf({intf}, {getattr(dstNode, 'name', dstNode)}): netrig's lab "
                     "places every interface in its node when it makes the link; add the "
                     "link between the nodes instead (net.addLink)")


moveIntfNoRetry = moveIntf


# The kernel's ARP table is one for every namespace, and Mininet's sizes for it (its
# fixLimits); `netrig mininet` puts back what was there when the script ends.
SYSCTL = Path("/proc/sys")
ARP_TABLE = (("net/ipv4/neigh/default/gc_thresh1", 4096), ("net/ipv4/neigh/default/gc_thresh2", 8192),
             ("net/ipv4/neigh/default/gc_thresh3", 16384))


def fixLimits() -> None:
    """Raises the kernel's ARP table to Mininet's sizes where it is smaller, as Mininet
    does when a network is built: the table is one for every namespace, so 64 hosts
    pinging each other make 4,032 entries, and at the default 1,024 the kernel refuses
    new ones for seconds ("neighbor table overflow") and pings fail (Mininet's treeping64
    lost 71 %). Nothing else host-wide, on purpose (Mininet also raises open files and
    socket buffers): the emulator sets its own sockets' buffers."""
    for key, size in ARP_TABLE:
        path = SYSCTL / key
        try:
            if int(path.read_text()) < size:
                path.write_text(str(size))
        except (OSError, ValueError):
            pass  # (not root, or no such table: the lab is built as it is)


def mountCgroups(cgcontrol: str = "cpu cpuacct cpuset") -> None:
    """Does nothing: CPULimitedHost finds the cgroup file system (v1 or v2) itself and
    mounts nothing."""


def sysctlTestAndSet(name: str, limit) -> None:
    raise NotNetrigs(f"sysctlTestAndSet({name}): netrig does not change the host's sysctls; "
                     "set it yourself before the run if it matters")


def rlimitTestAndSet(name: int, limit: int) -> None:
    """Raises this process's soft limit `name` to at least `limit` (and the hard one
    with it if needed)."""
    soft, hard = getrlimit(name)
    if soft < limit:
        setrlimit(name, (limit, hard if hard == RLIM_INFINITY or hard >= limit else limit))


def ensureRoot() -> None:
    """Exits (status 1) unless running as root."""
    if os.getuid() != 0:
        error("*** netrig's Mininet must run as root (it builds network namespaces): "
              "run it with sudo\n")
        sys.exit(1)


# Printing a network's wiring (node API only)

def dumpNodeConnections(nodes) -> None:
    """For each node a line: its name, then ` intf:peer` for each interface (` intf: `
    for one without a link): `h1 h1-eth0:s1-eth1`."""
    for node in nodes:
        output(node.name)
        for intf in node.intfList():
            output(f" {intf}:")
            link = getattr(intf, "link", None)
            if link:
                output(str(link.intf2 if link.intf1 is intf else link.intf1))
            else:
                output(" ")
        output("\n")


def dumpNetConnections(net) -> None:
    """dumpNodeConnections of the controllers, switches and hosts, in that order."""
    dumpNodeConnections(list(net.controllers) + list(net.switches) + list(net.hosts))


def dumpNodes(nodes) -> None:
    """One line per node: its repr (`<Host h1: h1-eth0:10.0.0.1 pid=42> `), as the
    prompt's `dump` prints them."""
    for node in nodes:
        output(f"{node!r}\n")


def dumpPorts(switches) -> None:
    """For each switch a line: its name, then `intf:port` for each interface."""
    for switch in switches:
        output(f"{switch.name} ")
        for intf in switch.intfList():
            output(f"{intf}:{switch.ports[intf]:d} ")
        output("\n")


# Addresses

class AddressError(MininetUtilError, ValueError):
    """An address or network that does not parse, or a host number out of its subnet."""


def _colonHex(val: int, bytecount: int) -> str:
    return ":".join(f"{(val >> (8 * i)) & 0xff:02x}" for i in range(bytecount - 1, -1, -1))


def macColonHex(mac: int) -> str:
    """`00:00:00:00:00:01` for 1."""
    return _colonHex(mac, 6)


def ipStr(ip: int) -> str:
    """`10.0.0.1` for 0x0a000001."""
    return ".".join(str((ip >> s) & 0xff) for s in (24, 16, 8, 0))


def ipNum(w: int, x: int, y: int, z: int) -> int:
    return (w << 24) | (x << 16) | (y << 8) | z


def ipAdd(i: int, prefixLen: int = 8, ipBaseNum: int = 0x0a000000) -> str:
    """The address of host number `i` in the network ipBaseNum/prefixLen."""
    hostmask = 0xffffffff >> prefixLen
    if not 0 <= i <= hostmask:
        raise AddressError(f"ipAdd: host number {i} does not fit in {ipStr(ipBaseNum)}/"
                           f"{prefixLen} (at most {hostmask}): not enough IP addresses in "
                           "the subnet")
    return ipStr((ipBaseNum & (0xffffffff ^ hostmask)) + i)


def ipParse(ip: str) -> int:
    """The number of an address; short forms fill zeros before the last part, as
    Mininet does (`10.1` is 10.0.0.1)."""
    try:
        parts = [int(p) for p in ip.split(".")]
    except ValueError:
        raise AddressError(f"'{ip}' is not an IPv4 address (e.g. 10.0.0.1)") from None
    if not 1 <= len(parts) <= 4 or any(not 0 <= p <= 255 for p in parts):
        raise AddressError(f"'{ip}' is not an IPv4 address (e.g. 10.0.0.1)")
    while len(parts) < 4:
        parts.insert(len(parts) - 1, 0)
    return ipNum(*parts)


def netParse(ipstr: str) -> tuple[int, int]:
    """(address number, prefix length) of `10.0.0.0/8`; /24 when no prefix is given."""
    ip, _, pf = ipstr.partition("/")
    if not pf:
        return ipParse(ip), 24
    if not pf.isdigit() or int(pf) > 32:
        raise AddressError(f"'{ipstr}': the prefix length must be 0 to 32 (e.g. 10.0.0.0/8)")
    return ipParse(ip), int(pf)


def checkInt(s: str) -> bool:
    try:
        int(s)
    except ValueError:
        return False
    return True


def checkFloat(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def makeNumeric(s: str):
    """An int or float for a numeric string; the string otherwise."""
    if checkInt(s):
        return int(s)
    if checkFloat(s):
        return float(s)
    return s


# Watching processes

def pmonitor(popens: dict, timeoutms: int = 500, readline: bool = True, readmax: int = 1024):
    """Yields (host, line) as the processes of {host: Popen} print (a chunk of at most
    readmax characters with readline=False), and (None, '') after each timeoutms without
    any; ends when every process has closed its stdout."""
    poller = poll()
    by_fd = {}
    for host, popen in popens.items():
        fd = popen.stdout.fileno()
        by_fd[fd] = (host, getincrementaldecoder(errors="replace"))
        poller.register(fd, POLLIN)
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | os.O_NONBLOCK)
    while popens:
        events = poller.poll(timeoutms)
        if not events:
            yield None, ""
            continue
        for fd, event in events:
            host, decoder = by_fd[fd]
            popen = popens[host]
            if event & (POLLIN | POLLHUP):
                while True:
                    try:
                        data = popen.stdout.readline() if readline else popen.stdout.read(readmax)
                    except OSError:
                        data = None
                    # bytes pipes are decoded; a text-mode Popen's are str already
                    line = decoder.decode(data) if isinstance(data, bytes) else (data or "")
                    if not line:
                        break
                    yield host, line
            if event & POLLHUP:
                poller.unregister(fd)
                del popens[host]


def waitListening(client=None, server="127.0.0.1", port: int = 80, timeout=None) -> bool:
    """Waits until `server` (an address or a node) accepts TCP connections on `port`,
    tried from `client` (a node; this machine when None) every 0.5 s; False after
    `timeout` seconds (None: wait on) or when there is no route."""
    address = server if isinstance(server, str) else server.IP()
    waited = 0.0
    while True:
        said = _try_connect(client, address, int(port))
        if said == "Connected":
            return True
        if "No route" in said:
            error(f"no route to {server}: {said.strip()}\n")
            return False
        if timeout is not None and waited >= timeout:
            error(f"could not connect to {server} on port {port}\n")
            return False
        debug("waiting for", server, "to listen on port", port, "\n")
        info(".")
        time.sleep(0.5)
        waited += 0.5


def _try_connect(client, address: str, port: int) -> str:
    """'Connected', or what the attempt said (e.g. 'Connection refused')."""
    if client is None:
        try:
            with socket.create_connection((address, port), timeout=2):
                return "Connected"
        except OSError as e:
            return e.strerror or str(e)
    probe = f"exec 3<>/dev/tcp/{address}/{port}"
    said = client.cmd(f"timeout 2 bash -c {shlex.quote(probe)} 2>&1 && echo Connected")
    return "Connected" if "Connected" in said else said


# Sorting and ranges

def natural(text) -> list:
    """A sort key that orders numbers inside names by value: s2 before s10."""
    return [int(s) if s.isdigit() else s for s in re.split(r"(\d+)", str(text))]


def naturalSeq(t) -> list:
    """natural() of each item of a sequence."""
    return [natural(x) for x in t]


def irange(start: int, end: int) -> range:
    """start to end, both included."""
    return range(start, end + 1)


def numCores() -> int:
    """The number of processors /proc/cpuinfo lists (0 if it cannot be read)."""
    if not hasattr(numCores, "ncores"):
        try:
            with open("/proc/cpuinfo") as f:
                numCores.ncores = sum(1 for line in f if line.startswith("processor"))
        except OSError:
            return 0
    return numCores.ncores


# Customising classes

def custom(cls, **params):
    """A constructor of `cls` with `params` as keyword arguments, over any the caller
    gives (Mininet's rule: custom(TCLink, bw=10)(..., bw=5) has bw=10)."""
    def customized(*args, **kwargs):
        kwargs = dict(kwargs)
        kwargs.update(params)
        return cls(*args, **kwargs)
    customized.__name__ = f"custom({cls},{params})"
    return customized


def splitArgs(argstr: str) -> tuple[str, list, dict]:
    """`tc,10,delay=5ms` -> ('tc', [10], {'delay': '5ms'}); numbers become int or float."""
    name, *params = argstr.split(",")
    args = [makeNumeric(p) for p in params if "=" not in p]
    kwargs = {}
    for p in params:
        if "=" in p:
            key, val = p.split("=", 1)
            kwargs[key] = makeNumeric(val)
    return name, args, kwargs


def specialClass(cls, prepend=None, append=None, defaults=None, override=None):
    """A subclass of `cls` whose constructor adds `prepend` before and `append` after
    the positional arguments, takes `defaults` for keywords not given, and `override`
    over those given."""
    prepend, append = list(prepend or []), list(append or [])
    defaults, override = dict(defaults or {}), dict(override or {})

    class CustomClass(cls):
        def __init__(self, *args, **params):
            merged = dict(defaults)
            merged.update(params)
            merged.update(override)
            cls.__init__(self, *prepend, *args, *append, **merged)

    CustomClass.__name__ = f"{cls.__name__}{defaults}"
    CustomClass.__qualname__ = CustomClass.__name__
    return CustomClass


def customClass(classes: dict, argStr: str):
    """The class `classes` names by argStr's first word, specialised with its other
    arguments (`tc,bw=10`: TCLink with bw=10 by default)."""
    name, args, kwargs = splitArgs(argStr)
    cls = classes.get(name)
    if not cls:
        from netrig import suggest
        raise MininetUtilError(f"'{name}' is unknown{suggest.unknown(name, classes)}")
    if not args and not kwargs:
        return cls
    return specialClass(cls, append=args, defaults=kwargs)


def buildTopo(topos: dict, topoStr: str):
    """The topology `linear,3` names: topos['linear'](3)."""
    name, args, kwargs = splitArgs(topoStr)
    if name not in topos:
        from netrig import suggest
        raise MininetUtilError(f"unknown topology '{name}'{suggest.unknown(name, topos, 'topologies')}")
    return topos[name](*args, **kwargs)
