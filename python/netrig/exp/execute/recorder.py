"""A run's files and its record, as every executor writes them: each flow's raw output
(flows/NAME.*), its series (series/NAME.jsonl), the monitors' and the links' series, then
the RunRecord (exp/record/run.py), graded with the point's own tolerance, which the
executor writes once, last (`record.write_run`), with what it adds of its own.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from netrig import safefs, units
from netrig.exp.grade.expect import Expected
from netrig.exp.kinds.registry import Outcome, output_ext
from netrig.exp.record import files as rec
from netrig.exp.record.run import FlowRecord, Grade, RunRecord, hops_of
from netrig.exp.spec.model import Point


def fresh(out: Path, rid: str) -> Path:
    """out/runs/RID, empty (what an earlier attempt left is removed, through no link)."""
    safefs.remove_tree(out, f"runs/{rid}")
    safefs.makedirs(out, f"runs/{rid}")
    return out / "runs" / rid


def build(out: Path, rid: str, point: Point, rep: int, seed: int, outcomes: dict[str, Outcome],
          expected: dict[str, Expected], monitors: list[dict[str, Any]], started: float,
          status: str, teardown_errors: list[str],
          emulator: dict[str, Any] | None = None,
          emulator_died: dict[str, Any] | None = None,
          link_stats: list[dict[str, Any]] | None = None,
          events: list[dict[str, Any]] | None = None,
          routing: dict[str, Any] | None = None,
          captures: list[dict[str, Any]] | None = None,
          captured: dict[str, dict[str, Any]] | None = None) -> RunRecord:
    """Writes the run's flow outputs and series below out/runs/RID and returns its
    record (not yet written: the executor adds its sections, then `write_run`)."""
    rdir = out / "runs" / rid
    tol = units.fraction(point.spec.tolerance)
    record = RunRecord(rid, point.index, rep, seed, point.params, status, tol)
    for name, o in outcomes.items():
        ext = output_ext(o.spec)
        raw = o.stdout if ext != "json" else o.stdout or "{}"
        rec.atomic_write(rdir / "flows" / f"{name}.{ext}",
                         raw if raw.endswith("\n") or not raw else raw + "\n", out)
        if o.stderr.strip():
            rec.atomic_write(rdir / "flows" / f"{name}.stderr", o.stderr, out)
        rows = o.series()
        shift = _probe_shift(o, (routing or {}).get("t0_unix_s"))
        if shift:
            rows = [{**r, "t": round(r["t"] + shift, 6)} for r in rows]
        rec.write_jsonl(rdir / "series" / f"{name}.jsonl", rows, out)
        seen = dict((captured or {}).get(name, {}))
        where = {k: seen.pop(k) for k in ("capture_monitor", "capture_streams", "stevens", "stevens_error")
                 if k in seen}
        summary = {**o.summary(), **seen}
        f = o.spec
        sender, receiver = ((f.to, f.src) if f.reverse else (f.src, f.to)) if f.to else (None, None)
        grade = None
        if (e := expected.get(name)) is not None:
            measured = summary.get(e.metric)
            grade = Grade.of(e.metric, e.value, e.hi, e.limit, e.detail, e.extra,
                             measured if isinstance(measured, (int, float)) else None, tol)
            grade.measured = measured
        record.flows[name] = FlowRecord(
            f.kind, f.src, f.to, sender, receiver, round(o.start_s, 6), round(o.end_s, 6), o.planned_s,
            summary, grade, f.model_dump(mode="json", exclude_none=True, by_alias=True),
            hops_of(point, f.kind, sender, receiver) if sender and receiver else {},
            (routing or {}).get("paths", {}).get(name), where or None)
    by_monitor: dict[str, list[dict[str, Any]]] = {}
    for row in monitors:
        by_monitor.setdefault(f"monitor-{row['monitor']}", []).append(row)
    for key, rows in by_monitor.items():
        rec.write_jsonl(rdir / "series" / f"{key}.jsonl", rows, out)
    if link_stats:
        rec.write_jsonl(rdir / "series" / "link-stats.jsonl", link_stats, out)
    sections: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "seconds": round(time.time() - started, 3), "monitors": sorted(by_monitor),
        "teardown_errors": teardown_errors, "host": rec.run_host()}
    if emulator is not None:
        sections["emulator"] = emulator
    if routing:
        changes = routing.get("changes")
        if changes is not None:
            rec.write_jsonl(rdir / "series" / "routes.jsonl", changes, out)
        sections["routing"] = {k: v for k, v in routing.items() if k not in ("changes", "paths")}
        if changes is not None:
            sections["routing"].update({"route_changes": len(changes), "series": "routes"})
    if events:
        sections["events"] = events
    if captures:
        sections["captures"] = captures
    if emulator_died is not None:
        sections["error"] = emulator_died["reason"]
        sections["emulator_died"] = emulator_died
    record.sections = sections
    return record


def _probe_shift(o: Outcome, t0_unix: float | None) -> float:
    """How much later a probe's samples were sent than its process's start says (its
    handshake first): from netrig-perf's start_unix_ns and the flows' t0 on the wall
    clock; 0 when either is unknown. Only with events, where it matters."""
    start = ((o.end.get("probe") or {}).get("start_unix_ns") if o.spec.kind == "probe" else None)
    if t0_unix is None or not isinstance(start, (int, float)):
        return 0.0
    return start / 1e9 - t0_unix - o.start_s
