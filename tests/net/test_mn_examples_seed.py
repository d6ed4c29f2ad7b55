"""The seed reports' Mininet scripts (examples/mininet/) run through `netrig mininet`.

portfolio_topology.py (seed 002): every host reaches every host (pingAll 0% dropped),
the interfaces are named as the seed's `net` shows them, the three shaped links put
theory's RTT on each path (h1->h4 60 ms, h1->h9 80 ms, h7->h9 60 ms: a missing delay
or one applied twice is tens of ms off) and the iperf stays under the 30 Mbit/s
bottleneck.

bufferbloat.py (seed 004): without AQM the long TCP flow fills the 100-packet queue
(`tc -s qdisc show` reads backlogs near it, never above it, and the RTT grows far above
the 20 ms base); with `--pie` (set by the seed's own tc line) the RTT stays near PIE's
20 ms target region and the queue short.
"""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from netlab import needs_root

pytestmark = pytest.mark.net

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "mininet"


def netrig_mininet(args: list[str], prefix: str, timeout: float = 90) -> tuple[int, str, list[str]]:
    """`netrig mininet ARGS` with its lab named PREFIX: (exit status, output, what of
    the lab is left: namespaces, its state directory)."""
    from netrig.lab.state import LabState

    needs_root()
    env = {**os.environ, "NETRIG_PREFIX": prefix}
    p = subprocess.run([sys.executable, "-m", "netrig", "mininet", *args], capture_output=True,
                       text=True, timeout=timeout, env=env)
    left = [ns for ns in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                        text=True).stdout.split() if ns.startswith(prefix + "-")]
    left += [str(LabState(prefix, "").dir)] if LabState(prefix, "").dir.exists() else []
    return p.returncode, p.stdout + p.stderr, left


def test_portfolio_topology_gives_theorys_rtts(tmp_path):
    code, out, left = netrig_mininet([str(EXAMPLES / "portfolio_topology.py"), "--test",
                                      "--count", "6", "--time", "3"], f"mnpf{os.getpid() % 10000}")
    assert code == 0, out
    assert left == [], left
    assert "*** Results: 0% dropped (156/156 received)" in out, out
    # the seed's `net` lines for hosts and routers
    for line in ("h7 h7-eth0:r2-eth1", "r1 r1-eth0:s1-eth4 r1-eth1:r2-eth0",
                 "r2 r2-eth0:r1-eth1 r2-eth1:h7-eth0 r2-eth2:r3-eth0",
                 "r3 r3-eth0:r2-eth2 r3-eth1:h8-eth0 r3-eth2:s2-eth4 r3-eth3:r4-eth0",
                 "r4 r4-eth0:r3-eth3 r4-eth1:h9-eth0", "h4 h4-eth0:s2-eth1"):
        assert line in out.splitlines(), (line, out)
    rtts = {(m[1], m[2]): (float(m[3]), float(m[4]), int(m[6])) for m in re.finditer(
        r"rtt (\w+)->(\w+) min/avg/max ([\d.]+)/([\d.]+)/([\d.]+) ms \(theory (\d+) ms\)", out)}
    assert set(rtts) == {("h1", "h4"), ("h1", "h9"), ("h7", "h9")}, out
    for pair, (low, avg, theory) in rtts.items():
        # the emulated delay is exact: the fastest echo within a ms or two of theory;
        # the mean a few ms above at most on a busy machine
        assert theory - 0.5 <= low <= theory + 2, (pair, low, out)
        assert avg <= theory + 6, (pair, avg, out)
    m = re.search(r"iperf h1->h4 TCP ([\d.]+) Mbits/sec \(server\)", out)
    assert m, out
    assert 10 <= float(m[1]) <= 31, out  # 30 Mbit/s bottleneck, TCP over 60 ms


def bufferbloat(tmp_path: Path, name: str, *extra: str) -> dict[str, str]:
    out_dir = tmp_path / name
    code, out, left = netrig_mininet([str(EXAMPLES / "bufferbloat.py"), "--time", "8",
                                      "--dir", str(out_dir), *extra],
                                     f"mnbb{os.getpid() % 10000}{name[0]}")
    assert code == 0, out
    assert left == [], left
    for f in ("ping.txt", "qlen.txt", "fetch.txt", "iperf.out", "summary.txt"):
        assert (out_dir / f).is_file(), (f, out)
    with open(out_dir / "summary.csv") as f:
        row = next(csv.DictReader(f))
    assert row["aqm"] in out, out  # printed too
    return row


def test_bufferbloat_queue_fills_and_pie_keeps_it_short(tmp_path):
    tail = bufferbloat(tmp_path, "droptail")
    # a full queue adds up to 0.8 s to the 20 ms base; tc's backlog read from the emulator
    assert float(tail["rtt_median_ms"]) >= 150, tail
    assert 50 <= int(tail["queue_max_pkts"]) <= 100, tail  # max_queue_size=100 holds
    assert float(tail["queue_mean_pkts"]) >= 20, tail
    assert int(tail["ping_replies"]) >= 50 and int(tail["fetches"]) >= 3, tail
    assert 1.0 <= float(tail["iperf_mbit"]) <= 1.6, tail  # the 1.5 Mbit/s bottleneck, full

    pie = bufferbloat(tmp_path, "pie", "--pie")
    # PIE's target is 20 ms of queueing: median RTT near 40 ms, far below drop-tail's
    assert 20 <= float(pie["rtt_median_ms"]) <= 100, pie
    assert float(pie["rtt_median_ms"]) * 3 <= float(tail["rtt_median_ms"]), (pie, tail)
    assert float(pie["queue_mean_pkts"]) * 2 <= float(tail["queue_mean_pkts"]), (pie, tail)
    assert float(pie["fetch_mean_s"]) < float(tail["fetch_mean_s"]), (pie, tail)


def test_bufferbloat_refuses_a_bad_argument(tmp_path):
    code, out, left = netrig_mininet([str(EXAMPLES / "bufferbloat.py"), "--maxq", "0",
                                      "--dir", str(tmp_path)], f"mnbx{os.getpid() % 10000}", timeout=30)
    assert code == 2 and "--maxq takes 1 to 100000" in out, out
    assert left == []
