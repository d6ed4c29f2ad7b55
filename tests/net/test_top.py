"""`netrig top` in a pseudo-terminal at 80 columns on a lab carrying a 10 Mbit/s flow:
the loaded direction's delivered rate as `netrig status --json` counts it over the same
second, frames that fit, q and Ctrl-C quit (0) and SIGTERM ends it (143) with the
terminal restored, a pipe gets one plain frame, and the lab going away ends it with
exit 1."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pexpect
import pytest
from netlab import needs_root
from netrig import binary

pytestmark = pytest.mark.net

ESC = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
ROW = re.compile(r"^L1 h1→h2\s+([\d.]+)([kMG]?)/10M\s", re.M)
SCALE = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}


def netrig(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netrig", *args], capture_output=True, text=True,
                          timeout=timeout)


def frames(screen: str) -> list[str]:
    """The frames a pty received, as plain text (rich redraws each from the top-left)."""
    return [ESC.sub("", f).replace("\r", "") for f in screen.split("\x1b[H") if "L1 h1→h2" in f]


def shown_rate(frame: str) -> float:
    m = ROW.search(frame)
    assert m, frame
    return float(m.group(1)) * SCALE[m.group(2)]


def delivered(prefix: str) -> tuple[float, int]:
    """h1→h2's bytes delivered, and when by netrig-link's clock, as status says."""
    live = json.loads(netrig("status", "--prefix", prefix, "--json").stdout)["live"]["L1"]["a_to_b"]
    return live["t"], live["delivered_bytes"]


class Screen:
    """What a pty child writes, read as it comes by a thread of its own (a child
    that cannot write stalls: top must not wait on the test)."""

    def __init__(self, child: pexpect.spawn) -> None:
        self.child, self.text, self.done = child, "", False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while not self.done:
            try:
                self.text += self.child.read_nonblocking(1 << 16, timeout=0.05)
            except pexpect.TIMEOUT:
                pass
            except pexpect.EOF:
                self.done = True

    def wait_exit(self, timeout: float = 20) -> str:
        self.thread.join(timeout)
        assert self.done, self.text[-1500:]
        self.child.close()
        return self.text


def spawn_top(prefix: str) -> pexpect.spawn:
    # stty after top: the terminal's modes as top left them. The shell outlives a
    # Ctrl-C meant for top (a trap, not an ignore: top inherits no ignored SIGINT).
    cmd = f"trap : INT; {sys.executable} -m netrig top --prefix {prefix}; echo top-exit=$?; stty -a"
    return pexpect.spawn("/bin/sh", ["-c", cmd], dimensions=(24, 80), encoding="utf-8",
                         timeout=20, env=os.environ | {"TERM": "xterm-256color"})


def test_top_in_a_pty_against_status(tmp_path):
    needs_root()
    prefix = f"tpt{os.getpid() % 100000}"
    f = tmp_path / "two.yaml"
    f.write_text(json.dumps({"name": "two", "prefix": prefix, "nodes": {"h1": "host", "h2": "host"},
                             "links": [{"a": "h1", "b": "h2", "name": "L1", "rate": "10Mbit",
                                        "delay": "5ms"}]}))
    perf = str(binary("netrig-perf"))
    procs: list[subprocess.Popen] = []
    down = None
    try:
        up = netrig("up", str(f), "-q")
        assert up.returncode == 0, up.stderr
        procs.append(subprocess.Popen([sys.executable, "-m", "netrig", "exec", "--prefix", prefix,
                                       "h2", perf, "-s", "-1"], stdout=subprocess.DEVNULL))
        time.sleep(0.5)
        client = subprocess.Popen([sys.executable, "-m", "netrig", "exec", "--prefix", prefix,
                                   "h1", perf, "-c", "h2", "-t", "4"], stdout=subprocess.PIPE, text=True)
        procs.append(client)
        time.sleep(0.7)  # past slow start: the link is full
        top = Screen(spawn_top(prefix))
        piped = subprocess.Popen([sys.executable, "-m", "netrig", "top", "--prefix", prefix],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(piped)
        time.sleep(0.5)
        t0, b0 = delivered(prefix)
        time.sleep(0.6)
        t1, b1 = delivered(prefix)
        shown = frames(top.text)  # the last was drawn as status read its second count
        by_status = (b1 - b0) * 8 / (t1 - t0)
        assert len(shown) >= 4, top.text[-2000:]  # several a second
        assert all(len(line) <= 80 for fr in shown for line in fr.splitlines()), shown[-1]
        rate = shown_rate(shown[-1])
        assert 5e6 <= by_status <= 11e6, by_status  # the flow fills most of the link
        assert rate == pytest.approx(by_status, rel=0.2), (shown[-1], by_status)
        assert "lab " + prefix + " (two): 2 hosts; 1 link" in shown[-1]
        top.child.send("q")
        after = top.wait_exit()
        assert "top-exit=0" in after, after[-1500:]
        assert "\x1b[?1049l" in after and "\x1b[?25h" in after  # the screen and cursor back
        modes = after.split("top-exit=0", 1)[1]
        assert re.search(r"(?<!-)icanon", modes) and re.search(r"(?<![-\w])echo\b", modes), modes

        out, err = piped.communicate(timeout=20)
        assert piped.returncode == 0, err
        assert "\x1b" not in out and "q quits" not in out, out
        assert all(len(line) <= 80 for line in out.splitlines()), out
        assert shown_rate(out) >= 5e6, out  # one frame, with a second of samples
        assert client.wait(timeout=20) == 0

        for how, code in (("ctrl-c", 0), ("sigterm", 143)):  # each puts the terminal back
            quit_ = Screen(spawn_top(prefix))
            time.sleep(0.8)
            if how == "ctrl-c":
                quit_.child.sendintr()
            else:
                kids = Path(f"/proc/{quit_.child.pid}/task/{quit_.child.pid}/children").read_text()
                os.kill(int(kids.split()[0]), signal.SIGTERM)
            said = quit_.wait_exit()
            assert f"top-exit={code}" in said, (how, said[-1500:])
            modes = said.split(f"top-exit={code}", 1)[1]
            assert re.search(r"(?<!-)icanon", modes) and re.search(r"(?<![-\w])echo\b", modes), how

        gone = Screen(spawn_top(prefix))
        time.sleep(0.6)
        down = netrig("down", "--prefix", prefix)
        said = gone.wait_exit()
        assert "top-exit=1" in said, said[-1500:]
        assert f"lab '{prefix}' went away" in ESC.sub("", said)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if down is None:
            down = netrig("down", "--prefix", prefix)
    assert down.returncode == 0, down.stderr
