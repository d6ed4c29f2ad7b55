"""Where a campaign's runs happen, behind one interface: an `Executor` is handed the runs
still to do and accounts for each as it ends (`Tally.ran` with the run's record, or
`Tally.crashed`), ticking the progress display.

    Local      here, one run after another: a lab of network namespaces (runner.run_one),
               or the scenario's real hosts over SSH (remote.run_one)
    Campaign   a Dask cluster's workers, several runs at once (cluster.py)

Each writes a run's files and its record (exp/record/run.py) the same way, so what a
results directory holds does not depend on where it ran.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Protocol

from netrig import units
from netrig.exp.execute import remote, runner
from netrig.exp.execute.progress import Display
from netrig.exp.execute.tally import Tally, Todo
from netrig.exp.spec.model import Scenario


class Executor(Protocol):
    """Runs `todo` and accounts for each run in `tally` as it ends."""

    size: int  # runs at once

    def describe(self) -> dict[str, Any] | None:
        """What meta.json says of it (None: this machine)."""

    def run(self, scenario: Scenario, out: Path, todo: list[Todo], shown: Display, tally: Tally) -> None:
        """Every run of `todo`, its record written below out/runs/ as it ends."""


def run_one(t: Todo, out: Path, tick: Any = None) -> dict[str, Any]:
    """One run on this machine's behalf: in a lab here, or on the scenario's real hosts."""
    if t.point.hosts:  # real machines over SSH
        return remote.run_one(t.point, t.rep, t.seed, out, t.rid, tick)
    return runner.run_one(t.point, t.rep, t.seed, out, t.rid, tick)


class Local:
    """One run after another, from this machine (settling between them)."""

    size = 1

    def describe(self) -> dict[str, Any] | None:
        return None

    def run(self, scenario: Scenario, out: Path, todo: list[Todo], shown: Display, tally: Tally) -> None:
        settle = units.seconds(scenario.points[0].spec.settle) if scenario.points else 0.0
        for n, t in enumerate(todo):
            shown.start_run(t.k, t.point.index, len(scenario.points), t.point.params, t.rep, scenario.repeat)
            try:
                note = tally.ran(t, run_one(t, out, shown.tick))
            except KeyboardInterrupt:
                raise
            except Exception as e:  # the run is recorded as failed; the rest go on
                note = tally.crashed(t, str(e))
            shown.end_run(t.k, t.point.length_s, settle, note)
            tally.check()
            if settle and n + 1 < len(todo):
                time.sleep(settle)
