"""The topology model: nodes, links and each link direction's shaping, validated.

One schema serves the YAML file (`netrig.topo.load`) and the Python API:

    topo = Topology("lab")
    topo.host("h1"); topo.switch("s1"); topo.router("r1")
    topo.link("h1", "s1", rate="30Mbit", delay="20ms", queue=100)

This module owns `Topology` (building one, and the problems that span the whole
topology: dangling names, duplicate links, switch loops, routing that cannot run, each
found by `Topology.check()` at the path of the key at fault, e.g. ("links", 3, "b")) and
the file's top level (`TopologyFile`, `Addressing`, `Defaults`). The parts it is made of
live beside it and are importable from here too:

    problems   TopologyError, Problem, pydantic's errors as Problems
    shaping    Shaping, Aqm, GeModel, LinkSpec: what a link does, as the file writes it
    protocols  NodeSpec, Router, Ospf, Bgp, Routing: what a router runs, and the timers
    links      Link: a link with each direction resolved to numbers once

The keys of a link, their units, ranges and defaults are the link-spec schema's
(`netrig.link.spec`, owned by netrig-link): the models are made from it. Values keep
the text the user wrote (`30Mbit`) for labels; `Link.direction(i)` resolves one
direction to numbers in SI units once (`netrig.link.spec.Direction`), and everything
downstream reads those.
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from netrig import units
from netrig.prefixes import PREFIX_RE
from netrig.topo.links import DIRS, Link, _unreadable
from netrig.topo.problems import Problem, TopologyError, _check, _problems_of  # noqa: F401 (_check: callers use it from here)
from netrig.topo.protocols import (
    FRR_DAEMONS,
    Bgp,
    BgpTimers,
    Kind,
    NodeSpec,
    Ospf,
    OspfTimers,
    Router,
    Routing,
    area_id,
)
from netrig.topo.shaping import Aqm, GeModel, LinkSpec, Shaping

__all__ = ["DIRS", "FRR_DAEMONS", "NAME_CHARS", "Addressing", "Aqm", "Bgp", "BgpTimers", "Defaults",
           "GeModel", "Kind", "Link", "LinkSpec", "NodeSpec", "Ospf", "OspfTimers", "Problem", "Router",
           "Routing", "Shaping", "Topology", "TopologyError", "TopologyFile", "area_id"]

NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class Addressing(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pool: str = "10.0.0.0/16"
    prefix_len: int = Field(24, ge=8, le=30)
    # Each router running OSPF or BGP gets a /32 from here on its `lo` (its router ID).
    loopbacks: str = "10.255.0.0/16"

    @field_validator("pool", "loopbacks")
    @classmethod
    def _pool(cls, v: str) -> str:
        try:
            net = ipaddress.ip_network(v)
        except ValueError:
            raise ValueError(f"'{v}' is not a network (e.g. 10.0.0.0/16)") from None
        if net.version != 4:
            raise ValueError(f"'{v}': the pool is IPv4")
        return v


class Defaults(BaseModel):
    model_config = ConfigDict(extra="forbid")
    link: Shaping = Field(default_factory=Shaping)


class TopologyFile(BaseModel):
    """The YAML file's top level."""

    model_config = ConfigDict(extra="forbid")
    name: str = "lab"
    prefix: str | None = None
    backend: Literal["userspace", "kernel"] = "userspace"
    addressing: Addressing = Field(default_factory=Addressing)
    defaults: Defaults = Field(default_factory=Defaults)
    routing: Routing = Field(default_factory=Routing)
    nodes: dict[str, NodeSpec | Kind]
    links: list[LinkSpec | list[str]] = Field(default_factory=list)


class Topology:
    """Nodes and links; build one with the methods below or load a file with
    `netrig.topo.load.load(path)`."""

    def __init__(self, name: str = "lab", *, prefix: str | None = None, backend: str = "userspace",
                 pool: str = "10.0.0.0/16", prefix_len: int = 24, defaults: dict | None = None,
                 loopbacks: str = "10.255.0.0/16", routing: dict | Routing | None = None) -> None:
        self.name = name
        self.prefix = prefix
        self.backend = backend
        self.addressing = Addressing(pool=pool, prefix_len=prefix_len, loopbacks=loopbacks)
        self.defaults = Shaping.model_validate(defaults or {})
        self.routing = routing if isinstance(routing, Routing) else Routing.model_validate(routing or {})
        self.nodes: dict[str, str] = {}
        self.routers: dict[str, Router] = {}  # every router's routing (static: Router())
        self._ospf_count = (-1, 0)  # (len(routers) when counted, routers running OSPF)
        self.links: list[Link] = []
        self.source: str | None = None
        self.lines: dict[str, int] = {}  # the line of name: and prefix: in `source`

    # The Python API.
    def _node(self, name: str, kind: str) -> str:
        if name in self.nodes:
            raise TopologyError([f"node '{name}': defined twice"])
        self.nodes[name] = kind
        return name

    def host(self, name: str) -> str:
        return self._node(name, "host")

    def switch(self, name: str) -> str:
        return self._node(name, "switch")

    def router(self, name: str, *, ospf: dict | bool | None = None, bgp: dict | int | None = None,
               frr: dict[str, str] | None = None) -> str:
        """A router: static routes (netrig's plan) unless it runs `ospf` ({area: 0} or
        True) and/or `bgp` ({as: 65001} or 65001); `frr`: raw FRR lines per daemon."""
        try:
            spec = NodeSpec.model_validate({"kind": "router", "ospf": ospf, "bgp": bgp, "frr": frr})
        except ValidationError as e:
            raise TopologyError([f"node {name}: {p.where() + ': ' if p.path else ''}{p.message}"
                                 for p in _problems_of(e)]) from None
        self.routers[name] = spec.routing()
        return self._node(name, "router")

    @property
    def ospf_routers(self) -> int:
        """How many routers run OSPF (counted again only when a router is added)."""
        if self._ospf_count[0] != len(self.routers):
            self._ospf_count = (len(self.routers), sum(r.ospf_area is not None for r in self.routers.values()))
        return self._ospf_count[1]

    def ospf_ms(self, key: str) -> int:
        """An OSPF timer of `routing.ospf` in ms, SPF's throttle scaled with the lab's
        OSPF routers where the file gives none (protocols.spf_throttle_ms)."""
        return self.routing.ospf.ms(key, self.ospf_routers)

    def routing_of(self, node: str) -> Router:
        """A node's routing (a host, switch or static router: nothing dynamic)."""
        return self.routers.get(node) or Router()

    @property
    def dynamic(self) -> list[str]:
        """The routers FRR runs on."""
        return [n for n in self.nodes if self.routing_of(n).dynamic]

    def link(self, a: str, b: str, **params: Any) -> Link:
        """`rate`, `delay`, `jitter`, `loss`, `queue`, `aqm`, ... as in the file; per
        direction with `a_to_b={...}`, `b_to_a={...}`."""
        try:
            spec = LinkSpec.model_validate({"a": a, "b": b, **params})
        except ValidationError as e:
            raise TopologyError([f"link {a}-{b}: {p.where()}: {p.message}"
                                 for p in _problems_of(e)]) from None
        link = Link(spec, self.defaults)
        self.links.append(link)
        return link

    # Whole-topology checks.
    def problems(self) -> list[Problem]:
        out: list[Problem] = []
        if self.prefix is not None and not PREFIX_RE.fullmatch(self.prefix):
            out.append(Problem(("prefix",), f"'{self.prefix}' is not a lab prefix: use 1-15 "
                               "lowercase letters, digits or _, starting with a letter or digit "
                               "(it starts every namespace the lab creates)"))
        if not self.nodes:
            out.append(Problem(("nodes",), "no nodes"))
        for n in self.nodes:
            if not n or not set(n) <= NAME_CHARS or len(n) > 20:
                out.append(Problem(("nodes", n), "a node name is 1-20 letters, digits or _"))
        seen: dict[frozenset[str], int] = {}
        names: dict[str, int] = {}
        broken: set[int] = set()  # links whose directions do not resolve
        for i, l in enumerate(self.links):
            for end in ("a", "b"):
                n = getattr(l, end)
                if n not in self.nodes:
                    out.append(Problem(("links", i, end), f"no node named '{n}'"))
            if l.a == l.b:
                out.append(Problem(("links", i, "b"), f"a link from '{l.a}' to itself"))
            pair = frozenset((l.a, l.b))
            if pair in seen:
                out.append(Problem(("links", i), f"a second link between {l.a} and {l.b} (first: links[{seen[pair]}])"))
            seen.setdefault(pair, i)
            if l.name in names:
                out.append(Problem(("links", i, "name"), f"a second link named '{l.name}'"))
            names.setdefault(l.name, i)
            for d, key in ((0, "a_to_b"), (1, "b_to_a")):
                try:
                    l.direction(d)
                except ValidationError as e:
                    out.append(Problem(("links", i, key), "; ".join(p.message for p in _problems_of(e))))
                    broken.add(i)
                except units.UnitError as e:
                    out.append(Problem(("links", i, key), str(e)))
                    broken.add(i)
        out += self._switch_loops()
        out += self._traces(skip=broken)
        out += self._routing_problems()
        return out

    def _routing_problems(self) -> list[Problem]:
        """What the routing section asks that cannot run: a link's OSPF cost or area
        where neither end runs OSPF, an AS whose routers cannot reach each other's
        loopbacks for iBGP, loopbacks overlapping the pool."""
        out: list[Problem] = []
        for i, l in enumerate(self.links):
            for key in ("cost", "area"):
                if getattr(l.spec, key) is not None and not any(
                        self.routing_of(n).ospf_area is not None for n in (l.a, l.b) if n in self.nodes):
                    out.append(Problem(("links", i, key), f"an OSPF {key}, but neither {l.a} nor {l.b} runs OSPF"))
        by_as: dict[int, list[str]] = {}
        for n in self.nodes:
            r = self.routing_of(n)
            if r.asn is not None:
                by_as.setdefault(r.asn, []).append(n)
        for asn, members in by_as.items():
            no_igp = [n for n in members if self.routing_of(n).ospf_area is None]
            if len(members) > 1 and no_igp:
                out.append(Problem(("nodes", no_igp[0], "ospf"),
                                   f"AS {asn} has {len(members)} BGP routers ({', '.join(members)}) but "
                                   f"{', '.join(no_igp)} {'runs' if len(no_igp) == 1 else 'run'} no OSPF: iBGP runs between loopbacks, which "
                                   "OSPF carries inside the AS (give each of them ospf:)"))
        if self.dynamic:
            pool = ipaddress.ip_network(self.addressing.pool)
            lo = ipaddress.ip_network(self.addressing.loopbacks)
            if pool.overlaps(lo):
                out.append(Problem(("addressing", "loopbacks"),
                                   f"{lo} overlaps the pool {pool}: routers' loopbacks need their own range"))
            elif lo.num_addresses - 2 < len(self.dynamic) and lo.prefixlen < 32:
                out.append(Problem(("addressing", "loopbacks"),
                                   f"{lo} holds {lo.num_addresses - 2} loopbacks, for {len(self.dynamic)} routers"))
        return out

    def _traces(self, skip: set[int]) -> list[Problem]:
        """Every trace a link replays is a file netrig-link can read (a relative path
        starts at the topology file's directory: `Link.path`), blamed on the key
        that named it: the direction's, the link's or the file's default. Links in
        `skip` (already wrong) are not looked at."""
        out: list[Problem] = []
        for i, l in enumerate(self.links):
            if i in skip:
                continue
            for over, key in ((l.spec.a_to_b, "a_to_b"), (l.spec.b_to_a, "b_to_a")):
                if over is not None and "trace" in over.model_fields_set:
                    path, trace = ("links", i, key, "trace"), over.trace
                elif "trace" in l.spec.model_fields_set:
                    path, trace = ("links", i, "trace"), l.spec.trace
                else:
                    path, trace = ("defaults", "link", "trace"), self.defaults.trace
                msg = _unreadable(trace, l)
                if msg and Problem(path, msg) not in out:
                    out.append(Problem(path, msg))
        return out

    def _switch_loops(self) -> list[Problem]:
        """A cycle among switches (with no STP) floods forever: refuse it."""
        parent = {n: n for n, k in self.nodes.items() if k == "switch"}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        out = []
        for i, l in enumerate(self.links):
            if l.a in parent and l.b in parent and l.a != l.b:
                ra, rb = find(l.a), find(l.b)
                if ra == rb:
                    out.append(Problem(("links", i), f"link {l.a}-{l.b} closes a loop of switches "
                                                     "(no spanning tree runs here)"))
                else:
                    parent[ra] = rb
        return out

    def check(self) -> Topology:
        problems = self.problems()
        if problems:
            raise TopologyError([f"{self.source or self.name}: {p.where()}: {p.message}" for p in problems])
        return self

    def links_of(self, node: str) -> list[Link]:
        return [l for l in self.links if node in (l.a, l.b)]

    def link_named(self, a: str, b: str | None = None) -> Link:
        """By name (`r2-r3`, `L2`) or by its two ends in either order."""
        for l in self.links:
            if b is None and l.name == a:
                return l
            if b is not None and {l.a, l.b} == {a, b}:
                return l
        what = f"between {a} and {b}" if b else f"named '{a}'"
        raise TopologyError([f"no link {what}"])

    @property
    def base_dir(self) -> str | None:
        """The directory of the file this topology came from (its links' relative
        paths start there), None for one built in Python."""
        if not self.source or self.source.startswith("<"):
            return None
        return os.path.dirname(os.path.abspath(self.source))

    @property
    def lab_prefix(self) -> str:
        return self.prefix or self.name

    def lab_prefix_problem(self) -> str | None:
        """Why this topology cannot be built under its own prefix (its prefix:, else its
        name), at the key that gave it; None when it can. (A scenario's topology runs
        under a prefix of the run's, so only `netrig up` asks.)"""
        if PREFIX_RE.fullmatch(self.lab_prefix):
            return None
        where = f"{self.source or self.name}:{self.lines.get('name', 1)}: name"
        return (f"{where}: '{self.name}' is also the lab's prefix (the file gives no prefix:), "
                "and a prefix is 1-15 lowercase letters, digits or _: add prefix: to the "
                "file, or give --prefix")
