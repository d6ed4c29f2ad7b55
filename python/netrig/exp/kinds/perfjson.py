"""netrig-perf's -J document as netrig reads it: one parser, typed.

Owns the shape of netrig's extras to iperf3's layout (the Rust side is
crates/netrig-perf/src/extras.rs; both are held to the fixtures in
tests/fixtures/perf-json/): a paced sender's `pacing`, `end.probe` and
`intervals[].probe`, `end.rr` and `intervals[].rr`, `netrig.tcp_info`, a UDP receiver's
`suspicious`, and `netrig.schema`, the version of these shapes. It also checks the few
parts of iperf3's own layout that flows read (the sums, the streams' sender RTT, the
socket buffers, the intervals and the server's intervals).

`parse(text)` gives (the document as a dict, None) or (None, what is wrong with it in
netrig's words); the accessors (`pacing`, `pacing_summary`, `probe`, `rr`, `tcp_info`,
`suspicious`) read a document `parse` accepted as the dataclasses below. Only the
standard library and netrig.errors: this module does not depend on the rest of exp/.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

from netrig.errors import NetrigError

SCHEMA = 1  # the shapes' version this netrig reads (netrig-perf's extras.rs SCHEMA)

_ROOT = "the document"


class PerfJsonError(NetrigError):
    """netrig-perf's output is not a document netrig can read (see `read`)."""


# --- netrig's extras (extras.rs) --------------------------------------------------------------

@dataclass(frozen=True)
class Stats:
    """Latency figures of a set of samples, in the unit of the key holding them."""

    count: int | None = None
    mean: float | None = None
    stddev: float | None = None
    min: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class PacingEpisode:
    """One of the stretches furthest behind the schedule (s from the start, s, ms)."""

    start: float | None = None
    seconds: float | None = None
    max_behind_ms: float | None = None


@dataclass(frozen=True)
class Pacing:
    """A paced sender's account of its schedule (`-b`)."""

    target_bps: float | None = None
    catch_up_limit_bps: float | None = None
    tolerance_ms: float | None = None
    times_behind: int | None = None
    behind_seconds: float | None = None
    max_behind_ms: float | None = None
    max_behind_bytes: int | None = None
    forgiven_bytes: int | None = None
    short_at_end_bytes: int | None = None
    short_since: float | None = None
    worst: list[PacingEpisode] = field(default_factory=list)


@dataclass(frozen=True)
class TcpInfo:
    """One TCP_INFO sample (`--tcp-info-interval`); units in the keys, `t` in s from
    the start, ssthresh None until the kernel sets one."""

    _required: ClassVar[tuple[str, ...]] = ("t",)
    socket: int | None = None
    t: float = 0.0
    sender: bool | None = None
    bytes: int | None = None
    snd_cwnd: int | None = None
    snd_cwnd_bytes: int | None = None
    snd_cwnd_segments: int | None = None
    snd_ssthresh_bytes: int | None = None
    snd_ssthresh_segments: int | None = None
    rtt_us: int | None = None
    rttvar_us: int | None = None
    min_rtt_us: int | None = None
    total_retrans: int | None = None
    lost: int | None = None
    unacked: int | None = None
    pacing_rate_bps: int | None = None
    delivery_rate_bps: int | None = None
    snd_wnd: int | None = None
    snd_mss: int | None = None


@dataclass(frozen=True)
class ProbeWindow:
    """A probe test's figures over one interval (`intervals[].probe`)."""

    start: float | None = None
    end: float | None = None
    sent: int | None = None
    received: int | None = None
    lost: int | None = None
    loss_percent: float | None = None
    rtt_ms: Stats = field(default_factory=Stats)
    send_delay_ms: Stats = field(default_factory=Stats)
    receive_delay_ms: Stats = field(default_factory=Stats)


@dataclass(frozen=True)
class ProbeSample:
    """One probe: when it was sent (s from the test's start) and its delays (ms; None
    when no reply came)."""

    seq: int | None
    t: float
    rtt_ms: float | None
    send_delay_ms: float | None = None
    receive_delay_ms: float | None = None


@dataclass(frozen=True)
class Probe(ProbeWindow):
    """`end.probe`: the whole test's window, and every probe (`samples`, rows whose
    columns `samples_columns` names)."""

    _columns: ClassVar[tuple[str, ...]] = ("t", "rtt_ms")
    _default_columns: ClassVar[tuple[str, ...]] = ("seq", "t", "rtt_ms")
    duplicates: int | None = None
    interval_ms: float | None = None
    size: int | None = None
    samples: list[list[float | None]] = field(default_factory=list)
    samples_columns: list[str] = field(default_factory=list)
    start_unix_ns: int | None = None

    def rows(self) -> list[ProbeSample]:
        cols = self.samples_columns or list(self._default_columns)
        out = []
        for row in self.samples:
            d = dict(zip(cols, row, strict=False))
            out.append(ProbeSample(d.get("seq"), d["t"], d.get("rtt_ms"), d.get("send_delay_ms"),
                                   d.get("receive_delay_ms")))
        return out


@dataclass(frozen=True)
class RrWindow:
    """A request/response test's figures over one interval (`intervals[].rr`)."""

    start: float | None = None
    end: float | None = None
    transactions: int | None = None
    failed: int | None = None
    time_ms: Stats = field(default_factory=Stats)


@dataclass(frozen=True)
class RrSample:
    """One transaction: when it began (s from the test's start), how long it took (ms;
    None when it failed)."""

    t: float
    time_ms: float | None


@dataclass(frozen=True)
class Rr:
    """`end.rr`: the whole test's transactions, and every one (`samples`)."""

    _columns: ClassVar[tuple[str, ...]] = ("t", "time_ms")
    _default_columns: ClassVar[tuple[str, ...]] = ("t", "time_ms")
    seconds: float | None = None
    transactions: int | None = None
    failed: int | None = None
    transactions_per_second: float | None = None
    response_bytes: int | None = None
    new_connection: bool | None = None
    time_ms: Stats = field(default_factory=Stats)
    samples: list[list[float | None]] = field(default_factory=list)
    samples_columns: list[str] = field(default_factory=list)

    def rows(self) -> list[RrSample]:
        cols = self.samples_columns or list(self._default_columns)
        return [RrSample(d["t"], d.get("time_ms")) for d in (dict(zip(cols, r, strict=False))
                                                              for r in self.samples)]


@dataclass(frozen=True)
class UdpIntervalExtras:
    """A UDP receiver's counts in an interval's stream entry."""

    out_of_order: int | None = None
    duplicates: int | None = None
    suspicious: int | None = None


@dataclass(frozen=True)
class UdpEndExtras:
    """netrig's keys of `end.streams[].udp`: the receiver's suspicious datagrams (None
    from an iperf3 receiver), the sender's pacing (None when not paced)."""

    suspicious: int | None = None
    pacing: Pacing | None = None


@dataclass(frozen=True)
class Netrig:
    """The document's top-level `netrig` object. No schema: a document printed before
    netrig-perf wrote one, read as schema 1."""

    schema: int | None = None
    tcp_info: list[TcpInfo] = field(default_factory=list)


# --- the parts of iperf3's layout that flows read --------------------------------------------

@dataclass(frozen=True)
class Sum:
    """A sum or a stream's side, as far as flows read it."""

    bits_per_second: float | None = None
    bytes: float | None = None
    seconds: float | None = None
    retransmits: float | None = None
    lost_percent: float | None = None
    jitter_ms: float | None = None
    packets: float | None = None
    end: float | None = None


@dataclass(frozen=True)
class SenderSide:
    mean_rtt: float | None = None
    pacing: Pacing | None = None


@dataclass(frozen=True)
class Stream:
    sender: SenderSide | None = None
    udp: UdpEndExtras | None = None


@dataclass(frozen=True)
class End:
    sum_received: Sum | None = None
    sum_sent: Sum | None = None
    sum: Sum | None = None
    streams: list[Stream] = field(default_factory=list)
    probe: Probe | None = None
    rr: Rr | None = None


@dataclass(frozen=True)
class Interval:
    sum: Sum | None = None
    probe: ProbeWindow | None = None
    rr: RrWindow | None = None


@dataclass(frozen=True)
class Start:
    sndbuf_actual: float | None = None
    rcvbuf_actual: float | None = None


@dataclass(frozen=True)
class ServerOutput:
    intervals: list[Interval] = field(default_factory=list)


@dataclass(frozen=True)
class Document:
    error: str | None = None
    start: Start | None = None
    end: End | None = None
    intervals: list[Interval] = field(default_factory=list)
    server_output_json: ServerOutput | None = None
    netrig: Netrig | None = None


# --- checking and building --------------------------------------------------------------------

def _kind(v: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(v), "a number")


_NAMES = {float: "a number", int: "a number", str: "a string", bool: "a boolean"}
_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        hints = typing.get_type_hints(cls)
        _HINTS[cls] = {f.name: hints[f.name] for f in dataclasses.fields(cls)}
    return _HINTS[cls]


def _unwrap(hint: Any) -> Any:
    """X for `X | None`."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else hint
    return hint


def _problem(v: Any, hint: Any, where: str) -> str | None:
    """What is wrong with `v` as a value of `hint`, at `where`; None when nothing.
    Scalars may be null (a figure the run had none of); objects and arrays may not."""
    hint = _unwrap(hint)
    if hint in (float, int):
        ok = v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
        return None if ok else f"{where} is {_kind(v)}, not a number"
    if hint in (str, bool):
        return None if v is None or isinstance(v, hint) else f"{where} is {_kind(v)}, not {_NAMES[hint]}"
    if typing.get_origin(hint) is list:
        if not isinstance(v, list):
            return f"{where} is {_kind(v)}, not an array"
        (item,) = typing.get_args(hint)
        for i, x in enumerate(v):
            if problem := _problem(x, item, f"{where}[{i}]"):
                return problem
        return None
    if not isinstance(v, dict):
        return f"{where} is {_kind(v)}, not an object"
    for need in getattr(hint, "_required", ()):
        if need not in v:
            return f"{where} has no {need!r}"
    cols = v.get("samples_columns")
    if isinstance(cols, list) and (missing := [c for c in getattr(hint, "_columns", ()) if c not in cols]):
        return f"{where}.samples_columns lacks {', '.join(missing)}"
    for key, sub in _hints(hint).items():
        if key in v and (problem := _problem(v[key], sub, f"{where}.{key}" if where != _ROOT else key)):
            return problem
    return _rows_problem(v, hint, where) if hasattr(hint, "_columns") else None


def _rows_problem(v: dict[str, Any], hint: Any, where: str) -> str | None:
    """A sample row (its types checked) shorter than its columns, or with no time."""
    cols = v.get("samples_columns") or list(hint._default_columns)
    for i, row in enumerate(v.get("samples") or []):
        if len(row) < len(cols):
            return f"{where}.samples[{i}] has {len(row)} values for the {len(cols)} columns {', '.join(cols)}"
        if row[cols.index("t")] is None:
            return f"{where}.samples[{i}] has no time: its t is null"
    return None


def _build(v: Any, hint: Any) -> Any:
    """The value of `hint` that `v` (which `_problem` passed) is."""
    hint = _unwrap(hint)
    if v is None or hint in (float, int, str, bool):
        return v
    if typing.get_origin(hint) is list:
        (item,) = typing.get_args(hint)
        return [_build(x, item) for x in v]
    return hint(**{k: _build(v[k], sub) for k, sub in _hints(hint).items() if k in v})


def _schema_problem(doc: dict[str, Any]) -> str | None:
    schema = (doc.get("netrig") or {}).get("schema")
    if schema is None or schema == SCHEMA:
        return None
    return (f"netrig.schema is {schema}, and this netrig reads schema {SCHEMA} only: run the "
            f"netrig-perf installed with this netrig (netrig-perf --version names it)")


def parse(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """netrig-perf's -J output: (the document, None), or (None, what is wrong with it)."""
    if not text.strip():
        return None, "no JSON from netrig-perf: its output is empty"
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        cut = e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string")
        what = "cut short" if cut else f"not valid JSON at line {e.lineno} column {e.colno} ({e.msg})"
        return None, f"netrig-perf's JSON output is {what} ({len(text)} bytes; it ends {text.rstrip()[-80:]!r})"
    if problem := _problem(doc, Document, _ROOT) or _schema_problem(doc):
        return None, f"netrig-perf's JSON: {problem}"
    return doc, None


def read(text: str) -> dict[str, Any]:
    """As `parse`, raising PerfJsonError with the problem."""
    doc, problem = parse(text)
    if problem:
        raise PerfJsonError(problem)
    assert doc is not None
    return doc


# --- accessors (of a document parse() accepted) -----------------------------------------------

def document(doc: dict[str, Any]) -> Document:
    """The whole document as far as netrig reads it, typed."""
    return _build(doc, Document)


def _end(doc: dict[str, Any]) -> dict[str, Any]:
    return doc.get("end") or {}


def pacing(doc: dict[str, Any]) -> list[Pacing]:
    """Each paced sender's account (`end.streams[].udp.pacing`, `.sender.pacing`)."""
    return [_build(side["pacing"], Pacing) for s in _end(doc).get("streams") or []
            for side in (s.get("udp"), s.get("sender")) if side and side.get("pacing") is not None]


def pacing_summary(doc: dict[str, Any], sent_bytes: float) -> dict[str, Any]:
    """What the paced senders of a flow said of their schedule: how long they were
    behind (s), how far at worst (ms), and the share of the rate they never sent (short
    at the end, or forgiven; % of what they owed). Empty for unpaced flows."""
    paced = pacing(doc)
    if not paced:
        return {}
    owed = sum((p.short_at_end_bytes or 0) + (p.forgiven_bytes or 0) for p in paced)
    return {"sender_behind_s": sum(p.behind_seconds or 0 for p in paced),
            "sender_max_behind_ms": max(p.max_behind_ms or 0 for p in paced),
            "sender_short_pct": 100.0 * owed / (sent_bytes + owed) if sent_bytes + owed else 0.0}


def probe(doc: dict[str, Any]) -> Probe | None:
    """`end.probe`, None when the document has none."""
    p = _end(doc).get("probe")
    return None if p is None else _build(p, Probe)


def rr(doc: dict[str, Any]) -> Rr | None:
    """`end.rr`, None when the document has none."""
    r = _end(doc).get("rr")
    return None if r is None else _build(r, Rr)


def tcp_info(doc: dict[str, Any]) -> list[TcpInfo]:
    """`netrig.tcp_info`, in the order taken (empty without any)."""
    return _build((doc.get("netrig") or {}).get("tcp_info") or [], list[TcpInfo])


def suspicious(doc: dict[str, Any]) -> int | None:
    """The datagrams the receivers judged not the sender's, over the streams; None when
    no receiver counted them (an iperf3 receiver, or not UDP)."""
    counts = [(s.get("udp") or {}).get("suspicious") for s in _end(doc).get("streams") or []]
    counts = [c for c in counts if c is not None]
    return int(sum(counts)) if counts else None
