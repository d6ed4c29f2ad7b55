"""What `netrig run` records for throughput over time, in a run without a queue monitor:
the emulator's delivered rate of every rated link direction (series/link-stats.jsonl)
and the receiver's own intervals (recv_bps), so that the figure draws what was
delivered, not the sender's writes."""

from __future__ import annotations

import statistics
import subprocess
import sys

import pytest
from netlab import needs_root
from netrig.exp.analysis import series
from netrig.exp.analysis.results import load
from netrig.exp.record.files import read_jsonl

pytestmark = pytest.mark.net

TINY = """\
name: tiny
topology:
  nodes: {h1: host, h2: host}
  links:
    - {a: h1, b: h2, rate: 10Mbit, delay: 5ms, queue: 100}
duration: 3s
settle: 0s
interval: 200ms
flows:
  bulk: {kind: tcp, from: h1, to: h2}
  back: {kind: tcp, from: h1, to: h2, reverse: true}
"""


def test_a_run_without_a_queue_monitor_records_what_was_delivered(tmp_path):
    needs_root()
    (tmp_path / "tiny.yaml").write_text(TINY)
    out = tmp_path / "r"
    p = subprocess.run([sys.executable, "-m", "netrig", "run", str(tmp_path / "tiny.yaml"),
                        "--out", str(out), "-q"], capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
    rdir = out / "runs" / "p000-r00"

    # netrig-link's samples of both rated directions, from the run's start
    rows = read_jsonl(rdir / "series" / "link-stats.jsonl")
    by_dir = {d: [r for r in rows if r["link"] == "h1-h2" and r["dir"] == d] for d in ("a_to_b", "b_to_a")}
    for d, mine in by_dir.items():
        assert len(mine) > 150, (d, len(mine))  # 100 Hz over ~3 s; a stalled host loses some
        assert 0 <= mine[0]["t"] < 1.0 and all("monitor" not in r for r in mine)
        busy = [r["rate_bps"] for r in mine if 1.0 <= r["t"] <= 2.5]
        assert 5e6 < statistics.median(busy) <= 11e6, (d, statistics.median(busy))  # the 10 Mbit/s link, full

    # the receiver's intervals: the server's (fetched) for bulk, the client's own for -R
    for name in ("bulk", "back"):
        received = [r for r in read_jsonl(rdir / "series" / f"{name}.jsonl") if "recv_bps" in r]
        assert len(received) >= 10, (name, len(received))  # 200 ms intervals over 3 s
        gaps = sorted(b["t"] - a["t"] for a, b in zip(received, received[1:]))
        assert gaps[len(gaps) // 2] == pytest.approx(0.2, abs=0.02), (name, gaps)
        assert 5e6 < statistics.median(r["recv_bps"] for r in received) <= 11e6
    assert (rdir / "server-bulk.json").stat().st_size > 0

    # and throughput over time is drawn from what each direction delivered
    res = load(out)
    run = res.first_run(0)
    labels = [tr.label for tr in series.traces(res, run, "throughput")]
    assert labels == ["bulk: delivered by h1→h2", "back: delivered by h2→h1"], labels
