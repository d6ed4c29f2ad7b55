"""netrig-perf: the default tool of tcp and udp flows (`tool: netrig-perf`) and the
only maker of probe and fetch flows. Its command lines (a one-off keyed server per flow,
`server_argv`; the client, `perf_argv`), its -J document checked against the shape the
kinds read (`PERF_DOC`, `parse_perf_json`), and the probe and fetch kinds' summary and
series (tcp and udp read the document in kinds/bulk.py).
"""

from __future__ import annotations

import json
from typing import Any

from netrig._bins import binary
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
    o.doc, problem = parse_perf_json(o.stdout)
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
        p = o.end.get("probe") or {}
        r = p.get("rtt_ms") or {}
        out.update({"rtt_ms_mean": r.get("mean"), "rtt_ms_p50": r.get("p50"),
                    "rtt_ms_p99": r.get("p99"), "rtt_ms_std": r.get("stddev"),
                    "rtt_ms_min": r.get("min"), "loss_pct": p.get("loss_percent")})
    return out


def probe_series(o: FlowOutput) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if o.doc:
        p = o.end.get("probe") or {}
        cols = p.get("samples_columns") or ["seq", "t", "rtt_ms"]
        for row in p.get("samples", []):
            d = dict(zip(cols, row))
            if d.get("rtt_ms") is not None:
                out.append({"t": o.start_s + d["t"], "rtt_ms": d["rtt_ms"]})
    out.sort(key=lambda r: r["t"])
    return out


def fetch_summary(o: FlowOutput) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "error" if o.error else "ok", "error": o.error or ""}
    if o.doc:
        rr = o.end.get("rr") or {}
        t = rr.get("time_ms") or {}
        out.update({"fetch_s_mean": ms_to_s(t.get("mean")), "fetch_s_p50": ms_to_s(t.get("p50")),
                    "fetch_s_std": ms_to_s(t.get("stddev")), "fetch_s_max": ms_to_s(t.get("max")),
                    "fetches": rr.get("transactions"), "fetches_failed": rr.get("failed")})
    return out


def fetch_series(o: FlowOutput) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if o.doc:
        rr = o.end.get("rr") or {}
        cols = rr.get("samples_columns") or ["t", "time_ms"]
        for row in rr.get("samples", []):
            d = dict(zip(cols, row))
            out.append({"t": o.start_s + d["t"], "fetch_s": ms_to_s(d.get("time_ms"))})
    out.sort(key=lambda r: r["t"])
    return out


# The parts of netrig-perf's -J document that summary() and series() read, and the type
# each must have: a dict is an object whose listed keys are checked (others are left
# alone), a one-element list is an array of that, NUMBER a number (or null).
NUMBER = "number"
_SUM = {k: NUMBER for k in ("bits_per_second", "bytes", "seconds", "retransmits", "lost_percent",
                            "jitter_ms", "packets", "end")}
_PACING = {k: NUMBER for k in ("short_at_end_bytes", "forgiven_bytes", "behind_seconds", "max_behind_ms")}
_STATS = {k: NUMBER for k in ("mean", "p50", "p99", "stddev", "min", "max")}
_SAMPLES = {"samples": [[NUMBER]], "samples_columns": [str]}
PERF_DOC = {
    "error": str,
    "start": {"sndbuf_actual": NUMBER, "rcvbuf_actual": NUMBER},
    "end": {"sum_received": _SUM, "sum_sent": _SUM, "sum": _SUM,
            "streams": [{"sender": {"mean_rtt": NUMBER, "pacing": _PACING}, "udp": {"pacing": _PACING}}],
            "probe": {"rtt_ms": _STATS, "loss_percent": NUMBER, **_SAMPLES},
            "rr": {"time_ms": _STATS, "transactions": NUMBER, "failed": NUMBER, **_SAMPLES}},
    "intervals": [{"sum": _SUM}],
    "server_output_json": {"intervals": [{"sum": _SUM}]},
    "netrig": {"tcp_info": [{k: NUMBER for k in ("t", "snd_wnd", "snd_mss", "snd_cwnd", "snd_cwnd_bytes",
                                                  "rtt_us")}]},
}
_ROOT = "the document"
_NEEDED = {"tcp_info": "t"}  # keys an element must have
_COLUMNS = {"probe": ("t", "rtt_ms"), "rr": ("t", "time_ms")}


def _kind(v: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(v), "a number")


def _shape_problem(v: Any, shape: Any, where: str) -> str | None:
    if shape == NUMBER:
        ok = v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
        return None if ok else f"{where} is {_kind(v)}, not a number"
    if isinstance(shape, type):
        return None if v is None or isinstance(v, shape) else f"{where} is {_kind(v)}, not {_kind(shape())}"
    if isinstance(shape, list):
        if not isinstance(v, list):
            return f"{where} is {_kind(v)}, not an array"
        for i, x in enumerate(v):
            if problem := _shape_problem(x, shape[0], f"{where}[{i}]"):
                return problem
        return None
    if not isinstance(v, dict):
        return f"{where} is {_kind(v)}, not an object"
    name = where.rsplit(".", 1)[-1].split("[")[0]
    if (need := _NEEDED.get(name)) and where.endswith("]") and need not in v:
        return f"{where} has no {need!r}"
    if name in _COLUMNS and isinstance(v.get("samples_columns"), list):
        missing = [c for c in _COLUMNS[name] if c not in v["samples_columns"]]
        if missing:
            return f"{where}.samples_columns lacks {', '.join(missing)}"
    for key, sub in shape.items():
        if key in v and (problem := _shape_problem(v[key], sub, f"{where}.{key}" if where != _ROOT else key)):
            return problem
    return None


def parse_perf_json(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """netrig-perf's -J output: (the document, None), or (None, what is wrong with it)."""
    if not text.strip():
        return None, "no JSON from netrig-perf: its output is empty"
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        cut = e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string")
        what = "cut short" if cut else f"not valid JSON at line {e.lineno} column {e.colno} ({e.msg})"
        return None, f"netrig-perf's JSON output is {what} ({len(text)} bytes; it ends {text.rstrip()[-80:]!r})"
    if problem := _shape_problem(doc, PERF_DOC, _ROOT):
        return None, f"netrig-perf's JSON: {problem}"
    return doc, None


def pacing(end: dict[str, Any], sent_bytes: float) -> dict[str, Any]:
    """What the paced senders of a flow said of their schedule (netrig-perf's `pacing`
    objects): how long they were behind, how far at worst, and the share of the rate
    they never sent (short at the end, or forgiven). Empty for unpaced flows."""
    paced = [side["pacing"] for s in end.get("streams", []) if isinstance(s, dict)
             for side in (s.get("udp"), s.get("sender"))
             if isinstance(side, dict) and isinstance(side.get("pacing"), dict)]
    if not paced:
        return {}
    owed = sum((p.get("short_at_end_bytes") or 0) + (p.get("forgiven_bytes") or 0) for p in paced)
    return {"sender_behind_s": sum(p.get("behind_seconds") or 0 for p in paced),
            "sender_max_behind_ms": max(p.get("max_behind_ms") or 0 for p in paced),
            "sender_short_pct": 100.0 * owed / (sent_bytes + owed) if sent_bytes + owed else 0.0}
