"""The 002 portfolio topology without a lab: its plan, `netrig explain`'s predictions for
it, and `netrig up` refusing a bad file before it builds anything (the guard in
tests/conftest.py fails the test if it starts to)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from netrig.cli import main
from netrig.topo.load import load
from netrig.topo.plan import make_plan

PORTFOLIO = Path(__file__).resolve().parents[2] / "examples" / "portfolio.yaml"


def test_portfolio_plan_matches_the_seed():
    plan = make_plan(load(PORTFOLIO))
    assert str(plan.addr("h1")).startswith("10.0.0.")
    assert {l.name for l in plan.topo.links if l.shaped} == {"L1", "L2", "L3"}


def test_explain_prints_the_portfolio_predictions(capsys):
    assert main(["explain", str(PORTFOLIO), "h1", "h9"]) == 0
    out = capsys.readouterr().out
    bottleneck = re.search(r"^Bottleneck +(\S+) \((\S+) → (\S+)\) at ([0-9.]+) Mbit/s$", out, re.M)
    assert bottleneck and bottleneck.groups() == ("L3", "r3", "r4", "20"), out
    # h1 -> h9 crosses L1 (40 Mbit/s, 10 ms), L2 (30, 20 ms), L3 (20, 10 ms): 80 ms there
    # and back, plus a 98-byte ping frame serialized on each shaped link each way.
    serializing_ms = 2 * 98 * 8 * (1 / 40e6 + 1 / 30e6 + 1 / 20e6) * 1e3
    propagation = re.search(r"^Base RTT +2 × \(10 \+ 20 \+ 10\) ms = ([0-9.]+) ms propagation$", out, re.M)
    assert propagation and float(propagation.group(1)) == 80.0, out
    ping = re.search(r"= ([0-9.]+) ms \(what ping shows, idle\)$", out, re.M)
    assert ping and float(ping.group(1)) == pytest.approx(80 + serializing_ms, abs=0.005), out
    goodput = re.search(r"^Goodput +TCP: 20 Mbit/s × 1448/1514 = ([0-9.]+) Mbit/s$", out, re.M)
    assert goodput and float(goodput.group(1)) == pytest.approx(20 * 1448 / 1514, abs=0.005), out


def test_up_names_file_line_and_key_of_a_bad_topology(tmp_path, monkeypatch, capsys):
    f = tmp_path / "bad.yaml"
    f.write_text("nodes:\n  a: host\n  b: host\nlinks:\n  - {a: a, b: b, rate: 30Mbitt}\n")
    monkeypatch.setattr(os, "geteuid", lambda: 0)  # past the root check: the file is refused first
    assert main(["up", str(f)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"netrig: error: {f}:5: "), err
    assert "rate" in err and "30Mbitt" in err, err
