"""State you can trust, on real labs: `link set` acts on the lab's own topology file
from any directory and refuses it once edited; `status` exits non-zero and names a dead
netrig-link; a run whose netrig-link dies mid-run is recorded failed and `--resume`
runs it again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from netlab import needs_root
from netrig.lab.state import LABS_DIR

pytestmark = pytest.mark.net

TOPO = """\
name: trust
prefix: {prefix}
nodes: {{h1: host, h2: host, r1: router}}
links:
  - {{a: h1, b: r1, rate: 30Mbit, delay: 1ms}}
  - {{a: h2, b: r1, rate: 20Mbit, delay: 1ms}}
"""
DECOY = """\
name: decoy
nodes: {h1: host, r1: router, h9: host}
links:
  - {a: h9, b: r1}
  - {a: h1, b: r1, rate: 1Mbit}
"""
SCENARIO = """\
name: emudies
topology:
  nodes: {h1: host, h2: host}
  links:
    - {a: h1, b: h2, rate: 20Mbit, delay: 2ms}
duration: 4s
settle: 0s
flows:
  p: {kind: ping, from: h1, to: h2}
"""


def netrig(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netrig", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def lab_state(prefix: str) -> dict:
    return json.loads((LABS_DIR / prefix / "state.json").read_text())


def test_link_set_uses_the_labs_own_file_and_status_names_a_dead_emulator(tmp_path):
    needs_root()
    prefix = f"stt{os.getpid() % 100000}"
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    (home / "lab.yaml").write_text(TOPO.format(prefix=prefix))
    (elsewhere / "lab.yaml").write_text(DECOY)  # same name, another topology
    try:
        up = netrig("up", "lab.yaml", "-q", cwd=home)  # the path as typed is relative
        assert up.returncode == 0, up.stderr
        st = netrig("status", "--prefix", prefix)
        assert st.returncode == 0, (st.stdout, st.stderr)

        # From another directory holding another lab.yaml: the lab's own file is used.
        s = netrig("link", "set", "--prefix", prefix, "h1", "r1", "delay=3ms", cwd=elsewhere)
        assert s.returncode == 0, s.stderr
        line = next(x for x in netrig("status", "--prefix", prefix).stdout.splitlines()
                    if x.strip().startswith("h1-r1"))
        assert "rate=30Mbit delay=3ms" in line, line  # not the decoy's 1Mbit

        # Edited since it was built: refused, saying which file and where.
        (home / "lab.yaml").write_text(TOPO.format(prefix=prefix).replace("rate: 20Mbit", "rate: 2Mbit"))
        s = netrig("link", "set", "--prefix", prefix, "h2", "r1", "delay=5ms", cwd=home)
        assert s.returncode == 1, (s.stdout, s.stderr)
        assert f"{home / 'lab.yaml'}, which has changed since" in s.stderr, s.stderr
        assert "line 6 was" in s.stderr and "rate: 2Mbit" in s.stderr, s.stderr
        assert f"netrig down --prefix {prefix}" in s.stderr and "Traceback" not in s.stderr

        # Its emulator killed: status exits non-zero and names it.
        pid = lab_state(prefix)["pids"]["netrig-link"]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while Path(f"/proc/{pid}/cmdline").exists() and Path(f"/proc/{pid}/cmdline").read_bytes() \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        st = netrig("status", "--prefix", prefix)
        assert st.returncode == 1, (st.stdout, st.stderr)
        assert f"DEAD: netrig-link (pid {pid}) is NOT RUNNING" in st.stdout, st.stdout
    finally:
        netrig("down", "--prefix", prefix)
    assert not (LABS_DIR / prefix).exists()


def test_a_run_whose_emulator_dies_is_failed_and_resume_runs_it_again(tmp_path):
    needs_root()
    (tmp_path / "s.yaml").write_text(SCENARIO)
    out = tmp_path / "r"
    p = subprocess.Popen([sys.executable, "-m", "netrig", "run", str(tmp_path / "s.yaml"), "--out", str(out),
                          "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    prefix = f"nx{p.pid % 100000}"
    try:
        deadline = time.monotonic() + 60
        pid = 0
        while not pid:
            assert p.poll() is None, p.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the run's lab never came up"
            try:
                pid = lab_state(prefix).get("pids", {}).get("netrig-link", 0)
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        time.sleep(1.0)  # into the run
        os.kill(pid, signal.SIGKILL)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 1, err[-2000:]
        run = json.loads((out / "runs" / "p000-r00" / "run.json").read_text())
        assert run["status"] == "failed", run
        assert f"netrig-link (pid {pid}) died during the run" in run["error"], run["error"]
        assert "SIGKILL" in run["error"] and "s into it" in run["error"], run["error"]
        assert run["emulator_died"]["pid"] == pid and run["emulator_died"]["noticed_s"] < 4 + 1, run
        assert "died during the run" in err, err[-2000:]

        again = subprocess.run([sys.executable, "-m", "netrig", "run", "--resume", str(out), "-q"],
                               capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr[-2000:]
        run = json.loads((out / "runs" / "p000-r00" / "run.json").read_text())
        assert run["status"] == "ok", run
        assert "emulator_died" not in run and "error" not in run, run
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
        if (LABS_DIR / prefix).exists():
            netrig("down", "--prefix", prefix)
