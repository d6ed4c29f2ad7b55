"""A capture of a link with offloads on (GSO superframes through the emulator) shows what
the wire would have carried: no frame above the MTU, every checksum right, no segment
missing from tshark's TCP analysis, the payload whole."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time

import pytest
from netlab import emulated_pair
from netrig import binary
from netrig.link.userspace import capture_start, capture_stop

pytestmark = [
    pytest.mark.net,
    pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark reads the capture"),
]
MS = 1_000_000
MTU = 1500
# 10 Mbit/s, 2 ms each way, a queue no 2 s flow fills: TCP sends superframes (TSO
# autosizing gives at least two segments each), none dropped.
SPEC = {"rate_bps": 10_000_000, "delay_ns": 2 * MS, "queue": {"limit_packets": 1000}}
# What tshark's TCP analysis and checksum checks say when a segment is missing or
# a checksum wrong (its expert lines).
BAD = re.compile(r"checksum|not captured|unseen segment|malformed", re.IGNORECASE)


def tshark(*args: str) -> str:
    p = subprocess.run(["tshark", "-n", "-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE",
                        "-o", "udp.check_checksum:TRUE", *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_a_capture_of_superframes_shows_wire_frames_with_right_checksums(tmp_path):
    cap = tmp_path / "l1.pcapng"
    with emulated_pair(tmp_path, SPEC, {"offloads_off": False}, host_offloads=True) as pair:
        srv = pair.popen_b(str(binary("netrig-perf")), "-s", "-p", "5201", "-1",
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.3)
            start = capture_start(pair.control, "l1", cap)
            p = pair.in_a(str(binary("netrig-perf")), "-c", pair.b_ip, "-J", "-t", "2", timeout=40)
            time.sleep(0.2)  # what is in flight leaves the link
            stop = capture_stop(pair.control, "l1")
        finally:
            srv.terminate()
            srv.wait(timeout=5)
    assert p.returncode == 0, p.stderr + p.stdout[-1000:]
    end = json.loads(p.stdout)["end"]
    sent, received = end["sum_sent"]["bytes"], end["sum_received"]["bytes"]
    counters = stop["capture"]["counters"]
    # The flow did come as superframes, and each was cut.
    assert counters["superframes"] > 50 and counters["unsegmented"] == 0, counters
    assert stop["link_counters"]["a_to_b"]["delivered"] < counters["frames"], stop
    rows = [r.split("\t") for r in tshark("-r", str(cap), "-T", "fields", "-E", "separator=\t",
                                          "-e", "frame.interface_name", "-e", "frame.len",
                                          "-e", "frame.time_epoch", "-e", "tcp.srcport", "-e", "tcp.len",
                                          "-e", "frame.comment").splitlines()]
    assert len(rows) == counters["frames"]
    assert max(int(r[1]) for r in rows) <= MTU + 14, "a frame larger than the wire's"
    assert not any(r[5] for r in rows), "no frame dropped or written whole"
    a_to_b = [r for r in rows if r[0] == "l1 a->b"]
    # The link charged each superframe the bytes of the segments it carries: exactly
    # what the capture shows the wire carrying.
    charged = stop["link_counters"]["a_to_b"]["delivered_bytes"] - start["link_counters"]["a_to_b"]["delivered_bytes"]
    assert charged == sum(int(r[1]) for r in a_to_b), charged
    times = [float(r[2]) for r in a_to_b]
    assert all(b >= a for a, b in zip(times, times[1:])), "segments in time order"
    # Every payload byte the server received is in the capture, once (no drops here;
    # what the client had still to send when the server closed is not).
    data = sum(int(r[4] or 0) for r in a_to_b if r[3] != "5201")
    assert received <= data <= sent + 64 * 1024, (received, data, sent)
    expert = tshark("-r", str(cap), "-q", "-z", "expert")
    assert not BAD.findall(expert), expert
