"""`tool: iperf2`: Debian's iperf 2.1 (/usr/bin/iperf) makes a tcp or udp flow, as the
seeds did. Its client prints iperf2's enhanced report with exact numbers (`-e -f b`:
bytes and bit/s per interval and stream, [SUM] lines for -P, TCP's retries, and for UDP
the "Server Report" the receiver sends back: jitter, lost/total); its server
(`iperf -s -y C`, bound to the flow's address, stopped by the runner by its PID) prints
the receiver's intervals and totals as CSV, which the runner hands the parser
(`FlowOutput.server_out`). `parse` turns both into netrig-perf's (iperf3's) document:

    end.sum_sent        the client's total ([SUM] for -P): bytes, seconds, bit/s, retries
    end.sum_received    the receiver's totals (the server's CSV, summed over streams; a
                        UDP flow without it: the client's Server Report), with UDP's
                        jitter_ms, lost_percent and packets
    intervals           the client's intervals (its [SUM] for -P)
    server_output_json  the server's intervals, summed over streams

iperf2 cannot do reverse (its -R has the server send), omit or a connect timeout: those
keys are refused when the scenario is read (spec/model.py TOOL_LACKS).
"""

from __future__ import annotations

import re
from typing import Any

from netrig.exp.kinds.base import Call, FlowOutput, Tool, whole_seconds

PROGRAM = "iperf"
_NUM = r"\d+(?:\.\d+)?"
# "[  1] 0.0000-1.0000 sec  1250426940 Bytes  10003415520 bits/sec  9540/0   9  895K/127(19) us  9845881"
# "[SUM] 0.0000-2.0067 sec  2120220792 Bytes  8452524947 bits/sec  16176/0       195"
_LINE = re.compile(rf"^\[\s*(\d+|SUM)\]\s+({_NUM})-({_NUM}) sec\s+(\d+) Bytes\s+(\d+) bits/sec(.*)$")
_TCP_REST = re.compile(r"^\s+\d+/\d+\s+(\d+)")  # Write/Err, then Rtry
# the Server Report's line ends "0.000 ms 0/854 (0%)"
_UDP_REPORT = re.compile(rf"^\s+({_NUM}) ms\s+(\d+)/\s*(\d+)\s+\(([-+\d.e]+)%\)")
_CSV_FIELDS = 9  # TCP's; UDP's add jitter, lost, total, percent, out of order


class Iperf2Error(ValueError):
    """Output of iperf2 that does not read as its report."""


def client(c: Call) -> list[str]:
    f = c.spec
    argv = [PROGRAM, "-c", c.addr, "-p", str(c.port), "-e", "-f", "b", "-i", f"{c.interval:g}"]
    argv += ["-n", str(f.nbytes("bytes"))] if f.bytes is not None else ["-t", whole_seconds(c.duration)]
    if f.kind == "udp":
        argv.append("-u")
    if f.parallel > 1:
        argv += ["-P", str(f.parallel)]
    for flag, v in (("-w", f.nbytes("window")), ("-l", f.nbytes("length")),
                    ("-b", None if f.rate is None else int(f.rate_bps or 0)), ("-Z", f.cc), ("-M", f.mss)):
        if v is not None:
            argv += [flag, str(v)]
    if f.nodelay:
        argv.append("-N")
    return argv


def server(c: Call, bind: str, handshake_s: float, lifetime_s: float) -> list[str]:
    """The receiver: CSV reports every interval, bound to the flow's address; -w (its
    receive buffer) and, for UDP, -u and -l (a datagram longer than its read would be cut)
    as the flow's; it ends by itself after `lifetime_s` (-t), else by its PID."""
    f = c.spec
    argv = [PROGRAM, "-s", "-p", str(c.port), "-B", bind, "-y", "C", "-i", f"{c.interval:g}",
            "-t", f"{lifetime_s:.0f}"]
    if f.kind == "udp":
        argv.append("-u")
    for flag, v in (("-w", f.nbytes("window")), ("-l", f.nbytes("length") if f.kind == "udp" else None)):
        if v is not None:
            argv += [flag, str(v)]
    return argv


def _sum(start: float, end: float, nbytes: float, bps: float, sender: bool) -> dict[str, Any]:
    seconds = nbytes * 8 / bps if bps > 0 else end - start
    return {"start": start, "end": end, "seconds": seconds, "bytes": nbytes, "bits_per_second": bps,
            "sender": sender}


def read_client(text: str) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any] | None]:
    """The client's enhanced report: (its intervals, none when it ran one interval or
    less; its total; the UDP Server Report's total or None), each an iperf3 `sum`. Raises Iperf2Error when it holds no total."""
    rows: dict[str, list[dict[str, Any]]] = {}
    report: dict[str, Any] | None = None
    in_report = False
    for n, line in enumerate(text.splitlines(), 1):
        if "Server Report:" in line:
            in_report = True
            continue
        m = _LINE.match(line)
        if m is None:
            if re.match(r"^\[\s*(\d+|SUM)\]\s+\d", line) and " sec " in line:
                raise Iperf2Error(f"iperf2's line {n} is not a report netrig can read: {line[:200]!r}")
            continue
        sid, a, b, nbytes, bps, rest = m.groups()
        s = _sum(float(a), float(b), int(nbytes), int(bps), True)
        if in_report:
            u = _UDP_REPORT.match(rest)
            if u is None:
                raise Iperf2Error(f"iperf2's Server Report (line {n}) has no jitter and loss: {line[:200]!r}")
            jitter, lost, total, _ = u.groups()
            s.update({"sender": False, "jitter_ms": float(jitter), "lost_packets": int(lost),
                      "packets": int(total), "lost_percent": 100.0 * int(lost) / int(total) if int(total) else 0.0})
            report = _add(report, s) if report else s
            in_report = False
            continue
        if "pps" not in rest and (t := _TCP_REST.match(rest)) is not None:  # (UDP's: Write/Err, PPS)
            s["retransmits"] = int(t.group(1))
        rows.setdefault(sid, []).append(s)
    ids = ["SUM"] if "SUM" in rows else sorted(rows)
    if not ids:
        raise Iperf2Error("iperf2 printed no report")
    lines = rows[ids[0]]
    total = lines[-1]
    if total["start"] != 0 or len(ids) > 1:
        raise Iperf2Error(f"iperf2's report has no total (its last line is {total['start']:g}–{total['end']:g} s)")
    return lines[:-1], total, report


def _add(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two streams' totals as one."""
    out = dict(a)
    out["bytes"] = a["bytes"] + b["bytes"]
    out["seconds"] = max(a["seconds"], b["seconds"])
    out["end"] = max(a["end"], b["end"])
    out["bits_per_second"] = out["bytes"] * 8 / out["seconds"] if out["seconds"] else 0.0
    if "packets" in a:
        out["lost_packets"] = a.get("lost_packets", 0) + b.get("lost_packets", 0)
        out["packets"] = a["packets"] + b.get("packets", 0)
        out["lost_percent"] = 100.0 * out["lost_packets"] / out["packets"] if out["packets"] else 0.0
        out["jitter_ms"] = max(a.get("jitter_ms", 0.0), b.get("jitter_ms", 0.0))
    return out


def read_server(text: str, interval: float) -> tuple[list[dict[str, Any]], dict[str, Any] | None, int]:
    """The server's CSV: (its intervals summed over streams, its total summed over the
    streams that have one (None: none yet), how many streams have one). A stream's total
    is its line from 0 that is not its first interval: a later one, or one not an
    interval long. Raises Iperf2Error on a line that is not iperf2's CSV."""
    per: dict[str, list[dict[str, Any]]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        f = line.split(",")
        try:
            if len(f) not in (_CSV_FIELDS, _CSV_FIELDS + 5):
                raise ValueError(f"{len(f)} fields")
            a, b = (float(x) for x in f[6].split("-"))
            s = _sum(a, b, int(f[7]), int(f[8]), False)
            if len(f) > _CSV_FIELDS:
                lost, total = int(f[10]), int(f[11])
                s.update({"jitter_ms": float(f[9]), "lost_packets": lost, "packets": total,
                          "lost_percent": 100.0 * lost / total if total > 0 else 0.0})
        except ValueError as e:
            raise Iperf2Error(f"the iperf2 server's line {n} is not its CSV ({e}): {line[:200]!r}") from None
        per.setdefault(f[5], []).append(s)
    totals, ivs = [], []
    for lines in per.values():
        first = lines[0]
        done = [x for k, x in enumerate(lines) if x["start"] == 0 and
                (k > 0 or abs((x["end"] - x["start"]) - interval) > 0.05)]
        if done:
            totals.append(done[-1])
        ivs += [x for x in lines if x is first or x not in done]
    total = None
    for t in totals:
        total = _add(total, t) if total else t
    by_end: dict[float, dict[str, Any]] = {}
    for x in ivs:
        k = round(x["end"], 3)
        by_end[k] = _add(by_end[k], x) if k in by_end else x
    return [by_end[k] for k in sorted(by_end)], total, len(totals)


def complete(text: str, streams: int, interval: float) -> bool:
    """Whether the server's CSV holds a total for each of the flow's streams."""
    try:
        return read_server(text, interval)[2] >= streams
    except Iperf2Error:
        return False


def parse(o: FlowOutput) -> None:
    """Both reports into an iperf3-shaped document (o.doc); what cannot be read is
    the flow's error."""
    said = o.stderr.strip()[-300:]
    try:
        intervals, sent, report = read_client(o.stdout)
        theirs, received, _ = read_server(o.server_out, _interval(intervals))
    except Iperf2Error as e:
        o.error = o.error or f"{e}" + (f"; its stderr ends: {said}" if said else "")
        o.doc = None
        return
    if received is None:
        received = report
    if received is None:
        o.error = o.error or ("iperf2's server reported no total for this flow (its output is the run's "
                              "server-NAME.txt)" + (f"; the client's stderr ends: {said}" if said else ""))
    end: dict[str, Any] = {"sum_sent": sent}
    if received is not None:
        end["sum_received"] = received
    o.doc = {"start": {}, "intervals": [{"sum": s} for s in intervals or [sent]], "end": end,
             "server_output_json": {"intervals": [{"sum": s} for s in theirs]}}


def _interval(intervals: list[dict[str, Any]]) -> float:
    """The report interval (-i), from the client's first interval; 0 without one (the
    flow ran one interval or less: every line from 0 is a total)."""
    return intervals[0]["end"] - intervals[0]["start"] if intervals else 0.0


TOOL = Tool("iperf2", client, server, parse, server_output="txt", reads_server=True,
            server_done=lambda text, f, interval: complete(text, f.parallel, interval), udp_server=True)
