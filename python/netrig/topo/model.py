"""The topology model: nodes, links and each link direction's shaping, validated.

One schema serves the YAML file (`netrig.topo.load`) and the Python API:

    topo = Topology("lab")
    topo.host("h1"); topo.switch("s1"); topo.router("r1")
    topo.link("h1", "s1", rate="30Mbit", delay="20ms", queue=100)

The keys of a link, their units, ranges and defaults are the link-spec schema's
(`netrig.link.spec`, owned by netrig-link): the models below are made from it. Values
keep the text the user wrote (`30Mbit`) for labels; `Link.direction(i)` resolves one
direction (file defaults < the link's own values < its `a_to_b`/`b_to_a` block) to
numbers in SI units once (`netrig.link.spec.Direction`), and everything downstream
reads those. Problems that span the whole topology (dangling
names, duplicate links, switch loops) are found by `Topology.check()`, each with the
path of the key at fault, e.g. ("links", 3, "b").
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from netrig import suggest, units
from netrig.errors import NetrigError
from netrig.link import spec as linkspec
from netrig.prefixes import PREFIX_RE

Kind = Literal["host", "switch", "router"]
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


def _checked(key: linkspec.Key) -> Any:
    """A pydantic validator reading a value as `key` says (the text is kept)."""
    return field_validator(key.name)(classmethod(lambda cls, v: _check(key.parse, v)))


def _model(name: str, keys: dict[str, linkspec.Key], base: type[BaseModel], types: dict[str, Any],
           doc: str) -> Any:
    """A pydantic model with one optional field per key of the link-spec schema."""
    fields = {k: (types.get(k, Any), None) for k in keys}
    checked = {f"_check_{k}": _checked(key) for k, key in keys.items() if k not in types}
    model = create_model(name, __base__=base, __validators__=checked, **fields)
    model.__doc__ = doc
    return model


class _AqmBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="after")
    def _belongs(self) -> Any:
        info = linkspec.DISCIPLINES[self.type]
        wrong = [k for k in self.model_fields_set if k != "type" and k not in info.params]
        if wrong:
            takes = ", ".join(info.params) or "no parameters"
            raise ValueError(f"{self.type} does not take {', '.join(sorted(wrong))} (it takes {takes})")
        for k in self.model_fields_set - {"type"}:  # by this discipline's own ranges
            try:
                _check(info.params[k].parse, getattr(self, k))
            except ValueError as e:
                raise ValueError(f"{k}: {e}") from None
        return self


# A parameter's field reads its value as some discipline's key of that name does; the
# discipline given reads it again by its own (`_belongs`).
_PARAMS = {k: key for info in reversed(linkspec.DISCIPLINES.values()) for k, key in info.params.items()}
_DISCIPLINE = Literal[tuple(linkspec.DISCIPLINES)]  # type: ignore[valid-type]
Aqm = _model("Aqm", _PARAMS, _AqmBase, {},
             "`aqm: {type: pie, target: 20ms}`; unset parameters take the discipline's defaults.")
Aqm = create_model("Aqm", __base__=Aqm, type=(_DISCIPLINE, ...))


class GeModel(BaseModel):
    """Gilbert-Elliott loss: p (good->bad), r (bad->good), loss in each state."""

    model_config = ConfigDict(extra="forbid")
    p: Any
    r: Any
    loss_good: Any = "0%"
    loss_bad: Any = "100%"

    @field_validator("p", "r", "loss_good", "loss_bad")
    @classmethod
    def _pct(cls, v: Any) -> Any:
        return _check(linkspec.KEYS["loss"].parse, v)


class _ShapingBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="after")
    def _consistent(self) -> Any:
        """The schema's rules between keys given together at one level (a rule that
        spans levels, or `requires`, is the resolved direction's: `Link.direction`)."""
        given = {k: getattr(self, k) for k in linkspec.KEYS if getattr(self, k, None) is not None}
        try:
            d = linkspec.resolve({k: v.model_dump(exclude_none=True) if isinstance(v, BaseModel) else v
                                  for k, v in given.items()})
        except units.UnitError:
            return self  # a value's own error is its field's; a rule's is the direction's
        broken = linkspec.broken_rule(d, ("excludes",))
        if broken:
            raise ValueError(broken)
        return self

    def merged(self, over: Any) -> Any:
        """This shaping with `over`'s explicitly set fields on top (a key's whole value:
        `aqm: {type: pie}` over `aqm: {type: pie, target: 20ms}` drops the target)."""
        if over is None:
            return self
        data = self.model_dump(exclude_unset=True)
        data.update(over.model_dump(exclude_unset=True))
        return type(self).model_validate(data)

    def text(self) -> dict[str, Any]:
        """The keys given, as the user wrote them (aqm and gemodel as mappings)."""
        return {k: v for k, v in self.model_dump(exclude_none=True).items() if k in linkspec.KEYS}


_SHAPING_TYPES = {
    **{k: Literal[key.choices] | None for k, key in linkspec.KEYS.items() if key.kind == "choice"},  # type: ignore[misc]
    **{k: _DISCIPLINE | Aqm | None for k, key in linkspec.KEYS.items() if key.kind == "discipline"},
    **{k: GeModel | None for k, key in linkspec.KEYS.items() if key.kind == "gemodel"},
}
Shaping = _model("Shaping", linkspec.KEYS, _ShapingBase, _SHAPING_TYPES,
                 "What a link does to the traffic in one direction (or both): one optional "
                 "field per key of the link-spec schema.")


class LinkSpec(Shaping):  # type: ignore[misc, valid-type]
    """A link: its ends, optional name and addresses, shaping for both directions, and
    per-direction overrides."""

    a: str
    b: str
    name: str | None = None
    addr_a: str | None = None
    addr_b: str | None = None
    a_to_b: Shaping | None = None
    b_to_a: Shaping | None = None
    # Carried by netrig-link even while unshaped, so that it can be shaped live.
    emulated: bool | None = None
    # OSPF: the link's cost (both ends; else from its rate) and area (else the routers').
    cost: int | None = Field(None, ge=1, le=65535)
    area: int | str | None = None

    _area = field_validator("area")(classmethod(lambda cls, v: None if v is None else area_id(v)))

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
                                                          "a_to_b", "b_to_a", "emulated", "cost", "area"})
        return Shaping.model_validate(own)


# FRR's daemons a router's raw configuration (`frr:`) can be given for: zebra always
# runs; ospfd and bgpd when the router runs OSPF or BGP; staticd when given lines.
FRR_DAEMONS = ("zebra", "ospfd", "bgpd", "staticd")
_DAEMON = Literal[FRR_DAEMONS]  # type: ignore[valid-type]


def area_id(value: Any) -> str:
    """An OSPF area as FRR writes it: 0 and 0.0.0.0 are the backbone; 1 is 0.0.0.1."""
    if isinstance(value, bool):
        raise ValueError(f"'{value}' is not an OSPF area (a number, or a dotted quad like 0.0.0.1)")
    if isinstance(value, int):
        if not 0 <= value < 1 << 32:
            raise ValueError(f"area {value}: an area is 0 ... 4294967295")
        return str(ipaddress.IPv4Address(value))
    try:
        return str(ipaddress.IPv4Address(str(value)))
    except ValueError:
        if str(value).isdigit():
            return area_id(int(str(value)))
        raise ValueError(f"'{value}' is not an OSPF area (a number, or a dotted quad like 0.0.0.1)") from None


class Ospf(BaseModel):
    """A router runs OSPF: `ospf: {area: 0}` (or `ospf: true`). Each of its interfaces
    toward another OSPF router of its AS is in `area` unless the link gives its own."""

    model_config = ConfigDict(extra="forbid")
    area: int | str = 0

    _area = field_validator("area")(classmethod(lambda cls, v: area_id(v)))


class Bgp(BaseModel):
    """A router runs BGP in AS `as`: `bgp: {as: 65001}` (or `bgp: 65001`). It peers
    over eBGP with each router it links to in another AS, over iBGP (loopback to
    loopback, next-hop-self) with every other router of its AS, and announces its
    connected subnets and loopback."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    asn: int = Field(alias="as", ge=1, le=4294967294)


class NodeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Kind
    ospf: Ospf | bool | None = None
    bgp: Bgp | int | None = None
    # Raw FRR configuration, per daemon, appended to what netrig writes.
    frr: dict[_DAEMON, str] | None = None

    @model_validator(mode="after")
    def _router_only(self) -> Any:
        given = [k for k in ("ospf", "bgp", "frr") if getattr(self, k) not in (None, False)]
        if given and self.kind != "router":
            raise ValueError(f"{', '.join(given)}: only a router runs routing protocols "
                             f"(this node is a {self.kind})")
        if isinstance(self.bgp, int) and not isinstance(self.bgp, bool):
            if not 1 <= self.bgp <= 4294967294:
                raise ValueError(f"bgp: AS {self.bgp}: an AS number is 1 ... 4294967294")
        return self

    def routing(self) -> Router:
        """What the router runs, in numbers."""
        ospf = (Ospf() if self.ospf is True else self.ospf if isinstance(self.ospf, Ospf) else None)
        bgp = (self.bgp.asn if isinstance(self.bgp, Bgp) else
               self.bgp if isinstance(self.bgp, int) and not isinstance(self.bgp, bool) else None)
        return Router(ospf_area=area_id(ospf.area) if ospf else None, asn=bgp, frr=dict(self.frr or {}))


@dataclass(frozen=True)
class Router:
    """A router's routing: its OSPF area (None: no OSPF), AS (None: no BGP), and raw
    FRR lines per daemon. A router with neither routes statically, as netrig plans."""

    ospf_area: str | None = None
    asn: int | None = None
    frr: dict[str, str] = field(default_factory=dict)

    @property
    def dynamic(self) -> bool:
        """Does FRR run on it (OSPF, BGP, or raw FRR configuration)?"""
        return self.ospf_area is not None or self.asn is not None or bool(self.frr)


def _whole_seconds(lo: int, hi: int) -> Any:
    def check(cls: Any, v: Any) -> Any:
        if v is None:
            return None
        s = units.seconds(v)
        if s != int(s) or not lo <= s <= hi:
            raise ValueError(f"'{v}': give whole seconds, {lo} ... {hi}")
        return v
    return classmethod(check)


def _millis(hi: int) -> Any:
    def check(cls: Any, v: Any) -> Any:
        s = units.seconds_not_negative(v)
        if s * 1000 != int(round(s * 1000)) or s * 1000 > hi:
            raise ValueError(f"'{v}': give whole milliseconds, 0 ... {hi} ms")
        return v
    return classmethod(check)


class OspfTimers(BaseModel):
    """OSPF's timers for every OSPF router of the lab. Hello and dead are OSPF's (and
    FRR's) defaults; `lsa_interval` is not: RFC 2328's MinLSInterval (FRR: 5 s) holds
    back the LSAs of routers that start together by seconds, so netrig defaults to 0
    (set 5s for FRR's behaviour). `reference_bandwidth` turns a link's rate into its
    cost (FRR's auto-cost: reference / rate, at least 1; an unrated link costs 1) where
    the link gives no `cost`."""

    model_config = ConfigDict(extra="forbid")
    hello: str | int = "10s"
    dead: str | int | None = None  # 4 x hello
    spf_delay: str | int = "0ms"
    spf_hold: str | int = "50ms"
    spf_max_hold: str | int = "5s"
    lsa_interval: str | int = "0s"
    reference_bandwidth: str | int = "100Mbit"

    _hello = field_validator("hello")(_whole_seconds(1, 65535))
    _dead = field_validator("dead")(_whole_seconds(1, 65535))
    _ms = field_validator("spf_delay", "spf_hold", "spf_max_hold", "lsa_interval")(_millis(600_000))
    _ref = field_validator("reference_bandwidth")(
        classmethod(lambda cls, v: _check(units.rate_bps, v)))

    @model_validator(mode="after")
    def _dead_after_hello(self) -> Any:
        if self.dead is not None and units.seconds(self.dead) <= units.seconds(self.hello):
            raise ValueError(f"dead ({self.dead}) must be longer than hello ({self.hello})")
        return self

    @property
    def hello_s(self) -> int:
        return int(units.seconds(self.hello))

    @property
    def dead_s(self) -> int:
        return int(units.seconds(self.dead)) if self.dead is not None else 4 * self.hello_s

    def ms(self, key: str) -> int:
        return int(round(units.seconds(getattr(self, key)) * 1000))

    @property
    def reference_bps(self) -> float:
        return units.rate_bps(self.reference_bandwidth)


class BgpTimers(BaseModel):
    """BGP's timers for every BGP session of the lab: keepalive and hold are BGP's (and
    FRR's) defaults; `connect_retry` is not (FRR: 120 s, which leaves a session that
    went down in a lab waiting two minutes to come back); `advertisement_interval`
    (MRAI) is FRR's unless given."""

    model_config = ConfigDict(extra="forbid")
    keepalive: str | int = "60s"
    hold: str | int = "180s"
    connect_retry: str | int = "5s"
    advertisement_interval: str | int | None = None

    _keep = field_validator("keepalive")(_whole_seconds(0, 65535))
    _hold = field_validator("hold")(_whole_seconds(0, 65535))
    _retry = field_validator("connect_retry")(_whole_seconds(1, 65535))
    _mrai = field_validator("advertisement_interval")(_whole_seconds(0, 600))

    @model_validator(mode="after")
    def _hold_after_keepalive(self) -> Any:
        if not self.model_fields_set & {"hold", "keepalive"}:
            return self  # BGP's defaults
        hold, keep = units.seconds(self.hold), units.seconds(self.keepalive)
        if hold and hold < 3:
            raise ValueError(f"hold ({self.hold}): BGP's hold time is 0 or at least 3 s")
        if hold and keep >= hold:
            raise ValueError(f"keepalive ({self.keepalive}) must be shorter than hold ({self.hold})")
        return self

    def s(self, key: str) -> int | None:
        v = getattr(self, key)
        return None if v is None else int(units.seconds(v))


class Routing(BaseModel):
    """`routing:` in a topology file: the protocols' timers (the routers say which
    protocols they run)."""

    model_config = ConfigDict(extra="forbid")
    ospf: OspfTimers = Field(default_factory=OspfTimers)
    bgp: BgpTimers = Field(default_factory=BgpTimers)


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


DIRS = ("a_to_b", "b_to_a")


@dataclass
class Link:
    """A link of the topology: its spec as written, and each direction resolved to
    numbers once (`direction(d)`), on first use."""

    spec: LinkSpec
    defaults: Shaping
    # Where relative paths (a trace) are read from: the topology file's directory;
    # None: the current directory, when first used (the Python API).
    base: str | None = None
    _resolved: dict[int, linkspec.Direction] = field(default_factory=dict, repr=False)

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

    def direction(self, d: int) -> linkspec.Direction:
        """Direction d in numbers (parsed once; raises what `shaping(d)` raises)."""
        if d not in self._resolved:
            text = self.shaping(d).text()
            for name, key in linkspec.KEYS.items():
                if key.kind == "path" and isinstance(text.get(name), str):
                    text[name] = self.path(text[name])
            self._resolved[d] = linkspec.resolve(text)
        return self._resolved[d]

    def path(self, p: str) -> str:
        """A path the link names, as the file means it (relative to its directory)."""
        return os.path.join(self.base or os.getcwd(), os.path.expanduser(p))

    @property
    def shaped(self) -> bool:
        """Does either direction change traffic beyond a plain wire (the user-space
        backend then emulates the link)?"""
        return any(self.direction(d).shaped for d in (0, 1))

    @property
    def emulated(self) -> bool:
        """Does the user-space backend carry it through netrig-link (shaped, or
        `emulated: true` so that it can be shaped live)?"""
        return self.shaped or bool(self.spec.emulated)

    @property
    def plain(self) -> bool:
        """Nothing set in either direction: a bare veth pair under any backend."""
        return all(self.direction(d).plain for d in (0, 1))

    def other(self, node: str) -> str:
        return self.b if node == self.a else self.a

    def changed(self, params: dict[str, Any], dir: str | None = None) -> Link:
        """This link after a live change: `params` (keys of a direction, as a file gives
        them) in both directions, where a direction's own value gives way, or in one
        (`dir`: a_to_b, b_to_a). A key that excludes another (gemodel and loss, trace and
        rate) turns the other off; `aqm` without `type` sets parameters of the discipline
        each direction runs. Raises TopologyError naming what is wrong."""
        wrong = sorted(set(params) - set(linkspec.KEYS))
        if wrong:
            near = [f"{c[0]}" + (f" for {k}" if len(wrong) > 1 else "")
                    for k in wrong if (c := suggest.close(k, linkspec.KEYS, 1))]
            raise TopologyError([f"link {self.name}: {', '.join(wrong)}: not a key of a link direction"
                                 f"{'; did you mean ' + ', '.join(near) + '?' if near else ''} "
                                 f"(a live change sets {', '.join(linkspec.KEYS)})"])
        if dir not in (None, *DIRS):
            raise TopologyError([f"link {self.name}: dir: '{dir}' is not a_to_b or b_to_a"])
        params = dict(params)
        clear = {r["other"] if r["key"] in params else r["key"] for r in linkspec.RULES
                 if r["kind"] == "excludes" and (r["key"] in params) != (r["other"] in params)}
        clear = {k: None for k in clear if "." not in k}
        new = self.spec.model_dump(exclude_unset=True)
        aqm = params.get("aqm")
        if isinstance(aqm, dict) and "type" not in aqm:  # a parameter of the discipline running
            runs = [self.shaping(d).text().get("aqm") or "droptail" for d in (0, 1)]
            runs = [{"type": r} if isinstance(r, str) else r for r in runs]
            merged = [{**r, **aqm} for r in runs]
            if dir:
                params["aqm"] = merged[DIRS.index(dir)]
            elif merged[0] == merged[1]:
                params["aqm"] = merged[0]
            else:  # two disciplines: each direction keeps its own
                del params["aqm"]
                for d, name in enumerate(DIRS):
                    new[name] = {**(new.get(name) or {}), "aqm": merged[d]}
        if dir:
            new[dir] = {**(new.get(dir) or {}), **params, **clear}
        else:
            new = {**new, **params, **clear}
            for name in DIRS:
                own = {k: v for k, v in (new.get(name) or {}).items() if k not in params and k not in clear}
                new[name] = own or None
        try:
            spec = LinkSpec.model_validate(new)
        except ValidationError as e:
            raise TopologyError([f"link {self.name}: {p.where() + ': ' if p.path else ''}{p.message}"
                                 for p in _problems_of(e)]) from None
        link = Link(spec, self.defaults, self.base)
        for d, name in enumerate(DIRS):
            try:
                link.direction(d)
            except units.UnitError as e:
                raise TopologyError([f"link {self.name}: {name}: {e}"]) from None
        return link


def _unreadable(trace: str | None, link: Link) -> str | None:
    """What keeps netrig-link from reading a trace file, if anything."""
    if trace is None:
        return None
    at = os.path.normpath(link.path(trace))
    if not os.path.exists(at):
        return f"no trace file '{trace}' (looked for {at})"
    if not os.path.isfile(at):
        return f"'{trace}' is not a file (a trace is a mahimahi file, one line per delivery)"
    if not os.access(at, os.R_OK):
        return f"cannot read the trace file '{trace}' ({at}): permission denied"
    return None


_SHAPE_ERRORS = ("literal_error", "model_type", "dict_type", "string_type", "int_type", "float_type",
                 "list_type", "bool_type", "model_attributes_type", "int_parsing", "float_parsing",
                 "bool_parsing")


def _problems_of(e: ValidationError, base: tuple[str | int, ...] = ()) -> list[Problem]:
    """pydantic's errors as Problems: union-branch tags dropped from the path, and where
    one branch of a union gives a specific complaint, the other branches' "input should
    be a ..." noise dropped."""
    raw = []
    for err in e.errors():
        loc = tuple(x for x in err["loc"]
                    if isinstance(x, int) or not any(c in x for c in "[]-") and x not in (
                        "str", "int", "float", "bool", "LinkSpec", "NodeSpec", "Aqm", "Shaping", "GeModel",
                        "Ospf", "Bgp"))
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
