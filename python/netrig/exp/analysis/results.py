"""The results directory of one experiment, and reading it back.

    results/<scenario>/<YYYYmmdd-HHMMSS>/
      scenario.yaml            the scenario as run: --quick and --set applied, topology inline
      meta.json                netrig version, host facts, command line, points, status
      runs/pNNN-rMM/run.json   one run: its point, seed, times, each flow's summary + expected
      runs/pNNN-rMM/flows/NAME.json     the flow's raw output (netrig-perf JSON, ping text;
                                        a web flow's curl lines: NAME.jsonl)
      runs/pNNN-rMM/web-NODE/           nginx's access and error logs (web flows to NODE)
      runs/pNNN-rMM/series/NAME.jsonl   its time series; monitors as monitor-K.jsonl
      results.csv              tidy: one row per flow per run, measured beside expected;
                               with events:, one row per event per flow (metric outage_s)
      runs/pNNN-rMM/series/routes.jsonl  route changes in FRR routers (with events)
      figures/*.png, report.html, report.md

Every file is written atomically (a temporary file renamed into place) and through no
symbolic link below the results directory (netrig.safefs), and every JSON
document carries `"schema": SCHEMA`. A run's run.json is written last: a run without one
did not finish, and `--resume` runs it again.

Reading a directory back gives `Results` (`load`), which figures and the report share,
with the mean and Student-t confidence interval of repetitions (`mean_ci`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from netrig import safefs, units
from netrig.errors import NetrigError
from netrig.exp.analysis.why import QueueSeen, queue_seen, rtt_here
from netrig.exp.grade.verdict import decimal, versus
from netrig.exp.kinds.metrics import UNITS, unit_of  # noqa: F401 (results.UNITS, unit_of: its readers)
from netrig.exp.spec.model import SCHEMA, Point, Scenario
from netrig.exp.spec.scenario import loads_scenario
from netrig.link import spec as linkspec
from netrig.topo import load as tload
from netrig.topo.plan import make_plan, path

# netrig-link counts a packet released more than its budget (1 ms) after its due time;
# a run where more than LATE_SHARE of its packets were is flagged (both the link spec's).
LATE_BUDGET_MS = linkspec.LATE_BUDGET_S * 1e3
LATE_SHARE = linkspec.LATE_SHARE
# A paced sender that ends more than SHORT_PCT % of its schedule short is flagged.
SHORT_PCT = 1.0

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
MEASURED = ("ok", "timed_out")  # the statuses whose numbers are results


def range_pos(measured: Any, lo: Any, hi: Any) -> float | None:
    """Where a measurement sits in an expected range: 0 at its low end (the idle
    path), 1 at its top (a full queue); below 0 or above 1 outside it."""
    return versus(measured, lo, hi).position


def late_note(run: dict[str, Any]) -> str:
    """A sentence when the emulator could not keep time in a run: more than LATE_SHARE
    of its packets left more than the budget after their due time (a busy host)."""
    e = run.get("emulator") or {}
    n, over = e.get("packets") or 0, e.get("over_budget") or 0
    if not n or over <= LATE_SHARE * n:
        return ""
    return (f"run {run.get('run')}: the link emulator released {over} of {n} packets "
            f"({100 * over / n:.1f} %) more than {e.get('budget_ms', LATE_BUDGET_MS):g} ms late "
            f"(p99 {e.get('late_p99_us') or 0:.0f} µs, worst {(e.get('late_max_us') or 0) / 1e3:.1f} ms): "
            "the host was too busy for exact delays and rates; run it again on a quieter host")


def pacing_note(run: dict[str, Any]) -> str:
    """A sentence when a paced sender could not keep its rate in a run: it ended more
    than SHORT_PCT of its schedule short (the host stalled it near the end, or it could
    not reach the rate at all)."""
    short = [(name, f["summary"]) for name, f in (run.get("flows") or {}).items()
             if (f.get("summary") or {}).get("sender_short_pct", 0) > SHORT_PCT]
    if not short:
        return ""
    parts = [f"{name} sent {s['sender_short_pct']:.1f} % less than its rate "
             f"(at worst {s.get('sender_max_behind_ms', 0):.0f} ms behind)" for name, s in short]
    return (f"run {run.get('run')}: {'; '.join(parts)}: the sender was stalled or could not keep up, "
            "so the path was offered less than the scenario says")


def atomic_write(path: Path, text: str, root: Path | None = None) -> None:
    """Writes path atomically, through no symbolic link: the directories from `root`
    (the results directory; by default path's own directory) down to path are entered
    without following links, and a link planted at the file's name is replaced."""
    base = root if root is not None else path.parent
    safefs.write(base, path.relative_to(base), text)


def write_json(path: Path, doc: dict[str, Any], root: Path | None = None) -> None:
    atomic_write(path, json.dumps({"schema": SCHEMA, **doc}, indent=1, default=_plain) + "\n", root)


def write_jsonl(path: Path, rows: list[dict[str, Any]], root: Path | None = None) -> None:
    atomic_write(path, "".join(json.dumps(r, default=_plain) + "\n" for r in rows), root)


# Every file read back from a results directory goes through safefs's read side: below
# the directory only, no link followed, a regular file within its kind's bound.
INSIDE = "the results directory"


def read_json(path: Path, root: Path | None = None, bound: safefs.Bound = safefs.RUN_JSON) -> dict[str, Any]:
    """path's JSON document, read without following a link from `root` (the results
    directory; by default path's own directory) down, at most `bound` of it (UnsafeRead)."""
    base = root if root is not None else path.parent
    return json.loads(safefs.read_bytes(base, path.relative_to(base), bound, INSIDE))


def read_jsonl(path: Path, root: Path | None = None) -> list[dict[str, Any]]:
    """path's JSON lines ([] when it is not there), read as read_json reads."""
    base = root if root is not None else path.parent
    return _jsonl(base, path.relative_to(base))


def _jsonl(base: Path, rel: PurePath) -> list[dict[str, Any]]:
    try:
        text = safefs.read_text(base, rel, safefs.SERIES, INSIDE)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def log_tail(out: Path, rel: str | PurePath, chars: int = 300) -> str:
    """The last `chars` characters of a log netrig wrote below results directory `out`
    (a server's), read through safefs: "" when it is not there, the reason when it is
    refused (a link swapped in is never followed into a run's record)."""
    try:
        text = safefs.read_bytes(out, rel, safefs.LOG, INSIDE).decode("utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError):
        return ""
    except safefs.UnsafeRead as e:
        return f"{rel} refused: {e.reason}"
    return text.strip()[-chars:]


def _plain(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, float) and o != o:
        return None
    return str(o)


def new_dir(root: Path, name: str, allow_foreign: bool = False) -> Path:
    """A new results/<name>/<time> directory below root (refused when another user
    owns root or a directory on its way: safefs.check_owner)."""
    safefs.check_owner(root, allow_foreign)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safefs.makedirs(root, name)
    k = 1
    while True:
        leaf = stamp if k == 1 else f"{stamp}-{k}"
        try:
            with safefs.directory(root, name, create=False) as fd:
                os.mkdir(leaf, safefs.RESULTS.dir, dir_fd=fd)
            return root / name / leaf
        except FileExistsError:
            k += 1


def label(value: Any) -> str:
    """A swept value as a table or a legend shows it: `pie(target=20ms)` for a mapping."""
    if isinstance(value, dict):
        head = value.get("type") or value.get("kind") or ""
        rest = ", ".join(f"{k}={v}" for k, v in value.items() if k not in ("type", "kind"))
        return f"{head}({rest})" if head and rest else head or rest
    if isinstance(value, list):
        return "[" + ", ".join(label(v) for v in value) + "]"
    return "" if value is None else str(value)


def describe(params: dict[str, Any], keys: list[str], leave_out: str | None = None) -> str:
    """`aqm=pie(target=20ms), window=16KB`: sweep values as a legend shows them (but for
    the key `leave_out`); a joint key by each path it sets (`carrier=down`), or by its
    `description` alone when it sets one (a case's name: `4a: h1-h4 & h2-h5`)."""
    parts = []
    for k, v in params.items():
        if k == leave_out:
            continue
        paths = k.split(",")
        if (named := case_name(k, v)) is not None:
            parts.append(named)
        elif len(paths) > 1 and isinstance(v, list) and len(v) == len(paths):
            tails = [p.strip().rsplit(".", 1)[-1] for p in paths]
            if len(set(tails)) < len(tails):  # `video.length=576, voice.length=80`
                tails = [".".join(p.strip().split(".")[-2:]) for p in paths]
            parts += [f"{t}={label(x)}" for t, x in zip(tails, v) if x is not None]
        else:
            parts.append(f"{short(k, keys)}={label(v)}")
    return ", ".join(parts)


def case_name(key: str, value: Any) -> str | None:
    """The name a joint sweep key gives its point, by setting `description` beside the
    paths it moves (`description,flows.b.count: [["4a: h1-h4 & h2-h5", 0], ...]`); None
    for a key that does not."""
    paths = [p.strip() for p in key.split(",")]
    if len(paths) < 2 or "description" not in paths or not isinstance(value, list) \
            or len(value) != len(paths):
        return None
    return label(value[paths.index("description")])


def short(key: str, keys: list[str]) -> str:
    """A sweep key's last part (`window`), longer only when two keys share it; each
    path's of a key of several (`kind,rate`)."""
    if "," in key:
        return ",".join(k.strip().rsplit(".", 1)[-1] for k in key.split(","))
    for n in range(1, key.count(".") + 2):
        tail = ".".join(key.split(".")[-n:])
        if sum(k == tail or k.endswith("." + tail) for k in keys) <= 1:
            return tail
    return key


def run_id(point: int, rep: int) -> str:
    return f"p{point:03d}-r{rep:02d}"


def _cmd(*argv: str) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return (p.stdout or p.stderr).strip().splitlines()[0] if (p.stdout or p.stderr).strip() else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def run_host() -> dict[str, Any]:
    """The machine a run ran on, as run.json records it (a campaign's runs may come from
    several: the report compares them point by point)."""
    return {"kernel": platform.release(), "hostname": platform.node(), "cpu": _cpu(), "cpus": os.cpu_count()}


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def host_facts() -> dict[str, Any]:
    """What a reader needs to judge the numbers: kernel, CPU, memory, tools, qdiscs."""
    from netrig import __version__

    cpu = _cpu()
    mem = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    qdiscs = {}
    kernel_mods = Path(f"/lib/modules/{platform.release()}/kernel/net/sched")
    for q in ("htb", "tbf", "netem", "pie", "codel", "fq_codel", "fq", "red", "cake"):
        builtin = Path(f"/sys/module/sch_{q}").exists()
        module = any(kernel_mods.glob(f"sch_{q}.ko*")) if kernel_mods.is_dir() else False
        qdiscs[q] = builtin or module
    return {
        "netrig": __version__, "python": sys.version.split()[0], "kernel": platform.release(),
        "machine": platform.machine(), "hostname": platform.node(), "cpu": cpu,
        "cpus": os.cpu_count(), "memory_bytes": mem,
        "kernel_qdiscs_seen": qdiscs,
        "offloads": "off on every lab interface (GSO/GRO/TSO), as netrig builds labs",
        "link_emulator": "netrig-link (user space): delay, loss, jitter and AQMs",
        "iperf3": _cmd("iperf3", "--version"), "ping": _cmd("ping", "-V"),
        "tcp_congestion_control_default": _read("/proc/sys/net/ipv4/tcp_congestion_control"),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def runs(out: Path, refused: list[str] | None = None) -> list[dict[str, Any]]:
    """Every finished run's run.json, in run order. A run.json (or runs/) refused by
    safefs is left out and said in `refused` (raised without it)."""
    return [doc for _, doc in _run_docs(out, refused)]


def _run_docs(out: Path, refused: list[str] | None) -> list[tuple[str, Any]]:
    """(directory name, its run.json) of every run that has one, as `runs` reads them."""
    def refuse(e: safefs.UnsafeRead, what: str) -> None:
        if refused is None:
            raise e
        refused.append(f"{what} refused: {e.reason}")

    try:
        names = safefs.list_dir(out, "runs", INSIDE)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except safefs.UnsafeRead as e:
        refuse(e, "runs/ (every run)")
        return []
    done = []
    for name in names:
        try:
            done.append((name, read_json(out / "runs" / name / "run.json", out)))
        except (FileNotFoundError, NotADirectoryError):
            continue  # not finished (or not a run)
        except safefs.UnsafeRead as e:
            refuse(e, f"runs/{name}/run.json")
    return done


def finished(out: Path) -> set[str]:
    """The runs whose run.json says they ended well (`--resume` runs the others); a
    run.json refused by safefs counts as not finished."""
    return {name for name, doc in _run_docs(out, []) if isinstance(doc, dict) and doc.get("status") == "ok"}


def read_meta(out: Path) -> dict[str, Any] | None:
    """out/meta.json (None when it is not there); NotResults when safefs refuses it or it
    is not JSON."""
    try:
        meta = read_json(out / "meta.json", out, safefs.META_JSON)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except safefs.UnsafeRead as e:
        raise NotResults(f"{out}: meta.json refused: {e.reason}") from None
    except (OSError, ValueError) as e:
        raise NotResults(f"{out}: a results directory that cannot be read: {e}") from None
    if not isinstance(meta, dict):
        raise NotResults(f"{out}: meta.json is not a JSON object")
    return meta


def csv_rows(out: Path, res: Results | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """The tidy table: one row per flow per run (columns: CSV_FIRST, the sweep keys,
    then every measured number); `res`: out read back already."""
    res = res or load(out)
    keys = res.keys
    tol = res.tolerance
    rows: list[dict[str, Any]] = []
    extra: list[str] = []
    for r in res.runs:
        for name, fl in r["flows"].items():
            row = {"run": r["run"], "point": r["point"], "rep": r["rep"], "seed": r["seed"],
                   "flow": name, "kind": fl["kind"], "from": fl["from"], "to": fl.get("to") or "",
                   "status": fl["summary"].get("status", "ok")}
            for k in keys:
                row[k] = case_name(k, r["params"].get(k)) or label(r["params"].get(k))
            e = fl.get("expected") or {}
            v = versus(e.get("measured"), e.get("value"), e.get("hi"), tol)
            row.update({"metric": e.get("metric", ""), "unit": unit_of(e.get("metric", "")),
                        "measured": e.get("measured"), "expected": e.get("value"),
                        "expected_hi": e.get("hi"), "expected_here": res.here(r, name),
                        "ratio": v.ratio, "range_pos": v.position, "verdict": v.verdict,
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


class NotResults(NetrigError, ValueError):
    """A directory that is not a netrig results directory."""


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
        """The scenario's tolerance, a fraction (10 % unless it says otherwise)."""
        try:
            return units.fraction(self.scenario.get("tolerance", "10%"))
        except (NetrigError, ValueError, TypeError):
            return 0.1

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
        data goes, and back too for an RTT (ping, probe, fetch); with `acks`, the way a
        TCP flow's ACKs come back instead. Recorded: by a queue monitor, or in the run's
        link-stats series (every rated direction of an emulated link)."""
        p = self.scenario_point(run.get("point", 0))
        f = (run.get("flows") or {}).get(flow) or {}
        spec = p.spec.flows.get(flow) if p else None
        if p is None or spec is None or not f.get("to"):
            return []
        a, b = (f["to"], f["from"]) if spec.reverse else (f["from"], f["to"])
        try:
            plan = make_plan(p.topology)
            if acks:
                hops = path(plan, b, a) if f["kind"] == "tcp" else []
            else:
                hops = path(plan, a, b) + (path(plan, b, a) if f["kind"] in ("ping", "probe", "fetch", "web") else [])
        except NetrigError:
            return []
        rows = [x for m in [*run.get("monitors", []), "link-stats"] for x in self.series(run["run"], m)
                if x.get("kind", "queue") == "queue"]
        out = []
        for h in hops:
            d = h.link.direction(h.d)
            q = queue_seen(rows, h.link.name, "a_to_b" if h.d == 0 else "b_to_a",
                           f.get("start_s") or 0.0, f.get("end_s") or math.inf,
                           where=f"{h.frm}→{h.to}", aqm=d.aqm.name, rate_bps=d.rate_bps,
                           target_s=d.aqm.target_s)
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
    return Results(out, meta, done, scen if isinstance(scen, dict) else {}, text, refused)


def _yaml(text: str, source: Path) -> Any:
    """A YAML document netrig wrote, parsed within the scenario loader's bounds (no alias
    bomb, no nesting past its depth); None when it is empty, ValueError when it is not
    YAML."""
    if not text.strip():
        return None
    try:
        return tload._parse(text, str(source))[0]
    except tload.TopologyError as e:
        raise ValueError("; ".join(e.problems)) from None


def load_scenario_of(out: Path) -> Scenario:
    """The scenario saved in results directory `out`, for `--resume` to run the rest:
    scenario.yaml read through safefs, its topology inline (a topology file it names is
    refused, never opened); NotResults (or ScenarioError) with the reason otherwise."""
    if read_meta(out) is None:
        raise NotResults(f"--resume {out}: not a netrig results directory (it lacks meta.json)")
    try:
        text = safefs.read_text(out, "scenario.yaml", safefs.SCENARIO_YAML, INSIDE)
    except (FileNotFoundError, NotADirectoryError):
        raise NotResults(f"--resume {out}: not a netrig results directory (it lacks scenario.yaml)") from None
    except safefs.UnsafeRead as e:
        raise NotResults(f"--resume {out}: scenario.yaml refused: {e.reason}") from None
    except ValueError as e:
        raise NotResults(f"--resume {out}: scenario.yaml is not UTF-8 text: {e}") from None
    try:
        data = _yaml(text, out / "scenario.yaml")
    except ValueError:
        data = None  # (loads_scenario says what is wrong with it)
    if isinstance(data, dict) and isinstance(data.get("topology"), str):
        raise NotResults(f"--resume {out}: scenario.yaml names a topology file ({data['topology']}); "
                         "netrig saves a run's topology inline and opens no other file a results "
                         "directory names")
    return loads_scenario(text, str(out / "scenario.yaml"))


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# Statistics.
def mean_ci(xs: list[float]) -> tuple[float, float | None]:
    """The mean and the half-width of its 95 % confidence interval (Student t; None
    when there is a single sample)."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, None
    return m, t95(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))


def t95(df: int) -> float:
    """Student's t quantile for a two-sided 95 % interval (4.303 for df = 2)."""
    lo, hi = 0.0, 64.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_central(mid, df) < 0.95 else (lo, mid)
    return (lo + hi) / 2


def _t_central(t: float, df: int) -> float:
    """P(|T| ≤ t) for integer df (Abramowitz & Stegun 26.7.3 and 26.7.4)."""
    th = math.atan(t / math.sqrt(df))
    c2 = math.cos(th) ** 2
    if df % 2 == 0:
        term = total = 1.0
        for k in range(2, df - 1, 2):
            term *= c2 * (k - 1) / k
            total += term
        return math.sin(th) * total
    if df == 1:
        return 2 * th / math.pi
    term = total = math.cos(th)
    for k in range(3, df - 1, 2):
        term *= c2 * (k - 1) / k
        total += term
    return 2 / math.pi * (th + math.sin(th) * total)
