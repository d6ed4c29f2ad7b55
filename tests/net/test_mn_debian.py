"""Mininet's own example tests, unmodified, on netrig's Mininet.

Debian's `mininet` package installs Mininet's examples (the package mininet.examples)
and their pexpect-driven tests (/usr/share/doc/mininet/examples/test/). Each test here
runs one of those test files through `netrig mininet`: the file spawns `python -m
mininet.examples.X` (netrig's python shim, so the example imports netrig's Mininet),
drives its `mininet>` prompt and checks its output as it does against Mininet. The
slower ones (limit, cpu, intfoptions, tree1024, ...) are run by hand; the note lists
every file's result."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from netlab import needs_root

pytestmark = pytest.mark.net

TESTS = Path("/usr/share/doc/mininet/examples/test")


@pytest.mark.parametrize("name", ["emptynet", "linuxrouter", "multitest", "multilink", "bind",
                                  "simpleperf", "treeping64"])
def test_mininet_example_test_passes(name):
    needs_root()
    f = TESTS / f"test_{name}.py"
    if not f.exists():
        pytest.skip(f"{f} is not installed (apt-get install mininet)")
    p = subprocess.run([sys.executable, "-m", "netrig", "mininet", str(f)], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "OK" in p.stderr, p.stderr[-2000:]
