"""The scenario file's layer (exp/spec): a value --set gave is blamed on that --set, never
on a line of the file; a flow whose timing measures an idle path is flagged with its
numbers; and reading a scenario asks nothing of this machine (exp/preflight does, for
`netrig run` only)."""

from __future__ import annotations

from pathlib import Path

import pytest
from netrig.exp.preflight import webtools
from netrig.exp.preflight.checks import preflight
from netrig.exp.spec.model import ScenarioError
from netrig.exp.spec.scenario import loads_scenario

BASE = """\
name: base
topology:
  nodes: {h1: host, h2: host}
  links:
    - {a: h1, b: h2, rate: 10Mbit, delay: 5ms}
duration: 10s
flows:
  bulk: {kind: tcp, from: h1, to: h2}
  rtt: {kind: ping, from: h1, to: h2, interval: 200ms, duration: 5s}
"""


def problems(text: str, sets: list[str]) -> list[str]:
    with pytest.raises(ScenarioError) as e:
        loads_scenario(text, "base.yaml", sets=sets)
    return e.value.problems


@pytest.mark.parametrize("given, said", [
    ("duraton=5s", "--set duraton=5s: duraton: unknown key; did you mean duration?"),
    ("flows.bulk.rate=-5Mbit", "--set flows.bulk.rate=-5Mbit: flows.bulk.rate: '-5Mbit' is negative"),
    ("links.h1-h2.delay=-3ms", "--set links.h1-h2.delay=-3ms: topology.links[0].delay: '-3ms' is negative"),
    ("flows.*.interval=-1s", "--set flows.*.interval=-1s: flows.rtt.interval:"),
])
def test_a_bad_value_given_by_set_is_blamed_on_the_set(given, said):
    (p,) = problems(BASE, [given])
    assert p.startswith(said), p
    assert "base.yaml" not in p


def test_a_bad_value_in_the_file_is_still_blamed_on_its_line_beside_a_good_set():
    text = BASE.replace("delay: 5ms", "delay: -5ms")
    (p,) = problems(text, ["duration=5s"])
    assert p.startswith("base.yaml:5: topology.links[0].delay:"), p


def test_a_ping_outliving_the_load_it_measures_is_flagged_with_the_numbers():
    scen = loads_scenario(BASE, "base.yaml", sets=["duration=1s"])
    assert scen.flags == ["flows.rtt (ping) runs 0–5 s, but the load beside it stops at 1 s: "
                          "4 of its 5 s measure a path without that load"]
    assert loads_scenario(BASE, "base.yaml").flags == []  # 0–5 s beside a 10 s load


def test_a_flow_past_every_flow_of_the_scenarios_duration_is_flagged():
    text = BASE.replace("interval: 200ms, duration: 5s", "interval: 200ms, duration: 5s")
    text = text.replace("bulk: {kind: tcp", "cmd: {kind: command, from: h1, command: 'true', start: 12s, "
                        "duration: 3s}\n  bulk: {kind: tcp")
    scen = loads_scenario(text, "base.yaml")
    assert scen.flags == ["flows.cmd (command) runs 12–15 s, past the end of every flow that takes the "
                          "scenario's duration of 10 s (bulk: the last ends at 10 s)"]


def test_sequential_flows_each_measured_beside_its_own_load_are_not_flagged():
    text = BASE.replace("rtt: {kind: ping, from: h1, to: h2, interval: 200ms, duration: 5s}",
                        "rtt: {kind: ping, from: h1, to: h2, interval: 200ms, start: 12s, duration: 5s}\n"
                        "  late: {kind: udp, from: h1, to: h2, rate: 1Mbit, start: 11s}")
    assert loads_scenario(text, "base.yaml").flags == []


def test_reading_a_scenario_asks_nothing_of_this_machine(monkeypatch):
    monkeypatch.setattr(webtools, "find", lambda program: None)  # no nginx, no curl
    text = BASE + "  page: {kind: web, from: h1, to: h2}\n"
    scen = loads_scenario(text, "base.yaml")  # a reader (report, plot) gets its scenario
    assert list(scen.points[0].spec.flows) == ["bulk", "rtt", "page"]
    with pytest.raises(ScenarioError) as e:  # `netrig run` is told before anything is built
        preflight(scen)
    (p,) = e.value.problems
    assert p.startswith("base.yaml:10: flows.page.kind: a web flow needs nginx") and "curl" in p


def test_a_missing_tool_is_blamed_on_the_sweep_item_that_asked_for_it(monkeypatch):
    monkeypatch.setattr(webtools, "find", lambda program: None if program == "openssl" else Path("/x"))
    text = BASE + "  page: {kind: web, from: h1, to: h2}\nsweep:\n  flows.page.tls: [false, true]\n"
    with pytest.raises(ScenarioError) as e:
        preflight(loads_scenario(text, "base.yaml"))
    (p,) = e.value.problems
    assert p.startswith("base.yaml:12: sweep.flows.page.tls[1]: True: flows.page.tls: a web flow "
                        "over TLS needs openssl"), p
