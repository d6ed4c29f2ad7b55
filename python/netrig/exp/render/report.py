"""report.html and report.md of a results directory (two compared: compare.py).

    build(out)     rewrites results.csv, draws the figures (`netrig.exp.render.figures`), writes
                   report.html (one file: figures as data URIs, inline CSS, no scripts, no
                   external URLs) and report.md (the same tables, figures linked)
    compare(a, b)  compare.html: the two summaries joined on (point, flow, metric), B/A,
                   and both directories' sweep curves on shared axes

A summary row is one flow at one sweep point: the metric theory predicts for it
(`expected.metric`) as the mean ± 95 % CI over the repetitions whose flow ended well,
the expected value (or range), their ratio, the limit that applied and theory's
working. A row is far from theory when any repetition was outside the scenario's
tolerance (the runner's `expected.flag`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from netrig import safefs
from netrig.errors import NetrigError
from netrig.exp.analysis import why
from netrig.exp.analysis.results import Results, load
from netrig.exp.analysis.rows import Row, missing_points, summary
from netrig.exp.analysis.words import MEASURED, late_note, pacing_note
from netrig.exp.analysis.words import label as value_text
from netrig.exp.grade.verdict import RATIO_DEFINITION
from netrig.exp.kinds.metrics import metric
from netrig.exp.record.files import atomic_write
from netrig.exp.render.document import (
    Block,
    Details,
    Drawing,
    Note,
    Pre,
    Section,
    Table,
    to_html,
    to_markdown,
)
from netrig.exp.render.draw import Figure, Figures
from netrig.exp.render.figures import make_figures
from netrig.exp.render.table_csv import write_csv
from netrig.exp.spec.model import flow_ends

NONE = "—"


# Numbers with units.
def _fmt(m: str, v: float | None, ci: float | None = None) -> str:
    if v is None:
        return NONE
    info = metric(m)
    pm = f" ± {ci * info.scale:.3g}" if ci is not None else ""
    return f"{v * info.scale:.4g}{pm}{' ' + info.unit if info.unit else ''}"


def _also(r: Row) -> str:
    """What else the row's flow measured: `retransmits 0.12 %, RTT mean 23.4 ms`."""
    return ", ".join(f"{metric(k).label} {_fmt(k, v)}" for k, v in r.also)


def measured(r: Row) -> str:
    """`1.425 ± 0.0123 Mbit/s (n=3)`."""
    if r.not_run:
        return "not run"
    if not r.values:
        return "not measured"
    return f"{_fmt(r.metric, r.mean, r.ci)} (n={len(r.values)})"


def expected(r: Row) -> str:
    """`9.5 Mbit/s`, or a range: `21.05–77.95 ms`, with theory's point for the runs'
    own queue when the queue monitor measured it: `21.05–828.5 ms (525.4 ms for the
    queue measured)`."""
    if r.expected is None:
        return NONE
    if r.hi is None:
        return _fmt(r.metric, r.expected)
    info = metric(r.metric)
    text = f"{r.expected * info.scale:.4g}–{r.hi * info.scale:.4g} {info.unit}".strip()
    if r.here is not None:
        text += f" ({_fmt(r.metric, r.here)} for the queue measured)"
    return text


def _ratio(v: float | None) -> str:
    return NONE if v is None else f"{v:.3g}"


def _versus(r: Row) -> str:
    """The ratio as the table and "Far from theory" show it (`Versus.text`)."""
    return r.versus.text()


def _verdict(r: Row) -> str:
    """`within`, `above`, `below`; and how many repetitions were outside when the mean
    and the repetitions disagree; `not run` for a point that never ran."""
    if r.not_run:
        return "not run"
    v = r.versus.verdict or NONE
    if r.flagged and (r.ran > 1 or not r.versus.flag):
        v += f" ({r.flagged} of {r.ran} runs outside)"
    return v


# The report.
def build(out: Path, allow_foreign: bool = False, warn: Callable[[str], None] | None = None) -> Path:
    """Rewrites results.csv, the figures, report.html and report.md; returns report.html.
    Refuses (safefs.ForeignDir) a directory another user owns unless `allow_foreign`.
    Every file is read through safefs (results.Results); what it refused is named in
    the report and given to `warn`, a sentence each."""
    safefs.check_owner(out, allow_foreign)
    res = load(out)
    write_csv(out, res)
    drawn = make_figures(out, res=res)
    rows = summary(res)
    problems = _problems(res)
    title = f"netrig report: {res.meta.get('scenario') or out.name}"
    topology = _topology(res, out)
    rest: list[Section] = [
        ("Far from theory", _far(rows, missing_points(res), len(res.points))),
        *_real_hosts(res),
        *_events(res),
        *_captures(res, out),
        ("Topology", topology),
        ("Figures", _figures(drawn)),
        ("Scenario, host and runs", [
            Details("The scenario", _scenario(res)),
            Details("Host and timing", [*_timing(res), _host(res), *_cluster(res)]),
            Details(f"Runs ({len(res.runs)})", [_run_list(res)])]),
    ]
    sections: list[Section] = [("Results", [*_status(res, problems), *refusals(res),
                                            *_results(res, rows)]), *rest]
    atomic_write(out / "report.md", to_markdown(title, sections, out), out)
    atomic_write(out / "report.html", to_html(title, sections), out)
    for said in res.refused if warn else []:
        warn(said)
    return out / "report.html"


def refusals(res: Results, side: str = "") -> list[Block]:
    """A warning naming each file of the directory that was not read (Results.refused)."""
    if not res.refused:
        return []
    return [Note(f"{side}Files refused: netrig reads a results directory without following links, "
                 "without leaving it and within a size bound for each kind of file; these were "
                 "not read, and what they hold is missing below.", warn=True), list(res.refused)]


def _real_hosts(res: Results) -> list[Section]:
    """A scenario run on real hosts over SSH: its own section (exp/render/remote_report.py)."""
    from netrig.exp.render import remote_report
    make = {"note": lambda text, warn: Note(text, warn), "table": lambda head, rows: Table(head, rows),
            "list": lambda items: items}
    return [(title, [make[kind](*rest) for kind, *rest in blocks])
            for title, blocks in remote_report.section(res)]


def _events(res: Results) -> list[Section]:
    """The scenario's events, if it had any: when each fired, what it did, the outage
    each flow measured beside theory's window and why, and routing's settling time."""
    from netrig.exp.analysis.events import sentence

    runs = [r for r in res.runs if r.get("events")]
    if not runs:
        return []
    rows, marked = [], set()
    for r in runs:
        for e in r["events"]:
            at = e.get("actual_s")
            when = f"{at:.3f} s" if at is not None else "not fired"
            st = e.get("routing_stable_s")
            routes = "" if "routing_stable_s" not in e else "no change" if st is None else f"{st:.3g} s"
            head = [r["run"], f"{e.get('planned_s', 0):g} s", when, e.get("what", ""),
                    f"{e.get('took_s', 0) * 1e3:.1f} ms" if e.get("took_s") is not None else ""]
            if not e.get("ok", True):
                marked.add(len(rows))
                rows.append([*head, "", f"failed: {e.get('error', '')}", "", routes])
                continue
            outages = e.get("outage") or {}
            for name, o in outages.items():
                if o.get("verdict") in ("above", "below"):
                    marked.add(len(rows))
                rows.append([*head, name, sentence(name, o, verdict=False).split(": ", 1)[1],
                             o.get("verdict", ""), routes])
            if not outages:
                rows.append([*head, "", "", "", routes])
    blocks: list[Block] = [
        Note("Each event at the time it fired (on the flows' clock), how long its action took, "
             "and the outage it caused in each flow: from the event to the first packet through "
             "again (a probe: the first one answered after the losses the event started; a "
             "tcp/udp flow: its first non-empty report interval, so TCP's backoff and the "
             "interval count too), beside the window theory gives from the routing protocols' "
             "timers. Routing settled: the last route change in any FRR router after the event."),
        Table(["run", "planned", "fired", "event", "took", "flow", "outage; theory", "verdict",
               "routing settled"], rows, marked)]
    conv = [(r["run"], (r.get("routing") or {}).get("converge_s")) for r in runs]
    if any(c is not None for _, c in conv):
        blocks.append(Note("Routing converged before the flows started in "
                           + ", ".join(f"{c:.2f} s ({run})" for run, c in conv if c is not None) + "."))
    return [("Events", blocks)]


def _status(res: Results, problems: list[str]) -> list[Block]:
    """What ran, and every warning a reader must see before the numbers."""
    blocks: list[Block] = [Note(res.scenario["description"])] if res.scenario.get("description") else []
    blocks.append(_verdict_note(res))
    if problems:
        blocks.append(problems)
    paths = path_flags(res)
    if paths:
        blocks += [Note("Paths: the kernel routed some flows another way than theory expected "
                        "(theory's numbers below are for its path).", warn=True), paths]
    hosts = host_flags(res)
    if hosts:
        blocks += [Note("Hosts: runs of one point ran on machines that differ (a cluster's "
                        "workers); compare their numbers with that in mind.", warn=True), hosts]
    late = [r for r in res.runs if late_note(r)]
    if late:
        blocks.append(Note(f"In {len(late)} of {len(res.runs)} runs the link emulator could not keep "
                           "time (a busy host): see Host and timing below.", warn=True))
    return blocks


def path_flags(res: Results) -> list[str]:
    """One line per flow whose kernel path differed from theory's in some run (run.json
    `flows.NAME.path`; equal-cost legs are not flagged), with how many runs."""
    seen: dict[str, tuple[str, int, int]] = {}
    for run in res.runs:
        for name, f in run.get("flows", {}).items():
            rec = f.get("path")
            if not rec:
                continue
            text, bad, n = seen.get(name, ("", 0, 0))
            flag = why.path_differs(name, rec)
            seen[name] = (text or flag or "", bad + bool(flag), n + 1)
    return [f"{text}{f' (in {bad} of {n} runs)' if n > 1 else ''}"
            for text, bad, n in seen.values() if bad]


def _topology(res: Results, out: Path) -> list[Block]:
    """The topology drawn, each flow's path and the bottleneck marked; and as text."""
    from netrig.topo import graph

    point = res.scenario_point(res.points[0]["index"] if res.points else 0)
    if point is None:
        return [Note("No drawing: scenario.yaml does not load any more.")]
    flows = flow_ends(point)
    try:
        svg = graph.draw(point.topology, flows=flows, title=res.meta.get("scenario"))
        text = graph.text(point.topology, flows=flows)
    except NetrigError as e:
        return [Note(f"No drawing: {e}", warn=True)]
    assert isinstance(svg, str)
    atomic_write(out / "figures" / "topology.svg", svg, out)
    swept = [k for k in res.keys if k.startswith(("links.", "topology."))]
    note = (f" Drawn at the first sweep point ({res.label(point.index)}); the sweep changes "
            f"{', '.join(swept)}." if swept else "")
    return [Drawing("The topology", svg, "Each link with its rate, delay, queue and discipline "
                    "(per direction when they differ); each flow's routed path dashed, sender to "
                    f"receiver; the bottleneck thick and red.{note}"),
            Details("The topology as text (netrig graph)", [Pre(text)])]


MAX_STEVENS = 4  # time-sequence graphs shown in the report (every one is in its run's directory)


def _captures(res: Results, out: Path) -> list[Section]:
    """The runs' captures: where, by what, frames and the drops written, Wireshark's TCP
    counts, the files; each tcp flow's retransmission ratio both ways; the first few
    time-sequence (Stevens) graphs."""
    runs = [r for r in res.runs if r.get("captures")]
    if not runs:
        return []
    rows = []
    for r in runs:
        for c in r["captures"]:
            t = c.get("tcp") or {}
            segs = t.get("data_packets") or 0
            tcp = (f"{segs} data segments, {t.get('retransmission', 0)} retransmitted "
                   f"({100 * t.get('retransmission', 0) / segs:.2f} %), {t.get('duplicate_ack', 0)} dup "
                   f"ACKs, {t.get('out_of_order', 0)} out of order") if segs else c.get("analysis_error", NONE)
            frames = NONE if c.get("frames") is None else str(c["frames"])
            if c.get("drops_written"):
                frames += f" ({c['drops_written']} dropped by the link, commented)"
            rows.append([r["run"], f"{c.get('where', '')} ({c.get('by', '')})", frames, tcp,
                         " ".join(f"runs/{r['run']}/{f}" for f in c.get("files", [])) or NONE])
    flows, graphs = [], []
    before = len(res.refused)
    for r in runs:
        for name, f in (r.get("flows") or {}).items():
            s, where = f.get("summary") or {}, f.get("capture") or {}
            if s.get("retrans_pct_capture") is None:
                continue
            flows.append([r["run"], name, f"{s['retrans_pct_capture']:.3g} %",
                          NONE if s.get("retrans_pct") is None else f"{s['retrans_pct']:.3g} %",
                          f"{s.get('capture_retransmissions')} of {s.get('capture_segments')}",
                          str(s.get("capture_dup_acks")), str(s.get("capture_out_of_order"))])
            stevens = where.get("stevens")
            if not stevens or len(graphs) >= MAX_STEVENS:
                continue
            png = res.run_file(str(r["run"]), str(stevens), f"capture graph of {name} in run {r['run']}",
                               safefs.IMAGE)  # (named by run.json: read through safefs, or refused)
            if png is not None:
                graphs.append(Figure(out / "runs" / str(r["run"]) / str(stevens),
                                     f"{name} in run {r['run']}: time-sequence (Stevens) graph",
                                     "Each data segment as a bar from its first to its last sequence "
                                     "number at the time the capture saw it (retransmissions and "
                                     "out-of-order segments marked), the receiver's cumulative ACK "
                                     "and its window's edge; below, throughput and goodput.",
                                     "timeseries", data=png))
    if len(res.refused) > before:
        graphs.append(Note("Not shown: " + "; ".join(res.refused[before:]) + ".", warn=True))
    blocks: list[Block] = [
        Note("Packet captures (pcapng, openable in Wireshark). A capture of an emulated link "
             "also holds each frame the link dropped, commented with the cause "
             "(tshark -Y 'frame.comment contains \"dropped\"'). TCP counts are Wireshark's "
             "tcp.analysis, frame for frame, from netrig-analyze."),
        Table(["run", "capture", "frames", "TCP (Wireshark's analysis)", "files"], rows)]
    if flows:
        blocks += [Note("Each TCP flow's retransmitted ÷ transmitted segments as Wireshark counts "
                        "them in the capture (seed 000's measure; from the sender's own interface "
                        "when captured there) beside the sender's count from TCP_INFO. Wireshark "
                        "calls a resent segment out of order, not a retransmission, when it follows "
                        "the highest segment within the initial RTT."),
                   Table(["run", "flow", "retransmitted (capture)", "retransmitted (TCP_INFO)",
                          "segments", "dup ACKs", "out of order"], flows)]
    return [("Captures", blocks + graphs)]


def _run_list(res: Results) -> Table:
    rows = []
    several = len({_machine(r) for r in res.runs}) > 1 or any("worker" in r for r in res.runs)
    for r in res.runs:
        emu = r.get("emulator") or {}
        late = f"{100 * (emu.get('over_budget') or 0) / emu['packets']:.2g} %" if emu.get("packets") else NONE
        where = [ran_on(r)] if several else []
        rows.append([r["run"], res.label(r["point"]) or NONE, str(r.get("rep", "")), str(r.get("seed", "")),
                     r.get("status", ""), f"{r.get('seconds', 0):.1f} s", late, *where])
    return Table(["run", "point", "repetition", "seed", "status", "took", "packets > 1 ms late",
                  *(["ran on"] if several else [])], rows)


def _machine(r: dict[str, Any]) -> tuple[str, str, str]:
    h = r.get("host") or {}
    return (h.get("hostname", ""), h.get("kernel", ""), h.get("cpu", ""))


def ran_on(r: dict[str, Any]) -> str:
    """Where a run ran: `w2 (lab2)`, and the workers that died running it before."""
    w, h = r.get("worker") or {}, r.get("host") or {}
    name = w.get("name") or h.get("hostname") or NONE
    text = f"{name} ({h['hostname']})" if w.get("name") and h.get("hostname") else name
    if w.get("lost"):
        text += f" after {', '.join(w['lost'])} died"
    return text


def _late_share(r: dict[str, Any]) -> float | None:
    emu = r.get("emulator") or {}
    return (emu.get("over_budget") or 0) / emu["packets"] if emu.get("packets") else None


def host_flags(res: Results) -> list[str]:
    """A line for each point whose runs came from machines that differ (host name,
    kernel or CPU): each machine, its runs and how late its emulator was."""
    flags = []
    for point in sorted({r["point"] for r in res.runs}):
        runs = [r for r in res.runs if r["point"] == point and r.get("host")]
        machines = sorted({_machine(r) for r in runs})
        if len(machines) < 2:
            continue
        parts = []
        for m in machines:
            mine = [r for r in runs if _machine(r) == m]
            late = [x for r in mine if (x := _late_share(r)) is not None]
            differs = [what for what, i in (("kernel", 1), ("CPU", 2)) if len({x[i] for x in machines}) > 1]
            about = ", ".join([f"{what} {m[1 if what == 'kernel' else 2]}" for what in differs]
                              + ([f"{100 * max(late):.2g} % of packets > 1 ms late"] if late else []))
            parts.append(f"{m[0] or '?'} ({len(mine)} run{'s' if len(mine) > 1 else ''}"
                         + (f"; {about}" if about else "") + ")")
        flags.append(f"{res.label(point) or 'the only point'}: " + ", ".join(parts))
    return flags


def _planned(res: Results) -> int:
    return len(res.points) * int(res.meta.get("repeat") or 1)


def _scenario(res: Results) -> list[Block]:
    m, s = res.meta, res.scenario
    sweep = "; ".join(f"{k}: {', '.join(map(value_text, res.key_values(k)))}" for k in res.keys)
    facts = [["name", m.get("scenario") or s.get("name") or ""], ["file", m.get("source", "")],
             ["sweep", sweep or "none"],
             ["points × repetitions", f"{len(res.points)} × {m.get('repeat', 1)}"],
             ["seed", str(m.get("seed", ""))], ["tolerance", str(s.get("tolerance", "10%"))],
             ["--quick", "yes" if m.get("quick") else "no"],
             ["--set", ", ".join(m.get("sets") or []) or "none"],
             ["command", " ".join(map(str, m.get("command") or []))]]
    refused = next((x for x in res.refused if x.startswith("scenario.yaml refused")), "")
    text = res.scenario_text or f"({refused or 'no scenario.yaml'})"
    return [Table(["", ""], facts),
                     Note("The scenario as run (--quick and --set applied, topology inline):"),
                     Pre(text)]


def _problems(res: Results) -> list[str]:
    """Failed, interrupted and missing runs; flows that failed."""
    out = [f"run {r['run']} ({res.label(r['point']) or 'the only point'}) failed: "
           f"{r.get('error', '')}" for r in res.runs if r.get("status") == "failed"]
    out += [f"run {r['run']} was interrupted: its flows' numbers cover part of the run"
            for r in res.runs if r.get("status") == "interrupted"]
    out += [f"run {r['run']}: flow {n} failed: {f['summary'].get('error') or 'no reason given'}"
            for r in res.runs for n, f in r.get("flows", {}).items()
            if f["summary"].get("status", "ok") not in MEASURED]
    if _planned(res) > len(res.runs):
        out.append(f"{_planned(res) - len(res.runs)} of {_planned(res)} runs did not run")
    return out


def _timing(res: Results) -> list[Block]:
    """A warning for runs where the link emulator could not keep time, and how late it
    was across all runs."""
    late = [n for r in res.runs if (n := late_note(r))]
    short = [n for r in res.runs if (n := pacing_note(r))]
    senders = [Note(f"In {len(short)} of {len(res.runs)} runs a paced sender did not offer its "
                    "whole rate: treat those runs' loss and throughput with care.", warn=True),
               short] if short else []
    emu = [r["emulator"] for r in res.runs if (r.get("emulator") or {}).get("packets")]
    if not emu:
        return senders
    worst = max(e.get("late_p99_us") or 0 for e in emu)
    text = (f"Link emulator timing: {sum(e['packets'] for e in emu)} packets released, "
            f"{sum(e.get('over_budget') or 0 for e in emu)} of them more than "
            f"{emu[0].get('budget_ms', 1):g} ms late; the worst run's p99 lateness was "
            f"{worst:.0f} µs.")
    if not late:
        return [Note(text), *senders]
    return [Note(f"{text} In {len(late)} of {len(res.runs)} runs the host was too busy for "
                 "exact delays and rates: treat their numbers with care.", warn=True), late, *senders]


def _verdict_note(res: Results) -> Note:
    """One sentence on what ran: a warning for anything short of complete."""
    status = res.meta.get("status", "unknown")
    planned = _planned(res)
    ok = sum(r.get("status") == "ok" for r in res.runs)
    if status == "complete" and not _problems(res):
        return Note(f"Complete: all {planned} runs finished.")
    text = {"interrupted": f"Interrupted: {ok} of {planned} runs finished. `netrig run --resume "
                           f"{res.out}` runs the rest.",
            "failed": f"Failed runs: {ok} of {planned} runs finished well; the numbers below "
                      "leave the failures out.",
            "running": "Unfinished: meta.json says the experiment is still running (or it was "
                       "killed)."}
    return Note(text.get(status, f"Status {status}: {ok} of {planned} runs finished well."),
                warn=True)


def _host(res: Results) -> Table:
    h, m = res.meta.get("host") or {}, res.meta
    mem = h.get("memory_bytes")
    facts = [("status", m.get("status", "unknown")), ("started", h.get("started")),
             ("finished", m.get("finished")), ("netrig", h.get("netrig")),
             ("kernel", h.get("kernel")), ("machine", h.get("machine")),
             ("CPU", f"{h.get('cpu', '')} × {h.get('cpus', '?')}"),
             ("memory", f"{mem / 1e9:.1f} GB" if mem else None), ("python", h.get("python")),
             ("default congestion control", h.get("tcp_congestion_control_default")),
             ("link emulator", h.get("link_emulator")), ("offloads", h.get("offloads")),
             ("iperf3", h.get("iperf3")), ("ping", h.get("ping")), ("host name", h.get("hostname"))]
    return Table(["", ""], [[k, str(v)] for k, v in facts if v])


def _cluster(res: Results) -> list[Block]:
    """The cluster a campaign ran on, its workers as each described itself (the host
    above is then the head, which only gathered the files)."""
    c = res.meta.get("cluster")
    if not c:
        return []
    return [Note(f"The runs ran on the workers of the cluster at {c.get('address', '?')}; the host "
                 "above gathered their files."),
            Table(["worker", "host name", "kernel", "CPU", "netrig"],
                  [[w.get("name", ""), w.get("hostname", ""), w.get("kernel", ""),
                    f"{w.get('cpu', '')} × {w.get('cpus', '?')}", w.get("netrig", "")]
                   for w in c.get("workers", [])])]


def _results(res: Results, rows: list[Row]) -> list[Block]:
    """The headline table: flow, metric, measured, theory, ratio, verdict; then the
    ratio's definition (once) and, folded, theory's working and what else was measured."""
    if not rows:
        return [Note("No flow was measured: no run finished with any flow.", warn=True)]
    keys = bool(res.keys)
    head = (["point"] if keys else []) + ["flow", "metric", "measured (mean ± 95 % CI)", "theory",
                                          "ratio", "verdict"]
    table = Table(head, [])
    working = Table((["point"] if keys else []) + ["flow", "limit", "theory's working", "also measured"], [])
    for k, r in enumerate(rows):
        lead = [r.label] if keys else []
        table.rows.append(lead + [r.flow, metric(r.metric).label, measured(r), expected(r),
                                  _versus(r), _verdict(r)])
        working.rows.append(lead + [r.flow, r.limit or NONE, r.detail or NONE, _also(r) or NONE])
        if r.far:
            table.marked.add(k)
            working.marked.add(k)
    tol = res.scenario.get("tolerance", "10%")
    return [table,
            Note(f"Measured: the mean over the repetitions whose flow ended well, ± the half-width "
                 f"of its 95 % confidence interval (Student t). Theory: a value, or a range when a "
                 f"queue may add delay. {RATIO_DEFINITION} Tolerance: {tol}. Highlighted rows are "
                 "outside it (on average or in some repetition); \"Far from theory\" says why."),
            Details("Theory's working and what else was measured", [working])]


def _far(rows: list[Row], missing: int = 0, points: int = 0) -> list[Block]:
    far = [r for r in rows if r.far]
    gap = ([Note(f"{missing} of {points} sweep points were not run (the campaign was interrupted "
                 "or failed before them): their rows say \"not run\", and nothing below is said "
                 "of them.", warn=True)] if missing else [])
    if not far:
        judged = any(r.ratio is not None for r in rows)
        said = ("every measurement that was made is within the tolerance of theory" if missing
                else "Every measurement is within the tolerance of theory") if judged else (
                "no flow had a value from theory to be judged against")
        return gap + [Note(said[0].upper() + said[1:] + ".")]
    items = []
    for r in far:
        reasons = " ".join(r.why) if r.why else (
            "No rule here explains it: look at its figures and at the runs' warnings.")
        items.append(f"{r.label + ': ' if r.label else ''}{r.flow}'s {metric(r.metric).label} measured "
                     f"{measured(r)} against {expected(r)} from theory: ratio {_versus(r)}, "
                     f"{_verdict(r)} (theory's limit: {r.limit or 'none'}). Why: {reasons}")
    return gap + [items]


def _figures(drawn: Figures) -> list[Block]:
    if not drawn:
        return [Note("No figures: nothing was measured that a figure could show.")]
    blocks: list[Block] = list(drawn)
    if drawn.omitted:
        blocks.append(Note(f"{drawn.omitted} more figures were not drawn: at most {len(drawn)} "
                           "are, and time series of the later sweep points are the first left "
                           "out.", warn=True))
    return blocks
