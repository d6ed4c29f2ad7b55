"""The link-spec contract: Python reads Rust's schema and writes the JSON netrig-link
reads, and each direction is parsed once.

The golden fixture (tests/fixtures/link-spec/directions.json) is shared: this file checks
that each direction, as a topology file gives it, becomes its spec; netrig-core's
`cargo test` checks that each spec parses, builds and serializes back unchanged."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from netrig import binary, units
from netrig.link import spec
from netrig.topo.load import loads
from netrig.topo.model import Topology, TopologyError

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = json.loads((ROOT / "tests/fixtures/link-spec/directions.json").read_text())


def test_the_schema_python_reads_is_the_one_netrig_link_prints() -> None:
    printed = subprocess.run([str(binary("netrig-link")), "schema"], capture_output=True, text=True,
                             check=True, timeout=30).stdout
    assert json.loads(printed) == spec.SCHEMA, (
        "python/netrig/link/schema.json differs from `netrig-link schema`: regenerate it "
        "(netrig-link schema > python/netrig/link/schema.json)")
    assert GOLDEN["version"] == spec.VERSION


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=[c["name"] for c in GOLDEN["cases"]])
def test_each_direction_becomes_its_golden_spec(case: dict) -> None:
    assert spec.resolve(case["file"]).spec() == case["spec"]


def test_numbers_are_si_and_exact() -> None:
    d = spec.resolve({"rate": "30Mbit", "delay": "1.19ms", "jitter": "250us", "loss": "0.5%",
                      "queue": "64KiB", "aqm": {"type": "pie", "target": "20ms"}})
    assert (d.rate_bps, d.delay_s, d.jitter_s, d.loss) == (30e6, 0.00119, 250e-6, 0.005)
    assert (d.queue_packets, d.queue_bytes, d.limit) == (None, 65536, (None, 65536))
    assert d.spec()["delay_ns"] == 1_190_000  # rounded, never truncated to 1189999
    assert d.aqm.target_s == 0.02 and d.aqm.get("tupdate") == 0.015  # RFC 8033's default
    # Each discipline's default limit is the emulator's, not a number Python keeps.
    assert spec.resolve({"aqm": "fq_codel"}).limit == (10240, None)
    assert spec.resolve({"aqm": "red"}).limit == (None, 400000)
    assert spec.resolve({}).limit == (1000, None)
    assert spec.resolve({"aqm": "droptail"}).aqm.target_s is None


def test_a_neutral_value_is_not_set() -> None:
    d = spec.resolve({"loss": "0%", "delay": "0ms", "jitter": 0, "aqm": "droptail", "overhead": 0})
    assert d.values == {} and d.plain and not d.shaped
    assert spec.resolve({"aqm": "pie"}).shaped is False  # a discipline alone fills no queue
    assert not spec.resolve({"aqm": "pie"}).plain
    assert spec.resolve({"delay": "1ms"}).shaped


@pytest.mark.parametrize(("text", "message"), [
    ({"rate": "101Gbit"}, "rate: '101Gbit' is outside 1kbit .. 100Gbit"),
    ({"overhead": 1001}, "overhead: '1001' is outside 0 .. 1000"),
    ({"loss": "1"}, "loss: '1' is not a percentage (expected e.g. 1%, 0.5%)"),
    ({"delay": "5"}, "delay: '5' is not a duration (expected e.g. 10ms, 1.5s, 250us)"),
    ({"queue": 0}, "queue: '0': a queue holds 1 .. 1000000 packets"),
    ({"aqm": {"type": "pie", "flows": 4}}, "aqm: pie does not take flows (it takes target, tupdate, "
                                           "alpha, beta, max_burst, ecn)"),
    ({"aqm": {"type": "fq_codel", "quantum": 10}}, "aqm: quantum: '10' is outside 64 .. 1048576"),
    ({"reorder_gap": 0}, "reorder_gap: '0' is outside 1 .. 1000000"),
    ({"colour": "red"}, "colour: unknown key"),
    # The schema's rules between keys, the ones netrig-link checks too.
    ({"reorder": "10%"}, "reorder: reordering needs a delay to jump ahead of"),
    ({"aqm": {"type": "red", "min_th": "90KB"}}, "aqm.min_th: RED's min_th must be below its max_th"),
    ({"trace": "t.txt", "overhead": 4}, "a trace's deliveries are whole frames: overhead applies to a rate"),
    ({"aqm": {"type": "red", "max_p": "2%"}},
     "aqm: max_p: '2%' is not a number (max_p: the drop probability at max_th, e.g. 0.02)"),
])
def test_a_value_outside_the_schema_is_named(text: dict, message: str) -> None:
    with pytest.raises(units.UnitError) as e:
        spec.resolve(text)
    assert str(e.value) == message


def test_every_key_of_the_schema_is_a_key_of_a_topology_file() -> None:
    """A key added to Rust's schema is a topology key with no Python edit."""
    samples = {"rate": "1Mbit", "duration": "1ms", "fraction": "1%", "bytes": "1KB", "count": 2,
               "number": 0.5, "bool": True, "path": "trace.txt", "queue": 50}
    given = {}
    for name, key in spec.KEYS.items():
        if key.kind in samples:
            given[name] = key.choices[-1] if key.choices else samples[key.kind]
        elif key.kind == "choice":
            given[name] = key.choices[-1]
    given.pop("trace"), given.pop("trace_repeat"), given.pop("loss")  # a rate; a gemodel instead
    given["gemodel"] = {"p": "1%", "r": "50%"}
    topo = Topology("t")
    topo.host("a"), topo.host("b")
    link = topo.link("a", "b", **given)
    assert set(link.direction(0).values) == set(given)
    for d in (0, 1):
        assert link.direction(d).spec()["reorder"] == {"p": 0.01, "gap": 2}


def test_each_direction_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading a topology and reading its directions again and again parses each text
    once; the numbers are kept."""
    calls: dict[str, int] = {}
    real = units.seconds

    def counting(v: object) -> float:
        calls[str(v)] = calls.get(str(v), 0) + 1
        return real(v)

    monkeypatch.setattr(units, "seconds", counting)
    spec._parse_scalar.cache_clear()
    topo = loads("nodes: {h1: host, s1: switch, h2: host}\n"
                 "links:\n"
                 "  - {a: h1, b: s1, rate: 10Mbit, delay: 7.25ms}\n"
                 "  - {a: s1, b: h2, rate: 10Mbit, delay: 7.25ms, b_to_a: {delay: 3.5ms}}\n")
    for _ in range(50):
        for link in topo.links:
            assert link.direction(0).delay_s == 0.00725
    assert calls == {"7.25ms": 1, "3.5ms": 1}


def test_a_direction_that_clashes_after_merging_is_an_error_at_its_key() -> None:
    with pytest.raises(TopologyError) as e:
        loads("nodes: {a: host, b: host}\n"
              "links: [{a: a, b: b, loss: 1%, a_to_b: {gemodel: {p: 1%, r: 5%}}}]\n")
    assert e.value.problems == ["<string>:2: links[0].a_to_b: give either loss or gemodel, not both"]


def test_a_rule_between_keys_is_named_at_its_line_before_anything_runs() -> None:
    with pytest.raises(TopologyError) as e:
        loads("nodes: {a: host, b: host}\n"
              "links:\n"
              "  - {a: a, b: b, rate: 10Mbit, reorder: 10%}\n")
    assert e.value.problems == [
        "<string>:3: links[0].a_to_b: reorder: reordering needs a delay to jump ahead of",
        "<string>:3: links[0].b_to_a: reorder: reordering needs a delay to jump ahead of"]


def _link(text: str):
    return loads("nodes: {h1: host, h2: host}\n" + text).links[0]


def test_a_live_change_of_one_parameter_keeps_each_directions_discipline() -> None:
    link = _link("links: [{a: h1, b: h2, rate: 20Mbit, aqm: {type: pie, target: 20ms}}]\n")
    link = link.changed({"aqm": {"type": "fq_codel", "flows": 64}}, "b_to_a")
    link = link.changed({"aqm": {"target": "10ms"}})  # netrig link set h1 h2 aqm.target=10ms
    assert link.direction(0).aqm == spec.Discipline("pie", {"target": 0.01})
    assert link.direction(1).aqm == spec.Discipline("fq_codel", {"flows": 64, "target": 0.01})
    # The discipline may come from the file's defaults.
    topo = loads("defaults: {link: {aqm: {type: codel, interval: 50ms}}}\n"
                 "nodes: {h1: host, h2: host}\nlinks: [{a: h1, b: h2, rate: 1Mbit}]\n")
    changed = topo.links[0].changed({"aqm": {"target": "2ms"}})
    assert changed.direction(1).aqm == spec.Discipline("codel", {"interval": 0.05, "target": 0.002})


def test_a_live_change_turns_off_what_its_key_excludes() -> None:
    topo = loads("defaults: {link: {loss: 1%}}\n"
                 "nodes: {h1: host, h2: host}\nlinks: [{a: h1, b: h2, rate: 1Mbit, a_to_b: {loss: 2%}}]\n")
    link = topo.links[0].changed({"gemodel": {"p": "1%", "r": "10%"}})
    for d in (0, 1):
        assert "loss" not in link.direction(d).values and link.direction(d).gemodel["r"] == 0.1
    link = link.changed({"loss": "3%"}, "b_to_a")
    assert link.direction(1).loss == 0.03 and link.direction(1).gemodel is None
    assert link.direction(0).gemodel is not None


def test_a_live_change_names_what_it_cannot_set() -> None:
    link = _link("links: [{a: h1, b: h2, rate: 1Mbit}]\n")
    with pytest.raises(TopologyError, match=r"link h1-h2: addr_a, name: not a key of a link direction"):
        link.changed({"name": "x", "addr_a": "10.9.9.9/24"})
    with pytest.raises(TopologyError, match=r"dir: 'up' is not a_to_b or b_to_a"):
        link.changed({"delay": "1ms"}, "up")
    with pytest.raises(TopologyError, match=r"^link h1-h2: b_to_a: reorder: reordering needs a delay"):
        link.changed({"reorder": "1%"}, "b_to_a")
    with pytest.raises(TopologyError, match=r"^link h1-h2: loss: '5' is not a percentage"):
        link.changed({"loss": "5"})


def test_theory_sees_the_queue_the_emulator_runs() -> None:
    """A rated link with no queue: given runs the discipline's default limit, and theory
    counts it (a full 1000-packet drop-tail queue at 10 Mbit/s is 1.2 s of waiting)."""
    from netrig.theory import analyse
    from netrig.topo.plan import make_plan

    for aqm, packets, nbytes in (("droptail", 1000, None), ("fq_codel", 10240, None), ("red", None, 400_000)):
        topo = loads("nodes: {h1: host, h2: host}\n"
                     f"links: [{{a: h1, b: h2, rate: 10Mbit, delay: 10ms, aqm: {aqm}}}]\n")
        hop = analyse(make_plan(topo), "h1", "h2").hops[0]
        assert (hop.queue_packets, hop.queue_bytes) == (packets, nbytes), aqm


def test_a_trace_is_where_the_topology_file_says_from_any_directory(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from netrig.topo.load import load

    (tmp_path / "lab" / "traces").mkdir(parents=True)
    (tmp_path / "lab" / "traces" / "up.trace").write_text("1\n2\n")
    (tmp_path / "lab" / "t.yaml").write_text(
        "nodes: {h1: host, h2: host}\nlinks: [{a: h1, b: h2, trace: traces/up.trace, delay: 5ms}]\n")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    link = load(tmp_path / "lab" / "t.yaml").links[0]
    want = str(tmp_path / "lab" / "traces" / "up.trace")
    assert link.direction(0).spec()["trace"]["path"] == want
    # A live change, from yet another directory, sends the same file.
    monkeypatch.chdir(tmp_path)
    assert link.changed({"delay": "10ms"}).direction(1).spec()["trace"]["path"] == want
    (tmp_path / "lab" / "t.yaml").write_text(
        "nodes: {h1: host, h2: host}\nlinks: [{a: h1, b: h2, trace: traces/down.trace}]\n")
    with pytest.raises(TopologyError, match=r"no trace file 'traces/down.trace' \(looked for .*/lab/traces/"):
        load(tmp_path / "lab" / "t.yaml")
