"""The headline table a terminal shows at the end of `netrig run` and by `netrig
report DIR`: per sweep point, each flow's metric theory predicts, measured (mean ± 95 %
CI over its repetitions), theory's value or range, their ratio and the verdict; at most
80 columns (or the width given).

    ratio    `netrig.exp.grade.verdict`'s, as in the report and results.csv: the mean ÷ the
             nearest value theory allows; inside a range `1 (at 45%)` (0 % its low end)
    verdict  within, above or below for the mean; `(2/3)`: the repetitions
             outside the scenario's tolerance (the runner's judgement, `expected.flag`);
             `—` when theory has no value

With events in the scenario, a second table follows: each event of each run (its
actual time, what it did, whether it failed), the outage each flow measured, theory's
window and the verdict, and how long routing took to settle (`routes`, with FRR).

Reads the report's rows of the results directory; draws nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from netrig.exp.analysis import rows as table_rows
from netrig.exp.analysis.results import Results
from netrig.exp.analysis.rows import missing_points
from netrig.exp.analysis.stats import mean_ci
from netrig.exp.grade.verdict import versus
from netrig.exp.kinds.metrics import split
from netrig.theory.outage import span

NONE = "—"
HEAD = ("flow", "metric", "measured", "theory", "ratio", "verdict")


@dataclass
class Line:
    """One flow at one sweep point."""

    point: str
    flow: str
    metric: str
    values: list[float]
    value: float | None
    hi: float | None
    ran: int
    far: int
    timed_out: int = 0  # repetitions whose flow timed out (its 0 is among the values)
    tol: float = 0.1  # the tolerance its point's runs were graded with

    @property
    def mean(self) -> float | None:
        return mean_ci(self.values)[0] if self.values else None


def lines(res: Results) -> list[Line]:
    """Every flow at every sweep point, in point then scenario order: the rows every
    reader shows (`netrig.exp.analysis.rows`), so the terminal and the page agree."""
    late: dict[tuple[str, str], int] = {}
    for run in res.runs:
        for name, f in run.get("flows", {}).items():
            if (f.get("summary") or {}).get("status") == "timed_out":
                key = (res.label(run["point"]), name)
                late[key] = late.get(key, 0) + 1
    return [Line(r.label, r.flow, r.metric, r.values, r.expected, r.hi, r.ran, r.flagged,
                 late.get((r.label, r.flow), 0), r.tol) for r in table_rows.summary(res)]


# Units: by the metric's name, one scale per line so measured and theory read alike.
def unit(metric: str, like: float | None) -> tuple[str, str, float]:
    """(words, unit, scale) of a metric: `throughput_bps` near 1.5e6 is
    ("throughput", "Mbit/s", 1e-6)."""
    words, u = split(metric)
    if u == "bit/s":
        v = abs(like or 0)
        prefix, scale = next(((p, s) for p, s in (("G", 1e-9), ("M", 1e-6), ("k", 1e-3))
                              if v * s >= 1), ("", 1.0))
        return words, f"{prefix}{u}", scale
    return words, u, 1.0


def number(v: float, digits: int = 4) -> str:
    """Plain decimals with `digits` significant digits, never an exponent: 1.425, 828.5,
    1408000."""
    s = f"{v:.{digits}g}"
    if "e" in s:
        s = f"{v:.0f}" if abs(v) >= 1 else f"{v:.8f}".rstrip("0").rstrip(".")
    return s


def cells(x: Line) -> list[str]:
    """The line's six cells."""
    words, u, scale = unit(x.metric, x.value or x.hi or x.mean)
    suffix = f" {u}" if u else ""
    if not x.ran:
        return [x.flow, words, "not run", NONE, NONE, "not run"]
    if x.mean is None:
        measured = "not measured"
    elif x.timed_out and x.timed_out >= len(x.values):
        measured = "timed out" + (f" ({x.timed_out}/{len(x.values)})" if len(x.values) > 1 else "")
    else:
        ci = mean_ci(x.values)[1]
        pm = f" ± {number(ci * scale, 2)}" if ci is not None else ""
        measured = f"{number(x.mean * scale)}{pm}{suffix}"
        if x.timed_out:
            measured += f" ({x.timed_out} timed out)"
    if x.value is None:
        theory = NONE
    elif x.hi is None:
        theory = f"{number(x.value * scale)}{suffix}"
    else:
        theory = f"{number(x.value * scale)}–{number(x.hi * scale)}{suffix}"
    word = versus(x.mean, x.value, x.hi, x.tol).verdict or NONE
    verdict = f"{word} ({x.far}/{x.ran})" if x.far else word
    return [x.flow, words, measured, theory, ratio(x), verdict]


def ratio(x: Line) -> str:
    """`verdict.versus`'s ratio, the report's and results.csv's: measured ÷ the nearest
    value theory allows; inside a range 1, and where the mean sits."""
    v = versus(x.mean, x.value, x.hi, x.tol)
    if v.ratio is None:
        return NONE
    if v.position is not None and 0 <= v.position <= 1:
        return f"1 (at {v.position:.0%})"
    return f"{v.ratio:.2f}"


def table(res: Results, width: int = 80) -> str:
    """The headline table as text no wider than `width`: a heading line per sweep
    point (when there is a sweep), then its flows."""
    rows = lines(res)
    if not rows:
        return "No flow was measured: no run finished with any flow."
    body = [cells(x) for x in rows]
    widths = [max(len(h), *(len(c[k]) for c in body)) for k, h in enumerate(HEAD)]
    _fit(widths, width)
    out = []
    rule = "  ".join("-" * w for w in widths)
    head = "  ".join(h.ljust(w) for h, w in zip(HEAD, widths)).rstrip()
    shown = None
    for x, c in zip(rows, body):
        if x.point != shown:
            if x.point:
                out += ["" if out else None, _cut(f"at {x.point}:", width)]
            if shown is None or x.point:
                out += [head, rule]
            shown = x.point
        out.append("  ".join(_cut(s, w).ljust(w) for s, w in zip(c, widths)).rstrip())
    return "\n".join(s for s in out if s is not None)


def _fit(widths: list[int], width: int) -> None:
    """Narrows the widest columns (metric and measured first) until the row fits."""
    order = [1, 2, 0, 3, 4, 5]
    floor = [4, 6, 8, 6, 5, 6]
    while sum(widths) + 2 * (len(widths) - 1) > width:
        k = max(order, key=lambda i: (widths[i] - floor[i], -order.index(i)))
        if widths[k] <= floor[k]:
            return
        widths[k] -= 1


def _cut(s: str, w: int) -> str:
    return s if len(s) <= w else s[: w - 1] + "…"


def summary(res: Results, width: int = 80) -> str:
    """The table, and a last line counting the far rows; the events' table after."""
    rows = lines(res)
    ran = [x for x in rows if x.ran]
    far = [x for x in ran if x.far]
    tail = (f"{len(far)} of {len(ran)} rows far from theory" if far
            else "every row within the tolerance of theory" if any(x.value for x in ran) else "")
    if missing := missing_points(res):
        gap = f"{missing} of {len(res.points)} sweep points not run"
        tail = f"{gap}; of the rest, {tail}" if tail else gap
    ev = events_table(res, width)
    return table(res, width) + (f"\n{tail}" if tail else "") + (f"\n\n{ev}" if ev else "")


EVENT_HEAD = ("run", "at", "event", "flow", "outage", "theory", "verdict", "routes")


def event_cells(res: Results) -> list[list[str]]:
    """Each event of each run and flow: the events table's rows."""
    out = []
    for r in res.runs:
        for e in r.get("events") or []:
            at = e.get("actual_s", e.get("planned_s"))
            what = e.get("what", "") + ("" if e.get("ok") else " FAILED")
            st = e.get("routing_stable_s")
            routes = "" if "routing_stable_s" not in e else "no change" if st is None else f"{st:.3g} s"
            measured = e.get("outage") or {}
            if not measured:
                out.append([r["run"], f"{at:.2f} s", what, NONE, NONE, NONE, NONE, routes])
            for name, o in measured.items():
                hi = o.get("theory_high_s")
                theory = NONE if "theory_low_s" not in o else span(
                    o["theory_low_s"], float("inf") if hi is None else hi)
                got = f"{o['outage_s']:.3g} s" + ("" if o.get("recovered", True) else "+")
                out.append([r["run"], f"{at:.2f} s", what, name, got, theory,
                            o.get("verdict") or NONE, routes])
    return out


def events_table(res: Results, width: int = 80) -> str:
    """The events' table as text (empty without events); `+` after an outage: the flow
    was not back by the end of the run."""
    body = event_cells(res)
    if not body:
        return ""
    if len({c[0] for c in body}) == 1:  # one run: no run column
        body = [c[1:] for c in body]
        head = EVENT_HEAD[1:]
    else:
        head = EVENT_HEAD
    widths = [max(len(h), *(len(c[k]) for c in body)) for k, h in enumerate(head)]
    k_event = head.index("event")
    while sum(widths) + 2 * (len(widths) - 1) > width and widths[k_event] > 8:
        widths[k_event] -= 1
    out = ["events (outage: from the event to the first packet through again):",
           "  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(_cut(s, w).ljust(w) for s, w in zip(c, widths)).rstrip() for c in body]
    return "\n".join(out)

