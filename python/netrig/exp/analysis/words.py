"""How results are put into words, once for every reader: a sweep value (`aqm=pie(target=20ms)`),
a point's values, a metric's unit, the notes on a run's late packets and short senders.
"""

from __future__ import annotations

from typing import Any

from netrig.exp.grade.verdict import versus
from netrig.exp.kinds.metrics import UNITS, unit_of  # noqa: F401 (the one table; words' readers)
from netrig.link import spec as linkspec

# netrig-link counts a packet released more than its budget (1 ms) after its due time;
# a run where more than LATE_SHARE of its packets were is flagged (both the link spec's).
LATE_BUDGET_MS = linkspec.LATE_BUDGET_S * 1e3


LATE_SHARE = linkspec.LATE_SHARE


# A paced sender that ends more than SHORT_PCT % of its schedule short is flagged.
SHORT_PCT = 1.0


MEASURED = ("ok", "timed_out")  # the statuses whose numbers are results


def range_pos(measured: Any, lo: Any, hi: Any) -> float | None:
    """Where a measurement sits in an expected range: 0 at its low end (the idle
    path), 1 at its top (a full queue); below 0 or above 1 outside it."""
    return versus(measured, lo, hi).position


def late_note(run: dict[str, Any]) -> str:
    """A sentence when the emulator could not keep time in a run: more than LATE_SHARE
    of its packets left more than the budget after their due time (a busy host)."""
    e = run.get("emulator") or {}
    n, over = e.get("packets") or 0, e.get("over_budget") or 0
    if not n or over <= LATE_SHARE * n:
        return ""
    return (f"run {run.get('run')}: the link emulator released {over} of {n} packets "
            f"({100 * over / n:.1f} %) more than {e.get('budget_ms', LATE_BUDGET_MS):g} ms late "
            f"(p99 {e.get('late_p99_us') or 0:.0f} µs, worst {(e.get('late_max_us') or 0) / 1e3:.1f} ms): "
            "the host was too busy for exact delays and rates; run it again on a quieter host")


def pacing_note(run: dict[str, Any]) -> str:
    """A sentence when a paced sender could not keep its rate in a run: it ended more
    than SHORT_PCT of its schedule short (the host stalled it near the end, or it could
    not reach the rate at all)."""
    short = [(name, f["summary"]) for name, f in (run.get("flows") or {}).items()
             if (f.get("summary") or {}).get("sender_short_pct", 0) > SHORT_PCT]
    if not short:
        return ""
    parts = [f"{name} sent {s['sender_short_pct']:.1f} % less than its rate "
             f"(at worst {s.get('sender_max_behind_ms', 0):.0f} ms behind)" for name, s in short]
    return (f"run {run.get('run')}: {'; '.join(parts)}: the sender was stalled or could not keep up, "
            "so the path was offered less than the scenario says")


def label(value: Any) -> str:
    """A swept value as a table or a legend shows it: `pie(target=20ms)` for a mapping."""
    if isinstance(value, dict):
        head = value.get("type") or value.get("kind") or ""
        rest = ", ".join(f"{k}={v}" for k, v in value.items() if k not in ("type", "kind"))
        return f"{head}({rest})" if head and rest else head or rest
    if isinstance(value, list):
        return "[" + ", ".join(label(v) for v in value) + "]"
    return "" if value is None else str(value)


def describe(params: dict[str, Any], keys: list[str], leave_out: str | None = None) -> str:
    """`aqm=pie(target=20ms), window=16KB`: sweep values as a legend shows them (but for
    the key `leave_out`); a joint key by each path it sets (`carrier=down`), or by its
    `description` alone when it sets one (a case's name: `4a: h1-h4 & h2-h5`)."""
    parts = []
    for k, v in params.items():
        if k == leave_out:
            continue
        paths = k.split(",")
        if (named := case_name(k, v)) is not None:
            parts.append(named)
        elif len(paths) > 1 and isinstance(v, list) and len(v) == len(paths):
            tails = [p.strip().rsplit(".", 1)[-1] for p in paths]
            if len(set(tails)) < len(tails):  # `video.length=576, voice.length=80`
                tails = [".".join(p.strip().split(".")[-2:]) for p in paths]
            parts += [f"{t}={label(x)}" for t, x in zip(tails, v) if x is not None]
        else:
            parts.append(f"{short(k, keys)}={label(v)}")
    return ", ".join(parts)


def case_name(key: str, value: Any) -> str | None:
    """The name a joint sweep key gives its point, by setting `description` beside the
    paths it moves (`description,flows.b.count: [["4a: h1-h4 & h2-h5", 0], ...]`); None
    for a key that does not."""
    paths = [p.strip() for p in key.split(",")]
    if len(paths) < 2 or "description" not in paths or not isinstance(value, list) \
            or len(value) != len(paths):
        return None
    return label(value[paths.index("description")])


def short(key: str, keys: list[str]) -> str:
    """A sweep key's last part (`window`), longer only when two keys share it; each
    path's of a key of several (`kind,rate`)."""
    if "," in key:
        return ",".join(k.strip().rsplit(".", 1)[-1] for k in key.split(","))
    for n in range(1, key.count(".") + 2):
        tail = ".".join(key.split(".")[-n:])
        if sum(k == tail or k.endswith("." + tail) for k in keys) <= 1:
            return tail
    return key


def in_words(params: dict[str, Any]) -> str:
    """A sweep point in words, as the progress line says it: `aqm pie on s0-h2, bulk's
    window 16KB, duration 10s` (`describe` is its short form, for tables and legends)."""
    parts = []
    for key, value in params.items():
        paths = [k.strip() for k in key.split(",")]
        values = value if len(paths) > 1 and isinstance(value, list) else [value]
        for path, v in zip(paths, values):
            if v is not None or len(paths) == 1:  # a path a joint key leaves unset: unsaid
                parts.append(_one(path, label(v)))
    return ", ".join(parts)


def _one(path: str, value: str) -> str:
    p = path.split(".")
    if p[0] == "links" and len(p) >= 3:
        return f"{' '.join(p[2:])} {value} on {p[1]}"
    if p[0] == "flows" and len(p) >= 3:
        who = "every flow's" if p[1] == "*" else f"{p[1]}'s"
        return f"{who} {' '.join(p[2:])} {value}"
    if p[0] == "topology" and len(p) >= 2:
        return f"topology {' '.join(p[1:])} {value}"
    if p[0] == "events" and len(p) >= 3:
        return f"event {p[1]}'s {' '.join(p[2:])} {value}"
    return f"{' '.join(p)} {value}"
