"""What every flow kind shares: the interface a kind (and a tool that makes tcp and udp
flows) gives the registry (`Kind`, `Tool`, `Call`), the part of a flow's outcome that is
the same for all (`FlowOutput`), running a flow's process (`run_process`) and waiting for
a run's flows (`wait_for_flows`), and a flow server's key and lifetime.

A flow's server serves only its flow: it gets a fresh random key through its
environment (never its command line: `flow_key`, `keyed_env`), which its client proves
(netrig-perf's challenge refuses anyone else's connection), binds to the address the
flow is sent to, and exits at the flow's end plus a grace (`server_lifetime_s`).
"""

from __future__ import annotations

import math
import os
import secrets
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from netrig.exp.spec.model import LOAD_KINDS, MEASURING_KINDS, FlowSpec

CONNECT_TIMEOUT_S = 5.0  # a client's connect timeout for a flow that gives none
KEY_ENV = "NETRIG_PERF_KEY"  # where netrig-perf reads its key when no flag names one
# How long a flow's server outlives the latest its client may end (its own time limit):
# the servers start before the run's clock does (each waited for, captures, web
# servers), and a server past this exits by itself (--exit-after).
SERVER_GRACE_S = 60.0


def flow_key() -> str:
    """A fresh random key for one flow's server and client: 256 bits, as hex."""
    return secrets.token_hex(32)


def keyed_env(key: str) -> dict[str, str]:
    """This process's environment with the flow's key, for its server or client."""
    return {**os.environ, KEY_ENV: key}


def connect_timeout_s(f: FlowSpec) -> float:
    """How long the flow's client waits for its connection (and each setup step)."""
    return f.seconds("connect_timeout", CONNECT_TIMEOUT_S)


def server_lifetime_s(f: FlowSpec, client_timeout_s: float) -> float:
    """How long a flow's server lives: until the flow's start, plus the longest its
    client may run (the runner's own limit for it), plus `SERVER_GRACE_S`."""
    return f.seconds("start") + client_timeout_s + SERVER_GRACE_S


def whole_seconds(s: float) -> str:
    """A -t of whole seconds, at least 1 (netrig-perf's and iperf's take whole ones)."""
    return str(max(1, int(math.ceil(s - 1e-9))))


@dataclass(frozen=True)
class Call:
    """What a flow's command lines are made from: the flow, where its data goes (the
    receiver's address and its server's port), how long it runs, the report interval,
    and how often a tcp flow samples TCP_INFO (None: never)."""

    spec: FlowSpec
    addr: str
    port: int = 0
    duration: float = 0.0
    interval: float = 1.0
    tcp_info_ms: int | None = None


@dataclass
class FlowOutput:
    """What a flow's process left: its output and how it ended (each kind reads it:
    registry.Outcome)."""

    name: str
    spec: FlowSpec
    start_s: float  # when it was started, seconds from the run's start
    end_s: float = 0.0
    code: int | None = None
    stdout: str = ""
    stderr: str = ""
    error: str | None = None
    planned_s: float = 0.0  # how long it was meant to run
    doc: dict[str, Any] | None = field(default=None, repr=False)  # an iperf3-shaped document
    fetches: list[Any] = field(default_factory=list, repr=False)  # a web flow's (web.Fetch)
    server_out: str = field(default="", repr=False)  # its server's output, when its tool reads it

    @property
    def end(self) -> dict[str, Any]:
        return (self.doc or {}).get("end") or {}


@dataclass(frozen=True)
class Tool:
    """A program that makes tcp and udp flows (`tool:`): its client's and its server's
    command lines, and the reading of its output into an iperf3-shaped document
    (`FlowOutput.doc`), which the tcp and udp kinds read whatever the tool."""

    name: str
    client: Callable[[Call], list[str]]
    # (the call, the address it binds to, how long it waits for its client's handshake,
    # how long it lives) -> its command line
    server: Callable[[Call, str, float, float], list[str]]
    parse: Callable[[FlowOutput], None]
    keyed: bool = False  # it reads the flow's key from its environment (KEY_ENV)
    server_output: str = "json"  # the extension of its server's output (server-NAME.EXT)
    reads_server: bool = False  # its parser reads its server's output (FlowOutput.server_out)
    # (its server's output so far, the flow, the report interval) -> whether it holds
    # what the parser reads (the runner waits a little for it after the client ends)
    server_done: Callable[[str, FlowSpec, float], bool] | None = None
    udp_server: bool = False  # its server of a udp flow listens on UDP only (no control connection)


@dataclass(frozen=True)
class Kind:
    """A flow kind: its client's command line (None: it runs itself, as web does), its
    output's reading (parse, once; summary: its measured numbers; series: its samples
    in time order), what theory calls for it (grade/expect.py's hook), the metric it is
    graded by and the others worth a glance, and where its raw output is kept
    (flows/NAME.EXT). tcp and udp take their command lines and parser from their tool."""

    name: str
    argv: Callable[[Call], list[str]] | None
    parse: Callable[[FlowOutput], None]
    summary: Callable[[FlowOutput], dict[str, Any]]
    series: Callable[[FlowOutput], list[dict[str, Any]]]
    theory: str | None  # "bulk", "rtt", "fetch", "web"; None: no theory (command)
    metric: str
    also: tuple[str, ...] = ()
    output: str = "json"
    served: bool = False  # a one-off server per flow (its tool's)
    # How long its process may run (its spec, its duration), for a kind without a
    # server (a served one's client waits as the runner reckons: setup on long paths).
    limit_s: Callable[[FlowSpec, float], float] | None = None

    @property
    def load(self) -> bool:
        """It fills a path (tcp, udp): flows beside it share the path with it."""
        return self.name in LOAD_KINDS

    @property
    def measuring(self) -> bool:
        """It measures what the load does to the path (ping, probe, fetch, web)."""
        return self.name in MEASURING_KINDS


def ms_to_s(v: float | None) -> float | None:
    return None if v is None else v / 1e3


def stats(prefix: str, xs: list[float]) -> dict[str, Any]:
    """mean, p50, p99, std and min of xs as PREFIX_mean ... (None each without any)."""
    if not xs:
        return {f"{prefix}_mean": None, f"{prefix}_p50": None, f"{prefix}_p99": None,
                f"{prefix}_std": None, f"{prefix}_min": None}
    s = sorted(xs)
    return {f"{prefix}_mean": statistics.fmean(s), f"{prefix}_p50": statistics.median(s),
            f"{prefix}_p99": s[min(len(s) - 1, int(math.ceil(0.99 * len(s))) - 1)],
            f"{prefix}_std": statistics.pstdev(s), f"{prefix}_min": s[0]}


def run_process(outcome: FlowOutput, argv: list[str], timeout: float, started: float,
                stop, env: dict[str, str] | None = None, stdin_text: str | None = None) -> None:
    """Runs argv (already wrapped for its namespace) to its end or the timeout, or
    until `stop` is set; fills in the outcome. `env`: its environment (default this
    process's); `stdin_text`: what it reads on its standard input (a remote flow's key)."""
    outcome.start_s = time.monotonic() - started
    try:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             **({"stdin": subprocess.PIPE} if stdin_text is not None else {}))
    except OSError as e:
        outcome.error = f"could not start {argv[0]}: {e}"
        return
    deadline = time.monotonic() + timeout
    out = err = ""
    feed = stdin_text
    while True:
        try:
            out, err = p.communicate(input=feed, timeout=0.1)  # reads as it waits: no full pipe
            break
        except subprocess.TimeoutExpired:
            feed = None  # given once; the rest of it is still written
        if stop.is_set() or time.monotonic() > deadline:
            if not stop.is_set():
                outcome.error = f"did not finish within {timeout:g} s: stopped"
            p.terminate()
            try:
                out, err = p.communicate(timeout=3)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            break
    outcome.end_s = time.monotonic() - started
    outcome.code, outcome.stdout, outcome.stderr = p.returncode, out or "", err or ""


def wait_for_flows(threads: list[threading.Thread], t0: float, limit_s: float, stop: threading.Event,
                   tick: Callable[[float], None] | None = None, length_s: float = 0.0,
                   check: Callable[[], bool] | None = None) -> bool:
    """Waits for the flows' threads (started at t0 on the monotonic clock), ticking the
    progress; sets `stop` past limit_s or when `check()` says so. Ctrl-C stops them and
    returns True (interrupted), after waiting up to 10 s for each to end."""
    try:
        while any(t.is_alive() for t in threads):
            if time.monotonic() - t0 > limit_s:
                stop.set()
            if check is not None and check():
                stop.set()
            for t in threads:
                t.join(timeout=0.1)
            if tick:
                tick(min(time.monotonic() - t0, length_s))
    except KeyboardInterrupt:
        stop.set()
        for t in threads:
            t.join(timeout=10)
        return True
    return False
