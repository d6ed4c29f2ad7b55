"""The topology model: nodes, links and each link direction's shaping, validated.

One schema serves the YAML file (`netrig.topo.load`) and the Python API:

    topo = Topology("lab")
    topo.host("h1"); topo.switch("s1"); topo.router("r1")
    topo.link("h1", "s1", rate="30Mbit", delay="20ms", queue=100)

Values keep the units the user wrote (`30Mbit`); `Link.direction(i)` resolves one
direction (file defaults < the link's own values < its `a_to_b`/`b_to_a` block) to
numbers in SI units (`DirParams`). Problems that span the whole topology (dangling
names, duplicate links, switch loops) are found by `Topology.check()`, each with the
path of the key at fault, e.g. ("links", 3, "b").
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from netrig import units
from netrig.errors import NetrigError

Kind = Literal["host", "switch", "router"]
AQMS = ("droptail", "red", "codel", "pie", "fq_codel")
# Which parameters each discipline takes (besides the queue limit).
AQM_PARAMS: dict[str, tuple[str, ...]] = {
    "droptail": (),
    "red": ("min_th", "max_th", "max_p", "gentle", "ecn"),
    "codel": ("target", "interval", "ecn"),
    "pie": ("target", "tupdate", "alpha", "beta", "max_burst", "ecn"),
    "fq_codel": ("target", "interval", "flows", "quantum", "ecn"),
}
DISTRIBUTIONS = ("uniform", "normal", "pareto", "paretonormal")
# A lab prefix: it starts every namespace (and interface) name the lab creates.
PREFIX_RE = re.compile(r"[a-z0-9][a-z0-9_]{0,14}")
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class TopologyError(NetrigError):
    """One or more problems, each naming where: `file:line: key: message`."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class Problem:
    path: tuple[str | int, ...]
    message: str

    def where(self) -> str:
        return ".".join(str(p) for p in self.path)


def _check(parse: Any, value: Any) -> Any:
    if value is None:
        return None
    try:
        parse(value)
    except units.UnitError as e:
        raise ValueError(str(e)) from None
    return value


class Aqm(BaseModel):
    """`aqm: {type: pie, target: 20ms}`; unset parameters take the RFC's defaults."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["droptail", "red", "codel", "pie", "fq_codel"]
    target: str | None = None
    interval: str | None = None
    tupdate: str | None = None
    max_burst: str | None = None
    alpha: float | None = Field(None, ge=0)
    beta: float | None = Field(None, ge=0)
    flows: int | None = Field(None, ge=1, le=65536)
    quantum: int | None = Field(None, ge=64)
    min_th: str | int | None = None
    max_th: str | int | None = None
    max_p: float | None = Field(None, gt=0, le=1)
    gentle: bool | None = None
    ecn: bool | None = None

    @field_validator("target", "interval", "tupdate", "max_burst")
    @classmethod
    def _duration(cls, v: Any) -> Any:
        return _check(units.seconds_above_zero, v)

    @field_validator("min_th", "max_th")
    @classmethod
    def _size(cls, v: Any) -> Any:
        return _check(units.size_bytes, v)

    @model_validator(mode="after")
    def _belongs(self) -> Aqm:
        allowed = AQM_PARAMS[self.type]
        given = [k for k in self.model_fields_set if k != "type"]
        wrong = [k for k in given if k not in allowed]
        if wrong:
            takes = ", ".join(allowed) or "no parameters"
            raise ValueError(f"{self.type} does not take {', '.join(sorted(wrong))} (it takes {takes})")
        return self


def _percent(v: Any) -> float:
    f = units.fraction(v)
    if not 0 <= f <= 1:
        raise units.UnitError(f"'{v}' is outside 0% .. 100%")
    return f


def _rate(v: Any) -> float:
    r = units.rate_bps(v)
    if not 1e3 <= r <= 1e10:
        raise units.UnitError(f"'{v}' is outside 1kbit .. 10Gbit")
    return r


def _queue(v: Any) -> tuple[int | None, int | None]:
    p, b = units.queue_limit(v)
    if p is not None and not 1 <= p <= 1_000_000:
        raise units.UnitError(f"'{v}': a queue holds 1 .. 1000000 packets")
    if b is not None and not 64 <= b <= 1 << 32:
        raise units.UnitError(f"'{v}': a queue holds 64 bytes .. 4 GiB")
    return p, b


class GeModel(BaseModel):
    """Gilbert-Elliott loss: p (good->bad), r (bad->good), loss in each state."""

    model_config = ConfigDict(extra="forbid")
    p: str
    r: str
    loss_good: str = "0%"
    loss_bad: str = "100%"

    @field_validator("p", "r", "loss_good", "loss_bad")
    @classmethod
    def _pct(cls, v: Any) -> Any:
        return _check(_percent, v)


class Shaping(BaseModel):
    """What a link does to the traffic in one direction (or both)."""

    model_config = ConfigDict(extra="forbid")
    rate: str | int | float | None = None
    overhead: int | None = Field(None, ge=0, le=1000)
    trace: str | None = None
    trace_repeat: bool | None = None
    delay: str | int | None = None
    jitter: str | int | None = None
    distribution: Literal["uniform", "normal", "pareto", "paretonormal"] | None = None
    correlation: str | None = None
    no_reorder: bool | None = None
    loss: str | None = None
    loss_correlation: str | None = None
    gemodel: GeModel | None = None
    duplicate: str | None = None
    corrupt: str | None = None
    reorder: str | None = None
    reorder_gap: int | None = Field(None, ge=1)
    queue: str | int | None = None
    aqm: Literal["droptail", "red", "codel", "pie", "fq_codel"] | Aqm | None = None

    @field_validator("rate")
    @classmethod
    def _rate(cls, v: Any) -> Any:
        return _check(_rate, v)

    @field_validator("delay", "jitter")
    @classmethod
    def _time(cls, v: Any) -> Any:
        return _check(units.seconds_not_negative, v)

    @field_validator("correlation", "loss", "loss_correlation", "duplicate", "corrupt", "reorder")
    @classmethod
    def _pct(cls, v: Any) -> Any:
        return _check(_percent, v)

    @field_validator("queue")
    @classmethod
    def _queue(cls, v: Any) -> Any:
        return _check(_queue, v)

    @model_validator(mode="after")
    def _consistent(self) -> Shaping:
        if self.loss is not None and self.gemodel is not None:
            raise ValueError("give either loss or gemodel, not both")
        if self.rate is not None and self.trace is not None:
            raise ValueError("give either rate or trace, not both")
        return self

    def merged(self, over: Shaping | None) -> Shaping:
        """This shaping with `over`'s explicitly set fields on top."""
        if over is None:
            return self
        data = self.model_dump(exclude_unset=True)
        data.update(over.model_dump(exclude_unset=True))
        return Shaping.model_validate(data)

    def is_shaped(self) -> bool:
        """Anything beyond a plain wire (a queue limit alone shapes nothing)."""
        keys = self.model_fields_set - {"queue", "aqm", "overhead", "trace_repeat"}
        return any(getattr(self, k) not in (None, False, 0, "0", "0%", "0ms") for k in keys)


class LinkSpec(Shaping):
    """A link: its ends, optional name and addresses, shaping for both directions, and
    per-direction overrides."""

    a: str
    b: str
    name: str | None = None
    addr_a: str | None = None
    addr_b: str | None = None
    a_to_b: Shaping | None = None
    b_to_a: Shaping | None = None

    @field_validator("addr_a", "addr_b")
    @classmethod
    def _addr(cls, v: Any) -> Any:
        if v is None:
            return None
        try:
            iface = ipaddress.ip_interface(v)
        except ValueError:
            raise ValueError(f"'{v}' is not an address with a prefix length (e.g. 10.0.0.1/24)") from None
        if iface.version != 4 or "/" not in str(v):
            raise ValueError(f"'{v}': give an IPv4 address with its prefix length (e.g. 10.0.0.1/24)")
        return v

    @property
    def label(self) -> str:
        return self.name or f"{self.a}-{self.b}"

    def shaping(self) -> Shaping:
        own = self.model_dump(exclude_unset=True, exclude={"a", "b", "name", "addr_a", "addr_b",
                                                          "a_to_b", "b_to_a"})
        return Shaping.model_validate(own)


class NodeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Kind


class Addressing(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pool: str = "10.0.0.0/16"
    prefix_len: int = Field(24, ge=8, le=30)

    @field_validator("pool")
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
    nodes: dict[str, NodeSpec | Kind]
    links: list[LinkSpec | list[str]] = Field(default_factory=list)


@dataclass
class DirParams:
    """One direction of a link, resolved to numbers (SI units; fractions for %)."""

    rate_bps: float | None = None
    overhead_bytes: int = 0
    trace: str | None = None
    trace_repeat: bool = True
    delay_s: float = 0.0
    jitter_s: float = 0.0
    distribution: str | None = None
    correlation: float = 0.0
    no_reorder: bool = False
    loss: float = 0.0
    loss_correlation: float = 0.0
    gemodel: dict[str, float] | None = None
    duplicate: float = 0.0
    corrupt: float = 0.0
    reorder: float = 0.0
    reorder_gap: int = 1
    queue_packets: int | None = None
    queue_bytes: int | None = None
    aqm: str = "droptail"
    aqm_params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, s: Shaping) -> DirParams:
        d = cls()
        if s.rate is not None:
            d.rate_bps = units.rate_bps(s.rate)
        d.overhead_bytes = s.overhead or 0
        d.trace = s.trace
        d.trace_repeat = True if s.trace_repeat is None else s.trace_repeat
        d.delay_s = units.seconds(s.delay) if s.delay is not None else 0.0
        d.jitter_s = units.seconds(s.jitter) if s.jitter is not None else 0.0
        d.distribution = s.distribution
        d.correlation = units.fraction(s.correlation) if s.correlation else 0.0
        d.no_reorder = bool(s.no_reorder)
        d.loss = units.fraction(s.loss) if s.loss else 0.0
        d.loss_correlation = units.fraction(s.loss_correlation) if s.loss_correlation else 0.0
        if s.gemodel is not None:
            d.gemodel = {k: units.fraction(getattr(s.gemodel, k)) for k in ("p", "r", "loss_good", "loss_bad")}
        d.duplicate = units.fraction(s.duplicate) if s.duplicate else 0.0
        d.corrupt = units.fraction(s.corrupt) if s.corrupt else 0.0
        d.reorder = units.fraction(s.reorder) if s.reorder else 0.0
        d.reorder_gap = s.reorder_gap or 1
        if s.queue is not None:
            d.queue_packets, d.queue_bytes = units.queue_limit(s.queue)
        if isinstance(s.aqm, Aqm):
            d.aqm = s.aqm.type
            d.aqm_params = s.aqm.model_dump(exclude_unset=True, exclude={"type"})
        elif s.aqm:
            d.aqm = s.aqm
        return d

    @property
    def shaped(self) -> bool:
        return any((self.rate_bps, self.trace, self.delay_s, self.jitter_s, self.loss, self.gemodel,
                    self.duplicate, self.corrupt, self.reorder))


@dataclass
class Link:
    spec: LinkSpec
    defaults: Shaping

    @property
    def a(self) -> str:
        return self.spec.a

    @property
    def b(self) -> str:
        return self.spec.b

    @property
    def name(self) -> str:
        return self.spec.label

    def shaping(self, d: int) -> Shaping:
        """Direction d (0: a->b, 1: b->a): defaults < the link's own < its direction's."""
        over = self.spec.a_to_b if d == 0 else self.spec.b_to_a
        return self.defaults.merged(self.spec.shaping()).merged(over)

    def direction(self, d: int) -> DirParams:
        return DirParams.of(self.shaping(d))

    @property
    def shaped(self) -> bool:
        """Does either direction need an emulator (or a qdisc) at all?"""
        return any(self.direction(d).shaped for d in (0, 1))

    def other(self, node: str) -> str:
        return self.b if node == self.a else self.a


def _unreadable(trace: str | None) -> str | None:
    """What keeps netrig-link from reading a trace file, if anything."""
    if trace is None:
        return None
    at = os.path.abspath(trace)
    if not os.path.exists(at):
        return f"no trace file '{trace}' (looked for {at})"
    if not os.path.isfile(at):
        return f"'{trace}' is not a file (a trace is a mahimahi file, one line per delivery)"
    if not os.access(at, os.R_OK):
        return f"cannot read the trace file '{trace}' ({at}): permission denied"
    return None


_SHAPE_ERRORS = ("literal_error", "model_type", "dict_type", "string_type", "int_type", "float_type",
                 "list_type", "bool_type", "model_attributes_type", "int_parsing", "float_parsing")


def _problems_of(e: ValidationError, base: tuple[str | int, ...] = ()) -> list[Problem]:
    """pydantic's errors as Problems: union-branch tags dropped from the path, and where
    one branch of a union gives a specific complaint, the other branches' "input should
    be a ..." noise dropped."""
    raw = []
    for err in e.errors():
        loc = tuple(x for x in err["loc"]
                    if isinstance(x, int) or not any(c in x for c in "[]-") and x not in (
                        "str", "int", "float", "bool", "LinkSpec", "NodeSpec", "Aqm", "Shaping", "GeModel"))
        msg = err["msg"]
        msg = msg.removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        raw.append((base + loc, err["type"], msg))
    out = []
    for path, kind, msg in raw:
        specific = [r for r in raw if r[0][: len(path)] == path and r[1] not in _SHAPE_ERRORS]
        if kind in _SHAPE_ERRORS and specific:
            continue
        p = Problem(path, msg)
        if p not in out:
            out.append(p)
    return out


class Topology:
    """Nodes and links; build one with the methods below or load a file with
    `netrig.topo.load.load(path)`."""

    def __init__(self, name: str = "lab", *, prefix: str | None = None, backend: str = "userspace",
                 pool: str = "10.0.0.0/16", prefix_len: int = 24, defaults: dict | None = None) -> None:
        self.name = name
        self.prefix = prefix
        self.backend = backend
        self.addressing = Addressing(pool=pool, prefix_len=prefix_len)
        self.defaults = Shaping.model_validate(defaults or {})
        self.nodes: dict[str, str] = {}
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

    def router(self, name: str) -> str:
        return self._node(name, "router")

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
        return out

    def _traces(self, skip: set[int]) -> list[Problem]:
        """Every trace a link replays is a file netrig-link can read (it reads it when
        the lab is built, from this process's directory, as written), blamed on the key
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
                msg = _unreadable(trace)
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
