"""Forged datagrams on a UDP test's 4-tuple do not break the receiver's statistics.

A raw socket sends, from the client's data port (`--cport`) to the server's data port
(the control port, in iperf3's UDP protocol), datagrams with wild sequence numbers and
send times. The server, which receives, must report loss within 0-100 % and jitter of
an honest run's order, and count the forgeries as suspicious.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import subprocess
import time

import pytest
from conftest import free_port, run_json

pytestmark = pytest.mark.net  # servers and clients on loopback

# The test: 10 Mbit/s of 1460-byte datagrams, some 860 a second.
UDP_10M = ["-u", "-b", "10M", "-l", "1460", "-J"]

# A bounded burst: 200 datagrams of each run, one run at a time.
FORGED = 200

# Sequence numbers no honest sender of a 3 s, 10 Mbit/s test (some 2,600 datagrams)
# could have used: far ahead, at the 32-bit wrap, zero, and replays of old ones.
WILD_SEQS = [0xFFFF_FFFF, 0xFFFF_FFF0, 0x8000_0000, 50_000_000, 0, 1, 2, 3]


def udp_datagram(src_port: int, dst_port: int, payload: bytes) -> bytes:
    """A UDP header and payload; checksum 0 (none), which IPv4 receivers accept."""
    return struct.pack(">HHHH", src_port, dst_port, 8 + len(payload), 0) + payload


def forged_payload(seq: int, sec: int, usec: int, length: int = 1460) -> bytes:
    """iperf3's UDP header (send time in s and µs, 32-bit sequence) and filler."""
    head = struct.pack(">III", sec & 0xFFFF_FFFF, usec, seq & 0xFFFF_FFFF)
    return head + b"\xa5" * (length - len(head))


def send_forged(cport: int, sport: int) -> int:
    """Sends FORGED datagrams from 127.0.0.1:cport to 127.0.0.1:sport over about 2 s;
    returns how many left. The kernel adds the IP header (source 127.0.0.1): we set the UDP ports."""
    now = time.time()
    sent = 0
    with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP) as raw:
        for i in range(FORGED):
            seq = WILD_SEQS[i % len(WILD_SEQS)]
            # Send times hours away from the truth, either side.
            sec = int(now) + (7200 if i % 2 else -7200)
            if i % 10 == 9:
                data = b"\x00" * 7  # too short to carry a header
            else:
                data = forged_payload(seq, sec, i * 997 % 1_000_000)
            raw.sendto(udp_datagram(cport, sport, data), ("127.0.0.1", 0))
            sent += 1
            # Spread over 2 s: a forged send time that entered the jitter estimate
            # decays by 15/16 per honest datagram (some 860 a second here), so the
            # receiver's per-second figures show it only if one came just before.
            time.sleep(0.01)
    return sent


def client_data_port_connected(cport: int, sport: int) -> bool:
    """Whether the client's UDP data socket (cport -> sport) exists now."""
    want_local, want_remote = f":{cport:04X}", f":{sport:04X}"
    with contextlib.suppress(OSError), open("/proc/net/udp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1].endswith(want_local) and fields[2].endswith(want_remote):
                return True
    return False


def server_document(srv, timeout: float = 10) -> dict:
    """The -J document the server printed for its (only) test, once it is complete."""
    deadline = time.monotonic() + timeout
    while True:
        docs = [d for d in srv.json_docs() if "end" in d]
        if docs:
            return docs[0]
        assert time.monotonic() < deadline, srv.output()[-2000:]
        time.sleep(0.05)


def assert_sane(figures: dict) -> None:
    assert 0 <= figures["lost_percent"] <= 100, figures
    assert 0 <= figures["lost_packets"] <= figures["packets"], figures
    # An honest 10 Mbit/s run on loopback has well under 1 ms of jitter even on a busy
    # host; the forged send times are two hours off. 100 ms is far from both.
    assert figures["jitter_ms"] < 100, figures


def test_forged_datagrams_are_suspicious_not_lost(perf_bin, netrig_server):
    srv = netrig_server("-J")
    cport = free_port()
    cmd = [str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "--cport", str(cport), *UDP_10M, "-t", "3"]
    client = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 5
        while not client_data_port_connected(cport, srv.port):
            assert client.poll() is None, client.communicate()
            assert time.monotonic() < deadline, "the client's data socket never appeared"
            time.sleep(0.01)
        time.sleep(0.3)  # well inside the test: honest datagrams before and after
        assert send_forged(cport, srv.port) == FORGED
        out, err = client.communicate(timeout=30)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait(timeout=5)
    assert client.returncode == 0, err
    # The client reports the server's counts, received at the end of the test.
    end = json.loads(out)["end"]
    udp = end["streams"][0]["udp"]
    assert_sane(udp)
    assert_sane(end["sum"])
    assert 0 < udp["suspicious"] <= FORGED, udp
    # The server's own report, second by second, while the forged datagrams came.
    doc = server_document(srv)
    for interval in doc["intervals"]:
        for stream in interval["streams"]:
            assert_sane(stream)
    assert 0 < doc["end"]["streams"][0]["udp"]["suspicious"] <= FORGED
    # every suspicious datagram is in one interval's count: none counted twice, some seen
    in_intervals = sum(s["suspicious"] for i in doc["intervals"] for s in i["streams"])
    assert 0 < in_intervals <= doc["end"]["streams"][0]["udp"]["suspicious"], in_intervals


def test_an_honest_run_has_nothing_suspicious(perf_bin, netrig_server):
    srv = netrig_server()
    cmd = [str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), *UDP_10M, "-t", "1"]
    p, doc = run_json(cmd, timeout=30)
    assert p.returncode == 0, p.stderr
    udp = doc["end"]["streams"][0]["udp"]
    assert udp["suspicious"] == 0, udp
    assert 0 <= udp["lost_percent"] <= 100, udp
