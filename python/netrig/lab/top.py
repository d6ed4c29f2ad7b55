"""`netrig top`'s view of a running lab: each emulated link direction's delivered rate
against its configured rate, its queue (packets, sojourn), drops by cause, ECN marks and
the emulator's lateness, busiest first, with a sparkline of the delivered rate.

Owns the numbers and their frame. `Tracker` keeps the last seconds of netrig-link's
100 Hz sample lines (its `subscribe` stream) and its latest `stats` answer (totals since
the lab started, each direction's spec); `rows()` turns them into `Row`s, busiest first;
`frame()` lays rows out for a width of at most 80 columns as a rich renderable, and
`text()` renders one as plain text. These take samples, never a socket or a clock: unit
tests feed them made-up samples. `Feed` is the I/O: the subscription to a lab's
netrig-link and its `stats` requests, and what to say when the lab goes away.

Does not own the terminal (keys, refresh, the alternate screen: netrig.cli.top) nor the
stats themselves (netrig-link's daemon.rs: `sample` and `Request::Stats`).
"""

from __future__ import annotations

import io
import json
import socket
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from netrig.errors import NetrigError
from netrig.lab.state import LabState, alive
from netrig.link import userspace

WIDTH = 80
WINDOW_S = 1.0  # rates, queues, sojourn and lateness are over this last stretch of samples
BIN_S = 1.0  # one sparkline character per this much time
SPARK = 10  # sparkline characters (SPARK * BIN_S seconds of history)
BARS = "▁▂▃▄▅▆▇█"
ARROW = "→"


class LabGone(NetrigError):
    """The lab (or its emulator) went away while `netrig top` watched it."""


@dataclass
class _Dir:
    """One link direction's recent samples: (t, span, bytes, queue_packets, sojourn
    total in µs, packets dequeued, late p99 µs), and per-bin bytes and spans."""

    samples: deque = field(default_factory=deque)
    bins: dict[int, list[float]] = field(default_factory=dict)  # bin -> [bytes, span]
    prev_t: float | None = None


@dataclass
class Row:
    """A link direction as `netrig top` shows it."""

    link: str
    src: str
    dst: str
    rate_bps: float  # delivered over the last WINDOW_S
    configured: float | str | None  # its rate in bit/s, 'trace', or None (unlimited)
    queue_packets: float  # mean over the window
    sojourn_ms: float  # mean over the packets dequeued in the window
    overflow: int  # drops since the lab started, by cause
    aqm: int
    loss: int
    ecn: int
    late_us: float  # the worst 10 ms window's p99 lateness in the window
    spark: list[float]  # delivered rate per BIN_S, oldest first, as a fraction of its scale
    up: bool = True


@dataclass
class Header:
    """What the frame's first lines say about the lab."""

    prefix: str
    name: str
    kinds: dict[str, int]  # node kind -> count
    links: int
    emulated: int
    pid: int
    clock: str = ""  # e.g. 12:03:04


class Tracker:
    """Samples and totals of a lab's emulated link directions, as they arrive."""

    def __init__(self, plan: dict) -> None:
        self.ends = {l["name"]: (l["a"], l["b"]) for l in plan.get("links", [])}
        self.dirs: dict[tuple[str, str], _Dir] = {}
        self.totals: dict[tuple[str, str], dict] = {}  # the latest `stats` direction
        self.specs: dict[tuple[str, str], dict] = {}
        self.up: dict[str, bool] = {}

    def add(self, s: dict) -> None:
        """One sample line of netrig-link's subscription (`daemon.rs` `sample`)."""
        if "link" not in s or s.get("dir") not in ("a_to_b", "b_to_a") or "t" not in s:
            return  # the subscription's own reply, an event or the totals line
        d = self.dirs.setdefault((s["link"], s["dir"]), _Dir())
        t, got = float(s["t"]), float(s.get("delivered_bytes", 0))
        if d.prev_t is None:  # its first sample: its span from its own rate
            rate = float(s.get("rate_bps", 0))
            span = got * 8 / rate if rate > 0 else 0.01
        else:
            span = max(t - d.prev_t, 0.0)
        d.prev_t = t
        dequeued = int(s.get("dequeued", 0))
        d.samples.append((t, span, got, float(s.get("queue_packets", 0)),
                          float(s.get("sojourn_mean_us", 0)) * dequeued, dequeued,
                          float(s.get("late_p99_us", 0))))
        while d.samples and d.samples[0][0] <= t - WINDOW_S:
            d.samples.popleft()
        b = d.bins.setdefault(int(t // BIN_S), [0.0, 0.0])
        b[0] += got
        b[1] += span
        for old in [k for k in d.bins if k <= int(t // BIN_S) - SPARK]:
            del d.bins[old]

    def gap(self) -> None:
        """Samples were missed (the subscription was opened again): the next sample's
        span starts at itself, not at the last one seen."""
        for d in self.dirs.values():
            d.prev_t = None

    def stats(self, answer: dict) -> None:
        """netrig-link's answer to `stats`: totals since the lab started, and specs."""
        for l in answer.get("links", []):
            self.up[l["link"]] = bool(l.get("up", True))
            for d in ("a_to_b", "b_to_a"):
                self.totals[(l["link"], d)] = l.get(d, {})
                self.specs[(l["link"], d)] = l.get("spec", {}).get(d, {})


def configured(spec: dict) -> float | str | None:
    """A direction's configured rate in bit/s; 'trace' for a delivery trace; None when
    it has no rate limit."""
    if spec.get("rate_bps"):
        return float(spec["rate_bps"])
    return "trace" if spec.get("trace") else None


def rows(tr: Tracker) -> list[Row]:
    """Every link direction tracker `tr` knows, busiest first (delivered rate, then
    queue), then in the lab's order of links."""
    out = []
    order = {name: i for i, name in enumerate(tr.ends)}
    for key in sorted(set(tr.dirs) | set(tr.totals), key=lambda k: (order.get(k[0], len(order)), k)):
        link, dname = key
        a, b = tr.ends.get(link, ("a", "b"))
        src, dst = (a, b) if dname == "a_to_b" else (b, a)
        d = tr.dirs.get(key, _Dir())
        span = sum(x[1] for x in d.samples)
        got = sum(x[2] for x in d.samples)
        n = len(d.samples)
        dequeued = sum(x[5] for x in d.samples)
        conf = configured(tr.specs.get(key, {}))
        rate = got * 8 / span if span > 0 else 0.0
        tot = tr.totals.get(key, {})
        out.append(Row(link, src, dst, rate, conf,
                       queue_packets=sum(x[3] for x in d.samples) / n if n else 0.0,
                       sojourn_ms=sum(x[4] for x in d.samples) / dequeued / 1e3 if dequeued else 0.0,
                       overflow=int(tot.get("drops_overflow", 0)), aqm=int(tot.get("drops_aqm", 0)),
                       loss=int(tot.get("lost", 0)), ecn=int(tot.get("ecn_marks", 0)),
                       late_us=max((x[6] for x in d.samples), default=0.0),
                       spark=_spark(d, conf), up=tr.up.get(link, True)))
    # sorted() is stable: equal rows keep the lab's order.
    return sorted(out, key=lambda r: (-r.rate_bps, -r.queue_packets))


def _spark(d: _Dir, conf: float | str | None) -> list[float]:
    """The direction's delivered rate per bin, oldest first, as a fraction of its
    configured rate (of the busiest bin's when it has none)."""
    if not d.bins:
        return []
    last = max(d.bins)
    rates = [(b[0] * 8 / b[1] if b[1] > 0 else 0.0) for b in
             (d.bins.get(k, [0.0, 0.0]) for k in range(last - SPARK + 1, last + 1))]
    first = min(d.bins)  # no history before the first sample: no bars there
    rates = rates[max(0, SPARK - (last - first + 1)):]
    scale = conf if isinstance(conf, float) else max(rates)
    return [min(r / scale, 1.0) if scale > 0 else 0.0 for r in rates]


def sparkline(fractions: list[float]) -> str:
    """Bars for fractions of a scale: a space for nothing at all, ▁ for a little."""
    return "".join(" " if f <= 0 else BARS[min(int(f * len(BARS)), len(BARS) - 1)] for f in fractions)


def si(bps: float, measured: bool = True) -> str:
    """A rate in at most 5 characters, decimal prefixes: a measured one with three
    digits (9.52M, 10.0M, 950k), a configured one as short as it is (10M, 1.5M)."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if bps >= scale * 0.9995:
            v = bps / scale
            if not measured:
                return f"{v:.3g}{unit}"
            return f"{v:.2f}{unit}" if v < 9.995 else f"{v:.1f}{unit}" if v < 99.95 else f"{v:.0f}{unit}"
    return f"{bps:.0f}"


def count(n: int) -> str:
    """A count in at most 4 characters (0, 999, 1.2k, 45k, 1.2M)."""
    if n < 1000:
        return str(n)
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if n >= scale:
            v = n / scale
            return f"{v:.1f}{unit}" if v < 10 else f"{v:.0f}{unit}"
    return str(n)  # pragma: no cover


def ms(x: float) -> str:
    """Milliseconds in at most 6 characters (0, 0.42, 12.3, 807)."""
    if x <= 0:
        return "0"
    return f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:.0f}"


def late(us: float) -> str:
    """The emulator's lateness in at most 6 characters (42µs, 1.2ms)."""
    return f"{us:.0f}µs" if us < 1000 else f"{us / 1e3:.1f}ms"


def header_text(h: Header) -> str:
    kinds = ", ".join(f"{n} {k}{'es' if k == 'switch' and n != 1 else 's' if n != 1 else ''}"
                      for k, n in h.kinds.items() if n)
    links = f"{h.links} link{'s' if h.links != 1 else ''}"
    if h.emulated != h.links:
        links += f" ({h.emulated} emulated)"
    return f"lab {h.prefix} ({h.name}): {kinds}; {links}"


def frame(h: Header, rs: list[Row], width: int = WIDTH, height: int | None = None,
          live: bool = True) -> RenderableType:
    """One frame: two header lines, a row per link direction (as many as `height`
    lines hold, busiest first; a last line counts the others) and, `live`, what q does."""
    width = min(width, WIDTH)
    top = Text(header_text(h), style="bold", overflow="ellipsis", no_wrap=True)
    clock = f"  {h.clock}" if h.clock else ""
    top.truncate(width - len(clock), overflow="ellipsis")
    top.append(clock)
    sub = Text(f"netrig-link pid {h.pid} · last {WINDOW_S:g} s but drops and ecn (since up) "
               f"· bars: {SPARK * BIN_S:g} s", style="dim", no_wrap=True, overflow="ellipsis")
    t = Table(box=None, padding=(0, 1, 0, 0), pad_edge=False, show_edge=False, expand=False,
              header_style="bold", collapse_padding=True)
    spark_w = SPARK if width >= WIDTH else 0
    t.add_column("link", min_width=8, max_width=15, no_wrap=True, overflow="ellipsis")
    t.add_column("delivered", justify="right", no_wrap=True, width=11)
    t.add_column("%", justify="right", no_wrap=True, width=4)
    t.add_column("queue", justify="right", no_wrap=True, width=6)
    t.add_column("ms", justify="right", no_wrap=True, width=5)
    t.add_column("drop o/a/l", justify="right", no_wrap=True, width=14)
    t.add_column("ecn", justify="right", no_wrap=True, width=4)
    t.add_column("late", justify="right", no_wrap=True, width=6)
    if spark_w:
        t.add_column("rate", no_wrap=True, width=spark_w)
    shown = rs if height is None else rs[:max(1, height - 5)]
    for r in shown:
        t.add_row(*_cells(r, spark_w))
    parts: list[RenderableType] = [top, sub, t]
    if len(shown) < len(rs):
        parts.append(Text(f"… and {len(rs) - len(shown)} quieter directions", style="dim"))
    elif not rs:
        parts.append(Text("no emulated link has sent a sample yet", style="dim"))
    if live:
        parts.append(Text("q quits", style="dim"))
    return Group(*parts)


def _cells(r: Row, spark_w: int) -> list[Text | str]:
    name = f"{r.link} {r.src}{ARROW}{r.dst}"
    if isinstance(r.configured, float):
        of, pct = si(r.configured, measured=False), f"{100 * r.rate_bps / r.configured:.0f}%"
    else:
        of, pct = ("trace" if r.configured else "-"), ""
    busy = isinstance(r.configured, float) and r.rate_bps >= 0.9 * r.configured
    drops = f"{count(r.overflow)}/{count(r.aqm)}/{count(r.loss)}"
    cells: list[Text | str] = [
        Text(name + ("" if r.up else " DOWN"), style="bold red" if not r.up else ""),
        Text(f"{si(r.rate_bps)}/{of}", style="bold" if busy else ""),
        pct, f"{r.queue_packets:.0f}p", ms(r.sojourn_ms),
        Text(drops, style="red" if r.overflow or r.aqm or r.loss else ""),
        count(r.ecn), Text(late(r.late_us), style="yellow" if r.late_us >= 1000 else ""),
    ]
    if spark_w:
        cells.append(Text(sparkline(r.spark).rjust(spark_w), style="green"))
    return cells


def text(renderable: RenderableType, width: int = WIDTH) -> str:
    """A frame as plain text (no colour, no cursor moves), lines of at most `width`."""
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, force_terminal=False,
            legacy_windows=False, soft_wrap=False).print(renderable)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def header(st: LabState, clock: str = "") -> Header:
    kinds: dict[str, int] = {"host": 0, "switch": 0, "router": 0}
    for n in st.plan.get("nodes", {}).values():
        kinds[n.get("kind", "node")] = kinds.get(n.get("kind", "node"), 0) + 1
    links = st.plan.get("links", [])
    return Header(st.prefix, st.plan.get("name") or st.topology, kinds, len(links),
                  sum(1 for l in links if l.get("emulated")), st.pids.get("netrig-link", 0), clock)


class Feed:
    """A lab's netrig-link, watched: its 100 Hz sample lines (a `subscribe` connection,
    read when `fileno()` is readable) and its `stats` answers."""

    def __init__(self, prefix: str) -> None:
        self.state = LabState.load(prefix)
        st = self.state
        if st.status != "up":
            raise NetrigError(f"lab '{prefix}' is not up yet ({st.status}): 'netrig status' says "
                              "what it waits for")
        if not st.control:
            raise NetrigError(f"lab '{prefix}' has no emulated links (backend {st.backend}): "
                              "netrig top shows netrig-link's; 'netrig status' shows the lab")
        self.pid = st.pids.get("netrig-link", 0)
        self.sock: socket.socket | None = None
        self.buf = b""
        self.connect()

    def connect(self) -> None:
        self.close()
        s = socket.socket(socket.AF_UNIX)
        try:
            s.settimeout(5)
            s.connect(str(self.state.control))
            s.sendall(b'{"cmd": "subscribe"}\n')
        except OSError as e:
            s.close()
            self.gone(f"its emulator's control socket {self.state.control}: {e.strerror or e}")
        s.setblocking(False)
        self.sock, self.buf = s, b""

    def fileno(self) -> int:
        assert self.sock is not None
        return self.sock.fileno()

    def read(self, tr: Tracker) -> None:
        """Hands the sample lines that have arrived to `tr` (call when readable). A
        closed subscription is opened again while the emulator runs (it drops a reader
        that fell behind: `tr` is told of the gap); LabGone when it does not."""
        assert self.sock is not None
        try:
            chunk = self.sock.recv(1 << 20)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.check()
            self.connect()
            tr.gap()
            return
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            try:
                v = json.loads(line)
            except json.JSONDecodeError:
                continue  # not a sample: nothing of ours to show
            if isinstance(v, dict):
                tr.add(v)

    def stats(self) -> dict:
        try:
            return userspace.request(self.state.control, {"cmd": "stats"}, timeout=2)
        except NetrigError as e:
            self.check()
            raise NetrigError(f"lab '{self.state.prefix}': {e}") from None

    def check(self) -> None:
        """LabGone when the lab's state or its emulator is gone."""
        if not Path(self.state.dir, "state.json").exists():
            self.gone("its state is gone ('netrig down' or 'netrig clean' removed it)")
        if not alive(self.pid, "netrig-link"):
            self.gone(f"its emulator (netrig-link pid {self.pid}) is not running")

    def gone(self, why: str) -> None:
        raise LabGone(f"lab '{self.state.prefix}' went away: {why}")

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def clock() -> str:
    return time.strftime("%H:%M:%S")
