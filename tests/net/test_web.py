"""The web flow for real: nginx in h2, curl in h1, through a link netrig-link emulates
(10 Mbit/s, 20 ms each way). HTTP/1.1 with a new connection per fetch, HTTP/1.1
keep-alive, HTTP/2 (cleartext, new connections) and HTTP/2 over TLS kept alive: every
fetch got the whole object in the HTTP version asked for, keep-alive opened one
connection and new_conn one per fetch, the mean fetch time lies within a generous band
of theory (0.7x to 2x: the host is noisy), and keep-alive's mean is below new
connections' by what theory says it saves: the handshake's round trip at least (and,
when the server's congestion control keeps its window over the idle gap, as BBR does,
slow start's rounds too). The checks fail on a server that serves the wrong size, and a
run stopped mid-way leaves no nginx behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from netlab import needs_root
from netrig import safefs
from netrig.exp.execute import webserver
from netrig.exp.execute.runner import run_one
from netrig.exp.spec.scenario import loads_scenario

pytestmark = pytest.mark.net

TOPOLOGY = """\
name: web
topology:
  nodes: {h1: host, h2: host}
  links:
    - {a: h1, b: h2, rate: 10Mbit, delay: 20ms, queue: 100}
duration: 6s
settle: 0s
tolerance: 20%
flows:
"""
# One after the other (none shares the link with another), five fetches each, 1.2 s
# apart: long enough for Linux to take a kept-alive connection's window back to IW10
# under a loss-based congestion control (theory says which in its detail).
FLOWS = """\
  new: {kind: web, from: h1, to: h2, size: 100KB, interval: 1200ms, start: 0s}
  keep: {kind: web, from: h1, to: h2, size: 100KB, interval: 1200ms, new_conn: false, start: 6.5s}
  h2c: {kind: web, from: h1, to: h2, size: 100KB, interval: 1200ms, http: 2, start: 13s}
  h2tls: {kind: web, from: h1, to: h2, size: 100KB, interval: 1200ms, http: 2, tls: true, new_conn: false,
          start: 19.5s}
"""
FETCHES = 5


def run(tmp: Path, flows: str) -> tuple[Path, dict]:
    needs_root()
    scen = loads_scenario(TOPOLOGY + flows, str(tmp / "web.yaml"))
    doc = run_one(scen.points[0], 0, 1, tmp, "r")
    return tmp / "runs" / "r", doc


def fetches(rdir: Path, name: str) -> list[dict]:
    return [json.loads(x) for x in (rdir / "flows" / f"{name}.jsonl").read_text().splitlines()]


def check_fetches(rdir: Path, doc: dict, name: str, http: str, new_conn: bool) -> dict:
    """Every fetch of the flow got the object whole, in the version asked for, over as
    many connections as it should; returns its summary."""
    got = fetches(rdir, name)
    s = doc["flows"][name]["summary"]
    assert len(got) == FETCHES, (name, got)
    assert [x["size_download"] for x in got] == [100_000] * FETCHES, (name, s)
    assert [(x["response_code"], x["exitcode"]) for x in got] == [(200, 0)] * FETCHES, (name, got)
    assert {x["http_version"] for x in got} == {http}, (name, got)
    assert [x["num_connects"] for x in got] == ([1] * FETCHES if new_conn else [1] + [0] * (FETCHES - 1))
    assert s["status"] == "ok" and s["fetches_failed"] == 0 and s["connections"] == (FETCHES if new_conn else 1)
    return s


def test_http_1_1_2_and_keep_alive_fetch_the_object_as_theory_expects(tmp_path):
    rdir, doc = run(tmp_path, FLOWS)
    assert doc["status"] == "ok", doc.get("error")
    means = {}
    for name, http, new_conn in (("new", "1.1", True), ("keep", "1.1", False), ("h2c", "2", True),
                                 ("h2tls", "2", False)):
        s = check_fetches(rdir, doc, name, http, new_conn)
        e = doc["flows"][name]["expected"]
        assert e["metric"] == "fetch_s_mean" and e["limit"] == "idle path", e
        assert 0.7 * e["value"] <= s["fetch_s_mean"] <= 2 * e["value"], (name, s, e["detail"])
        # the first byte: after the handshake(s) and the request's round trip
        assert 0.7 * e["extra"]["first_byte_s"] <= s["first_byte_s_mean"] <= 2 * e["extra"]["first_byte_s"]
        means[name] = s["fetch_s_mean"]
    # keep-alive saves the handshake, about one RTT, on every fetch after the first (and
    # slow start's rounds if the window survives the gap): what theory says, give or take
    rtt = doc["flows"]["new"]["expected"]["extra"]["base_rtt_ms"] / 1e3
    saved = means["new"] - means["keep"]
    expected = doc["flows"]["new"]["expected"]["value"] - doc["flows"]["keep"]["expected"]["value"]
    assert expected >= 0.75 * rtt, doc["flows"]["keep"]["expected"]["detail"]
    assert 0.4 * rtt < saved and 0.5 * expected < saved < 2 * expected, (means, rtt, expected)
    # nginx logged every request, one connection for the kept-alive flows' five
    log = (rdir / "web-h2" / "access.log").read_text().splitlines()
    assert len(log) == 4 * FETCHES and all('" 200 100000 ' in line for line in log), log
    series = [json.loads(x) for x in (rdir / "series" / "keep.jsonl").read_text().splitlines()]
    starts = [r["t"] for r in series]
    assert [r["new_conn"] for r in series] == [True] + [False] * (FETCHES - 1)
    # curl's --rate started them 1.2 s apart (each fetch takes ~0.2 s: none was late)
    assert all(1.1 < b - a < 1.3 for a, b in zip(starts, starts[1:])), starts


def test_the_checks_fail_on_a_server_that_serves_the_wrong_size(tmp_path, monkeypatch):
    """Not vacuous: an nginx whose object is a byte short fails the flow's checks (the
    runner, in this process, writes the objects through webserver.object_bytes)."""
    real = webserver.object_bytes
    monkeypatch.setattr(webserver, "object_bytes", lambda size: real(size)[:-1])
    rdir, doc = run(tmp_path, FLOWS.splitlines()[0].replace("start: 0s", "start: 0s, duration: 6s") + "\n")
    s = doc["flows"]["new"]["summary"]
    assert s["fetches_failed"] == FETCHES and s["status"] == "error"
    assert "got 99999 bytes, not the object's 100000" in s["error"]
    with pytest.raises(AssertionError):
        check_fetches(rdir, doc, "new", "1.1", True)


def nginx_of(lab: str) -> list[str]:
    """Processes whose command line names the lab's directory (its nginx's config)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if f"/labs/{lab}/" in cmd:
                out.append(f"{entry}: {cmd}")
    return out


def start_serving(tmp: Path) -> tuple[subprocess.Popen, str, Path]:
    """`netrig run` of a 30 s keep-alive web flow, once nginx has served 3 fetches: the
    process, its lab's prefix and the results directory."""
    needs_root()
    (tmp / "s.yaml").write_text(TOPOLOGY.replace("duration: 6s", "duration: 30s")
                                + "  page: {kind: web, from: h1, to: h2, interval: 500ms, new_conn: false}\n")
    out = tmp / "r"
    p = subprocess.Popen([sys.executable, "-m", "netrig", "run", str(tmp / "s.yaml"), "--out", str(out), "-q"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = out / "runs" / "p000-r00" / "web-h2" / "access.log"
    deadline = time.monotonic() + 60
    while not (log.exists() and log.read_text().count("\n") >= 3):  # nginx serving, curl fetching
        assert p.poll() is None, p.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "nginx never served a fetch"
        time.sleep(0.05)
    return p, f"nx{p.pid % 100000}", out


def test_a_run_stopped_mid_way_leaves_no_nginx(tmp_path):
    p, lab, out = start_serving(tmp_path)
    assert nginx_of(lab)  # it runs now, and is found by its lab's directory
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143, err[-2000:]  # SIGTERM
    assert nginx_of(lab) == []
    assert not Path(f"/run/netrig/labs/{lab}").exists()
    page = json.loads((out / "runs" / "p000-r00" / "run.json").read_text())["flows"]["page"]["summary"]
    assert page["fetches"] >= 2 and page["fetches_failed"] == 0  # what it fetched before, kept


def test_stop_ends_a_worker_that_outlived_its_master(tmp_path):
    """nginx's worker goes on serving when its master is killed (SIGKILL): stop() ends
    it by the PID (and start time) it recorded."""
    needs_root()
    ns = f"nrtw{os.getpid() % 100000}"
    run = Path(tempfile.mkdtemp(prefix="netrig-test-", dir="/run"))  # www-data must reach the objects
    w = webserver.WebServer("h2", ns, tmp_path / "lab", run / "www" / "lab" / "h2", safefs.Held(tmp_path / "logs"),
                            {1000})
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        w.start()
        assert w.proc is not None and len(w.workers) == 1, w.pids()
        os.kill(w.proc.pid, signal.SIGKILL)
        w.proc.wait(timeout=5)
        (worker,) = w.workers
        assert webserver._start_time(worker) is not None  # still there, orphaned
        w.stop()
        deadline = time.monotonic() + 5
        while webserver._start_time(worker) is not None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert webserver._start_time(worker) is None
    finally:
        for pid, started in w.workers.items():  # whatever happened above: none left
            if webserver._start_time(pid) == started:
                os.kill(pid, signal.SIGKILL)
        subprocess.run(["ip", "netns", "del", ns], check=False)
        w.logs.close()
        shutil.rmtree(run)


def test_netrig_down_ends_the_nginx_of_a_killed_run(tmp_path):
    """A run killed outright (SIGKILL) cannot stop anything; `netrig down` of its lab
    (what `netrig clean` does to every lab whose builder died) ends its nginx with the
    rest of the lab, and leaves no lab directory behind."""
    p, lab, _ = start_serving(tmp_path)
    try:
        p.kill()
        p.communicate(timeout=30)
        assert nginx_of(lab)  # orphaned
        d = subprocess.run([sys.executable, "-m", "netrig", "down", "--prefix", lab], capture_output=True,
                           text=True, timeout=120)
        assert d.returncode == 0, d.stderr[-2000:]
        assert nginx_of(lab) == []
        assert not Path(f"/run/netrig/labs/{lab}").exists()
    finally:
        if Path(f"/run/netrig/labs/{lab}/state.json").exists():
            subprocess.run([sys.executable, "-m", "netrig", "down", "--prefix", lab], capture_output=True,
                           timeout=120)
