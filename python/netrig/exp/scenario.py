"""Scenario files: a topology, the flows to run on it, what to watch, what to sweep.

    name: bufferbloat
    topology: bufferbloat-topo.yaml   # a topology file (beside this one), or inline
    duration: 30s                     # each flow's, unless it says otherwise
    repeat: 3                         # runs per sweep point
    seed: 1                           # run k of the experiment uses seed + k
    flows:
      bulk: {kind: tcp, from: h1, to: h2, cc: cubic}
      rtt:  {kind: ping, from: h1, to: h2, interval: 100ms}
    monitors:
      - {kind: queue, link: s0-h2}
    sweep:                            # the cross product of these lists
      links.s0-h2.aqm: [droptail, pie]
      flows.bulk.window: [16KB, 64KB]
    quick: {duration: 8s, repeat: 1}  # what `--quick` changes
    events:                           # what happens while the flows run (exp/events.py)
      - {at: 2s, link: r2-r3, down: true}          # silently: frames stop, interfaces stay up
      - {at: 4s, link: r2-r3, up: true}
      - {at: 5s, link: r1-r2, carrier: down}       # both ends' interfaces go down (or up)
      - {at: 6s, link: r1-r2, set: {delay: 50ms}}  # a live change, as `netrig link set`
      - {at: 7s, router: r3, stop: true}           # its FRR daemons (start: true again)
      - {at: 8s, node: h1, command: "ip route", timeout: 10s}

Instead of `topology:`, a scenario can name real machines reached over SSH (`hosts:`,
with `path:` and `clocks:`, netrig/remote/hosts.py): theory reads the path the user
declares, and nothing that needs an emulated lab (monitors other than tcp_info, events,
web flows, sweeps of links.* or topology.*) is accepted.

Sweep keys and `--set KEY=VALUE` name a value by path: `links.NAME.KEY` (a link of the
topology, by its name or as `a-b`), `topology.KEY...` (anything else in the topology),
`flows.NAME.KEY` (`flows.*.KEY`: every flow that takes KEY), or a top-level key
(`duration`), or an event's (`events.K.KEY`, K counted from 0: `events.0.at`); a sweep key `A,B` moves several paths together (`[[tcp, null], [udp,
10Mbit]]`; null leaves a flow's key unset). A flow with `count: N` runs as N copies, NAME.1 ... NAME.N. Every point of the sweep is checked
before anything runs; a problem names the file, the line and the key.
"""

from __future__ import annotations

import copy
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from netrig import suggest, units
from netrig.errors import NetrigError
from netrig.exp import sets as set_words
from netrig.exp import webtools
from netrig.remote import hosts as rhosts
from netrig.topo import load as tload
from netrig.topo.model import Link, Problem, Topology, TopologyError, _check, _problems_of

Key = tuple[str | int, ...]
SCHEMA = 1
MAX_POINTS = 1000  # sweep points: each is checked before anything runs, and each runs

FlowKind = Literal["tcp", "udp", "probe", "ping", "fetch", "web", "command"]
# Which keys each kind of flow takes (besides kind, from, start, duration).
TAKES: dict[str, set[str]] = {
    "tcp": {"to", "bytes", "cc", "window", "length", "parallel", "reverse", "rate", "nodelay",
            "mss", "omit", "connect_timeout"},
    "udp": {"to", "bytes", "window", "length", "parallel", "reverse", "rate", "omit", "connect_timeout"},
    "probe": {"to", "interval", "size"},
    "ping": {"to", "interval", "size"},
    "fetch": {"to", "interval", "size", "new_conn"},
    "web": {"to", "interval", "size", "new_conn", "http", "tls"},  # nginx and curl (exp/web.py)
    "command": {"command", "timeout"},
}
COMMON = {"kind", "src", "start", "duration", "count"}

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

    @property
    def runs(self) -> int:
        return len(self.points) * self.repeat

    def estimate_s(self) -> float:
        settle = units.seconds(self.points[0].spec.settle) if self.points else 0
        return sum((p.length_s + settle + 1.5) * self.repeat for p in self.points)


# Loading.
def load_scenario(path: str | Path, quick: bool = False, sets: list[str] | None = None) -> Scenario:
    path = Path(path)
    try:
        text = tload.read(path)
    except TopologyError as e:
        raise ScenarioError(e.problems) from None
    return loads_scenario(text, str(path), quick, sets or [], base_dir=path.parent)


def loads_scenario(text: str, source: str = "<string>", quick: bool = False,
                   sets: list[str] | None = None, base_dir: Path | None = None) -> Scenario:
    sets = sets or []
    try:
        data, lines, found = tload._parse(text, source)
    except tload.TopologyError as e:
        raise ScenarioError(e.problems) from None
    if not isinstance(data, dict):
        raise ScenarioError([f"{source}:1: a scenario is a mapping with topology: and flows: "
                             f"(it holds {tload._kind(data)})"])
    if found:
        raise ScenarioError(tload.where(found, source))
    # --quick: the quick: mapping's keys replace the file's (sweep lists whole).
    if quick:
        over = data.get("quick")
        if over is None:
            raise ScenarioError([f"{source}:1: --quick: this scenario has no quick: section"])
        if not isinstance(over, dict):
            raise ScenarioError([f"{source}:{lines.get(('quick',), 1)}: quick: should be a "
                                 f"mapping of the keys --quick changes"])
        for k, v in over.items():
            _merge_into(data, lines, (k,), v, ("quick", k))
    data.pop("quick", None) if quick else None
    # --set KEY=VALUE, applied like one-point sweeps.
    try:
        set_values = set_words.parse(sets)
    except set_words.SetError as e:
        raise ScenarioError([str(e)]) from None
    # The topology: a file beside the scenario, or inline.
    topo_src, topo_lines, topo_base = source, lines, ("topology",)
    t = data.get("topology")
    if isinstance(t, str):
        tpath = (base_dir or Path(".")) / t
        try:
            ttext = tload.read(tpath, "the topology file")
        except TopologyError as e:
            raise ScenarioError([f"{source}:{lines.get(('topology',), 1)}: topology: {p}"
                                 for p in e.problems]) from None
        try:
            tdata, topo_lines, tfound = tload._parse(ttext, str(tpath))
        except tload.TopologyError as e:
            raise ScenarioError(e.problems) from None
        if tfound:
            raise ScenarioError(tload.where(tfound, str(tpath)))
        data["topology"] = tdata
        topo_src, topo_base = str(tpath), ()
    problems: list[str] = []
    for key, value in set_values.items():
        msg = _apply(data, key, value)
        if msg:
            problems.append(f"--set {key}: {msg}")
    if problems:
        raise ScenarioError(problems)
    # Check the file as written (all problems at once), then each point.
    base = _check_point(data, lines, source, topo_lines, topo_src, topo_base, None)
    if isinstance(base, list):
        raise ScenarioError(base)
    spec0 = base[1]
    sweep = dict(spec0.sweep)
    for key, values in sweep.items():
        if not values:
            problems.append(f"{source}:{lines.get(('sweep', key), 1)}: sweep.{key}: an empty list")
        msg = _real_sweep_problem(data, key) or _apply(data, key, values[0] if values else None, probe=True)
        if msg:
            problems.append(f"{source}:{lines.get(('sweep', key), 1)}: sweep.{key}: {msg}")
    points_n = 1
    for values in sweep.values():
        points_n *= max(len(values), 1)
    if points_n > MAX_POINTS:
        sizes = " x ".join(str(len(v)) for v in sweep.values())
        problems.append(f"{source}:{lines.get(('sweep',), 1)}: sweep: {sizes} = {points_n} points; "
                        f"a scenario sweeps at most {MAX_POINTS}")
    if problems:
        raise ScenarioError(problems)
    # Each swept value on its own, blamed on its own item; then the combinations.
    for key, values in sweep.items():
        for j, v in enumerate(values):
            d = copy.deepcopy(data)
            msg = _apply(d, key, v)
            got = [msg] if msg else _check_point(d, lines, source, topo_lines, topo_src, topo_base, None)
            if isinstance(got, list):
                line = lines.get(("sweep", key, j), lines.get(("sweep", key), 1))
                problems.append(f"{source}:{line}: sweep.{key}[{j}]: {v!r}: "
                                + "; ".join(_strip(x) for x in got))
    if problems:
        raise ScenarioError(problems)
    points: list[Point] = []
    keys = list(sweep)
    for i, combo in enumerate(itertools.product(*(sweep[k] for k in keys)) if keys else [()]):
        d = copy.deepcopy(data)
        for k, v in zip(keys, combo):
            _apply(d, k, v)
        d.pop("sweep", None)
        d.pop("quick", None)
        at = [(k, sweep[k].index(v)) for k, v in zip(keys, combo)]
        got = _check_point(d, lines, source, topo_lines, topo_src, topo_base, (source, lines, at))
        if isinstance(got, list):
            problems += [p for p in got if p not in problems]
            continue
        topo, spec = got
        points.append(Point(i, dict(zip(keys, combo)), topo, spec, d))
    if problems:
        raise ScenarioError(problems)
    name = spec0.name or Path(source).stem
    resolved = {k: v for k, v in data.items() if k != "quick"}
    resolved["name"] = name
    return Scenario(name, source, points, spec0.repeat, spec0.seed, quick, list(sets), keys,
                    resolved)


def _merge_into(data: dict, lines: dict, path: Key, value: Any, from_path: Key) -> None:
    """data[path] = value (mappings merged key by key, except sweep and flows' lists),
    with the lines of `from_path` recorded at `path`."""
    cur = data
    for p in path[:-1]:
        cur = cur.setdefault(p, {})
    k = path[-1]
    if isinstance(value, dict) and isinstance(cur.get(k), dict) and path != ("sweep",):
        for kk, vv in value.items():
            _merge_into(data, lines, (*path, kk), vv, (*from_path, kk))
        return
    cur[k] = copy.deepcopy(value)
    for lk, line in list(lines.items()):
        if lk[: len(from_path)] == from_path:
            lines[path + lk[len(from_path):]] = line


def _check_point(d: dict, lines: dict, source: str, topo_lines: dict, topo_src: str,
                 topo_base: Key, sweep_at) -> tuple[Topology, ScenarioFile] | list[str]:
    """The point's topology and spec, or its problems. In a sweep point, a problem in a
    value the sweep set is reported at that sweep item."""
    found: list[tuple[int, Key, str]] = []
    topo_found: list[tuple[int, Key, str]] = []
    spec = None
    try:
        spec = ScenarioFile.model_validate(d)
    except ValidationError as e:
        for p in tload._tidy(_problems_of(e), d, scenario_keys):
            if p.path[:1] == ("topology",) and isinstance(d.get("topology"), dict):
                continue  # the topology's own check below says it better
            found.append((tload._line(lines, p.path), p.path, p.message))
    topo = None
    if isinstance(d.get("topology"), dict):
        tdata = d["topology"]
        topo, tprobs = tload.check(tdata, topo_lines, topo_src, topo_base)
        topo_found += tprobs
    if spec is not None:
        hprobs = _check_hosts(spec, d)
        found += [(tload._line(lines, p.path), p.path, p.message) for p in hprobs]
        if not hprobs and spec.hosts is not None and spec.path is not None:
            topo = rhosts.declared_topology(spec.name or "hosts", spec.hosts, spec.path)
    if spec is not None and topo is not None:
        found += [(tload._line(lines, p.path), p.path, p.message) for p in _cross_check(spec, topo)]
    out = tload.where(found, source) + tload.where(topo_found, topo_src)
    if not out and spec is not None:
        spec = expand_counts(spec)
    if out and sweep_at:
        src, lns, at = sweep_at
        vals = ", ".join(f"{k}={_show(d, k)}" for k, _ in at)
        return [f"{src}:{lns.get(('sweep', k), 1)}: sweep.{k}[{j}]: at the point {vals}: "
                + "; ".join(_strip(x) for x in out) for k, j in at[:1]]
    return out or (topo, spec)


def scenario_keys(path: Key, data: Any) -> list[str]:
    """The keys a scenario may give in the mapping at `path`: a flow's, those its kind
    takes (all a flow takes when its kind is unknown); the topology's, a topology's."""
    if path[:1] == ("topology",):
        return tload.topology_keys(path[1:], data.get("topology") if isinstance(data, dict) else None)
    if len(path) == 2 and path[0] == "flows":
        flow = (data.get("flows") or {}).get(path[1]) if isinstance(data, dict) else None
        kind = flow.get("kind") if isinstance(flow, dict) else None
        if kind in TAKES:
            order = suggest.keys_at(ScenarioFile, path)
            takes = {"from" if k == "src" else k for k in TAKES[kind] | COMMON}
            return [k for k in order if k in takes]
    return suggest.keys_at(ScenarioFile, path)


def _strip(problem: str) -> str:
    """`FILE:LINE: key: msg` -> `key: msg`."""
    parts = problem.split(": ", 1)
    return parts[1] if len(parts) == 2 else problem


def _show(d: dict, key: str) -> str:
    try:
        return str(_get(d, key))
    except (KeyError, IndexError, TypeError):
        return "?"


def _check_hosts(spec: ScenarioFile, d: dict) -> list[Problem]:
    """A scenario runs on an emulated lab (topology:) or on real machines (hosts:, with
    path:), not both; on real machines, only what needs no lab."""
    has_topo = d.get("topology") is not None
    if spec.hosts is None:
        out = [] if has_topo else [Problem((), "a scenario needs topology: (an emulated lab) or hosts: "
                                               "(real machines reached over SSH)")]
        out += [Problem((k,), f"{k}: describes real hosts (hosts:); an emulated lab's path is its "
                              "links' rate, delay and loss") for k in ("path", "clocks") if k in d]
        return out
    if has_topo:
        return [Problem(("hosts",), "give topology: (an emulated lab) or hosts: (real machines over "
                                    "SSH), not both")]
    out: list[Problem] = []
    for name in spec.hosts:
        if (why := rhosts.name_problem(name)) is not None:
            out.append(Problem(("hosts", name), why))
    if len(spec.hosts) < 2:
        out.append(Problem(("hosts",), "at least two hosts: flows run between them"))
    if spec.path is None:
        out.append(Problem(("hosts",), "real hosts need path: {rate: ..., rtt: ...}: what you know of "
                                       "the path between them, which theory reads (e.g. the Wi-Fi "
                                       "link's rate and the RTT ping shows)"))
    for name, f in spec.flows.items():
        if f.kind == "web":
            out.append(Problem(("flows", name, "kind"), "a web flow runs nginx inside an emulated lab, "
                               "not on real hosts: use kind: fetch (netrig-perf's request/response)"))
    for i, m in enumerate(spec.monitors):
        if m.kind != "tcp_info":
            out.append(Problem(("monitors", i, "kind"), f"a {m.kind} monitor watches an emulated lab's "
                               "links or namespaces, which real hosts (hosts:) do not have; only "
                               "tcp_info (a tcp flow's own samples) works there"))
    if spec.events:
        out.append(Problem(("events",), "events change an emulated lab while flows run: real hosts "
                           "(hosts:) have no lab for netrig to change"))
    return out


def _real_sweep_problem(d: dict, key: str) -> str | None:
    """Why a sweep key cannot be swept on real hosts (None: it can)."""
    if d.get("hosts") is None:
        return None
    for k in key.split(","):
        head = k.strip().split(".")[0]
        if head in ("path", "clocks", "hosts"):
            return (f"{head}: is what you declare about real machines: sweeping it would change "
                    "theory, not the network (sweep flows.* instead)")
    return None


def _cross_check(spec: ScenarioFile, topo: Topology) -> list[Problem]:
    """What the schema cannot see: flows and monitors against the topology."""
    out: list[Problem] = []
    nodes = topo.nodes
    for name, f in spec.flows.items():
        given = set(f.model_fields_set) - COMMON
        for k in sorted(given - TAKES[f.kind]):
            out.append(Problem(("flows", name, k), f"'{k}' does not apply to a {f.kind} flow "
                                                  f"(it takes {', '.join(sorted(TAKES[f.kind]))})"))
        for end, node in (("from", f.src), ("to", f.to)):
            if node is None:
                continue
            if node not in nodes:
                out.append(Problem(("flows", name, end), f"no node named '{node}' in the topology"))
            elif nodes[node] == "switch":
                out.append(Problem(("flows", name, end), f"'{node}' is a switch: it has no address "
                                                         "(flows run between hosts and routers)"))
        if f.kind != "command" and f.to is None:
            out.append(Problem(("flows", name), f"a {f.kind} flow needs to: (its destination)"))
        if f.kind == "command" and not f.command:
            out.append(Problem(("flows", name), "a command flow needs command: (what to run)"))
        if f.to is not None and f.to == f.src:
            out.append(Problem(("flows", name, "to"), "a flow from a node to itself"))
        if f.bytes is not None and f.duration is not None:
            out.append(Problem(("flows", name, "bytes"), "give duration or bytes, not both"))
        if f.kind in ("tcp", "udp") and f.omit is not None and f.seconds("omit") % 1:
            out.append(Problem(("flows", name, "omit"), "whole seconds (netrig-perf -O)"))
        elif f.omit is not None and f.bytes is None and \
                f.seconds("duration", units.seconds(spec.duration)) - f.seconds("omit") < 1:
            out.append(Problem(("flows", name, "omit"), f"{f.omit} leaves less than 1 s of the "
                               "flow's duration to measure (omit is the duration's first part)"))
        if f.cc is not None and f.kind == "tcp":
            valid = congestion_controls()
            if valid and f.cc not in valid:
                out.append(Problem(("flows", name, "cc"), f"'{f.cc}' is not a TCP congestion control "
                                   f"this kernel has{suggest.unknown(f.cc, sorted(valid), 'it has')}"))
        if f.kind == "udp" and f.rate is None:
            out.append(Problem(("flows", name), "a udp flow needs rate: (e.g. 10Mbit)"))
        if f.kind == "web":
            out += _check_web(name, f)
    if not 0.1 <= units.seconds(spec.interval) <= 10:
        out.append(Problem(("interval",), "between 100ms and 10s (the flows' report interval)"))
    if not any(f.count for f in spec.flows.values()):
        out.append(Problem(("flows",), "no flows: a scenario runs at least one"
                           + (" (every count: is 0)" if spec.flows else "")))
    out += _check_events(spec, topo)
    for i, m in enumerate(spec.monitors):
        if m.kind == "queue":
            if m.link is None:
                out.append(Problem(("monitors", i), "a queue monitor needs link: (a link's name, or a-b)"))
            else:
                try:
                    link = find_link(topo, m.link)
                except TopologyError:
                    out.append(Problem(("monitors", i, "link"), f"no link '{m.link}' in the topology"))
                else:
                    if topo.backend != "userspace" or not link.emulated:
                        out.append(Problem(("monitors", i, "link"),
                                           f"link {link.name} is not emulated by netrig-link (give it a "
                                           "rate, delay or loss, or emulated: true): its queue cannot "
                                           "be watched"))
        elif m.kind == "tcp_info":
            fl = spec.flows.get(m.flow or "")
            if fl is None:
                out.append(Problem(("monitors", i, "flow"), f"no flow named '{m.flow}'"))
            elif fl.kind != "tcp":
                out.append(Problem(("monitors", i, "flow"), f"flow '{m.flow}' is {fl.kind}: "
                                                            "TCP_INFO is a tcp flow's"))
        elif m.kind == "iface":
            if m.node not in nodes:
                out.append(Problem(("monitors", i, "node"), f"no node named '{m.node}'"))
        elif m.kind == "capture":
            out += _check_capture(m, ("monitors", i), topo)
        if m.kind != "capture":
            out += [Problem(("monitors", i, k), f"{k}: is a capture's key, not a {m.kind} monitor's")
                    for k in CAPTURE_KEYS if getattr(m, k) is not None]
    return out


CAPTURE_KEYS = ("filter", "snaplen", "size", "files", "drops")


def _check_capture(m: MonitorSpec, where: Key, topo: Topology) -> list[Problem]:
    """A capture: of a link the topology has, or of a node and (if it has several) one
    of its interfaces; a filter tcpdump compiles; files of at least 10 kB each."""
    from netrig.link import bpf  # runs tcpdump: only for a scenario that captures

    out: list[Problem] = []
    if (m.link is None) == (m.node is None):
        out.append(Problem(where, "a capture needs link: (a link's name, or a-b), or node: "
                                  "(and iface: if it has several)"))
    elif m.link is not None:
        try:
            find_link(topo, m.link)
        except TopologyError:
            out.append(Problem((*where, "link"), f"no link '{m.link}' in the topology"))
    elif m.node not in topo.nodes:
        out.append(Problem((*where, "node"), f"no node named '{m.node}'"))
    elif m.dir != "both":
        out.append(Problem((*where, "dir"), "a node's interface is captured both ways "
                                            "(name a link to capture one direction)"))
    if m.filter is not None:
        try:
            bpf.compile_bpf(m.filter)
        except NetrigError as e:
            out.append(Problem((*where, "filter"), str(e)))
    size, files = units.size_bytes(m.size or "1GB"), m.files or 1
    if size < 10_000 * files:
        out.append(Problem((*where, "size"), f"{m.size} over {files} files leaves under 10 kB a file"))
    return out


def _check_web(name: str, f: FlowSpec) -> list[Problem]:
    """A web flow runs nginx and curl (exp/web.py): they must be installed, and curl must
    be able to do what the flow asks."""
    missing = webtools.missing(f.tls)
    if missing:
        return [Problem(("flows", name, "kind"), "a web flow needs " + " and ".join(missing)
                        + ", which this machine lacks")]
    size = f.nbytes("size")
    if size is not None and not 1 <= size <= webtools.MAX_OBJECT:
        return [Problem(("flows", name, "size"), f"{f.size} is not an object nginx serves here: from 1 B to "
                        f"{webtools.MAX_OBJECT // 10**6} MB (it is written in the lab's directory, in memory)")]
    if f.http == "2" and not f.tls and not f.new_conn:
        version = webtools.curl_version()
        if version is not None and version < webtools.H2C_REUSE_FIXED:
            return [Problem(("flows", name, "new_conn"), f"curl {'.'.join(map(str, version))} cannot "
                             "reuse a cleartext HTTP/2 connection (every fetch after the first fails: "
                             "curl issue #10634, fixed in 8.0): give tls: true (HTTP/2 over TLS, as "
                             "browsers speak it) or new_conn: true")]
    return []


def _check_events(spec: ScenarioFile, topo: Topology) -> list[Problem]:
    """Each event: one action, on something the topology has that can do it, before
    the scenario ends."""
    out: list[Problem] = []
    end = length_s(spec)
    nodes = topo.nodes
    for i, ev in enumerate(spec.events):
        where = ("events", i)
        acts = ev.actions
        if len(acts) != 1:
            out.append(Problem(where, ("no action: give one of " if not acts else
                                       f"{len(acts)} actions ({', '.join(acts)}): give one of ")
                               + "down: true, up: true, carrier: down|up, set: {...}, stop: true, "
                               "start: true, command: \"...\""))
            continue
        act = acts[0]
        needs = EVENT_ACTIONS[act]
        for other in ("link", "router", "node"):
            if other != needs and getattr(ev, other) is not None:
                out.append(Problem((*where, other), f"a {act} event acts on a {needs}, not a {other}"))
        name = getattr(ev, needs)
        if act in ("down", "up", "stop", "start") and getattr(ev, act) is not True:
            out.append(Problem((*where, act), f"write {act}: true (or leave the event out)"))
            continue
        if ev.timeout is not None and act != "command":
            out.append(Problem((*where, "timeout"), "only a command event takes timeout"))
        if ev.dir is not None and act != "set":
            out.append(Problem((*where, "dir"), "only a set event takes dir"))
        if ev.at_s >= end:
            out.append(Problem((*where, "at"), f"{ev.at} is not before the scenario's end ({end:g} s, "
                               "when the last flow ends): an event happens while flows run"))
        if name is None:
            out.append(Problem(where, f"a {act} event needs {needs}: (the {needs} it acts on)"))
            continue
        if needs == "link":
            try:
                link = find_link(topo, name)
            except TopologyError:
                names = [lk.name for lk in topo.links]
                out.append(Problem((*where, "link"), f"no link '{name}' in the topology"
                                   f"{suggest.did_you_mean(name, names)}"))
                continue
            if act in ("down", "up", "set") and (topo.backend != "userspace" or not link.emulated):
                how = ("set backend: userspace in the topology, and " if topo.backend != "userspace"
                       else "")
                out.append(Problem((*where, "link"), f"link {link.name} is not emulated by netrig-link, "
                                   f"so it cannot be {'changed live' if act == 'set' else 'taken ' + act}"
                                   f": {how}give the link a delay, rate or loss, or emulated: true"
                                   + ("" if act == "set" else " (or use carrier: down|up, which "
                                      "takes its interfaces down)")))
            if act == "set":
                if not ev.set_:
                    out.append(Problem((*where, "set"), "set: names what changes ({delay: 50ms, ...})"))
                else:
                    try:
                        link.changed(ev.set_, ev.dir)
                    except TopologyError as e:
                        out.append(Problem((*where, "set"), "; ".join(e.problems)))
        elif needs == "router":
            if name in nodes and nodes[name] != "router":
                out.append(Problem((*where, "router"), f"'{name}' is a {nodes[name]}, not a router: "
                                   "only a router's daemons stop and start"))
            elif nodes.get(name) != "router":
                out.append(Problem((*where, "router"), f"no router named '{name}'"
                                   f"{suggest.did_you_mean(name, [n for n, k in nodes.items() if k == 'router'])}"))
            elif not topo.routing_of(name).dynamic:
                out.append(Problem((*where, "router"), f"router {name} runs no FRR (static routes): "
                                   "there are no daemons to stop or start (give it ospf: or bgp:)"))
        else:
            if name not in nodes:
                out.append(Problem((*where, "node"), f"no node named '{name}'"
                                   f"{suggest.did_you_mean(name, list(nodes))}"))
            elif nodes[name] == "switch":
                out.append(Problem((*where, "node"), f"'{name}' is a switch: a command runs in a "
                                   "host or a router"))
            if not (ev.command or "").strip():
                out.append(Problem((*where, "command"), "an empty command"))
    return out


CC_AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


def congestion_controls(available: Path = CC_AVAILABLE, modules: Path | None = None) -> set[str]:
    """The TCP congestion controls a flow can ask for: those the kernel has loaded, and
    those a module could add (`tcp_X.ko*` below the running kernel's net/ipv4, which the
    kernel loads when a socket asks as root). Namespaces share the host's kernel, so
    this is every node's list. Empty when neither can be read (nothing is refused)."""
    names: set[str] = set()
    try:
        names.update(available.read_text().split())
    except OSError:
        pass
    if modules is None:
        modules = Path("/lib/modules") / os.uname().release / "kernel" / "net" / "ipv4"
    try:
        for ko in modules.glob("tcp_*.ko*"):
            names.add(ko.name.split(".", 1)[0].removeprefix("tcp_"))
    except OSError:
        pass
    names.discard("diag")  # tcp_diag is a socket monitor, not a congestion control
    return names


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


# Paths: sweep keys and --set.
def _resolve(d: dict, key: str) -> tuple[Any, str | int]:
    """The container and the final key a path names (creating mappings on the way)."""
    parts = key.split(".")
    if parts[0] in ("links", "topology") and d.get("hosts") is not None:
        raise KeyError(f"{parts[0]}.* changes an emulated lab; this scenario runs on real hosts "
                       "(hosts:), whose network netrig does not change (sweep flows.* instead)")
    if parts[0] == "links":
        if len(parts) < 3:
            raise KeyError("links.NAME.KEY names a value of a link")
        topo = d.get("topology")
        if not isinstance(topo, dict):
            raise KeyError("the topology is not loaded")
        links = topo.get("links") or []
        i = _link_index(links, parts[1])
        if isinstance(links[i], list):
            links[i] = {"a": links[i][0], "b": links[i][1]}
        cur: Any = links[i]
        rest = parts[2:]
    elif parts[0] == "topology":
        cur, rest = d.get("topology"), parts[1:]
        if not isinstance(cur, dict) or not rest:
            raise KeyError("topology.KEY names a value in the topology")
    elif parts[0] == "events":
        events = d.get("events")
        if len(parts) < 3 or not parts[1].isdigit():
            raise KeyError("events.K.KEY names a value of the scenario's event K (from 0)")
        if not isinstance(events, list) or int(parts[1]) >= len(events) \
                or not isinstance(events[int(parts[1])], dict):
            n = len(events) if isinstance(events, list) else 0
            raise KeyError(f"no event {parts[1]} (the scenario has {n}: events.0"
                           f"{'' if n < 2 else f' to events.{n - 1}'})" if n else
                           f"no event {parts[1]} (the scenario has no events:)")
        cur, rest = events[int(parts[1])], parts[2:]
    elif parts[0] == "flows":
        if len(parts) < 3:
            raise KeyError("flows.NAME.KEY names a value of a flow")
        flows = d.get("flows") or {}
        if parts[1] not in flows:
            raise KeyError(f"no flow named '{parts[1]}' (flows: {', '.join(flows) or 'none'})")
        cur, rest = flows[parts[1]], parts[2:]
    else:
        cur, rest = d, parts
        if parts[0] in ("sweep", "quick", "flows", "monitors"):
            raise KeyError(f"'{parts[0]}' cannot be swept or set")
    for p in rest[:-1]:
        if not isinstance(cur, dict):
            raise KeyError(f"'{p}' is not inside a mapping")
        cur = cur.setdefault(p, {})
    if not isinstance(cur, dict):
        raise KeyError(f"'{rest[-1]}' is not inside a mapping")
    return cur, rest[-1]


def _link_index(links: list, name: str) -> int:
    for i, l in enumerate(links):
        if isinstance(l, dict):
            if l.get("name") == name:
                return i
    for i, l in enumerate(links):
        a, b = (l[0], l[1]) if isinstance(l, list) and len(l) == 2 else (
            (l.get("a"), l.get("b")) if isinstance(l, dict) else (None, None))
        if name in (f"{a}-{b}", f"{b}-{a}"):
            return i
    raise KeyError(f"no link '{name}' in the topology (a link's name, or its ends as a-b)")


def _expand_star(d: dict, key: str) -> list[str]:
    """`flows.*.KEY`: the path in every flow whose kind takes KEY (others as given)."""
    parts = key.split(".")
    if len(parts) < 3 or parts[0] != "flows" or parts[1] != "*":
        return [key]
    flows = d.get("flows") or {}
    out = [f"flows.{n}.{'.'.join(parts[2:])}" for n, f in flows.items()
           if isinstance(f, dict) and parts[2] in TAKES.get(f.get("kind"), set()) | COMMON]
    if not out:
        raise KeyError(f"no flow takes '{parts[2]}' (flows.*.{parts[2]} sets it in every flow "
                       "whose kind takes it)")
    return out


def _zipped(key: str, value: Any) -> list[tuple[str, Any]] | str:
    """A sweep key naming several paths, `a,b`, takes a list of as many values per item
    (the paths move together); a plain key, one value. Returns the (path, value) pairs,
    or what is wrong."""
    paths = [k.strip() for k in key.split(",")]
    if len(paths) == 1:
        return [(key, value)]
    if not isinstance(value, list) or len(value) != len(paths):
        return (f"{key} names {len(paths)} paths: each value is a list of {len(paths)} "
                f"(got {value!r})")
    return list(zip(paths, value))


def _get(d: dict, key: str) -> Any:
    if "," in key:
        return [_get(d, k.strip()) for k in key.split(",")]
    cur, k = _resolve(copy.deepcopy(d), _expand_star(d, key)[0])
    return cur.get(k)


def _apply(d: dict, key: str, value: Any, probe: bool = False) -> str | None:
    """Sets the value a path names (`flows.*.KEY`: in every flow that takes it);
    returns what is wrong with the path, if anything. With probe, only checks (on a copy)."""
    pairs = _zipped(key, value)
    if isinstance(pairs, str):
        return pairs
    try:
        target = copy.deepcopy(d) if probe else d
        for one, v in pairs:
            for path in _expand_star(target, one):
                cur, k = _resolve(target, path)
                if v is None and path.startswith("flows."):
                    cur.pop(k, None)  # null unsets a flow's key
                else:
                    cur[k] = copy.deepcopy(v)
    except (KeyError, IndexError) as e:
        return str(e.args[0]) if e.args else "no such key"
    return None


def flow_ends(point: Point) -> dict[str, tuple[str, str]]:
    """Each flow with a peer: (sender, receiver) as its data goes (a drawing's paths)."""
    return {n: ((f.to, f.src) if f.reverse else (f.src, f.to))
            for n, f in point.spec.flows.items() if f.to is not None}


def drawable(path: str) -> tuple[Topology, dict[str, tuple[str, str]], str]:
    """A scenario file's topology at its first sweep point, its flows' ends and its
    name: what `netrig graph` draws."""
    scen = load_scenario(path)
    return scen.points[0].topology, flow_ends(scen.points[0]), scen.name
