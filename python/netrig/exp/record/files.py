"""The results directory on disk: written atomically through no link (netrig.safefs), read back
within bounds. Its layout:

    results/<scenario>/<YYYYmmdd-HHMMSS>/
      scenario.yaml            the scenario as run: --quick and --set applied, topology inline
      meta.json                netrig version, host facts, command line, points, status
      runs/pNNN-rMM/run.json   one run's record (exp/record/run.py), written last
      runs/pNNN-rMM/flows/NAME.json     the flow's raw output (netrig-perf JSON, ping text;
                                        a web flow's curl lines: NAME.jsonl)
      runs/pNNN-rMM/web-NODE/           nginx's access and error logs (web flows to NODE)
      runs/pNNN-rMM/series/NAME.jsonl   its time series; monitors as monitor-K.jsonl
      runs/pNNN-rMM/series/routes.jsonl  route changes in FRR routers (with events)
      results.csv, figures/*.png, report.html, report.md   (exp/render)

Every JSON document carries `"schema"`. A run without run.json did not finish, and
`--resume` runs it again.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path, PurePath
from typing import Any

from netrig import safefs
from netrig.errors import NetrigError
from netrig.exp.spec.model import SCHEMA, Scenario
from netrig.exp.spec.scenario import loads_scenario
from netrig.topo import load as tload


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


class NotResults(NetrigError, ValueError):
    """A directory that is not a netrig results directory."""


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
