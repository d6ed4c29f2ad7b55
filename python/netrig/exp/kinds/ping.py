"""The ping kind: the system's ping (iputils) from the flow's node, its replies read
once: RTT samples (`samples`), the statistics line (`counts`), a reply line that does
not read as one (`problem`), and each request's send time and fate (`probes`, which the
runner's outage measurement reads).
"""

from __future__ import annotations

import re
from typing import Any

from netrig.exp.kinds.base import Call, FlowOutput, stats

_NUM = r"\d+(?:\.\d+)?"
# A reply of iputils ping -D: "[1700000000.123456] 64 bytes from A: icmp_seq=1 ttl=64
# time=0.045 ms", and " (DUP!)" after a duplicate.
_PING = re.compile(rf"^\[({_NUM})\] .*\bicmp_seq=(\d+) .*\btime=({_NUM}) ms( \(DUP!\))?")
_PING_STATS = re.compile(r"^(\d+) packets transmitted, (\d+) received")


def ping_count(duration: float, interval: float) -> int:
    """How many echo requests fit in the duration (0.6 s at 0.2 s is 3, although
    0.6 / 0.2 is 2.9999999999999996 in floating point)."""
    return max(1, int(duration / interval + 1e-9))


def ping_argv(f, addr: str, duration: float) -> list[str]:
    interval = f.seconds("interval", 1.0)
    count = ping_count(duration, interval)
    # -c alone stops after *sending* count requests (with -w it would keep sending until
    # count replies came back, well past the flow's time when some are lost); -W: how
    # long the last ones may take.
    argv = ["ping", "-n", "-D", "-i", f"{interval:g}", "-c", str(count), "-W", "3"]
    if f.size is not None:
        argv += ["-s", str(f.nbytes("size"))]
    return [*argv, addr]


def argv(c: Call) -> list[str]:
    return ping_argv(c.spec, c.addr, c.duration)


def _replies(text: str) -> list[tuple[float, int, float]]:
    """(wall time ping -D stamped, icmp_seq, RTT ms) per reply, duplicates left out."""
    out = []
    for line in text.splitlines():
        m = _PING.match(line)
        if m and not m.group(4):
            out.append((float(m.group(1)), int(m.group(2)), float(m.group(3))))
    return out


def samples(o: FlowOutput) -> list[tuple[float, float]]:
    """(seconds from the run's start, RTT ms) per reply (a duplicate is not a reply);
    ping -D stamps wall time."""
    rows = _replies(o.stdout)
    if not rows:
        return []
    first_wall = rows[0][0]
    return [(o.start_s + (w - first_wall), r) for w, _, r in rows]


def probes(o: FlowOutput, t0_wall: float) -> list[tuple[float, float | None]]:
    """A ping flow's requests as (send time on the flows' clock, RTT ms or None: no
    reply), from ping -D's replies (stamped with the wall clock as they came: sent an
    RTT earlier) and their icmp_seq (a missing number: a lost request, sent on the
    interval's schedule from the first answered one)."""
    interval = o.spec.seconds("interval", 1.0)
    got = {seq: (w - r / 1e3 - t0_wall, r) for w, seq, r in _replies(o.stdout)}
    if not got:
        return []
    first, last = min(got), max(got)
    return [(got[seq][0] if seq in got else got[first][0] + (seq - first) * interval,
             got[seq][1] if seq in got else None) for seq in range(first, last + 1)]


def counts(text: str) -> tuple[int, int] | None:
    """(transmitted, received) from ping's statistics line, or None without one."""
    for line in text.splitlines():
        if m := _PING_STATS.match(line):
            return int(m.group(1)), int(m.group(2))
    return None


def problem(text: str) -> str | None:
    """What is wrong with ping's output: a line that looks like a reply but does not
    read as one (ping stopped mid-line is not a problem: its last line is left out)."""
    lines = text.splitlines()
    if text and not text.endswith("\n"):
        lines = lines[:-1]
    for n, line in enumerate(lines, 1):
        if "icmp_seq=" in line and " bytes from " in line and "time=" in line and not _PING.match(line):
            return f"ping output line {n} is not a reply netrig can read: {line[:200]!r}"
    return None


def parse(o: FlowOutput) -> None:
    if o.error is not None:
        return
    said = problem(o.stdout)
    if o.code not in (0, 1):
        o.error = f"ping exited {o.code}: {o.stderr.strip()[-300:]}"
    elif said:
        o.error = said
    elif o.code == 0 and not samples(o):
        o.error = f"ping exited 0 but printed no reply: {o.stdout.strip()[-300:]!r}"


def summary(o: FlowOutput) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "error" if o.error else "ok", "error": o.error or ""}
    rtts = [r for _, r in samples(o)]
    out.update(stats("rtt_ms", rtts))
    got = counts(o.stdout)
    if got is None:  # no statistics line (ping was stopped): what was planned
        got = (ping_count(o.planned_s, o.spec.seconds("interval", 1.0)), len(rtts))
    sent, received = got
    out["loss_pct"] = 100.0 * (1 - received / sent) if sent and (rtts or not o.error) else None
    return out


def series(o: FlowOutput) -> list[dict[str, Any]]:
    return sorted(({"t": t, "rtt_ms": r} for t, r in samples(o)), key=lambda r: r["t"])
