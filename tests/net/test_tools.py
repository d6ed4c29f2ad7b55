"""`tool:` for real: one tcp flow over a 10 Mbit/s emulated link made by each of
netrig-perf, iperf3 and iperf2 (a sweep over flows.a.tool), and a udp flow by iperf2 at
5 Mbit/s on a link of its own; each is graded within 5 % of theory from the run's own
record (run.json's expected ratio)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from netlab import needs_root

pytestmark = pytest.mark.net

SCENARIO = """\
name: tools
topology:
  nodes: {h1: host, h2: host, h3: host, h4: host}
  links:
    - {a: h1, b: h2, rate: 10Mbit, delay: 3ms}
    - {a: h3, b: h4, rate: 10Mbit, delay: 3ms}
duration: 3s
settle: 0s
tolerance: 5%
flows:
  a: {kind: tcp, from: h1, to: h2}
  u: {kind: udp, from: h3, to: h4, tool: iperf2, rate: 5Mbit}
sweep:
  flows.a.tool: [netrig-perf, iperf3, iperf2]
"""


def test_each_tool_is_graded_within_5_percent_of_theory(tmp_path):
    needs_root()
    for exe in ("iperf3", "iperf"):
        if shutil.which(exe) is None:
            pytest.skip(f"{exe} is not installed (apt-get install iperf3 iperf)")
    (tmp_path / "s.yaml").write_text(SCENARIO)
    out = tmp_path / "r"
    done = subprocess.run([sys.executable, "-m", "netrig", "run", str(tmp_path / "s.yaml"), "--out", str(out),
                           "-q"], capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = {}
    for i, tool in enumerate(("netrig-perf", "iperf3", "iperf2")):
        run = json.loads((out / "runs" / f"p{i:03d}-r00" / "run.json").read_text())
        assert run["params"] == {"flows.a.tool": tool}
        for name in ("a", "u"):
            f = run["flows"][name]
            e = f["expected"]
            assert f["summary"]["status"] == "ok", (tool, name, f["summary"].get("error"))
            assert e["metric"] == "throughput_bps" and e["ratio"] is not None
            seen[(tool, name)] = (f["summary"]["throughput_bps"], e["ratio"])
            assert abs(e["ratio"] - 1) <= 0.05, (tool, name, e)
        ext = "txt" if tool == "iperf2" else "json"
        assert (out / "runs" / f"p{i:03d}-r00" / "flows" / f"a.{ext}").stat().st_size > 0
        assert (out / "runs" / f"p{i:03d}-r00" / f"server-a.{ext}").stat().st_size > 0
    assert run["flows"]["u"]["summary"]["packets"] > 0 and run["flows"]["u"]["summary"]["loss_pct"] == 0
    print("\n".join(f"{t} {n}: {bps / 1e6:.3f} Mbit/s, ratio {r:.3f}" for (t, n), (bps, r) in seen.items()))
