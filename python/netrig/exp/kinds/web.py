"""A `web` flow's client: curl fetching an object from nginx (exp/execute/webserver.py), and what
each fetch measured.

One fetch is one HTTP GET of the flow's object; curl reports its timing breakdown with
`-w '%{json}'` (written to curl's unbuffered stderr, `%{stderr}`, so that each line is
read, and stamped, as its fetch ends). The two ways of fetching:

    new_conn: true   a new curl process, so a new TCP connection (and TLS handshake),
                     per fetch, started every `interval` (as the seed did)
    new_conn: false  keep-alive: one curl process fetching the object `count` times
                     over one connection (URL globbing, `?n=[1-N]`); curl's own
                     `--rate` starts each fetch `interval` after the previous one
                     started (N/day, exact to the millisecond), or at once when that
                     one took longer

Either way a fetch that takes longer than the interval delays the next, as a browser's
page loads would. A fetch fails on a curl error (its message is kept), an HTTP status
other than 200, or a body that is not the object's size; the flow goes on.

Per fetch: start (s from the flow's start: the line's arrival less curl's total time),
connect, first byte and total time (s), bytes, HTTP version, whether a connection was
opened. A flow's summary: mean, std, p50, max of total and of first-byte time over the
successful fetches, how many fetches and failures, connections opened.
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netrig.exp.kinds.base import FlowOutput
from netrig.exp.preflight import webtools
from netrig.exp.spec.model import FlowSpec
from netrig.procs import end as end_process

DEFAULT_SIZE = 100_000
PORT_HTTP1 = 8080  # nginx's ports in the server's namespace (exp/execute/webserver.py)
PORT_H2C = 8081
PORT_TLS = 8443
# curl -w's variables that a fetch reads, and the type each must have.
_NUMBERS = ("time_namelookup", "time_connect", "time_appconnect", "time_pretransfer",
            "time_starttransfer", "time_total", "size_download", "response_code", "num_connects",
            "exitcode")
_STRINGS = ("http_version", "remote_ip", "errormsg", "url_effective")


def object_size(f: FlowSpec) -> int:
    """The object a web flow fetches (bytes): its size:, 100 KB (the seed's page) by default."""
    return f.nbytes("size") or DEFAULT_SIZE


def servers_needed(flows: dict[str, FlowSpec]) -> dict[str, tuple[set[int], bool]]:
    """The web servers a run starts: destination node -> (the object sizes it serves,
    whether it also speaks TLS)."""
    out: dict[str, tuple[set[int], bool]] = {}
    for f in flows.values():
        if f.kind == "web" and f.to is not None:
            sizes, tls = out.get(f.to, (set(), False))
            out[f.to] = (sizes | {object_size(f)}, tls or f.tls)
    return out


def port(http: str, tls: bool) -> int:
    if tls:
        return PORT_TLS
    return PORT_H2C if http == "2" else PORT_HTTP1


def url(addr: str, size: int, http: str, tls: bool) -> str:
    host = f"[{addr}]" if ":" in addr else addr
    return f"{'https' if tls else 'http'}://{host}:{port(http, tls)}/{object_name(size)}"


def object_name(size: int) -> str:
    return f"obj-{size}.bin"


def fetch_count(duration: float, interval: float) -> int:
    """How many fetches start within the duration (one every interval, from 0)."""
    return max(1, int(duration / interval + 1e-9))


def rate_per_day(interval: float) -> int:
    """curl --rate's N for N/d: one fetch start every `interval` s (curl waits
    86 400 000 / N ms, integer ms, between starts)."""
    return max(1, round(86400 / interval))


def curl_argv(exe: Path, target: str, http: str, tls: bool, max_time: float,
              count: int | None = None, interval: float | None = None, n: int = 1) -> list[str]:
    """curl's command line: one fetch (`?n=N`), or with `count`, `count` fetches over
    one connection, started `interval` apart."""
    argv = [str(exe), "-s", "--connect-timeout", "5", "-m", f"{max_time:g}",
            "-w", "%{stderr}%{json}\\n", "-o", "/dev/null"]
    if http == "2":
        argv.append("--http2" if tls else "--http2-prior-knowledge")
    else:
        argv.append("--http1.1")
    if tls:
        argv += ["-k", "--tlsv1.3"]  # the run's self-signed certificate
    if count is None:
        return [*argv, f"{target}?n={n}"]
    if count > 1 and interval:
        argv += ["--rate", f"{rate_per_day(interval)}/d"]
    return [*argv, f"{target}?n=[1-{count}]"]


@dataclass
class Fetch:
    """One fetch, as curl reported it."""

    t: float  # its start, s from the flow's start
    total_s: float
    first_byte_s: float  # time_starttransfer
    connect_s: float  # time_connect (0: the connection was reused)
    tls_s: float  # time_appconnect (0 without TLS)
    bytes: int
    http_version: str
    code: int
    connects: int  # num_connects: 1 when this fetch opened its connection
    remote_ip: str
    exitcode: int
    errormsg: str

    def failure(self, size: int | None) -> str | None:
        """Why this fetch failed (None: it did not)."""
        if self.exitcode:
            return f"curl ({self.exitcode}): {self.errormsg or 'no message'}"
        if self.code != 200:
            return f"HTTP {self.code}"
        if size is not None and self.bytes != size:
            return f"got {self.bytes} bytes, not the object's {size}"
        return None

    @property
    def new_conn(self) -> bool:
        return self.connects > 0


def record(line: str, end_s: float) -> str:
    """A curl -w json line as the flow keeps it: curl's fields that matter, and `t`,
    the fetch's start from the line's arrival (`end_s`, s from the flow's start) less
    curl's total time. A line that is not curl's JSON is kept as {"t", "said"}."""
    try:
        doc = json.loads(line)
    except json.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict):
        return json.dumps({"t": round(end_s, 6), "said": line.strip()[:500]})
    total = doc.get("time_total")
    start = end_s - total if isinstance(total, (int, float)) else end_s
    kept = {k: doc[k] for k in (*_NUMBERS, *_STRINGS) if k in doc}
    return json.dumps({"t": round(start, 6), **kept})


def parse(text: str) -> tuple[list[Fetch], list[str]]:
    """The flow's kept lines (record()'s): the fetches, and what else curl said or what
    is wrong with a line (`line N: ...`)."""
    fetches: list[Fetch] = []
    problems: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(f"line {n}: not JSON ({e.msg})")
            continue
        if not isinstance(d, dict) or not _is_num(d.get("t")):
            problems.append(f"line {n}: not a fetch record")
            continue
        if "said" in d:
            problems.append(f"curl said: {d['said']}")
            continue
        numbers = [k for k in _NUMBERS if not _is_num(d.get(k))]
        strings = [k for k in ("http_version",) if not isinstance(d.get(k), str)]
        if numbers or strings:
            problems.append(f"line {n}: curl's " + "; ".join(
                f"{', '.join(ks)} missing or not {what}" for ks, what in
                ((numbers, "numbers" if len(numbers) > 1 else "a number"),
                 (strings, "a string")) if ks))
            continue
        fetches.append(Fetch(t=float(d["t"]), total_s=float(d["time_total"]),
                             first_byte_s=float(d["time_starttransfer"]),
                             connect_s=float(d["time_connect"]), tls_s=float(d["time_appconnect"]),
                             bytes=int(d["size_download"]), http_version=d["http_version"],
                             code=int(d["response_code"]), connects=int(d["num_connects"]),
                             remote_ip=str(d.get("remote_ip") or ""), exitcode=int(d["exitcode"]),
                             errormsg=str(d.get("errormsg") or "")))
    return fetches, problems


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def summary(fetches: list[Fetch], size: int | None) -> dict[str, Any]:
    """The flow's row: total and first-byte time over the fetches that succeeded."""
    ok = [x for x in fetches if x.failure(size) is None]
    failed = [(i, x) for i, x in enumerate(fetches, 1) if x.failure(size) is not None]
    out: dict[str, Any] = {}
    for key, xs in (("fetch_s", [x.total_s for x in ok]), ("first_byte_s", [x.first_byte_s for x in ok])):
        out.update({f"{key}_mean": statistics.fmean(xs) if xs else None,
                    f"{key}_std": statistics.pstdev(xs) if xs else None,
                    f"{key}_p50": statistics.median(xs) if xs else None,
                    f"{key}_max": max(xs) if xs else None})
    opened = [x.connect_s for x in ok if x.new_conn]
    versions = Counter(x.http_version for x in ok)
    out.update({"connect_s_mean": statistics.fmean(opened) if opened else None,
                "fetches": len(fetches), "fetches_failed": len(failed),
                "connections": sum(x.connects for x in fetches),
                "http_version": "/".join(v for v, _ in versions.most_common()) or None,
                "fetch_bytes": statistics.fmean(x.bytes for x in ok) if ok else None})
    if failed:
        why = Counter(x.failure(size) for _, x in failed)
        out["fetch_errors"] = "; ".join(f"{n}× {msg}" for msg, n in why.most_common(3)) + (
            f"; first at fetch {failed[0][0]}" if failed else "")
    return out


def series(fetches: list[Fetch], t0: float, size: int | None) -> list[dict[str, Any]]:
    """Each fetch at its start (s from the run's start; the flow started at t0): its
    total and first-byte time, or why it failed."""
    out: list[dict[str, Any]] = []
    for x in fetches:
        t = round(t0 + x.t, 6)
        why = x.failure(size)
        out.append({"t": t, "failed": why} if why else
                   {"t": t, "fetch_s": x.total_s, "first_byte_s": x.first_byte_s, "new_conn": x.new_conn})
    return out


def run(ns: str, target: str, http: str, tls: bool, new_conn: bool, duration: float,
        interval: float, started: float, stop: threading.Event) -> tuple[list[str], str | None]:
    """Runs the flow's fetches in namespace `ns` from now for `duration` s; returns the
    kept lines (record()'s) and what went wrong, if anything stopped it. `started`:
    the flow's start on the monotonic clock."""
    exe = webtools.curl_path()
    if exe is None:
        return [], f"curl is not installed (apt-get install {webtools.CURL_PACKAGE})"
    count = fetch_count(duration, interval)
    max_time = max(30.0, duration)
    lines: list[str] = []
    deadline = started + duration + 30
    if not new_conn:
        argv = curl_argv(exe, target, http, tls, max_time, count=count, interval=interval)
        return lines, _one(["ip", "netns", "exec", ns, *argv], lines, started, deadline, stop)
    for k in range(count):
        if stop.wait(max(0.0, started + k * interval - time.monotonic())):
            break
        argv = curl_argv(exe, target, http, tls, max_time, n=k + 1)
        problem = _one(["ip", "netns", "exec", ns, *argv], lines, started, deadline, stop)
        if problem:
            return lines, problem
    return lines, None


def _one(argv: list[str], lines: list[str], started: float, deadline: float,
         stop: threading.Event) -> str | None:
    """One curl process: each line it writes on stderr is recorded as it comes; it is
    stopped at the deadline or when `stop` is set. What went wrong, or None."""
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    except OSError as e:
        return f"could not start curl: {e}"

    def read() -> None:
        assert p.stderr is not None
        for line in p.stderr:
            lines.append(record(line, time.monotonic() - started))

    before = len(lines)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    problem = None
    while p.poll() is None:
        if stop.wait(0.05):
            break
        if time.monotonic() > deadline:
            problem = "curl did not finish by the flow's end + 30 s: stopped"
            break
    end_process(p)
    reader.join(timeout=5)
    if p.returncode and p.returncode > 0 and len(lines) == before:
        problem = problem or f"curl exited {p.returncode} without a report"
    return problem


# The web kind's reading of its outcome (registry.KINDS["web"]).
def read(o: FlowOutput) -> None:
    """Its fetches, once; no fetch that succeeded is the flow's error."""
    o.fetches, problems = parse(o.stdout)
    size = object_size(o.spec)
    if not any(x.failure(size) is None for x in o.fetches) and o.error is None:
        why = [x.failure(size) for x in o.fetches[:1]] + problems[:2]
        o.error = "no fetch succeeded" + (f": {'; '.join(str(w) for w in why)}" if why else "")


def flow_summary(o: FlowOutput) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "error" if o.error else "ok", "error": o.error or ""}
    out.update(summary(o.fetches, object_size(o.spec)))
    return out


def flow_series(o: FlowOutput) -> list[dict[str, Any]]:
    return sorted(series(o.fetches, o.start_s, object_size(o.spec)), key=lambda r: r["t"])
