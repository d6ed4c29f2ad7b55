"""What a run's captures say about its TCP flows, as Wireshark would count it.

After a run, each capture's files are analysed (`tcp.analyze`: Wireshark 4.0's
tcp.analysis, exactly) and each TCP flow is found in them by its server's address and
port. netrig-perf, like iperf3, opens a control connection to that port first and its
data connections after it, so a flow's data streams are the later ones. Per flow:

    capture_segments          data segments the sender sent (the capture's view)
    capture_retransmissions   tcp.analysis.retransmission (plain, fast and spurious)
    retrans_pct_capture       retransmissions / data segments, in %: seed 000's
                              "retransmitted / transmitted", counted as it did
    capture_fast_retransmissions, capture_spurious_retransmissions,
    capture_out_of_order, capture_lost_segments   (of the data direction)
    capture_dup_acks, capture_zero_windows        (of the receiver's direction)
    capture_rtt_ms_mean, capture_rtt_n            ack_rtt of the data
    capture_goodput_bps       bytes delivered once over the data's duration, summed
                              over the flow's data streams (parallel ones run at once)
    capture_zero_window_s     time the receiver advertised a zero window, summed

A capture of an emulated link holds the frames the link dropped (commented), so its
view is the sender's: a dropped segment and its retransmission are both there.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from netrig.capture import tcp

SERIES_S = 0.1  # the Stevens graph's throughput bins


def analyze_files(files: list[Path], series: float | None = SERIES_S) -> dict[str, Any]:
    """The TCP analysis of a capture's files in order (a ring's files are pcapng sections:
    one after the other they are one capture, so TCP's state carries across them)."""
    if len(files) == 1:
        return tcp.analyze(files[0], series=series)
    with tempfile.NamedTemporaryFile(suffix=".pcapng") as joined:
        for f in files:
            try:
                with open(f, "rb") as src:
                    shutil.copyfileobj(src, joined)
            except OSError as e:
                raise tcp.CaptureFileError(f"{f}: {e.strerror}") from None
        joined.flush()
        return tcp.analyze(joined.name, series=series)


def _client_side(stream: Mapping[str, Any], server: str) -> str | None:
    """The direction key in which the client sends ('a_to_b' if the stream's a is the
    client), or None if the stream does not end at `server` (ip:port)."""
    if stream["b"] == server:
        return "a_to_b"
    if stream["a"] == server:
        return "b_to_a"
    return None


def data_streams(analysis: Mapping[str, Any], server: str) -> list[tuple[dict[str, Any], str]]:
    """A flow's data streams to `server` (ip:port), each with the direction its client
    sends in: every stream to the server but the first (the control connection); the
    only one when there is one (a capture started late, or a tool without control)."""
    found = [(s, d) for s in analysis.get("streams", []) if (d := _client_side(s, server))]
    found.sort(key=lambda x: x[0]["first_frame"])
    return found[1:] if len(found) > 1 else found


OTHER = {"a_to_b": "b_to_a", "b_to_a": "a_to_b"}


def flow_figures(analysis: Mapping[str, Any], server: str, reverse: bool) -> dict[str, Any] | None:
    """The capture's counts for one TCP flow (see the module's docstring), or None if
    the capture did not see it."""
    streams = data_streams(analysis, server)
    if not streams:
        return None
    sums: dict[str, float] = {}
    rtt_n, rtt_sum = 0, 0.0
    goodput: float | None = None

    def add(key: str, v: float) -> None:
        sums[key] = sums.get(key, 0) + v

    for s, client in streams:
        data = OTHER[client] if reverse else client
        fwd, back = s["directions"][data], s["directions"][OTHER[data]]
        add("segments", fwd.get("data_packets", 0))
        for k in ("retransmission", "fast_retransmission", "spurious_retransmission",
                  "out_of_order", "lost_segment"):
            add(k, fwd.get(k, 0))
        add("duplicate_ack", back.get("duplicate_ack", 0))
        add("zero_window", back.get("zero_window", 0))
        add("zero_window_s", (back.get("zero_window_time") or {}).get("total_s", 0.0))
        if fwd.get("goodput_bps") is not None:
            goodput = (goodput or 0.0) + fwd["goodput_bps"]
        r = fwd.get("rtt") or {}
        if r.get("n"):
            rtt_n += r["n"]
            rtt_sum += r.get("sum_s", r.get("mean_s", 0) * r["n"])
    segs = int(sums["segments"])
    return {
        "capture_segments": segs,
        "capture_retransmissions": int(sums["retransmission"]),
        "retrans_pct_capture": 100.0 * sums["retransmission"] / segs if segs else None,
        "capture_fast_retransmissions": int(sums["fast_retransmission"]),
        "capture_spurious_retransmissions": int(sums["spurious_retransmission"]),
        "capture_out_of_order": int(sums["out_of_order"]),
        "capture_lost_segments": int(sums["lost_segment"]),
        "capture_dup_acks": int(sums["duplicate_ack"]),
        "capture_zero_windows": int(sums["zero_window"]),
        "capture_rtt_n": rtt_n,
        "capture_rtt_ms_mean": 1e3 * rtt_sum / rtt_n if rtt_n else None,
        "capture_goodput_bps": goodput,
        "capture_zero_window_s": sums["zero_window_s"],
        "capture_streams": [s["stream"] for s, _ in streams],
    }


def per_flow(analyses: list[tuple[int, str | None, Mapping[str, Any]]], flows: Mapping[str, Any],
             ports: Mapping[str, int], addr: Callable[[str], str]) -> dict[str, dict[str, Any]]:
    """flow name -> its capture figures (plus `capture_monitor`, the capture they come
    from), for each tcp flow a capture saw. `analyses`: (monitor index, the node whose
    interface it captured or None, analysis). The sender's own interface is preferred,
    as Wireshark on the sending host sees it (seed 000's view), then the scenario's
    order: a capture of an emulated link has its drops at the time they happened and
    its deliveries later, so the analysis finds segments out of order there that the
    sender sent in order."""
    out: dict[str, dict[str, Any]] = {}
    for name, f in flows.items():
        if f.kind != "tcp" or name not in ports:
            continue
        server = f"{addr(f.to)}:{ports[name]}"
        sender = f.to if f.reverse else f.src
        for index, _, analysis in sorted(analyses, key=lambda x: x[1] != sender):
            got = flow_figures(analysis, server, f.reverse)
            if got is not None:
                out[name] = {**got, "capture_monitor": index}
                break
    return out
