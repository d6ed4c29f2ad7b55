"""FRR's configuration of a lab's routers, and what their routing tables should hold
once the protocols have converged: pure (no system calls; `tests/unit/test_frr_config.py`),
a function of the plan (`netrig.topo.plan`). Running the daemons is `netrig.lab.frr`'s,
which re-exports the names below.

- `configs(plan, router)`: the files FRR reads, as text. zebra.conf always; ospfd.conf
  when the router runs OSPF, bgpd.conf when it runs BGP, staticd.conf only when the
  topology gives `frr: {staticd: ...}`; each daemon's raw `frr:` lines appended to its
  file; vtysh.conf marks root `nopassword` (vtysh then needs no PAM).
- OSPF: an interface toward another OSPF router of the same AS (or both without one)
  is active, point-to-point on a link between two routers and broadcast on a switch
  segment; every other interface is passive (its subnet is announced, nobody is
  talked to). Cost: the link's `cost`, else ceil(reference bandwidth / the rate
  leaving the interface), 1 ... 65535 (unrated: 1). Timers from `topo.routing.ospf`
  (SPF's throttle, where not given, scaled with the lab: `Topology.ospf_ms`);
  FRR's MinLSArrival is min(lsa_interval, its default 1 s). A router's raw `frr:`
  lines come after netrig's, so a `timers throttle spf` of its own wins.
- BGP: eBGP over every segment shared with a BGP router of another AS (its address on
  the segment); iBGP, loopback to loopback with next-hop-self, with every other router
  of the AS; each router announces its connected subnets and its loopback, and a border
  router (one with eBGP neighbours) the loopbacks of its AS too (see `_announced`).
- `expected_routes(plan)`: per router, every prefix it should route once converged,
  named by what it belongs to (`loopback of r3`, `link r1-r2`, `switch s1`): the
  subnets and loopbacks of its OSPF domain (routers joined by OSPF adjacencies) and,
  with BGP, everything announced by the ASes its AS is joined to by eBGP.
  `expected_adjacencies(plan)`: the Full OSPF neighbours each interface should have;
  `expected_bgp_peers(plan)`: the BGP sessions each router should have Established;
  `not_established` and `full_by_iface` read what the daemons say against those.
- `default_wait_s(topo)`: how long `netrig up` waits for convergence by default.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Collection, Iterable, Iterator, Mapping

from netrig.topo.model import Topology
from netrig.topo.plan import Iface, Plan, Segment

# The plan, read the way the protocols see it.

def _ospf_peers(topo: Topology, a: str, b: str) -> bool:
    """Do routers a and b form OSPF adjacencies (both run it, in the same AS or none)?"""
    ra, rb = topo.routing_of(a), topo.routing_of(b)
    return ra.ospf_area is not None and rb.ospf_area is not None and ra.asn == rb.asn


def _others(plan: Plan, i: Iface) -> list[Iface]:
    return [j for j in plan.segments[i.segment].ifaces if j.node != i.node]


def segment_label(plan: Plan, seg: Segment) -> str:
    """What a segment is, in the topology's words: `switch s1`, `link r1-r2`."""
    if seg.switches:
        return f"switch {', '.join(seg.switches)}"
    return f"link {seg.ifaces[0].link.name}" if seg.ifaces else f"segment {seg.index}"


def cost(plan: Plan, i: Iface) -> int:
    """The OSPF cost of interface i: its link's `cost`, else reference / rate out."""
    given = i.link.spec.cost
    if given is not None:
        return given
    rate = i.link.direction(i.end).rate_bps
    if not rate:
        return 1
    return max(1, min(65535, math.ceil(plan.topo.routing.ospf.reference_bps / rate)))


def _area(plan: Plan, router: str, i: Iface) -> str:
    return i.link.spec.area or plan.topo.routing_of(router).ospf_area or "0.0.0.0"


def _ebgp(plan: Plan, router: str) -> list[tuple[ipaddress.IPv4Address, int]]:
    """(address, AS) of each eBGP neighbour: a BGP router of another AS on a segment."""
    topo = plan.topo
    mine = topo.routing_of(router).asn
    out = []
    for i in plan.ifaces[router]:
        for j in _others(plan, i):
            theirs = topo.routing_of(j.node).asn
            if theirs is not None and theirs != mine and j.addr is not None:
                out.append((j.addr.ip, theirs))
    return out


def _by_as(plan: Plan) -> dict[int | None, list[str]]:
    """The dynamic routers of each AS (None: those without BGP), in node order."""
    out: dict[int | None, list[str]] = {}
    for n in plan.topo.dynamic:
        out.setdefault(plan.topo.routing_of(n).asn, []).append(n)
    return out


def _same_as(plan: Plan, router: str, by_as: dict[int | None, list[str]] | None = None) -> list[str]:
    """The other routers of the router's AS (`by_as`: `_by_as(plan)`, when the caller
    asks for every router's)."""
    members = (by_as if by_as is not None else _by_as(plan)).get(plan.topo.routing_of(router).asn, [])
    return [n for n in members if n != router]


def _announced(plan: Plan, router: str,
               by_as: dict[int | None, list[str]] | None = None) -> list[ipaddress.IPv4Network]:
    """What a BGP router announces: its connected subnets, then its loopback, then, on a
    border router (one with eBGP neighbours), the loopbacks of the other routers of its
    AS: a loopback learnt over iBGP has that very loopback as next hop, which BGP will
    not resolve through the route itself, so it would never cross the border."""
    nets = [plan.segments[i.segment].subnet for i in plan.ifaces[router]]
    out = list(dict.fromkeys(n for n in nets if n is not None))
    out.append(plan.loopbacks[router].network)
    if _ebgp(plan, router):
        out += [plan.loopbacks[n].network for n in _same_as(plan, router, by_as)]
    return out


# The configuration files.

def configs(plan: Plan, router: str) -> dict[str, str]:
    """File name -> text, for every file FRR reads on this router."""
    topo = plan.topo
    r = topo.routing_of(router)
    out = {"zebra.conf": _lines([f"hostname {router}"], r.frr.get("zebra")),
           "vtysh.conf": "username root nopassword\n"}
    if r.ospf_area is not None:
        out["ospfd.conf"] = _lines(_ospf(plan, router), r.frr.get("ospfd"))
    if r.asn is not None:
        out["bgpd.conf"] = _lines(_bgp(plan, router), r.frr.get("bgpd"))
    if "staticd" in r.frr:
        out["staticd.conf"] = _lines([f"hostname {router}"], r.frr["staticd"])
    return out


def _lines(ours: list[str], raw: str | None) -> str:
    text = "\n".join(ours) + "\n"
    if raw:
        text += "! raw lines from the topology's frr:\n" + raw.rstrip("\n") + "\n"
    return text


def _ospf(plan: Plan, router: str) -> list[str]:
    topo = plan.topo
    t = topo.routing.ospf
    lines = [f"hostname {router}"]
    for i in plan.ifaces[router]:
        peers = [j for j in _others(plan, i) if _ospf_peers(topo, router, j.node)]
        lines.append(f"interface {i.name}")
        if peers:
            seg = plan.segments[i.segment]
            lines.append(f" ip ospf network {'broadcast' if seg.switches else 'point-to-point'}")
            lines += [f" ip ospf hello-interval {t.hello_s}", f" ip ospf dead-interval {t.dead_s}"]
        else:
            lines.append(" ip ospf passive")
        lines += [f" ip ospf cost {cost(plan, i)}", f" ip ospf area {_area(plan, router, i)}", "exit"]
    lo = plan.loopbacks[router]
    lines += ["interface lo", f" ip ospf area {topo.routing_of(router).ospf_area}", "exit",
              "router ospf", f" ospf router-id {lo.ip}", " log-adjacency-changes detail",
              f" timers throttle spf {topo.ospf_ms('spf_delay')} {topo.ospf_ms('spf_hold')} "
              f"{topo.ospf_ms('spf_max_hold')}",
              f" timers throttle lsa all {t.ms('lsa_interval')}",
              f" timers lsa min-arrival {min(t.ms('lsa_interval'), 1000)}", "exit"]
    return lines


def _bgp(plan: Plan, router: str) -> list[str]:
    topo = plan.topo
    t = topo.routing.bgp
    asn = topo.routing_of(router).asn
    lo = plan.loopbacks[router]
    lines = [f"hostname {router}", f"router bgp {asn}", f" bgp router-id {lo.ip}",
             " no bgp ebgp-requires-policy", " no bgp network import-check",
             f" timers bgp {t.s('keepalive')} {t.s('hold')}"]
    ibgp = [plan.loopbacks[n].ip for n in _same_as(plan, router)]
    neighbours = [(a, x) for a, x in _ebgp(plan, router)] + [(a, asn) for a in ibgp]
    mrai = t.s("advertisement_interval")
    ibgp_set = set(ibgp)
    for addr, their_as in neighbours:
        lines.append(f" neighbor {addr} remote-as {their_as}")
        if addr in ibgp_set:
            lines.append(f" neighbor {addr} update-source lo")
        lines.append(f" neighbor {addr} timers connect {t.s('connect_retry')}")
        if mrai is not None:
            lines.append(f" neighbor {addr} advertisement-interval {mrai}")
    lines.append(" address-family ipv4 unicast")
    lines += [f"  network {n}" for n in _announced(plan, router)]
    for addr, _ in neighbours:
        lines.append(f"  neighbor {addr} activate")
        if addr in ibgp_set:
            lines.append(f"  neighbor {addr} next-hop-self")
    lines += [" exit-address-family", "exit"]
    return lines


# What each router should route, once converged.

def _components(nodes: Iterable[str], joined: Iterable[tuple[str, str]]) -> dict[str, str]:
    parent = {n: n for n in nodes}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in joined:
        parent[find(a)] = find(b)
    return {n: find(n) for n in parent}


class _Table:
    """Prefix -> what it belongs to, in prefix order, shared by the routers of one OSPF
    domain and BGP group; each prefix's text (`str`) made once, when first asked for."""

    def __init__(self, labels: dict[ipaddress.IPv4Network, str]) -> None:
        self.labels = labels
        self._texts: list[tuple[str, ipaddress.IPv4Network]] | None = None
        self._set: frozenset[str] | None = None

    def texts(self) -> list[tuple[str, ipaddress.IPv4Network]]:
        if self._texts is None:
            self._texts = [(str(n), n) for n in self.labels]
        return self._texts


class _Texts(Collection[str]):
    """One router's expected prefixes as text (`str` of each): membership against its
    table's one shared set, less its own; what a route watcher counts with."""

    def __init__(self, table: _Table, own: set[str]) -> None:
        if table._set is None:
            table._set = frozenset(t for t, _ in table.texts())
        self._all, self._own = table._set, own

    def __contains__(self, text: object) -> bool:
        return text in self._all and text not in self._own

    def __len__(self) -> int:
        return len(self._all) - len(self._own)

    def __iter__(self) -> Iterator[str]:
        return (t for t in self._all if t not in self._own)


class Expected(Mapping[ipaddress.IPv4Network, str]):
    """One router's expected prefixes (prefix -> what it belongs to, in prefix order):
    those of its OSPF domain and BGP group, less its own. The routers of one domain share
    one table, so a grid of N routers holds N small sets, not N copies of N prefixes."""

    def __init__(self, table: _Table, own: set[ipaddress.IPv4Network]) -> None:
        self._table = table
        self._own = own & table.labels.keys()

    def __getitem__(self, n: ipaddress.IPv4Network) -> str:
        if n in self._own:
            raise KeyError(n)
        return self._table.labels[n]

    def __iter__(self) -> Iterator[ipaddress.IPv4Network]:
        own = self._own
        return (n for n in self._table.labels if n not in own) if own else iter(self._table.labels)

    def __len__(self) -> int:
        return len(self._table.labels) - len(self._own)

    def __repr__(self) -> str:
        return repr(dict(self))

    def texts(self) -> list[tuple[str, ipaddress.IPv4Network]]:
        """(`str(prefix)`, prefix) of each, in order: what a poll compares with the text
        of the kernel's routes, without making a prefix object of every route it reads."""
        own = {str(n) for n in self._own}
        return [t for t in self._table.texts() if t[0] not in own]

    def as_texts(self) -> Collection[str]:
        """The prefixes' text, for membership and a count (no set per router)."""
        return _Texts(self._table, {str(n) for n in self._own})


def expected_routes(plan: Plan) -> dict[str, Expected]:
    """Per dynamic router: prefix -> what it belongs to, for every prefix its routing
    table should hold (its own loopback and connected subnets left out)."""
    topo = plan.topo
    routers = topo.dynamic
    asn = {r: topo.routing_of(r).asn for r in routers}
    ospf = {r for r in routers if topo.routing_of(r).ospf_area is not None}
    bgp = {r for r in routers if asn[r] is not None}
    adj, ebgp = [], []
    for r in routers:
        for i in plan.ifaces[r]:
            for j in _others(plan, i):
                if r in ospf and j.node in ospf and _ospf_peers(topo, r, j.node):
                    adj.append((r, j.node))
                if r in bgp and j.node in bgp and asn[r] != asn[j.node]:
                    ebgp.append((asn[r], asn[j.node]))
    domain = _components(ospf, adj)
    as_group = _components({asn[r] for r in bgp}, ebgp)
    labels: dict[ipaddress.IPv4Network, str] = {}
    for seg in plan.segments:
        if seg.subnet is not None:
            labels.setdefault(seg.subnet, segment_label(plan, seg))
    for r, lo in plan.loopbacks.items():
        labels[lo.network] = f"loopback of {r}"

    def own(r: str) -> list[ipaddress.IPv4Network]:
        nets = [plan.segments[i.segment].subnet for i in plan.ifaces[r]]
        return [n for n in nets if n is not None] + [plan.loopbacks[r].network]

    # What each OSPF domain and each BGP group of ASes carries, gathered once.
    by_domain: dict[str, set[ipaddress.IPv4Network]] = {}
    for m in ospf:
        by_domain.setdefault(domain[m], set()).update(own(m))
    by_group: dict[object, set[ipaddress.IPv4Network]] = {}
    by_as = _by_as(plan)
    for m in bgp:
        by_group.setdefault(as_group[asn[m]], set()).update(_announced(plan, m, by_as))
    tables: dict[tuple, _Table] = {}
    out: dict[str, Expected] = {}
    for r in routers:
        key = (domain.get(r), as_group[asn[r]] if r in bgp else None)
        if key not in tables:
            want = set(by_domain.get(key[0], ())) if key[0] is not None else set()
            if key[1] is not None:
                want |= by_group[key[1]]
            tables[key] = _Table({n: labels[n] for n in sorted(want)})
        out[r] = Expected(tables[key], set(own(r)))
    return out


def expected_adjacencies(plan: Plan) -> dict[str, dict[str, int]]:
    """Per OSPF router: interface -> how many neighbours it is Full with once converged
    (a point-to-point link: 1; a switch segment with k other OSPF routers: min(k, 2),
    the DR and the BDR, as the DR and BDR are Full with everyone)."""
    topo = plan.topo
    out: dict[str, dict[str, int]] = {}
    for r in topo.dynamic:
        if topo.routing_of(r).ospf_area is None:
            continue
        out[r] = {}
        for i in plan.ifaces[r]:
            k = len({j.node for j in _others(plan, i) if _ospf_peers(topo, r, j.node)})
            if k:
                out[r][i.name] = min(k, 2) if plan.segments[i.segment].switches else 1
    return out


def expected_bgp_peers(plan: Plan) -> dict[str, dict[str, int]]:
    """Per BGP router: neighbour address -> its AS, for every session it configures (each
    eBGP neighbour on a segment, each router of its own AS by loopback); once converged,
    every one is Established."""
    out: dict[str, dict[str, int]] = {}
    by_as = _by_as(plan)
    for r in plan.topo.dynamic:
        asn = plan.topo.routing_of(r).asn
        if asn is None:
            continue
        out[r] = {str(a): x for a, x in _ebgp(plan, r)}
        out[r].update({str(plan.loopbacks[n].ip): asn for n in _same_as(plan, r, by_as)})
    return out


def not_established(want: dict[str, int], peers: list[dict]) -> list[str]:
    """The sessions of `want` (address -> AS) that `bgp_peers` does not show Established."""
    state = {p["address"]: p["state"] for p in peers}
    return [f"{a} (AS {x}, {state.get(a, 'not configured')})" for a, x in want.items()
            if state.get(a) != "Established"]


def full_by_iface(neighbours: list[dict]) -> dict[str, int]:
    """How many neighbours are Full on each interface (from `ospf_neighbours`)."""
    out: dict[str, int] = {}
    for n in neighbours:
        if str(n["state"]).startswith("Full"):
            out[n["iface"]] = out.get(n["iface"], 0) + 1
    return out


def default_wait_s(topo: Topology) -> float:
    """How long `netrig up` waits for convergence by default: 30 s, plus three dead
    intervals with OSPF, plus three connect-retry intervals and an advertisement
    interval per AS with BGP."""
    rs = [topo.routing_of(r) for r in topo.dynamic]
    wait = 30.0
    if any(r.ospf_area is not None for r in rs):
        wait += 3 * topo.routing.ospf.dead_s
    ases = {r.asn for r in rs if r.asn is not None}
    if ases:
        b = topo.routing.bgp
        wait += 3 * (b.s("connect_retry") or 0) + len(ases) * (b.s("advertisement_interval") or 0)
    return wait
