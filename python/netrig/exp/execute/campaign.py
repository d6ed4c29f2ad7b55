"""A campaign: every run of every sweep point that `out` does not hold yet, handed to an
executor (executor.py: this machine, or a Dask cluster's workers), with progress, and
meta.json kept true as it goes; Ctrl-C or SIGTERM stops it with what ran kept.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path

import yaml

from netrig import safefs, units
from netrig.errors import Terminated
from netrig.exp.execute.executor import Executor, Local
from netrig.exp.execute.monitors import (  # noqa: F401 (route_changes, queue_rows: tests use them from here)
    _IfaceMonitor,
    _LinkRecorder,
    _RouteMonitor,
    queue_rows,
    route_changes,
)
from netrig.exp.execute.progress import Display
from netrig.exp.execute.tally import Tally, Todo
from netrig.exp.preflight.checks import preflight
from netrig.exp.record import files as rec
from netrig.exp.spec.model import Scenario


def on_sigterm(signum, frame):
    raise Terminated()


def run(scenario: Scenario, out: Path, resume: bool = False, progress: bool = True,
        argv: list[str] | None = None, allow_foreign: bool = False,
        executor: Executor | None = None) -> tuple[Path, str]:
    """Runs what is not yet done in `out`; returns (out, status) with status one of
    "complete", "interrupted" (Ctrl-C), "terminated" (SIGTERM; meta.json says
    "interrupted" for both) or "failed" (some runs failed; the rest are kept).
    Refuses (safefs.ForeignDir) an `out` another user owns unless `allow_foreign`.
    The `executor` runs them: this machine (executor.Local, the default), or a Dask
    cluster's workers (cluster.Campaign, reached and checked), each run's files written
    here as it ends. What this machine must have to run it is asked first
    (exp/preflight), before anything is written; a cluster's workers are asked by their
    own runs."""
    executor = executor or Local()
    if isinstance(executor, Local):
        preflight(scenario)
    for said in scenario.flags:  # (before anything runs: the user may stop here)
        print(f"netrig: note: {said}", file=sys.stderr)
    safefs.check_owner(out, allow_foreign)
    safefs.makedirs(out)
    if not resume:
        rec.atomic_write(out / "scenario.yaml", yaml.safe_dump(scenario.resolved, sort_keys=False), out)
    meta = (rec.read_meta(out) if resume else None) or {  # (read through safefs)
        "scenario": scenario.name, "source": scenario.source, "quick": scenario.quick,
        "sets": scenario.sets, "sweep_keys": scenario.sweep_keys, "repeat": scenario.repeat,
        "seed": scenario.seed, "command": argv or [], "host": rec.host_facts(),
        "points": [{"index": p.index, "params": p.params, "length_s": p.length_s}
                   for p in scenario.points]}
    meta.pop("schema", None)
    meta["status"] = "running"
    meta["flags"] = scenario.flags
    meta.setdefault("resumed", [])
    if resume:
        meta["resumed"].append(time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    if (where := executor.describe()) is not None:
        meta["cluster"] = where
    if scenario.points and scenario.points[0].hosts:  # real machines: as declared (each run
        spec = scenario.points[0].spec               # records them as they described themselves)
        meta["hosts"] = {n: h.model_dump(mode="json", exclude_none=True) for n, h in spec.hosts.items()}
        meta["path"] = spec.path.model_dump(mode="json", exclude_none=True) if spec.path else None
        meta["clocks"] = spec.clocks
    rec.write_json(out / "meta.json", meta, out)
    termed: list[int] = []  # (a run turns the Terminated it meets into KeyboardInterrupt)

    def on_term(signum, frame):
        termed.append(signum)
        on_sigterm(signum, frame)

    old = signal.signal(signal.SIGTERM, on_term) if threading.current_thread() is threading.main_thread() else None
    tally = Tally(out)
    try:
        with Display(scenario.runs, scenario.estimate_s(), progress,
                     parallel=executor.size) as shown:
            todo = []
            finished = rec.finished(out)  # (--resume: each run.json through safefs)
            settle = units.seconds(scenario.points[0].spec.settle) if scenario.points else 0.0
            for k, (point, rep) in enumerate((p, r) for p in scenario.points for r in range(scenario.repeat)):
                rid = rec.run_id(point.index, rep)
                if rid in finished:
                    shown.end_run(k, point.length_s, settle)
                else:
                    todo.append(Todo(k, point, rep, scenario.seed + point.index * scenario.repeat + rep, rid))
            executor.run(scenario, out, todo, shown, tally)
    except KeyboardInterrupt:
        tally.status = "interrupted"
    except BaseException:  # three failures in a row, or the unforeseen: what ran is kept
        tally.status = "failed"
        raise
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
        meta["status"] = tally.status
        meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        rec.write_json(out / "meta.json", meta, out)
    return out, "terminated" if termed and tally.status == "interrupted" else tally.status
