"""netrig-analyze's TCP analysis against tshark's on real captures.

Two hosts joined by netrig-link with loss, reordering, duplication (and all three), a
bounded TCP transfer (netrig-perf, a few MB) across it, and tcpdump on both hosts' veths:
the sender's capture shows retransmissions and duplicate ACKs, the receiver's shows
out-of-order and lost segments. For every file, each `tcp.analysis.*` frame set and the
ack_rtt of every frame must equal tshark's (see tests/tsharkdiff.py), and the numbers
beside them (goodput, retransmission ratios, ack_rtt percentiles, time in zero window)
those worked out from tshark's fields (tests/tsharknumbers.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from netlab import emulated_pair
from netrig import binary
from tsharkdiff import TSHARK, differences
from tsharknumbers import number_differences

pytestmark = pytest.mark.net
MS = 1_000_000

# 40 Mbit/s, 5 ms each way, and what goes wrong on the way (both directions: ACKs too).
BASE = {"rate_bps": 40_000_000, "delay_ns": 5 * MS, "queue": {"limit_packets": 200}}
CASES = {
    "loss": BASE | {"loss": {"random": {"p": 0.02}}},
    "reorder": BASE | {"reorder": {"p": 0.05, "gap": 3}},
    "duplicate": BASE | {"duplicate": {"p": 0.03}},
    "combined": BASE | {"loss": {"random": {"p": 0.01}}, "reorder": {"p": 0.03, "gap": 2},
                        "duplicate": {"p": 0.01}},
}
# What each case must show somewhere, so the comparison is never of two empty sets.
MUST_SHOW = {
    "loss": ("retransmission", "duplicate_ack", "lost_segment"),
    "reorder": ("out_of_order", "duplicate_ack"),
    "duplicate": ("retransmission", "duplicate_ack"),
    "combined": ("retransmission", "out_of_order", "duplicate_ack", "lost_segment"),
}


def start_tcpdump(ns: str, dev: str, out: Path) -> subprocess.Popen:
    # -s 128: headers only, as a long capture would be taken; the analysis must use the
    # IP length, not the captured length.
    p = subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-n", "-i", dev, "-s", "128", "-B", "8192", "--immediate-mode",
                          "-w", str(out),
                          "tcp"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    line = ""
    while "listening on" not in line:
        if p.poll() is not None or time.monotonic() > deadline:
            p.kill()
            raise RuntimeError(f"tcpdump on {dev} did not start: {line}{p.stderr.read()}")
        line = p.stderr.readline()
    return p


def stop(p: subprocess.Popen) -> str:
    """Stops tcpdump (it writes out what it holds) and returns its closing report."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)
    return " ".join(p.stderr.read().split()) if p.stderr else ""


# A receiver that stops reading for a while: its window closes (zero window, window full,
# zero-window probes and their ACKs), then it reads everything. Bounded: 1.5 MB, 20 s.
SLOW_READER = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.bind(("0.0.0.0", 5202)); s.listen(1); s.settimeout(20)
c, _ = s.accept(); c.settimeout(20)
time.sleep(1.5)
n = 0
while n < 1_500_000:
    b = c.recv(65536)
    if not b:
        break
    n += len(b)
    if n < 400_000:
        time.sleep(0.01)
c.close()
"""
SENDER = """
import socket, sys
c = socket.create_connection((sys.argv[1], 5202), timeout=20)
c.sendall(b"x" * 1_500_000)
c.close()
"""


def analyze(pcap: Path) -> dict:
    p = subprocess.run([str(binary("netrig-analyze")), "tcp", str(pcap), "--frames"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
@pytest.mark.parametrize("case", list(CASES))
def test_flags_and_rtt_equal_tshark_on_a_lossy_transfer(tmp_path, case):
    spec = CASES[case]
    files = {"sender": tmp_path / "sender.pcap", "receiver": tmp_path / "receiver.pcap"}
    with emulated_pair(tmp_path, spec) as pair:
        srv = pair.popen_b(str(binary("netrig-perf")), "-s", "-1", "-p", "5201",
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dumps = []
        try:
            dumps = [start_tcpdump(pair.a_ns, f"{pair.prefix}a0", files["sender"]),
                     start_tcpdump(pair.b_ns, f"{pair.prefix}b0", files["receiver"])]
            time.sleep(0.3)
            run = pair.in_a(str(binary("netrig-perf")), "-c", pair.b_ip, "-n", "4M", "-C", "cubic", "-J",
                            timeout=60)
            assert run.returncode == 0, run.stderr + run.stdout[-1000:]
            srv.wait(timeout=30)  # -1: the server exits once the transfer is received
            time.sleep(0.3)  # the last ACKs and FINs reach the captures
        finally:
            for d in dumps:
                stop(d)
            if srv.poll() is None:
                srv.terminate()
                srv.wait(timeout=10)
    problems = []
    seen: dict[str, int] = {}
    for side, pcap in files.items():
        doc = analyze(pcap)
        assert doc["file"]["tcp_packets"] > 1000, (side, doc["file"])
        for name in MUST_SHOW[case]:
            seen[name] = seen.get(name, 0) + doc["totals"][name]
        shown = {k: v for k, v in doc["totals"].items() if isinstance(v, int) and v and k != "packets"}
        print(f"{case} {side}: {doc['file']['packets']} packets, {shown}, ack_rtt n={doc['totals']['rtt']['n']}")
        problems += differences(pcap, doc) + number_differences(pcap, doc)
    assert not problems, "\n".join(problems)
    missing = [n for n in MUST_SHOW[case] if not seen[n]]
    assert not missing, f"{case}: the transfer showed no {missing} ({seen}): the comparison proves little"


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
def test_flags_equal_tshark_when_the_receiver_window_closes(tmp_path):
    files = {"sender": tmp_path / "sender.pcap", "receiver": tmp_path / "receiver.pcap"}
    with emulated_pair(tmp_path, BASE) as pair:
        srv = pair.popen_b("python3", "-c", SLOW_READER, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        dumps = []
        try:
            dumps = [start_tcpdump(pair.a_ns, f"{pair.prefix}a0", files["sender"]),
                     start_tcpdump(pair.b_ns, f"{pair.prefix}b0", files["receiver"])]
            time.sleep(0.3)
            run = pair.in_a("python3", "-c", SENDER, pair.b_ip, timeout=30)
            assert run.returncode == 0, run.stderr
            srv.wait(timeout=30)
            time.sleep(0.3)
        finally:
            for d in dumps:
                print("tcpdump:", stop(d))
            if srv.poll() is None:
                srv.kill()
                srv.wait(timeout=10)
    problems = []
    seen = {"zero_window": 0, "window_full": 0}
    closed_s = 0.0
    for side, pcap in files.items():
        doc = analyze(pcap)
        for name in seen:
            seen[name] += doc["totals"][name]
        shown = {k: v for k, v in doc["totals"].items() if isinstance(v, int) and v and k != "packets"}
        print(f"window {side}: {doc['file']['packets']} packets, {shown}")
        problems += differences(pcap, doc) + number_differences(pcap, doc)
        closed_s += sum(d["zero_window_time"]["total_s"] for s in doc["streams"] for d in s["directions"].values())
    assert not problems, "\n".join(problems)
    assert all(seen.values()) and closed_s > 0, f"the window never closed: {seen}, {closed_s} s"
