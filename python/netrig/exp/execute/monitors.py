"""What a run watches beside its flows: netrig-link's stats lines cut to the run (the
queue monitors' link directions, and every rated direction, which throughput over time
is drawn from), a node's interface counters, and the route changes in FRR routers.
The runner starts and stops them; each gives rows (or changes) on the flows' clock."""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from typing import Any

from netrig import units
from netrig.exp.spec.model import Point, find_link
from netrig.lab import netns
from netrig.lab.network import Network
from netrig.procs import end as end_process


class _RouteMonitor:
    """`ip -ts monitor route` in each FRR router's namespace, from before the flows
    start to their end; each change (an added or deleted route of the main table) on
    the flows' clock."""

    def __init__(self, net: Network, routers: list[str]) -> None:
        self.net = net
        self.routers = routers
        self.procs: dict[str, Any] = {}
        self.files: dict[str, Any] = {}

    def start(self) -> None:
        import subprocess
        import tempfile

        for r in self.routers:
            f = tempfile.TemporaryFile(mode="w+")
            self.files[r] = f
            self.procs[r] = subprocess.Popen(["ip", "-n", self.net[r].ns, "-ts", "monitor", "route"],
                                             stdout=f, stderr=subprocess.DEVNULL, text=True)

    def stop(self, t0_wall: float | None) -> list[dict[str, Any]]:
        """Stops each monitor by its PID; the changes (t from t0_wall), or [] when None."""
        for p in self.procs.values():
            end_process(p)
        if t0_wall is None:
            return []
        out: list[dict[str, Any]] = []
        for r, f in self.files.items():
            f.seek(0)
            out += route_changes(f.read(), r, t0_wall)
            f.close()
        self.files = {}
        return sorted(out, key=lambda c: c["t"])


def route_changes(text: str, router: str, t0_wall: float) -> list[dict[str, Any]]:
    """`ip -ts monitor route` lines as changes: {"t", "router", "change": add|delete,
    "route"}; local-table, broadcast and multicast lines (the kernel's own) left out, and
    an ECMP route's nexthop lines joined to it."""
    import datetime as dt

    out: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.startswith("[") or "]" not in line:
            if out and line.strip():
                out[-1]["route"] += " " + line.strip()
            continue
        stamp, _, rest = line[1:].partition("]")
        rest = rest.strip()
        try:
            wall = dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f").timestamp()
        except ValueError:
            continue
        deleted = rest.startswith("Deleted ")
        route = rest.removeprefix("Deleted ").strip()
        if "table local" in route or route.split(" ", 1)[0] in ("local", "broadcast", "multicast"):
            continue
        out.append({"t": round(wall - t0_wall, 6), "router": router,
                    "change": "delete" if deleted else "add", "route": route})
    return out


class _LinkRecorder:
    """netrig-link's own 100 Hz stats lines, cut to the run: the queue monitors' link
    directions (their series/monitor-K.jsonl), and every other direction with a rate
    (or a trace) that netrig-link emulates (series/link-stats.jsonl, which throughput
    over time is drawn from: what the bottleneck delivered). Each direction is kept
    once: figures read both files, and a direction in both would count its drops twice.
    Without netrig-link (backend: kernel, or no shaped link) nothing is recorded."""

    def __init__(self, net: Network, point: Point, specs) -> None:
        self.net = net
        self.want: list[tuple[int | None, str, set[str]]] = []
        for i, m in enumerate(specs):
            if m.kind == "queue":
                link = find_link(point.topology, m.link)
                dirs = {"a_to_b", "b_to_a"} if m.dir == "both" else {m.dir}
                self.want.append((i, link.name, dirs))
        self.rated = rated_directions(point, self.want)
        self.t0 = math.nan
        self.path: Path | None = None

    def mark(self) -> None:
        """Notes the run's start on netrig-link's clock."""
        st = self.net.state
        assert st is not None
        if not st.control or not (self.want or self.rated):
            return
        self.t0 = _first_t(self.net.link_stats())
        self.path = st.dir / "link-stats.jsonl"

    def collect(self, length: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(the queue monitors' rows, the other rated directions' rows) from the run's
        start to `length` s after it."""
        if self.path is None or math.isnan(self.t0):
            return [], []
        lines = self.path.read_text().splitlines()
        return (queue_rows(lines, self.t0, length, self.want),
                queue_rows(lines, self.t0, length, self.rated))


def rated_directions(point: Point, monitored: list[tuple[int | None, str, set[str]]]
                     ) -> list[tuple[int | None, str, set[str]]]:
    """The directions netrig-link emulates with a rate or a trace, but no queue monitor
    records, in queue_rows' form (no monitor index): link-stats.jsonl's contents."""
    seen = {(name, d) for _, name, dirs in monitored for d in dirs}
    out: list[tuple[int | None, str, set[str]]] = []
    if point.topology.backend != "userspace":
        return out
    for link in point.topology.links:
        if not link.emulated:
            continue
        dirs = {name for d, name in enumerate(("a_to_b", "b_to_a"))
                if (link.direction(d).rate_bps or link.direction(d).trace)
                and (link.name, name) not in seen}
        if dirs:
            out.append((None, link.name, dirs))
    return out


def queue_rows(lines: list[str], t0: float, length: float,
               want: list[tuple[int | None, str, set[str]]]) -> list[dict[str, Any]]:
    """The rows of the wanted (monitor, link, directions) from netrig-link's stats
    lines, from t0 to t0 + length, t counted from t0 (a monitor of None: a row without
    "monitor", as link-stats.jsonl holds). A line that is not a stats sample (being
    written, the totals, not JSON) is skipped."""
    import json

    rows = []
    for line in lines:
        try:
            v = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line being written
        if not isinstance(v, dict) or not all(_number(v.get(k, 0)) for k in _QUEUE_NUMBERS):
            continue
        t = v.get("t")
        if t is None or not t0 <= t <= t0 + length:
            continue
        for i, name, dirs in want:
            if v.get("link") == name and v.get("dir") in dirs:
                rows.append({**({} if i is None else {"monitor": i}),
                             "kind": "queue", "t": round(t - t0, 6), "link": name,
                             "dir": v["dir"], "queue_packets": v.get("queue_packets"),
                             "queue_bytes": v.get("queue_bytes"),
                             "sojourn_ms": (v.get("sojourn_mean_us") or 0) / 1e3,
                             "sojourn_max_ms": (v.get("sojourn_max_us") or 0) / 1e3,
                             "drops_overflow": v.get("drops_overflow"), "drops_aqm": v.get("drops_aqm"),
                             "lost": v.get("lost"), "ecn_marks": v.get("ecn_marks"),
                             "rate_bps": v.get("rate_bps"), "dequeued": v.get("dequeued")})
    return rows


# The numbers queue_rows reads or computes with: a line where one is not a number (or
# null) is not one of netrig-link's samples.
_QUEUE_NUMBERS = ("t", "sojourn_mean_us", "sojourn_max_us")


def _number(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _first_t(v: Any) -> float:
    if isinstance(v, dict):
        if isinstance(v.get("t"), (int, float)):
            return float(v["t"])
        for x in v.values():
            t = _first_t(x)
            if not math.isnan(t):
                return t
    elif isinstance(v, list):
        for x in v:
            t = _first_t(x)
            if not math.isnan(t):
                return t
    return math.nan


class _IfaceMonitor:
    """Interface counters of a node (all its interfaces, or `iface`), every interval."""

    def __init__(self, net: Network, spec, index: int) -> None:
        self.index = index
        self.ns = net[spec.node].ns
        self.node, self.iface = spec.node, spec.iface
        self.every = units.seconds(spec.interval or "100ms")
        self.rows: list[dict[str, Any]] = []
        self.thread: threading.Thread | None = None

    def start(self, t0: float, stop: threading.Event) -> None:
        def loop() -> None:
            while not stop.is_set():
                t = time.monotonic() - t0
                for dev, c in _net_dev().items():
                    if dev != "lo" and (self.iface is None or dev == self.iface):
                        self.rows.append({"monitor": self.index, "kind": "iface", "t": round(t, 6), "node": self.node,
                                          "iface": dev, **c})
                stop.wait(self.every)

        self.thread = threading.Thread(target=lambda: netns.run_in(self.ns, loop), daemon=True)
        self.thread.start()

    def join(self) -> None:
        if self.thread:
            self.thread.join(timeout=5)


def _net_dev() -> dict[str, dict[str, int]]:
    """This thread's namespace's /proc/net/dev: bytes, packets, errors, drops each way."""
    out = {}
    lines = Path("/proc/thread-self/net/dev").read_text().splitlines()[2:]
    for line in lines:
        dev, _, rest = line.partition(":")
        v = [int(x) for x in rest.split()]
        out[dev.strip()] = {"rx_bytes": v[0], "rx_packets": v[1], "rx_errors": v[2], "rx_drops": v[3],
                            "tx_bytes": v[8], "tx_packets": v[9], "tx_errors": v[10], "tx_drops": v[11]}
    return out

