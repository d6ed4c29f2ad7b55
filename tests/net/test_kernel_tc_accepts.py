"""tc itself takes the kernel backend's lines: each translator's output is run through
`tc` on a veth end in a namespace made (and removed) here. Where this kernel has the
qdisc the line must succeed; where it lacks it, the only failure allowed is the
kernel's "unknown qdisc kind", never one of tc's parse errors."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from netlab import needs_root
from netrig.lab import netns, qdiscs
from netrig.link import kernel
from netrig.link.kernel import KernelBackendError
from netrig.link.spec import resolve
from netrig.topo.load import loads

pytestmark = pytest.mark.net

UNKNOWN = "Specified qdisc kind is unknown"
DIRECTIONS = [
    {"rate": "30Mbit", "queue": "50p"},
    {"rate": "30Mbit", "queue": "64KB", "overhead": 24},
    {"queue": "20p"},
    {"rate": "20Mbit", "delay": "1.19ms", "jitter": "250us", "correlation": "25%", "loss": "0.123456%",
     "loss_correlation": "10%", "duplicate": "1%", "corrupt": "0.1%", "reorder": "25%", "reorder_gap": 5},
    {"delay": "10ms", "gemodel": {"p": "1%", "r": "10%", "loss_good": "0.5%", "loss_bad": "70%"}},
    {"rate": "10Mbit", "aqm": {"type": "pie", "target": "20ms", "alpha": 0.25, "beta": 2, "ecn": True}},
    {"rate": "10Mbit", "aqm": "codel"},
    {"rate": "10Mbit", "aqm": {"type": "fq_codel", "flows": 64, "quantum": 300}},
    {"rate": "10Mbit", "aqm": "red"},
    {"aqm": {"type": "red", "min_th": "20KB", "max_th": "60KB", "ecn": True}, "queue": "100KB"},
]


@pytest.fixture
def veth():
    needs_root()
    ns = f"nrtc{os.getpid()}"
    netns.add([ns])
    try:
        netns.ip_batch(["link add v0 type veth peer name v1"], ns)
        yield ns
    finally:
        netns.delete([ns])


def tc(ns: str, line: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tc", "-n", ns, *line.split()], capture_output=True, text=True, timeout=10)


@pytest.mark.parametrize("text", DIRECTIONS, ids=lambda t: "-".join(sorted(t)))
def test_tc_takes_every_line(veth, text):
    for line in kernel.tc_lines("v0", resolve(text), "link a-b a_to_b"):
        p = tc(veth, line)
        assert p.returncode == 0 or UNKNOWN in p.stderr, (line, p.stderr)
        if p.returncode:
            break  # its children have no parent to hang on
    tc(veth, "qdisc del dev v0 root")


def test_a_line_tc_cannot_parse_is_told_apart_from_a_missing_qdisc(veth):
    # What main wrote for RED: tc refuses it before asking the kernel.
    p = tc(veth, "qdisc add dev v0 root handle 10: red limit 400000")
    assert p.returncode != 0 and UNKNOWN not in p.stderr and "avpkt" in p.stderr


def test_the_probe_runs_builds_own_lines(veth):
    ok = {"backend": "kernel", "nodes": {"a": "host", "b": "host"},
          "links": [{"a": "a", "b": "b", "rate": "20Mbit", "queue": "30KB"}]}
    qdiscs.check(loads(json.dumps(ok)), f"{veth}p")  # htb and bfifo: this kernel has both
    red = dict(ok, links=[{"a": "a", "b": "b", "rate": "20Mbit", "aqm": "red"}])
    try:
        qdiscs.check(loads(json.dumps(red)), f"{veth}p")
    except KernelBackendError as e:  # a kernel without RED: the probe says so, by name
        assert "link a-b a_to_b (the red AQM): the kernel backend cannot do the 'red' qdisc (and 1 more)" \
            in str(e)
    assert not netns.exists(f"{veth}p")
