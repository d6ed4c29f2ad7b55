"""A node's shell (netrig's mininet.node.Node: bash on a pty, PS1 Mininet's sentinel) and
its ^C, on a stand-in lab: the node is in this process's namespaces (no namespace is
made), so its bash runs here as any program does."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import netrig
import pytest

SHIM = Path(netrig.__file__).resolve().parent / "mnshim"
if str(SHIM) not in sys.path:
    sys.path.insert(0, str(SHIM))

from mininet import _lab  # noqa: E402  (netrig's, from SHIM)
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


def test_interrupt_reaches_a_command_that_swallowed_it_as_it_started(h1):
    """bash forks a command and, until it execs it, the fork takes a ^C in bash's own
    handler and forgets it: the command then runs to its end (a busy host stretches that
    window from microseconds to seconds; `sleep 30` ran its 30 s). A subshell that takes
    ^C the same way (trap), stands in for it: the program it then becomes is
    interrupted, and the shell is back well before that program's 20 s."""
    h1.sendCmd("( trap : INT; sleep 0.5; exec sleep 20 ); echo never")
    time.sleep(0.2)
    start = time.monotonic()
    h1.sendInt()
    out = h1.waitOutput()
    assert time.monotonic() - start < 10, out
    assert "never" not in out
    assert h1.cmd("echo back").strip() == "back"


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
