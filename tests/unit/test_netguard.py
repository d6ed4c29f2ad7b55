"""The guard of tests/conftest.py (tests/netguard.py): a test not marked `net` that
reaches for the network fails, even if it catches the error; one marked `net` does not."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from netguard import Guard, NetworkInPureTest, why_network

TESTS = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("argv", [
    ["ip", "netns", "add", "x"],
    ["/usr/sbin/tc", "qdisc", "show"],
    ["ping", "-c", "1", "127.0.0.1"],
    ["iperf3", "-s"],
    ["/opt/bin/netrig-perf", "-c", "127.0.0.1"],
    ["netrig-link", "run", "--config", "l.json"],
    ["env", "A=1", "timeout", "-s", "KILL", "5", "nsenter", "--net=/run/netns/x", "true"],
    ["sh", "-c", "echo start; ping -c 1 ::1 && echo done"],
    [sys.executable, "-m", "netrig", "up", "lab.yaml"],
    [sys.executable, "-m", "netrig", "run", "--resume", "out"],
    [sys.executable, "-m", "netrig", "exec", "h1", "--", "true"],
    ["netrig", "link", "set", "a", "b", "delay=1ms"],
    [sys.executable, "-m", "netrig", "perf", "-c", "127.0.0.1"],
    ["chromium", "--headless", "--dump-dom", "file:///x.html"],
    ["/usr/bin/curl", "-s", "http://10.0.0.2:8080/obj-100000.bin"],
    ["/usr/sbin/nginx", "-c", "nginx.conf", "-g", "daemon off;"],
])
def test_network_commands_are_named(argv):
    assert why_network(argv), argv


@pytest.mark.parametrize("argv", [
    ["netrig-link", "schema"],
    ["netrig-perf", "--version"],
    ["/usr/bin/curl", "--version"],
    [sys.executable, "-m", "netrig", "perf", "--version"],
    [sys.executable, "-m", "netrig", "explain", "topo.yaml", "h1", "h2"],
    [sys.executable, "-m", "netrig", "status", "--prefix", "p"],
    [sys.executable, "-c", "print('ip')"],
    ["sh", "-c", "echo ip netns add x"],
    ["true"],
])
def test_pure_commands_pass(argv):
    assert why_network(argv) is None, argv


def test_a_shell_line_is_read_as_sh_reads_it():
    assert why_network("cd /tmp && tc qdisc show", shell=True) == "it runs tc"
    assert why_network("echo tc", shell=True) is None


def test_a_tcp_connection_is_stopped_before_it_is_made():
    guard = Guard("t")
    with guard.armed(), socket.socket() as s:
        with pytest.raises(NetworkInPureTest, match="t is not marked `net` but connects a AF_INET socket"):
            s.connect(("127.0.0.1", 9))
        with pytest.raises(OSError):
            s.getpeername()  # never connected
    assert len(guard.caught) == 1


def test_caught_even_when_the_test_swallows_it():
    guard = Guard("t")
    with guard.armed():
        with contextlib.suppress(Exception):
            socket.create_connection(("127.0.0.1", 9), timeout=1)
        with contextlib.suppress(Exception):
            subprocess.run(["ip", "netns", "add", "never"], check=False)
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as u, contextlib.suppress(Exception):
            u.sendto(b"x", ("::1", 9))
    assert [c.split(" but ")[1].split(" ")[:2] for c in guard.caught] == [
        ["connects", "a"], ["it", "runs"], ["sendtos", "a"]]
    assert not os.path.exists("/run/netns/never")


def test_unix_sockets_and_other_processes_are_left_alone(tmp_path):
    guard = Guard("t")
    with guard.armed():
        a, b = socket.socketpair()
        with a, b:
            a.sendall(b"hi")
            assert b.recv(2) == b"hi"
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(tmp_path / "s.sock"))
        assert subprocess.run(["true"]).returncode == 0
    assert guard.caught == []


def test_the_patches_are_undone():
    connect, popen = socket.socket.connect, subprocess.Popen.__init__
    with Guard("t").armed():
        assert socket.socket.connect is not connect and subprocess.Popen.__init__ is not popen
    assert socket.socket.connect is connect and subprocess.Popen.__init__ is popen


PROBE = '''
import contextlib
import socket

import pytest


def probe():
    # A TCP connect that sends nothing even unguarded: the socket is closed first, so
    # the connect fails (EBADF, swallowed) before any SYN; the guard stops it earlier.
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.close()
    with contextlib.suppress(OSError):
        s.connect(("127.0.0.1", 9))


def test_pure_but_connects():
    probe()


@pytest.mark.net
def test_marked_and_connects():
    probe()
'''


def pytest_in(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", str(root)],
                          capture_output=True, text=True, timeout=120, cwd=root)


def with_conftest(root: Path) -> Path:
    root.mkdir()
    for name in ("conftest.py", "netguard.py"):
        shutil.copy(TESTS / name, root / name)
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    net: network\n")
    return root


def test_the_conftest_fails_a_pure_test_that_opens_a_tcp_connection(tmp_path):
    root = with_conftest(tmp_path / "suite")
    (root / "test_probe.py").write_text(PROBE)
    p = pytest_in(root)
    assert p.returncode == 1, p.stdout
    assert "PASSED test_probe.py::test_marked_and_connects" in p.stdout, p.stdout
    assert "ERROR test_probe.py::test_pure_but_connects" in p.stdout, p.stdout
    assert "test_probe.py::test_pure_but_connects is not marked `net` but connects a AF_INET " \
           "socket to ('127.0.0.1', 9)" in p.stdout, p.stdout
    # Without the guard the same file passes: what failed it was the guard.
    (root / "conftest.py").unlink()
    p = pytest_in(root)
    assert p.returncode == 0 and "2 passed" in p.stdout, p.stdout


def test_the_conftest_refuses_a_marker_that_disagrees_with_the_directory(tmp_path):
    root = with_conftest(tmp_path / "suite")
    for d, body in (("unit", "import pytest\n\n@pytest.mark.net\ndef test_x():\n    pass\n"),
                    ("perf", "def test_y():\n    pass\n")):
        (root / d).mkdir()
        (root / d / f"test_{d}.py").write_text(body)
    p = pytest_in(root)
    assert p.returncode == 4, p.stdout + p.stderr  # a usage error: nothing ran
    assert "unit/test_unit.py::test_x: marked net but under tests/unit" in p.stderr, p.stderr
    assert "perf/test_perf.py::test_y: under tests/perf but not marked net" in p.stderr, p.stderr


def test_tcpdump_compiling_a_filter_is_pure_but_capturing_is_not():
    from netguard import why_network

    assert why_network(["tcpdump", "-ddd", "-y", "EN10MB", "tcp port 80"]) is None
    assert why_network(["tcpdump", "-ddd", "-i", "eth0", "tcp"]) is not None
    assert why_network(["tcpdump", "-w", "x.pcap"]) is not None
    assert why_network(["ip", "netns", "exec", "n1", "dumpcap", "-i", "eth0"]) is not None
