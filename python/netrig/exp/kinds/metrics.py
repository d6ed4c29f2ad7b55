"""The one table of what a flow's numbers are in: a summary column's unit is in its
name (`throughput_bps`: bit/s, `rtt_ms_p50`: ms, `fetch_s_mean`: s, `loss_pct`: %,
`window_bytes`: bytes), as run.json and results.csv hold it (`unit_of`); a figure or the
report shows it in words with a unit and scale (`metric`: bit/s as Mbit/s, a fetch's
seconds as ms); the terminal's headline scales bit/s to its size (render/headline.py).
"""

from __future__ import annotations

from dataclasses import dataclass

# A name's part -> the unit the number is stored in.
UNITS = {"bps": "bit/s", "ms": "ms", "s": "s", "pct": "%", "bytes": "bytes"}
# A stored unit -> how figures and the report show it (the rest as stored).
SHOWN = {"bit/s": ("Mbit/s", 1e-6)}


def unit_of(metric: str) -> str:
    """The unit a summary column's name carries (`rtt_ms_p50`: ms), '' for a count."""
    return next((UNITS[t] for t in metric.split("_") if t in UNITS), "")


def split(metric: str) -> tuple[str, str]:
    """(the name's words without its unit, the unit): `rtt_ms_p50` is ("rtt p50", "ms")."""
    parts = metric.split("_")
    at = next((i for i, t in enumerate(parts) if t in UNITS and i > 0), None)
    if at is None:
        return metric.replace("_", " "), ""
    return " ".join(x for k, x in enumerate(parts) if k != at and x), UNITS[parts[at]]


@dataclass(frozen=True)
class Metric:
    label: str
    unit: str
    scale: float  # stored value × scale = shown value

    @property
    def axis(self) -> str:
        """`throughput (Mbit/s)`."""
        return f"{self.label} ({self.unit})" if self.unit else self.label


# The metrics with words of their own.
METRICS = {
    "throughput_bps": Metric("throughput", "Mbit/s", 1e-6),
    "sent_bps": Metric("sending rate", "Mbit/s", 1e-6),
    "rtt_ms_p50": Metric("median RTT", "ms", 1.0),
    "rtt_ms_mean": Metric("mean RTT", "ms", 1.0),
    "rtt_ms_p99": Metric("99th percentile RTT", "ms", 1.0),
    "fetch_s_mean": Metric("mean fetch time", "ms", 1e3),
    "fetch_s_p50": Metric("median fetch time", "ms", 1e3),
    "fetch_s_max": Metric("longest fetch time", "ms", 1e3),
    "first_byte_s_mean": Metric("mean time to first byte", "ms", 1e3),
    "loss_pct": Metric("loss", "%", 1.0),
    "jitter_ms": Metric("jitter", "ms", 1.0),
    "retrans_pct": Metric("retransmitted segments (TCP_INFO)", "%", 1.0),
    "retrans_pct_capture": Metric("retransmitted segments (capture, as Wireshark counts)", "%", 1.0),
    "command_s": Metric("command time", "s", 1.0),
}


def metric(name: str) -> Metric:
    """How a summary column is shown: its words, unit and scale (a name ending in its
    unit: the rest of it as words)."""
    if name in METRICS:
        return METRICS[name]
    head, _, last = name.rpartition("_")
    if head and last in UNITS:
        unit, scale = SHOWN.get(UNITS[last], (UNITS[last], 1.0))
        return Metric(head.replace("_", " "), unit, scale)
    return Metric(name.replace("_", " "), "", 1.0)
