"""Bounded, checked input: a hostile or huge topology or scenario file is refused with a
FILE:LINE error before it can take the machine, and everything a build or a run would
trip over later (a missing trace, a negative start, a bad lab prefix) is found when the
file loads, at its line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from netrig.cli import main
from netrig.exp.spec.model import ScenarioError
from netrig.exp.spec.scenario import load_scenario, loads_scenario
from netrig.topo.load import load, loads
from netrig.topo.model import TopologyError

ROOT = Path(__file__).resolve().parents[2]
TOPO = "name: lab\nnodes: {h1: host, h2: host}\nlinks:\n  - [h1, h2]\n"
SCENARIO = """\
name: s
topology:
  nodes: {h1: host, h2: host}
  links: [[h1, h2]]
duration: 5s
flows:
  bulk: {kind: tcp, from: h1, to: h2%s}
"""
FLOW_KINDS = "(expected 'tcp', 'udp', 'probe', 'ping', 'fetch', 'web' or 'command')"


def errors(text: str) -> list[str]:
    with pytest.raises(TopologyError) as e:
        loads(text, source="t.yaml")
    return e.value.problems


def scenario_errors(text: str, **kw) -> list[str]:
    with pytest.raises(ScenarioError) as e:
        loads_scenario(text, "s.yaml", **kw)
    return e.value.problems


def bomb(levels: int) -> str:
    """Billion laughs: each level is a list of ten aliases of the one before."""
    out = [TOPO, "x0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    out += [f"x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(out) + "\n"


# Alias bombs, nesting, size.

def test_an_alias_bomb_is_refused_at_its_alias_at_once(tmp_path: Path) -> None:
    # In a child with 1 GiB of address space and 60 s, so that a loader that expands the
    # bomb fails this test instead of taking the machine (main took 3 GB in a minute).
    f = tmp_path / "bomb.yaml"
    f.write_text(bomb(10))
    probe = ("import resource, sys, time\n"
             "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
             "from netrig.topo.load import load\n"
             "from netrig.topo.model import TopologyError\n"
             "t = time.monotonic()\n"
             "try:\n"
             f"    load({str(f)!r})\n"
             "except TopologyError as e:\n"
             "    print(f'{time.monotonic() - t:.3f}'); print(e)\n")
    try:
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                             timeout=60, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail("the bomb was not refused in 60 s")
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and len(lines) == 2, out.stderr[-500:]
    took, message = float(lines[0]), lines[1]
    assert took < 5, f"refused after {took:.1f} s"
    assert message == (f"{f}:11: YAML: the alias *a4 stands for 111111 values, and with it the "
                       "document holds more than 200000 once its aliases are expanded (an "
                       "alias bomb?): netrig reads at most that")


def test_aliases_that_expand_to_a_modest_size_still_load() -> None:
    # Not a defect: that aliases and merge keys keep working under the bounds.
    text = TOPO.replace("  - [h1, h2]\n", "  - {a: h1, b: h2, <<: *lk, delay: 5ms}\n")
    topo = loads("defaults: {link: &lk {rate: 10Mbit}}\n" + text)
    assert topo.links[0].direction(0).rate_bps == 10e6
    assert errors(bomb(5)) == [f"t.yaml:{6 + i}: x{i}: unknown key (valid: name, prefix, backend, "
                               "addressing, defaults, routing, nodes, links)" for i in range(5)]


def test_a_recursive_alias_is_refused_at_its_line() -> None:
    assert errors("name: r\nnodes: &n {h1: host, h2: *n}\n") == [
        "t.yaml:2: YAML: the alias *n is inside its own anchor &n: it would repeat forever"]


def test_deep_nesting_is_refused_at_its_line() -> None:
    text = "name: deep\nnodes: {h1: host}\nlinks: " + "[" * 5000 + "]" * 5000 + "\n"
    assert errors(text) == ["t.yaml:3: YAML: nested more than 64 deep (netrig reads at most that)"]


def test_an_oversize_topology_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    f = tmp_path / "big.yaml"
    # Valid YAML up front, a YAML error at the end: only a parser would see the error.
    f.write_text(TOPO + ("# " + "x" * 78 + "\n") * 20_000 + "oops: [unclosed\n")
    size = f.stat().st_size
    with pytest.raises(TopologyError) as e:
        load(f)
    assert e.value.problems == [
        f"{f}: the file holds {size} bytes; netrig reads at most 1048576 (1 MiB)"]
    with pytest.raises(TopologyError, match=r"t\.yaml: the text holds \d+ bytes; netrig reads "
                                            r"at most 1048576 \(1 MiB\)"):
        loads(f.read_text(), source="t.yaml")


def test_an_oversize_scenario_or_its_topology_file_is_refused(tmp_path: Path) -> None:
    pad = ("# " + "x" * 78 + "\n") * 14_000
    big = tmp_path / "big.yaml"
    big.write_text(SCENARIO % "" + pad)
    with pytest.raises(ScenarioError) as e:
        load_scenario(big)
    assert e.value.problems == [f"{big}: the file holds {big.stat().st_size} bytes; netrig "
                                "reads at most 1048576 (1 MiB)"]
    topo = tmp_path / "topo.yaml"
    topo.write_text(TOPO + pad)
    s = tmp_path / "s.yaml"
    s.write_text("topology: topo.yaml\nflows:\n  bulk: {kind: tcp, from: h1, to: h2}\n")
    with pytest.raises(ScenarioError) as e:
        load_scenario(s)
    assert e.value.problems == [f"{s}:1: topology: {topo}: the topology file holds "
                                f"{topo.stat().st_size} bytes; netrig reads at most 1048576 (1 MiB)"]


def test_a_set_value_is_read_with_the_same_bounds() -> None:
    value = "[&a [x, x, x, x, x, x, x, x, x, x], " + ", ".join(
        f"&{c} [{', '.join([f'*{p}'] * 10)}]" for p, c in zip("abcdefg", "bcdefgh")) + "]"
    assert scenario_errors(SCENARIO % "", sets=[f"description={value}"]) == [
        f"--set description: the value, at column {value.index('*e') + 1}: the alias *e "
        "stands for 111111 values, "
        "and with it the document holds more than 200000 once its aliases are expanded (an "
        "alias bomb?): netrig reads at most that"]


def test_a_sweep_of_too_many_points_is_refused_before_each_is_checked() -> None:
    text = SCENARIO % "" + ("sweep:\n  flows.bulk.window: [%s]\n  flows.bulk.length: [%s]\n"
                            % (", ".join(f"{k}KB" for k in range(1, 41)),
                               ", ".join(f"{k}KB" for k in range(1, 41))))
    assert scenario_errors(text) == [
        "s.yaml:8: sweep: 40 x 40 = 1600 points; a scenario sweeps at most 1000"]


# Everything a build or a run would trip over, at load, at its line.

def test_a_negative_start_is_refused_at_its_line() -> None:
    assert scenario_errors(SCENARIO % ", start: -5s") == [
        "s.yaml:7: flows.bulk.start: '-5s' is negative (it should be 0s or more)"]


def test_other_times_are_not_negative_or_zero_where_they_must_not_be() -> None:
    text = (SCENARIO % ", omit: -1s") + "settle: -1s\nmonitors:\n  - {kind: iface, node: h1, interval: 0s}\n"
    text = text.replace("  rtt", "")
    text += "interval: 0ms\n"
    assert scenario_errors(text) == [
        "s.yaml:7: flows.bulk.omit: '-1s' is negative (it should be 0s or more)",
        "s.yaml:8: settle: '-1s' is negative (it should be 0s or more)",
        "s.yaml:10: monitors[0].interval: '0s' should be more than 0",
        "s.yaml:11: interval: '0ms' should be more than 0"]
    assert scenario_errors(SCENARIO % ", kind: ping, interval: -10ms".replace(", kind: ping", "")
                           .replace("kind: tcp", "kind: ping")) == [
        "s.yaml:7: flows.bulk.interval: '-10ms' should be more than 0"]


def test_a_missing_trace_file_is_refused_at_load_at_its_line(tmp_path: Path) -> None:
    nope = tmp_path / "nope.trace"
    text = TOPO.replace("  - [h1, h2]\n", f"  - {{a: h1, b: h2, trace: {nope}}}\n")
    assert errors(text) == [f"t.yaml:4: links[0].trace: no trace file '{nope}' (looked for {nope})"]
    # Blamed on the key that named it: a direction's, or the file's default.
    text = TOPO.replace("  - [h1, h2]\n", "  - a: h1\n    b: h2\n"
                                           f"    b_to_a: {{trace: {nope}}}\n")
    assert errors(text) == [
        f"t.yaml:6: links[0].b_to_a.trace: no trace file '{nope}' (looked for {nope})"]
    text = f"defaults:\n  link: {{trace: {tmp_path}}}\n" + TOPO
    assert errors(text) == [
        f"t.yaml:2: defaults.link.trace: '{tmp_path}' is not a file (a trace is a mahimahi "
        "file, one line per delivery)"]
    nope.write_text("1\n2\n")  # present: the topology loads
    assert loads(TOPO.replace("  - [h1, h2]\n", f"  - {{a: h1, b: h2, trace: {nope}}}\n"))


def test_a_bad_lab_prefix_is_refused_at_its_line() -> None:
    assert errors(TOPO.replace("name: lab\n", "name: lab\nprefix: Bad-Prefix\n")) == [
        "t.yaml:2: prefix: 'Bad-Prefix' is not a lab prefix: use 1-15 lowercase letters, "
        "digits or _, starting with a letter or digit (it starts every namespace the lab "
        "creates)"]


def test_netrig_up_names_the_line_of_a_name_that_cannot_be_the_prefix(tmp_path: Path,
                                                                      capsys) -> None:
    # Refused while loading, before the builder (nothing is created either way).
    f = tmp_path / "t.yaml"
    f.write_text(TOPO.replace("name: lab", "name: My-Lab"))
    assert main(["up", str(f)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"netrig: error: {f}:1: name: 'My-Lab' is also the lab's prefix (the file gives no "
        "prefix:), and a prefix is 1-15 lowercase letters, digits or _: add prefix: to the "
        "file, or give --prefix")


def test_a_flow_kind_typo_is_called_a_flow_kind() -> None:
    assert scenario_errors((SCENARIO % "").replace("kind: tcp", "kind: tcpp")) == [
        f"s.yaml:7: flows.bulk.kind: 'tcpp' is not a flow kind {FLOW_KINDS}"]
    text = SCENARIO % "" + "monitors:\n  - {kind: qeue, link: h1-h2}\n"
    assert scenario_errors(text) == [
        "s.yaml:9: monitors[0].kind: 'qeue' is not a monitor kind (expected 'queue', "
        "'tcp_info', 'iface' or 'capture')"]
    # A node's kind is still a node kind.
    assert errors(TOPO.replace("h2: host", "h2: hots")) == [
        "t.yaml:2: nodes.h2: 'hots' is not a node kind (expected 'host', 'switch' or 'router')"]
