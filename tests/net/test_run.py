"""`netrig run` when things go wrong, for real: SIGTERM mid-sweep (network torn down,
results kept, `--resume` finishes only what is missing), a flow that fails, a peer
that cannot be reached, and a stranger at a flow's server (refused by its key)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from netlab import needs_root
from netrig import binary

pytestmark = pytest.mark.net

SWEEP = """\
name: resumable
topology:
  nodes: {h1: host, h2: host}
  links:
    - {a: h1, b: h2, rate: 20Mbit, delay: 2ms, queue: 50}
duration: 2s
settle: 0s
flows:
  bulk: {kind: tcp, from: h1, to: h2, cc: cubic}
sweep:
  links.h1-h2.rate: [10Mbit, 20Mbit, 30Mbit]
"""


def netrig(*args: str, **kw) -> subprocess.Popen:
    needs_root()
    return subprocess.Popen([sys.executable, "-m", "netrig", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def run_json(out: Path, run: str) -> dict:
    return json.loads((out / "runs" / run / "run.json").read_text())


def lab_of(pid: int) -> str:
    return f"nx{pid % 100000}"


def namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_sigterm_mid_sweep_keeps_results_and_resume_runs_only_the_rest(tmp_path):
    (tmp_path / "s.yaml").write_text(SWEEP)
    out = tmp_path / "r"
    p = netrig("run", str(tmp_path / "s.yaml"), "--out", str(out), "-q")
    first = out / "runs" / "p000-r00" / "run.json"
    deadline = time.monotonic() + 60
    while not first.exists():
        assert p.poll() is None, p.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "the first run never finished"
        time.sleep(0.05)
    time.sleep(0.5)  # into the second run
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143, err[-2000:]  # SIGTERM
    assert "--resume" in err
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "interrupted"
    assert run_json(out, "p000-r00")["status"] == "ok"
    assert (out / "results.csv").exists() and (out / "report.html").exists()
    assert lab_of(p.pid) not in namespaces()  # torn down
    assert not Path(f"/run/netrig/labs/{lab_of(p.pid)}").exists()
    kept = first.stat().st_mtime_ns

    p2 = netrig("run", "--resume", str(out), "-q")
    _, err2 = p2.communicate(timeout=120)
    assert p2.returncode == 0, err2[-2000:]
    assert first.stat().st_mtime_ns == kept  # the finished run was not run again
    runs = [run_json(out, f"p00{i}-r00") for i in range(3)]
    assert [r["status"] for r in runs] == ["ok", "ok", "ok"]
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete" and len(meta["resumed"]) == 1
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["links.h1-h2.rate"] for r in rows] == ["10Mbit", "20Mbit", "30Mbit"]
    assert all(0.85 < float(r["ratio"]) < 1.1 for r in rows), rows


def test_a_failing_flow_and_an_unreachable_peer_are_reported_and_the_rest_kept(tmp_path):
    (tmp_path / "s.yaml").write_text("""\
name: failing
topology:
  nodes: {h1: host, h2: host, h3: host, s1: switch}
  links:
    - [h1, s1]
    - [h2, s1]
    - {a: s1, b: h3, a_to_b: {loss: 100%}}
duration: 2s
flows:
  good: {kind: tcp, from: h1, to: h2}
  broken: {kind: command, from: h1, command: "echo oops >&2; exit 3"}
  dark: {kind: tcp, from: h1, to: h3}
""")
    out = tmp_path / "r"
    p = netrig("run", str(tmp_path / "s.yaml"), "--out", str(out), "-q")
    _, err = p.communicate(timeout=120)
    assert p.returncode == 1, err[-2000:]
    assert "broken" in err and "dark" in err  # named on the console
    run = run_json(out, "p000-r00")
    flows = run["flows"]
    assert flows["good"]["summary"]["status"] == "ok"
    assert flows["good"]["summary"]["throughput_bps"] > 1e6
    assert flows["broken"]["summary"]["status"] == "error"
    assert flows["broken"]["summary"]["exit_code"] == 3
    assert "oops" in (out / "runs" / "p000-r00" / "flows" / "broken.stderr").read_text()
    dark = flows["dark"]["summary"]  # a time-out, a result: theory says it is certain
    assert dark["status"] == "timed_out" and dark["connected"] is False, dark
    assert "never connected" in dark["error"] and dark["throughput_bps"] == 0
    assert flows["dark"]["expected"]["limit"] == "time-out"
    assert json.loads((out / "meta.json").read_text())["status"] == "failed"
    assert (out / "report.html").exists()
    assert lab_of(p.pid) not in namespaces()
    assert os.path.exists(out / "results.csv")


def test_a_long_rtt_connects_within_its_connect_timeout_and_a_dark_peer_times_out(tmp_path):
    # RTT 3.2 s: past Linux's 3 s of ARP requests (the runner lets nodes ask longer), and
    # past the default 5 s connect timeout once ARP's round trip is added: the flow's own
    # connect_timeout lets it connect. h3 is behind 100 % loss: a time-out, not a failure.
    (tmp_path / "s.yaml").write_text("""\
name: patient
topology:
  nodes: {h1: host, h2: host, h3: host, s1: switch}
  links:
    - [h1, s1]
    - {a: s1, b: h2, delay: 1600ms}
    - {a: s1, b: h3, a_to_b: {loss: 100%}}
duration: 2s
settle: 0s
flows:
  far: {kind: tcp, from: h1, to: h2, window: 64KB, connect_timeout: 10s}
  dark: {kind: tcp, from: h1, to: h3}
""")
    out = tmp_path / "r"
    p = netrig("run", str(tmp_path / "s.yaml"), "--out", str(out), "-q")
    _, err = p.communicate(timeout=150)
    assert p.returncode == 0, err[-2000:]  # complete: a time-out is a result
    assert "dark timed out" in err
    run = run_json(out, "p000-r00")
    far, dark = run["flows"]["far"], run["flows"]["dark"]
    assert far["summary"]["status"] == "ok" and far["summary"]["bytes"] > 0, far["summary"]
    assert run["routing"]["neighbour_solicit"] == 7  # 3 + the link's 3.2 s
    assert dark["summary"]["status"] == "timed_out" and dark["summary"]["connected"] is False
    assert dark["expected"]["value"] == 0 and dark["expected"]["limit"] == "time-out"
    assert json.loads((out / "meta.json").read_text())["status"] == "complete"
    with open(out / "results.csv") as f:
        rows = {r["flow"]: r for r in csv.DictReader(f)}
    assert rows["dark"]["status"] == "timed_out" and rows["dark"]["verdict"] == "within"
    assert lab_of(p.pid) not in namespaces()


FLOW_SERVER = """\
name: keyed
topology:
  nodes: {h1: host, h2: host}
  links:
    - {a: h1, b: h2, rate: 20Mbit, delay: 2ms}
duration: 2s
settle: 0s
flows:
  bulk: {kind: tcp, from: h1, to: h2, start: 4s}
"""


def test_a_flows_server_in_a_lab_serves_only_its_flow(tmp_path):
    """The lab's server for the flow: a fresh key in its environment (on no command
    line), bound to h2's address, with an end of its own; a stranger on h1 without the
    key, with a wrong one, or on h2's loopback is refused, and the flow runs (main: the
    stranger's test was the one-off server's one test; the flow then found nothing)."""
    (tmp_path / "s.yaml").write_text(FLOW_SERVER)
    out = tmp_path / "r"
    p = netrig("run", str(tmp_path / "s.yaml"), "--out", str(out), "-q")
    try:
        deadline = time.monotonic() + 60
        server = None
        while server is None:
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            for d in Path("/proc").iterdir():
                if d.name.isdigit():
                    try:
                        argv = (d / "cmdline").read_bytes().split(b"\0")
                        ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                    except (OSError, IndexError, ValueError):
                        continue
                    if ppid == p.pid and argv[0].endswith(b"netrig-perf") and b"-s" in argv:
                        server = int(d.name)
            time.sleep(0.05)
        argv = [x.decode() for x in Path(f"/proc/{server}/cmdline").read_bytes().split(b"\0") if x]
        env = dict(x.decode().partition("=")[::2] for x in Path(f"/proc/{server}/environ").read_bytes().split(b"\0")
                   if x)
        key, addr, port = env.get("NETRIG_PERF_KEY", ""), argv[argv.index("-B") + 1], argv[argv.index("-p") + 1]
        assert len(key) == 64 and "--exit-after" in argv, (argv, key)
        assert all(key.encode() not in (d / "cmdline").read_bytes() for d in Path("/proc").iterdir()
                   if d.name.isdigit() and (d / "cmdline").exists())
        while not listening(server, int(port)):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        perf = str(binary("netrig-perf"))
        plain = {k: v for k, v in os.environ.items() if k != "NETRIG_PERF_KEY"}
        h1, h2 = f"{lab_of(p.pid)}-h1", f"{lab_of(p.pid)}-h2"
        for ns, target, env, said in ((h1, addr, plain, "requires a key"),
                                      (h1, addr, {**plain, "NETRIG_PERF_KEY": "guess"}, "wrong key"),
                                      (h2, "127.0.0.1", plain, "Connection refused")):
            r = subprocess.run(["ip", "netns", "exec", ns, perf, "-c", target, "-p", port, "-t", "1"],
                               capture_output=True, text=True, env=env, timeout=20)
            assert r.returncode == 1 and said in r.stderr, (ns, target, r.stderr)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err[-2000:]
    bulk = run_json(out, "p000-r00")["flows"]["bulk"]["summary"]
    assert bulk["status"] == "ok" and bulk["throughput_bps"] > 1e6, bulk


def listening(pid: int, port: int) -> bool:
    want = f":{port:04X}"
    try:
        lines = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return False
    return any(x.split()[1].endswith(want) and x.split()[3] == "0A" for x in lines)
