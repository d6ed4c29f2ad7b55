"""netrig.exp.kinds.perfjson, netrig's one reader of netrig-perf's -J document, against the
fixtures netrig-perf's own snapshot tests write and check
(crates/netrig-perf/src/output/extras_snapshots.rs): tests/fixtures/perf-json/*.json, one
per extra, and before/*.json, documents netrig-perf printed before its extras were
typed (main at d4b81ae; no netrig.schema). A key the Rust side adds, renames or
removes changes a fixture, and the key-set test below fails until the dataclass
follows."""

from __future__ import annotations

import copy
import dataclasses
import json
import typing
from pathlib import Path

import pytest
from netrig.exp.kinds import perfjson as pj

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "perf-json"


def fixture(name: str):
    return json.loads((FIXTURES / name).read_text())


# Each extra's fixture, the key it sits under in the fixture (if any), and its dataclass.
EXTRAS = {
    "netrig.json": (None, pj.Netrig),
    "netrig-bare.json": (None, pj.Netrig),
    "tcp-info.json": (None, pj.TcpInfo),
    "pacing.json": (None, pj.Pacing),
    "probe-interval.json": ("probe", pj.ProbeWindow),
    "probe-end.json": ("probe", pj.Probe),
    "rr-interval.json": ("rr", pj.RrWindow),
    "rr-end.json": ("rr", pj.Rr),
    "udp-interval-extras.json": (None, pj.UdpIntervalExtras),
    "udp-end-extras.json": (None, pj.UdpEndExtras),
}


def test_every_fixture_of_the_rust_side_has_its_python_type():
    assert sorted(p.name for p in FIXTURES.glob("*.json")) == sorted(EXTRAS)


def _dataclass_of(hint):
    hint = pj._unwrap(hint)
    if typing.get_origin(hint) is list:
        return _dataclass_of(typing.get_args(hint)[0])
    return hint if dataclasses.is_dataclass(hint) else None


def assert_same_keys(value, cls, where):
    """The fixture's keys are the dataclass's fields, at every level."""
    names = {f.name for f in dataclasses.fields(cls)}
    assert set(value) == names or (not value and cls is pj.Netrig), (
        f"{where}: the fixture has {sorted(set(value) - names)} that {cls.__name__} lacks, "
        f"and {cls.__name__} has {sorted(names - set(value))} that the fixture lacks")
    hints = pj._hints(cls)
    for key, v in value.items():
        sub = _dataclass_of(hints[key])
        if sub is None or v is None:
            continue
        for i, x in enumerate(v if isinstance(v, list) else [v]):
            assert_same_keys(x, sub, f"{where}.{key}[{i}]")


@pytest.mark.parametrize("name", sorted(EXTRAS))
def test_the_dataclasses_have_the_keys_netrig_perf_writes(name):
    key, cls = EXTRAS[name]
    value = fixture(name)
    if key:
        assert list(value) == [key]
        value = value[key]
    if name == "netrig-bare.json":
        assert value == {"schema": pj.SCHEMA}
        return
    assert_same_keys(value, cls, name)
    assert pj._problem(value, cls, name) is None
    built = pj._build(value, cls)
    assert dataclasses.asdict(built) == value if cls is not pj.Netrig else built.schema == pj.SCHEMA


def document():
    """A document of every extra, as netrig-perf writes them."""
    return {"start": {"sndbuf_actual": 16384},
            "intervals": [fixture("probe-interval.json"), fixture("rr-interval.json"),
                          {"streams": [fixture("udp-interval-extras.json")], "sum": {"end": 0.5}}],
            "end": {**fixture("probe-end.json"), **fixture("rr-end.json"),
                    "streams": [{"udp": fixture("udp-end-extras.json")},
                                {"sender": {"mean_rtt": 50, "pacing": fixture("pacing.json")}}]},
            "netrig": fixture("netrig.json")}


def test_a_document_of_every_extra_reads_through_the_accessors():
    doc, problem = pj.parse(json.dumps(document()))
    assert problem is None and doc == document()
    probe = pj.probe(doc)
    assert probe.rtt_ms.mean == fixture("probe-end.json")["probe"]["rtt_ms"]["mean"]
    rows = probe.rows()
    assert [r.seq for r in rows] == [1, 2, 3, 4]
    assert [r.rtt_ms for r in rows] == [1.5, None, 2.5, 0.5]
    assert rows[0] == pj.ProbeSample(1, 0.0, 1.5, 0.6000000000000001, 0.8999999999999999)
    rr = pj.rr(doc)
    assert (rr.transactions, rr.failed, rr.new_connection) == (3, 1, True)
    assert [(r.t, r.time_ms) for r in rr.rows()] == [(0.0, 0.25), (0.2, 0.5), (0.4, None), (0.6, 1.25)]
    info = pj.tcp_info(doc)
    assert [x.t for x in info] == [0.1, 0.2]
    assert info[0].snd_ssthresh_bytes is None and info[1].snd_ssthresh_bytes == 7 * 1448
    assert info[1] == pj.TcpInfo(**fixture("tcp-info.json"))
    paced = pj.pacing(doc)
    assert len(paced) == 2 and paced[0] == paced[1]
    assert paced[0].worst[0] == pj.PacingEpisode(start=1.0, seconds=0.2, max_behind_ms=150.12)
    # each sender: 0.312346 s behind, 25,000 bytes owed of 975,000 + 50,000
    assert pj.pacing_summary(doc, 975_000) == pytest.approx(
        {"sender_behind_s": 0.624692, "sender_max_behind_ms": 150.12, "sender_short_pct": 50_000 / 1_025_000 * 100})
    assert pj.suspicious(doc) == 3
    typed = pj.document(doc)
    assert typed.netrig.schema == 1 and typed.intervals[0].probe.sent == 2 and typed.start.sndbuf_actual == 16384


def test_an_unpaced_flow_without_extras_has_none():
    doc = pj.read('{"end": {"streams": [{"sender": {"bytes": 1}}]}}')
    assert (pj.pacing(doc), pj.pacing_summary(doc, 1), pj.probe(doc), pj.rr(doc), pj.tcp_info(doc),
            pj.suspicious(doc)) == ([], {}, None, None, [], None)


@pytest.mark.parametrize("name", ["tcp", "udp", "probe", "rr"])
def test_documents_printed_before_the_schema_read_as_schema_1(name):
    text = (FIXTURES / "before" / f"{name}.json").read_text()
    doc, problem = pj.parse(text)
    assert problem is None
    assert "schema" not in doc.get("netrig", {})
    if name == "tcp":
        assert len(pj.tcp_info(doc)) >= 5 and all(x.snd_mss for x in pj.tcp_info(doc))
        assert pj.pacing(doc)[0].target_bps == 20_000_000
    elif name == "udp":
        assert pj.suspicious(doc) == 0 and pj.pacing(doc)[0].target_bps == 5_000_000
    elif name == "probe":
        rows = pj.probe(doc).rows()
        assert len(rows) == pj.probe(doc).sent > 10 and all(r.rtt_ms is not None for r in rows)
    else:
        # every transaction started, the last perhaps after the test's end and not counted
        assert len(pj.rr(doc).rows()) >= pj.rr(doc).transactions + pj.rr(doc).failed > 3


def mutated(path: str, value):
    """The document of every extra with one value replaced (a dotted path; [N] indexes)."""
    doc = copy.deepcopy(document())
    *parents, last = path.replace("[", ".[").split(".")
    node = doc
    for p in parents:
        node = node[int(p[1:-1])] if p.startswith("[") else node[p]
    if last.startswith("["):
        node[int(last[1:-1])] = value
    else:
        node[last] = value
    return json.dumps(doc)


def without_t():
    doc = document()
    del doc["netrig"]["tcp_info"][0]["t"]
    return json.dumps(doc)


WHOLE = json.dumps(document(), indent=2)
MALFORMED = {
    "empty": ("", "no JSON from netrig-perf: its output is empty"),
    "blank": ("  \n", "no JSON from netrig-perf: its output is empty"),
    "cut short": (WHOLE[:len(WHOLE) // 2], f"netrig-perf's JSON output is cut short ({len(WHOLE) // 2} bytes; "),
    "not JSON": ('{"end": {}}\n{"x"', "netrig-perf's JSON output is not valid JSON at line 2 column 1 (Extra data)"),
    "an array": ("[1]", "netrig-perf's JSON: the document is an array, not an object"),
    "a string mean": (mutated("end.probe.rtt_ms.mean", "1.5"),
                      "netrig-perf's JSON: end.probe.rtt_ms.mean is a string, not a number"),
    "a schema to come": (mutated("netrig.schema", 2),
                         "netrig-perf's JSON: netrig.schema is 2, and this netrig reads schema 1 only: run the "
                         "netrig-perf installed with this netrig (netrig-perf --version names it)"),
    "a schema in words": (mutated("netrig.schema", "1"),
                          "netrig-perf's JSON: netrig.schema is a string, not a number"),
    "a sample without time": (without_t(), "netrig-perf's JSON: netrig.tcp_info[0] has no 't'"),
    "a sender in words": (mutated("netrig.tcp_info[1].sender", "yes"),
                          "netrig-perf's JSON: netrig.tcp_info[1].sender is a string, not a boolean"),
    "tcp_info an object": (mutated("netrig.tcp_info", {}),
                           "netrig-perf's JSON: netrig.tcp_info is an object, not an array"),
    "columns without t": (mutated("end.probe.samples_columns", ["seq", "rtt_ms"]),
                          "netrig-perf's JSON: end.probe.samples_columns lacks t"),
    "a column not a name": (mutated("end.rr.samples_columns", ["t", "time_ms", 3]),
                            "netrig-perf's JSON: end.rr.samples_columns[2] is a number, not a string"),
    "a sample in words": (mutated("end.rr.samples[0][0]", "0.1"),
                          "netrig-perf's JSON: end.rr.samples[0][0] is a string, not a number"),
    "a short sample": (mutated("end.probe.samples[2]", [3, 0.1]),
                       "netrig-perf's JSON: end.probe.samples[2] has 2 values for the 5 columns seq, t, rtt_ms, "
                       "send_delay_ms, receive_delay_ms"),
    "a sample at no time": (mutated("end.rr.samples[1]", [None, 0.5]),
                            "netrig-perf's JSON: end.rr.samples[1] has no time: its t is null"),
    "rr's new_connection a number": (mutated("end.rr.new_connection", 1),
                                     "netrig-perf's JSON: end.rr.new_connection is a number, not a boolean"),
    "pacing an array": (mutated("end.streams[1].sender.pacing", []),
                        "netrig-perf's JSON: end.streams[1].sender.pacing is an array, not an object"),
    "an episode's start a boolean": (mutated("end.streams[0].udp.pacing.worst[0].start", True),
                                     "netrig-perf's JSON: end.streams[0].udp.pacing.worst[0].start is a boolean, "
                                     "not a number"),
    "suspicious in words": (mutated("end.streams[0].udp.suspicious", "3"),
                            "netrig-perf's JSON: end.streams[0].udp.suspicious is a string, not a number"),
    "an interval's probe an array": (mutated("intervals[0].probe.rtt_ms", []),
                                     "netrig-perf's JSON: intervals[0].probe.rtt_ms is an array, not an object"),
    "rr's interval failed in words": (mutated("intervals[1].rr.failed", "1"),
                                      "netrig-perf's JSON: intervals[1].rr.failed is a string, not a number"),
    "the server's interval a number": ('{"server_output_json": {"intervals": [{}, 7]}}',
                                       "netrig-perf's JSON: server_output_json.intervals[1] is a number, "
                                       "not an object"),
    "probe null": (mutated("end.probe", None), "netrig-perf's JSON: end.probe is null, not an object"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_document_is_refused_with_a_sentence(case):
    text, error = MALFORMED[case]
    doc, problem = pj.parse(text)
    assert doc is None, f"{case}: accepted"
    assert problem is not None and problem.startswith(error), problem
    with pytest.raises(pj.PerfJsonError) as e:
        pj.read(text)
    assert str(e.value) == problem


def test_null_figures_are_figures_the_run_did_not_have():
    doc, problem = pj.parse(mutated("end.probe.rtt_ms.mean", None))
    assert problem is None and pj.probe(doc).rtt_ms.mean is None
