"""Scenario files: the schema's errors at FILE:LINE: key, sweeps, --quick, --set, and
theory per flow for a point (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest
from netrig.exp.grade.expect import expectations
from netrig.exp.spec.model import ScenarioError
from netrig.exp.spec.scenario import load_scenario, loads_scenario
from netrig.theory import analyse
from netrig.topo.plan import make_plan

ROOT = Path(__file__).resolve().parents[2]
BASE = """\
name: demo
topology:
  nodes: {h1: host, s0: switch, h2: host}
  links:
    - [h1, s0]
    - {a: s0, b: h2, rate: 1.5Mbit, delay: 10ms, queue: 100}
duration: 20s
flows:
  bulk: {kind: tcp, from: h1, to: h2, cc: cubic}
  rtt: {kind: ping, from: h1, to: h2, interval: 100ms}
monitors:
  - {kind: queue, link: s0-h2}
sweep:
  links.s0-h2.aqm: [droptail, pie]
  flows.bulk.window: [16KB, 64KB]
quick: {duration: 5s, repeat: 1}
"""


def problems(text: str, **kw) -> list[str]:
    with pytest.raises(ScenarioError) as e:
        loads_scenario(text, "s.yaml", **kw)
    return e.value.problems


def test_a_sweep_is_the_cross_product_in_order():
    s = loads_scenario(BASE, "s.yaml")
    assert s.runs == 4 and s.sweep_keys == ["links.s0-h2.aqm", "flows.bulk.window"]
    assert [tuple(p.params.values()) for p in s.points] == [
        ("droptail", "16KB"), ("droptail", "64KB"), ("pie", "16KB"), ("pie", "64KB")]
    p = s.points[3]
    assert p.topology.link_named("s0", "h2").direction(0).aqm.name == "pie"
    assert p.spec.flows["bulk"].nbytes("window") == 64_000
    assert p.length_s == 20.0


def test_quick_and_set_change_the_scenario():
    s = loads_scenario(BASE, "s.yaml", quick=True, sets=["repeat=3", "flows.bulk.cc=reno",
                                                          "links.s0-h2.delay=40ms"])
    assert s.repeat == 3 and s.points[0].length_s == 5.0
    assert s.points[0].spec.flows["bulk"].cc == "reno"
    assert s.points[0].topology.link_named("s0-h2").direction(0).delay_s == 0.040
    assert s.resolved["duration"] == "5s" and "quick" not in s.resolved


def test_errors_name_file_line_and_key():
    text = BASE.replace("duration: 20s", "duration: 20").replace("cc: cubic}", "cc: cubic, colour: red}")
    assert problems(text) == [
        "s.yaml:7: duration: '20' is not a duration (expected e.g. 10ms, 1.5s, 250us)",
        "s.yaml:9: flows.bulk.colour: unknown key (valid: kind, from, to, start, duration, bytes, "
        "cc, window, length, parallel, reverse, rate, nodelay, mss, omit, connect_timeout, tool, count)",
    ]


def test_flows_and_monitors_are_checked_against_the_topology():
    text = BASE.replace("to: h2, cc: cubic}", "to: h3, cc: cubic, interval: 1s}") \
        .replace("link: s0-h2", "link: h1-s0")
    assert problems(text) == [
        "s.yaml:9: flows.bulk.interval: 'interval' does not apply to a tcp flow (it takes bytes, cc, "
        "connect_timeout, length, mss, nodelay, omit, parallel, rate, reverse, to, tool, window)",
        "s.yaml:9: flows.bulk.to: no node named 'h3' in the topology",
        "s.yaml:12: monitors[0].link: link h1-s0 is not emulated by netrig-link (give it a rate, "
        "delay or loss, or emulated: true): its queue cannot be watched",
    ]


def test_a_bad_swept_value_is_blamed_on_its_item():
    text = BASE.replace("flows.bulk.window: [16KB, 64KB]", "flows.bulk.window: [16KB, 64KB]\n"
                        "  links.s0-h2.delay: [10ms, 10]")
    assert problems(text) == ["s.yaml:16: sweep.links.s0-h2.delay[1]: 10: topology.links[1].delay: "
                              "'10' is not a duration (expected e.g. 10ms, 1.5s, 250us)"]


def test_bad_paths_in_sweep_and_set_are_refused():
    assert problems(BASE, sets=["flows.zz.window=3"]) == [
        "--set flows.zz.window=3: no flow named 'zz' (flows: bulk, rtt)"]
    assert problems(BASE, sets=["links.a-b.rate=1Mbit"]) == [
        "--set links.a-b.rate=1Mbit: no link 'a-b' in the topology (a link's name, or its ends as a-b)"]
    assert problems(BASE, sets=["nonsense"]) == [
        "--set nonsense: expected KEY=VALUE (e.g. --set links.r2-r3.delay=40ms)"]
    assert problems(BASE.replace("quick: {duration: 5s, repeat: 1}\n", ""), quick=True) == [
        "s.yaml:1: --quick: this scenario has no quick: section"]


def test_theory_per_flow_window_link_and_loaded_rtt():
    s = loads_scenario(BASE, "s.yaml")
    e = expectations(s.points[0])  # droptail, 16 KB
    assert e["bulk"].limit == "link" and e["bulk"].value == pytest.approx(1.5e6 * 1448 / 1514)
    assert e["rtt"].limit == "loaded path" and e["rtt"].value == pytest.approx(21.05, abs=0.01)
    assert e["rtt"].hi > e["rtt"].value + 50  # the 16 KB window's standing queue
    e = expectations(s.points[2])  # pie
    assert e["rtt"].hi == pytest.approx(e["rtt"].value + 15)  # PIE's default target
    # a window the run saw advertised replaces the buffer size given; its whole segments
    # are in flight (Nagle holds back the 552 bytes past one 1448-byte segment)
    small = expectations(s.points[0], windows={"bulk": 2000})
    assert small["bulk"].limit == "window (W/RTT)"
    rtt = analyse(make_plan(s.points[0].topology), "h1", "h2").data_rtt_s  # 20 ms + 8 ms of a frame
    assert small["bulk"].value == pytest.approx(1448 * 8 / rtt) and 0.028 < rtt < 0.029


@pytest.mark.parametrize("name", ["002-paths", "002-multiplex", "003-window", "004-bufferbloat", "003-window-lan",
                                  "003-loss-high", "003-delay-long", "000-realtime-size", "000-realtime-web",
                                  "005-real-hosts"])
def test_every_example_loads_with_and_without_quick(name):
    for quick in (False, True):
        s = load_scenario(ROOT / "examples" / f"{name}.yaml", quick=quick)
        assert s.runs >= 1
        if quick:
            assert s.estimate_s() < 120, s.estimate_s()


def test_count_makes_copies_of_a_flow_and_zero_leaves_it_out():
    text = BASE.replace("  rtt: {kind: ping", "  mice: {kind: udp, from: h1, to: h2, rate: 100Kbit, count: 2}\n"
                        "  rtt: {kind: ping").replace(
        "  flows.bulk.window: [16KB, 64KB]", "  flows.bulk.count: [0, 3]").replace(
        "monitors:\n", "monitors:\n  - {kind: tcp_info, flow: bulk}\n")
    s = loads_scenario(text, "s.yaml")
    none, three = s.points[0].spec, s.points[1].spec
    assert list(none.flows) == ["mice.1", "mice.2", "rtt"]
    assert [m.kind for m in none.monitors] == ["queue"]  # no bulk flow to watch
    assert list(three.flows) == ["bulk.1", "bulk.2", "bulk.3", "mice.1", "mice.2", "rtt"]
    assert three.monitors[0].flow == "bulk.1"
    # theory shares the bottleneck between every copy
    e = expectations(s.points[1])
    assert e["bulk.1"].value == pytest.approx(e["bulk.3"].value)
    assert "4 other flows" in e["bulk.1"].detail  # 2 more bulk, 2 mice


def test_count_zero_everywhere_is_no_flows():
    text = BASE.replace("cc: cubic}", "cc: cubic, count: 0}").replace(
        "interval: 100ms}", "interval: 100ms, count: 0}").replace(
        "  flows.bulk.window: [16KB, 64KB]\n", "")
    assert any("every count: is 0" in p for p in problems(text))
    assert any("count: 65 is above 64" in p
               for p in problems(BASE.replace("cc: cubic}", "cc: cubic, count: 65}")))


def test_a_star_path_sets_every_flow_that_takes_the_key():
    text = BASE.replace("  rtt: {kind: ping", "  mice: {kind: udp, from: h1, to: h2, rate: 100Kbit}\n"
                        "  rtt: {kind: ping").replace(
        "  flows.bulk.window: [16KB, 64KB]", "  flows.*.rate: [200Kbit, 1Mbit]")
    s = loads_scenario(text, "s.yaml", sets=["flows.*.start=2s"])
    f = s.points[1].spec.flows
    assert f["mice"].rate == "1Mbit" and f["bulk"].rate == "1Mbit"  # tcp takes rate too
    assert f["rtt"].rate is None  # ping does not
    assert all(x.start == "2s" for x in f.values())
    assert any("no flow takes 'command'" in p
               for p in problems(BASE, sets=["flows.*.command=ls"]))


def test_a_sweep_key_of_several_paths_moves_them_together():
    text = BASE.replace("  flows.bulk.window: [16KB, 64KB]",
                        "  flows.bulk.kind,flows.bulk.rate,flows.bulk.cc: [[tcp, null, reno], [udp, 1Mbit, null]]")
    s = loads_scenario(text, "s.yaml")
    assert s.runs == 4
    kinds = [(p.spec.flows["bulk"].kind, p.spec.flows["bulk"].rate) for p in s.points[:2]]
    assert kinds == [("tcp", None), ("udp", "1Mbit")]
    assert s.points[0].spec.flows["bulk"].cc == "reno" and s.points[1].spec.flows["bulk"].cc is None
    bad = problems(BASE.replace("  flows.bulk.window: [16KB, 64KB]",
                                "  flows.bulk.kind,flows.bulk.rate: [[tcp, null], udp]"))
    assert any("each value is a list of 2" in p for p in bad)


def test_parallel_connections_multiply_a_flows_own_limits():
    text = BASE.replace("rate: 1.5Mbit", "rate: 100Mbit").replace(
        "  flows.bulk.window: [16KB, 64KB]", "  flows.bulk.parallel: [1, 4]").replace(
        "cc: cubic}", "cc: cubic, window: 16KB}")
    s = loads_scenario(text, "s.yaml")
    one, four = (expectations(p)["bulk"] for p in s.points[:2])
    assert one.limit == four.limit == "window (W/RTT)"
    assert four.value == pytest.approx(4 * one.value)
    loss = loads_scenario(text.replace("queue: 100}", "queue: 100, loss: 2%}"), "s.yaml")
    one, four = (expectations(p)["bulk"] for p in loss.points[:2])
    assert four.value == pytest.approx(4 * one.value) and four.hi == pytest.approx(4 * one.hi)


def test_a_fetch_slow_starts_until_the_window_fills_the_path_then_runs_at_the_rate():
    """100 KB over 10 Mbit/s and 20 ms: the window holds the BDP (17 segments) from the
    second round trip, so the rest comes at TCP's goodput, not after two more round
    trips on top of the whole transfer (what netrig-perf's fetch and curl measured:
    0.135 s, where the old sum said 0.169 s)."""
    text = """\
topology:
  nodes: {h1: host, s0: switch, h2: host}
  links:
    - [h1, s0]
    - {a: s0, b: h2, rate: 10Mbit, delay: 10ms, queue: 100}
flows:
  page: {kind: fetch, from: h1, to: h2, size: 100KB, interval: 2s}
"""
    alone = expectations(loads_scenario(text, "s.yaml").points[0])["page"]
    p = loads_scenario(text + "  bulk: {kind: tcp, from: h1, to: h2}\n", "s.yaml").points[0]
    loaded = expectations(p)["page"]
    r = analyse(make_plan(p.topology), "h2", "h1")
    rtt, rate = r.data_rtt_s, r.tcp_goodput_bps
    idle = rtt + 2 * rtt + (100_000 - 10 * r.tcp.payload) * 8 / rate  # handshake, 2 rounds, the rest
    assert idle == pytest.approx(0.1353, abs=1e-3)
    assert alone.limit == "idle path" and alone.value == pytest.approx(idle)
    assert loaded.limit == "loaded path" and loaded.value == pytest.approx(idle) and loaded.hi > 2 * idle
