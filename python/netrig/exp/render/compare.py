"""Two results directories compared (`netrig compare A B`): their rows joined on (point,
flow, metric) with B/A beside theory, and both directories' sweep curves and time
series on shared axes (compare.html and compare.md).
"""

from __future__ import annotations

import json
from pathlib import Path

from netrig import safefs
from netrig.exp.analysis.results import Results, load
from netrig.exp.analysis.rows import Row, summary
from netrig.exp.kinds.metrics import metric
from netrig.exp.record.files import atomic_write
from netrig.exp.render.document import Block, Note, Section, Table, to_html
from netrig.exp.render.figures import compare_figures
from netrig.exp.render.report import (
    NONE,
    _planned,
    _ratio,
    _verdict_note,
    expected,
    measured,
    refusals,
)


# Two directories compared.
def compare(a: Path, b: Path, out: Path | None = None, allow_foreign: bool = False) -> Path:
    """compare.html (in `out`, by default a new directory beside a); returns its path.
    Refuses (safefs.ForeignDir) an `out` another user owns unless `allow_foreign`."""
    ra, rb = load(a), load(b)  # (through safefs: what either refused is named below)
    out = out or a.parent / f"compare-{a.name}-vs-{b.name}"
    safefs.check_owner(out, allow_foreign)
    safefs.makedirs(out)
    sa, sb = ({_join_key(r): r for r in summary(x)} for x in (ra, rb))
    table = Table(["point", "flow", "metric", "A measured", "B measured", "B/A", "expected"],
                  [_joined(sa.get(k), sb.get(k)) for k in [*sa, *(k for k in sb if k not in sa)]])
    drawn = compare_figures(ra, rb, out)
    warnings: list[Block] = [Note(f"{side}: {v.text}", warn=True)
                             for side, r in (("A", ra), ("B", rb)) if (v := _verdict_note(r)).warn]
    warnings += [b for side, r in (("A", ra), ("B", rb)) for b in refusals(r, f"{side}: ")]
    sections: list[Section] = [
        ("Directories", [_sides(ra, rb), *warnings]),
        ("Summaries side by side", [Note("Joined on (sweep point, flow, metric); measured as "
                                         "mean ± 95 % CI over the repetitions; B/A the ratio of "
                                         "the means."), table]),
        ("Sweep curves", list(drawn) or [Note("No sweep curves: A has no sweep.")]),
    ]
    atomic_write(out / "compare.html", to_html(f"netrig compare: {a.name} vs {b.name}", sections), out)
    return out / "compare.html"


def _join_key(r: Row) -> tuple[str, str, str]:
    return json.dumps(r.params, sort_keys=True, default=str), r.flow, r.metric


def _joined(x: Row | None, y: Row | None) -> list[str]:
    """A's row beside B's (either may be missing): measured, B/A and expected."""
    r = x or y
    assert r is not None
    ea, eb = expected(x) if x else None, expected(y) if y else None
    both = ea if eb in (None, ea) else eb if ea is None else f"A {ea}; B {eb}"
    ratio = y.mean / x.mean if x and y and x.mean and y.mean is not None else None
    return [r.label or NONE, r.flow, metric(r.metric).label, measured(x) if x else "not in A",
            measured(y) if y else "not in B", _ratio(ratio), both or NONE]


def _sides(ra: Results, rb: Results) -> Table:
    def facts(r: Results) -> list[str]:
        h = r.meta.get("host") or {}
        ok = sum(x.get("status") == "ok" for x in r.runs)
        return [str(r.out), str(r.meta.get("scenario", "")), str(r.meta.get("status", "unknown")),
                f"{ok} of {_planned(r)}", str(h.get("netrig", "")), str(h.get("kernel", "")),
                str(h.get("started", ""))]

    names = ["directory", "scenario", "status", "runs finished well", "netrig", "kernel", "started"]
    return Table(["", "A", "B"], [[n, x, y] for n, x, y in
                                  zip(names, facts(ra), facts(rb), strict=True)])
