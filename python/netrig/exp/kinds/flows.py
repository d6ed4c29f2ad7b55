"""One flow of a run: the command it is, and what its output says.

Every flow runs as a process inside its `from` node: netrig-perf (tcp, udp, probe, and
fetch as request/response transactions) against a one-off server on `to`, the system
`ping`, or a user's command. `Flow.summary()` is its row in the tidy CSV (measured
numbers only; theory is added by the runner), `Flow.series()` its time series (seconds
from the run's start).

A flow's server serves only its flow: it gets a fresh random key through its
environment (never its command line: `flow_key`, `keyed_env`), which its client proves
(netrig-perf's challenge refuses anyone else's connection), binds to the address the
flow is sent to, and exits at the flow's end plus a grace (`server_argv`).
"""

from __future__ import annotations

import math
import os
import re
import secrets
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from netrig._bins import binary
from netrig.exp.kinds import perfjson, web
from netrig.exp.spec.model import FlowSpec

_NUM = r"\d+(?:\.\d+)?"
# A reply of iputils ping -D: "[1700000000.123456] 64 bytes from A: icmp_seq=1 ttl=64
# time=0.045 ms", and " (DUP!)" after a duplicate.
_PING = re.compile(rf"^\[({_NUM})\] .*\bicmp_seq=(\d+) .*\btime=({_NUM}) ms( \(DUP!\))?")
_PING_STATS = re.compile(r"^(\d+) packets transmitted, (\d+) received")


CONNECT_TIMEOUT_S = 5.0  # netrig-perf's --connect-timeout for a flow that gives none
# What a tcp/udp flow's failure says when it is a time-out: nothing came back in time,
# or the neighbour could not be resolved (ARP's requests lost too), for its connection,
# its setup or its data (not a refusal, a usage or a program error).
_TIMED_OUT = ("timed out", "no route to host", "peer closed the control connection",
              "did not finish within", "idle timeout", "connection reset")


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


def server_argv(port: int, interval: float, handshake_s: float, bind: str, lifetime_s: float) -> list[str]:
    """netrig-perf's one-off server for a flow: -J, so that a client's
    --get-server-output carries the receiver's own intervals, and the client's -i (as
    in iperf3, a server reports at its own -i: the client's is not sent to it); it
    waits for the client's handshake as long as the client waits for its connection,
    listens on the address the flow is sent to (`bind`) only, and exits after
    `lifetime_s` whatever happened (see `server_lifetime_s`). Its key is not here: it
    comes through the environment (`keyed_env`)."""
    return [str(binary("netrig-perf")), "-s", "-1", "-p", str(port), "-B", bind, "-J", "-i", f"{interval:g}",
            "--handshake-timeout", f"{max(CONNECT_TIMEOUT_S, handshake_s):g}",
            "--exit-after", f"{lifetime_s:.0f}"]


def server_lifetime_s(f: FlowSpec, client_timeout_s: float) -> float:
    """How long a flow's server lives: until the flow's start, plus the longest its
    client may run (the runner's own limit for it), plus `SERVER_GRACE_S`."""
    return f.seconds("start") + client_timeout_s + SERVER_GRACE_S


def perf_argv(f: FlowSpec, addr: str, port: int, duration: float, interval: float,
              tcp_info_ms: int | None) -> list[str]:
    """netrig-perf's client command line for a tcp, udp, probe or fetch flow."""
    argv = [str(binary("netrig-perf")), "-c", addr, "-p", str(port), "-J",
            "-i", f"{interval:g}", "--connect-timeout", f"{connect_timeout_s(f) * 1e3:.0f}"]
    if f.kind in ("tcp", "udp"):
        # iperf's -O comes before -t's time; a scenario's omit is the first part of the
        # flow's duration, so that flows with one duration end together.
        measured = duration - f.seconds("omit")
        argv += ["-n", str(f.nbytes("bytes"))] if f.bytes is not None else ["-t", _secs(measured)]
        if f.kind == "udp":
            argv.append("-u")
        if f.parallel > 1:
            argv += ["-P", str(f.parallel)]
        for flag, v in (("-w", f.nbytes("window")), ("-l", f.nbytes("length")),
                        ("-b", None if f.rate is None else int(f.rate_bps or 0)),
                        ("-C", f.cc), ("-M", f.mss)):
            if v is not None:
                argv += [flag, str(v)]
        if f.omit is not None:
            argv += ["-O", str(int(f.seconds("omit")))]
        if f.reverse:
            argv.append("-R")  # the client receives: its own intervals are the receiver's
        else:
            argv.append("--get-server-output")  # the receiver's intervals, in series()
        if f.nodelay:
            argv.append("-N")
        if tcp_info_ms:
            argv += ["--tcp-info-interval", str(tcp_info_ms)]
    elif f.kind == "probe":
        argv += ["-t", _secs(duration), "--probe",
                 "--probe-interval", f"{f.seconds('interval', 0.01) * 1e3:g}"]
        if f.size is not None:
            argv += ["--probe-size", str(f.nbytes("size"))]
    elif f.kind == "fetch":
        argv += ["-t", _secs(duration), "--rr", str(f.nbytes("size") or 100_000),
                 "--rr-interval", f"{f.seconds('interval', 1.0) * 1e3:g}"]
        if f.new_conn:
            argv.append("--rr-new-conn")
    return argv


def _secs(s: float) -> str:
    # netrig-perf's -t takes whole seconds
    return str(max(1, int(math.ceil(s - 1e-9))))


def ping_count(duration: float, interval: float) -> int:
    """How many echo requests fit in the duration (0.6 s at 0.2 s is 3, although
    0.6 / 0.2 is 2.9999999999999996 in floating point)."""
    return max(1, int(duration / interval + 1e-9))


def ping_argv(f: FlowSpec, addr: str, duration: float) -> list[str]:
    interval = f.seconds("interval", 1.0)
    count = ping_count(duration, interval)
    # -c alone stops after *sending* count requests (with -w it would keep sending until
    # count replies came back, well past the flow's time when some are lost); -W: how
    # long the last ones may take.
    argv = ["ping", "-n", "-D", "-i", f"{interval:g}", "-c", str(count), "-W", "3"]
    if f.size is not None:
        argv += ["-s", str(f.nbytes("size"))]
    return [*argv, addr]


@dataclass
class Outcome:
    """What a flow's process left: its output and how it ended."""

    name: str
    spec: FlowSpec
    start_s: float  # when it was started, seconds from the run's start
    end_s: float = 0.0
    code: int | None = None
    stdout: str = ""
    stderr: str = ""
    error: str | None = None
    planned_s: float = 0.0  # how long it was meant to run
    doc: dict[str, Any] | None = field(default=None, repr=False)
    fetches: list[web.Fetch] = field(default_factory=list, repr=False)  # a web flow's

    def parse(self) -> None:
        """Reads the output once; what cannot be read becomes `error` (never an exception),
        and a netrig-perf document that is not the shape summary() and series() read is
        dropped."""
        if self.spec.kind in ("tcp", "udp", "probe", "fetch"):
            self.doc, problem = perfjson.parse(self.stdout)
            if problem:
                said = self.stderr.strip()[-300:]
                self.error = self.error or problem + (f"; its stderr ends: {said}" if said else "")
            elif self.doc is not None and self.doc.get("error"):
                self.error = f"netrig-perf: {self.doc['error']}"
        elif self.spec.kind == "web":
            self.fetches, problems = web.parse(self.stdout)
            size = web.object_size(self.spec)
            if not any(x.failure(size) is None for x in self.fetches) and self.error is None:
                why = [x.failure(size) for x in self.fetches[:1]] + problems[:2]
                self.error = "no fetch succeeded" + (f": {'; '.join(str(w) for w in why)}" if why else "")
        elif self.spec.kind == "ping" and self.error is None:
            problem = ping_problem(self.stdout)
            if self.code not in (0, 1):
                self.error = f"ping exited {self.code}: {self.stderr.strip()[-300:]}"
            elif problem:
                self.error = problem
            elif self.code == 0 and not self.ping_samples():
                self.error = f"ping exited 0 but printed no reply: {self.stdout.strip()[-300:]!r}"

    @property
    def end(self) -> dict[str, Any]:
        return (self.doc or {}).get("end") or {}

    # Measured numbers.
    def summary(self) -> dict[str, Any]:
        k = self.spec.kind
        out: dict[str, Any] = {"status": "error" if self.error else "ok", "error": self.error or ""}
        if k in ("tcp", "udp"):
            out.update(self._bulk())
            if why := self.timed_out(out):
                # a clear row: no data, and why (not a program's failure)
                out.update({"status": "timed_out", "error": why,
                            "connected": not why.startswith("never connected")})
                for key in ("throughput_bps", "bytes"):
                    out[key] = out.get(key) or 0
            elif out["status"] == "ok":
                out["connected"] = True
        elif k == "ping":
            rtts = [r for _, r in self.ping_samples()]
            out.update(_stats("rtt_ms", rtts))
            counts = ping_counts(self.stdout)
            if counts is None:  # no statistics line (ping was stopped): what was planned
                counts = (ping_count(self.planned_s, self.spec.seconds("interval", 1.0)), len(rtts))
            sent, received = counts
            out["loss_pct"] = 100.0 * (1 - received / sent) if sent and (rtts or not self.error) else None
        elif k == "probe" and self.doc:
            p = perfjson.probe(self.doc) or perfjson.Probe()
            r = p.rtt_ms
            out.update({"rtt_ms_mean": r.mean, "rtt_ms_p50": r.p50, "rtt_ms_p99": r.p99, "rtt_ms_std": r.stddev,
                        "rtt_ms_min": r.min, "loss_pct": p.loss_percent})
        elif k == "fetch" and self.doc:
            rr = perfjson.rr(self.doc) or perfjson.Rr()
            t = rr.time_ms
            out.update({"fetch_s_mean": _ms(t.mean), "fetch_s_p50": _ms(t.p50), "fetch_s_std": _ms(t.stddev),
                        "fetch_s_max": _ms(t.max), "fetches": rr.transactions, "fetches_failed": rr.failed})
        elif k == "web":
            out.update(web.summary(self.fetches, web.object_size(self.spec)))
        elif k == "command":
            out.update({"command_s": self.end_s - self.start_s, "exit_code": self.code})
            if self.code not in (0, None) and not self.error:
                out["status"], out["error"] = "error", f"exit code {self.code}"
        return out

    def timed_out(self, measured: dict[str, Any]) -> str | None:
        """Why a tcp or udp flow is a time-out: it never connected (netrig-perf could
        not connect within its connect timeout, or no route: the neighbour could not be
        resolved), its setup or its end did not get through in time, or it moved no
        data; None when it is not one (it moved data, or failed otherwise)."""
        err = self.error or ""
        if err and not any(w in err.lower() for w in _TIMED_OUT):
            return None  # a failure of another kind: an error, not a time-out
        got = measured.get("bytes") or 0
        if not err:
            return None if got or not self.doc else "moved no data: the receiver counted 0 bytes"
        if "unable to connect" in err.lower():
            return f"never connected within its {connect_timeout_s(self.spec):g} s connect timeout ({err})"
        return None if got else f"moved no data ({err})"

    def _bulk(self) -> dict[str, Any]:
        e = self.end
        if not e:
            return {}
        rcv = e.get("sum_received") or e.get("sum") or {}
        snd = e.get("sum_sent") or e.get("sum") or {}
        out: dict[str, Any] = {"throughput_bps": rcv.get("bits_per_second"),
                               "sent_bps": snd.get("bits_per_second"),
                               "bytes": rcv.get("bytes"), "seconds": rcv.get("seconds")}
        out.update(perfjson.pacing_summary(self.doc or {}, snd.get("bytes") or 0))
        if self.spec.kind == "tcp":
            retr = snd.get("retransmits")
            out["retransmits"] = retr
            mss = self._mss()
            segs = (snd.get("bytes") or 0) / mss if mss else 0
            out["retrans_pct"] = 100.0 * retr / segs if retr is not None and segs else None
            rtts = [s["sender"].get("mean_rtt") for s in e.get("streams", [])
                    if isinstance(s.get("sender"), dict) and s["sender"].get("mean_rtt")]
            out["rtt_ms_mean"] = statistics.fmean(rtts) / 1e3 if rtts else None
            out["window_bytes"] = self.advertised_window()
            start = (self.doc or {}).get("start") or {}
            for key, col in (("sndbuf_actual", "sndbuf_bytes"), ("rcvbuf_actual", "rcvbuf_bytes")):
                if isinstance(start.get(key), (int, float)) and start[key] > 0:
                    out[col] = start[key]  # what the kernel made of -w (SO_SNDBUF, SO_RCVBUF read back)
        else:
            s = e.get("sum") or {}
            # The receiver's own time runs to the TEST_END message, which crosses the same
            # full queues (and can be lost there, costing an RTO): the rate the datagrams
            # came out of the path is what arrived over the time they were being sent.
            sent_s = snd.get("seconds")
            if rcv.get("bytes") is not None and sent_s:
                out["throughput_bps"] = rcv["bytes"] * 8 / sent_s
                out["receiver_seconds"] = rcv.get("seconds")
            out.update({"loss_pct": rcv.get("lost_percent", s.get("lost_percent")),
                        "jitter_ms": rcv.get("jitter_ms", s.get("jitter_ms")),
                        "packets": rcv.get("packets", s.get("packets"))})
        return out

    def advertised_window(self) -> float | None:
        """The window the receiver advertised, as the sender saw it (median of its
        TCP_INFO snd_wnd after the first second, and after `omit`): what `-w` became in
        the kernel, or how far autotuning grew it."""
        if self.spec.kind != "tcp" or self.spec.reverse:
            return None
        xs = [(x.t, x.snd_wnd) for x in perfjson.tcp_info(self.doc or {}) if x.sender and x.snd_wnd]
        after = max(1.0, self.spec.seconds("omit"))
        late = [w for t, w in xs if t >= after] or [w for _, w in xs]
        return float(statistics.median(late)) if late else None

    def _mss(self) -> float:
        for x in perfjson.tcp_info(self.doc or {}):
            if x.snd_mss:
                return float(min(x.snd_mss, 1448))
        return 1448.0

    # Time series.
    def series(self) -> list[dict[str, Any]]:
        """Samples: {"t": s from the run's start, ...} in time order."""
        k, t0 = self.spec.kind, self.start_s
        out: list[dict[str, Any]] = []
        if k in ("tcp", "udp") and self.doc:
            # As iperf3's, netrig-perf's clock starts again after -O's omitted seconds: the
            # intervals (and TCP_INFO samples) after them are shifted by the omitted time.
            mine = _omitted_s(self.doc.get("intervals", []))
            for iv in self.doc.get("intervals", []):
                s = iv.get("sum") or {}
                if s.get("omitted"):
                    continue
                row = {"t": t0 + mine + s.get("end", 0), "bps": s.get("bits_per_second")}
                if s.get("sender") is False:  # -R: the client received
                    row["recv_bps"] = s.get("bits_per_second")
                if "retransmits" in s:
                    row["retransmits"] = s["retransmits"]
                if "lost_percent" in s:
                    row["loss_pct"] = s["lost_percent"]
                if "jitter_ms" in s:
                    row["jitter_ms"] = s["jitter_ms"]
                out.append(row)
            # The server's intervals (with --get-server-output and a -J server): what
            # the receiver counted, not what was written into the socket.
            theirs = self.doc.get("server_output_json") or {}
            ivs = theirs.get("intervals", []) if isinstance(theirs, dict) else []
            shift = _omitted_s(ivs)
            for iv in ivs:
                s = iv.get("sum") or {}
                if not s.get("omitted") and s.get("sender") is False and s.get("end") is not None:
                    out.append({"t": t0 + shift + s["end"], "recv_bps": s.get("bits_per_second")})
            after, last = False, -1.0  # a sample's t going back: the clock restarted after -O
            for x in perfjson.tcp_info(self.doc):
                after = after or x.t < last - 1e-6
                last = x.t
                out.append({"t": t0 + x.t + (mine if after else 0.0),
                            "cwnd_bytes": x.snd_cwnd if x.snd_cwnd_bytes is None else x.snd_cwnd_bytes,
                            "rtt_ms": (x.rtt_us or 0) / 1e3, "socket": x.socket})
        elif k == "ping":
            out = [{"t": t, "rtt_ms": r} for t, r in self.ping_samples()]
        elif k == "probe" and self.doc:
            p = perfjson.probe(self.doc) or perfjson.Probe()
            out = [{"t": t0 + x.t, "rtt_ms": x.rtt_ms} for x in p.rows() if x.rtt_ms is not None]
        elif k == "fetch" and self.doc:
            rr = perfjson.rr(self.doc) or perfjson.Rr()
            out = [{"t": t0 + x.t, "fetch_s": _ms(x.time_ms)} for x in rr.rows()]
        elif k == "web":
            out = web.series(self.fetches, t0, web.object_size(self.spec))
        out.sort(key=lambda r: r["t"])
        return out

    def ping_samples(self) -> list[tuple[float, float]]:
        """(seconds from the run's start, RTT ms) per reply (a duplicate is not a
        reply); ping -D stamps wall time."""
        rows = []
        for line in self.stdout.splitlines():
            m = _PING.match(line)
            if m and not m.group(4):
                rows.append((float(m.group(1)), float(m.group(3))))
        if not rows:
            return []
        first_wall = rows[0][0]
        return [(self.start_s + (w - first_wall), r) for w, r in rows]


def _omitted_s(intervals: list[dict[str, Any]]) -> float:
    """How long -O's omitted intervals lasted (their last end), 0 without any."""
    ends = [(iv.get("sum") or {}).get("end") or 0.0 for iv in intervals
            if isinstance(iv, dict) and (iv.get("sum") or {}).get("omitted")]
    return float(max(ends, default=0.0))


def ping_counts(text: str) -> tuple[int, int] | None:
    """(transmitted, received) from ping's statistics line, or None without one."""
    for line in text.splitlines():
        if m := _PING_STATS.match(line):
            return int(m.group(1)), int(m.group(2))
    return None


def ping_problem(text: str) -> str | None:
    """What is wrong with ping's output: a line that looks like a reply but does not
    read as one (ping stopped mid-line is not a problem: its last line is left out)."""
    lines = text.splitlines()
    if text and not text.endswith("\n"):
        lines = lines[:-1]
    for n, line in enumerate(lines, 1):
        if "icmp_seq=" in line and " bytes from " in line and "time=" in line and not _PING.match(line):
            return f"ping output line {n} is not a reply netrig can read: {line[:200]!r}"
    return None


def _ms(v: float | None) -> float | None:
    return None if v is None else v / 1e3


def _stats(prefix: str, xs: list[float]) -> dict[str, Any]:
    if not xs:
        return {f"{prefix}_mean": None, f"{prefix}_p50": None, f"{prefix}_p99": None,
                f"{prefix}_std": None, f"{prefix}_min": None}
    s = sorted(xs)
    return {f"{prefix}_mean": statistics.fmean(s), f"{prefix}_p50": statistics.median(s),
            f"{prefix}_p99": s[min(len(s) - 1, int(math.ceil(0.99 * len(s))) - 1)],
            f"{prefix}_std": statistics.pstdev(s), f"{prefix}_min": s[0]}


def run_process(outcome: Outcome, argv: list[str], timeout: float, started: float,
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
