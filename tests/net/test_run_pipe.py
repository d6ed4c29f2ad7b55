"""`netrig run ... 2>&1 | head -1`: a reader that goes away after one line costs the
words it did not read, never the results: every run.json, results.csv, the figures,
report.md and report.html are written whole, and netrig ends quietly (141, as a
program SIGPIPE ended), its lab torn down."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from netlab import needs_root

pytestmark = pytest.mark.net

TWO_RUNS = """\
name: piped
topology:
  nodes: {h1: host, h2: host}
  links:
    - {a: h1, b: h2, rate: 10Mbit, delay: 2ms, queue: 50}
duration: 1s
settle: 0s
repeat: 2
flows:
  bulk: {kind: tcp, from: h1, to: h2}
"""


def whole_png(path: Path) -> bool:
    data = path.read_bytes()
    return data.startswith(b"\x89PNG\r\n\x1a\n") and data[-12:-4] == b"\x00\x00\x00\x00IEND"


def test_a_reader_that_leaves_after_one_line_costs_no_result(tmp_path):
    needs_root()
    (tmp_path / "s.yaml").write_text(TWO_RUNS)
    out = tmp_path / "r"
    # stdout and stderr into one pipe, read for one line and closed: the second run's
    # progress line, the headline, the report's path all meet a closed pipe
    p = subprocess.Popen([sys.executable, "-m", "netrig", "run", str(tmp_path / "s.yaml"),
                          "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert p.stdout is not None
    first = p.stdout.readline()
    p.stdout.close()
    code = p.wait(timeout=120)
    assert first.startswith(b"netrig: piped: 1 point x 2 repetitions = 2 runs"), first
    assert code == 141, code  # as `git log | head`: the reader left; the work was done
    runs = [json.loads((out / "runs" / f"p000-r0{k}" / "run.json").read_text()) for k in (0, 1)]
    assert [r["status"] for r in runs] == ["ok", "ok"]
    assert json.loads((out / "meta.json").read_text())["status"] == "complete"
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 and all(float(r["ratio"]) > 0.5 for r in rows), rows
    md = (out / "report.md").read_text()
    assert md.startswith("# netrig report: piped") and "## Scenario, host and runs" in md, md[-500:]
    assert (out / "report.html").read_text().rstrip().endswith("</html>")
    figures = sorted((out / "figures").glob("*.png"))
    assert figures and all(whole_png(f) for f in figures), figures
    assert all(f.name in md for f in figures)  # the report shows every figure drawn
    lab = f"nx{p.pid % 100000}"  # the runner's lab, named by its PID: torn down
    assert lab not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
