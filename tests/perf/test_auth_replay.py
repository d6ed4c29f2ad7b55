"""netrig-perf's --auth-key: a captured control exchange, replayed verbatim or with other
parameters, is refused; keys come from private files; a failure is said once on each
side; a key on one side only fails at once, naming the mismatch.

A relay between client and server records the bytes the client sends (and can rewrite
its parameters on the way). The server runs with a short --handshake-timeout so a test
it wrongly accepts ends by itself within seconds.
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import IPERF3, env_without_key

pytestmark = pytest.mark.net  # servers and clients on loopback

COOKIE_LEN = 37
CHALLENGE, PARAM_EXCHANGE, CREATE_STREAMS, SERVER_ERROR = 100, 9, 10, 0xFE
KEY = "s3cret-of-the-rig"
ALTERED = {"time": 3600, "parallel": 8, "reverse": True}  # -t 3600 -P 8 -R


def keyed_env(key: str = KEY) -> dict[str, str]:
    env = env_without_key()
    env["NETRIG_PERF_KEY"] = key
    return env


def run(cmd: list, env: dict[str, str] | None = None, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                          env=env if env is not None else env_without_key())


def client(perf_bin: Path, port: int, *args: str) -> list:
    return [perf_bin, "-c", "127.0.0.1", "-p", port, "-t", "1", "-i", "0", "--connect-timeout", "3000", *args]


def split_params(data: bytes) -> tuple[bytes, dict, bytes]:
    """The cookie, the parameter document and what the client sent after it."""
    (n,) = struct.unpack(">I", data[COOKIE_LEN:COOKIE_LEN + 4])
    body = data[COOKIE_LEN + 4:COOKIE_LEN + 4 + n]
    return data[:COOKIE_LEN], json.loads(body), data[COOKIE_LEN + 4 + n:]


def with_params(cookie: bytes, params: dict, rest: bytes) -> bytes:
    body = json.dumps(params, separators=(",", ":")).encode()
    return cookie + struct.pack(">I", len(body)) + body + rest


def alter(params: dict) -> dict:
    return {**params, **ALTERED}


class Relay:
    """Forwards every connection to the server, recording what each client sent; the
    first connection's parameter frame may be rewritten on the way (`tamper`)."""

    def __init__(self, target: int, tamper: Callable[[dict], dict] | None = None):
        self.target, self.tamper = target, tamper
        self.ls = socket.create_server(("127.0.0.1", 0))
        self.ls.settimeout(0.2)
        self.port = self.ls.getsockname()[1]
        self.sent: list[bytearray] = []
        self.closed = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.closed = True
        self.thread.join(timeout=5)
        self.ls.close()

    def _accept(self) -> None:
        while not self.closed:
            try:
                down, _ = self.ls.accept()
            except TimeoutError:
                continue
            up = socket.create_connection(("127.0.0.1", self.target), timeout=5)
            record = bytearray()
            tamper = self.tamper if not self.sent else None
            self.sent.append(record)
            for src, dst, rec, t in ((down, up, record, tamper), (up, down, None, None)):
                threading.Thread(target=self._pump, args=(src, dst, rec, t), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, rec: bytearray | None, tamper) -> None:
        src.settimeout(30)
        held = bytearray()  # client bytes past the cookie, until the parameter frame is whole
        try:
            while data := src.recv(65536):
                if rec is not None:
                    rec += data
                if tamper is not None:
                    start = len(rec) - len(data)
                    cut = max(0, COOKIE_LEN - start)  # the cookie goes on at once
                    dst.sendall(data[:cut])
                    held += data[cut:]
                    if len(held) < 4 or len(held) < 4 + struct.unpack(">I", held[:4])[0]:
                        continue
                    n = struct.unpack(">I", held[:4])[0]
                    body = json.dumps(tamper(json.loads(held[4:4 + n])), separators=(",", ":")).encode()
                    data, tamper = struct.pack(">I", len(body)) + body + bytes(held[4 + n:]), None
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def replay(port: int, data: bytes, wait: float = 5.0) -> bytes:
    """Sends `data` verbatim on a new connection; returns all the server said."""
    got = bytearray()
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        s.sendall(data)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            s.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = s.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            got += chunk
    return bytes(got)


def server_says(reply: bytes) -> tuple[list[int], str]:
    """The state bytes a server sent (skipping challenge frames) and its error text."""
    states, i = [], 0
    while i < len(reply):
        b = reply[i]
        states.append(b)
        i += 1
        if b == CHALLENGE and i + 4 <= len(reply):
            i += 4 + struct.unpack(">I", reply[i:i + 4])[0]
        elif b == SERVER_ERROR:
            text = ""
            if i + 12 <= len(reply):
                (n,) = struct.unpack(">I", reply[i + 8:i + 12])
                text = json.loads(reply[i + 12:i + 12 + n]).get("netrig_error", "")
            return states, text
    return states, ""


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def accepted(srv) -> int:
    return srv.output().count("Accepted connection")


@pytest.fixture
def keyed_server(netrig_server):
    return lambda: netrig_server("--auth-key", KEY, "--handshake-timeout", "1")


def capture(perf_bin: Path, srv) -> bytes:
    """A real keyed client's test through the relay; the bytes of its control connection."""
    relay = Relay(srv.port)
    try:
        p = run(client(perf_bin, relay.port), env=keyed_env())
    finally:
        relay.close()
    assert p.returncode == 0, p.stderr
    assert accepted(srv) == 1
    return bytes(relay.sent[0])


def test_a_captured_exchange_replayed_verbatim_is_refused(perf_bin, keyed_server):
    srv = keyed_server()
    data = capture(perf_bin, srv)
    states, text = server_says(replay(srv.port, data))
    assert CREATE_STREAMS not in states, f"the replay was accepted: {states}"
    assert SERVER_ERROR in states and "replayed" in text, (states, text)
    time.sleep(0.5)
    assert accepted(srv) == 1, "no test ran for the replay:\n" + srv.output()


def test_a_captured_proof_with_other_parameters_is_refused(perf_bin, keyed_server):
    srv = keyed_server()
    cookie, params, rest = split_params(capture(perf_bin, srv))
    states, text = server_says(replay(srv.port, with_params(cookie, alter(params), rest)))
    assert CREATE_STREAMS not in states, f"-t 3600 -P 8 -R was accepted: {states}"
    assert SERVER_ERROR in states and "altered" in text, (states, text)
    time.sleep(0.5)
    assert accepted(srv) == 1, srv.output()


def test_parameters_altered_in_flight_are_refused(perf_bin, keyed_server):
    """A live exchange (a fresh challenge, the client's real proof) whose parameters a
    man in the middle rewrites to -t 3600 -P 8 -R."""
    srv = keyed_server()
    relay = Relay(srv.port, tamper=alter)
    try:
        p = run(client(perf_bin, relay.port), env=keyed_env())
    finally:
        relay.close()
    assert p.returncode == 1
    assert "authentication failed" in p.stderr and "altered" in p.stderr, p.stderr
    time.sleep(0.5)
    assert accepted(srv) == 0, srv.output()


def key_file(tmp_path: Path, mode: int, text: str = KEY + "\n") -> Path:
    f = tmp_path / f"key-{mode:o}"
    f.write_text(text)
    f.chmod(mode)
    return f


def test_a_private_key_file_works_and_an_open_one_is_refused(perf_bin, netrig_server, tmp_path):
    private = key_file(tmp_path, 0o600)
    srv = netrig_server("--auth-key-file", str(private))
    p = run(client(perf_bin, srv.port, "--auth-key-file", private))
    assert p.returncode == 0, p.stderr
    p = run(client(perf_bin, srv.port), env=keyed_env(KEY))
    assert p.returncode == 0, "the file's key is the environment's (one trailing newline dropped)"
    for mode in (0o644, 0o640, 0o604):
        f = key_file(tmp_path, mode)
        for cmd in ([perf_bin, "-s", "-p", "1"], client(perf_bin, srv.port)):
            p = run([*cmd, "--auth-key-file", f], timeout=10)
            assert p.returncode == 1
            assert f"--auth-key-file {f}: permissions {mode:04o} are too open" in p.stderr, p.stderr
            assert f"chmod 600 {f}" in p.stderr
    assert accepted(srv) == 2


def test_a_wrong_key_is_said_once_on_each_side(perf_bin, keyed_server):
    srv = keyed_server()
    p = run(client(perf_bin, srv.port, "-P", "4"), env=keyed_env("not-the-key"))
    assert p.returncode == 1
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and p.stderr.count("authentication failed") == 1, p.stderr
    assert "wrong key" in lines[0]
    time.sleep(1.5)
    out = srv.output()
    assert out.count("authentication failed") == 1 and "wrong key" in out, out
    assert accepted(srv) == 0


def test_a_key_on_the_client_only_fails_at_once(perf_bin, netrig_server):
    srv = netrig_server("--handshake-timeout", "1")
    t0 = time.monotonic()
    p = run(client(perf_bin, srv.port), env=keyed_env(), timeout=10)
    assert p.returncode == 1, "a keyed client ran a test with a keyless server"
    assert "the server has no key" in p.stderr and p.stderr.count("authentication failed") == 1, p.stderr
    assert time.monotonic() - t0 < 8
    assert accepted(srv) == 0


def test_a_key_on_the_server_only_fails_at_once_on_both_sides(perf_bin, keyed_server):
    srv = keyed_server()
    p = run(client(perf_bin, srv.port), timeout=10)
    assert p.returncode == 1
    assert "the server requires a key and this client has none" in p.stderr, p.stderr
    assert p.stderr.count("authentication failed") == 1
    assert wait_for(lambda: "hung up on the auth challenge" in srv.output()), srv.output()
    assert srv.output().count("hung up on the auth challenge") == 1
    assert accepted(srv) == 0


@pytest.mark.skipif(IPERF3 is None, reason="iperf3 is not installed")
def test_an_iperf3_client_stops_at_a_keyed_server(keyed_server):
    srv = keyed_server()
    p = run([IPERF3, "-c", "127.0.0.1", "-p", srv.port, "-t", "1"], timeout=10)
    assert p.returncode != 0
    assert "unknown control message" in p.stdout + p.stderr
    assert accepted(srv) == 0
