"""A capture's TCP analysis as a terminal table of at most 80 columns: one line per
stream that carried data, for the direction that carried more of it, with its
retransmission ratio, goodput, ack_rtt median and 99th percentile, the time its
receiver's window stood at zero, and where its losses cluster; the busiest
`MAX_ROWS` streams when there are more, and a line saying how to see the rest.

Pure over netrig-analyze's JSON (`table`); `tcp_table` runs the analysis first. The
numbers are the binary's (netrig.capture.tcp's schema); this module only lays them out.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from netrig.capture import flows as capflows

WIDTH = 80
MAX_ROWS = 40
OTHER = {"a_to_b": "b_to_a", "b_to_a": "a_to_b"}
# Column headers after the stream number and the endpoints; each column is as wide as
# its widest cell, and the endpoints get what is left of WIDTH.
HEADS = ("retr", "goodput", "rtt p50/p99", "zwin", "losses")
LEGEND = (
    "tcp: Wireshark's tcp.stream; from > to: the direction with more data (--json has "
    "both); retr: its data frames tcp.analysis.retransmission matches, in %; goodput: "
    "bytes delivered once over its data's duration; rtt: ack_rtt; zwin: time the "
    "receiver's window was 0 (>: still at the end); losses: the shortest interval "
    "holding half its retransmitted and lost segments, from the capture's start"
)


def _sig(x: float, digits: int = 3) -> str:
    """x (>= 0) with `digits` significant digits but at most 2 decimals and every
    integer digit: 12.3, 1.23, 0.12, 1234, 10.0; with 2, trailing zeros dropped: 12, 1.2,
    0.5, 1."""
    text = f"{x:.0f}"
    for decimals in (2, 1):
        t = f"{x:.{decimals}f}"
        if len(t.replace(".", "").lstrip("0")) <= digits:
            text = t
            break
    return text.rstrip("0").rstrip(".") if digits < 3 and "." in text else text


def _scaled(x: float, ladder: Sequence[tuple[str, float]], digits: int = 3) -> tuple[str, str]:
    """(number, unit): the largest unit of `ladder` (ascending) in which x is at least 1,
    with 3 significant digits (more below the next unit: '1234 s'); '>999' past the top."""
    k = 0
    for i, (_, sc) in enumerate(ladder):
        if x >= sc * 0.9995:
            k = i
    unit, scale = ladder[k]
    v = x / scale
    if v >= 999.5 and k == len(ladder) - 1:
        return ">999", unit
    return _sig(v, digits), unit


RATES = (("bit/s", 1.0), ("kbit/s", 1e3), ("Mbit/s", 1e6), ("Gbit/s", 1e9), ("Tbit/s", 1e12))
TIMES = (("µs", 1e-6), ("ms", 1e-3), ("s", 1.0), ("min", 60.0), ("h", 3600.0), ("d", 86400.0))
# Times from the capture's start: seconds up to an hour, as Wireshark shows them.
SINCE = (("ms", 1e-3), ("s", 1.0), ("h", 3600.0))


def rate(bps: float | None) -> str:
    """'12.3 Mbit/s' (decimal prefixes), '-' if unknown."""
    if bps is None:
        return "-"
    if bps <= 0:
        return "0 bit/s"
    n, u = _scaled(bps, RATES)
    return f"{n} {u}"


def duration(s: float | None) -> str:
    """'41.2 ms', '1.20 s', '2.50 h'; '-' if unknown, '0 s' if none."""
    if s is None:
        return "-"
    if s <= 0:
        return "0 s"
    n, u = _scaled(s, TIMES)
    return f"{n} {u}"


def pair(a: float, b: float) -> str:
    """Two times (a <= b, s) with 2 significant digits and b's unit once, '41/120 ms'; a
    in its own unit when it is under a tenth of one of b's ('35 µs/1.2 ms')."""
    if b <= 0:
        return "<=0 s"  # frames stamped before the segments they ack
    nb, unit = _scaled(b, TIMES, 2)
    v = a / dict(TIMES)[unit]
    if v <= 0:
        return f"0/{nb} {unit}"
    if v < 0.1:
        na, ua = _scaled(a, TIMES, 2)
        return f"{na} {ua}/{nb} {unit}"
    return f"{_sig(v, 2)}/{nb} {unit}"


def interval(a: float, b: float) -> str:
    """From a to b (s from the capture's start, a <= b) in b's unit, to the decimal that
    shows the interval's width (at most b's 3 significant digits): '3.1-4.5 s',
    '10.9-11.6 s', '120-125 s', '0.97-1.03 h'; one time if they show the same."""
    if b <= 0:
        return "0 s"
    nb, unit = _scaled(b, SINCE)
    if nb.startswith(">"):
        return f"{nb} {unit}"
    scale = dict(SINCE)[unit]
    va, vb, w = max(a, 0.0) / scale, b / scale, (b - max(a, 0.0)) / scale
    decimals = min(0 if w >= 10 else 1 if w >= 0.1 else 2, 0 if vb >= 99.95 else 1 if vb >= 9.995 else 2)
    na, nb = f"{va:.{decimals}f}", f"{vb:.{decimals}f}"
    return f"{_scaled(b, SINCE)[0]} {unit}" if na == nb else f"{na}-{nb} {unit}"


def percent(part: int, whole: int) -> str:
    """part/whole with 2 significant digits: '0.52 %', '12 %', '<0.01 %', '>99 %';
    '-' when whole is 0."""
    if not whole:
        return "-"
    if part == 0 or part == whole:
        return "0 %" if part == 0 else "100 %"
    p = 100.0 * part / whole
    return "<0.01 %" if p < 0.005 else ">99 %" if p > 99 else f"{_sig(p, 2)} %"


def _loss_cell(losses: Mapping[str, Any]) -> str:
    d = losses.get("densest_half") if losses.get("events") else None
    if not d:
        return "-"
    return interval(max(d["start_s"], 0.0), max(d["end_s"], 0.0))


def _fit(end: str, width: int) -> str:
    """An endpoint cut to `width` from the left, keeping its port ('…0.0.1:5201')."""
    return end if len(end) <= width else "…" + end[len(end) - width + 1:]


def _ends(src: str, dst: str, width: int) -> str:
    """'src>dst' in at most `width` characters, each side cut from the left as needed,
    the shorter kept whole when the longer can take the rest."""
    room = width - 1
    if len(src) + len(dst) <= room:
        return f"{src}>{dst}"
    ws = min(len(src), max(room // 2, room - len(dst)))
    return f"{_fit(src, ws)}>{_fit(dst, room - ws)}"


def _host(end: str) -> str:
    return end.rsplit(":", 1)[0]


def shorten(ends: list[tuple[str, str]], width: int) -> tuple[list[tuple[str, str]], str | None]:
    """When some 'src>dst' is wider than `width`: the address in most of them (the
    capture's own host, usually) written '*', and the line that says so; else as given."""
    if all(len(s) + 1 + len(d) <= width for s, d in ends):
        return ends, None
    count = Counter(h for s, d in ends for h in {_host(s), _host(d)})
    host, n = max(count.items(), key=lambda kv: (kv[1], kv[0]))
    if n < 2:
        return ends, None

    def star(e: str) -> str:
        return "*" + e[len(host):] if _host(e) == host else e

    return [(star(s), star(d)) for s, d in ends], f"*: {host} (in {n} of the streams above)"


def main_direction(s: Mapping[str, Any]) -> str:
    """The direction that carried more payload (a_to_b on a tie)."""
    d = s["directions"]
    return "b_to_a" if d["b_to_a"].get("payload_bytes", 0) > d["a_to_b"].get("payload_bytes", 0) else "a_to_b"


def cells(s: Mapping[str, Any]) -> tuple[str, str, list[str]]:
    """(source, destination, the cells under HEADS) of one stream's line."""
    d = main_direction(s)
    fwd, back = s["directions"][d], s["directions"][OTHER[d]]
    src, dst = (s["a"], s["b"]) if d == "a_to_b" else (s["b"], s["a"])
    retr = percent(fwd.get("retransmitted_data_packets", 0), fwd.get("data_packets", 0))
    rtt = fwd.get("rtt") or {}
    rtt_cell = pair(rtt["p50_s"], rtt["p99_s"]) if rtt.get("n") else "-"
    z = back.get("zero_window_time") or {}
    zwin = "-"
    if z.get("episodes"):
        zwin = (">" if z.get("open") else "") + duration(z.get("total_s", 0.0))
    return src, dst, [retr, rate(fwd.get("goodput_bps")), rtt_cell, zwin, _loss_cell(fwd.get("losses") or {})]


def _bytes(s: Mapping[str, Any]) -> int:
    return sum(s["directions"][d].get("payload_bytes", 0) for d in OTHER)


def lines(analysis: Mapping[str, Any], files: Sequence[str] = ()) -> list[str]:
    """The table's lines: title, header, one line per stream with data (the MAX_ROWS
    busiest, in stream order, and a line for the rest), the totals and the legend."""
    streams = analysis.get("streams", [])
    with_data = [s for s in streams if _bytes(s) > 0]
    shown = with_data
    if len(with_data) > MAX_ROWS:
        busiest = sorted(with_data, key=lambda s: (-_bytes(s), s["stream"]))[:MAX_ROWS]
        shown = sorted(busiest, key=lambda s: s["stream"])
    f = analysis.get("file", {})
    n = len(streams)
    out = textwrap.wrap(f"TCP analysis (as Wireshark's tcp.analysis counts it): {f.get('packets', 0)} frames, "
                        f"{n} TCP stream{'s' if n != 1 else ''}, {len(with_data)} with data", WIDTH)
    undecoded = [f"{u['frames']} of link type {u['link_type']} ({u['name']})" if u.get("name")
                 else f"{u['frames']} of link type {u['link_type']}" for u in f.get("undecoded_link_types") or []]
    if undecoded:
        out += textwrap.wrap(f"frames not decoded (not analysed): {', '.join(undecoded)}", WIDTH)
    if not with_data:
        return [*out, "  (no TCP data in the capture)", *textwrap.wrap(LEGEND, WIDTH)]
    rows = [cells(s) for s in shown]
    idw = max([3] + [len(str(s["stream"])) for s in shown])
    widths = [max([len(h)] + [len(r[2][i]) for r in rows]) for i, h in enumerate(HEADS)]
    endw = WIDTH - idw - sum(widths) - len(HEADS) - 1
    out.append(" ".join([f"{'tcp':>{idw}}", f"{'from > to':<{endw}}", *(f"{h:>{w}}" for h, w in zip(HEADS, widths))]))
    ends, star = shorten([(r[0], r[1]) for r in rows], endw)
    for s, (src, dst), (_, _, cs) in zip(shown, ends, rows):
        out.append(" ".join([f"{s['stream']:>{idw}}", f"{_ends(src, dst, endw):<{endw}}",
                             *(f"{c:>{w}}" for c, w in zip(cs, widths))]).rstrip())
    if star:
        out.append(star)
    left = len(with_data) - len(shown)
    if left:
        cmd = f"netrig analyze {' '.join(files)} --json" if files else "--json"
        if len(cmd) > 40:
            cmd = "netrig analyze FILE --json"
        out += textwrap.wrap(f"... and {left} more stream{'s' if left != 1 else ''} with less data "
                             f"(the {len(shown)} busiest are above): {cmd} shows every stream", WIDTH)
    t = analysis.get("totals", {})
    segs = t.get("data_packets") or 0
    if segs:
        out += textwrap.wrap(f"all: {segs} data segments, {t.get('retransmitted_data_packets', 0)} "
                             f"retransmitted ({percent(t.get('retransmitted_data_packets', 0), segs)}), "
                             f"{t.get('duplicate_ack', 0)} dup ACKs, {t.get('out_of_order', 0)} out of order",
                             WIDTH)
    out += textwrap.wrap(LEGEND, WIDTH)
    return out


def table(analysis: Mapping[str, Any], files: Sequence[str] = ()) -> str:
    """`lines` as text."""
    return "\n".join(lines(analysis, files)) + "\n"


def tcp_table(files: list[str] | list[Path]) -> str:
    """The analysis of a capture's files (one capture: a ring's files in order), as text."""
    a = capflows.analyze_files([Path(f) for f in files], series=None)
    return table(a, [str(f) for f in files])
