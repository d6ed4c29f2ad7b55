"""An unknown key or word is told the closest valid one(s) and the valid list."""

from __future__ import annotations

import pytest
from netrig.exp.spec.model import ScenarioError
from netrig.exp.spec.scenario import loads_scenario
from netrig.suggest import close, did_you_mean
from netrig.topo.load import loads
from netrig.topo.model import TopologyError

TOPO = """\
name: t
nodes: {h1: host, h2: host, s1: switch}
links:
  - {a: h1, b: s1, name: L1, rate: 10Mbit}
  - [s1, h2]
"""


def test_close_words():
    assert close("delya", ["rate", "delay", "loss"]) == ["delay"]
    assert close("windw", ["kind", "window", "to"]) == ["window"]  # not kind: far behind
    assert close("Delay", ["delay"]) == ["delay"]
    assert close("xyz", ["rate", "delay"]) == []
    assert did_you_mean("pingal", ["ping", "pingall", "perf"]) == "; did you mean pingall?"


def test_a_topology_typo_is_told_the_key_it_meant():
    with pytest.raises(TopologyError) as e:
        loads(TOPO.replace("rate: 10Mbit", "delya: 10ms"), "t.yaml")
    msg = str(e.value)
    assert msg.startswith("t.yaml:4: links[0].delya: unknown key; did you mean delay? (valid: rate, ")
    assert "emulated, cost, area)" in msg


def test_an_aqm_key_is_told_its_disciplines_own_keys():
    with pytest.raises(TopologyError) as e:
        loads(TOPO.replace("rate: 10Mbit", "rate: 10Mbit, aqm: {type: codel, targte: 5ms}"), "t.yaml")
    assert str(e.value) == ("t.yaml:4: links[0].aqm.targte: unknown key; did you mean target? "
                            "(valid: type, target, interval, ecn)")


SCENARIO = """\
name: s
topology: {nodes: {h1: host, h2: host}, links: [[h1, h2]]}
flows:
  bulk: {kind: tcp, from: h1, to: h2}
  rtt: {kind: ping, from: h1, to: h2}
monitors:
  - {kind: iface, node: h1}
"""


def scenario_problems(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as e:
        loads_scenario(text, "s.yaml")
    return e.value.problems


def test_a_flow_key_is_told_what_its_kind_takes():
    text = SCENARIO.replace("to: h2}\n  rtt", "to: h2, windw: 64KB}\n  rtt") \
        .replace("kind: ping, from: h1, to: h2", "kind: ping, from: h1, to: h2, intervl: 1s")
    assert scenario_problems(text) == [
        "s.yaml:4: flows.bulk.windw: unknown key; did you mean window? (valid: kind, from, to, "
        "start, duration, bytes, cc, window, length, parallel, reverse, rate, nodelay, mss, omit, "
        "connect_timeout, tool, count)",
        "s.yaml:5: flows.rtt.intervl: unknown key; did you mean interval? (valid: kind, from, to, "
        "start, duration, interval, size, count)"]


def test_monitor_and_top_level_keys_are_told_too():
    text = SCENARIO.replace("node: h1", "nod: h1") + "sweeps: {duration: [1s, 2s]}\n"
    assert scenario_problems(text) == [
        "s.yaml:7: monitors[0].nod: unknown key; did you mean node? (valid: kind, link, dir, flow, "
        "node, iface, interval, filter, snaplen, size, files, drops)",
        "s.yaml:8: sweeps: unknown key; did you mean sweep? (valid: name, description, topology, hosts, path, clocks, "
        "duration, interval, settle, repeat, seed, tolerance, flows, monitors, sweep, quick, events)"]


def test_a_live_change_key_is_told_the_key_it_meant():
    link = loads(TOPO, "t.yaml").link_named("L1")
    with pytest.raises(TopologyError, match=r"^link L1: delya: not a key of a link direction; "
                                            r"did you mean delay\? \(a live change sets rate, "):
        link.changed({"delya": "5ms"})
    with pytest.raises(TopologyError, match=r"^link L1: delya, rte: not a key of a link direction; "
                                            r"did you mean delay for delya, rate for rte\? "):
        link.changed({"delya": "5ms", "rte": "1Mbit"})
