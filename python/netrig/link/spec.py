"""One link direction, parsed once: the Python side of the link-spec contract.

The contract is Rust's (`netrig_core::link::schema`): every key a topology file may give
one direction of a link, its place in netrig-link's JSON, its unit, range and default,
and each queue discipline's parameters and default limit. `schema.json` beside this file
is what `netrig-link schema` prints; a test on each side fails when they differ. This
module reads it and nothing here repeats it: a new key needs a row in the Rust table
(and its stage), not an edit here.

    d = resolve({"rate": "30Mbit", "delay": "10ms", "aqm": {"type": "pie", "target": "20ms"}})
    d.rate_bps, d.delay_s, d.aqm.target_s   # 30e6, 0.010, 0.020
    d.spec()                                 # netrig-link's DirectionSpec JSON

A `Direction` holds numbers in SI units (seconds, bit/s, bytes, probabilities), made
once when a topology is loaded; the user's text stays in `text` for labels and errors.
A key at its neutral value (`loss: 0%`, `delay: 0ms`, `aqm: droptail`) is not set: the
spec leaves it out, and netrig-link, which replaces a direction's whole spec on a live
change, turns that stage off.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from netrig import units

SCHEMA: dict[str, Any] = json.loads(Path(__file__).with_name("schema.json").read_text())
VERSION: int = SCHEMA["version"]
LATE_BUDGET_S: float = SCHEMA["lateness"]["budget_ns"] / 1e9
LATE_SHARE: float = SCHEMA["lateness"]["late_share"]
_QUEUE = SCHEMA["queue"]


@dataclass(frozen=True)
class Key:
    """One key of a direction (or of a discipline): `name` in the file, `json` its
    dotted path in the spec, `kind` what it holds; `min`/`max`/`default` in the JSON's
    unit (nanoseconds, bit/s, bytes, probabilities)."""

    name: str
    json: str
    kind: str
    unit: str
    default: Any
    doc: str
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()

    @classmethod
    def of(cls, k: dict[str, Any]) -> Key:
        return cls(k["name"], k["json"], k["kind"], k["unit"], k["default"], k["doc"], k.get("min"),
                   k.get("max"), tuple(k.get("choices", ())))

    # File -> SI -> JSON.
    def parse(self, value: Any) -> Any:
        """The file's value in SI units, checked against the range; UnitError names
        what is wrong with it."""
        if isinstance(value, (str, int, float)):
            return _parse_scalar(self, value)  # each text is read once
        return _parse(self, value)

    def to_json(self, si: Any) -> Any:
        if self.kind == "duration":
            return int(round(si * 1e9))
        if self.kind in ("rate", "bytes", "count"):
            return int(round(si))
        return si

    def from_json(self, v: Any) -> Any:
        if v is None:
            return None
        return v / 1e9 if self.kind == "duration" else v

    @property
    def neutral(self) -> Any:
        """The SI value that leaves this key's stage off (or as if never given)."""
        if self.default is not None:
            return self.from_json(self.default)
        return 0.0 if self.kind == "fraction" else None

    def _range(self, si: Any, text: Any) -> None:
        if self.min is None or isinstance(si, (bool, str)):
            return
        j = self.to_json(si)
        if not self.min <= j <= self.max:
            raise units.UnitError(f"'{text}' is outside {self.show(self.min)} .. {self.show(self.max)}")

    def show(self, j: float) -> str:
        """A JSON value as the file would write it."""
        if self.kind == "rate":
            return units.format_rate(j).replace(" ", "").replace("/s", "")
        if self.kind == "duration":
            return units.format_seconds(j / 1e9).replace(" ", "")
        if self.kind == "fraction":
            return f"{j * 100:g}%"
        return str(int(j)) if float(j).is_integer() else f"{j:g}"


def _parse(key: Key, value: Any) -> Any:
    kind = key.kind
    if kind == "rate":
        si: Any = units.rate_bps(value)
    elif kind == "duration":
        si = units.seconds(value)
        if si < 0:
            raise units.UnitError(f"'{value}' is negative (it should be 0s or more)")
    elif kind == "fraction":
        si = units.fraction(value)
    elif kind == "bytes":
        si = units.size_bytes(value)
    elif kind in ("count", "number"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                kind == "count" and value != int(value)) or not math.isfinite(value):
            what = "a whole number" if kind == "count" else "a number"
            raise units.UnitError(f"{value!r} is not {what} ({key.name}: {key.doc})")
        si = int(value) if kind == "count" else float(value)
    elif kind == "bool":
        if not isinstance(value, bool):
            raise units.UnitError(f"{value!r} is not true or false")
        si = value
    elif kind == "choice":
        if value not in key.choices:
            raise units.UnitError(f"{value!r} is not one of {', '.join(key.choices)}")
        si = value
    elif kind == "path":
        if not isinstance(value, str) or not value:
            raise units.UnitError(f"{value!r} is not a file's path")
        si = value
    elif kind == "queue":
        return _queue(value)
    elif kind == "gemodel":
        return _gemodel(value)
    elif kind == "discipline":
        return discipline(value)
    else:  # a kind this netrig does not know: schema.json is from a newer netrig-link
        raise units.UnitError(f"netrig cannot read a {kind} (key {key.name}); update netrig")
    key._range(si, value)
    return si


_parse_scalar = lru_cache(maxsize=4096, typed=True)(_parse)


def _queue(value: Any) -> tuple[int | None, int | None]:
    p, b = units.queue_limit(value)
    packets, nbytes = _QUEUE["packets"], _QUEUE["bytes"]
    if p is not None and not packets["min"] <= p <= packets["max"]:
        raise units.UnitError(f"'{value}': a queue holds {packets['min']:.0f} .. {packets['max']:.0f} packets")
    if b is not None and not nbytes["min"] <= b <= nbytes["max"]:
        raise units.UnitError(f"'{value}': a queue holds {nbytes['min']:g} bytes .. 4 GiB")
    return p, b


GEMODEL = ("p", "r", "loss_good", "loss_bad")


def _gemodel(value: Any) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise units.UnitError(f"{value!r} is not a mapping of {', '.join(GEMODEL)}")
    out = {"loss_good": 0.0, "loss_bad": 1.0}
    for k, v in value.items():
        if k not in GEMODEL:
            raise units.UnitError(f"{k}: unknown key (gemodel takes {', '.join(GEMODEL)})")
        out[k] = KEYS["loss"].parse(v)
    missing = [k for k in ("p", "r") if k not in out]
    if missing:
        raise units.UnitError(f"gemodel needs {' and '.join(missing)}")
    return out


@dataclass(frozen=True)
class DisciplineInfo:
    name: str
    params: dict[str, Key]
    limit_packets: int | None
    limit_bytes: int | None
    doc: str
    constants: dict[str, Any]  # what a user cannot set but tc must match (RED's avpkt, wq)


KEYS: dict[str, Key] = {k["name"]: Key.of(k) for k in SCHEMA["keys"]}
DISCIPLINES: dict[str, DisciplineInfo] = {
    d["name"]: DisciplineInfo(d["name"], {p["name"]: Key.of(p) for p in d["params"]},
                              d["limit"]["packets"], d["limit"]["bytes"], d["doc"], d["constants"])
    for d in SCHEMA["disciplines"]}


@dataclass(frozen=True)
class Discipline:
    """A queue discipline and the parameters given to it (SI units); the rest take the
    discipline's defaults."""

    name: str = "droptail"
    given: Mapping[str, Any] = field(default_factory=dict)

    @property
    def info(self) -> DisciplineInfo:
        return DISCIPLINES[self.name]

    def get(self, param: str) -> Any:
        if param in self.given:
            return self.given[param]
        key = self.info.params.get(param)
        return key.from_json(key.default) if key else None

    @property
    def target_s(self) -> float | None:
        """The standing delay the AQM aims at, if it aims at one."""
        return self.get("target") if "target" in self.info.params else None

    def spec(self) -> dict[str, Any]:
        """The `queue` object's discipline and parameters, in netrig-link's JSON."""
        out: dict[str, Any] = {"discipline": self.name}
        for name, v in self.given.items():
            key = self.info.params[name]
            out[key.json] = key.to_json(v)
        return out


def discipline(value: Any) -> Discipline:
    """`pie`, or `{type: pie, target: 20ms}`: the discipline, its parameters parsed."""
    if isinstance(value, Discipline):
        return value
    if isinstance(value, str):
        value = {"type": value}
    if not isinstance(value, Mapping) or "type" not in value:
        raise units.UnitError(f"{value!r} is not a queue discipline ({', '.join(DISCIPLINES)})")
    info = DISCIPLINES.get(value["type"])
    if info is None:
        raise units.UnitError(f"{value['type']!r} is not a queue discipline ({', '.join(DISCIPLINES)})")
    wrong = sorted(k for k in value if k != "type" and k not in info.params)
    if wrong:
        takes = ", ".join(info.params) or "no parameters"
        raise units.UnitError(f"{info.name} does not take {', '.join(wrong)} (it takes {takes})")
    given = {}
    for k, v in value.items():
        if k != "type" and v is not None:
            try:
                given[k] = info.params[k].parse(v)
            except units.UnitError as e:
                raise units.UnitError(f"{k}: {e}") from None
    return Discipline(info.name, given)


@dataclass(frozen=True)
class Direction:
    """One direction of a link, in numbers. `values` holds the keys set to something
    other than their neutral value (SI units); `text` what the user wrote."""

    values: Mapping[str, Any] = field(default_factory=dict)
    aqm: Discipline = field(default_factory=Discipline)
    text: Mapping[str, Any] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        return self.values[name] if name in self.values else KEYS[name].neutral

    # The keys theory and the backends read, by their unit.
    rate_bps = property(lambda self: self.get("rate"))
    overhead_bytes = property(lambda self: self.get("overhead"))
    trace = property(lambda self: self.get("trace"))
    trace_repeat = property(lambda self: self.get("trace_repeat"))
    delay_s = property(lambda self: self.get("delay"))
    jitter_s = property(lambda self: self.get("jitter"))
    distribution = property(lambda self: self.values.get("distribution"))
    correlation = property(lambda self: self.get("correlation"))
    no_reorder = property(lambda self: self.get("no_reorder"))
    loss = property(lambda self: self.get("loss"))
    loss_correlation = property(lambda self: self.get("loss_correlation"))
    gemodel = property(lambda self: self.values.get("gemodel"))
    duplicate = property(lambda self: self.get("duplicate"))
    corrupt = property(lambda self: self.get("corrupt"))
    reorder = property(lambda self: self.get("reorder"))
    reorder_gap = property(lambda self: self.get("reorder_gap"))

    @property
    def queue_packets(self) -> int | None:
        """The queue limit the user gave, in packets (None: not in packets)."""
        return self.values["queue"][0] if "queue" in self.values else None

    @property
    def queue_bytes(self) -> int | None:
        return self.values["queue"][1] if "queue" in self.values else None

    @property
    def limit(self) -> tuple[int | None, int | None]:
        """The queue's limit as it runs: the user's, else the discipline's default."""
        if "queue" in self.values:
            return self.values["queue"]
        return self.aqm.info.limit_packets, self.aqm.info.limit_bytes

    # What the direction does.
    STAGES = ("rate", "trace", "delay", "jitter", "loss", "gemodel", "duplicate", "corrupt", "reorder")

    @property
    def shaped(self) -> bool:
        """Does it change traffic beyond a plain wire (a queue limit or a discipline
        alone, with no rate to fill the queue, does not)?"""
        return any(k in self.values for k in self.STAGES)

    @property
    def plain(self) -> bool:
        """Nothing set at all: a bare veth end, no qdisc."""
        return not self.values and self.aqm.name == "droptail"

    def spec(self) -> dict[str, Any]:
        """netrig-link's DirectionSpec JSON: every set key at its place. A key that only
        modifies a stage that is off (`loss_correlation` without `loss`) has no place."""
        out: dict[str, Any] = {"queue": self.aqm.spec()}
        for name, key in KEYS.items():
            if name not in self.values or key.kind == "discipline":
                continue
            v = self.values[name]
            if key.kind == "queue":
                p, b = v
                out["queue"]["limit_packets" if p is not None else "limit_bytes"] = p if p is not None else b
                continue
            *parents, last = key.json.split(".")
            at = out
            for p in parents:
                if p not in at and key.default is not None:
                    break  # a modifier of a stage that is off
                at = at.setdefault(p, {})
            else:
                at[last] = str(Path(v).resolve()) if key.kind == "path" else key.to_json(v)
        return out


RULES: list[dict[str, str]] = SCHEMA["rules"]


def broken_rule(d: Direction, kinds: tuple[str, ...] = ("excludes", "requires", "below")) -> str | None:
    """Why d breaks a rule between keys (the schema's), naming the key, if it does."""
    def value(name: str) -> Any:
        if name.startswith("aqm."):
            return d.aqm.get(name[4:])
        return d.values.get(name)

    for r in RULES:
        if r["kind"] not in kinds:
            continue
        a, b = r["key"], r["other"]
        if any(n.startswith("aqm.") and n[4:] not in d.aqm.info.params for n in (a, b)):
            continue  # a parameter of another discipline
        va, vb = value(a), value(b)
        if (r["kind"] == "requires" and va is not None and vb is None
                or r["kind"] == "excludes" and va is not None and vb is not None
                or r["kind"] == "below" and va is not None and vb is not None and va >= vb):
            return r["why"] if r["kind"] == "excludes" else f"{a}: {r['why']}"  # names both
    return None


def resolve(text: Mapping[str, Any]) -> Direction:
    """A direction's keys as the file gives them (None: not given) -> numbers. Raises
    UnitError naming the key (for a rule between keys, the first of them)."""
    values: dict[str, Any] = {}
    aqm = Discipline()
    for name, raw in text.items():
        if raw is None:
            continue
        key = KEYS.get(name)
        if key is None:
            raise units.UnitError(f"{name}: unknown key")
        try:
            v = key.parse(raw)
        except units.UnitError as e:
            raise units.UnitError(f"{name}: {e}") from None
        if key.kind == "discipline":
            aqm = v
        elif v != key.neutral:
            values[name] = v
    d = Direction(values, aqm, dict(text))
    broken = broken_rule(d)
    if broken:
        raise units.UnitError(broken)
    return d


def axis_kind(name: str) -> str | None:
    """The kind of a link key or discipline parameter, by name (for a sweep's axis)."""
    if name in KEYS:
        return KEYS[name].kind
    for info in DISCIPLINES.values():
        if name in info.params:
            return info.params[name].kind
    return None
