"""A node's shell (netrig's mininet.node.Node: bash on a pty, PS1 Mininet's sentinel) and
its ^C, on a stand-in lab: the node is in this process's namespaces (no namespace is
made), so its bash runs here as any program does."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import netrig
import pytest

SHIM = Path(netrig.__file__).resolve().parent / "mnshim"
if str(SHIM) not in sys.path:
    sys.path.insert(0, str(SHIM))

from mininet import _interrupt, _lab  # noqa: E402  (netrig's, from SHIM)
from mininet.node import Node  # noqa: E402


class StandInLab:
    """What a node asks of its lab: no namespace (add_node says None), nothing to flush."""

    bindir = Path("/nonexistent")

    def __init__(self) -> None:
        self.shells: list = []

    def add_node(self, name: str, kind: str) -> None:
        return None

    def flush(self) -> None:
        return None


@pytest.fixture
def h1(monkeypatch):
    monkeypatch.setattr(_lab, "current", StandInLab)
    node = Node("h1")
    node.cmd("true")
    try:
        yield node
    finally:
        node.terminate()


def _subshell_runs(shell: int, program: bytes) -> None:
    """Waits (10 s at most) until a child of a child of `shell` runs `program`."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for kid in (_interrupt.children(shell) or {}):
            if any(c.startswith(program) for c in (_interrupt.children(kid) or {}).values()):
                return
        time.sleep(0.005)
    raise AssertionError(f"no {program!r} under the shell's subshell in 10 s")


SWALLOWED = '( trap : INT; sleep 5; exec sleep 20 ); echo "after $?"'


def test_interrupt_reaches_a_command_that_swallowed_it_as_it_started(h1):
    """bash forks a command and, until it execs it, the fork takes a ^C in bash's own
    handler and forgets it: the command then runs to its end (a busy host stretches that
    window from microseconds to seconds; `sleep 30` ran its 30 s). A subshell that takes
    ^C the same way (trap), stands in for it: the ^C goes out once its trap is set (its
    `sleep 5` runs), the subshell goes on to `sleep 20`, which is interrupted, and bash
    drops the rest of the line. A ^C forgotten lets it run its 20 s and bash prints
    "after 0". (The ^C is not sent at a guessed moment: one that reaches the subshell
    before its trap, in bash's handler, makes it exit 130 and bash goes on with the line,
    as in a terminal: `mininet._interrupt`.)"""
    h1.sendCmd(SWALLOWED)
    _subshell_runs(h1.pid, b"sleep\x005\x00")
    h1.sendInt()
    out = h1.waitOutput()
    assert "after" not in out, out
    assert h1.cmd("echo back").strip() == "back"


def test_interrupt_reaches_a_command_seen_in_its_exec(h1, monkeypatch):
    """While a child execs, /proc shows an empty command line (its new memory has no
    arguments yet; a busy host stretches that to milliseconds): that is not an end. The
    subshell's exec of `sleep 20` is shown empty to its first three reads here, as the
    kernel does on a busy host; taken as ended, sleep 20 ran its 20 s."""
    seen: dict[int, int] = {}
    argv = _interrupt._argv

    def in_exec_at_first(pid: int) -> bytes | None:
        cmd = argv(pid)
        if cmd and cmd.startswith(b"sleep\x0020\x00") and seen.get(pid, 0) < 3:
            seen[pid] = seen.get(pid, 0) + 1
            return b""
        return cmd

    monkeypatch.setattr(_interrupt, "_argv", in_exec_at_first)
    h1.sendCmd(SWALLOWED)
    _subshell_runs(h1.pid, b"sleep\x005\x00")
    h1.sendInt()
    out = h1.waitOutput()
    assert "after" not in out, out
    assert sum(seen.values()) == 3, seen  # (the watch did look while it was "in its exec")


def test_an_empty_command_line_is_an_end_only_for_a_zombie(monkeypatch):
    """A zombie (ended, not reaped) shows an empty command line, and so does a child in
    its exec: the first has ended, the second is between programs (b"")."""
    ended = subprocess.Popen(["true"])
    running = subprocess.Popen(["sleep", "30"])
    try:
        deadline = time.monotonic() + 10
        while (_interrupt._stat(ended.pid) or ("?",))[0] != "Z" and time.monotonic() < deadline:
            time.sleep(0.001)
        assert _interrupt._argv(ended.pid) == b""
        assert _interrupt._cmdline(ended.pid) is None
        monkeypatch.setattr(_interrupt, "_argv", lambda pid: b"")  # as in an exec
        assert _interrupt._cmdline(running.pid) == b""
        assert _interrupt._cmdline(ended.pid) is None
    finally:
        running.kill()
        running.wait()
        ended.wait()


def test_a_running_program_that_takes_its_interrupt_gets_one(h1):
    """A program that already ran when ^C came catches it and carries on (as Mininet's
    terminal ^C leaves it): it is not sent a second one."""
    h1.sendCmd("python3 -c 'import signal, time; signal.signal(signal.SIGINT, "
               "lambda *_: print(\"caught\", flush=True)); print(\"ready\", flush=True); "
               "time.sleep(1); print(\"done\")'")
    seen = ""
    while "ready" not in seen:
        seen += h1.monitor(timeoutms=10000)
    h1.sendInt()
    out = seen + h1.waitOutput()
    assert out.count("caught") == 1 and "done" in out, out
