"""`netrig mn` end to end: mn's one-liners build a netrig lab, test it, print what
Mininet's mn prints, and leave nothing behind. Skipped while the compat package cannot
build a network (no mininet.net; the prompt's test also needs mininet.cli)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import netrig
import pytest
from netlab import assert_emulated_rtt, needs_root

pytestmark = pytest.mark.net

SHIM = Path(netrig.__file__).resolve().parent / "mnshim"


def compat_has(module: str) -> bool:
    code = f"import sys; sys.path.insert(0, {str(SHIM)!r}); import {module}"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60,
                          check=False).returncode == 0


def needs_compat(*modules: str) -> None:
    needs_root()
    for m in modules:
        if not compat_has(m):
            pytest.skip(f"netrig's Mininet has no {m} yet")


def mn(*args: str, stdin: str | None = None, timeout: float = 120):
    """netrig mn ARGS: (exit status, stdout + stderr, what it left of its lab). Its lab's
    prefix is set (NETRIG_PREFIX), so a lab another process makes meanwhile is not
    counted as this one's."""
    from netrig.lab.state import LabState, labs

    prefix = f"mnl{os.getpid() % 100000}"
    p = subprocess.Popen([sys.executable, "-m", "netrig", "mn", *args], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env={**os.environ, "NETRIG_PREFIX": prefix})
    try:
        out, _ = p.communicate(stdin, timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    left = [x for x in labs() if x == prefix]
    left += [str(LabState(prefix, "").dir)] if LabState(prefix, "").dir.exists() else []
    left += [ns for ns in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                         text=True).stdout.split() if ns.startswith(prefix + "-")]
    return p.returncode, out, left


def test_linear_pingall_says_what_mn_says():
    needs_compat("mininet.net")
    code, out, left = mn("--topo", "linear,3", "--test", "pingall")
    assert code == 0, out
    for line in ("*** Creating network", "*** Adding hosts:", "h1 h2 h3", "*** Adding switches:",
                 "s1 s2 s3", "*** Results: 0% dropped (6/6 received)", "*** Done"):
        assert line in out, (line, out)
    assert re.search(r"completed in \d+\.\d{3} seconds", out), out
    assert left == [], left


RTT_TEST = '''
import re

def rtt(net):
    h1, h2 = net.get('h1', 'h2')
    said = h1.cmd('ping -c 5 -i 0.2 %s' % h2.IP())
    print('RTTS', ' '.join(re.findall(r'time=([\\d.]+) ms', said)), flush=True)

tests = {'rtt': rtt}
'''


def test_tc_link_delay_reaches_a_custom_test(tmp_path):
    """--link tc,delay=10ms on single,2: h1 to h2 crosses two links each way, 40 ms."""
    needs_compat("mininet.net")
    f = tmp_path / "rtt.py"
    f.write_text(RTT_TEST)
    code, out, left = mn("--topo", "single,2", "--link", "tc,delay=10ms", "--custom", str(f),
                         "--test", "rtt")
    assert code == 0, out
    found = re.search(r"RTTS((?: [\d.]+)+)", out)
    assert found, out
    assert_emulated_rtt([float(x) for x in found.group(1).split()], 40.0, crossings=4)
    assert left == []


def test_prompt_from_a_pipe():
    needs_compat("mininet.net", "mininet.cli")
    code, out, left = mn("--topo", "single,2", stdin="nodes\nh1 ping -c1 h2\n")
    assert code == 0, out
    assert "h1 h2 s1" in out and "1 packets transmitted, 1 received" in out, out
    assert left == []


def test_clean_removes_only_what_netrig_made():
    needs_root()
    code, out, _ = mn("-c")
    assert code == 0, out


def test_output_verbosity_says_nothing_of_the_build():
    """mn -v output prints nothing before the prompt (Mininet's walkthrough checks it):
    no note about switches or controllers nobody asked for."""
    needs_compat("mininet.net")
    code, out, left = mn("-v", "output", "--test", "none")
    assert code == 0 and out == "", out
    assert left == []
