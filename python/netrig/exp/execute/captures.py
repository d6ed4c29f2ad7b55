"""A run's captures, after the run: each capture's entry in run.json, Wireshark's TCP
analysis of its files, and what that says of each tcp flow (with its Stevens graph).
Capturing itself is netrig.capture.lab's; the analysis is netrig-analyze's."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from netrig.capture import flows as capflows
from netrig.errors import NetrigError
from netrig.exp.record import files as rec
from netrig.topo.plan import Plan


def capture_entry(index: int, summary: dict[str, Any], rdir: Path) -> dict[str, Any]:
    """A capture monitor's summary as run.json keeps it: its files relative to the run."""
    files = [os.path.relpath(f, rdir) for f in summary.get("files", [])]
    return {"monitor": index, **summary, "files": files}


def analyse_captures(entries: list[dict[str, Any]], rdir: Path, out: Path, spec: Any,
                     ports: dict[str, int], plan: Plan) -> dict[str, dict[str, Any]]:
    """Wireshark's TCP analysis of each capture (capture/K-LABEL.tcp.json, its totals in
    the capture's entry) and what it says of each tcp flow (capture/flows.py), with the
    flow's Stevens graph (capture/FLOW-stevens.png). A capture that cannot be analysed
    says why in its entry; the run goes on."""
    analyses = []
    for e in entries:
        files = [rdir / f for f in e["files"]]
        if not files:
            continue
        try:
            a = capflows.analyze_files(files)
        except NetrigError as err:
            e["analysis_error"] = str(err)
            continue
        base = Path(e["files"][0]).name.removesuffix(".pcapng")
        rec.write_json(rdir / "capture" / f"{base}.tcp.json", {k: v for k, v in a.items() if k != "series"},
                       out)
        e["analysis"] = f"capture/{base}.tcp.json"
        e["tcp"] = {k: a["totals"].get(k) for k in ("packets", "data_packets", "retransmission",
                                                      "duplicate_ack", "out_of_order", "zero_window")}
        analyses.append((e["monitor"], e["node"], a))
    found = capflows.per_flow(analyses, spec.flows, ports, lambda n: str(plan.addr(n)))
    by_monitor = {i: a for i, _, a in analyses}
    for name, fig in found.items():
        stream = fig["capture_streams"][0]
        try:
            from netrig.capture import stevens  # (matplotlib: only when there is a figure to draw)

            stevens.stevens_figure(by_monitor[fig["capture_monitor"]], stream,
                                   rdir / "capture" / f"{name}-stevens.png",
                                   title=f"flow {name}, TCP stream {stream}: time-sequence (Stevens) graph")
            fig["stevens"] = f"capture/{name}-stevens.png"
        except NetrigError as err:
            fig["stevens_error"] = str(err)
    return found

