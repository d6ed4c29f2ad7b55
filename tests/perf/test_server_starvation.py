"""A server that idle, slow or crowding connections cannot starve: a cookie alone takes
no test slot, the handshake has one deadline from accept, connections waiting for their
handshake are capped (per source too) without threads of their own, and a
--rr-new-conn test cannot open more connections than the server's limits allow."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import IPERF3
from rawctl import cookie, frame, threads

pytestmark = pytest.mark.net  # servers and clients on loopback

# The server's default --handshake-timeout: one deadline from accept.
DEADLINE = 5.0








def is_closed(s: socket.socket) -> bool:
    """Whether the server has closed `s` (EOF or reset), without waiting."""
    s.setblocking(False)
    try:
        while s.recv(4096):
            pass  # what the server said before it closed (say, PARAM_EXCHANGE)
        return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def real_clients(perf_bin: Path, port: int) -> dict[str, subprocess.Popen]:
    """A netrig-perf and (if installed) an iperf3 client, each a 1-second test."""
    cmds = {"netrig-perf": [str(perf_bin), "-c", "127.0.0.1", "-p", str(port), "-t", "1", "-J"]}
    if IPERF3:
        cmds["iperf3"] = [IPERF3, "-c", "127.0.0.1", "-p", str(port), "-t", "1", "-J"]
    return {n: subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n, c in cmds.items()}


def finish(procs: dict[str, subprocess.Popen], t0: float, within: float = 15.0) -> None:
    """Every client ended well and in normal time (a 1-second test; `within` is generous)."""
    for name, p in procs.items():
        try:
            out, err = p.communicate(timeout=max(1.0, t0 + within + 5 - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        assert p.returncode == 0, (name, err[-500:], out[-800:])
        end = json.loads(out)["end"]
        received, sent = end["sum_received"]["bytes"], end["sum_sent"]["bytes"]
        assert 1_000_000 <= received <= sent, (name, received, sent)  # a second on loopback
    elapsed = time.monotonic() - t0
    assert elapsed < within, elapsed


def open_idlers(port: int, n: int, payload: bytes | None) -> list[socket.socket]:
    socks = []
    try:
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            socks.append(s)
            if payload is not None:
                with contextlib.suppress(OSError):
                    s.sendall(payload if payload else cookie())
    except BaseException:
        close_all(socks)
        raise
    return socks


def close_all(socks: list[socket.socket]) -> None:
    for s in socks:
        s.close()


def test_idle_cookies_take_no_test_slot(perf_bin, netrig_server):
    """64 connections that send a valid-looking cookie and idle (64 is the default
    --max-tests): an iperf3 and a netrig-perf client beside them still run their tests."""
    srv = netrig_server()
    idlers = open_idlers(srv.port, 64, b"")  # b"": a fresh random cookie each
    try:
        time.sleep(0.5)
        t0 = time.monotonic()
        finish(real_clients(perf_bin, srv.port), t0)
    finally:
        close_all(idlers)
    assert srv.alive()


def drip(port: int, started: threading.Event, result: dict[str, float]) -> None:
    """Sends a cookie one byte every 3 s (it would take 111 s), for 15 s at most;
    records when the server closed the connection, counted from before connect."""
    t0 = time.monotonic()
    payload = cookie()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        for i in range(5):
            try:
                s.sendall(payload[i : i + 1])
                started.set()
                s.settimeout(3.0)
                if s.recv(64) == b"":
                    break
            except TimeoutError:
                continue
            except OSError:
                break
        else:
            return
        result["closed_at"] = time.monotonic() - t0


def test_a_dripping_client_is_cut_at_the_handshake_deadline(perf_bin, netrig_server):
    """One byte every 3 s never trips a 5-s timeout per read; the deadline from accept
    closes it, while real clients keep working beside it."""
    srv = netrig_server()
    started, result = threading.Event(), {}
    dripper = threading.Thread(target=drip, args=(srv.port, started, result), daemon=True)
    dripper.start()
    try:
        assert started.wait(5)
        t0 = time.monotonic()
        finish(real_clients(perf_bin, srv.port), t0)
    finally:
        dripper.join(20)
    assert not dripper.is_alive()
    closed_at = result.get("closed_at")
    assert closed_at is not None, "a client dripping a byte every 3 s kept its connection for 15 s"
    assert DEADLINE - 0.5 <= closed_at < DEADLINE + 4, closed_at
    # Reported once, in the server's log, when the burst of closures ends.
    deadline = time.monotonic() + 5
    while "had not sent their handshake" not in srv.output() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "closed 1 connection that had not sent their handshake within --handshake-timeout" in srv.output(), srv.output()[-1500:]
    assert srv.alive()


def test_a_crowd_of_connections_gets_no_thread_each(perf_bin, netrig_server):
    """500 connections opened at once, each with part of a cookie: the server's threads
    stay few, and real clients still finish."""
    srv = netrig_server()
    pid = srv.proc.pid
    base = threads(pid)
    crowd = open_idlers(srv.port, 500, b"abc")
    try:
        peak = base
        for _ in range(10):
            peak = max(peak, threads(pid))
            time.sleep(0.1)
        # main: one thread per connection (500 and more).
        assert peak < 40, (base, peak)
        t0 = time.monotonic()
        finish(real_clients(perf_bin, srv.port), t0)
        # Over the per-source cap (16 by default) the longest-waiting were closed at once.
        time.sleep(0.3)
        still_open = sum(not is_closed(s) for s in crowd)
        assert still_open <= 16, still_open
    finally:
        close_all(crowd)
    deadline = time.monotonic() + 5
    while "--max-pending-per-source" not in srv.output() and time.monotonic() < deadline:
        time.sleep(0.1)
    log = srv.output()
    # Reported per burst, not per connection: a handful of lines for the ~480 closed (a
    # starved host spreads the crowd's arrival over several bursts, each a line).
    closed = [int(n) for n in re.findall(r"closed (\d+) connections? .*--max-pending-per-source", log)]
    assert 1 <= len(closed) <= 10 and sum(closed) >= 400, log[-2000:]
    assert srv.alive()


def test_rr_new_conn_cannot_open_more_connections_than_the_server_allows(perf_bin, netrig_server):
    srv = netrig_server("--max-parallel", "2")
    base = [str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "--rr", "1K", "--rr-new-conn"]
    # Past --max-parallel: refused with the limit named.
    p = subprocess.run(base + ["-P", "8", "-t", "1"], capture_output=True, text=True, timeout=20)
    assert p.returncode == 1 and "refused" in p.stderr and "parallel" in p.stderr, p.stderr
    # Within it: a real client runs.
    p = subprocess.run(base + ["-P", "2", "-t", "1", "-J"], capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    rr = json.loads(p.stdout)["end"]["rr"]
    assert rr["transactions"] > 0 and rr["failed"] == 0, rr

    # A client that says -P 1 and then opens 40 connections with its cookie.
    c = cookie()
    ctrl = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    extra: list[socket.socket] = []
    try:
        ctrl.sendall(c)
        assert ctrl.recv(1) == b"\x09"  # PARAM_EXCHANGE
        rr = {"mode": "rr", "version": 1, "rr_response": 100, "rr_new_conn": True}
        ctrl.sendall(frame({"tcp": True, "time": 4, "parallel": 1, "netrig": rr}))
        got = b""
        while len(got) < 3:
            chunk = ctrl.recv(3 - len(got))
            assert chunk, got
            got += chunk
        assert got == b"\x0a\x01\x02", got  # CREATE_STREAMS, TEST_START, TEST_RUNNING
        before = threads(srv.proc.pid)
        extra = open_idlers(srv.port, 40, c)
        time.sleep(1.0)
        still_open = sum(not is_closed(s) for s in extra)
        grown = threads(srv.proc.pid) - before
        # At most twice -P at once (a closing connection beside its successor).
        assert still_open <= 2, still_open
        assert grown <= 4, grown
    finally:
        close_all(extra)
        ctrl.close()
    deadline = time.monotonic() + 10
    while "--rr-new-conn: closed" not in srv.output() and time.monotonic() < deadline:
        time.sleep(0.1)
    found = re.search(r"--rr-new-conn: closed (\d+) connections? .* test of -P 1 .*\(--max-parallel 2\)",
                      srv.output())
    assert found and 1 <= int(found[1]) <= 38, srv.output()[-1500:]
    # The real -P 2 client lost none: the connections it had closed did not count, even
    # where the server had not yet run their handlers (a busy host).
    assert "test of -P 2" not in srv.output(), srv.output()[-1500:]
    assert srv.alive()
