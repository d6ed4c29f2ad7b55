"""The seed experiments' example scenarios: each sweep expands to the seed's cases, and
theory for each case is the seed's physics (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest
from netrig.exp.expect import expectations
from netrig.exp.results import case_name, describe
from netrig.exp.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
GOODPUT = 1448 / 1514  # TCP payload per wire byte on a 1500-byte MTU link (as theory counts)


def example(name: str, quick: bool = False):
    return load_scenario(ROOT / "examples" / f"{name}.yaml", quick=quick)


def case_of(point) -> str:
    (key, value), = point.params.items()
    return case_name(key, value) or ""


def pairs(point) -> dict[str, tuple[str, str, int]]:
    """The point's TCP flows: name -> (from, to, connections), flows left out missing."""
    return {n: (f.src, f.to, f.parallel) for n, f in point.spec.flows.items()
            if f.kind == "tcp" and f.count}


def test_002_multiplex_runs_every_case_of_test_cases_4_and_5():
    s = example("002-multiplex")
    got = {case_of(p)[:2]: pairs(p) for p in s.points}
    assert got == {
        "4a": {"a": ("h1", "h4", 1), "b": ("h2", "h5", 1)},
        "4b": {"a": ("h1", "h4", 1), "b": ("h2", "h5", 1), "c": ("h3", "h6", 1)},
        "4c": {"a": ("h1", "h4", 1), "b": ("h7", "h9", 1)},
        "4d": {"a": ("h1", "h4", 1), "b": ("h8", "h9", 1)},
        "5:": {"a": ("h1", "h4", 2), "b": ("h2", "h5", 1), "c": ("h3", "h6", 1)},
    }
    for p in s.points:  # a ping beside every pair, between the pair's own hosts
        pings = {(f.src, f.to) for f in p.spec.flows.values() if f.kind == "ping" and f.count}
        assert pings == {(a, b) for a, b, _ in pairs(p).values()}
    assert len(example("002-multiplex", quick=True).points) == 5


def test_002_multiplex_theory_is_each_cases_max_min_share():
    shares = {"4a": {"a": 15, "b": 15}, "4b": {"a": 10, "b": 10, "c": 10},
              "4c": {"a": 15, "b": 15}, "4d": {"a": 30, "b": 20},
              "5:": {"a": 15, "b": 7.5, "c": 7.5}}
    for p in example("002-multiplex").points:
        e = expectations(p)
        for flow, mbit in shares[case_of(p)[:2]].items():
            assert e[flow].value == pytest.approx(mbit * 1e6 * GOODPUT, rel=1e-3), (case_of(p), flow)
        # ping: base RTT up to base + the queue where the pair's share is set
        base, top = (20, 40) if case_of(p).startswith("4d") else (60, 100)
        assert e["ping_b"].value == pytest.approx(base, abs=0.2)
        assert e["ping_b"].hi == pytest.approx(top, abs=0.6), case_of(p)


def test_a_case_named_by_a_joint_key_is_shown_by_its_name():
    key = "description,flows.b.count"
    assert describe({key: ["4a: h1-h4 & h2-h5", 0]}, [key]) == "4a: h1-h4 & h2-h5"
    assert describe({"x.kind,x.rate": ["udp", "1Mbit"]}, ["x.kind,x.rate"]) == "kind=udp, rate=1Mbit"
    assert case_name("flows.a.count", 1) is None
