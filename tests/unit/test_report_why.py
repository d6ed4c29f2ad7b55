"""The report reads like a results section: one ratio (table, "Far from theory",
results.csv), a why for each flagged row (the rules of netrig.exp.analysis.why), results.csv's
units and plain decimals, and the topology drawn (netrig.topo.graph). No root."""

from __future__ import annotations

import csv
import html
import re
from pathlib import Path
from typing import Any

import yaml
from netrig.exp.analysis import why
from netrig.exp.grade.verdict import Versus, decimal, versus
from netrig.exp.record.files import run_id, write_json, write_jsonl
from netrig.exp.render import report
from netrig.topo import graph
from netrig.topo import load as tload

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCENARIO = {
    "name": "why", "tolerance": "10%", "duration": "20s",
    "topology": {"nodes": {"h1": "host", "s0": "switch", "h2": "host"},
                 "links": [{"a": "h1", "b": "s0", "rate": "1Gbit", "delay": "5ms"},
                           {"a": "s0", "b": "h2", "rate": "1.5Mbit", "delay": "5ms", "queue": 100,
                            "aqm": {"type": "pie", "target": "20ms"}}]},
    "flows": {"bulk": {"kind": "tcp", "from": "h1", "to": "h2", "cc": "cubic"},
              "near": {"kind": "ping", "from": "h1", "to": "h2"},
              "rtt": {"kind": "ping", "from": "h1", "to": "h2"}},
    "monitors": [{"kind": "queue", "link": "s0-h2", "dir": "a_to_b"}],
}


def _entry(kind: str, metric: str, value: float, hi: float | None, measured: float,
           **summary: Any) -> dict[str, Any]:
    return {"kind": kind, "from": "h1", "to": "h2", "start_s": 0.0, "end_s": 20.0, "planned_s": 20.0,
            "summary": {"status": "ok", metric: measured, **summary},
            "expected": {"metric": metric, "value": value, "hi": hi, "limit": "link" if kind == "tcp"
                         else "loaded path", "detail": "working", "measured": measured,
                         "ratio": measured / value, "flag": False,
                         "extra": {"base_rtt_ms": 21.0, "bottleneck_bps": 1.5e6}}}


def make(out: Path) -> Path:
    """One run: bulk at 0.846 of 1.4346 Mbit/s (below), ping `near` at 31 ms in 21–41 ms
    (within, at 50 %), ping `rtt` at 68.6 ms above 21–41 ms; PIE's queue monitor
    held 29.6 ms and dropped 101 packets."""
    write_json(out / "meta.json", {"scenario": "why", "sweep_keys": [], "repeat": 1, "seed": 1,
                                   "points": [{"index": 0, "params": {}}], "status": "complete",
                                   "host": {"tcp_congestion_control_default": "bbr"}})
    (out / "scenario.yaml").write_text(yaml.safe_dump(SCENARIO, sort_keys=False))
    rid = run_id(0, 0)
    write_jsonl(out / "runs" / rid / "series" / "monitor-0.jsonl", [
        {"monitor": 0, "kind": "queue", "t": k / 100, "link": "s0-h2", "dir": "a_to_b",
         "queue_packets": 3, "sojourn_ms": 29.6 if k % 2 else 0.0, "dequeued": 1 if k % 2 else 0,
         "drops_overflow": 0, "drops_aqm": 1 if k < 202 and k % 2 else 0, "lost": 0, "ecn_marks": 0}
        for k in range(1, 2000)])
    write_json(out / "runs" / rid / "run.json", {
        "run": rid, "point": 0, "rep": 0, "seed": 1, "params": {}, "status": "ok",
        "monitors": ["monitor-0"], "teardown_errors": [],
        "emulator": {"packets": 10000, "over_budget": 180, "late_max_us": 77600.0, "budget_ms": 1.0},
        "flows": {"bulk": _entry("tcp", "throughput_bps", 1434610.0, None, 1213930.5, retrans_pct=3.3),
                  "near": _entry("ping", "rtt_ms_p50", 21.0, 41.0, 31.0),
                  "rtt": _entry("ping", "rtt_ms_p50", 21.0, 41.0, 68.65)}})
    return out


def cells(page: str, flow: str) -> list[str]:
    row = re.search(rf"<tr[^>]*><td>{flow}</td>(.*?)</tr>", page, re.S)
    assert row, f"no row of {flow}"
    return re.findall(r"<td>(.*?)</td>", row.group(1))


def section(page: str, title: str) -> str:
    return page.split(f"<h2>{title}</h2>", 1)[1].split("<h2>", 1)[0]


def csv_rows(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "results.csv", newline="") as f:
        return {r["flow"]: r for r in csv.DictReader(f)}


def test_one_ratio_in_the_table_far_from_theory_and_the_csv(tmp_path):
    out = make(tmp_path / "r")
    page = report.build(out).read_text(encoding="utf-8")
    rows = csv_rows(out)
    # within a range: ratio 1, the mean at 50 % of it; the same in the CSV
    assert cells(page, "near")[3:5] == ["1 (at 50 % of the range)", "within"]
    assert float(rows["near"]["ratio"]) == 1 and float(rows["near"]["range_pos"]) == 0.5
    assert rows["near"]["verdict"] == "within"
    # above a range: measured ÷ its top, 68.65 / 41 = 1.67, in all three places
    assert cells(page, "rtt")[3:5] == ["1.67 × the range&#x27;s top", "above"]
    assert float(rows["rtt"]["ratio"]) == float(decimal(68.65 / 41.0)) and rows["rtt"]["verdict"] == "above"
    far = section(page, "Far from theory")
    assert "ratio 1.67 × the range&#x27;s top, above" in far
    # a point: measured ÷ it
    assert cells(page, "bulk")[3:5] == ["0.846", "below"] and f"{float(rows['bulk']['ratio']):.3g}" == "0.846"
    assert "ratio 0.846, below" in far
    # the definition is on the page once
    assert page.count("ratio = measured ÷ the nearest value theory allows") == 1


def test_the_headline_table_comes_first_and_the_scenario_is_folded(tmp_path):
    page = report.build(make(tmp_path / "r")).read_text(encoding="utf-8")
    heads = re.findall(r"<h2>(.*?)</h2>", page)
    assert heads[0] == "Results" and "Topology" in heads
    first = section(page, "Results")
    assert "<th>theory</th><th>ratio</th><th>verdict</th>" in first
    assert "<details><summary>The scenario</summary>" in page
    assert page.index("<pre>name: why") > page.index("<details><summary>The scenario</summary>")
    # theory's point for the queue the monitor measured: 21 + 29.6 ms
    assert "21–41 ms (50.6 ms for the queue measured)" in cells(page, "rtt")[2]
    assert 'src="data:image/svg+xml;base64,' in section(page, "Topology")


def test_every_flagged_row_says_why(tmp_path):
    out = make(tmp_path / "r")
    page = html.unescape(report.build(out).read_text(encoding="utf-8"))
    far = section(page, "Far from theory")
    items = re.findall(r"<li>(.*?)</li>", far, re.S)
    assert len(items) == 2  # bulk below, rtt above; near is within
    bulk, rtt = items
    assert "PIE at 1.5 Mbit/s on s0→h2: one packet takes 8.1 ms to send, 40 % of its 20 ms target" in bulk
    assert "It retransmitted 3.3 % of its segments" in bulk
    assert "s0→h2: 101 by pie's decision" in bulk
    assert "released 1.8 % of its packets more than 1 ms late" in bulk
    assert ("The queue monitor measured a mean sojourn of 29.6 ms on s0→h2 (filled by bulk's data): "
            "for that queue "
            "theory's RTT is 21 + that = 50.6 ms; measured is 1.36 × that.") in rtt


def ev(kind: str = "tcp", metric: str = "throughput_bps", v: Versus | None = None, **kw: Any) -> why.Evidence:
    return why.Evidence("f", kind, metric, v or versus(0.8, 1.0), **kw)


PIE = why.QueueSeen("s0-h2", "a_to_b", "s0→h2", aqm="pie", rate_bps=1.5e6, target_s=0.020,
                    sojourn_ms=29.6, aqm_drops=101)
FIFO = why.QueueSeen("s0-h2", "a_to_b", "s0→h2", aqm="droptail", rate_bps=1.5e6, sojourn_ms=500.0,
                     overflow=69)


def test_why_rules_fire_on_their_cause_only():
    assert why.pie_low_rate(ev(queues=[PIE])).startswith("PIE at 1.5 Mbit/s on s0→h2")
    fast = why.QueueSeen("l", "a_to_b", "a→b", aqm="pie", rate_bps=100e6, target_s=0.020)
    assert why.pie_low_rate(ev(queues=[fast])) is None  # 0.12 ms a packet: fine steps
    assert why.pie_low_rate(ev(queues=[PIE], v=versus(1.0, 1.0))) is None  # within: nothing to say

    assert why.fifo_not_fair(ev("udp", v=versus(0.5, 1.0), queues=[FIFO], others=[("bulk", "tcp")])) \
        .startswith("s0→h2 is a FIFO (drop-tail) queue, and FIFO is not max-min fair: bulk keeps it full")
    assert why.fifo_not_fair(ev("udp", v=versus(0.5, 1.0), queues=[FIFO])) is None  # no TCP beside
    assert why.fifo_not_fair(ev("udp", v=versus(0.5, 1.0), queues=[PIE], others=[("b", "tcp")])) is None

    cubic = ev(cc="cubic", others=[("b", "tcp")], run_s=20.0, jain=0.91)
    assert "CUBIC beside b" in why.cubic_unfair(cubic) and "a 20 s run" in why.cubic_unfair(cubic)
    assert "Jain's index over the flows was 0.910" in why.cubic_unfair(cubic)
    assert why.cubic_unfair(ev(cc="bbr", others=[("b", "tcp")])) is None
    assert why.cubic_unfair(ev(cc="cubic")) is None  # alone

    assert "Linux's receiver delays ACKs" in why.delayed_acks(ev(limit="window (W/RTT)", window_bytes=20480))
    assert "of 14.1 segments (20.48 KB)" in why.delayed_acks(ev(limit="window (W/RTT)", window_bytes=20480))
    assert why.delayed_acks(ev(limit="link")) is None
    assert why.delayed_acks(ev(limit="window (W/RTT)", v=versus(1.2, 1.0))) is None  # above, not below

    # 100 Mbit/s × 40 ms = 500 KB: 6 rounds from 10 segments, 0.24 s of a 3 s mean
    ss = why.slow_start(ev(bottleneck_bps=100e6, base_rtt_ms=40.0, run_s=3.0))
    assert ss and ss.startswith("Slow start: from 10 segments it needs about 6 RTTs (0.24 s)")
    assert why.slow_start(ev(bottleneck_bps=100e6, base_rtt_ms=40.0, run_s=3.0, omit_s=1.0)) is None
    assert why.slow_start(ev(bottleneck_bps=1.5e6, base_rtt_ms=21.0, run_s=3.0)) is None  # BDP < IW

    assert why.retransmissions(ev(summary={"retrans_pct": 3.3})).startswith("It retransmitted 3.3 %")
    assert why.retransmissions(ev(summary={"retrans_pct": 0.2})) is None
    assert why.drops(ev(queues=[FIFO])) == ("Packets dropped on its path (each loss halves or cuts a "
                                           "loss-based TCP's window): s0→h2: 69 arriving at a full queue.")
    assert why.drops(ev(queues=[why.QueueSeen("l", "a_to_b", "a→b")])) is None
    # 004's PIE run: the fetch responses filled h2→s0, the way bulk's ACKs come back.
    acks = why.QueueSeen("s0-h2", "b_to_a", "h2→s0", rate_bps=1.5e6, sojourn_ms=37.7, packets_max=37)
    assert why.ack_queue(ev(base_rtt_ms=21.0, ack_queues=[acks], others=[("web", "fetch")])) == (
        "Its ACKs waited in a queue on their way back (what web sent that way): h2→s0 a mean of "
        "37.7 ms, up to 37 packets, against a base RTT of 21 ms. ACKs that come late and in bunches "
        "leave the sender idle, then bursting; theory's share assumes a free way back.")
    quick = why.QueueSeen("s0-h2", "b_to_a", "h2→s0", sojourn_ms=1.0)
    assert why.ack_queue(ev(base_rtt_ms=21.0, ack_queues=[quick])) is None  # ACKs barely waited
    assert why.ack_queue(ev(base_rtt_ms=21.0, ack_queues=[acks], v=versus(1.0, 1.0))) is None
    assert why.ack_queue(ev("udp", base_rtt_ms=21.0, ack_queues=[acks])) is None
    assert why.late_emulator(ev(late_share=0.017, late_worst_ms=77.6)).startswith(
        "The link emulator released 1.7 % of its packets more than 1 ms late (the worst 77.6 ms)")
    assert why.late_emulator(ev(late_share=0.005)) is None
    assert why.sender_short(ev("udp", summary={"sender_short_pct": 2.5})).startswith("Its sender fell 2.5 %")
    assert why.sender_short(ev("udp", summary={"sender_short_pct": 0.5})) is None
    rtt = ev("ping", "rtt_ms_p50", versus(68.65, 21.0, 41.0), base_rtt_ms=21.0, here=50.6,
             summary={"rtt_ms_p50": 68.65}, queues=[PIE])
    assert why.queue_measured(rtt).endswith("= 50.6 ms; measured is 1.36 × that.")
    assert why.explain(ev(v=versus(1.0, 1.0))) == []  # within: no rule speaks


def test_queue_seen_weighs_departures_and_counts_drops_by_cause():
    rows = [{"link": "l", "dir": "a_to_b", "t": 1.0, "dequeued": 3, "sojourn_ms": 10.0, "drops_aqm": 2},
            {"link": "l", "dir": "a_to_b", "t": 1.01, "dequeued": 0, "sojourn_ms": 0.0, "drops_overflow": 1},
            {"link": "l", "dir": "a_to_b", "t": 1.02, "dequeued": 1, "sojourn_ms": 30.0, "lost": 4},
            {"link": "l", "dir": "b_to_a", "t": 1.0, "dequeued": 9, "sojourn_ms": 99.0},
            {"link": "l", "dir": "a_to_b", "t": 9.0, "dequeued": 9, "sojourn_ms": 99.0}]
    q = why.queue_seen(rows, "l", "a_to_b", 0.5, 2.0, where="a→b")
    assert q is not None and q.sojourn_ms == 15.0  # (3 × 10 + 30) / 4; no departure is no sample
    assert (q.overflow, q.aqm_drops, q.lost) == (1, 2, 4)
    assert why.rtt_here(21.0, [q]) == 36.0 and why.rtt_here(None, [q]) is None


def test_csv_units_per_metric_and_plain_decimals(tmp_path):
    out = make(tmp_path / "r")
    report.build(out)
    text = (out / "results.csv").read_text()
    assert not re.search(r"\d[eE][+-]?\d", text), "a number in exponent notation"
    rows = csv_rows(out)
    assert rows["bulk"]["unit"] == "bit/s" and rows["bulk"]["measured"] == "1213930"
    assert rows["bulk"]["expected"] == "1434610"
    assert rows["rtt"]["unit"] == rows["near"]["unit"] == "ms"
    assert rows["rtt"]["expected_here"] == "50.6"
    assert [decimal(x) for x in (1.40808e6, 2.5e-7, 0.1 + 0.2, 7, None)] == \
        ["1408080", "0.00000025", "0.3", "7", ""]


def test_graph_text_fits_80_columns_and_names_the_bottleneck():
    topo = tload.load(EXAMPLES / "portfolio.yaml")
    out = graph.text(topo)
    lines = out.splitlines()
    assert max(len(x) for x in lines) <= 80
    assert "* L3 r3-r4  20 Mbit/s, 10 ms, queue 33 packets, droptail (both ways)" in lines
    assert lines[-1] == "* bottleneck: L3 (the slowest rated link of the topology)"
    assert "  L2 r2-r3  30 Mbit/s, 20 ms, queue 100 packets, droptail (both ways)" in lines
    # with flows, each path as routed and its own bottleneck
    flows = graph.text(topo, flows={"a": ("h1", "h4"), "far": ("h1", "h9")}).splitlines()
    assert "  a: h1 → s1 → r1 → r2 → [L2]> r3 → s2 → h4" in flows
    assert "* bottleneck: L2, L3 (the slowest rated link on a flow's path)" in flows


def test_graph_draw_is_svg_with_every_links_label():
    topo = tload.load(EXAMPLES / "portfolio.yaml")
    svg = graph.draw(topo, flows={"a": ("h1", "h4")})
    assert isinstance(svg, str) and svg.lstrip().startswith("<?xml") and "<svg" in svg
    texts = " ".join(html.unescape(re.sub(r"<[^>]+>", "", t))
                     for t in re.findall(r"<text\b[^>]*>(.*?)</text>", svg, re.S))
    words = " ".join(texts.split())
    for link in topo.links:
        for label in graph.link_label(link):
            assert label in words, (link.name, label)
    assert "L2 — BOTTLENECK" in words and "flow a: h1 → h4" in words
    assert all(n in texts.split() for n in topo.nodes)
    assert graph.draw(topo, flows={"a": ("h1", "h4")}) == svg  # deterministic
    png = graph.draw(topo, fmt="png")
    assert isinstance(png, bytes) and png.startswith(b"\x89PNG")


def test_netrig_graph_prints_text_or_writes_svg_and_png(tmp_path, capsys):
    from netrig import cli

    assert cli.main(["graph", str(EXAMPLES / "004-bufferbloat.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("004-bufferbloat: 2 hosts, 1 switch, 2 links\n")
    assert "  bulk: h1 → s0 → [s0-h2]> h2\n" in out and max(map(len, out.splitlines())) <= 80
    for name in ("t.svg", "t.png"):
        assert cli.main(["graph", str(EXAMPLES / "portfolio.yaml"), "-o", str(tmp_path / name)]) == 0
    assert "L3 — BOTTLENECK" in (tmp_path / "t.svg").read_text()
    assert (tmp_path / "t.png").read_bytes().startswith(b"\x89PNG")
    assert cli.main(["graph", str(EXAMPLES / "portfolio.yaml"), "-o", str(tmp_path / "t.pdf")]) == 1
    assert "draws .svg or .png" in capsys.readouterr().err


def test_a_flow_cut_off_by_an_event_says_so_first_with_its_rate_while_up():
    def ev(outages, measured=28e6):
        v = versus(measured, 47.8e6, None, 0.1)
        return why.Evidence("bulk", "tcp", "throughput_bps", v, "link", run_s=15.0,
                            summary={"throughput_bps": measured}, outages=outages)

    cut = ev([("r21-r22 down", 5.0, 5.0, "3–4.05 s, OSPF dead 4 s")])
    said = why.explain(cut)
    assert said[0].startswith("Events stopped it for 5 s of its 15 s: r21-r22 down at 5 s cut it off "
                              "for 5 s (theory: 3–4.05 s, OSPF dead 4 s)")
    assert "its path was up it averaged 42 Mbit/s" in said[0]  # 28 x 15 / 10
    # A blip of a few hundred ms in 15 s is not the reason; nor is an event a flow within theory.
    assert why.event_outage(ev([("r21-r22 down", 5.0, 0.3, "")])) is None
    assert why.event_outage(ev([("r21-r22 down", 5.0, 5.0, "")], measured=47.8e6)) is None
