"""The seeds' experiments, for real: `netrig run examples/X.yaml --quick` from the
command line, then the physics of what it measured (results.csv and the queue monitor)
against theory: where theory is exact (bottleneck goodput, W/RTT, idle RTT) within 10 %,
and PIE's queueing delay below drop-tail's."""

from __future__ import annotations

import csv
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from netlab import needs_root

pytestmark = pytest.mark.net
ROOT = Path(__file__).resolve().parents[2]


def run_example(name: str, out: Path) -> list[dict[str, str]]:
    needs_root()
    p = subprocess.run([sys.executable, "-m", "netrig", "run", str(ROOT / "examples" / f"{name}.yaml"),
                        "--quick", "--out", str(out), "-q"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert (out / "report.html").exists()
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["schema"] == 1
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["status"] == "ok" for r in rows), rows
    # every run records how late the link emulator released its packets
    for run in (out / "runs").glob("*/run.json"):
        emu = json.loads(run.read_text())["emulator"]
        assert emu["packets"] > 0 and 0 <= emu["over_budget"] <= emu["packets"], (run, emu)
    return rows


def ratio(row: dict[str, str]) -> float:
    return float(row["measured"]) / float(row["expected"])


def test_002_paths_rtt_and_tcp_match_the_portfolio_theory(tmp_path):
    rows = run_example("002-paths", tmp_path / "r")
    assert len(rows) == 12
    for r in rows:
        assert 0.9 <= ratio(r) <= 1.1, (r["flow"], r["measured"], r["expected"], r["detail"])
    tcp = {r["flow"]: float(r["expected"]) for r in rows if r["kind"] == "tcp"}
    # 40, 30, 20 Mbit/s x 1448/1514; the paths' bottlenecks L2 (30) and L3 (20)
    assert [round(tcp[f] / 1e6, 2) for f in ("tcp_L1", "tcp_L2", "tcp_L3", "tcp_h1_h4", "tcp_h1_h9")] \
        == [38.26, 28.69, 19.13, 28.69, 19.13]


def test_002_udp_receives_the_bottleneck_and_loses_the_rest(tmp_path):
    rows = run_example("002-udp", tmp_path / "r")
    udp = [r for r in rows if r["kind"] == "udp"]
    assert len(udp) == 9
    for r in udp:
        offered = float(r["flows.*.rate"].removesuffix("Mbit")) * 1e6
        assert 0.9 <= ratio(r) <= 1.1, (r["flow"], offered, r["measured"], r["expected"])
        # loss = 1 - C/X above the bottleneck (C = 30 or 20 Mbit/s of 1470/1512), none below;
        # X is the rate the sender achieved, so the check is the link's, not the sender's.
        # The sender repays host stalls, so it offers its rate, less only what it says
        # it still owed at the end (a stall too late to repay)
        sent = float(r["sent_bps"])
        assert sent >= (0.99 - float(r["sender_short_pct"]) / 100) * offered, r
        link_loss_pct = max(0.0, 100 * (1 - float(r["expected"]) / sent))
        assert abs(float(r["loss_pct"]) - link_loss_pct) < 3, (r["flow"], offered, sent, r["loss_pct"])
        assert abs(float(r["loss_pct"]) - float(r["expected_loss_pct"])) < 6, r
    # above capacity the bottleneck's queue is full: the ping that gets through waits it out
    # (100 packets at 30 Mbit/s: 40 ms on h1-h4); below it, the idle 60 ms
    ping = {(r["flow"], r["flows.*.rate"]): r for r in rows if r["kind"] == "ping"}
    assert float(ping["ping_h1_h4", "15Mbit"]["measured"]) < 66  # within 10 % of 60 ms
    # Above capacity the periodic UDP stream takes nearly every slot the full queue
    # frees: 70-100 % of the 30 pings are dropped (the pre-session pacer too; a phase
    # effect the next session looks into). The queue is full, so pings are lost, and
    # any that got through waited it out.
    full = ping["ping_h1_h4", "35Mbit"]
    assert float(full["loss_pct"]) > 10, full
    if full["measured"]:
        assert float(full["measured"]) > 90
        assert float(full["range_pos"]) > 0.75


def test_003_window_sweep_follows_w_over_rtt_then_the_link(tmp_path):
    rows = run_example("003-window", tmp_path / "r")
    by_w = {r["flows.bulk.window"]: r for r in rows}
    assert set(by_w) == {"16KB", "64KB", "128KB", "1000KB"}
    for w, r in by_w.items():
        assert 0.9 <= ratio(r) <= 1.1, (w, r["measured"], r["expected"], r["detail"])
    assert by_w["16KB"]["limit"].startswith("window") and by_w["1000KB"]["limit"] == "link"
    speeds = [float(by_w[w]["measured"]) for w in ("16KB", "64KB", "128KB", "1000KB")]
    assert speeds == sorted(speeds)


def queue_sojourn_ms(run_dir: Path) -> list[float]:
    rows = [json.loads(line) for line in (run_dir / "series" / "monitor-0.jsonl").read_text().splitlines()]
    return [r["sojourn_ms"] for r in rows if r["dequeued"]]


def test_004_pie_holds_the_queue_far_below_drop_tail(tmp_path):
    out = tmp_path / "r"
    rows = run_example("004-bufferbloat", out)
    rtt = {r["links.s0-h2.aqm"]: float(r["rtt_ms_p50"]) for r in rows if r["flow"] == "rtt"}
    assert set(rtt) == {"droptail", "pie(target=20ms)"}
    # drop-tail: a full 100-packet queue at 1.5 Mbit/s is ~0.8 s; PIE aims at 20 ms
    assert rtt["pie(target=20ms)"] < rtt["droptail"] / 3, rtt
    droptail, pie = (statistics.median(queue_sojourn_ms(out / "runs" / f"p00{i}-r00")) for i in (0, 1))
    assert pie < droptail / 3 and droptail > 200, (pie, droptail)
    bulk = next(r for r in rows if r["flow"] == "bulk" and r["links.s0-h2.aqm"] == "droptail")
    assert 0.9 <= ratio(bulk) <= 1.1, bulk["detail"]
    fetch = {r["links.s0-h2.aqm"]: float(r["fetch_s_mean"]) for r in rows if r["flow"] == "web"}
    assert fetch["pie(target=20ms)"] < fetch["droptail"], fetch
