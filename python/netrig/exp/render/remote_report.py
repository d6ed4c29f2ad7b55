"""The report's section on a scenario run on real hosts over SSH (exp/execute/remote.py): the
hosts as each described itself, the path the user declared (theory's input) beside
the idle measurement taken before the flows, and what the clocks allow (one-way
delays only when they are declared synced).

Its blocks are plain data, which report.py renders (this module does not import it):
("note", text, warn), ("table", head, rows) and ("list", items)."""

from __future__ import annotations

from typing import Any

from netrig.exp.analysis.results import Results

Block = tuple  # ("note", text, warn) | ("table", head, rows) | ("list", items)


def Note(text: str, warn: bool = False) -> Block:  # noqa: N802 (named as report.py's block)
    return ("note", text, warn)


def Table(head: list[str], rows: list[list[str]]) -> Block:  # noqa: N802
    return ("table", head, rows)

MAX_IDLE_ROWS = 24


def section(res: Results) -> list[tuple[str, list[Block]]]:
    """[("Real hosts", blocks)] for a hosts scenario; [] otherwise."""
    hosts = res.scenario.get("hosts")
    if not isinstance(hosts, dict):
        return []
    runs = [r for r in res.runs if isinstance(r.get("remote"), dict)]
    path = res.scenario.get("path") or {}
    clocks = res.scenario.get("clocks") or "unknown"
    blocks: list[Block] = [Note(
        f"These flows ran on real machines reached over SSH. Theory reads the path as declared "
        f"(rate {path.get('rate', '?')}, RTT {path.get('rtt', '?')}, loss {path.get('loss', '0%')}), "
        "not a measurement: the topology drawn below stands for it. The idle measurement (3 s of "
        "ping each way before each run's flows) shows the path as it was.")]
    blocks.append(_hosts(hosts, runs))
    idle = _idle(runs)
    if idle is not None:
        blocks.append(idle)
    blocks.append(_clocks(res, clocks, list(hosts)))
    failed = [r for r in res.runs if r.get("status") == "failed" and r.get("error")]
    if failed:
        blocks.append(Note(f"{len(failed)} of {len(res.runs)} runs failed on a host:", warn=True))
        blocks.append(("list", [f"{r.get('run')}: {r['error']}" for r in failed[:10]]))
    return [("Real hosts", blocks)]


def _hosts(declared: dict[str, Any], runs: list[dict[str, Any]]) -> Table:
    """Each host as it described itself in the last run that reached it."""
    rows = []
    for name, spec in declared.items():
        seen: dict[str, Any] = {}
        for r in runs:
            seen = (r["remote"].get("hosts") or {}).get(name) or seen
        if not isinstance(spec, dict):
            spec = {}
        port = spec.get("port") or 22
        perf = seen.get("perf")
        where = ("" if not perf else f"{seen.get('perf_version', '')} at {perf}"
                 + (" (copied there by netrig)" if seen.get("perf_copied") else ""))
        cpu = f"{seen.get('cpu', '')} × {seen.get('cpus', '?')}" if seen.get("kernel") else ""
        rows.append([name, f"{spec.get('ssh', '?')}:{port}", str(spec.get("address") or seen.get("address") or ""),
                     str(seen.get("hostname", "")), str(seen.get("kernel", "not reached")),
                     str(seen.get("machine", "")), cpu, where])
    return Table(["host", "ssh", "flows sent to", "host name", "kernel", "machine", "CPU", "netrig-perf"], rows)


def _idle(runs: list[dict[str, Any]]) -> Table | None:
    """The idle path before each run's flows, beside the declared RTT."""
    rows = []
    for r in runs:
        rem = r["remote"]
        theory = rem.get("theory_rtt_ms") or {}
        for x in rem.get("idle") or []:
            declared = theory.get(f"{x.get('from')}>{x.get('to')}")
            got = ("; ".join(str(x["error"]).split(" — ")[:1]) if x.get("error") and "rtt_ms_avg" not in x else
                   f"{x.get('rtt_ms_min', 0):.3g} / {x.get('rtt_ms_avg', 0):.3g} / {x.get('rtt_ms_max', 0):.3g}")
            loss = x.get("loss_pct")
            rows.append([str(r.get("run")), f"{x.get('from')} → {x.get('to')} ({x.get('address')})",
                         "" if declared is None else f"{declared:.3g} ms", got,
                         "" if loss is None else f"{loss:.3g} %"])
    if not rows:
        return None
    more = len(rows) - MAX_IDLE_ROWS
    rows = rows[:MAX_IDLE_ROWS] + ([[f"… {more} more rows in the runs' run.json", "", "", "", ""]] if more > 0 else [])
    return Table(["run", "ping", "declared RTT (theory)", "idle RTT min / avg / max (ms)", "idle loss"], rows)


def _clocks(res: Results, clocks: str, names: list[str]) -> Block:
    """One-way delays, only where the clocks are declared to agree."""
    who = " and ".join(names) if len(names) <= 3 else ", ".join(names)
    if clocks != "synced":
        return Note(f"One-way delays not shown: the clocks of {who} are not known to agree "
                    f"(clocks: {clocks}). Declare clocks: synced when NTP or PTP keeps them together.")
    rows = []
    for name, f in res.flows().items():
        if f.get("kind") != "probe":
            continue
        for r in res.runs:
            s = ((r.get("flows") or {}).get(name) or {}).get("summary") or {}
            if s.get("owd_up_ms_p50") is not None:
                rows.append([name, str(r.get("run")), f"{f.get('from')} → {f.get('to')}",
                             f"{s['owd_up_ms_p50']:.3g} ms", f"{s.get('owd_down_ms_p50') or 0:.3g} ms"])
    if not rows:
        return Note(f"The clocks of {who} are declared synced (clocks: synced); no probe flow measured "
                    "one-way delays (add a kind: probe flow).")
    return Table(["probe flow", "run", "way", "one-way out (p50)", "one-way back (p50)"], rows)
