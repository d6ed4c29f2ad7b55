"""Shared fixtures: the binaries, free ports, servers started and stopped by PID; and
the rule that keeps `pytest -m "not net"` off the network.

The `net` marker means "needs root, namespaces, loopback traffic or external peers".
Every test under tests/net and tests/perf carries it and no test under tests/unit does
(collection stops with a list of the tests that break this). Every test without it runs
under netguard's guard: a socket opened for traffic, a namespace or a network program
(ip, tc, ping, iperf3, netrig-perf, netrig-link, `netrig up/run/...`) fails it loudly.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from netguard import Guard
from netrig import binary

IPERF3 = shutil.which("iperf3")
TESTS = Path(__file__).resolve().parent
NET_DIRS = ("net", "perf")  # every test here is marked net
PURE_DIRS = ("unit",)  # no test here is


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Stops the run if a test's directory and its `net` marker disagree."""
    wrong = []
    for item in items:
        try:
            top = Path(item.path).resolve().relative_to(TESTS).parts[0]
        except ValueError:
            continue  # not one of ours (pytester's tests)
        net = item.get_closest_marker("net") is not None
        if top in NET_DIRS and not net:
            wrong.append(f"{item.nodeid}: under tests/{top} but not marked net")
        elif top in PURE_DIRS and net:
            wrong.append(f"{item.nodeid}: marked net but under tests/{top} (move it to tests/net)")
    if wrong:
        raise pytest.UsageError("test markers disagree with their directories:\n  " + "\n  ".join(wrong))


# Figures in PNG only while testing (every netrig this session starts inherits it): SVG
# beside each PNG is the default for users, and test_figures checks it on its own; drawing
# every figure twice doubled the time reports take in tests.
os.environ.setdefault("NETRIG_FIGURE_FORMATS", "png")


@pytest.fixture(autouse=True)
def _pure_tests_stay_off_the_network(request: pytest.FixtureRequest) -> Iterator[None]:
    """Arms netguard's Guard around each test that is not marked net; a violation the
    test's code caught still fails the test here, at teardown."""
    if request.node.get_closest_marker("net") is not None:
        yield
        return
    guard = Guard(request.node.nodeid)
    with guard.armed():
        yield
    if guard.caught:
        pytest.fail("\n".join(guard.caught), pytrace=False)


@pytest.fixture(scope="session")
def perf_bin() -> Path:
    return binary("netrig-perf")


def free_port() -> int:
    """A TCP and UDP port nobody listens on now."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            try:
                u.bind(("0.0.0.0", port))
            except OSError:
                continue
        return port


def listening(port: int) -> bool:
    """Whether something listens on TCP `port`, without connecting to it (an iperf3
    one-off server would take a connect as its test)."""
    want = f":{port:04X} "
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[1].endswith(want.strip()) and fields[3] == "0A":
                    return True
    return False


@dataclass
class Server:
    proc: subprocess.Popen
    port: int
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def json_docs(self) -> list[dict]:
        """The -J documents a server printed, one per test."""
        docs, dec, text = [], json.JSONDecoder(), self.output()
        i = 0
        while (i := text.find("{", i)) != -1:
            try:
                doc, end = dec.raw_decode(text, i)
            except json.JSONDecodeError:
                i += 1
                continue
            docs.append(doc)
            i = end
        return docs


@contextlib.contextmanager
def server(cmd: list[str], port: int, tmp: Path, name: str = "server") -> Iterator[Server]:
    log = tmp / f"{name}-{port}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 5
        while not listening(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{cmd[0]} did not start listening: {log.read_text()}")
            time.sleep(0.02)
        yield Server(proc, port, log)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


@pytest.fixture
def netrig_server(perf_bin: Path, tmp_path: Path):
    """A factory: netrig_server(*extra_args) -> Server (stopped at teardown)."""
    stack = contextlib.ExitStack()

    def start(*args: str) -> Server:
        port = free_port()
        cmd = [str(perf_bin), "-s", "-p", str(port), *args]
        return stack.enter_context(server(cmd, port, tmp_path, "netrig"))

    with stack:
        yield start


@pytest.fixture
def iperf3_server(tmp_path: Path):
    if IPERF3 is None:
        pytest.skip("iperf3 is not installed (apt-get install iperf3)")
    stack = contextlib.ExitStack()

    def start(*args: str) -> Server:
        port = free_port()
        cmd = [IPERF3, "-s", "-p", str(port), *args]
        return stack.enter_context(server(cmd, port, tmp_path, "iperf3"))

    with stack:
        yield start


def run_json(cmd: list[str], timeout: float = 60) -> tuple[subprocess.CompletedProcess, dict]:
    """Runs a client with -J; returns the process and its parsed document."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        doc = {}
    return p, doc


def env_without_key() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("NETRIG_PERF_KEY", None)
    return env
