"""Stitching labs: a link between two labs' nodes, carried by VXLAN (a prototype).

How a topology split over machines would join its parts (docs/scaling.md): each link
that crosses machines becomes one VXLAN tunnel, a VNI of its own, between the two
machines' underlay addresses. A tunnel end is a `vxlan` device made in the machine's
underlay namespace (where its UDP socket stays for good) and then moved into the lab:
into a node's namespace, where it is that node's interface for the link (its address,
its routes); or into a lab's switch namespace as a port of the switch's bridge, so that
a link the lab already emulates (node -- switch, shaped by netrig-link) reaches the
other machine through it: the emulator runs on that side only.

    u = make_underlay("st1", "192.168.217.0/30")          # two "machines" joined by a veth
    a = Side(u.a, *place(net_a, "r1"), dev="vx0", addr="10.50.0.1/30",
             routes=("10.42.0.0/16 via 10.50.0.2",))
    b = Side(u.b, *place(net_b, "r2"), dev="vx0", addr="10.50.0.2/30",
             routes=("10.41.0.0/16 via 10.50.0.1",))
    s = stitch(4242, a, b)                                # traffic passes
    unstitch(s); remove_underlay(u)                       # by the names recorded

On this machine the two "machines" are two namespaces joined by a veth pair (the wire
between them); between real machines the underlay is their own network and each side
is made there. The tunnel's MTU is the underlay's less 50 bytes (outer IPv4 20, UDP 8,
VXLAN 8, inner Ethernet 14; 70 over IPv6): raise the underlay's MTU to 1550 and the lab
keeps 1500, or keep 1500 and the stitched interfaces get 1450 (TCP's MSS 1398). The
kernel derives it only from the underlay device the tunnel is told (`dev`): without one
a vxlan device gets 1500 whatever the underlay. A tunnel end on a bridge whose ports
carry larger packets than the tunnel is refused: the bridge would drop them silently.

Owns the tunnels and the stand-in underlay, by the names it is given; not the labs
(`netrig.lab.build`) nor their address plans: the caller gives each side's address and
routes (a split topology would take them from its one plan).
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
from dataclasses import dataclass, field

from netrig.errors import NetrigError
from netrig.lab import netns
from netrig.lab.build import SW, bridge_names

VXLAN_PORT = 4789  # IANA's VXLAN port
IFNAMSIZ = 15
OVERHEAD_V4 = 50  # outer IPv4 20 + UDP 8 + VXLAN 8 + the inner frame's Ethernet 14
OVERHEAD_V6 = 70  # outer IPv6 40 instead of 20


class StitchError(NetrigError):
    pass


def tunnel_mtu(underlay_mtu: int, ipv6: bool = False) -> int:
    """The largest inner IP packet a VXLAN tunnel carries over an underlay of this MTU."""
    return underlay_mtu - (OVERHEAD_V6 if ipv6 else OVERHEAD_V4)


@dataclass(frozen=True)
class Vtep:
    """A machine's tunnel endpoint: the namespace holding its underlay address (the
    tunnels' UDP sockets live there; a real machine's root namespace), the underlay
    interface (the MTU comes from it) and the address."""

    ns: str
    dev: str
    addr: str


@dataclass(frozen=True)
class Side:
    """One end of a stitched link.

    vtep: the machine it is made on. ns: where the tunnel's interface
    goes (a node's namespace, or a lab's switch namespace); bridge: the switch's bridge
    to join there, else None. dev: the interface's name in ns. addr ("10.50.0.1/30") and
    routes ("10.42.0.0/16 via 10.50.0.2"): a node's, on that interface; none on a bridge
    port (the node behind the switch holds the address)."""

    vtep: Vtep
    ns: str
    bridge: str | None
    dev: str
    addr: str | None = None
    routes: tuple[str, ...] = ()

    def problems(self) -> list[str]:
        out = []
        if not 0 < len(self.dev) <= IFNAMSIZ or "/" in self.dev or " " in self.dev:
            out.append(f"interface name '{self.dev}' (1-{IFNAMSIZ} characters, no '/' or space)")
        try:
            ipaddress.IPv4Address(self.vtep.addr)
        except ValueError:
            out.append(f"underlay address '{self.vtep.addr}' is not an IPv4 address")
        if self.bridge is not None and (self.addr or self.routes):
            out.append(f"a port of bridge {self.bridge} takes no address or routes "
                       "(the node behind the switch holds them)")
        if self.addr is not None:
            try:
                if "/" not in self.addr:
                    raise ValueError
                ipaddress.IPv4Interface(self.addr)
            except ValueError:
                out.append(f"'{self.addr}' is not an IPv4 address with its prefix length")
        for r in self.routes:
            parts = r.split()
            if len(parts) != 3 or parts[1] != "via":
                out.append(f"route '{r}' is not 'DEST via GATEWAY'")
        return out


@dataclass
class Stitch:
    """A tunnel as made: what `unstitch` removes, by name."""

    vni: int
    port: int
    sides: list[Side] = field(default_factory=list)  # the ends made so far


def place(net, node: str) -> tuple[str, str | None]:
    """Where a tunnel end joins node `node` of a running `Network`: (its namespace, None),
    or for a switch (the lab's switch namespace, the switch's bridge)."""
    st = net.state
    if st is None:
        raise StitchError(f"lab of {node}: the network is not up")
    if node not in net.topo.nodes:
        raise StitchError(f"lab '{st.prefix}' has no node named '{node}'")
    if net.topo.nodes[node] == "switch":
        return st.prefix + "-" + SW, bridge_names(net.plan)[node]
    return st.node_ns[node], None


def _ip(lines: list[str], ns: str | None, what: str) -> None:
    try:
        netns.ip_batch(lines, ns)
    except netns.NetnsError as e:
        raise StitchError(f"{what}: {e}") from None


def make_end(side: Side, vni: int, remote: str, port: int = VXLAN_PORT) -> None:
    """One tunnel end: a vxlan device made in side.vtep.ns (toward `remote`), moved
    into side.ns as side.dev, then joined to the bridge, or given its address and routes;
    up. The device is removed again if a later step fails."""
    bad = side.problems()
    if not 0 < vni < 1 << 24:
        bad.append(f"VNI {vni} is not 1 .. {(1 << 24) - 1}")
    if bad:
        raise StitchError(f"tunnel end {side.ns}/{side.dev}: " + "; ".join(bad))
    tmp = f"vx{vni}"  # unique in the underlay namespace while it is there: one VNI per link
    where = f"tunnel VNI {vni}, end {side.ns}/{side.dev}"
    v = side.vtep
    _ip([f"link add {tmp} type vxlan id {vni} local {v.addr} remote {remote} dev {v.dev} "
         f"dstport {port}",
         f"link set {tmp} netns {side.ns}"], v.ns, f"{where} (in {v.ns})")
    try:
        if side.bridge is not None:
            _check_bridge_mtu(side, tmp, where)
        lines = [f"link set {tmp} name {side.dev}"]
        if side.bridge is not None:
            lines.append(f"link set {side.dev} master {side.bridge}")
        if side.addr is not None:
            lines.append(f"addr add {side.addr} dev {side.dev}")
        lines.append(f"link set {side.dev} up")
        lines += [f"route add {r.split()[0]} via {r.split()[2]} dev {side.dev}" for r in side.routes]
        _ip(lines, side.ns, where)
    except StitchError:
        for name in (side.dev, tmp):
            subprocess.run(["ip", "-n", side.ns, "link", "del", name], capture_output=True, timeout=30)
        raise


def _check_bridge_mtu(side: Side, tmp: str, where: str) -> None:
    """StitchError if the bridge's ports carry larger packets than the tunnel: a bridge
    neither fragments nor answers "too big", so those frames would vanish (measured: a
    TCP flow at MSS 1448 moved nothing through a 1450-byte tunnel on a bridge)."""
    mtu = link_info(side.ns, tmp)["mtu"]
    p = subprocess.run(["ip", "-n", side.ns, "-j", "link", "show", "master", str(side.bridge)],
                       capture_output=True, text=True, timeout=30)
    ports = json.loads(p.stdout or "[]") if p.returncode == 0 else []
    big = [x for x in ports if x.get("mtu", 0) > mtu]
    if big:
        m = max(x["mtu"] for x in big)
        raise StitchError(f"{where}: bridge {side.bridge}'s port {big[0]['ifname']} carries packets of "
                          f"{m} bytes, the tunnel {mtu} (its underlay's MTU less {OVERHEAD_V4}); larger "
                          "frames would vanish at the bridge without an error: raise the underlay's MTU "
                          f"to {m + OVERHEAD_V4} or more, or lower the lab's MTU on this segment to {mtu}")


def stitch(vni: int, a: Side, b: Side, port: int = VXLAN_PORT) -> Stitch:
    """Both ends of one tunnel, each toward the other's underlay address; on failure
    removes the end already made and re-raises."""
    s = Stitch(vni, port)
    try:
        for side, other in ((a, b), (b, a)):
            make_end(side, vni, other.vtep.addr, port)
            s.sides.append(side)
    except BaseException:
        unstitch(s)
        raise
    return s


def unstitch(s: Stitch) -> list[str]:
    """Deletes the tunnel's interfaces by name (their routes go with them); returns the
    problems, never raises. An end whose namespace is gone (its lab torn down) is gone."""
    errors = []
    for side in s.sides:
        if not netns.exists(side.ns):
            continue
        p = subprocess.run(["ip", "-n", side.ns, "link", "del", side.dev], capture_output=True,
                           text=True, timeout=30)
        if p.returncode != 0 and "Cannot find device" not in p.stderr:
            errors.append(f"{side.ns}/{side.dev}: {p.stderr.strip()}")
    return errors


def link_info(ns: str, dev: str) -> dict:
    """`ip -d -j link show dev DEV` in ns: mtu, linkinfo (vxlan id, remote, port), ..."""
    p = subprocess.run(["ip", "-n", ns, "-d", "-j", "link", "show", "dev", dev], capture_output=True,
                       text=True, timeout=30)
    if p.returncode != 0:
        raise StitchError(f"{ns}/{dev}: {p.stderr.strip()}")
    return json.loads(p.stdout)[0]


# The stand-in underlay: two namespaces, one per "machine", joined by a veth pair.
@dataclass(frozen=True)
class Underlay:
    a: Vtep
    b: Vtep
    mtu: int


def make_underlay(prefix: str, subnet: str = "192.168.217.0/30", mtu: int = 1500) -> Underlay:
    """Namespaces PREFIX-ua and PREFIX-ub, joined by veth PREFIXu0 / PREFIXu1 holding the
    subnet's first two addresses, at `mtu`; removed again if a step fails."""
    if len(prefix) + 2 > IFNAMSIZ:
        raise StitchError(f"underlay prefix '{prefix}': at most {IFNAMSIZ - 2} characters")
    hosts = list(ipaddress.IPv4Network(subnet).hosts())
    if len(hosts) < 2:
        raise StitchError(f"underlay subnet {subnet} holds fewer than two addresses")
    plen = ipaddress.IPv4Network(subnet).prefixlen
    u = Underlay(Vtep(f"{prefix}-ua", f"{prefix}u0", str(hosts[0])),
                 Vtep(f"{prefix}-ub", f"{prefix}u1", str(hosts[1])), mtu)
    taken = [v.ns for v in (u.a, u.b) if netns.exists(v.ns)]
    if taken:
        raise StitchError(f"namespace {taken[0]} exists: remove it, or choose another underlay prefix")
    try:
        netns.add([u.a.ns, u.b.ns])
        _ip([f"link add {u.a.dev} netns {u.a.ns} mtu {mtu} type veth peer name {u.b.dev} "
             f"netns {u.b.ns} mtu {mtu}"], None, "underlay veth")
        for v in (u.a, u.b):  # IPv4 only, as in a lab: no IPv6 chatter in the counters
            netns.sysctls(v.ns, {"net.ipv6.conf.all.disable_ipv6": "1",
                                 "net.ipv6.conf.default.disable_ipv6": "1"})
            _ip(["link set lo up", f"addr add {v.addr}/{plen} dev {v.dev}", f"link set {v.dev} up"],
                v.ns, f"underlay {v.ns}")
    except BaseException:
        remove_underlay(u)
        raise
    return u


def remove_underlay(u: Underlay) -> list[str]:
    """Deletes the two namespaces (their veth goes with them); returns the problems."""
    return netns.delete([u.a.ns, u.b.ns])
