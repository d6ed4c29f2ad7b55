"""How `kernel_routes` reads a node's kernel table, without a namespace: `ip -j route`'s
destinations as prefixes (a host route's /32, `default` as 0.0.0.0/0, only unicast
routes), and an `ip` that does not answer in time as a LabError naming the namespace,
never a traceback. (Convergence watches tables instead: test_routewatch.py.)"""

from __future__ import annotations

import json
import subprocess

import pytest
from netrig.lab import network
from netrig.lab.state import LabError

ROUTES = [{"dst": "default", "gateway": "10.0.0.1", "dev": "eth0"},
          {"dst": "10.0.1.0/24", "nexthops": [{"gateway": "10.0.0.1", "dev": "eth0"},
                                               {"gateway": "10.0.2.1", "dev": "eth1"}]},
          {"dst": "10.255.0.7", "gateway": "10.0.0.1", "dev": "eth0"},
          {"type": "blackhole", "dst": "10.9.0.0/16"},
          {"dst": "10.0.0.0/24", "dev": "eth0", "protocol": "kernel", "scope": "link"}]


def test_kernel_routes_are_the_unicast_prefixes(monkeypatch):
    monkeypatch.setattr(network.subprocess, "run", lambda argv, **kw: subprocess.CompletedProcess(
        argv, 0, stdout=json.dumps(ROUTES), stderr=""))
    got = {str(n) for n in network.kernel_routes("x-r1")}
    assert got == {"0.0.0.0/0", "10.0.1.0/24", "10.255.0.7/32", "10.0.0.0/24"}


def test_an_ip_that_does_not_answer_is_a_lab_error(monkeypatch):
    def slow(argv, **kw):
        raise subprocess.TimeoutExpired(argv, kw["timeout"])

    monkeypatch.setattr(network.subprocess, "run", slow)
    with pytest.raises(LabError, match=r"ip -n x-r1 route show gave no answer in 10 s"):
        network.kernel_routes("x-r1")
