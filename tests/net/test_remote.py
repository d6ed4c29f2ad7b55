"""Scenarios on real hosts over SSH, for real: two namespaces stand for two machines,
each with its own OpenSSH server (tests/net/sshlab.py), joined to the head through a
bridge; key authentication. `netrig run` (the CLI) runs a TCP flow, a ping and a probe
between them with theory from the declared path, `netrig report` shows the hosts and
the idle measurement; netrig-perf missing on a host is copied there; a host that is
down and a wrong key fail at their step, naming the host, in bounded time; a flow's
server serves only its flow (a key in its environment, its flow's address, an end of its
own) and a copied netrig-perf changed on its host is noticed (issue 24)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sshlab

pytestmark = pytest.mark.net

BIN = Path(os.environ.get("NETRIG_BIN_DIR") or Path(sys.executable).parent)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = sshlab.make(tmp_path_factory.mktemp("sshlab"))
    lab.shape("a", "20mbit")  # a's way out: the path's bottleneck, 20 Mbit/s
    yield lab
    lab.close()


def scenario(lab, tmp: Path, a: str | None = None, b: str | None = None, flows: str = "", **kw) -> Path:
    text = "\n".join([
        "name: real",
        "hosts:",
        f"  a: {a or lab.host_yaml('a')}",
        f"  b: {b or lab.host_yaml('b')}",
        "path: {rate: 20Mbit, rtt: 1ms}",
        f"clocks: {kw.get('clocks', 'unknown')}",
        f"duration: {kw.get('duration', '3s')}",
        "settle: 0s",
        "flows:",
        flows or "  bulk: {kind: tcp, from: a, to: b}",
        ""])
    path = tmp / "real.yaml"
    path.write_text(text)
    return path


def netrig(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netrig", *args], capture_output=True, text=True,
                          timeout=timeout)


def server_pid(out: Path, p: subprocess.Popen) -> int:
    """The remote PID of the first run's bulk server, once its log names it (within 30 s;
    `p`, the netrig run, still going)."""
    log = out / "runs" / "p000-r00" / "server-bulk.log"
    deadline = time.monotonic() + 30
    while not (log.exists() and "netrig-pid" in log.read_text()):
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.05)
    return int(log.read_text().split("netrig-pid ")[1].split()[0])


def run_json(out: Path) -> dict:
    (path,) = (out / "runs").glob("*/run.json")
    return json.loads(path.read_text())


def test_flows_between_real_hosts_run_from_the_cli_beside_the_declared_theory(lab, tmp_path):
    # netrig-perf on both hosts' PATH: found there, not copied
    for name in ("a", "b"):
        lab.start_sshd(name, f"{BIN}:/usr/bin:/bin")
    flows = ("  bulk: {kind: tcp, from: a, to: b}\n"
             "  rtt: {kind: ping, from: a, to: b, interval: 200ms}\n"
             "  owd: {kind: probe, from: b, to: a, interval: 50ms}")
    out = tmp_path / "out"
    r = netrig("run", str(scenario(lab, tmp_path, flows=flows)), "--out", str(out), "-q")
    assert r.returncode == 0, r.stderr + r.stdout
    doc = run_json(out)
    assert doc["status"] == "ok", doc.get("error")
    bulk = doc["flows"]["bulk"]
    assert bulk["summary"]["status"] == "ok"
    # theory from the declared 20 Mbit/s path; a's tbf holds the flow to it
    assert bulk["expected"]["value"] == pytest.approx(20e6 * 1448 / 1514, rel=0.01)
    assert bulk["expected"]["limit"] == "link"
    assert 0.7 < bulk["expected"]["ratio"] < 1.1, bulk["expected"]
    assert doc["flows"]["rtt"]["summary"]["rtt_ms_p50"] is not None
    assert doc["flows"]["owd"]["summary"]["status"] == "ok"
    assert "owd_up_ms_p50" not in doc["flows"]["owd"]["summary"]  # clocks: unknown
    rem = doc["remote"]
    assert rem["path"] == {"rate": "20Mbit", "rtt": "1ms", "loss": "0%"} and rem["clocks"] == "unknown"
    for name in ("a", "b"):
        h = rem["hosts"][name]
        assert h["perf"] == str(BIN / "netrig-perf") and "perf_copied" not in h
        assert h["kernel"].startswith("Linux") and h["machine"] == os.uname().machine
    idle = {(x["from"], x["to"]): x for x in rem["idle"]}
    assert set(idle) == {("a", "b"), ("b", "a")}
    assert all(x["received"] == x["sent"] == 15 and x["rtt_ms_avg"] < 50 for x in idle.values()), idle
    assert rem["theory_rtt_ms"]["a>b"] == pytest.approx(1.08, abs=0.01)
    meta = json.loads((out / "meta.json").read_text())  # the hosts as declared
    assert meta["hosts"]["b"]["ssh"].endswith(lab.addr("b")) and meta["clocks"] == "unknown"
    assert meta["path"]["rate"] == "20Mbit"
    # the files a local run writes, and the report reads them
    assert (out / "runs" / doc["run"] / "flows" / "bulk.json").exists()
    assert (out / "results.csv").exists()
    r = netrig("report", str(out))
    assert r.returncode == 0, r.stderr
    md = (out / "report.md").read_text()
    assert "## Real hosts" in md and "root@" + lab.addr("b") + ":2222" in md
    assert "a → b (" + lab.addr("b") + ")" in md and "1.08 ms" in md
    assert "One-way delays not shown: the clocks of a and b are not known to agree (clocks: unknown)" in md
    # nothing left running on the hosts: each server (its PID as it said it) has ended
    for log in (out / "runs" / doc["run"]).glob("server-*.log"):
        pid = int(log.read_text().split("netrig-pid ")[1].split()[0])
        assert not Path(f"/proc/{pid}").exists() or "netrig-perf" not in Path(f"/proc/{pid}/cmdline").read_text()


def test_netrig_perf_missing_on_a_host_is_copied_there_then_the_flow_runs(lab, tmp_path):
    for name in ("a", "b"):
        lab.start_sshd(name, "/usr/bin:/bin")  # no netrig-perf on the PATH
    cache = lab.home("b") / ".cache" / "netrig"
    for p in cache.glob("netrig-perf-*"):
        p.unlink()
    out = tmp_path / "out"
    flows = "  bulk: {kind: tcp, from: a, to: b}\n  owd: {kind: probe, from: a, to: b, interval: 50ms}"
    r = netrig("run", str(scenario(lab, tmp_path, flows=flows, clocks="synced", duration="2s")),
               "--out", str(out), "-q")
    assert r.returncode == 0, r.stderr + r.stdout
    doc = run_json(out)
    assert doc["status"] == "ok" and doc["flows"]["bulk"]["summary"]["throughput_bps"] > 1e6
    (copied,) = cache.glob("netrig-perf-*")
    assert os.access(copied, os.X_OK)
    assert doc["remote"]["hosts"]["b"]["perf"] == str(copied) and doc["remote"]["hosts"]["b"]["perf_copied"] == "yes"
    # the clocks are one (namespaces of one machine), declared synced: one-way delays shown
    s = doc["flows"]["owd"]["summary"]
    assert s["owd_up_ms_p50"] is not None and s["owd_down_ms_p50"] is not None
    assert s["owd_up_ms_p50"] + s["owd_down_ms_p50"] == pytest.approx(s["rtt_ms_p50"], abs=2.0)
    assert "one-way out (p50)" in (out / "report.md").read_text()


def test_a_host_that_is_down_fails_the_run_at_connect_naming_it(lab, tmp_path):
    out = tmp_path / "out"
    t = time.monotonic()
    r = netrig("run", str(scenario(lab, tmp_path, b=lab.host_yaml("b", addr=lab.down_addr))),
               "--out", str(out), "-q")
    took = time.monotonic() - t
    assert r.returncode == 1
    doc = run_json(out)
    want = f"host b (root@{lab.down_addr}:2222): connect: ssh: connect to host {lab.down_addr} port 2222: "
    assert doc["status"] == "failed" and doc["error"].startswith(want), doc.get("error")
    assert doc["error"].endswith(f"— is b up, and is {lab.down_addr} its address?")
    assert doc["remote"]["failed"] == {"host": "b", "step": "connect"}
    assert want in r.stderr
    assert took < 2 + 5 + 15  # the connect timeout (2 s) and its slack, and netrig's start and report


def test_a_wrong_key_fails_the_run_at_authenticate(lab, tmp_path):
    out = tmp_path / "out"
    r = netrig("run", str(scenario(lab, tmp_path, a=lab.host_yaml("a", key=lab.wrong_key))),
               "--out", str(out), "-q")
    assert r.returncode == 1
    doc = run_json(out)
    assert doc["status"] == "failed" and doc["remote"]["failed"] == {"host": "a", "step": "authenticate"}
    assert doc["error"].startswith(f"host a (root@{lab.addr('a')}:2222): authenticate: root@{lab.addr('a')}: "
                                   "Permission denied (publickey). — is the key "), doc["error"]


def test_a_host_lost_mid_run_fails_that_run_and_the_campaign_goes_on(lab, tmp_path):
    """b's SSH sessions are cut while the flow runs (its sshd's session processes killed,
    by PID): that run is failed, naming b; the next repetition runs."""
    for name in ("a", "b"):
        lab.start_sshd(name, f"{BIN}:/usr/bin:/bin")
    path = scenario(lab, tmp_path, duration="4s")
    path.write_text(path.read_text() + "repeat: 2\n")
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "-m", "netrig", "run", str(path), "--out", str(out), "-q"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    orphan = None
    try:
        orphan = server_pid(out, p)
        time.sleep(1.0)  # the flow is running
        sessions = subprocess.run(["pgrep", "-P", str(lab.sshd["b"].pid)], capture_output=True,
                                  text=True).stdout.split()
        assert sessions
        for pid in sessions:
            os.kill(int(pid), 9)
        stdout, stderr = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if orphan is not None:  # b's server, if it outlived its session
            try:
                os.kill(orphan, 15)
            except ProcessLookupError:
                pass
    assert p.returncode == 1, stderr
    runs = {r: json.loads((out / "runs" / r / "run.json").read_text()) for r in ("p000-r00", "p000-r01")}
    first = runs["p000-r00"]
    assert first["status"] == "failed"
    assert first["error"].startswith(f"host b (root@{lab.addr('b')}:2222): "), first["error"]
    assert first["remote"]["failed"]["host"] == "b"
    assert "is it still up?" in first["error"]
    assert runs["p000-r01"]["status"] == "ok", runs["p000-r01"].get("error")
    assert runs["p000-r01"]["flows"]["bulk"]["summary"]["status"] == "ok"


def flow_server(pid: int) -> tuple[list[str], str]:
    """A flow server's command line and the key in its environment (issue 24: the key
    travels on ssh's standard input into the environment, never on a command line)."""
    argv = [x.decode() for x in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if x]
    env = dict(x.decode().partition("=")[::2] for x in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if x)
    return argv, env.get("NETRIG_PERF_KEY", "")


def on_no_command_line(secret: str) -> list[int]:
    """The processes of this machine whose command line holds `secret`."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if secret.encode() in (d / "cmdline").read_bytes():
                    found.append(int(d.name))
            except OSError:
                pass
    return found


def test_a_flows_server_serves_only_its_flow(lab, tmp_path):
    """b's server for the flow has a fresh key in its environment (on no command line,
    neither ssh's here nor the remote shell's), listens on b's flow address only, and
    ends by itself; strangers (no key, a wrong key, iperf3; from the head, and from b
    itself to its loopback) are refused and the flow, 5 s later, runs (main: no key, the
    stranger's test was the one-off server's one test, and the flow found nothing)."""
    for name in ("a", "b"):
        lab.start_sshd(name, f"{BIN}:/usr/bin:/bin")
    out = tmp_path / "out"
    path = scenario(lab, tmp_path, flows="  bulk: {kind: tcp, from: a, to: b, start: 5s}", duration="2s")
    p = subprocess.Popen([sys.executable, "-m", "netrig", "run", str(path), "--out", str(out), "-q"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = None
    try:
        log = out / "runs" / "p000-r00" / "server-bulk.log"
        deadline = time.monotonic() + 30
        pid = server_pid(out, p)
        while not sshlab.listening(pid, 5301):
            assert Path(f"/proc/{pid}").exists() and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        argv, key = flow_server(pid)
        assert len(key) == 64 and int(key, 16) >= 0, key
        assert on_no_command_line(key) == []
        assert argv[argv.index("-B") + 1] == lab.addr("b") and "--exit-after" in argv
        perf = str(BIN / "netrig-perf")
        plain = {k: v for k, v in os.environ.items() if k != "NETRIG_PERF_KEY"}
        strangers = [
            ([perf, "-c", lab.addr("b"), "-p", "5301", "-t", "1"], plain, "requires a key"),
            ([perf, "-c", lab.addr("b"), "-p", "5301", "-t", "1"], {**plain, "NETRIG_PERF_KEY": "guess"}, "wrong key"),
            (["ip", "netns", "exec", lab.ns["b"], perf, "-c", "127.0.0.1", "-p", "5301", "-t", "1"], plain,
             "Connection refused"),
        ]
        if shutil.which("iperf3"):
            strangers.append((["iperf3", "-c", lab.addr("b"), "-p", "5301", "-t", "1"], plain, "error"))
        for cmd, env, said in strangers:
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=20)
            assert r.returncode == 1 and said in r.stdout + r.stderr, (cmd, r.stdout, r.stderr)
        assert Path(f"/proc/{pid}").exists()  # still waiting for its flow
        _, stderr = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if pid is not None and b"netrig-perf" in (Path(f"/proc/{pid}/cmdline").read_bytes()
                                                 if Path(f"/proc/{pid}").exists() else b""):
            os.kill(pid, 15)  # b's server, if the run was killed before it stopped it
    assert p.returncode == 0, stderr
    doc = run_json(out)
    assert doc["status"] == "ok", doc.get("error")
    assert doc["flows"]["bulk"]["summary"]["status"] == "ok"
    assert doc["flows"]["bulk"]["summary"]["throughput_bps"] > 1e6


def test_a_copy_of_netrig_perf_changed_on_the_host_is_noticed_by_the_next_run(lab, tmp_path):
    """b's copy is replaced by a script that records it ran and then runs the real
    netrig-perf (a tampered copy that works): the next run checks the copy's SHA-256
    before running it (even for --version), copies it again, and says so in run.json
    (main: checked by --version only, the script ran every server)."""
    for name in ("a", "b"):
        lab.start_sshd(name, "/usr/bin:/bin")  # no netrig-perf on the PATH: copied
    r = netrig("run", str(scenario(lab, tmp_path, duration="1s")), "--out", str(tmp_path / "first"), "-q")
    assert r.returncode == 0, r.stderr + r.stdout
    (copied,) = (lab.home("b") / ".cache" / "netrig").glob("netrig-perf-*")
    marker = lab.home("b") / "tampered-copy-ran"
    marker.unlink(missing_ok=True)
    copied.write_text(f'#!/bin/sh\ntouch {marker}\nexec {BIN / "netrig-perf"} "$@"\n')
    out = tmp_path / "second"
    r = netrig("run", str(scenario(lab, tmp_path, duration="1s")), "--out", str(out), "-q")
    assert r.returncode == 0, r.stderr + r.stdout
    doc = run_json(out)
    b = doc["remote"]["hosts"]["b"]
    assert b["perf"] == str(copied) and "not this build's" in b.get("perf_recopied", ""), b
    assert not marker.exists()
    digest = hashlib.sha256((BIN / "netrig-perf").read_bytes()).hexdigest()
    assert hashlib.sha256(copied.read_bytes()).hexdigest() == digest
    assert doc["flows"]["bulk"]["summary"]["status"] == "ok"
