"""A capture's TCP analysis as a terminal table (80 columns): one row per stream and
direction that carried data, with Wireshark's counts and the RTT from ACKs."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from netrig.capture import flows as capflows

HEAD = (f"{'tcp':>4} {'from > to':<27} {'data':>6} {'retr':>5} {'fast':>4} {'spur':>4} "
        f"{'dupack':>6} {'ooo':>4} {'zwin':>4} {'rtt ms':>6}")


def _endpoint(s: str, width: int) -> str:
    return s if len(s) <= width else "…" + s[-(width - 1):]


def rows(analysis: dict[str, Any]) -> list[str]:
    """The table's lines for one analysis (without the header)."""
    out = []
    for s in analysis.get("streams", []):
        for d, (src, dst) in (("a_to_b", (s["a"], s["b"])), ("b_to_a", (s["b"], s["a"]))):
            c = s["directions"][d]
            if not c.get("data_packets"):
                continue
            back = s["directions"]["b_to_a" if d == "a_to_b" else "a_to_b"]
            rtt = (c.get("rtt") or {}).get("mean_s")
            ends = f"{_endpoint(src, 13)}>{_endpoint(dst, 13)}"
            out.append(f"{s['stream']:>4} {ends:<27} {c['data_packets']:>6} {c['retransmission']:>5} "
                       f"{c['fast_retransmission']:>4} {c['spurious_retransmission']:>4} "
                       f"{back['duplicate_ack']:>6} {c['out_of_order']:>4} {back['zero_window']:>4} "
                       f"{'-' if rtt is None else f'{rtt * 1e3:.1f}':>6}")
    return out


def tcp_table(files: list[str] | list[Path]) -> str:
    """The analysis of a capture's files (one capture: a ring's files in order), as text."""
    a = capflows.analyze_files([Path(f) for f in files], series=None)
    f, t = a["file"], a["totals"]
    lines = [f"TCP analysis (as Wireshark's tcp.analysis counts it): {f['packets']} frames, "
             f"{len(a.get('streams', []))} TCP streams", HEAD, *rows(a)]
    if len(lines) == 2:
        lines.append("  (no TCP data in the capture)")
    segs = t.get("data_packets") or 0
    if segs:
        lines.append(f"all: {segs} data segments, {t['retransmission']} retransmitted "
                     f"({100 * t['retransmission'] / segs:.2f} %), {t['duplicate_ack']} dup ACKs, "
                     f"{t['out_of_order']} out of order")
    lines.append(textwrap.fill("tcp: Wireshark's tcp.stream; data: data segments; retr: retransmissions (fast and spurious "
                               "included); dupack, zwin: the receiver's duplicate ACKs and zero "
                               "windows; rtt: mean from ACKs", 80))
    return "\n".join(lines) + "\n"
