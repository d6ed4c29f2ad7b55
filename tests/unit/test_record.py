"""One record of a run (exp/record/run.py), the result set read from it (analysis/results.py
and rows.py) and the executors that write it (execute/executor.py, campaign.py): each
graded once, with its point's own tolerance; read the same on any machine; a partial
campaign never read as a whole one."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from netrig.exp.analysis import results
from netrig.exp.analysis.rows import missing_points, summary
from netrig.exp.execute import campaign, executor
from netrig.exp.execute.tally import Tally, Todo
from netrig.exp.preflight import cc, webtools
from netrig.exp.record import files as rec
from netrig.exp.record.files import read_json, write_json
from netrig.exp.record.run import (
    RECORD_SCHEMA,
    FlowRecord,
    Grade,
    RecordError,
    RunRecord,
    from_doc,
    hops_of,
    write_run,
)
from netrig.exp.render import headline, report
from netrig.exp.spec.scenario import loads_scenario
from test_report import make_results

SCENARIO = """\
name: rec
topology:
  nodes: {h1: host, s0: switch, h2: host}
  links:
    - [h1, s0]
    - {a: s0, b: h2, rate: 10Mbit, delay: 5ms, aqm: pie}
duration: 2s
tolerance: 10%
flows:
  bulk: {kind: tcp, from: h1, to: h2, reverse: true}
  rtt: {kind: ping, from: h1, to: h2, interval: 100ms}
"""


def point(text: str = SCENARIO, k: int = 0):
    return loads_scenario(text, "rec.yaml").points[k]


def record(tol: float = 0.1, measured: float = 8.0e6) -> RunRecord:
    p = point()
    r = RunRecord("p000-r00", 0, 0, 1, {}, "ok", tol)
    r.flows["bulk"] = FlowRecord(
        "tcp", "h1", "h2", "h2", "h1", 0.0, 2.0, 2.0, {"status": "ok", "throughput_bps": measured},
        Grade.of("throughput_bps", 9.5e6, None, "link", "min(link)", {}, measured, tol),
        {"kind": "tcp", "from": "h1", "to": "h2", "reverse": True}, hops_of(p, "tcp", "h2", "h1"))
    return r


# --- the record ----------------------------------------------------------------------

def test_a_record_is_graded_once_with_its_tolerance_and_reads_back_whole(tmp_path):
    r = record(tol=0.1)
    g = r.flows["bulk"].grade
    assert g is not None and g.verdict == "below" and g.flag and g.ratio == pytest.approx(8 / 9.5)
    doc = write_run(tmp_path, r)
    assert doc["schema"] == RECORD_SCHEMA and doc["tolerance"] == 0.1
    on_disk = read_json(tmp_path / "runs" / "p000-r00" / "run.json", tmp_path)
    assert on_disk == json.loads(json.dumps(doc))
    back = from_doc(on_disk)
    assert back.to_doc() == doc
    assert record(tol=0.2).flows["bulk"].grade.verdict == "within"  # 0.84 is within 20 %


def test_a_flows_hops_name_where_its_data_and_its_acks_go():
    hops = record().flows["bulk"].hops  # reverse: h2 sends to h1
    assert [(h["link"], h["from"], h["to"]) for h in hops["data"]] == [("s0-h2", "h2", "s0"), ("h1-s0", "s0", "h1")]
    assert [(h["from"], h["to"], h["aqm"], h["rate_bps"]) for h in hops["acks"]][1] == ("s0", "h2", "pie", 10e6)
    assert hops["back"] == []  # a one-way measure
    rtt = hops_of(point(), "ping", "h1", "h2")
    assert len(rtt["data"]) == len(rtt["back"]) == 2 and rtt["acks"] == []


@pytest.mark.parametrize("change, said", [
    ({"seed": None}, "run p000-r00's 'seed' is NoneType, not int"),
    ({"flows": []}, "run p000-r00's 'flows' is list, not dict"),
    ({"flows": {"bulk": {"from": "h1"}}}, "run p000-r00: flow bulk lacks 'kind'"),
    ({"flows": {"bulk": 3}}, "run p000-r00: flow 'bulk' is not a flow's record"),
    ({"schema": 99}, "run.json's schema is 99: this netrig reads 1 and 2"),
    ({"run": 7}, "run.json's 'run' is int, not str"),
])
def test_what_is_not_a_runs_record_is_refused_naming_the_key(change, said):
    doc = {**record().to_doc(), **change}
    with pytest.raises(RecordError, match=said.replace("(", r"\(").replace(")", r"\)")):
        from_doc(doc)


def test_a_schema_1_record_is_migrated_from_the_saved_scenario():
    old = {"schema": 1, "run": "p000-r00", "point": 0, "rep": 0, "seed": 1, "params": {}, "status": "ok",
           "flows": {"bulk": {"kind": "tcp", "from": "h1", "to": "h2", "start_s": 0, "end_s": 2,
                              "summary": {"status": "ok", "throughput_bps": 9.0e6},
                              "expected": {"metric": "throughput_bps", "value": 9.5e6, "hi": None,
                                           "measured": 9.0e6, "ratio": 0.947, "flag": False}}}}
    r = from_doc(old, point())
    f = r.flows["bulk"]
    assert (r.tolerance, f.sender, f.receiver, f.spec["reverse"]) == (0.1, "h2", "h1", True)
    assert f.hops["data"][0]["from"] == "h2" and f.grade.verdict == "within"
    bare = from_doc(old)  # no scenario to read: from what the record holds
    assert (bare.tolerance, bare.flows["bulk"].sender, bare.flows["bulk"].hops) == (0.1, "h1", {})


# --- the result set ------------------------------------------------------------------

def tolerance_sweep(out: Path) -> Path:
    """Two points of the same measurement, 0.8 × theory, graded with 5 % and with 30 %."""
    write_json(out / "meta.json", {"scenario": "tol", "sweep_keys": ["tolerance"], "repeat": 1,
                                   "points": [{"index": 0, "params": {"tolerance": "5%"}},
                                              {"index": 1, "params": {"tolerance": "30%"}}]})
    (out / "scenario.yaml").write_text(SCENARIO.replace("tolerance: 10%", "tolerance: 10%\nsweep:\n"
                                                        "  tolerance: [5%, 30%]"))
    for i, tol in enumerate((0.05, 0.3)):
        r = record(tol=tol, measured=7.6e6)
        r.run, r.point, r.params = f"p00{i}-r00", i, {"tolerance": ["5%", "30%"][i]}
        write_run(out, r)
    return out


def test_a_sweep_over_tolerance_grades_each_point_by_its_own(tmp_path):
    out = tolerance_sweep(tmp_path / "t")
    res = results.load(out)
    rows = summary(res)
    assert [(r.label, r.tol, r.versus.verdict, r.flagged) for r in rows] == [
        ("tolerance=5%", 0.05, "below", 1), ("tolerance=30%", 0.3, "within", 0)]
    table = headline.summary(res)
    assert "below" in table and "within" in table and "1 of 2 rows far from theory" in table
    report.build(out)
    got = {r["tolerance"]: r["verdict"] for r in csv.DictReader((out / "results.csv").open())}
    assert got == {"5%": "below", "30%": "within"}


def test_an_interrupted_campaign_says_which_points_never_ran(tmp_path):
    """3 of 4 points never ran (Ctrl-C): no reader says "every row within"."""
    out = make_results(tmp_path / "i", status="interrupted",
                       missing=frozenset((1, rep) for rep in range(3)))
    meta = read_json(out / "meta.json", out)
    meta["points"] += [{"index": k, "params": {"flows.bulk.window": w}, "length_s": 5.0}
                       for k, w in ((2, "256KB"), (3, "1MB"))]
    write_json(out / "meta.json", meta)
    res = results.load(out)
    assert missing_points(res) == 3
    rows = summary(res)
    assert [r.label for r in rows if r.not_run] == ["window=64KB", "window=64KB", "window=256KB",
                                                    "window=256KB", "window=1MB", "window=1MB"]
    text = headline.summary(res)
    assert "3 of 4 sweep points not run" in text and "every row within" not in text.split("not run;")[0]
    assert text.count("not run") >= 6
    page = report.build(out).read_text()
    assert "3 of 4 sweep points were not run" in page and "Every measurement is within" not in page
    not_run = [r for r in csv.DictReader((out / "results.csv").open()) if r["status"] == "not_run"]
    assert sorted({r["point"] for r in not_run}) == ["1", "2", "3"]


def test_a_results_directory_renders_the_same_without_this_machines_tools(tmp_path, monkeypatch):
    """Rendered where nginx, curl, openssl, tcpdump, FRR, iperf and every congestion
    control are missing (a laptop, a cluster's head), a results directory with web
    flows, captures and a cc gives the same report.md, results.csv and figures (the
    renderer's own tools, matplotlib and Graphviz, are there)."""
    text = SCENARIO + ("  page: {kind: web, from: h1, to: h2, tls: true}\n"
                       "monitors:\n  - {kind: capture, link: s0-h2, filter: tcp}\n")
    text = text.replace("reverse: true}", "reverse: true, cc: cubic}")
    out = make_results(tmp_path / "a")
    (out / "scenario.yaml").write_text(yaml.safe_dump(yaml.safe_load(text)
                                                      | {"sweep": {"flows.bulk.window": ["16KB", "64KB"]}}))

    def render(where: Path) -> dict[str, Any]:
        shutil.copytree(out, where)
        report.build(where)
        return {"md": (where / "report.md").read_text(), "csv": (where / "results.csv").read_text(),
                "figures": sorted(p.name for p in (where / "figures").iterdir()),
                "headline": headline.summary(results.load(where))}

    here = render(tmp_path / "here")
    monkeypatch.setattr(webtools, "find", lambda program: None)
    monkeypatch.setattr(cc, "congestion_controls", lambda *a, **k: set())
    hidden = {"nginx", "curl", "openssl", "tcpdump", "dumpcap", "vtysh", "zebra", "ospfd", "bgpd",
              "watchfrr", "iperf3", "iperf", "ping"}
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda cmd, *a, **k: None if Path(cmd).name in hidden
                        else which(cmd, *a, **k))
    from netrig.link import bpf

    def no_tcpdump(*a, **k):
        raise AssertionError("a reader compiled a capture filter")
    monkeypatch.setattr(bpf, "compile_bpf", no_tcpdump)
    elsewhere = render(tmp_path / "elsewhere")
    assert elsewhere["csv"] == here["csv"] and elsewhere["figures"] == here["figures"]
    assert elsewhere["headline"] == here["headline"]
    assert elsewhere["md"].replace(str(tmp_path / "elsewhere"), "DIR") == here["md"].replace(
        str(tmp_path / "here"), "DIR")
    assert "Topology" in here["md"]  # the drawing and its text are there on both


# --- executors -----------------------------------------------------------------------

class Recorded:
    """An executor that runs nothing: each run's record as a run would write it."""

    size = 2

    def __init__(self) -> None:
        self.given: list[str] = []

    def describe(self) -> dict[str, Any] | None:
        return {"address": "test"}

    def run(self, scenario, out, todo: list[Todo], shown, tally: Tally) -> None:
        for t in todo:
            self.given.append(t.rid)
            r = RunRecord(t.rid, t.point.index, t.rep, t.seed, t.point.params, "ok", 0.1)
            tally.ran(t, write_run(out, r))


def test_a_campaign_hands_every_run_to_its_executor_and_resume_only_the_rest(tmp_path, monkeypatch):
    monkeypatch.setattr(rec, "host_facts", lambda: {"netrig": "test"})  # (it asks iperf3 and ping)
    scen = loads_scenario(SCENARIO + "repeat: 2\nsweep:\n  flows.bulk.window: [16KB, 64KB]\n", "rec.yaml")
    ex = Recorded()
    out, status = campaign.run(scen, tmp_path / "o", progress=False, executor=ex)
    assert status == "complete" and ex.given == ["p000-r00", "p000-r01", "p001-r00", "p001-r01"]
    meta = read_json(out / "meta.json", out)
    assert meta["cluster"] == {"address": "test"} and meta["status"] == "complete"
    (out / "runs" / "p001-r01" / "run.json").unlink()
    again = Recorded()
    campaign.run(scen, out, resume=True, progress=False, executor=again)
    assert again.given == ["p001-r01"]
    assert [r["run"] for r in results.load(out).runs] == ["p000-r00", "p000-r01", "p001-r00", "p001-r01"]


def test_the_local_executor_runs_a_lab_here_or_real_hosts_over_ssh(tmp_path, monkeypatch):
    went: list[tuple[str, str]] = []
    monkeypatch.setattr(executor.runner, "run_one",
                        lambda p, rep, seed, out, rid, tick=None: went.append(("lab", rid)) or {
                            "run": rid, "status": "ok", "flows": {}})
    monkeypatch.setattr(executor.remote, "run_one",
                        lambda p, rep, seed, out, rid, tick=None: went.append(("ssh", rid)) or {
                            "run": rid, "status": "ok", "flows": {}})
    lab = loads_scenario(SCENARIO, "rec.yaml")
    t = Todo(0, lab.points[0], 0, 1, "p000-r00")
    executor.run_one(t, tmp_path)
    hosts = point("name: wifi\nhosts:\n  a: {ssh: alice@192.0.2.1}\n  b: {ssh: bob@192.0.2.2}\n"
                  "path: {rate: 10Mbit, rtt: 20ms}\nduration: 2s\nflows:\n  bulk: {kind: tcp, from: a, to: b}\n")
    executor.run_one(Todo(1, hosts, 0, 1, "p000-r01"), tmp_path)
    assert went == [("lab", "p000-r00"), ("ssh", "p000-r01")]
    assert executor.Local().size == 1 and executor.Local().describe() is None
