"""tcptrace's "Stevens" time-sequence graph of one TCP stream, from an analysis with series.

    stevens_figure(analysis, stream, out_png, title=None, direction=None) -> Path

Top panel: each data segment as a short vertical bar from its relative start to its
end sequence number at the time it was captured (new data in blue; retransmissions,
fast and spurious ones, out-of-order segments and segments after a gap each in their
own colour and marker), the ACK line (the other side's cumulative ACK) and the receive
window's edge (ACK + advertised window, scaled) as steps. Bottom panel: throughput of
the payload and goodput (new bytes only) per interval, in Mbit/s. Drawn like netrig's
other figures (exp/render/figures.py): Agg canvas, titled, grid, legends right of the axes.

Owns the drawing only; the numbers are netrig-analyze's (tcp.py).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from netrig import safefs
from netrig.errors import NetrigError

DPI = 200
SIZE = (9.0, 7.0)
# Segment kinds (netrig-analyze's series "kind"), drawn over the new data.
KINDS = {
    "new": ("new data", "tab:blue", None),
    "after_gap": ("after a gap (previous segment not captured)", "tab:purple", "^"),
    "out_of_order": ("out of order", "tab:orange", "s"),
    "retransmission": ("retransmission", "tab:red", "x"),
    "fast_retransmission": ("fast retransmission", "darkred", "D"),
    "spurious_retransmission": ("spurious retransmission", "tab:pink", "v"),
}


class FigureError(NetrigError, ValueError):
    """An analysis that cannot be drawn as asked."""


def _seq_unit(top: float) -> tuple[float, str]:
    if top >= 2e6:
        return 1e6, "MB (10^6 bytes)"
    if top >= 2e4:
        return 1e3, "kB (10^3 bytes)"
    return 1.0, "bytes"


def _pick(analysis: dict[str, Any], stream: int, direction: str | None) -> tuple[dict, str, dict]:
    streams = {s["stream"]: s for s in analysis.get("streams", [])}
    if stream not in streams:
        raise FigureError(f"no TCP stream {stream} in the analysis (it has {len(streams)}: "
                          f"{', '.join(map(str, sorted(streams)[:10]))})")
    s = streams[stream]
    if "series" not in s:
        raise FigureError("the analysis has no time series: run analyze(..., series=INTERVAL)")
    if direction is None:  # the direction that carried the data
        dirs = s["directions"]
        direction = max(("a_to_b", "b_to_a"), key=lambda d: dirs[d]["payload_bytes"])
    if direction not in ("a_to_b", "b_to_a"):
        raise FigureError(f"direction must be 'a_to_b' or 'b_to_a', not {direction!r}")
    return s, direction, s["series"][direction]


def stevens_figure(analysis: dict[str, Any], stream: int, out_png: str | Path, title: str | None = None,
                   direction: str | None = None) -> Path:
    """Draws the Stevens graph and throughput of `stream` (its data direction unless
    `direction` names one) into out_png; returns its path."""
    s, direction, ser = _pick(analysis, stream, direction)
    src, dst = (s["a"], s["b"]) if direction == "a_to_b" else (s["b"], s["a"])
    segs, acks, thr = ser["segments"], ser["acks"], ser["throughput"]
    top = max([*segs["end"], *acks["window_edge"], 1])
    scale, unit = _seq_unit(top)

    fig = Figure(figsize=SIZE, layout="constrained")
    ax, bx = fig.subplots(2, 1, sharex=True, height_ratios=[2.2, 1.0])
    for kind, (label, color, marker) in KINDS.items():
        idx = [i for i, k in enumerate(segs["kind"]) if k == kind]
        if not idx:
            continue
        t = [segs["t_s"][i] for i in idx]
        lo = [segs["start"][i] / scale for i in idx]
        hi = [segs["end"][i] / scale for i in idx]
        n = len(idx)
        label = f"{label} ({n} segment{'s' if n != 1 else ''})"
        ax.vlines(t, lo, hi, colors=color, linewidth=1.4 if marker else 0.9, zorder=3 if marker else 2,
                  label=None if marker else label)
        if marker:  # the bar may be shorter than a pixel: a marker at its top shows it
            ax.scatter(t, hi, marker=marker, s=16, color=color, zorder=4, label=label)
    if acks["t_s"]:
        ax.step(acks["t_s"], [a / scale for a in acks["ack"]], where="post", color="tab:green",
                linewidth=1.0, label="ACK (the other side's cumulative ACK)")
        ax.step(acks["t_s"], [w / scale for w in acks["window_edge"]], where="post", color="goldenrod",
                linewidth=1.0, label="receive window edge (ACK + window)")
    ax.set_ylabel(f"relative sequence number, {unit}")
    ax.set_title(title or f"TCP stream {stream}: {src} → {dst}, time-sequence (Stevens) graph", fontsize=10.5)

    iv = analysis_interval(s)
    bx.step(thr["t_s"], [b / 1e6 for b in thr["bps"]], where="post", color="tab:blue",
            label=f"throughput (payload, per {iv * 1000:g} ms)")
    bx.step(thr["t_s"], [b / 1e6 for b in thr["goodput_bps"]], where="post", color="tab:green",
            linestyle="--", label="goodput (new bytes only)")
    bx.set_ylabel("Mbit/s")
    bx.set_xlabel("time since the capture's first packet, s")
    bx.set_ylim(bottom=0)
    for a in (ax, bx):
        a.grid(True, alpha=0.35)
        a.set_axisbelow(True)
        a.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                 frameon=False)
    out = Path(out_png)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return safefs.write(out.parent if str(out.parent) else Path("."), out.name, buf.getvalue())


def analysis_interval(stream: dict[str, Any]) -> float:
    """The series' interval in seconds."""
    return float(stream["series"]["interval_s"])
