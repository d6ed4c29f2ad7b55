"""The scenario file's shape: its flows, monitors and events (pydantic models, each key
checked as it is read), a sweep point and the scenario they make; which keys each kind
of flow takes. Pure: nothing here looks at this machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from netrig import units
from netrig.errors import NetrigError
from netrig.remote import hosts as rhosts
from netrig.topo.model import Link, Topology, TopologyError, _check

Key = tuple[str | int, ...]
SCHEMA = 1
MAX_POINTS = 1000  # sweep points: each is checked before anything runs, and each runs

FlowKind = Literal["tcp", "udp", "probe", "ping", "fetch", "web", "command"]
# Which keys each kind of flow takes (besides kind, from, start, duration).
TAKES: dict[str, set[str]] = {
    "tcp": {"to", "bytes", "cc", "window", "length", "parallel", "reverse", "rate", "nodelay",
            "mss", "omit", "connect_timeout", "tool"},
    "udp": {"to", "bytes", "window", "length", "parallel", "reverse", "rate", "omit", "connect_timeout",
            "tool"},
    "probe": {"to", "interval", "size"},
    "ping": {"to", "interval", "size"},
    "fetch": {"to", "interval", "size", "new_conn"},
    "web": {"to", "interval", "size", "new_conn", "http", "tls"},  # nginx and curl (exp/kinds/web.py)
    "command": {"command", "timeout"},
}
COMMON = {"kind", "src", "start", "duration", "count"}
# The programs that make tcp and udp flows (`tool:`; exp/kinds/tools), and the keys each
# cannot do, with why (refused when the scenario is read).
Tool = Literal["netrig-perf", "iperf3", "iperf2"]
TOOL_LACKS: dict[str, dict[str, str]] = {
    "netrig-perf": {},
    "iperf3": {},
    "iperf2": {"reverse": "its -R has its server send, and netrig reads the receiver's count from the server",
               "omit": "it has no -O (omit a first part of the flow from its numbers)",
               "connect_timeout": "it has no connect timeout"},
}
# What each kind of flow is to the others: a load (it fills a path: its throughput is
# shared) or a measuring flow (it measures what the load does to the path); a command
# is neither. Theory's fair shares, the report's "beside" and the figures' fairness all
# count the loads that run at the same time as a flow (`overlaps`).
LOAD_KINDS = ("tcp", "udp")
MEASURING_KINDS = ("ping", "probe", "fetch", "web")


def overlaps(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether `b` runs at the same time as `a` (each (start, end), seconds): they share
    more than half of a's time. Symmetric use (either's half: `overlaps(a, b) or
    overlaps(b, a)`) asks whether they share half of the shorter one's time."""
    both = min(a[1], b[1]) - max(a[0], b[0])
    return both > 0.5 * max(a[1] - a[0], 1e-9)


# An event's actions: each names what it acts on (link, router or node).
EVENT_ACTIONS: dict[str, str] = {"down": "link", "up": "link", "carrier": "link", "set": "link",
                                 "stop": "router", "start": "router", "command": "node"}


class ScenarioError(NetrigError):
    """Every problem of a scenario, one per line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class FlowSpec(BaseModel):
    """One flow. `from` is where it starts (a command's node); `to` its peer."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    kind: FlowKind
    src: str = Field(alias="from")
    to: str | None = None
    start: str | int = "0s"
    duration: str | int | None = None
    bytes: str | int | None = None
    cc: str | None = None
    window: str | int | None = None  # socket buffers, as iperf's -w (TCP's window follows)
    length: str | int | None = None
    parallel: int = Field(1, ge=1, le=128)
    reverse: bool = False
    rate: str | int | None = None
    nodelay: bool = False
    mss: int | None = Field(None, ge=88, le=9000)
    omit: str | int | None = None
    interval: str | int | None = None
    size: str | int | None = None
    new_conn: bool = True
    http: str | int | float = "1.1"  # a web flow's HTTP version: 1.1 or 2
    tls: bool = False
    command: str | None = None
    timeout: str | int | None = None
    connect_timeout: str | int | None = None  # netrig-perf's --connect-timeout (5 s unless given)
    tool: Tool = "netrig-perf"  # what makes a tcp or udp flow (exp/kinds/tools)
    count: int = Field(1, ge=0, le=64)  # copies, NAME.1 ... NAME.N (0: left out)

    _not_negative = field_validator("start", "omit")(
        classmethod(lambda cls, v: _check(units.seconds_not_negative, v)))
    _positive = field_validator("duration", "interval", "timeout", "connect_timeout")(
        classmethod(lambda cls, v: _check(units.seconds_above_zero, v)))
    _sizes = field_validator("bytes", "window", "length", "size")(
        classmethod(lambda cls, v: _check(units.size_bytes, v)))
    _rates = field_validator("rate")(classmethod(lambda cls, v: _check(units.rate_bps, v)))

    @field_validator("http")
    @classmethod
    def _http(cls, v: str | int | float) -> str:
        """1.1 or 2, written as a number or a string ("1.1", 2, "2.0")."""
        text = str(v).strip()
        for version in ("1.1", "2"):
            if text in (version, f"{version}.0") and not isinstance(v, bool):
                return version
        raise ValueError(f"{v!r} is not an HTTP version a web flow speaks: 1.1 or 2")

    # Resolved numbers.
    def seconds(self, key: str, default: float = 0.0) -> float:
        v = getattr(self, key)
        return default if v is None else units.seconds(v)

    def nbytes(self, key: str) -> int | None:
        v = getattr(self, key)
        return None if v is None else units.size_bytes(v)

    @property
    def rate_bps(self) -> float | None:
        return None if self.rate is None else units.rate_bps(self.rate)


class MonitorSpec(BaseModel):
    """`queue` of a link (both directions, or `dir`), `tcp_info` of a tcp flow, or
    `iface` counters of a node's interface, every `interval`; or a `capture` of a link
    (`dir` of it) or a node's interface to pcapng files (capture/lab.py): `filter` (BPF,
    tcpdump's syntax), `snaplen` (bytes), `size` (all its files together; default 1GB),
    `files` (1: stop at the size; N: a ring of N files), `drops` (netrig-link's dropped
    frames, with their cause; default true)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["queue", "tcp_info", "iface", "capture"]
    link: str | None = None
    dir: Literal["a_to_b", "b_to_a", "both"] = "both"
    flow: str | None = None
    node: str | None = None
    iface: str | None = None
    interval: str | int | None = None
    filter: str | None = None
    snaplen: int | None = Field(None, ge=1, le=262_144)
    size: str | int | None = None
    files: int | None = Field(None, ge=1, le=1000)
    drops: bool | None = None

    _positive = field_validator("interval")(
        classmethod(lambda cls, v: _check(units.seconds_above_zero, v)))
    _sizes = field_validator("size")(classmethod(lambda cls, v: _check(units.size_bytes, v)))


class EventSpec(BaseModel):
    """Something that happens at `at` (seconds from the flows' start): exactly one
    action, on the link, router or node it names."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    at: str | int | float
    link: str | None = None
    router: str | None = None
    node: str | None = None
    down: bool | None = None
    up: bool | None = None
    carrier: Literal["down", "up"] | None = None
    set_: dict[str, Any] | None = Field(None, alias="set")
    dir: Literal["a_to_b", "b_to_a"] | None = None  # a set: one direction only
    stop: bool | None = None
    start: bool | None = None
    command: str | None = None
    timeout: str | int | None = None

    _not_negative = field_validator("at")(
        classmethod(lambda cls, v: _check(units.seconds_not_negative, v)))
    _positive = field_validator("timeout")(
        classmethod(lambda cls, v: _check(units.seconds_above_zero, v)))

    @property
    def at_s(self) -> float:
        return units.seconds(self.at)

    @property
    def actions(self) -> list[str]:
        """The action keys given (an event has exactly one)."""
        return [a for a in EVENT_ACTIONS if getattr(self, "set_" if a == "set" else a) is not None]

    @property
    def action(self) -> str:
        """`down`, `up`, `carrier_down`, `carrier_up`, `set`, `stop`, `start` or `command`."""
        a = self.actions[0]
        return f"carrier_{self.carrier}" if a == "carrier" else a

    @property
    def target(self) -> str:
        return getattr(self, EVENT_ACTIONS[self.actions[0]]) or ""

    @property
    def label(self) -> str:
        """A figure's short label: "r2-r3 down", "r3 stopped", "h1: ip route"."""
        a = self.action
        if a in ("down", "up"):
            return f"{self.link} {a}"
        if a.startswith("carrier_"):
            return f"{self.link} carrier {self.carrier}"
        if a == "set":
            what = ", ".join(f"{k}={v}" for k, v in (self.set_ or {}).items())
            return f"{self.link} {what}" + (f" ({self.dir})" if self.dir else "")
        if a in ("stop", "start"):
            return f"{self.router} {'stopped' if a == 'stop' else 'started'}"
        cmd = self.command or ""
        return f"{self.node}: {cmd if len(cmd) <= 24 else cmd[:23].rstrip() + '…'}"


class ScenarioFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    description: str = ""
    topology: str | dict[str, Any] | None = None  # an emulated lab; or hosts:
    hosts: dict[str, rhosts.HostSpec] | None = None  # real machines over SSH
    path: rhosts.PathSpec | None = None  # what the user declares about the hosts' path
    clocks: rhosts.Clocks = "unknown"  # synced: the hosts' clocks agree (one-way delays shown)
    duration: str | int = "10s"
    interval: str | int = "500ms"
    settle: str | int = "1s"
    repeat: int = Field(1, ge=1, le=1000)
    seed: int = Field(1, ge=0)
    tolerance: str = "10%"
    flows: dict[str, FlowSpec]
    monitors: list[MonitorSpec] = Field(default_factory=list)
    sweep: dict[str, list[Any]] = Field(default_factory=dict)
    quick: dict[str, Any] | None = None
    events: list[EventSpec] = Field(default_factory=list)

    _positive = field_validator("duration", "interval")(
        classmethod(lambda cls, v: _check(units.seconds_above_zero, v)))
    _not_negative = field_validator("settle")(
        classmethod(lambda cls, v: _check(units.seconds_not_negative, v)))
    _pct = field_validator("tolerance")(classmethod(lambda cls, v: _check(units.fraction, v)))


@dataclass
class Point:
    """One point of the sweep: its values (sweep key -> value), topology and spec."""

    index: int
    params: dict[str, Any]
    topology: Topology
    spec: ScenarioFile
    data: dict[str, Any]  # the resolved scenario (topology inline), for results

    def flow_duration(self, f: FlowSpec) -> float:
        return f.seconds("duration", units.seconds(self.spec.duration))

    @property
    def hosts(self) -> dict[str, rhosts.HostSpec] | None:
        """The real machines it runs on (None: an emulated lab, `topology`)."""
        return self.spec.hosts

    @property
    def length_s(self) -> float:
        """From the first start to the last flow's planned end."""
        return length_s(self.spec)


def length_s(spec: ScenarioFile) -> float:
    """A scenario's length: from the flows' start to the last flow's planned end."""
    ends = []
    for f in spec.flows.values():
        if not f.count:
            continue
        d = f.seconds("timeout", 60.0) if f.kind == "command" and f.duration is None \
            else f.seconds("duration", units.seconds(spec.duration))
        ends.append(f.seconds("start") + d)
    return max(ends, default=0.0)


@dataclass
class Scenario:
    name: str
    source: str
    points: list[Point]
    repeat: int
    seed: int
    quick: bool = False
    sets: list[str] = field(default_factory=list)
    sweep_keys: list[str] = field(default_factory=list)
    resolved: dict[str, Any] = field(default_factory=dict)  # --quick/--set applied, topology inline
    lines: dict[Key, int] = field(default_factory=dict, repr=False)  # where each key is in `source`
    sweep: dict[str, list[Any]] = field(default_factory=dict, repr=False)  # as the file gives it
    flags: list[str] = field(default_factory=list)  # its timing's doubts (spec/checks.py timing_flags)

    @property
    def runs(self) -> int:
        return len(self.points) * self.repeat

    def estimate_s(self) -> float:
        settle = units.seconds(self.points[0].spec.settle) if self.points else 0
        return sum((p.length_s + settle + 1.5) * self.repeat for p in self.points)


def expand_counts(spec: ScenarioFile) -> ScenarioFile:
    """The flows as they run: a flow with `count: N` (N > 1) becomes NAME.1 ... NAME.N,
    one with `count: 0` is left out; a tcp_info monitor of it watches NAME.1."""
    if all(f.count == 1 for f in spec.flows.values()):
        return spec
    flows: dict[str, FlowSpec] = {}
    renamed: dict[str, str | None] = {}
    for name, f in spec.flows.items():
        if f.count == 1:
            flows[name] = f
            continue
        renamed[name] = f"{name}.1" if f.count else None
        for k in range(1, f.count + 1):
            flows[f"{name}.{k}"] = f.model_copy(update={"count": 1})
    monitors = []
    for m in spec.monitors:
        if m.kind == "tcp_info" and m.flow in renamed:
            if renamed[m.flow] is None:
                continue
            m = m.model_copy(update={"flow": renamed[m.flow]})
        monitors.append(m)
    return spec.model_copy(update={"flows": flows, "monitors": monitors})


def find_link(topo: Topology, name: str) -> Link:
    """A link by its name, or by its ends as `a-b` (either order)."""
    try:
        return topo.link_named(name)
    except TopologyError:
        if "-" not in name:
            raise
        return topo.link_named(*name.split("-", 1))


def flow_ends(point: Point) -> dict[str, tuple[str, str]]:
    """Each flow with a peer: (sender, receiver) as its data goes (a drawing's paths)."""
    return {n: ((f.to, f.src) if f.reverse else (f.src, f.to))
            for n, f in point.spec.flows.items() if f.to is not None}


