"""The command line on a small lab: pingall's matrix of median RTTs with host names,
exec without --, link set by a link's name."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from netlab import needs_root

pytestmark = pytest.mark.net


def netrig(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netrig", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_pingall_matrix_exec_without_dashes_and_link_set_by_name(tmp_path):
    needs_root()
    prefix = f"clx{os.getpid() % 100000}"
    f = tmp_path / "three.yaml"
    f.write_text(json.dumps({"name": "three", "prefix": prefix,
                             "nodes": {"a": "host", "b": "host", "c": "host", "s": "switch"},
                             "links": [{"a": "a", "b": "s", "name": "La", "delay": "5ms"},
                                       ["b", "s"], ["c", "s"]]}))
    try:
        up = netrig("up", str(f), "-q")
        assert up.returncode == 0, up.stderr
        p = netrig("pingall", "--prefix", prefix, "-c", "3")
        assert p.returncode == 0, p.stdout + p.stderr
        lines = p.stdout.splitlines()
        assert lines[1].split() == ["from", "\\", "to", "a", "b", "c"], p.stdout
        rows = {x.split()[0]: x.split()[1:] for x in lines[2:5]}
        assert rows["a"][0] == "-" and rows["b"][1] == "-" and rows["c"][2] == "-"
        assert 10.0 <= float(rows["a"][1]) < 30 and 10.0 <= float(rows["b"][0]) < 30  # 2 x 5 ms
        assert float(rows["b"][2]) < 5  # b-c crosses no delay
        assert lines[-1] == "pingall: 6/6 pairs reached"
        ping = netrig("exec", "a", "ping", "-c", "2", "-i", "0.2", "b", "--prefix", prefix)
        assert ping.returncode != 0  # --prefix after the command is the command's
        ping = netrig("exec", "--prefix", prefix, "a", "ping", "-c", "2", "-i", "0.2", "b")
        assert ping.returncode == 0 and " 0% packet loss" in ping.stdout, ping.stdout + ping.stderr
        s = netrig("link", "set", "La", "delay=20ms", "--prefix", prefix)
        assert s.returncode == 0 and s.stdout.strip() == "link La: set delay=20ms on a→s and s→a", s.stdout + s.stderr
        st = json.loads(netrig("status", "--prefix", prefix, "--json").stdout)
        la = next(x for x in st["links"] if x["name"] == "La")
        assert la["a_to_b"]["delay"] == "20ms", la
        bad = netrig("link", "set", "la", "delay=20ms", "--prefix", prefix)
        assert bad.returncode == 1 and "no link named 'la'; did you mean La? (its links: La, b-s, c-s)" in bad.stderr, bad.stderr
    finally:
        down = netrig("down", "--prefix", prefix)
    assert down.returncode == 0, down.stderr
