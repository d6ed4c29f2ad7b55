"""A results directory read back (`load` -> `Results`): its meta.json, every finished run's
record (exp/record), and scenario.yaml as text; the values, theory and queues of a flow
at a point, for the rows, figures and report. Reading asks nothing of this machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from netrig import safefs, units
from netrig.errors import NetrigError
from netrig.exp.analysis.stats import is_number, mean_ci
from netrig.exp.analysis.why import QueueSeen, queue_seen, rtt_here
from netrig.exp.analysis.words import MEASURED, describe
from netrig.exp.record.files import INSIDE, NotResults, _jsonl, _yaml, read_meta, runs
from netrig.exp.record.run import RECORD_SCHEMA, RecordError, from_doc
from netrig.exp.spec.model import Point
from netrig.exp.spec.scenario import loads_scenario


# Reading a results directory.
@dataclass
class Results:
    """A results directory read back. Its files are read through safefs (`INSIDE`); what
    it refused is in `refused`, a sentence each ("capture graph ... refused: its path
    leaves the results directory"), for the report to name; the rest is read."""

    out: Path
    meta: dict[str, Any]
    runs: list[dict[str, Any]]
    scenario: dict[str, Any]
    scenario_text: str = ""  # scenario.yaml as read ("" when it was not)
    refused: list[str] = field(default_factory=list)
    _series: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict, repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def keys(self) -> list[str]:
        return list(self.meta.get("sweep_keys") or [])

    @property
    def points(self) -> list[dict[str, Any]]:
        return self.meta.get("points") or [{"index": 0, "params": {}}]

    def runs_of(self, point: int) -> list[dict[str, Any]]:
        return [r for r in self.runs if r.get("point") == point]

    def first_run(self, point: int) -> dict[str, Any] | None:
        """The point's lowest repetition that measured anything."""
        return next((r for r in self.runs_of(point) if r.get("flows")), None)

    def flows(self) -> dict[str, dict[str, Any]]:
        """Every flow, in scenario order: name -> its entry in the first run that has it."""
        out: dict[str, dict[str, Any]] = {}
        for r in self.runs:
            for name, f in r.get("flows", {}).items():
                out.setdefault(name, f)
        return out

    def refuse(self, what: str, e: safefs.UnsafeRead) -> None:
        """Keeps "WHAT refused: why" (once) for the report."""
        said = f"{what} refused: {e.reason}"
        if said not in self.refused:
            self.refused.append(said)

    def series(self, run: str, name: str) -> list[dict[str, Any]]:
        """A run's series NAME (both named by run.json), [] when it is not there or it
        is refused (then said in `refused`)."""
        if (run, name) not in self._series:
            rel = PurePath("runs", str(run), "series", f"{name}.jsonl")  # (absolute if a name is)
            try:
                self._series[run, name] = _jsonl(self.out, rel)
            except safefs.UnsafeRead as e:
                self.refuse(f"series {rel}", e)
                self._series[run, name] = []
        return self._series[run, name]

    def run_file(self, run: str, rel: str, what: str, bound: safefs.Bound) -> bytes | None:
        """A file run.json names, below runs/RUN (a capture's Stevens graph); None when it
        is not there or it is refused (then said in `refused`, `what` naming it)."""
        path = PurePath("runs", str(run), rel)  # (absolute if rel is: refused as such)
        try:
            return safefs.read_bytes(self.out, path, bound, INSIDE)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except safefs.UnsafeRead as e:
            self.refuse(f"{what} ({path})", e)
            return None

    def values(self, point: int, flow: str, metric: str) -> list[float]:
        """The metric in each repetition of the point whose flow ended well (or timed
        out: its throughput is 0, a result)."""
        out = []
        for r in self.runs_of(point):
            s = (r.get("flows", {}).get(flow) or {}).get("summary") or {}
            if s.get("status", "ok") in MEASURED and is_number(s.get(metric)):
                out.append(float(s[metric]))
        return out

    def mean(self, point: int, flow: str, metric: str) -> tuple[float, float | None] | None:
        """The one averaging step every reader shares (the rows, the figures): the mean of
        a flow's metric over the point's repetitions and the half-width of its 95 %
        confidence interval (stats.mean_ci); None when no repetition measured it."""
        xs = self.values(point, flow, metric)
        return mean_ci(xs) if xs else None

    def timed_out(self, point: int, flow: str) -> int:
        """How many repetitions of the point the flow timed out in (never connected, or
        moved no data)."""
        return sum(((r.get("flows", {}).get(flow) or {}).get("summary") or {}).get("status") == "timed_out"
                   for r in self.runs_of(point))

    def theory(self, point: int, flow: str, metric: str) -> tuple[float | None, float | None]:
        """(expected value, top of the expected range) of a flow's metric at a point."""
        for r in self.runs_of(point):
            e = (r.get("flows", {}).get(flow) or {}).get("expected") or {}
            if e.get("metric") == metric:
                return e.get("value"), e.get("hi")
            loss = (e.get("extra") or {}).get("expected_loss_pct")
            if metric == "loss_pct" and is_number(loss):
                return loss, None
        return None, None

    @property
    def tolerance(self) -> float:
        """The scenario's tolerance as the file gives it, a fraction (10 % unless it says
        otherwise); a point's own is `tolerance_of`."""
        try:
            return units.fraction(self.scenario.get("tolerance", "10%"))
        except (NetrigError, ValueError, TypeError):
            return 0.1

    def tolerance_of(self, point: int) -> float:
        """The tolerance a point's runs were graded with (a sweep may set it per point)."""
        return next((float(r["tolerance"]) for r in self.runs_of(point) if is_number(r.get("tolerance"))),
                    self.tolerance)

    def scenario_points(self) -> list[Point]:
        """The sweep points as scenario.yaml makes them (topology, flows); [] when it no
        longer loads. Its topology must be inline, as netrig writes it: a topology file
        it names is refused (said in `refused`), never opened."""
        if "points" not in self._cache:
            self._cache["points"] = []
            topo = self.scenario.get("topology")
            if isinstance(topo, str):
                self.refuse(f"the topology file scenario.yaml names ({topo})", safefs.UnsafeRead(
                    self.out / "scenario.yaml", "a results directory's scenario.yaml holds its "
                    "topology inline, and netrig opens no other file it names"))
            elif self.scenario_text:
                try:
                    self._cache["points"] = loads_scenario(self.scenario_text,
                                                           str(self.out / "scenario.yaml")).points
                except (NetrigError, ValueError):
                    pass
        return self._cache["points"]

    def scenario_point(self, point: int) -> Point | None:
        """The sweep point as scenario.yaml makes it (its topology, its flows); None
        when that no longer loads."""
        return next((p for p in self.scenario_points() if p.index == point), None)

    def queues(self, run: dict[str, Any], flow: str, acks: bool = False) -> list[QueueSeen]:
        """The recorded queues on a flow's path in a run, during the flow: the way its
        data goes (the hops its record names), and back too for an RTT (ping, probe,
        fetch, web); with `acks`, the way a TCP flow's ACKs come back instead. Recorded:
        by a queue monitor, or in the run's link-stats series (every rated direction of
        an emulated link)."""
        f = (run.get("flows") or {}).get(flow) or {}
        hops = f.get("hops") or {}
        chosen = hops.get("acks", []) if acks else [*hops.get("data", []), *hops.get("back", [])]
        if not chosen:
            return []
        rows = [x for m in [*run.get("monitors", []), "link-stats"] for x in self.series(run["run"], m)
                if x.get("kind", "queue") == "queue"]
        out = []
        for h in chosen:
            q = queue_seen(rows, h.get("link"), h.get("dir"), f.get("start_s") or 0.0,
                           f.get("end_s") or math.inf, where=f"{h.get('from')}→{h.get('to')}",
                           aqm=h.get("aqm") or "droptail", rate_bps=h.get("rate_bps"),
                           target_s=h.get("target_s"))
            if q is not None:
                out.append(q)
        return out

    def here(self, run: dict[str, Any], flow: str) -> float | None:
        """Theory's point inside an RTT range for the run's own queue: base RTT + the
        mean sojourn the queue monitor measured on the path (None when it cannot)."""
        e = ((run.get("flows") or {}).get(flow) or {}).get("expected") or {}
        if e.get("hi") is None or e.get("metric") != "rtt_ms_p50":
            return None
        return rtt_here((e.get("extra") or {}).get("base_rtt_ms"), self.queues(run, flow))

    def key_values(self, key: str) -> list[Any]:
        """A sweep key's values in sweep order."""
        seen: list[Any] = []
        for p in self.points:
            if key in p["params"] and p["params"][key] not in seen:
                seen.append(p["params"][key])
        return seen

    def label(self, point: int) -> str:
        """`aqm=pie(target=20ms), window=16KB`: the point's sweep values."""
        return self.describe(next((p["params"] for p in self.points if p["index"] == point), {}))

    def describe(self, params: dict[str, Any], leave_out: str | None = None) -> str:
        """Sweep values as a legend shows them, but for the key `leave_out`."""
        return describe(params, self.keys, leave_out)

    def direction(self, link: str, d: str) -> str:
        """`s0→h2` for a link's a_to_b (or b_to_a) direction."""
        topo = self.scenario.get("topology")
        for spec in (topo.get("links") if isinstance(topo, dict) else None) or []:
            a, b, name = (spec[0], spec[1], None) if isinstance(spec, list) else (
                spec.get("a"), spec.get("b"), spec.get("name"))
            if link in (name, f"{a}-{b}"):
                return f"{a}→{b}" if d == "a_to_b" else f"{b}→{a}"
        return f"{link} {d}"


def load(out: Path) -> Results:
    """A results directory read back; NotResults when `out` is not one (or its meta.json
    is refused). A refused scenario.yaml, runs/ or run.json is left out and said in
    Results.refused."""
    meta = read_meta(out)
    if meta is None and not out.exists():
        raise NotResults(f"{out}: no such directory (give one netrig run made, e.g. "
                         "results/004-bufferbloat/20261123-101500)")
    if meta is None:
        raise NotResults(f"{out}: not a netrig results directory (it has no meta.json; "
                         "`netrig run` writes one)")
    refused: list[str] = []
    text = ""
    try:
        try:
            text = safefs.read_text(out, "scenario.yaml", safefs.SCENARIO_YAML, INSIDE)
        except (FileNotFoundError, NotADirectoryError):
            pass
        except safefs.UnsafeRead as e:
            refused.append(f"scenario.yaml refused: {e.reason}")
        try:
            scen = _yaml(text, out / "scenario.yaml")
        except ValueError as e:  # (not YAML, or past the loader's bounds: the rest is read)
            refused.append(f"scenario.yaml not read: {e}")
            scen = None
        done = runs(out, refused)
    except (OSError, ValueError) as e:
        raise NotResults(f"{out}: a results directory that cannot be read: {e}") from None
    res = Results(out, meta, [], scen if isinstance(scen, dict) else {}, text, refused)
    res.runs = _records(res, done)
    return res


def _records(res: Results, docs: list[Any]) -> list[dict[str, Any]]:
    """Each run.json read as a run's record (exp/record/run.py), in the shape of the
    newest schema: an older one is migrated (from the scenario the directory saved,
    read as text: nothing of this machine is asked); one that is not a record is left
    out and said in `refused`."""
    out = []
    for doc in docs:
        old = isinstance(doc, dict) and doc.get("schema", 1) != RECORD_SCHEMA
        point = res.scenario_point(doc.get("point", 0)) if old and isinstance(doc.get("point"), int) else None
        try:
            out.append(from_doc(doc, point).to_doc())
        except RecordError as e:
            res.refused.append(f"a run's run.json refused: {e}")
    return out
