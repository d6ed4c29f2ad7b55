"""results.csv: tidy, one row per flow per run, measured beside expected, with the verdict
the run recorded; with events:, one row per event per flow (metric outage_s).

results.csv is tidy, so `measured` holds a different metric from row to row; `unit`
names the metric's unit on each row (the unit its name carries: throughput_bps bit/s,
rtt_ms_p50 ms, fetch_s_mean s). Every other column carries one unit, named in its header
(sent_bps, rtt_ms_mean, window_bytes, retrans_pct). Numbers are plain decimals. A flow's
status: ok, error (what failed is in `error`), timed_out (it could not connect, or moved
no data), or not_run (its point never ran: an interrupted campaign).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from netrig.exp.analysis.results import Results, load
from netrig.exp.analysis.words import case_name, label, unit_of
from netrig.exp.grade.verdict import decimal
from netrig.exp.record.files import atomic_write

# results.csv is tidy (one row per flow per run), so `measured` holds a different
# metric from row to row; `unit` names the metric's unit on each row, the same for every
# row of a metric: the unit its name already carries (throughput_bps: bit/s, rtt_ms_p50:
# ms, fetch_s_mean: s), so measured, expected, expected_hi and expected_here are that
# metric's numbers exactly as run.json holds them, and a reader filters by metric
# without a lookup table. Every other column carries one unit, named in its header
# (sent_bps, rtt_ms_mean, window_bytes, retrans_pct). Numbers are plain decimals.
# A flow's status: ok, error (what failed is in `error`), or timed_out (it could not
# connect, or moved no data: throughput 0, a result theory may expect; `connected` and
# `error` say which and why).
CSV_FIRST = ["run", "point", "rep", "seed", "flow", "kind", "from", "to", "status", "metric",
             "unit", "measured", "expected", "expected_hi", "expected_here", "ratio", "range_pos",
             "verdict", "limit", "detail"]


def csv_rows(out: Path, res: Results | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """The tidy table: one row per flow per run (columns: CSV_FIRST, the sweep keys,
    then every measured number); `res`: out read back already."""
    res = res or load(out)
    keys = res.keys
    rows: list[dict[str, Any]] = []
    extra: list[str] = []
    for r in res.runs:
        for name, fl in r["flows"].items():
            row = {"run": r["run"], "point": r["point"], "rep": r["rep"], "seed": r["seed"],
                   "flow": name, "kind": fl["kind"], "from": fl["from"], "to": fl.get("to") or "",
                   "status": fl["summary"].get("status", "ok")}
            for k in keys:
                row[k] = case_name(k, r["params"].get(k)) or label(r["params"].get(k))
            e = fl.get("expected") or {}  # graded once, by the run, with its point's tolerance
            row.update({"metric": e.get("metric", ""), "unit": unit_of(e.get("metric", "")),
                        "measured": e.get("measured"), "expected": e.get("value"),
                        "expected_hi": e.get("hi"), "expected_here": res.here(r, name),
                        "ratio": e.get("ratio"), "range_pos": e.get("position"),
                        "verdict": e.get("verdict", ""),
                        "limit": e.get("limit", ""), "detail": e.get("detail", "")})
            for k, v in fl["summary"].items():
                if k in ("status",):
                    continue
                row[k] = v
                if k not in extra:
                    extra.append(k)
            for k, v in (e.get("extra") or {}).items():
                col = k if k.startswith("expected") else f"expected_{k}"
                row[col] = v
                if col not in extra:
                    extra.append(col)
            rows.append(row)
        rows += event_rows(r, keys)
    flows = res.flows()
    for p in res.points:  # a point never run: a row per flow that says so
        if res.runs_of(p["index"]):
            continue
        for name, fl in flows.items():
            rows.append({"point": p["index"], "flow": name, "kind": fl.get("kind", ""),
                         "from": fl.get("from", ""), "to": fl.get("to") or "", "status": "not_run",
                         **{k: case_name(k, p["params"].get(k)) or label(p["params"].get(k)) for k in keys}})
    if any(row.get("event") for row in rows):
        extra += [c for c in EVENT_COLS if c not in extra]
    cols = CSV_FIRST[:4] + keys + CSV_FIRST[4:] + [c for c in extra if c not in CSV_FIRST]
    return cols, rows


EVENT_COLS = ["event", "event_planned_s", "event_at_s", "event_ok", "event_error",
              "routing_stable_s", "recovered"]


def event_rows(r: dict[str, Any], keys: list[str]) -> list[dict[str, Any]]:
    """A run's events in the tidy table: a row per event and flow whose outage was
    measured (metric outage_s, theory's window as expected..expected_hi and its reason
    as detail), a row of its own for an event no flow measured."""
    out = []
    for e in r.get("events") or []:
        base = {"run": r["run"], "point": r["point"], "rep": r["rep"], "seed": r["seed"],
                **{k: label(r["params"].get(k)) for k in keys},
                "event": e.get("what", ""), "event_planned_s": e.get("planned_s"),
                "event_at_s": e.get("actual_s"), "event_ok": e.get("ok", False),
                "event_error": e.get("error", ""), "routing_stable_s": e.get("routing_stable_s"),
                "kind": "event", "status": "ok" if e.get("ok") else "error"}
        flows = r.get("flows") or {}
        measured = e.get("outage") or {}
        if not measured:
            out.append({**base, "flow": "", "from": "", "to": "", "metric": ""})
        for name, o in measured.items():
            f = flows.get(name) or {}
            out.append({**base, "flow": name, "kind": f.get("kind", ""), "from": f.get("from", ""),
                        "to": f.get("to") or "", "metric": "outage_s", "unit": "s",
                        "measured": o.get("outage_s"), "expected": o.get("theory_low_s"),
                        "expected_hi": o.get("theory_high_s"), "verdict": o.get("verdict", ""),
                        "detail": o.get("theory", ""), "recovered": o.get("recovered")})
    return out


def write_csv(out: Path, res: Results | None = None) -> Path:
    cols, rows = csv_rows(out, res)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: _cell(r.get(k)) for k in cols})
    atomic_write(out / "results.csv", buf.getvalue(), out)
    return out / "results.csv"


def _cell(v: Any) -> Any:
    return decimal(v) if isinstance(v, (float, int)) or v is None else v
