"""Mininet's links and interfaces on a netrig lab.

A `Link` is one veth pair between two nodes' namespaces (a switch's end is a port of its
bridge). A `TCLink` is carried by netrig-link (two veth pairs meeting in the lab's
emulator namespace), so `bw`, `delay`, `jitter`, `loss`, `max_queue_size`,
`enable_red` and `enable_ecn` are emulated in user space, exactly, on any kernel (with
or without netem). Each interface's parameters shape its egress, as Mininet's tc
commands do: `TCLink(h1, s1, delay='10ms')` delays both directions by 10 ms (a ping
through it: 20 ms more), `params1`/`params2` shape one side each.

`intf.config(bw=5)` on a running link replaces that direction's shaping with what it is
given (as Mininet's TCIntf.config deletes the qdisc and builds it again); a call given
none of the shaping keys keeps it.
"""

from __future__ import annotations

import re
import subprocess
from typing import Any

from netrig import units
from netrig.lab.live import LiveLink
from netrig.lab.state import LabError

from mininet.log import error, info


class Intf:
    """A node's interface: its name, node, port, link and addresses."""

    def __init__(self, name: str, node: Any = None, port: int | None = None, link: Any = None,
                 mac: str | None = None, **params: Any) -> None:
        self.node, self.name, self.link = node, name, link
        self.mac, self.ip, self.prefixLen = mac, None, None
        if name == "lo":
            self.ip, self.prefixLen = "127.0.0.1", 8
        params.pop("moveIntfFn", None)
        if node is not None and link is None and name != "lo":
            self._own_device(node, name)
        if node is not None:
            node.addIntf(self, port=port)
        self.params = params
        self.config(**params)

    @staticmethod
    def _own_device(node: Any, name: str) -> None:
        """An interface given by name alone must be one the node already has (a script
        made it there); a device of the machine itself is never taken into a lab
        (Mininet's hwintf moves a real NIC into a switch)."""
        if node._link_show(name):
            return
        if node.ns is not None and subprocess.run(["ip", "link", "show", "dev", name], capture_output=True,
                                                  timeout=10).returncode == 0:
            raise LabError(f"Intf({name!r}, node={node.name}): {name} is a device of this machine; "
                           "netrig never moves the machine's own interfaces into a lab (its "
                           "traffic stays inside the lab)")
        raise LabError(f"Intf({name!r}, node={node.name}): {node.name} has no device named {name}")

    # Where it is.
    def _ns(self) -> str | None:
        return self.node.ns

    def _ip(self, *lines: str) -> str:
        """Runs `ip` lines in the node's namespace (queued while the network is being
        built); returns "" or the error."""
        return self.node._ip_lines(list(lines))

    def cmd(self, *args: Any, **kwargs: Any) -> str:
        return self.node.cmd(*args, **kwargs)

    def ifconfig(self, *args: Any) -> str:
        """`ifconfig NAME ARGS` in the node; `up`/`down` alone are done without a shell."""
        if len(args) == 1 and args[0] in ("up", "down"):
            return self._ip(f"link set dev {self.name} {args[0]}")
        return self.cmd("ifconfig", self.name, *args)

    def setIP(self, ipstr: str, prefixLen: int | None = None) -> str:
        if "/" in ipstr:
            self.ip, plen = ipstr.split("/")
            self.prefixLen = int(plen)
        else:
            if prefixLen is None:
                raise ValueError(f"No prefix length set for IP address {ipstr}")
            self.ip, self.prefixLen = ipstr, int(prefixLen)
        return self._ip(f"addr flush dev {self.name}", f"addr add {self.ip}/{self.prefixLen} dev {self.name}",
                        f"link set dev {self.name} up")

    def setMAC(self, macstr: str) -> str:
        self.mac = macstr
        return self._ip(f"link set dev {self.name} down", f"link set dev {self.name} address {macstr}",
                        f"link set dev {self.name} up")

    def _show(self) -> dict[str, Any]:
        return self.node._link_show(self.name)

    def updateIP(self) -> str | None:
        addrs = [a for a in self._show().get("addr_info", []) if a.get("family") == "inet"]
        self.ip = addrs[0]["local"] if addrs else None
        return self.ip

    def updateMAC(self) -> str | None:
        self.mac = self._show().get("address")
        return self.mac

    def updateAddr(self) -> tuple[str | None, str | None]:
        return self.updateIP(), self.updateMAC()

    def IP(self) -> str | None:
        return self.ip

    def MAC(self) -> str | None:
        return self.mac if self.mac else self.updateMAC()

    def isUp(self, setUp: bool = False) -> bool:
        if setUp:
            out = self.ifconfig("up")
            if out:
                error(f"Error setting {self.name} up: {out} ")
                return False
            return True
        return "UP" in self._show().get("flags", [])

    def rename(self, newname: str) -> str:
        out = self._ip(f"link set dev {self.name} down", f"link set dev {self.name} name {newname}",
                       f"link set dev {newname} up")
        self.node.nameToIntf.pop(self.name, None)
        self.name = newname
        self.node.nameToIntf[newname] = self
        return out

    def setParam(self, results: dict, method: str, **param: Any) -> Any:
        name, value = next(iter(param.items()))
        f = getattr(self, method, None)
        if not f or value is None:
            return None
        result = f(*value) if isinstance(value, list) else f(**value) if isinstance(value, dict) else f(value)
        results[name] = result
        return result

    def config(self, mac: str | None = None, ip: str | None = None, ifconfig: Any = None,
               up: bool = True, **_params: Any) -> dict:
        r: dict = {}
        self.setParam(r, "setMAC", mac=mac)
        self.setParam(r, "setIP", ip=ip)
        self.setParam(r, "isUp", up=up)
        self.setParam(r, "ifconfig", ifconfig=ifconfig)
        return r

    def delete(self) -> None:
        if self.link is not None:
            self.link.delete()
        else:
            self._ip(f"link del {self.name}")
        self.node.delIntf(self)

    def status(self) -> str:
        return "OK" if self._show() else "MISSING"

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__} {self.name}>"

    def __str__(self) -> str:
        return self.name


_SHAPING = ("bw", "delay", "jitter", "loss", "max_queue_size", "enable_red", "enable_ecn",
            "speedup", "use_hfsc", "use_tbf", "use_htb", "latency_ms")


def shaping(bw: Any = None, delay: Any = None, jitter: Any = None, loss: Any = None,
            max_queue_size: Any = None, enable_red: bool = False, enable_ecn: bool = False,
            **_ignored: Any) -> dict[str, Any]:
    """Mininet's TCIntf parameters -> one netrig link direction, in the topology's keys.
    bw is Mbit/s; delay and jitter are tc times ('5ms', '100us', or a number of
    microseconds as tc reads a bare number); loss is a percentage; max_queue_size is
    packets; enable_red puts RED on the queue (with ECN marking under enable_ecn)."""
    out: dict[str, Any] = {}
    if bw is not None:
        out["rate"] = f"{float(bw):g}Mbit"
    for key, value in (("delay", delay), ("jitter", jitter)):
        if value is not None and value != "":
            out[key] = _tc_time(value, key)
    if loss:
        out["loss"] = f"{float(loss):g}%"
    if max_queue_size is not None:
        out["queue"] = int(max_queue_size)
    if enable_red:
        out["aqm"] = {"type": "red", "ecn": True} if enable_ecn else "red"
    elif enable_ecn and loss:
        out["ecn"] = True
    return out


_TC_TIME = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(s|sec|secs|ms|msec|msecs|us|usec|usecs)?\s*$")


def _tc_time(value: Any, key: str) -> str:
    """A time as tc reads it: a bare number is microseconds."""
    m = _TC_TIME.match(str(value))
    if not m:
        raise units.UnitError(f"{key} '{value}': not a time (e.g. '5ms', '100us')")
    unit = {"s": "s", "sec": "s", "secs": "s", "ms": "ms", "msec": "ms", "msecs": "ms"}.get(m.group(2) or "us", "us")
    return f"{m.group(1)}{unit}"


def _describe(bw: Any, delay: Any, jitter: Any, loss: Any, enable_ecn: bool, enable_red: bool) -> str:
    stuff = ([f"{float(bw):.2f}Mbit"] if bw is not None else []) + \
        ([f"{delay} delay"] if delay is not None else []) + \
        ([f"{jitter} jitter"] if jitter is not None else []) + \
        ([f"{float(loss):.5f}% loss"] if loss is not None else []) + \
        (["ECN"] if enable_ecn else ["RED"] if enable_red else [])
    return "(" + " ".join(stuff) + ") "


class TCIntf(Intf):
    """An interface whose egress netrig-link shapes (its link must be a TCLink)."""

    def config(self, bw: Any = None, delay: Any = None, jitter: Any = None, loss: Any = None,
               gro: bool = False, txo: bool = True, rxo: bool = True, speedup: int = 0,
               use_hfsc: bool = False, use_tbf: bool = False, latency_ms: Any = None,
               enable_ecn: bool = False, enable_red: bool = False, max_queue_size: Any = None,
               **params: Any) -> dict | None:
        params.pop("disable_gro", None)
        params.pop("use_htb", None)
        result = Intf.config(self, **params)
        if bw is None and not delay and not loss and max_queue_size is None:
            return None
        if bw is not None and float(bw) <= 0:
            error(f"Bandwidth limit {bw} is outside supported range 0..inf - ignoring\n")
            bw = None
        if loss is not None and not 0 <= float(loss) <= 100:
            error(f"Bad loss percentage {loss}%\n")
            loss = None
        direction = shaping(bw, delay, jitter, loss, max_queue_size, enable_red, enable_ecn)
        info(_describe(bw, delay, jitter, loss, enable_ecn, enable_red))
        link = self.link
        if link is None or getattr(link, "live", None) is None or \
                (link.live.shaping is None and not getattr(link, "_deferred", False)):
            raise LabError(f"{self.name}: only a TCLink's interfaces can be shaped (this is a "
                           f"{type(link).__name__ if link else 'bare interface'}); use "
                           "net = Mininet(..., link=TCLink) or addLink(..., cls=TCLink)")
        link.shape(self, direction)
        result["tcoutputs"] = []
        return result


class Link:
    """A veth pair between node1 and node2 (a TCLink's goes through netrig-link)."""

    carried = False

    def __init__(self, node1: Any, node2: Any, port1: int | None = None, port2: int | None = None,
                 intfName1: str | None = None, intfName2: str | None = None,
                 addr1: str | None = None, addr2: str | None = None, intf: type = Intf,
                 cls1: type | None = None, cls2: type | None = None, params1: dict | None = None,
                 params2: dict | None = None, fast: bool = True, **params: Any) -> None:
        params1 = dict(params1 or {})
        params2 = dict(params2 or {})
        if port1 is not None:
            params1["port"] = port1
        if port2 is not None:
            params2["port"] = port2
        if "port" not in params1:
            params1["port"] = node1.newPort()
        if "port" not in params2:
            params2["port"] = node2.newPort()
        if not intfName1:
            intfName1 = self.intfName(node1, params1["port"])
        if not intfName2:
            intfName2 = self.intfName(node2, params2["port"])
        # Link parameters apply to both ends, each end's own on top.
        p1, p2 = {**params, **params1}, {**params, **params2}
        lab = node1.lab
        if node2.lab is not lab:
            raise LabError(f"link {node1.name}-{node2.name}: the nodes belong to two networks")
        # The interfaces first (their ip lines wait), so that an interface class that
        # shapes (TCIntf, or a custom() of it) makes the link one netrig-link carries.
        lab.batching, was = True, lab.batching
        try:
            self.fast = fast
            self._deferred = True  # the ends' shaping is the link's own until it is made
            self.live = LiveLink("", node1.name, intfName1, node2.name, intfName2, None)
            self._shaping: list[dict[str, Any] | None] = [None, None]
            base = TCIntf if self.carried and intf is Intf else intf
            self.intf1 = (cls1 or base)(name=intfName1, node=node1, link=self, mac=addr1, **p1)
            self.intf2 = (cls2 or base)(name=intfName2, node=node2, link=self, mac=addr2, **p2)
            carried = self.carried or any(isinstance(i, TCIntf) for i in (self.intf1, self.intf2)) \
                or any(k in p for p in (p1, p2) for k in _SHAPING if k != "use_htb")
            for k, (i, p) in enumerate(((self.intf1, p1), (self.intf2, p2))):
                if carried and self._shaping[k] is None and not isinstance(i, TCIntf):
                    self._shaping[k] = shaping(**p)  # a plain Link given bw=, delay=...
            both = (self._shaping[0] or {}, self._shaping[1] or {})
            self.live = lab.add_link(node1.name, intfName1, node2.name, intfName2,
                                     shaping=both if carried else None)
            self._deferred = False
        finally:
            lab.batching = was
        if not was:
            lab.flush()

    @staticmethod
    def intfName(node: Any, n: int) -> str:
        assert node
        return f"{node.name}-eth{n}"

    def shape(self, intf: Intf, direction: dict[str, Any]) -> None:
        """intf's egress now shaped as `direction` (before the link is made: its
        shaping as built)."""
        d = 0 if intf is getattr(self, "intf1", None) or (not hasattr(self, "intf1") and
                                                           intf.node.name == self.live.a) else 1
        lab = intf.node.lab
        if self._deferred:
            self._shaping[d] = direction
            return
        if not self.live.made:
            both = list(self.live.shaping or ({}, {}))
            both[d] = direction
            self.live.shaping = (both[0], both[1])
            entry = next(e for e in lab.st.plan["links"] if e["name"] == self.live.name)
            entry["a_to_b"], entry["b_to_a"] = both
            return
        lab.set_direction(self.live.name, d, direction)

    def intfs(self) -> tuple[Intf, Intf]:
        return self.intf1, self.intf2

    def delete(self) -> None:
        node1, node2 = self.intf1.node, self.intf2.node
        node1.lab.del_link(self.live.name)
        node1.delIntf(self.intf1)
        node2.delIntf(self.intf2)

    def stop(self) -> None:
        self.delete()

    def status(self) -> str:
        return f"({self.intf1.status()} {self.intf2.status()})"

    def __str__(self) -> str:
        return f"{self.intf1}<->{self.intf2}"


class TCLink(Link):
    """A link netrig-link carries and shapes: bw (Mbit/s), delay, jitter, loss (%),
    max_queue_size (packets), enable_red, enable_ecn; each end's egress."""

    carried = True

    def __init__(self, node1: Any, node2: Any, port1: int | None = None, port2: int | None = None,
                 intfName1: str | None = None, intfName2: str | None = None,
                 addr1: str | None = None, addr2: str | None = None, **params: Any) -> None:
        params.setdefault("intf", TCIntf)
        super().__init__(node1, node2, port1=port1, port2=port2, intfName1=intfName1,
                         intfName2=intfName2, addr1=addr1, addr2=addr2, **params)


class TCULink(TCLink):
    """Mininet's TCLink with the user switch's workaround; the same here."""


OVSLink = Link
OVSIntf = Intf
