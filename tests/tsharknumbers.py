"""netrig-analyze's numbers beside the flags, worked out again from tshark's own fields.

One tshark pass prints every TCP frame's time, stream, source, raw and relative sequence
numbers, length, raw window, FIN and RST bits, and its zero_window, retransmission and ack_rtt
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

COLUMNS = ("frame.time_relative", "tcp.stream", "ip.src", "ipv6.src", "tcp.srcport", "tcp.seq_raw", "tcp.len",
           "tcp.window_size_value", "tcp.flags.fin", "tcp.flags.reset", "tcp.analysis.zero_window",
           "tcp.analysis.retransmission", "tcp.analysis.ack_rtt", "icmp.type", "icmpv6.type", "tcp.seq",
           "ip.dst", "ipv6.dst", "tcp.dstport", "frame.protocols")
DIRS = ("a_to_b", "b_to_a")


def _ns(text: str) -> int:
    """tshark's seconds ('18884556.996116000', '-0.5') as integer ns: exact, where a float
    of a time 18 million seconds into a capture is not to the nanosecond."""
    sign, text = (-1, text[1:]) if text.startswith("-") else (1, text)
    whole, _, frac = text.partition(".")
    return sign * (int(whole or 0) * 1_000_000_000 + int((frac + "000000000")[:9]))


def _unwrap(last: int, rel: int) -> int:
    """rel (32 bits) as the 64-bit position nearest `last`."""
    v = (last & ~0xFFFF_FFFF) | rel
    if v - last > 1 << 31:
        v -= 1 << 32
    elif last - v > 1 << 31:
        v += 1 << 32
    return v


class _Dir:
    def __init__(self) -> None:
        self.data = self.retx = self.payload = self.retx_bytes = 0
        # Unique bytes: positions from the span's first data segment, a new span when
        # tshark's base sequence number (raw minus relative) changes.
        self.base = self.origin = self.last_pos = self.lo = self.hi = self.before = 0
        self.first = self.last = 0
        self.rtt: list[float] = []
        self.open: int | None = None
        self.episodes, self.closed_ns = 0, 0

    def span(self, raw: int, rel: int, n: int) -> None:
        base = (raw - rel) & 0xFFFF_FFFF
        if self.data == 0 or base != self.base:
            self.before += self.hi - self.lo
            self.base, self.origin, self.last_pos, self.lo, self.hi = base, raw, 0, 0, n
            return
        pos = self.last_pos = _unwrap(self.last_pos, (raw - self.origin) & 0xFFFF_FFFF)
        self.lo, self.hi = min(self.lo, pos), max(self.hi, pos + n)

    def close(self, t: int) -> None:
        if self.open is not None:
            self.closed_ns += max(t - self.open, 0)
            self.open = None


def tshark_numbers(pcap: Path) -> dict[tuple[tuple[str, str], int], list[_Dir]]:
    """Each TCP conversation's two directions as tshark sees them (a: the first frame's
    sender), by its endpoints and its place among the conversations between them:
    tshark also numbers a TCP header an ICMP error quotes as a tcp.stream, and
    netrig-analyze does not, so their tcp.stream numbers part there."""
    # Every occurrence, the last kept: a tunnel's inner IP header is the conversation's.
    args = [TSHARK or "tshark", "-n", "-r", str(pcap), "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"]
    for c in COLUMNS:
        args += ["-e", c]
    streams: dict[int, list[_Dir]] = {}
    ends: dict[int, tuple[str, str]] = {}
    first_end: dict[int, str] = {}
    closed: dict[int, list[bool]] = {}  # FIN from a, FIN from b, RST
    end = 0
    for line in _run(args).splitlines():
        p = [v.rsplit(",", 1)[-1] for v in line.split("\t")]
        if len(p) != len(COLUMNS):
            continue
        stack = p[19].split(":tcp")[0].split(":")
        if "ipv6" in stack and (stack[::-1].index("ipv6") < stack[::-1].index("ip") if "ip" in stack else True):
            p[2], p[16] = "", ""  # the innermost IP header is IPv6
        t = _ns(p[0])
        end = max(end, t)
        if not p[1] or p[13] or p[14]:  # not TCP, or a TCP header quoted by an ICMP error
            continue
        sid, src = int(p[1]), f"{p[2] or p[3]}:{p[4]}"
        ends.setdefault(sid, (src, f"{p[16] or p[17]}:{p[18]}"))
        dirs = streams.setdefault(sid, [_Dir(), _Dir()])
        d = 0 if first_end.setdefault(sid, src) == src else 1
        fin = closed.setdefault(sid, [False, False, False])
        x, raw, n, win = dirs[d], int(p[5] or 0), int(p[6] or 0), int(p[7] or 0)
        if n > 0:
            x.first, x.last = (t, t) if x.data == 0 else (min(x.first, t), max(x.last, t))
            x.span(raw, int(p[15] or 0), n)
            x.data, x.payload = x.data + 1, x.payload + n
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
    return _by_ends({sid: ends[sid] for sid in streams}, streams)


def _by_ends(ends: dict[int, tuple[str, str]], streams: dict[int, Any]) -> dict[tuple[tuple[str, str], int], Any]:
    """Streams keyed by (their endpoints sorted, how many between them came before)."""
    out: dict[tuple[tuple[str, str], int], Any] = {}
    seen: dict[tuple[str, str], int] = {}
    for sid in sorted(streams):
        key = tuple(sorted(ends[sid]))
        out[(key, seen.get(key, 0))] = streams[sid]
        seen[key] = seen.get(key, 0) + 1
    return out


def _near(a: float | None, b: float | None, rel: float = 1e-6, abs_: float = 1e-9) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def number_differences(pcap: Path, doc: dict[str, Any]) -> list[str]:
    """Where netrig's numbers differ from those worked out from tshark's fields."""
    want = tshark_numbers(pcap)
    problems = []
    got = _by_ends({s["stream"]: (s["a"], s["b"]) for s in doc["streams"]}, {s["stream"]: s for s in doc["streams"]})
    if set(want) != set(got):
        return [f"{pcap.name}: conversations {sorted(set(want) ^ set(got))[:4]} are in only one of tshark and netrig"]
    for key, dirs in want.items():
        sid = got[key]["stream"]
        for name, x in zip(DIRS, dirs):
            g = got[key]["directions"][name]
            dur = (x.last - x.first) / 1e9
            unique = x.before + x.hi - x.lo
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
            for what, v in expect.items():
                head, _, sub = what.partition(".")
                have = g[head][sub] if sub else g[head]
                if not _near(have, v, abs_=1e-8):
                    problems.append(f"{pcap.name}: stream {sid} {name} {what}: tshark's fields give {v}, "
                                    f"netrig {have}")
    return problems
