"""Mininet's own example tests, unmodified, on netrig's Mininet.

Debian's `mininet` package installs Mininet's examples (the package mininet.examples)
and their pexpect-driven tests (/usr/share/doc/mininet/examples/test/). Each test here
runs one of those test files through `netrig mininet`: the file spawns `python -m
mininet.examples.X` (netrig's python shim, so the example imports netrig's Mininet),
drives its `mininet>` prompt and checks its output as it does against Mininet. The
slower ones (limit, intfoptions, tree1024, ...) run with NETRIG_MININET_SLOW=1; the
note of issue 25 lists every file's result."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from netlab import needs_root

pytestmark = pytest.mark.net

TESTS = Path("/usr/share/doc/mininet/examples/test")

# Each under ~10 s here: run in every suite.
FAST = ["emptynet", "linuxrouter", "multitest", "multilink", "multipoll", "bind", "simpleperf",
        "treeping64"]
# Each 12 s to 3 min (the examples' own iperf and CPU runs), or touching the machine's
# own routing table (sshd routes 10.0.0.0/24 from the root namespace to the lab while
# it runs): run with NETRIG_MININET_SLOW=1 (the note of issue 25 lists their results).
SLOW = ["popen", "multiping", "intfoptions", "limit", "linearbandwidth", "tree1024", "sshd"]
# Not here: test_cpu. cpu.py reads one line of the iperf server's stdout for the probe
# connection of waitListening, as iperf 2.0 printed; Debian's iperf 2.1.8 reports a
# connection that sends nothing on stderr ("read tcp flags (peer close) failed"), so the
# example waits for a line that never comes, with Mininet's own waitListening too.
# CPU limits are checked by tests/net/test_mn_core.py and Mininet's test_hifi.


def run_test_file(name: str) -> None:
    needs_root()
    f = TESTS / f"test_{name}.py"
    if not f.exists():
        pytest.skip(f"{f} is not installed (apt-get install mininet)")
    p = subprocess.run([sys.executable, "-m", "netrig", "mininet", str(f)], capture_output=True,
                       text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "OK" in p.stderr, p.stderr[-2000:]


@pytest.mark.parametrize("name", FAST)
def test_mininet_example_test_passes(name):
    run_test_file(name)


@pytest.mark.parametrize("name", SLOW)
def test_mininet_slow_example_test_passes(name):
    if os.environ.get("NETRIG_MININET_SLOW") != "1":
        pytest.skip("a slow example test: NETRIG_MININET_SLOW=1 runs it")
    run_test_file(name)
