"""A server that serves many at once and that its peers can neither wedge nor crash."""

from __future__ import annotations

import json
import random
import socket
import struct
import subprocess
import time

import pytest
from conftest import IPERF3, run_json

pytestmark = pytest.mark.net  # servers and clients on loopback

COOKIE = b"abcdefghijklmnopqrstuvwxyz234567abcd\x00"


def cookie() -> bytes:
    alphabet = b"abcdefghijklmnopqrstuvwxyz234567"
    return bytes(random.choice(alphabet) for _ in range(36)) + b"\x00"


def frame(doc: bytes) -> bytes:
    return struct.pack(">I", len(doc)) + doc


def talk(port: int, payload: bytes, read: int = 64, timeout: float = 3.0) -> bytes:
    """Connects, reads the greeting, sends `payload`, returns what came back."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(payload)
        got = b""
        try:
            while len(got) < read:
                chunk = s.recv(read - len(got))
                if not chunk:
                    break
                got += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        return got


def refuse_params(port: int, params: bytes) -> bytes:
    """Sends a cookie and a parameter frame; returns the reply after PARAM_EXCHANGE."""
    reply = talk(port, cookie() + params, read=200)
    assert reply[:1] == b"\x09", reply  # PARAM_EXCHANGE
    return reply[1:]


def test_clients_run_at_the_same_time_each_with_its_own_result(perf_bin, netrig_server):
    srv = netrig_server("-J")
    port = str(srv.port)
    clients = {
        "netrig-tcp": [str(perf_bin), "-c", "127.0.0.1", "-p", port, "-J", "-t", "2", "-b", "30M"],
        "netrig-udp": [str(perf_bin), "-c", "127.0.0.1", "-p", port, "-J", "-t", "2", "-u", "-b", "5M"],
        "netrig-udp-R": [str(perf_bin), "-c", "127.0.0.1", "-p", port, "-J", "-t", "2", "-u", "-b", "7M", "-R"],
    }
    if IPERF3:
        clients["iperf3-tcp-R"] = [IPERF3, "-c", "127.0.0.1", "-p", port, "-J", "-t", "2", "-R", "-b", "20M"]
        clients["iperf3-udp"] = [IPERF3, "-c", "127.0.0.1", "-p", port, "-J", "-t", "2", "-u", "-b", "3M"]
    procs = {n: subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n, c in clients.items()}
    targets = {"netrig-tcp": 30e6, "netrig-udp": 5e6, "netrig-udp-R": 7e6, "iperf3-tcp-R": 20e6, "iperf3-udp": 3e6}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, (name, err, out[-500:])
        end = json.loads(out)["end"]
        got = end["sum"]["bits_per_second"] if "udp" in name else end["sum_received"]["bits_per_second"]
        # Each test got its own rate: no stream was mixed into another test.
        assert 0.85 * targets[name] < got < 1.1 * targets[name], (name, got)
    assert srv.alive()


def test_an_idle_connection_does_not_delay_other_clients(perf_bin, netrig_server):
    srv = netrig_server()
    idlers = []
    for payload in (b"0123456789", cookie(), cookie() + b"\x00\x00"):
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(payload)
        idlers.append(s)
    try:
        t0 = time.monotonic()
        p, doc = run_json([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-J", "-t", "1"], timeout=20)
        elapsed = time.monotonic() - t0
        assert p.returncode == 0, p.stderr
        received, sent = doc["end"]["sum_received"]["bytes"], doc["end"]["sum_sent"]["bytes"]
        assert 1_000_000 <= received <= sent, (received, sent)  # a second on loopback
        # The test itself takes ~1 s; an idler holding the server would add its 5 s
        # handshake timeout (iperf3 3.12 holds every other client for 30 s).
        assert elapsed < 4.5, elapsed
    finally:
        for s in idlers:
            s.close()


def test_a_busy_server_still_refuses_past_its_test_limit(perf_bin, netrig_server):
    srv = netrig_server("--max-tests", "1")
    busy = subprocess.Popen([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-t", "3"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.7)
        p = subprocess.run([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-t", "1"], capture_output=True, text=True, timeout=20)
        assert p.returncode == 1
        assert "busy" in p.stderr
    finally:
        assert busy.wait(timeout=20) == 0


@pytest.mark.parametrize(
    "params, words",
    [
        (frame(b'{"tcp":true,"parallel":"four"}'), "parallel"),
        (frame(b'{"tcp":true,"time":-3}'), "time"),
        (frame(b'{"tcp":true,"parallel":100000}'), "above the limit"),
        (frame(b'{"udp":true,"tcp":true}'), "both"),
        (frame(b'{"udp":true,"len":1000000}'), "len"),
        (frame(b'{"time":1}'), "neither"),
        (frame(b"[1,2,3]"), "not an object"),
        (frame(b'{"tcp":tru'), "not a JSON object"),
        (frame(b'{"tcp":true,"netrig":{"mode":"warp"}}'), "netrig"),
        (frame(b'{"tcp":true,"netrig":{"version":99}}'), "version 99"),
        (struct.pack(">I", 0xFFFFFFF0) + b"{", "exceeds the limit"),
        (struct.pack(">I", 0), "empty"),
    ],
)
def test_bad_parameters_get_an_error_naming_the_fault(netrig_server, params, words):
    srv = netrig_server()
    reply = refuse_params(srv.port, params)
    assert reply[:1] == b"\xfe", reply  # SERVER_ERROR
    code, errno = struct.unpack(">ii", reply[1:9])
    assert code > 0 and errno == 0
    (length,) = struct.unpack(">I", reply[9:13])
    message = json.loads(reply[13 : 13 + length])["netrig_error"]
    assert words in message, message
    assert srv.alive()


def test_iperf3_client_sees_the_refusal(netrig_server):
    if IPERF3 is None:
        pytest.skip("iperf3 is not installed")
    srv = netrig_server("--max-duration", "2")
    p = subprocess.run([IPERF3, "-c", "127.0.0.1", "-p", str(srv.port), "-t", "5"], capture_output=True, text=True, timeout=20)
    assert p.returncode != 0
    assert "unable to receive parameters" in (p.stdout + p.stderr)


def test_server_limits_refuse_oversized_tests(perf_bin, netrig_server):
    srv = netrig_server("--max-duration", "2", "--max-parallel", "2", "--max-rate", "10M")
    base = [str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port)]
    for extra, words in ((["-t", "5"], "time"), (["-t", "1", "-P", "4"], "parallel"), (["-t", "1", "-u", "-b", "50M"], "bandwidth")):
        p = subprocess.run(base + extra, capture_output=True, text=True, timeout=20)
        assert p.returncode == 1, p.stdout
        assert "refused" in p.stderr and words in p.stderr, p.stderr
    p = subprocess.run(base + ["-t", "1", "-u", "-b", "5M"], capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr


def test_bounded_fuzz_never_stops_the_server(perf_bin, netrig_server):
    """Random and malformed control traffic, bounded in count and time; after it the
    server still runs a real test."""
    rng = random.Random(20261121)
    srv = netrig_server("--handshake-timeout", "0.5")
    good = json.dumps({"tcp": True, "time": 1, "parallel": 1}).encode()
    mutations = [
        lambda: bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 300))),
        lambda: cookie() + bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 64))),
        lambda: cookie() + frame(bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 200)))),
        lambda: cookie() + frame(good[: rng.randrange(1, len(good))]),
        lambda: cookie() + frame(json.dumps({rng.choice(["tcp", "udp", "time", "len", "parallel", "window", "num", "MSS", "bandwidth", "omit", "netrig"]): rng.choice([None, -1, 2**70, 1e308, "x", [], {}, True, 0.5])} | {"tcp": True}).encode()),
        lambda: cookie() + frame(good) + bytes([rng.randrange(256)]) * rng.randrange(1, 8),
        lambda: cookie() + struct.pack(">I", rng.getrandbits(32)),
    ]
    deadline = time.monotonic() + 25
    n = 0
    while n < 300 and time.monotonic() < deadline:
        payload = rng.choice(mutations)()
        try:
            talk(srv.port, payload, read=64, timeout=1.0)
        except OSError:
            pass
        n += 1
        if n % 50 == 0:
            assert srv.alive(), srv.output()[-2000:]
    assert n >= 100
    assert srv.alive()
    assert "panicked" not in srv.output()
    p, doc = run_json([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-J", "-t", "1"], timeout=30)
    assert p.returncode == 0, p.stderr
    assert doc["end"]["sum_received"]["bytes"] > 0
