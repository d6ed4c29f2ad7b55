"""A server one address cannot hog (issue 24): test slots per source below
--max-tests, a cap on streams (threads) across tests, a test closed at its declared end
plus the grace whatever its client does, UDP set-up that waits on nobody else's test;
and a keyed one-off server (a flow's) that a stranger's connection neither ends nor
takes, and that ends by itself (--exit-after). Real processes on loopback: the hogs
from 127.0.0.1, everyone else from 127.0.0.2 and 127.0.0.3."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest
from conftest import IPERF3, env_without_key, free_port, listening
from rawctl import cookie, frame, threads

pytestmark = pytest.mark.net  # servers and clients on loopback

STRANGER, OTHER = "127.0.0.2", "127.0.0.3"








def client(perf_bin: Path, port: int, *args: str, src: str | None = None, env=None) -> subprocess.Popen:
    argv = [str(perf_bin), "-c", "127.0.0.1", "-p", str(port), *(["-B", src] if src else []), *args]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env or env_without_key())


def iperf3(port: int, *args: str, src: str) -> subprocess.Popen:
    return subprocess.Popen([IPERF3, "-c", "127.0.0.1", "-p", str(port), "-B", src, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def ended(p: subprocess.Popen, timeout: float) -> tuple[int, str, str]:
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return -9, out, err
    return p.returncode, out, err


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.communicate()


def control(port: int, params: dict) -> tuple[socket.socket, bytes]:
    """A hand-made client's control connection, past its parameters: (socket, cookie)."""
    c = cookie()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(c)
    assert s.recv(1) == b"\x09"  # PARAM_EXCHANGE
    s.sendall(frame(params))
    return s, c


def served_in_normal_time(procs: dict[str, subprocess.Popen], t0: float, within: float) -> None:
    """Each client (a 1-second test) ended well, all within `within` seconds."""
    for name, p in procs.items():
        code, out, err = ended(p, max(1.0, t0 + within + 10 - time.monotonic()))
        assert code == 0, (name, err[-600:], out[-600:])
    took = time.monotonic() - t0
    assert took < within, took


def test_four_slow_tests_from_one_address_leave_room_for_another(perf_bin, netrig_server):
    """The issue's probe: four slow tests (-b 8k -t 60) from 127.0.0.1 against --max-tests
    4. One runs, three are refused with the per-address limit named (a quarter of
    --max-tests by default), and clients from another address are served at once (main:
    refused "busy" for the next minute)."""
    srv = netrig_server("--max-tests", "4")
    hogs = [client(perf_bin, srv.port, "-b", "8k", "-t", "60") for _ in range(4)]
    try:
        time.sleep(1.5)
        refused = [p for p in hogs if p.poll() is not None]
        assert len(refused) == 3, [ended(p, 1) for p in refused]
        for p in refused:
            _, _, err = ended(p, 1)
            assert p.returncode == 1
            assert ("the server already runs 1 test from 127.0.0.1, the most one address may run at once "
                    "(--max-tests-per-source 1)") in err, err
        t0 = time.monotonic()
        others = {"netrig-perf": client(perf_bin, srv.port, "-t", "1", "-J", src=STRANGER)}
        if IPERF3:
            others["iperf3"] = iperf3(srv.port, "-t", "1", "-J", src=OTHER)
        served_in_normal_time(others, t0, within=10)
        # An iperf3 client refused by the per-address limit says iperf3's "busy".
        if IPERF3:
            code, _, err = ended(iperf3(srv.port, "-t", "1", src="127.0.0.1"), 15)
            assert code == 1 and "the server is busy running a test. try again later" in err, err
    finally:
        stop(hogs)
    assert srv.alive()


def test_one_address_cannot_take_every_stream(perf_bin, netrig_server):
    """The issue's -P 128 --bidir -l 1M from one address, four times at once: its share of
    --max-streams (256 of the default 1024) is one such test, so the server's threads stay
    near 256 (main: every test ran, a thousand threads and more); and with a small cap, a
    test over it is refused naming the cap, while the tests under it run."""
    srv = netrig_server()
    pid = srv.proc.pid
    big = [client(perf_bin, srv.port, "-P", "128", "--bidir", "-l", "1M", "-b", "8k", "-t", "4")
           for _ in range(4)]
    try:
        peak, t_end = threads(pid), time.monotonic() + 3
        while time.monotonic() < t_end:
            peak = max(peak, threads(pid))
            time.sleep(0.1)
        results = [ended(p, 30) for p in big]
    finally:
        stop(big)
    assert sorted(r[0] for r in results) == [0, 1, 1, 1], [r[2][-300:] for r in results]
    assert all("one address may hold" in err and "--max-streams 1024" in err for code, _, err in results if code), results
    assert 256 < peak < 300, peak

    srv = netrig_server("--max-tests", "4", "--max-tests-per-source", "2", "--max-streams", "8")
    # A source's share: 8 x 2/4 = 4 streams. A test of 5 is refused outright.
    code, _, err = ended(client(perf_bin, srv.port, "-P", "5", "-t", "1"), 15)
    assert code == 1 and "the test asks for 5 streams and one address may hold 4" in err, err
    running = [client(perf_bin, srv.port, "-P", "4", "-t", "4", "-b", "1M"),
               client(perf_bin, srv.port, "-P", "2", "--bidir", "-t", "4", "-b", "1M", src=STRANGER)]
    try:
        time.sleep(1.5)
        assert all(p.poll() is None for p in running), [ended(p, 1) for p in running]
        code, _, err = ended(client(perf_bin, srv.port, "-t", "1", src=OTHER), 15)
        assert code == 1 and "its tests hold 8 of its 8 streams (--max-streams)" in err, err
        if IPERF3:
            code, _, err = ended(iperf3(srv.port, "-t", "1", src=OTHER), 15)
            assert code == 1 and "busy" in err, err
        assert threads(srv.proc.pid) < 8 + 2 * 2 + 10
        for p in running:
            code, _, err = ended(p, 20)
            assert code == 0, err
    finally:
        stop(running)
    assert srv.alive()


def silent_udp_test(port: int) -> socket.socket:
    """A UDP test's control connection that gets CREATE_STREAMS and then never sends its
    first datagram."""
    s, _ = control(port, {"udp": True, "time": 2, "parallel": 1, "len": 1000, "bandwidth": 1_000_000})
    assert s.recv(1) == b"\x0a"  # CREATE_STREAMS
    return s


def test_a_udp_test_that_never_sends_its_first_datagram_holds_up_nobody_else(perf_bin, netrig_server):
    """With a 5-s handshake timeout, a UDP test from 127.0.0.1 that never sends its
    "9876" waits 11 s for its streams (twice the handshake and 1 s). UDP tests from other
    addresses beside it are served in normal time (3461fb1: they waited behind a global
    lock until the silent one's deadline); the silent one is refused at its deadline."""
    srv = netrig_server("--handshake-timeout", "5")
    silent = silent_udp_test(srv.port)
    try:
        time.sleep(0.5)
        t0 = time.monotonic()
        procs = {"netrig-perf": client(perf_bin, srv.port, "-u", "-t", "1", "-P", "2", "-J", src=STRANGER)}
        if IPERF3:
            procs["iperf3"] = iperf3(srv.port, "-u", "-t", "1", "-J", src=OTHER)
        served_in_normal_time(procs, t0, within=8)
        silent.settimeout(30)
        said = silent.recv(1)
        assert said == b"\xfe", said  # SERVER_ERROR, at its own deadline
    finally:
        silent.close()
    deadline = time.monotonic() + 5
    while "timed out waiting for UDP streams: 0 of 1 connected" not in srv.output():
        assert time.monotonic() < deadline, srv.output()[-1500:]
        time.sleep(0.1)
    assert srv.alive()


def trickle(port: int, limit: float) -> float | None:
    """A -t 2 TCP test that sends its data and TEST_END, then its results one byte every
    0.5 s (each read of the server's is served within --handshake-timeout); when the
    server closed it, counted from connect (None: still open after `limit` s)."""
    t0 = time.monotonic()
    s, c = control(port, {"tcp": True, "time": 2, "parallel": 1, "len": 1024})
    d = None
    try:
        assert s.recv(1) == b"\x0a"
        d = socket.create_connection(("127.0.0.1", port), timeout=10)
        d.sendall(c)
        got = b""
        while len(got) < 2:
            got += s.recv(2 - len(got))
        assert got == b"\x01\x02", got  # TEST_START, TEST_RUNNING
        end = time.monotonic() + 2
        while time.monotonic() < end:
            d.sendall(b"x" * 1024)
            time.sleep(0.1)
        s.sendall(b"\x04")  # TEST_END
        assert s.recv(1) == b"\x0d"  # EXCHANGE_RESULTS
        results = frame({"cpu_util_total": 0, "streams": []})[:4] + b" " * 100_000
        s.settimeout(0.5)
        for i in range(len(results)):
            if time.monotonic() - t0 > limit:
                return None
            try:
                s.sendall(results[i:i + 1])
                if s.recv(64) == b"":
                    return time.monotonic() - t0
            except TimeoutError:
                continue
            except OSError:
                return time.monotonic() - t0
        return None
    finally:
        s.close()
        if d is not None:
            d.close()


def test_a_trickling_test_is_closed_at_its_end_plus_the_grace(perf_bin, netrig_server):
    """-t 2, --grace 1, --handshake-timeout 1: a client that trickles its results is
    closed about 5 s after it connected (2 s of test, 1 s of grace, 1 s for the results,
    1 s for the test's thread to notice), whatever it sends (main: still open after 30
    s, and for as long as its 8 MB of results would take)."""
    srv = netrig_server("--handshake-timeout", "1", "--grace", "1")
    closed_at = trickle(srv.port, 30)
    assert closed_at is not None, "the server kept a trickling test for 30 s"
    assert 4 < closed_at < 12, closed_at
    deadline = time.monotonic() + 5
    want = ("closed by the server: it went on past its declared end (-t 2 s after -O 0 s), the grace "
            "(1.0 s: --grace, at least --handshake-timeout) and 1.0 s more for its results")
    while want not in srv.output():
        assert time.monotonic() < deadline, srv.output()[-1500:]
        time.sleep(0.1)
    code, _, err = ended(client(perf_bin, srv.port, "-t", "1"), 15)
    assert code == 0, err


def test_a_keyed_one_off_server_outlives_strangers_and_ends_by_itself(perf_bin, tmp_path):
    """A flow's server: -1 with a key (from the environment) and --exit-after. A stranger
    without the key, one with a wrong key and an iperf3 client are refused by the
    challenge and the server waits on for its own client (main: the wrong key's refusal
    ended the one-off server, so the flow's client found nothing); its client runs; a
    server whose client never comes exits at --exit-after."""
    port = free_port()
    env = {**env_without_key(), "NETRIG_PERF_KEY": "flow-key-1"}
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        srv = subprocess.Popen([str(perf_bin), "-s", "-1", "-p", str(port), "-B", "127.0.0.1",
                                "--exit-after", "60"], stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 5
        while not listening(port):
            assert srv.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.02)
        code, _, err = ended(client(perf_bin, port, "-t", "1"), 15)
        assert code == 1 and "the server requires a key and this client has none" in err, err
        code, _, err = ended(client(perf_bin, port, "-t", "1", env={**env, "NETRIG_PERF_KEY": "wrong"}), 15)
        assert code == 1 and "wrong key" in err, err
        if IPERF3:
            code, _, _ = ended(iperf3(port, "-t", "1", src="127.0.0.1"), 15)
            assert code == 1
        time.sleep(0.3)
        assert srv.poll() is None, log.read_text()
        code, out, err = ended(client(perf_bin, port, "-t", "1", "-J", env=env), 15)
        assert code == 0, err
        assert json.loads(out)["end"]["sum_received"]["bytes"] > 0
        assert srv.wait(timeout=10) == 0  # one-off: its own client's test was its one
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    # Nobody comes: the server ends at --exit-after.
    t0 = time.monotonic()
    p = subprocess.run([str(perf_bin), "-s", "-1", "-p", str(free_port()), "--exit-after", "1.5"], env=env,
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    assert 1.4 < time.monotonic() - t0 < 8


def test_exit_after_ends_a_running_test_and_says_why(perf_bin, tmp_path):
    port = free_port()
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        srv = subprocess.Popen([str(perf_bin), "-s", "-p", str(port), "--exit-after", "2"], stdout=out,
                               stderr=subprocess.STDOUT, env=env_without_key())
    try:
        deadline = time.monotonic() + 5
        while not listening(port):
            assert srv.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.02)
        code, _, err = ended(client(perf_bin, port, "-t", "30"), 20)
        assert code == 1 and "the server has terminated" in err, err
        assert srv.wait(timeout=10) == 0
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    assert "closed by the server: the server stopped: its --exit-after 2 s passed" in log.read_text()

