"""TCP analysis of a capture file, as Wireshark does it, through `netrig-analyze tcp`.

    analyze(path, frames=False, series=None, interface=None) -> dict

runs the Rust binary (found as every netrig binary is, `netrig._bins`) and returns its
JSON document (schema `netrig.analyze.tcp/1`): `file` (packets, bytes, link types,
interfaces, first/last time), `totals` and `streams` (per stream: endpoints, counts of
every `tcp.analysis.*` flag as tshark matches them, ack_rtt summary, iRTT, losses, per
direction; `frames` with frames=True; `series` with series=INTERVAL_S). The frame sets
and ack_rtt agree with tshark 4.0's (tests/net/test_tcp_analysis.py).

Each direction also carries the numbers beside the flags (docs/guides/captures.md):
`retransmission_ratio_packets` and `_bytes` (frames with payload that
tcp.analysis.retransmission matches over frames with payload, and their bytes),
`unique_payload_bytes`, `goodput_bps` and `throughput_bps` over `data_duration_s`,
`rtt` (n, min, mean, p50, p90, p99, max; `percentiles`: exact, or a histogram within
`relative_error`), `zero_window_time` (episodes, total_s, longest_s, open) and `losses`
(events, first_s, last_s, `densest_half`, 20 `bins` over the stream's span).

Owns running the binary and turning its failures into NetrigError subclasses; it does
not read packets itself nor draw (stevens.py draws).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

from netrig._bins import binary
from netrig.errors import NetrigError

SCHEMA = "netrig.analyze.tcp/1"
# The tcp.analysis fields each stream counts (the binary's FIELDS, same names).
FIELDS = (
    "retransmission", "fast_retransmission", "spurious_retransmission", "out_of_order",
    "duplicate_ack", "zero_window", "lost_segment", "ack_lost_segment", "keep_alive",
    "keep_alive_ack", "window_update", "window_full", "zero_window_probe",
    "zero_window_probe_ack", "reused_ports",
)


class CaptureFileError(NetrigError, ValueError):
    """A capture file that cannot be read or decoded (the message names the file and the
    byte offset)."""


class AnalysisFailed(NetrigError):
    """netrig-analyze failed for a reason other than its input."""


def analyze(path: str | os.PathLike[str], frames: bool = False, series: float | None = None,
            interface: int | None = None, timeout: float | None = None) -> dict[str, Any]:
    """The TCP analysis of the capture at `path` (pcap or pcapng).

    frames: list each flagged frame (and each with an ack_rtt) per stream.
    series: add per-direction time series in bins of this many seconds.
    interface: analyse only that pcapng interface (0-based over the file)."""
    p = Path(path)
    if not p.is_file():
        raise CaptureFileError(f"{p}: no such capture file")
    cmd = [str(binary("netrig-analyze")), "tcp", str(p)]
    if frames:
        cmd.append("--frames")
    if series is not None:
        if not (isinstance(series, (int, float)) and math.isfinite(series) and series > 0):
            raise ValueError(f"series: the interval must be a positive number of seconds, not {series!r}")
        cmd += ["--series", repr(float(series))]
    if interface is not None:
        if interface < 0:
            raise ValueError(f"interface: {interface} is not an interface index (0 or more)")
        cmd += ["--interface", str(interface)]
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise AnalysisFailed(f"netrig-analyze took more than {timeout} s on {p}") from e
    err = proc.stderr.decode("utf-8", "replace").strip().removeprefix("netrig-analyze: ")
    if proc.returncode == 2:
        raise CaptureFileError(err or f"{p}: netrig-analyze could not read it")
    if proc.returncode != 0:
        raise AnalysisFailed(f"netrig-analyze failed on {p} (exit {proc.returncode}): {err[-2000:]}")
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise AnalysisFailed(f"netrig-analyze printed no JSON document for {p}: {e}") from e
    if doc.get("schema") != SCHEMA:
        raise AnalysisFailed(f"netrig-analyze answered with schema {doc.get('schema')!r}, not {SCHEMA}")
    return doc
