"""Topology files: a valid file loads; every invalid one names file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest
from netrig.topo.load import load, loads
from netrig.topo.model import Topology, TopologyError
from netrig.topo.plan import make_plan, path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# Line 8 is the first link of BASE + "  - ...".
BASE = """\
name: t
nodes:
  h1: host
  s1: switch
  r1: router
  r2: router
links:
"""
RATE = "(expected e.g. 30Mbit, 1.5Mbit/s, 500kbit, 1Gbit)"
AQMS = "(expected 'droptail', 'red', 'codel', 'pie' or 'fq_codel')"
LOTS = "'lots' is not a queue limit (expected packets, e.g. 100p, or a size, e.g. 64KB)"


def errors(text: str) -> list[str]:
    with pytest.raises(TopologyError) as e:
        loads(text, source="t.yaml")
    return e.value.problems


def link_errors(*links: str) -> list[str]:
    return errors(BASE + "".join(f"  - {item}\n" for item in links))


# A valid file.

VALID = """\
name: lab
prefix: lb
backend: kernel
addressing: {pool: 10.9.0.0/16, prefix_len: 24}
defaults:
  link: {queue: 100p}
nodes:
  h1: host
  s1: {kind: switch}
  r1: {kind: router}
  r2: router
  r3: router
links:
  - [h1, s1]
  - [s1, r1]
  - {a: r1, b: r2, name: L1, rate: 40Mbit, delay: 10ms, queue: 67p}
  - {a: r2, b: r3, rate: 30Mbit, a_to_b: {delay: 20ms}, b_to_a: {delay: 25ms}}
"""


def test_a_valid_file_loads() -> None:
    topo = loads(VALID, source="lab.yaml")
    assert isinstance(topo, Topology)
    assert (topo.name, topo.prefix, topo.source) == ("lab", "lb", "lab.yaml")
    assert topo.backend == "kernel"
    assert topo.addressing.pool == "10.9.0.0/16"
    assert topo.nodes == {"h1": "host", "s1": "switch", "r1": "router", "r2": "router",
                          "r3": "router"}
    assert [link.name for link in topo.links] == ["h1-s1", "s1-r1", "L1", "r2-r3"]


def test_directions_resolve_defaults_link_and_direction_values() -> None:
    topo = loads(VALID)
    plain, l1, l2 = topo.links[0].direction(0), topo.link_named("L1"), topo.link_named("r2", "r3")
    assert (plain.rate_bps, plain.delay_s, plain.queue_packets) == (None, 0.0, 100)
    for d in (0, 1):
        assert (l1.direction(d).rate_bps, l1.direction(d).delay_s) == (40e6, 0.010)
        assert l1.direction(d).queue_packets == 67  # the link's own beats the default
    assert (l2.direction(0).delay_s, l2.direction(1).delay_s) == (0.020, 0.025)
    assert l2.direction(1).rate_bps == 30e6 and l2.direction(1).queue_packets == 100


def test_only_true_and_false_are_booleans() -> None:
    topo = loads("nodes: {no: host, on: switch}\n"
                 "links: [{a: no, b: on, aqm: {type: codel, ecn: true}}]\n")
    assert topo.nodes == {"no": "host", "on": "switch"}
    assert topo.links[0].direction(0).aqm.given == {"ecn": True}
    with pytest.raises(TopologyError) as e:  # `yes` is text, and a switch wants true or false
        loads("nodes: {a: host, b: host}\nlinks: [{a: a, b: b, aqm: {type: codel, ecn: yes}}]\n")
    assert e.value.problems == ["<string>:2: links[0].aqm.ecn: 'yes' is not true or false"]


def test_load_reads_a_file_and_names_it(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(VALID)
    assert load(good).source == str(good)
    bad = tmp_path / "bad.yaml"
    bad.write_text(BASE + "  - {a: r1, b: r2, rate: 30Mbitt}\n")
    with pytest.raises(TopologyError) as e:
        load(bad)
    assert e.value.problems == [f"{bad}:8: links[0].rate: '30Mbitt' is not a rate {RATE}"]


def test_a_missing_file_is_a_topology_error(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match=r"nope\.yaml: cannot read the file"):
        load(tmp_path / "nope.yaml")


# The seed's topology.

def test_the_portfolio_example_loads_as_the_seed_describes_it() -> None:
    topo = load(EXAMPLES / "portfolio.yaml")
    kinds = list(topo.nodes.values())
    assert (kinds.count("host"), kinds.count("router"), kinds.count("switch")) == (9, 4, 2)
    shaped = {link.name: link.direction(0) for link in topo.links if link.shaped}
    assert {n: (d.rate_bps, d.delay_s, d.queue_packets) for n, d in shaped.items()} == {
        "L1": (40e6, 0.010, 67), "L2": (30e6, 0.020, 100), "L3": (20e6, 0.010, 33)}
    plan = make_plan(topo)
    subnets = {frozenset(i.node for i in s.ifaces): str(s.subnet) for s in plan.segments}
    assert subnets[frozenset({"h1", "h2", "h3", "r1"})] == "10.0.0.0/24"  # A
    assert subnets[frozenset({"r2", "h7"})] == "10.0.2.0/24"  # C
    assert subnets[frozenset({"r3", "h8"})] == "10.0.4.0/24"  # F
    assert subnets[frozenset({"h4", "h5", "h6", "r3"})] == "10.0.5.0/24"  # E
    assert subnets[frozenset({"r4", "h9"})] == "10.0.7.0/24"  # I

    def rtt(a: str, b: str) -> float:
        hops = path(plan, a, b) + path(plan, b, a)
        return round(sum(h.link.direction(h.d).delay_s for h in hops), 6)

    assert (rtt("h1", "h9"), rtt("h1", "h4"), rtt("h7", "h9")) == (0.080, 0.060, 0.060)


# Unknown keys: each at the key's own line, with the valid keys there and the closest.

TOP_KEYS = "(valid: name, prefix, backend, addressing, defaults, routing, nodes, links)"
DIRECTION_KEYS = ("(valid: rate, overhead, trace, trace_repeat, delay, jitter, "
                  "distribution, correlation, no_reorder, loss, loss_correlation, gemodel, ecn, duplicate, corrupt, reorder, reorder_gap, queue, aqm)")
LINK_KEYS = DIRECTION_KEYS[:-1] + ", a, b, name, addr_a, addr_b, a_to_b, b_to_a, emulated, cost, area)"

def test_unknown_key_at_top_level() -> None:
    assert errors("name: t\nnodez: {h1: host}\nnodes: {h1: host}\n") == [
        f"t.yaml:2: nodez: unknown key; did you mean nodes? {TOP_KEYS}"]


def test_unknown_key_in_a_node() -> None:
    text = BASE.replace("r1: router", "r1: {kind: router, colour: red}") + "  - [h1, s1]\n"
    assert errors(text) == [
        "t.yaml:5: nodes.r1.colour: unknown key (valid: kind, ospf, bgp, frr)"]


def test_unknown_key_in_a_link() -> None:
    assert link_errors("[h1, s1]", "{a: r1, b: r2, bandwidth: 10Mbit}") == [
        f"t.yaml:9: links[1].bandwidth: unknown key {LINK_KEYS}"]


def test_unknown_key_in_a_direction_block() -> None:
    text = BASE + "  - a: r1\n    b: r2\n    a_to_b:\n      delay: 5ms\n      dealy: 5ms\n"
    assert errors(text) == [
        f"t.yaml:12: links[0].a_to_b.dealy: unknown key; did you mean delay? {DIRECTION_KEYS}"]


def test_unknown_key_in_an_aqm_block() -> None:
    text = BASE + "  - a: r1\n    b: r2\n    aqm:\n      type: pie\n      targte: 15ms\n"
    assert errors(text) == ["t.yaml:12: links[0].aqm.targte: unknown key; did you mean target? "
                            "(valid: type, target, tupdate, alpha, beta, max_burst, ecn)"]


# Units and values.

def test_a_rate_with_a_typo() -> None:
    assert link_errors("{a: r1, b: r2, rate: 30Mbitt}") == [
        f"t.yaml:8: links[0].rate: '30Mbitt' is not a rate {RATE}"]


def test_a_delay_without_a_unit() -> None:
    assert link_errors("{a: r1, b: r2, delay: 10}") == [
        "t.yaml:8: links[0].delay: '10' is not a duration (expected e.g. 10ms, 1.5s, 250us)"]


def test_a_queue_that_is_not_a_limit() -> None:
    assert link_errors("{a: r1, b: r2, queue: lots}") == [f"t.yaml:8: links[0].queue: {LOTS}"]


def test_a_percentage_without_its_sign() -> None:
    assert link_errors("{a: r1, b: r2, loss: 5}") == [
        "t.yaml:8: links[0].loss: '5' is not a percentage (expected e.g. 1%, 0.5%)"]


def test_a_negative_delay() -> None:
    assert link_errors("{a: r1, b: r2, delay: -5ms}") == [
        "t.yaml:8: links[0].delay: '-5ms' is negative (it should be 0s or more)"]


def test_loss_above_100_percent() -> None:
    assert link_errors("{a: r1, b: r2, loss: 120%}") == [
        "t.yaml:8: links[0].loss: '120%' is outside 0% .. 100%"]


@pytest.mark.parametrize("rate", ["0bit", "101Gbit"])
def test_a_rate_out_of_range(rate: str) -> None:
    """The range is the link spec's (netrig-link's), not one of Python's own."""
    assert link_errors(f"{{a: r1, b: r2, rate: {rate}}}") == [
        f"t.yaml:8: links[0].rate: '{rate}' is outside 1kbit .. 100Gbit"]


def test_an_aqm_parameter_the_discipline_does_not_take() -> None:
    takes = "(it takes target, tupdate, alpha, beta, max_burst, ecn)"
    assert link_errors("{a: r1, b: r2, aqm: {type: pie, interval: 100ms}}") == [
        f"t.yaml:8: links[0].aqm: pie does not take interval {takes}"]


def test_an_unknown_aqm_gives_one_line_not_one_per_union_branch() -> None:
    assert link_errors("{a: r1, b: r2, aqm: pi}") == [
        f"t.yaml:8: links[0].aqm: 'pi' is not a queue discipline {AQMS}"]
    assert link_errors("{a: r1, b: r2, aqm: {type: pi}}") == [
        f"t.yaml:8: links[0].aqm.type: 'pi' is not a queue discipline {AQMS}"]


def test_an_unknown_node_kind_in_either_form() -> None:
    kinds = "(expected 'host', 'switch' or 'router')"
    assert errors(BASE.replace("h1: host", "h1: hots") + "  - [h1, s1]\n") == [
        f"t.yaml:3: nodes.h1: 'hots' is not a node kind {kinds}"]
    assert errors(BASE.replace("s1: switch", "s1: {kind: swich}") + "  - [h1, s1]\n") == [
        f"t.yaml:4: nodes.s1.kind: 'swich' is not a node kind {kinds}"]


def test_a_node_named_by_a_number() -> None:
    assert errors("nodes:\n  h1: host\n  1: host\n") == [
        "t.yaml:3: nodes[1]: a node name is text: quote it ('1')"]


def test_a_missing_link_end() -> None:
    assert link_errors("{a: r1}") == ["t.yaml:8: links[0].b: missing (this key is required)"]


def test_every_problem_is_reported_in_line_order() -> None:
    bad = ("{a: r1, b: r2, rate: 30Mbitt, colour: red}", "[h1]", "{a: r1, b: r2, delay: 10}")
    assert link_errors(*bad) == [
        f"t.yaml:8: links[0].rate: '30Mbitt' is not a rate {RATE}",
        f"t.yaml:8: links[0].colour: unknown key {LINK_KEYS}",
        "t.yaml:9: links[1]: a short-form link is [a, b], two node names; got ['h1']",
        "t.yaml:10: links[2].delay: '10' is not a duration (expected e.g. 10ms, 1.5s, 250us)"]


# Whole-topology checks.

def test_a_link_to_a_node_that_does_not_exist() -> None:
    assert link_errors("[h1, s1]", "[s1, r9]", "{a: r8, b: r2}") == [
        "t.yaml:9: links[1].b: no node named 'r9'",
        "t.yaml:10: links[2].a: no node named 'r8'"]


def test_the_same_two_nodes_linked_twice() -> None:
    assert link_errors("[h1, s1]", "{a: s1, b: h1, delay: 5ms}") == [
        "t.yaml:9: links[1]: a second link between s1 and h1 (first: links[0])"]


def test_two_links_with_one_name() -> None:
    assert link_errors("{a: h1, b: s1, name: L1}", "{a: r1, b: r2, name: L1}") == [
        "t.yaml:9: links[1].name: a second link named 'L1'"]


def test_a_link_that_clashes_with_the_defaults_says_so_in_one_line() -> None:
    text = "defaults: {link: {rate: 10Mbit}}\nnodes: {h1: host, h2: host}\nlinks:\n"
    text += "  - {a: h1, b: h2, trace: t.trace}\n"
    assert errors(text) == [
        "t.yaml:4: links[0].a_to_b: give either rate or trace, not both",
        "t.yaml:4: links[0].b_to_a: give either rate or trace, not both"]


def test_a_loop_of_switches() -> None:
    text = "nodes: {s1: switch, s2: switch, s3: switch}\nlinks: [[s1, s2], [s2, s3],\n  [s3, s1]]\n"
    assert errors(text) == [
        "t.yaml:3: links[2]: link s3-s1 closes a loop of switches (no spanning tree runs here)"]


# What YAML itself hides or refuses.

def test_a_node_defined_twice() -> None:
    text = "nodes:\n  h1: host\n  s1: switch\n  h1: router\nlinks: [[h1, s1]]\n"
    assert errors(text) == ["t.yaml:4: nodes.h1: defined twice (first on line 2)"]


def test_a_key_given_twice_in_a_link() -> None:
    assert link_errors("{a: r1, b: r2, rate: 10Mbit, rate: 20Mbit}") == [
        "t.yaml:8: links[0].rate: defined twice (first on line 8)"]


def test_a_yaml_syntax_error() -> None:
    assert link_errors("{a: r1, b: r2", "[h1, s1]") == [
        "t.yaml:9: YAML: expected ',' or '}', but got '[' (while parsing a flow mapping on line 8)"]


def test_a_tab_in_the_indentation() -> None:
    assert errors("nodes:\n\th1: host\n") == [
        "t.yaml:2: YAML: found character '\\t' that cannot start any token"]


@pytest.mark.parametrize("text", ["", "# nothing yet\n", "~\n"])
def test_an_empty_file(text: str) -> None:
    assert errors(text) == ["t.yaml:1: the file is empty (it needs at least nodes:)"]


def test_an_empty_section() -> None:
    assert errors("nodes:\n  h1: host\nlinks:\n") == [
        "t.yaml:3: links: should be a list (- item, or [a, b, ...]), not nothing"]


def test_a_file_that_is_not_a_mapping() -> None:
    assert errors("- h1\n- s1\n") == [
        "t.yaml:1: the file should be a mapping with nodes: and links: (it holds a list)"]


def test_a_short_form_link_with_three_names() -> None:
    assert link_errors("[h1, s1]", "[h1, s1, r1]") == [
        "t.yaml:9: links[1]: a short-form link is [a, b], two node names; got ['h1', 's1', 'r1']"]


def test_a_link_that_is_neither_form() -> None:
    assert link_errors("h1-s1") == [
        "t.yaml:8: links[0]: a link is [a, b] or {a: ..., b: ..., ...}; got 'h1-s1'"]


def test_nothing_is_built_when_the_schema_fails() -> None:
    # A dangling name beside a schema error: only the schema error (the second pass,
    # on a built topology, never runs).
    assert link_errors("[h1, s9]", "{a: r1, b: r2, queue: lots}") == [
        f"t.yaml:9: links[1].queue: {LOTS}"]
