"""Helpers for tests that build namespaces: a pair of hosts joined by netrig-link.

(A plain module, not a conftest.py: two conftest modules would shadow each other.)"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from netrig import binary
from netrig.lab.network import PingResult
from netrig.link.userspace import exchange

# How late a shared host's timers may wake netrig-link, per emulated link a packet
# crosses (measured: 0.3-0.5 ms a crossing when the machine is noisy). RTT checks allow
# this per crossing on top of the configured delay; they never allow an early packet.
WAKE_SLACK_MS = 1.0


def assert_emulated_rtt(rtts: list[float], expected_ms: float, crossings: int) -> None:
    """Check pings across emulated links against the configured delay.

    The fastest ping is never early (0.2 ms covers the precision ping prints) and is
    within the wake-up slack of each link crossed: a systematic error in the delay shows
    in every ping. The median may sit further out on a noisy host, but a timer that fires twice
    or a delay applied twice moves it far past 10 % plus the slack."""
    assert len(rtts) >= 3, rtts
    slack = crossings * WAKE_SLACK_MS
    assert expected_ms - 0.2 <= min(rtts) < expected_ms + slack, (expected_ms, crossings, rtts)
    assert statistics.median(rtts) < 1.1 * expected_ms + slack, (expected_ms, crossings, rtts)


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, check=check, timeout=30)


def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")


@dataclass
class Pair:
    """Hosts A (10.77.N.1) and B (10.77.N.2) in namespaces, joined through a
    netrig-link daemon in a third namespace."""

    prefix: str
    a_ns: str
    b_ns: str
    emu_ns: str
    a_ip: str
    b_ip: str
    control: Path
    stats: Path
    proc: subprocess.Popen | None = None
    log: Path | None = None
    namespaces: list[str] = field(default_factory=list)

    def in_a(self, *cmd: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", self.a_ns, *cmd], capture_output=True, text=True, timeout=timeout)

    def popen_b(self, *cmd: str, **kw) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", self.b_ns, *cmd], **kw)

    def request(self, req: dict, timeout: float = 5) -> dict:
        return exchange(self.control, req, timeout)

    def ping(self, count: int = 10, interval: float = 0.05) -> list[float]:
        p = self.in_a("ping", "-c", str(count), "-i", str(interval), "-W", "1", self.b_ip)
        return PingResult.parse(p.stdout, count).rtts_ms


def offloads_off(ns: str, dev: str) -> None:
    sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off", "rx", "off", "tso", "off", "gso", "off",
       "gro", "off", "sg", "off", check=False)


@contextlib.contextmanager
def emulated_pair(tmp: Path, spec: dict, extra: dict | None = None, host_offloads: bool = False) -> Iterator[Pair]:
    needs_root()
    n = os.getpid() % 200 + 20
    prefix = f"nrt{os.getpid() % 100000}"
    p = Pair(prefix, f"{prefix}-a", f"{prefix}-b", f"{prefix}-e", f"10.77.{n}.1", f"10.77.{n}.2",
             tmp / "ctl.sock", tmp / "stats.jsonl")
    try:
        for ns in (p.a_ns, p.b_ns, p.emu_ns):
            sh("ip", "netns", "add", ns)
            p.namespaces.append(ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        for side, ns, ipaddr in (("a", p.a_ns, p.a_ip), ("b", p.b_ns, p.b_ip)):
            host, mid = f"{prefix}{side}0", f"{prefix}{side}1"
            sh("ip", "link", "add", host, "netns", ns, "type", "veth", "peer", "name", mid, "netns", p.emu_ns)
            sh("ip", "-n", ns, "addr", "add", f"{ipaddr}/24", "dev", host)
            sh("ip", "-n", ns, "link", "set", host, "up")
            sh("ip", "-n", p.emu_ns, "link", "set", mid, "up")
            if not host_offloads:
                offloads_off(ns, host)
        link = {"name": "l1", "a": f"{prefix}a1", "b": f"{prefix}b1"}
        # A spec per direction, or one for both.
        link |= spec if {"a_to_b", "b_to_a"} & spec.keys() else {"both": spec}
        cfg = {"links": [link],
               "control_path": str(p.control), "stats_path": str(p.stats), "seed": 7}
        cfg.update(extra or {})
        (tmp / "link.json").write_text(json.dumps(cfg))
        p.log = tmp / "netrig-link.log"
        with open(p.log, "w") as log:
            p.proc = subprocess.Popen(
                ["ip", "netns", "exec", p.emu_ns, str(binary("netrig-link")), "run", "--config", str(tmp / "link.json")],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while '"ready"' not in p.log.read_text():
            if p.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"netrig-link did not start: {p.log.read_text()}")
            time.sleep(0.02)
        yield p
    finally:
        try:
            if p.proc and p.proc.poll() is None:
                p.proc.send_signal(signal.SIGTERM)
                try:
                    p.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.proc.kill()
                    # Closing packet sockets waits for RCU grace periods, which take
                    # seconds while the kernel frees another lab's namespaces.
                    p.proc.wait(timeout=30)
        finally:  # the namespaces go even if the daemon would not
            for ns in p.namespaces:
                sh("ip", "netns", "del", ns, check=False)


def totals(log: Path) -> dict:
    for line in reversed(log.read_text().splitlines()):
        if line.startswith('{"totals"'):
            return json.loads(line)["totals"]
    raise AssertionError(f"no totals in {log.read_text()[-2000:]}")


class Cluster:
    """A Dask scheduler and netrig workers started here (`netrig cluster scheduler|worker`),
    each worker with a host name of its own (`unshare --uts`); stopped by PID. The
    cluster's CA is made in tmp/cluster (NETRIG_CLUSTER_DIR, in `env`: a head run with
    it finds its certificate there)."""

    def __init__(self, tmp: Path, names: list[str]) -> None:
        needs_root()
        self.procs: list[subprocess.Popen] = []
        self.client = None
        self.dir = tmp / "cluster"
        self.env = {**os.environ, "NETRIG_CLUSTER_DIR": str(self.dir)}
        try:
            self._start(tmp, names)
        except BaseException:  # what was started is stopped, whatever failed
            self.stop()
            raise

    def _start(self, tmp: Path, names: list[str]) -> None:
        log = tmp / "scheduler.log"
        self.procs.append(subprocess.Popen(
            [sys.executable, "-m", "netrig", "cluster", "scheduler", "--port", "0", "--host", "127.0.0.1"],
            stdout=subprocess.DEVNULL, stderr=log.open("w"), env=self.env))
        deadline = time.monotonic() + 30
        while not (m := re.search(r"Scheduler at:\s+(tls://\S+)", log.read_text())):
            assert time.monotonic() < deadline and self.procs[0].poll() is None, log.read_text()[-2000:]
            time.sleep(0.05)
        self.address = m.group(1)
        self.names = names
        for name in names:
            self.procs.append(subprocess.Popen(
                ["unshare", "--uts", "sh", "-c", f"hostname {name}-host && exec {sys.executable} -m netrig "
                 f"cluster worker {self.address} --name {name}"],
                stdout=subprocess.DEVNULL, stderr=(tmp / f"{name}.log").open("w"), env=self.env))
        from distributed import Client
        from netrig.exp.execute import cluster_tls
        self.bundle = cluster_tls.issue(self.dir, "tests")
        self.client = Client(self.address, timeout=30, set_as_default=False, security=self.bundle.security())
        if names:
            self.client.wait_for_workers(len(names), timeout=60)

    @property
    def scheduler_pid(self) -> int:
        return self.procs[0].pid

    def nanny_pids(self) -> dict[str, int]:
        """Each worker's nanny (`netrig cluster worker`), by worker name."""
        return dict(zip(self.names, (p.pid for p in self.procs[1:]), strict=True))

    def pids(self) -> dict[str, int]:
        """Each worker's process (the nanny's child), by worker name."""
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        got = self.client.run(os.getpid)
        return {str(info[a]["name"]): pid for a, pid in got.items()}

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
        # The workers first, then the scheduler: a worker whose scheduler is gone waits
        # 8 s for it before its nanny kills it.
        for group in (self.procs[1:], self.procs[:1]):
            for p in group:
                if p.poll() is None:
                    p.terminate()
            for p in group:
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
