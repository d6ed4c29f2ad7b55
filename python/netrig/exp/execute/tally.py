"""The account of a campaign's runs as each ends, wherever it ran: a run still to do
(`Todo`), and the `Tally` of how they ended (three failures in a row stop it:
`RunFailed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netrig import units
from netrig.errors import NetrigError
from netrig.exp.analysis import events as evs
from netrig.exp.analysis import words
from netrig.exp.execute.monitors import (  # noqa: F401 (route_changes, queue_rows: tests use them from here)
    _IfaceMonitor,
    _LinkRecorder,
    _RouteMonitor,
    queue_rows,
    route_changes,
)
from netrig.exp.record.run import RunRecord, write_run
from netrig.exp.spec.model import Point


class RunFailed(NetrigError):
    pass


@dataclass(frozen=True)
class Todo:
    """A run still to do: its place among all runs (k), point, repetition, seed, id."""
    k: int
    point: Point
    rep: int
    seed: int
    rid: str


class Tally:
    """A campaign's account of its runs as each ends, wherever it ran: the status so far
    (a failed flow or run makes it "failed"; the rest go on) and the failures in a row
    (three stop the campaign: something is wrong with the host, not the run)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.status = "complete"
        self.failures = 0
        self.last_error = ""
        self.tripped = ""  # the last error of the first three failures in a row (check() raises)

    def ran(self, t: Todo, doc: dict[str, Any]) -> str:
        """The note to show for a run that wrote its run.json (doc)."""
        rid = t.rid
        bad = [n for n, f in doc["flows"].items() if f["summary"].get("status") not in ("ok", "timed_out")]
        late = [n for n, f in doc["flows"].items() if f["summary"].get("status") == "timed_out"]
        note = ""
        if late:  # a result (theory says when to expect one), not a failure
            note = f"run {rid}: flow(s) {', '.join(late)} timed out: " + "; ".join(
                doc["flows"][n]["summary"].get("error", "")[:200] for n in late)
        if bad:
            note = (note + "\n" if note else "") + f"run {rid}: flow(s) {', '.join(bad)} failed: " + "; ".join(
                doc["flows"][n]["summary"].get("error", "")[:200] for n in bad)
            self.status = "failed"
        if doc["status"] == "interrupted":  # (a campaign's run whose process was stopped by
            self.status = "failed"           # someone else; a stopped campaign says "interrupted")
            note = (note + "\n" if note else "") + f"run {rid} was interrupted: its flows' numbers cover part of it"
        if doc["status"] == "failed":  # recorded whole, flows and all
            self.last_error = doc.get("error", "")
            note = f"run {rid} failed: {self.last_error}" + (f"\n{note}" if note else "")
            self.status = "failed"
            self.failures += 1
            self._trip()
        else:
            self.failures = 0
        return "\n".join(x for x in (note, words.late_note(doc), words.pacing_note(doc), evs.note(doc)) if x)

    def crashed(self, t: Todo, error: str, extra: dict[str, Any] | None = None) -> str:
        """Records a run that could not write its own run.json as failed; its note."""
        self.status = "failed"
        self.failures += 1
        self.last_error = error
        self._trip()
        write_run(self.out, RunRecord(t.rid, t.point.index, t.rep, t.seed, t.point.params, "failed",
                                      units.fraction(t.point.spec.tolerance),
                                      sections={"error": error, **(extra or {})}))
        return f"run {t.rid} failed: {error}"

    def _trip(self) -> None:
        if self.failures >= 3 and not self.tripped:
            self.tripped = self.last_error

    def check(self) -> None:
        """Raises RunFailed once three runs in a row have failed (on a cluster, in the
        order they came back; a run that came back with them is kept all the same)."""
        if self.tripped:
            raise RunFailed(f"three runs in a row failed; the last: {self.tripped}")
