"""What a node is and what a router runs, as the topology file's schema says: a node's
kind, a router's OSPF area, BGP AS and raw FRR lines (`NodeSpec`, read into `Router`),
and the `routing:` section's timers for every OSPF router and BGP session of the lab
(`Routing`). Pure: the configuration FRR is given is `netrig.lab.frr`'s.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from netrig import units
from netrig.topo.problems import _check

Kind = Literal["host", "switch", "router"]


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


_SPF_KEYS = ("spf_delay", "spf_hold", "spf_max_hold")


def _millis(hi: int) -> Any:
    def check(cls: Any, v: Any) -> Any:
        if v is None:
            return None
        s = units.seconds_not_negative(v)
        if s * 1000 != int(round(s * 1000)) or s * 1000 > hi:
            raise ValueError(f"'{v}': give whole milliseconds, 0 ... {hi} ms")
        return v
    return classmethod(check)


# SPF's throttle (delay, hold, most hold) in ms where the file gives none: FRR's own up
# to SPF_SCALE_FROM OSPF routers, then grown with the lab (spf_throttle_ms).
SPF_FRR_MS = (0, 50, 5000)
SPF_SCALE_FROM = 100


def spf_throttle_ms(routers: int) -> tuple[int, int, int]:
    """SPF's (delay, hold, most hold) in ms for a lab of `routers` OSPF routers: FRR's
    0/50/5000 up to SPF_SCALE_FROM; above, n / 4n / max(5000, 10n) ms (500 routers:
    0.5/2/5 s; 1,000: 1/4/10 s). One SPF run costs time in proportion to the routers
    (9 ms at 500 routers) and every router runs it for each burst of LSAs, so a
    lab-wide round costs n^2: with FRR's throttle, 500 routers took 453 s to build and
    FRR 843 s of CPU (bench/routing_scale), with these 126 s and 200 s (docs/guides/
    routing.md)."""
    if routers <= SPF_SCALE_FROM:
        return SPF_FRR_MS
    return routers, 4 * routers, max(SPF_FRR_MS[2], 10 * routers)


class OspfTimers(BaseModel):
    """OSPF's timers for every OSPF router of the lab. Hello and dead are OSPF's (and
    FRR's) defaults; `lsa_interval` is not: RFC 2328's MinLSInterval (FRR: 5 s) holds
    back the LSAs of routers that start together by seconds, so netrig defaults to 0
    (set 5s for FRR's behaviour). SPF's throttle (`spf_delay`, `spf_hold`,
    `spf_max_hold`), where not given, grows with the lab (`spf_throttle_ms`; read it
    through `Topology.ospf_ms`). `reference_bandwidth` turns a link's rate into its
    cost (FRR's auto-cost: reference / rate, at least 1; an unrated link costs 1) where
    the link gives no `cost`."""

    model_config = ConfigDict(extra="forbid")
    hello: str | int = "10s"
    dead: str | int | None = None  # 4 x hello
    spf_delay: str | int | None = None  # None: spf_throttle_ms(OSPF routers)
    spf_hold: str | int | None = None
    spf_max_hold: str | int | None = None
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

    def ms(self, key: str, routers: int = 0) -> int:
        """A timer in ms; an SPF throttle not given is netrig's for `routers` OSPF
        routers (spf_throttle_ms)."""
        value = getattr(self, key)
        if value is None and key in _SPF_KEYS:
            return spf_throttle_ms(routers)[_SPF_KEYS.index(key)]
        return int(round(units.seconds(value) * 1000))

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
