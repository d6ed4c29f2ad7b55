"""Figures and explanations as a reviewer reads them (issue 27, item 6): the rate bin
chosen from the link's rate and packet size, legends without duplicates, a reference far
above the data named at the edge, theory's lines on CDFs, and "Far from theory"
attributing a delay only to a queue that carried it, in numbers for people, naming the
traffic that filled the way back. Pure: no root, no network (Graphviz's dot is run for
the topology's layout)."""

from __future__ import annotations

import re
from pathlib import Path

from matplotlib.figure import Figure
from netrig.exp.analysis import rows, series, why
from netrig.exp.grade.verdict import versus
from netrig.exp.render import draw, figures
from netrig.topo import graph
from netrig.topo import load as tload

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_rate_bin_holds_enough_packets_for_two_percent():
    # 004's bottleneck: 100 ms held 12–13 packets (±8 %); 0.5 s holds 62 (±1.6 %)
    width, quant = series.bin_for(1.5e6, 1514)
    assert width == 0.5 and abs(quant - 0.01615) < 1e-4
    assert series.bin_for(10e6, 1514) == (0.1, 8 * 1514 / 10e6 / 0.1)  # 100 ms is enough
    assert series.bin_for(1e9, 1514)[0] == 0.1
    # a link too slow for ±2 % even in the widest bin: its quantisation is said
    width, quant = series.bin_for(50e3, 1514)
    assert width == series.NICE_BINS[-1] and quant > series.WITHIN
    assert series.bin_for(None) == (series.BIN_S, None)
    # the caption says it
    tr = series.Trace("bulk", [0.25], [1.5], bin_s=0.5, quant=0.0161)
    assert "0.5 s bins" in figures_bins([tr]) and "±1.6 %" in figures_bins([tr])
    slow = series.Trace("bulk", [2.5], [0.05], bin_s=5.0, quant=0.048)
    assert "above ±2 %" in figures_bins([slow])


def figures_bins(trs):
    from netrig.exp.render.timeseries import bins_caption

    return bins_caption(trs)


def test_a_reference_every_run_shares_is_named_once():
    refs = [(series.Ref("BDP 5.1 KB", 5.1, ":"), "queue=100", "C0"),
            (series.Ref("BDP 5.1 KB", 5.1, ":"), "queue=20", "C1"),
            (series.Ref("BDP + queue 150 KB", 150.0, "--"), "queue=100", "C0"),
            (series.Ref("BDP + queue 34 KB", 34.0, "--"), "queue=20", "C1"),
            (series.Ref("BDP + pie's target 8.7 KB", 8.7, "-."), "queue=100", "C0"),
            (series.Ref("BDP + pie's target 8.7 KB", 8.7, "-."), "queue=20", "C1")]
    merged = draw.merge_refs(refs)
    labels = [m[0] for m in merged]
    assert labels == ["BDP 5.1 KB", "BDP + queue 150 KB (queue=100)", "BDP + queue 34 KB (queue=20)",
                      "BDP + pie's target 8.7 KB"]
    assert merged[0][3] == "k" and merged[1][3] == "C0"
    # a legend's entries: each label once, hidden ones left out
    h, t = draw.unique_legend(["a", "b", "c", "d"], ["bulk", "BDP 5.1 KB", "BDP 5.1 KB", "_hidden"])
    assert (h, t) == (["a", "b"], ["bulk", "BDP 5.1 KB"])


def test_panels_of_a_figure_give_one_legend_without_duplicates():
    def plan(axes):
        for k, ax in enumerate(axes):
            ax.plot([0, 1], [k, k + 1], label="bulk")
            ax.axhline(5, label="BDP 5.1 KB")

    fig = draw.figure(plan, "congestion window of bulk", ["queue=100", "queue=20"])
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)  # one, beside all
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["bulk", "BDP 5.1 KB"]
    assert [ax.get_title(loc="left") for ax in fig.axes] == ["queue=100", "queue=20"]


def test_an_off_scale_reference_is_named_at_the_edge():
    # a 100-packet queue limit over a queue that stayed under 20: named, not drawn
    assert draw.off_scale([100.0, 4.3, 25.0], 18.0) == [True, False, False]
    assert draw.off_scale([807.5, 20.0], 75.0) == [True, False]
    assert draw.off_scale([100.0], 0.0) == [False]  # no data: nothing to squash
    from netrig.exp.render.timeseries import _lines

    fig = Figure()
    ax = fig.add_subplot()
    tr = series.Trace("s0→h2", [0.0, 1.0, 2.0], [3.0, 18.0, 7.0])
    refs = [(series.Ref("queue limit of s0→h2 100 packets", 100.0, "--"), None, "k"),
            (series.Ref("pie's target as packets 2.48", 2.48, "-."), None, "k")]
    _lines([("s0→h2", "C0", tr)], refs, "queue (packets)")(ax)
    assert ax.get_ylim()[1] < 25  # the axis follows the data, not the limit
    assert [t.get_text() for t in ax.texts] == ["queue limit of s0→h2 100 packets ↑"]
    drawn = [ln.get_label() for ln in ax.lines]
    assert "pie's target as packets 2.48" in drawn and not any("100 packets" in x for x in drawn)
    target = next(ln for ln in ax.lines if ln.get_label().startswith("pie's"))
    assert target.get_zorder() > ax.lines[0].get_zorder()  # theory above the data


def test_a_cdf_carries_theorys_lines():
    fig = Figure()
    ax = fig.add_subplot()
    refs = [(series.Ref("idle RTT 21.05 ms", 21.05, ":"), "droptail", "C0"),
            (series.Ref("idle RTT 21.05 ms", 21.05, ":"), "pie", "C1"),
            (series.Ref("full-queue RTT 828.5 ms", 828.5, "--"), "droptail", "C0"),
            (series.Ref("idle RTT + pie's target 41.05 ms", 41.05, "-."), "pie", "C1")]
    figures._cdf([("pie", "C1", [30.0, 50.0, 70.0, 90.0])], "RTT (ms)", refs)(ax)
    verticals = {ln.get_label(): ln.get_xdata()[0] for ln in ax.lines if len(set(ln.get_xdata())) == 1}
    assert verticals == {"idle RTT 21.05 ms": 21.05, "idle RTT + pie's target 41.05 ms (pie)": 41.05}
    assert [t.get_text() for t in ax.texts] == ["full-queue RTT 828.5 ms (droptail) →"]


def _ev(**kw) -> why.Evidence:
    base = {"flow": "rtt", "kind": "ping", "metric": "rtt_ms_p50",
            "versus": versus(75.4, 21.05, 41.05, 0.1), "base_rtt_ms": 21.05,
            "summary": {"rtt_ms_p50": 75.4}, "here": 94.92}
    return why.Evidence(**{**base, **kw})


# 004's PIE point, queue 100: the ping's path as the monitor measured it.
H1S0 = why.QueueSeen("h1-s0", "a_to_b", "h1→s0", aqm="droptail", rate_bps=1e9, sojourn_ms=0.0000024)
S0H2 = why.QueueSeen("s0-h2", "a_to_b", "s0→h2", aqm="pie", rate_bps=1.5e6, target_s=0.02, sojourn_ms=29.8)
H2S0 = why.QueueSeen("s0-h2", "b_to_a", "h2→s0", aqm="pie", rate_bps=1.5e6, target_s=0.02, sojourn_ms=44.1,
                     packets_max=34)
S0H1 = why.QueueSeen("h1-s0", "b_to_a", "s0→h1", aqm="droptail", rate_bps=1e9, sojourn_ms=0.0)
CROSSING = {"h1→s0": ["bulk's data"], "s0→h2": ["bulk's data"], "h2→s0": ["web's responses", "bulk's ACKs"],
            "s0→h1": ["web's responses"]}


def test_a_delay_is_blamed_only_on_a_queue_that_carried_it():
    ev = _ev(queues=[H1S0, S0H2, H2S0, S0H1], others=[("bulk", "tcp")], crossing=CROSSING)
    assert [q.where for q in why.carrying(ev)] == ["s0→h2", "h2→s0"]
    # the h1→s0 FIFO held packets for nanoseconds: not where the ping waited
    assert why.fifo_not_fair(ev) is None
    said = why.queue_measured(ev)
    assert said is not None and "h1→s0" not in said and "e-0" not in said
    assert said.startswith("The queue monitor measured a mean sojourn of 29.8 ms on s0→h2 (filled by "
                           "bulk's data), 44.1 ms on h2→s0 (filled by web's responses and bulk's ACKs)")
    assert "; its other queues held packets under 1 µs at most: for those queues" in said
    # a FIFO that did hold the delay is still blamed
    full = why.QueueSeen("s0-h2", "a_to_b", "s0→h2", aqm="droptail", rate_bps=1.5e6, sojourn_ms=450.0)
    assert why.fifo_not_fair(_ev(queues=[H1S0, full], others=[("bulk", "tcp")])).startswith("s0→h2 is a FIFO")


def test_numbers_are_for_people():
    assert [why.num(x) for x in (2.4e-06, 0.00232, 8.07, 94.92, 1234.5, 0.0)] == \
        ["0.0000024", "0.00232", "8.07", "94.9", "1230", "0"]
    assert [why.ms(x) for x in (2.4e-06, 0.0023, 8.07, 807.5, 12345.0, 0.0)] == \
        ["under 1 µs", "2.3 µs", "8.07 ms", "808 ms", "12300 ms", "0 ms"]
    ev = _ev(queues=[H1S0, S0H2, H2S0, S0H1], crossing=CROSSING, late_share=0.05, late_worst_ms=1234.5)
    for text in why.explain(ev):
        assert not re.search(r"\d[eE][+-]?\d", text), text


def test_the_traffic_filling_the_ack_path_is_named():
    # 004's PIE run: bulk's ACKs come back on h2→s0, which web's 100 KB responses filled
    acks = why.QueueSeen("s0-h2", "b_to_a", "h2→s0", rate_bps=1.5e6, sojourn_ms=37.1, packets_max=34)
    ev = why.Evidence("bulk", "tcp", "throughput_bps", versus(1.204e6, 1.435e6, None, 0.1),
                      base_rtt_ms=21.05, ack_queues=[acks], crossing=CROSSING)
    said = why.ack_queue(ev)
    assert said is not None and said.startswith(
        "Its ACKs waited in a queue on their way back: web's responses filled that queue: h2→s0 "
        "a mean of 37.1 ms, up to 34 packets")
    assert "bulk's ACKs" not in said  # its own ACKs are not the other traffic


def test_crossing_reads_each_flows_hops():
    run = {"flows": {
        "bulk": {"kind": "tcp", "hops": {"data": [{"from": "s0", "to": "h2"}],
                                         "acks": [{"from": "h2", "to": "s0"}]}},
        "web": {"kind": "web", "hops": {"data": [{"from": "s0", "to": "h2"}],
                                        "back": [{"from": "h2", "to": "s0"}]}},
        "rtt": {"kind": "ping", "hops": {"back": [{"from": "h2", "to": "s0"}]}}}}
    assert rows.crossing(run) == {"s0→h2": ["bulk's data"], "h2→s0": ["web's responses", "bulk's ACKs"]}


def test_the_portfolio_is_laid_out_by_graphviz_left_to_right():
    topo = tload.load(EXAMPLES / "portfolio.yaml")
    assert graph.dot_source(topo).startswith("graph netrig {\n  rankdir=LR;")
    pos = graph.layout(topo)
    x = {n: p[0] for n, p in pos.items()}
    # along the path h1 … r1 r2 r3 r4 h9, each a layer further right; every leaf host
    # beyond its router or switch (today's home-made layout put h9 and r4 oddly)
    chain = ["h1", "s1", "r1", "r2", "r3", "r4", "h9"]
    assert all(x[a] < x[b] for a, b in zip(chain, chain[1:], strict=False))
    assert x["h7"] > x["r2"] and x["h8"] > x["r3"] and all(x[h] > x["s2"] for h in ("h4", "h5", "h6"))
    # no two nodes on one spot
    assert len({(round(a, 2), round(b, 2)) for a, b in pos.values()}) == len(pos)
