"""Reports and figures from results directories written here in the runner's format:
the summary's numbers (mean, Student-t CI, ratio), far-from-theory rows, embedded
figures, failed and interrupted directories, and `compare`. No root, no network."""

from __future__ import annotations

import base64
import math
import re
import statistics
from pathlib import Path
from typing import Any

import pytest
import yaml
from netrig.exp.analysis import results, stats, words
from netrig.exp.record.files import run_id, write_json, write_jsonl
from netrig.exp.render import axes, compare, figures, report

T95_DF2 = 4.302653  # Student's t, two-sided 95 %, 2 degrees of freedom
WINDOWS = ["16KB", "64KB"]
# bulk's throughput in each repetition: point 0 near theory, point 1 30 % under it
BULK_BPS = {0: [9.1e6, 9.6e6, 9.8e6], 1: [6.6e6, 6.65e6, 6.7e6]}
BULK_EXPECTED = 9.5e6
RTT_P50 = {0: [30.0, 31.0, 32.0], 1: [35.0, 36.0, 37.0]}
SCENARIO = {
    "name": "synthetic", "description": "A <b>made-up</b> experiment & its report",
    "topology": {"nodes": {"h1": "host", "s0": "switch", "h2": "host"},
                 "links": [["h1", "s0"], {"a": "s0", "b": "h2", "rate": "10Mbit"}]},
    "duration": "5s", "repeat": 3, "tolerance": "10%",
    "flows": {"bulk": {"kind": "tcp", "from": "h1", "to": "h2"},
              "rtt": {"kind": "ping", "from": "h1", "to": "h2", "interval": "100ms"}},
    "monitors": [{"kind": "queue", "link": "s0-h2"}, {"kind": "tcp_info", "flow": "bulk"}],
    "sweep": {"flows.bulk.window": WINDOWS},
}


def _judged(metric: str, value: float, hi: float | None, measured: float, limit: str,
            detail: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """An `expected` entry as the runner writes it (tolerance 10 %)."""
    return {"metric": metric, "value": value, "hi": hi, "limit": limit, "detail": detail,
            "measured": measured, "ratio": measured / value,
            "flag": not value * 0.9 <= measured <= (hi or value) * 1.1, "extra": extra or {}}


def _bulk(bps: float, kind: str = "tcp", start: float = 0.0, expected: float = BULK_EXPECTED,
          **summary: Any) -> dict[str, Any]:
    detail = f"min(link {expected / 1e6:.4g}) Mbit/s: link, at bottleneck s0-h2 s0→h2"
    return {"kind": kind, "from": "h1", "to": "h2", "start_s": start, "end_s": start + 5.0,
            "planned_s": 5.0,
            "summary": {"status": "ok", "error": "", "throughput_bps": bps, "sent_bps": bps * 1.01,
                        "retransmits": 0, "retrans_pct": 0.0, "rtt_ms_mean": 40.0, **summary},
            "expected": _judged("throughput_bps", expected, None, bps, "link", detail,
                                {"expected_loss_pct": 0.0} if kind == "udp" else None)}


def _ping(p50: float) -> dict[str, Any]:
    detail = "between idle 21 ms and 40 ms: TCP's standing queue on s0-h2 adds up to 19 ms"
    return {"kind": "ping", "from": "h1", "to": "h2", "start_s": 0.0, "end_s": 5.0,
            "planned_s": 5.0,
            "summary": {"status": "ok", "error": "", "rtt_ms_mean": p50, "rtt_ms_p50": p50,
                        "rtt_ms_p99": p50 * 2, "rtt_ms_std": 3.0, "rtt_ms_min": 21.0,
                        "loss_pct": 0.0},
            "expected": _judged("rtt_ms_p50", 21.0, 40.0, p50, "loaded path", detail)}


def _series(run: Path, bps: float, p50: float) -> None:
    bulk = [{"t": 0.5 * k, "bps": bps * (1 + 0.02 * math.sin(k)), "retransmits": 0}
            for k in range(1, 11)]
    bulk += [{"t": 0.1 * k, "cwnd_bytes": 20000 + 500 * k, "rtt_ms": 25 + 0.2 * k, "socket": 4}
             for k in range(1, 50)]
    write_jsonl(run / "series" / "bulk.jsonl", sorted(bulk, key=lambda r: r["t"]))
    write_jsonl(run / "series" / "rtt.jsonl",
                [{"t": 0.1 * k, "rtt_ms": p50 + 4 * math.sin(k)} for k in range(50)])
    queue = []
    for k in range(500):
        q = min(k, 40)  # s0→h2 fills to 40 packets; h2→s0 stays empty
        for d, n in (("a_to_b", q), ("b_to_a", 0)):
            queue.append({"monitor": 0, "kind": "queue", "t": k / 100, "link": "s0-h2", "dir": d,
                          "queue_packets": n, "queue_bytes": n * 1514, "sojourn_ms": n * 1.2,
                          "drops_overflow": 0, "drops_aqm": 0, "rate_bps": 10e6})
    write_jsonl(run / "series" / "monitor-0.jsonl", queue)


def make_results(out: Path, scale: float = 1.0, status: str = "complete",
                 failed: frozenset[tuple[int, int]] = frozenset(),
                 missing: frozenset[tuple[int, int]] = frozenset(),
                 late: frozenset[tuple[int, int]] = frozenset()) -> Path:
    """2 sweep points × 3 repetitions of a tcp flow, a ping flow and a queue monitor;
    bulk's throughputs are BULK_BPS × scale. `failed` and `missing` runs: (point, rep);
    in `late` runs the link emulator released 2 % of its packets late."""
    points = [{"index": i, "params": {"flows.bulk.window": w}, "length_s": 5.0}
              for i, w in enumerate(WINDOWS)]
    write_json(out / "meta.json", {
        "scenario": "synthetic", "source": "synthetic.yaml", "quick": False, "sets": [],
        "sweep_keys": ["flows.bulk.window"], "repeat": 3, "seed": 1, "command": ["netrig", "run"],
        "host": {"netrig": "0.1.0", "kernel": "6.1.0-test", "cpu": "Test CPU", "cpus": 4,
                 "started": "2026-01-02T03:04:05+0000"},
        "points": points, "status": status, "finished": "2026-01-02T03:05:00+0000"})
    (out / "scenario.yaml").write_text(yaml.safe_dump(SCENARIO, sort_keys=False))
    for p in points:
        i = p["index"]
        for rep in range(3):
            if (i, rep) in missing:
                continue
            rid = run_id(i, rep)
            doc: dict[str, Any] = {"run": rid, "point": i, "rep": rep, "seed": 1 + 3 * i + rep,
                                   "params": p["params"]}
            if (i, rep) in failed:
                write_json(out / "runs" / rid / "run.json", {
                    **doc, "status": "failed", "flows": {},
                    "error": "the netrig-perf server for flow bulk did not start"})
                continue
            bps, p50 = BULK_BPS[i][rep] * scale, RTT_P50[i][rep]
            _series(out / "runs" / rid, bps, p50)
            write_json(out / "runs" / rid / "run.json", {
                **doc, "status": "ok", "flows": {"bulk": _bulk(bps), "rtt": _ping(p50)},
                "monitors": ["monitor-0"], "teardown_errors": [],
                "emulator": {"packets": 5000, "late_p50_us": 3.0,
                             "late_p99_us": 2400.0 if (i, rep) in late else 45.0,
                             "late_max_us": 9000.0 if (i, rep) in late else 300.0,
                             "over_budget": 100 if (i, rep) in late else 0, "budget_ms": 1.0}})
    return out


def _ci(xs: list[float]) -> float:
    return T95_DF2 * statistics.stdev(xs) / math.sqrt(len(xs))


def section(page: str, title: str) -> str:
    """The HTML of one <h2> section."""
    return page.split(f"<h2>{title}</h2>", 1)[1].split("<h2>", 1)[0]


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, str]:
    out = make_results(tmp_path / "a")
    page = report.build(out)
    return out, page.read_text(encoding="utf-8")


def test_t_quantile_and_ci_of_three_repetitions():
    assert stats.t95(2) == pytest.approx(T95_DF2, abs=1e-5)
    assert stats.t95(1) == pytest.approx(12.706205, abs=1e-5)
    assert stats.t95(4) == pytest.approx(2.776445, abs=1e-5)
    assert stats.t95(30) == pytest.approx(2.042272, abs=1e-5)
    mean, half = stats.mean_ci(BULK_BPS[0])
    assert mean == pytest.approx(9.5e6)
    # s = sqrt(((-0.4)² + 0.1² + 0.3²) / 2) Mbit/s = 0.36056; × 4.302653 / √3
    assert half == pytest.approx(0.895668e6, rel=1e-5)
    assert stats.mean_ci([7.0]) == (7.0, None)


def test_report_files_and_embedded_figures(built):
    out, page = built
    assert page.startswith("<!DOCTYPE html>")
    assert (out / "report.md").is_file() and (out / "results.csv").is_file()
    pngs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert pngs == sorted([
        "sweep-bulk-throughput_bps-vs-flows.bulk.window.png",
        "sweep-rtt-rtt_ms_p50-vs-flows.bulk.window.png",
        "cdf-rtt-p000.png",
        "ts-throughput-bulk-p000.png", "ts-cwnd-bulk-p000.png", "ts-tcp_rtt-bulk-p000.png",
        "ts-rtt-rtt-p000.png", "ts-queue-s0_h2-p000.png", "ts-sojourn-s0_h2-p000.png",
    ])  # h2→s0's queue stayed empty: no figure of it
    imgs = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(imgs) == len(pngs)
    assert all(base64.b64decode(d).startswith(b"\x89PNG\r\n\x1a\n") for d in imgs)
    # self-contained: no scripts, nothing fetched from elsewhere
    assert "<script" not in page.lower() and "http://" not in page and "https://" not in page


def summary_rows(page: str) -> list[list[str]]:
    """The cells of every table row of the page."""
    return [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", page, re.S)]


def test_summary_table_numbers(built):
    _, page = built
    assert f"9.5 ± {_ci(BULK_BPS[0]) / 1e6:.3g} Mbit/s (n=3)" == "9.5 ± 0.896 Mbit/s (n=3)"
    # Each point's bulk row, cell by cell (a bare "<td>1</td>" is also the seed's row).
    rows = {cells[0]: cells[3:7] for cells in summary_rows(page) if cells[1:3] == ["bulk", "throughput"]}
    # measured, expected, ratio (point 0: 9.5 / 9.5), verdict
    assert rows["window=16KB"] == ["9.5 ± 0.896 Mbit/s (n=3)", "9.5 Mbit/s", "1", "within"]
    p1 = statistics.fmean(BULK_BPS[1])
    assert rows["window=64KB"] == [f"{p1 / 1e6:.4g} ± {_ci(BULK_BPS[1]) / 1e6:.3g} Mbit/s (n=3)", "9.5 Mbit/s",
                                   f"{p1 / BULK_EXPECTED:.3g}", "below (3 of 3 runs outside)"]
    assert rows["window=64KB"][2] == "0.7"
    assert "<td>31 ± 2.48 ms (n=3)</td>" in page  # ping: [30, 31, 32] ms, CI 4.3027 × 1 / √3
    assert "<td>21–40 ms</td>" in page  # a range from theory


def test_far_from_theory_names_the_30_percent_row_and_its_limit(built):
    out, page = built
    far = section(page, "Far from theory")
    assert "window=64KB: bulk&#x27;s throughput measured 6.65 ± " in far
    assert "ratio 0.7, below (3 of 3 runs outside) (theory&#x27;s limit: link)" in far
    assert "Why: No rule here explains it" in far  # nothing in the runs points at a cause
    assert "window=16KB: bulk" not in far and "rtt&#x27;s" not in far
    # the row is highlighted in the table, the one within tolerance is not
    rows = re.findall(r'<tr class="far">(.*?)</tr>', page)
    # the headline table's row and the same row of theory's working (folded)
    assert len(rows) == 2 and "window=64KB" in rows[0] and "below (3 of 3 runs outside)" in rows[0]
    assert "min(link 9.5) Mbit/s" in rows[1]
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "| **window=64KB** | **bulk** |" in md
    assert ("![bulk: throughput vs TCP window of bulk]"
            "(figures/sweep-bulk-throughput_bps-vs-flows.bulk.window.png)") in md


def test_scenario_and_host_are_shown_escaped(built):
    _, page = built
    assert "A &lt;b&gt;made-up&lt;/b&gt; experiment &amp; its report" in page
    assert "<b>made-up</b>" not in page
    assert "<pre>name: synthetic" in page
    assert "<td>6.1.0-test</td>" in page and "<td>Test CPU × 4</td>" in page
    assert "Complete: all 6 runs finished." in page


def test_sweep_axis_units():
    ax = axes.axis("flows.bulk.window", ["16KB", "64KB"])
    assert ax is not None and ax.label == "TCP window of bulk (KB)" and ax.of("64KB") == 64.0
    ax = axes.axis("links.r1-r2.delay", ["5ms", "50ms", "200ms"])
    assert ax is not None and ax.label == "one-way delay of link r1-r2 (ms)" and ax.log is False
    assert ax.of("50ms") == pytest.approx(50.0)
    ax = axes.axis("links.r1-r2.rate", ["1Mbit", "10Mbit", "1Gbit"])
    assert ax is not None and ax.label == "rate of link r1-r2 (Mbit/s)" and ax.log is True
    assert ax.of("1Gbit") == pytest.approx(1000.0)
    ax = axes.axis("links.r1-r2.loss", ["0.1%", "1%"])
    assert ax is not None and ax.of("1%") == pytest.approx(1.0) and ax.label.endswith("(%)")
    assert axes.axis("links.r1-r2.aqm", ["droptail", "pie"]) is None
    ax = axes.axis("flows.u.length", [200, "1400B"])
    assert ax is not None and ax.label == "datagram size of u (bytes)" and ax.of("1400B") == 1400.0


def test_failed_runs_still_report_and_say_so(tmp_path):
    out = make_results(tmp_path / "f", status="failed",
                       failed=frozenset({(1, 0), (1, 1), (1, 2)}))
    page = report.build(out).read_text(encoding="utf-8")
    assert '<p class="warn">Failed runs: 3 of 6 runs finished well' in page
    assert ("run p001-r00 (window=64KB) failed: the netrig-perf server for flow bulk did not "
            "start") in page
    assert "<td>9.5 ± 0.896 Mbit/s (n=3)</td>" in page  # point 0 is reported all the same
    assert not [c for c in summary_rows(section(page, "Results")) if c and c[0] == "window=64KB"]


def test_a_late_emulator_is_a_warning_naming_its_runs(tmp_path):
    calm = report.build(make_results(tmp_path / "calm")).read_text(encoding="utf-8")
    assert ("<p>Link emulator timing: 30000 packets released, 0 of them more than 1 ms late; "
            "the worst run&#x27;s p99 lateness was 45 µs.</p>") in calm
    page = report.build(make_results(tmp_path / "busy", late=frozenset({(1, 2)}))).read_text(
        encoding="utf-8")
    assert ('<p class="warn">Link emulator timing: 30000 packets released, 100 of them more '
            "than 1 ms late; the worst run&#x27;s p99 lateness was 2400 µs. In 1 of 6 runs the host "
            "was too busy") in page
    assert ("run p001-r02: the link emulator released 100 of 5000 packets (2.0 %) more than "
            "1 ms late (p99 2400 µs, worst 9.0 ms)") in page


def test_late_note_threshold():
    run = {"run": "p000-r00", "emulator": {"packets": 5000, "over_budget": 50, "budget_ms": 1.0}}
    assert words.late_note(run) == ""  # 1 % is tolerated
    run["emulator"]["over_budget"] = 51
    assert words.late_note(run).startswith("run p000-r00: the link emulator released 51 of "
                                             "5000 packets (1.0 %) more than 1 ms late")
    assert words.late_note({"run": "p000-r00"}) == ""  # no emulator on the path


def test_interrupted_directory_reports_what_ran(tmp_path):
    out = make_results(tmp_path / "i", status="interrupted", missing=frozenset({(1, 1), (1, 2)}))
    page = report.build(out).read_text(encoding="utf-8")
    assert (f"Interrupted: 4 of 6 runs finished. `netrig run --resume {out}` runs the rest."
            in page)
    assert "2 of 6 runs did not run" in page
    assert "<td>6.6 Mbit/s (n=1)</td>" in page  # one repetition: no interval


def test_fairness_bars_and_category_sweep(tmp_path):
    out = tmp_path / "fair"
    aqms = ["droptail", {"type": "pie", "target": "20ms"}]
    points = [{"index": i, "params": {"links.s0-h2.aqm": a}, "length_s": 5.0}
              for i, a in enumerate(aqms)]
    write_json(out / "meta.json", {"scenario": "fair", "sweep_keys": ["links.s0-h2.aqm"],
                                   "repeat": 1, "points": points, "status": "complete",
                                   "host": {}})
    (out / "scenario.yaml").write_text(yaml.safe_dump({**SCENARIO, "name": "fair"}))
    udp = _bulk(1e6, kind="udp", start=10, expected=1e6, jitter_ms=0.3, loss_pct=0.5)
    for i, p in enumerate(points):
        rid = run_id(i, 0)
        write_jsonl(out / "runs" / rid / "series" / "a.jsonl", [{"t": 1.0, "bps": 4e6}])
        write_json(out / "runs" / rid / "run.json", {
            "run": rid, "point": i, "rep": 0, "seed": 1 + i, "params": p["params"],
            "status": "ok", "monitors": [],
            "flows": {"a": _bulk(4e6, expected=5e6), "b": _bulk(6e6, start=0.5, expected=5e6),
                      "u": udp}})
    drawn = figures.make_figures(out)
    fair = [f for f in drawn if f.kind == "fairness"]
    assert len(fair) == 1 and "Jain's index" in fair[0].title
    bars = {f.path.name for f in drawn if f.kind == "sweep"}
    assert {"sweep-a-throughput_bps-by-links.s0-h2.aqm.png",
            "sweep-u-jitter_ms-by-links.s0-h2.aqm.png",
            "sweep-u-loss_pct-by-links.s0-h2.aqm.png"} <= bars
    page = report.build(out).read_text(encoding="utf-8")
    assert "<td>aqm=pie(target=20ms)</td><td>a</td>" in page  # a mapping swept, shown short
    # u ran after a and b: not part of their fairness
    assert figures.concurrent({"flows": {"a": _bulk(4e6), "b": _bulk(6e6, start=0.5),
                                         "u": udp}}) == ["a", "b"]


def test_compare_joins_both_runs(tmp_path):
    a = make_results(tmp_path / "a")
    b = make_results(tmp_path / "b", scale=1.1)
    page_path = compare.compare(a, b)
    assert page_path == tmp_path / "compare-a-vs-b" / "compare.html"
    page = page_path.read_text(encoding="utf-8")
    row = re.search(r"<tr><td>window=16KB</td><td>bulk</td><td>throughput</td>(.*?)</tr>", page)
    assert row, "no joined row for bulk at window=16KB"
    assert "<td>9.5 ± 0.896 Mbit/s (n=3)</td>" in row.group(1)
    assert f"<td>10.45 ± {_ci(BULK_BPS[0]) * 1.1 / 1e6:.3g} Mbit/s (n=3)</td>" in row.group(1)
    assert "<td>1.1</td>" in row.group(1) and "<td>9.5 Mbit/s</td>" in row.group(1)
    # bulk and rtt against the window, then throughput, cwnd, RTT, queue and sojourn over
    # time at each of the two points, a line per directory
    assert len(re.findall(r'<img src="data:image/png;base64,', page)) == 2 + 5 * 2


def test_not_a_results_directory(tmp_path):
    (tmp_path / "x").mkdir()
    with pytest.raises(results.NotResults, match=re.escape(str(tmp_path / "x"))):
        report.build(tmp_path / "x")
    with pytest.raises(ValueError, match="not a netrig results directory"):
        compare.compare(make_results(tmp_path / "a"), tmp_path / "x")


def test_a_range_says_where_the_mean_sits_or_which_end_it_missed():
    def row(values: list[float], lo: float, hi: float | None) -> report.Row:
        return report.Row("", {}, "bulk", "throughput_bps", values, lo, hi, "loss", "", 1, 0, "")

    assert report._versus(row([1.2e6], 1.0e6, 2.0e6)) == "1 (at 20 % of the range)"
    assert report._versus(row([0.98e6], 1.417e6, 1.435e6)) == "0.692 × the range's low end"
    assert report._versus(row([3.0e6], 1.0e6, 2.0e6)) == "1.5 × the range's top"
    assert report._versus(row([0.9e6], 1.0e6, None)) == "0.9"


def test_pacing_summary_and_note():
    from netrig.exp.kinds.perfjson import pacing_summary
    end = {"streams": [
        {"udp": {"pacing": {"behind_seconds": 0.3, "max_behind_ms": 150.0, "short_at_end_bytes": 0,
                            "forgiven_bytes": 0}}},
        {"udp": {"pacing": {"behind_seconds": 0.1, "max_behind_ms": 40.0, "short_at_end_bytes": 20_000,
                            "forgiven_bytes": 5_000}}},
        {"udp": {}}]}
    s = pacing_summary({"end": end}, 975_000)
    assert s == {"sender_behind_s": 0.4, "sender_max_behind_ms": 150.0, "sender_short_pct": 2.5}
    assert pacing_summary({"end": {"streams": [{"sender": {"bytes": 1}}]}}, 1) == {}  # not paced
    run = {"run": "p000-r01", "flows": {"v": {"summary": {**s}}, "w": {"summary": {"sender_short_pct": 1.0}}}}
    assert words.pacing_note(run) == (
        "run p000-r01: v sent 2.5 % less than its rate (at worst 150 ms behind): the sender was "
        "stalled or could not keep up, so the path was offered less than the scenario says")
    run["flows"]["v"]["summary"]["sender_short_pct"] = 1.0  # 1 % is tolerated
    assert words.pacing_note(run) == ""
