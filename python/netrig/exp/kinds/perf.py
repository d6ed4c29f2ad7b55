"""netrig-perf: the default tool of tcp and udp flows (`tool: netrig-perf`) and the
only maker of probe and fetch flows. Its command lines (a one-off keyed server per flow,
`server_argv`; the client, `perf_argv`), its -J document checked against the shape the
kinds read (through kinds/perfjson.py, netrig-perf's typed JSON), and the probe and fetch kinds' summary and
series (tcp and udp read the document in kinds/bulk.py).
"""

from __future__ import annotations

from typing import Any

from netrig._bins import binary
from netrig.exp.kinds import perfjson
from netrig.exp.kinds.base import (
    CONNECT_TIMEOUT_S,
    Call,
    FlowOutput,
    Tool,
    connect_timeout_s,
    ms_to_s,
    whole_seconds,
)
from netrig.exp.spec.model import FlowSpec


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


def perf_argv(f: FlowSpec, addr: str, port: int, duration: float, interval: float,
              tcp_info_ms: int | None) -> list[str]:
    """netrig-perf's client command line for a tcp, udp, probe or fetch flow."""
    argv = [str(binary("netrig-perf")), "-c", addr, "-p", str(port), "-J",
            "-i", f"{interval:g}", "--connect-timeout", f"{connect_timeout_s(f) * 1e3:.0f}"]
    if f.kind in ("tcp", "udp"):
        # iperf's -O comes before -t's time; a scenario's omit is the first part of the
        # flow's duration, so that flows with one duration end together.
        measured = duration - f.seconds("omit")
        argv += ["-n", str(f.nbytes("bytes"))] if f.bytes is not None else ["-t", whole_seconds(measured)]
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
        argv += ["-t", whole_seconds(duration), "--probe",
                 "--probe-interval", f"{f.seconds('interval', 0.01) * 1e3:g}"]
        if f.size is not None:
            argv += ["--probe-size", str(f.nbytes("size"))]
    elif f.kind == "fetch":
        argv += ["-t", whole_seconds(duration), "--rr", str(f.nbytes("size") or 100_000),
                 "--rr-interval", f"{f.seconds('interval', 1.0) * 1e3:g}"]
        if f.new_conn:
            argv.append("--rr-new-conn")
    return argv


def client(c: Call) -> list[str]:
    return perf_argv(c.spec, c.addr, c.port, c.duration, c.interval, c.tcp_info_ms)


def server(c: Call, bind: str, handshake_s: float, lifetime_s: float) -> list[str]:
    return server_argv(c.port, c.interval, handshake_s, bind, lifetime_s)


def parse(o: FlowOutput, tool: str = "netrig-perf") -> None:
    """Reads the -J document once (netrig-perf's, or iperf3's of the same shape); what
    cannot be read becomes `error`, and a document that is not the shape the kinds read
    is dropped."""
    o.doc, problem = perfjson.parse(o.stdout)
    if problem:
        if tool != "netrig-perf":
            problem = problem.replace("netrig-perf", tool)
        said = o.stderr.strip()[-300:]
        o.error = o.error or problem + (f"; its stderr ends: {said}" if said else "")
    elif o.doc is not None and o.doc.get("error"):
        o.error = f"{tool}: {o.doc['error']}"


TOOL = Tool("netrig-perf", client, server, parse, keyed=True)


def probe_summary(o: FlowOutput) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "error" if o.error else "ok", "error": o.error or ""}
    if o.doc:
        p = perfjson.probe(o.doc) or perfjson.Probe()
        r = p.rtt_ms
        out.update({"rtt_ms_mean": r.mean, "rtt_ms_p50": r.p50, "rtt_ms_p99": r.p99, "rtt_ms_std": r.stddev,
                    "rtt_ms_min": r.min, "loss_pct": p.loss_percent})
    return out


def probe_series(o: FlowOutput) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if o.doc:
        p = perfjson.probe(o.doc) or perfjson.Probe()
        out = [{"t": o.start_s + x.t, "rtt_ms": x.rtt_ms} for x in p.rows() if x.rtt_ms is not None]
    out.sort(key=lambda r: r["t"])
    return out


def fetch_summary(o: FlowOutput) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "error" if o.error else "ok", "error": o.error or ""}
    if o.doc:
        rr = perfjson.rr(o.doc) or perfjson.Rr()
        t = rr.time_ms
        out.update({"fetch_s_mean": ms_to_s(t.mean), "fetch_s_p50": ms_to_s(t.p50), "fetch_s_std": ms_to_s(t.stddev),
                    "fetch_s_max": ms_to_s(t.max), "fetches": rr.transactions, "fetches_failed": rr.failed})
    return out


def fetch_series(o: FlowOutput) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if o.doc:
        rr = perfjson.rr(o.doc) or perfjson.Rr()
        out = [{"t": o.start_s + x.t, "fetch_s": ms_to_s(x.time_ms)} for x in rr.rows()]
    out.sort(key=lambda r: r["t"])
    return out
