"""Scenario events on a real static lab: h1 - r1 - r2 - h2, the r1-r2 link carried by
netrig-link. A probe and a tcp flow run for 6 s; the link is changed live at 1 s, goes
silent at 2 s, a command runs at 3 s and the link comes back at 4 s. The events fire at
about their times, the probe's outage is about the 2 s the link was down (static routes:
nothing reroutes), and every time series marks the events."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest
from netlab import needs_root

pytestmark = pytest.mark.net

SCENARIO = """\
name: events
topology:
  nodes: {h1: host, r1: router, r2: router, h2: host}
  links:
    - [h1, r1]
    - {a: r1, b: r2, delay: 5ms, rate: 20Mbit}
    - [r2, h2]
duration: 6s
settle: 0s
flows:
  probe: {kind: probe, from: h1, to: h2, interval: 10ms}
  bulk: {kind: tcp, from: h1, to: h2}
events:
  - {at: 2s, link: r1-r2, down: true}
  - {at: 4s, link: r1-r2, up: true}
  - {at: 1s, link: r1-r2, set: {delay: 10ms}}
  - {at: 3s, node: h1, command: "echo hello from h1; ip route", timeout: 5s}
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    needs_root()
    d = tmp_path_factory.mktemp("events")
    (d / "s.yaml").write_text(SCENARIO)
    out = d / "r"
    p = subprocess.run([sys.executable, "-m", "netrig", "run", str(d / "s.yaml"), "--out", str(out), "-q"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:] + p.stdout[-2000:]
    return out, p.stdout


def test_events_fire_at_their_times_and_are_recorded(ran):
    out, _ = ran
    run = json.loads((out / "runs" / "p000-r00" / "run.json").read_text())
    evs = {e["what"]: e for e in run["events"]}
    assert set(evs) == {"r1-r2 down", "r1-r2 up", "r1-r2 delay=10ms", "h1: echo hello from h1; ip…"}
    for e in evs.values():
        assert e["ok"], e
        assert e["planned_s"] - 0.01 <= e["actual_s"] <= e["planned_s"] + 0.5  # a noisy host
        assert 0 <= e["took_s"] < 5
    cmd = evs["h1: echo hello from h1; ip…"]
    assert cmd["exit_code"] == 0 and "hello from h1" in cmd["output_tail"]
    assert [e["planned_s"] for e in run["events"]] == [1.0, 2.0, 3.0, 4.0]  # in time order


def test_the_probe_outage_is_the_time_the_link_was_down(ran):
    out, _ = ran
    run = json.loads((out / "runs" / "p000-r00" / "run.json").read_text())
    down = next(e for e in run["events"] if e["what"] == "r1-r2 down")
    o = down["outage"]["probe"]
    assert 1.7 <= o["outage_s"] <= 2.6, o  # the link was silent for 2 s
    assert (o["theory_low_s"], o["theory_high_s"]) == (2.0, 2.0)
    assert o["recovered"]
    # TCP comes back no sooner than the link (and later: its retransmission backoff).
    assert down["outage"]["bulk"]["outage_s"] >= 1.5
    # The live change and the command cut nothing.
    for e in run["events"]:
        if e["what"] != "r1-r2 down":
            assert e["outage"]["probe"]["outage_s"] < 0.5, e


def test_results_csv_headline_and_figures_show_the_events(ran):
    out, stdout = ran
    rows = [r for r in csv.DictReader((out / "results.csv").open()) if r["event"] == "r1-r2 down"]
    assert {r["flow"] for r in rows} == {"probe", "bulk"}
    assert all(r["metric"] == "outage_s" for r in rows)
    assert "r1-r2 down" in stdout and "events (outage" in stdout
    from netrig.exp.render.figures import make_figures

    drawn = [f for f in make_figures(out, ["png"]) if f.kind == "timeseries"]
    assert {f.title.split(" of ")[0] for f in drawn} >= {"throughput", "RTT"}
    for f in drawn:
        got = {m.label: m for m in f.marks}
        assert set(got) == {"r1-r2 down", "r1-r2 up", "r1-r2 delay=10ms", "h1: echo hello from h1; ip…"}
        assert abs(got["r1-r2 down"].t - 2.0) < 0.5
    rtt = next(f for f in drawn if f.title.startswith("RTT"))
    assert 1.7 <= {m.label: m for m in rtt.marks}["r1-r2 down"].outage_s <= 2.6
    html = (out / "report.html").read_text()
    assert "<h2>Events</h2>" in html and "r1-r2 down" in html


def test_the_route_monitor_records_changes_on_the_flows_clock_and_stops_by_pid():
    import time

    from netrig.exp.execute.runner import _lab_prefix, _RouteMonitor
    from netrig.lab.network import Network
    from netrig.topo.load import loads

    needs_root()
    topo = loads(SCENARIO.split("duration:")[0].replace("topology:\n", "").replace("\n  ", "\n"),
                 source="t.yaml")
    with Network(topo, prefix=_lab_prefix() + "m") as net:
        mon = _RouteMonitor(net, ["r1", "r2"])
        mon.start()
        time.sleep(0.3)  # the monitors listen
        t0 = time.time()
        net["r1"].run("ip route add blackhole 10.77.0.0/24")
        time.sleep(0.2)
        net["r2"].run("ip route add blackhole 10.78.0.0/24; ip route del blackhole 10.78.0.0/24")
        time.sleep(0.3)
        changes = mon.stop(t0)
        procs = list(mon.procs.values())
    assert [(c["router"], c["change"], c["route"].split()[1]) for c in changes] == [
        ("r1", "add", "10.77.0.0/24"), ("r2", "add", "10.78.0.0/24"), ("r2", "delete", "10.78.0.0/24")]
    assert 0 <= changes[0]["t"] < 0.2 <= changes[1]["t"] < 1.0
    assert all(p.poll() is not None for p in procs)
