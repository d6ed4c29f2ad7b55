"""netrig-analyze's numbers beside the flags, worked out again from tshark's own fields.

One tshark pass prints every TCP frame's time, stream, source, relative sequence number,
length, raw window, FIN and RST bits, and its zero_window, retransmission and ack_rtt
fields; from those alone, by the definitions in docs/guides/captures.md, each direction's
retransmission ratios, unique bytes, goodput and throughput, ack_rtt n/p50/p99 and time
in zero window are computed here and compared with netrig's JSON. The flags themselves
are tsharkdiff's to compare.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from tsharkdiff import TSHARK, _run

COLUMNS = ("frame.time_relative", "tcp.stream", "ip.src", "ipv6.src", "tcp.srcport", "tcp.seq", "tcp.len",
           "tcp.window_size_value", "tcp.flags.fin", "tcp.flags.reset", "tcp.analysis.zero_window",
           "tcp.analysis.retransmission", "tcp.analysis.ack_rtt", "icmp.type", "icmpv6.type")
DIRS = ("a_to_b", "b_to_a")


def _ns(text: str) -> int:
    """tshark's seconds ('18884556.996116000', '-0.5') as integer ns: exact, where a float
    of a time 18 million seconds into a capture is not to the nanosecond."""
    sign, text = (-1, text[1:]) if text.startswith("-") else (1, text)
    whole, _, frac = text.partition(".")
    return sign * (int(whole or 0) * 1_000_000_000 + int((frac + "000000000")[:9]))


class _Dir:
    def __init__(self) -> None:
        self.data = self.retx = self.payload = self.retx_bytes = 0
        self.lo: int | None = None
        self.hi = 0
        self.first = self.last = 0
        self.rtt: list[float] = []
        self.open: int | None = None
        self.episodes, self.closed_ns = 0, 0

    def close(self, t: int) -> None:
        if self.open is not None:
            self.closed_ns += max(t - self.open, 0)
            self.open = None


def tshark_numbers(pcap: Path) -> dict[int, list[_Dir]]:
    """Per tcp.stream, its two directions (a: the first frame's sender) as tshark sees them."""
    args = [TSHARK or "tshark", "-n", "-r", str(pcap), "-T", "fields", "-E", "occurrence=f"]
    for c in COLUMNS:
        args += ["-e", c]
    streams: dict[int, list[_Dir]] = {}
    first_end: dict[int, str] = {}
    closed: dict[int, list[bool]] = {}  # FIN from a, FIN from b, RST
    end = 0
    for line in _run(args).splitlines():
        p = line.split("\t")
        if len(p) != len(COLUMNS):
            continue
        t = _ns(p[0])
        end = max(end, t)
        if not p[1] or p[13] or p[14]:  # not TCP, or a TCP header quoted by an ICMP error
            continue
        sid, src = int(p[1]), f"{p[2] or p[3]}:{p[4]}"
        dirs = streams.setdefault(sid, [_Dir(), _Dir()])
        d = 0 if first_end.setdefault(sid, src) == src else 1
        fin = closed.setdefault(sid, [False, False, False])
        x, seq, n, win = dirs[d], int(p[5] or 0), int(p[6] or 0), int(p[7] or 0)
        if n > 0:
            if x.data == 0:
                x.first = t
            x.first, x.last = min(x.first, t), max(x.last, t)
            x.data, x.payload = x.data + 1, x.payload + n
            x.lo = seq if x.lo is None else min(x.lo, seq)
            x.hi = max(x.hi, seq + n)
            if p[11]:
                x.retx, x.retx_bytes = x.retx + 1, x.retx_bytes + n
        if p[12]:
            dirs[1 - d].rtt.append(float(p[12]))
        if p[10] and not fin[1 - d] and not fin[2]:
            if x.open is None:
                x.open, x.episodes = t, x.episodes + 1
        elif win != 0:
            x.close(t)
        if p[8] == "1":
            fin[d] = True
        if p[9] == "1":
            fin[2] = True
            for y in dirs:
                y.close(t)
    for dirs in streams.values():
        for x in dirs:
            x.close(end)
    return streams


def _near(a: float | None, b: float | None, rel: float = 1e-6, abs_: float = 1e-9) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def number_differences(pcap: Path, doc: dict[str, Any]) -> list[str]:
    """Where netrig's numbers differ from those worked out from tshark's fields."""
    want = tshark_numbers(pcap)
    problems = []
    got = {s["stream"]: s for s in doc["streams"]}
    if set(want) != set(got):
        return [f"{pcap.name}: streams {sorted(set(want) ^ set(got))[:10]} are in only one of tshark and netrig"]
    for sid, dirs in want.items():
        for name, x in zip(DIRS, dirs):
            g = got[sid]["directions"][name]
            dur = (x.last - x.first) / 1e9
            unique = (x.hi - x.lo) if x.lo is not None else 0
            rtt = sorted(x.rtt)

            def pct(p: float, v: list[float] = rtt) -> float:
                return v[min(max(math.ceil(p * len(v)), 1), len(v)) - 1]

            expect = {
                "data_packets": x.data, "payload_bytes": x.payload,
                "retransmitted_data_packets": x.retx, "retransmitted_payload_bytes": x.retx_bytes,
                "unique_payload_bytes": unique,
                "goodput_bps": unique * 8 / dur if x.data and dur > 0 else None,
                "throughput_bps": x.payload * 8 / dur if x.data and dur > 0 else None,
                "zero_window_time.episodes": x.episodes, "zero_window_time.total_s": x.closed_ns / 1e9,
                "rtt.n": len(rtt),
            }
            if rtt and g["rtt"].get("percentiles") == "exact":
                expect |= {"rtt.p50_s": pct(0.5), "rtt.p99_s": pct(0.99), "rtt.max_s": rtt[-1]}
            for key, v in expect.items():
                head, _, sub = key.partition(".")
                have = g[head][sub] if sub else g[head]
                if not _near(have, v, abs_=1e-8):
                    problems.append(f"{pcap.name}: stream {sid} {name} {key}: tshark's fields give {v}, "
                                    f"netrig {have}")
    return problems
