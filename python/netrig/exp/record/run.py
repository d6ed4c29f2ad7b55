"""One run's record: what it ran, what each flow measured, what theory expected of it and
the grade, worked out once, when the run ends, with the point's own tolerance. run.json
is its serialisation; every executor (a lab here, real hosts over SSH, a cluster's
worker) writes it once, last, through `write_run`.

    RunRecord   run, point, rep, seed, params, status, tolerance, flows, ... (schema 2)
    FlowRecord  kind, from, to, sender and receiver (where its data goes), the spec it ran
                with, its times, its summary, its grade, the hops its data (and what comes
                back) crossed
    Grade       theory's metric, value or range, limit and working, the measured value,
                the ratio, where it sits in a range, the verdict and the tolerance

Reading: `from_doc` takes what run.json holds, schema 1 (before this record) or 2, and
refuses what is not a run's record with a RecordError naming the key. A schema 1 record
lacks the tolerance, each flow's sender, receiver, spec and hops, and its grade's verdict:
`migrate` fills them from the scenario the results directory saved (`Point`s, read
without asking anything of this machine) where it can, and from what the record holds
where it cannot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netrig.errors import NetrigError
from netrig.exp.grade.verdict import versus
from netrig.exp.record import files
from netrig.exp.spec.model import Point

RECORD_SCHEMA = 2
DEFAULT_TOLERANCE = 0.1
STATUSES = ("ok", "failed", "interrupted")
# The sections a run may add to its record, kept as they are (each is its own writer's:
# the emulator's counters, routing, events, captures, a remote run's hosts, a worker).
SECTIONS = ("emulator", "routing", "events", "captures", "error", "emulator_died", "remote",
            "worker", "started", "seconds", "monitors", "teardown_errors", "host")


class RecordError(NetrigError, ValueError):
    """A run.json that is not a run's record (the message names the key)."""


@dataclass
class Grade:
    """A flow measured against theory, as the run graded it."""

    metric: str
    value: float | None
    hi: float | None
    limit: str
    detail: str
    measured: Any
    ratio: float | None
    position: float | None
    verdict: str  # within, above, below, or "" (nothing to judge)
    tolerance: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def flag(self) -> bool:
        return self.verdict in ("above", "below")

    @classmethod
    def of(cls, metric: str, value: float | None, hi: float | None, limit: str, detail: str,
           extra: dict[str, Any], measured: Any, tolerance: float) -> Grade:
        """Theory's expectation graded against the measured value (`verdict.versus`)."""
        v = versus(measured, value, hi, tolerance)
        return cls(metric, value, hi, limit, detail, measured, v.ratio, v.position, v.verdict,
                   tolerance, dict(extra))

    def to_doc(self) -> dict[str, Any]:
        return {"metric": self.metric, "value": self.value, "hi": self.hi, "limit": self.limit,
                "detail": self.detail, "measured": self.measured, "ratio": self.ratio,
                "position": self.position, "verdict": self.verdict, "flag": self.flag,
                "tolerance": self.tolerance, "extra": self.extra}


@dataclass
class FlowRecord:
    """One flow of one run."""

    kind: str
    src: str
    to: str | None
    sender: str | None  # where its data starts (`to` for a reverse flow)
    receiver: str | None
    start_s: float
    end_s: float
    planned_s: float
    summary: dict[str, Any]
    grade: Grade | None = None
    spec: dict[str, Any] = field(default_factory=dict)  # its keys as the scenario gave them
    hops: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # data, back, acks
    path: Any = None  # the way the kernel routed it (dynamic routing)
    capture: dict[str, Any] | None = None

    @property
    def status(self) -> str:
        return str(self.summary.get("status", "ok"))

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"kind": self.kind, "from": self.src, "to": self.to, "sender": self.sender,
                               "receiver": self.receiver, "start_s": self.start_s, "end_s": self.end_s,
                               "planned_s": self.planned_s, "summary": self.summary, "spec": self.spec,
                               "hops": self.hops}
        if self.path is not None:
            doc["path"] = self.path
        if self.capture:
            doc["capture"] = self.capture
        if self.grade is not None:
            doc["expected"] = self.grade.to_doc()
        return doc


@dataclass
class RunRecord:
    """One run of one sweep point."""

    run: str
    point: int
    rep: int
    seed: int
    params: dict[str, Any]
    status: str
    tolerance: float
    flows: dict[str, FlowRecord] = field(default_factory=dict)
    sections: dict[str, Any] = field(default_factory=dict)  # SECTIONS, as their writers gave them

    def to_doc(self) -> dict[str, Any]:
        return {"schema": RECORD_SCHEMA, "run": self.run, "point": self.point, "rep": self.rep,
                "seed": self.seed, "params": self.params, "status": self.status,
                "tolerance": self.tolerance, "flows": {n: f.to_doc() for n, f in self.flows.items()},
                **self.sections}


def write_run(out: Path, record: RunRecord) -> dict[str, Any]:
    """out/runs/RUN/run.json, atomically: the run's last file (a run without one did not
    finish). Returns what was written."""
    doc = record.to_doc()
    files.write_json(out / "runs" / record.run / "run.json", doc, out)
    return doc


# Reading.
def _need(doc: dict[str, Any], key: str, types: tuple[type, ...], where: str) -> Any:
    if key not in doc:
        raise RecordError(f"{where} lacks '{key}'")
    v = doc[key]
    if not isinstance(v, types) or isinstance(v, bool) and bool not in types:
        raise RecordError(f"{where}'s '{key}' is {type(v).__name__}, not {' or '.join(t.__name__ for t in types)}")
    return v


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def from_doc(doc: Any, point: Point | None = None) -> RunRecord:
    """A run's record from run.json's content (schema 1 or 2; `point`, the sweep point as
    the saved scenario makes it, fills what a schema 1 record lacks)."""
    if not isinstance(doc, dict):
        raise RecordError("run.json is not a JSON object")
    schema = doc.get("schema", 1)
    if schema not in (1, RECORD_SCHEMA):
        raise RecordError(f"run.json's schema is {schema!r}: this netrig reads 1 and {RECORD_SCHEMA}")
    run = _need(doc, "run", (str,), "run.json")
    where = f"run {run}"
    number = _need(doc, "point", (int,), where)
    rep = _need(doc, "rep", (int,), where)
    seed = _need(doc, "seed", (int,), where)
    params = _need(doc, "params", (dict,), where)
    status = _need(doc, "status", (str,), where)
    flows = _need(doc, "flows", (dict,), where)
    tol = _number(doc.get("tolerance"))
    if tol is None:
        tol = _point_tolerance(point)
    out = RunRecord(run, number, rep, seed, params, status, tol,
                    sections={k: doc[k] for k in SECTIONS if k in doc})
    for name, f in flows.items():
        if not isinstance(f, dict):
            raise RecordError(f"{where}: flow {str(name)[:100]!r} is not a flow's record")
        out.flows[str(name)] = _flow(f, f"{where}: flow {name}", tol, point, str(name))
    return out


def _flow(f: dict[str, Any], where: str, tol: float, point: Point | None, name: str) -> FlowRecord:
    kind = _need(f, "kind", (str,), where)
    summary = f.get("summary") if isinstance(f.get("summary"), dict) else {}
    src = str(f.get("from") or "")
    to = f.get("to") if isinstance(f.get("to"), str) else None
    spec = f.get("spec") if isinstance(f.get("spec"), dict) else None
    if spec is None:  # schema 1: the flow as the saved scenario gives it
        given = point.spec.flows.get(name) if point is not None else None
        spec = given.model_dump(mode="json", exclude_none=True, by_alias=True) if given is not None else {}
    reverse = bool(spec.get("reverse"))
    sender = f.get("sender") if "sender" in f else (to if reverse else src) if to else None
    receiver = f.get("receiver") if "receiver" in f else (src if reverse else to) if to else None
    hops = f.get("hops") if isinstance(f.get("hops"), dict) else {}
    if not hops and point is not None and sender and receiver:
        hops = hops_of(point, kind, sender, receiver)
    grade = None
    e = f.get("expected")
    if isinstance(e, dict):
        g_tol = _number(e.get("tolerance"))
        g_tol = tol if g_tol is None else g_tol
        grade = Grade.of(str(e.get("metric") or ""), _number(e.get("value")), _number(e.get("hi")),
                         str(e.get("limit") or ""), str(e.get("detail") or ""),
                         e.get("extra") if isinstance(e.get("extra"), dict) else {},
                         e.get("measured"), g_tol)
    return FlowRecord(kind, src, to, sender, receiver, _number(f.get("start_s")) or 0.0,
                      _number(f.get("end_s")) or 0.0, _number(f.get("planned_s")) or 0.0, summary,
                      grade, spec, hops, f.get("path"), f.get("capture") if isinstance(f.get("capture"), dict) else None)


def _point_tolerance(point: Point | None) -> float:
    from netrig import units

    if point is None:
        return DEFAULT_TOLERANCE
    try:
        return units.fraction(point.spec.tolerance)
    except (NetrigError, ValueError):
        return DEFAULT_TOLERANCE


# What a flow's packets cross.
BOTH_WAYS = ("ping", "probe", "fetch", "web")  # kinds whose measure is a round trip


def hops_of(point: Point, kind: str, sender: str, receiver: str) -> dict[str, list[dict[str, Any]]]:
    """The links a flow's data crosses (`data`), the way back (`back`, for a round
    trip's measure), and what a TCP flow's ACKs cross (`acks`): each hop's link, its
    direction, its ends and what the direction's queue is (aqm, rate, target). {} when
    the topology has no path between them."""
    from netrig.topo.plan import make_plan, path

    try:
        plan = make_plan(point.topology)
        data, back = path(plan, sender, receiver), path(plan, receiver, sender)
    except NetrigError:
        return {}

    def said(hs: list[Any]) -> list[dict[str, Any]]:
        out = []
        for h in hs:
            d = h.link.direction(h.d)
            out.append({"link": h.link.name, "dir": "a_to_b" if h.d == 0 else "b_to_a", "from": h.frm,
                        "to": h.to, "aqm": d.aqm.name, "rate_bps": d.rate_bps, "target_s": d.aqm.target_s})
        return out

    return {"data": said(data), "back": said(back) if kind in BOTH_WAYS else [],
            "acks": said(back) if kind == "tcp" else []}
