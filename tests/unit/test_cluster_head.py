"""Campaigns on a cluster, the head's side without a network: which commands need root,
what is written for a run that came back, failed or was
lost, progress for runs that end out of order, and the report's word on runs from
different machines."""

from __future__ import annotations

import io
import json

import pytest
from netrig import cli
from netrig.exp.execute import cluster
from netrig.exp.execute.progress import Display
from netrig.exp.execute.tally import Tally, Todo
from netrig.exp.render import report
from netrig.exp.spec.scenario import loads_scenario

SCENARIO = """\
name: tiny
topology:
  nodes: {h1: host, h2: host}
  links:
    - {a: h1, b: h2, rate: 10Mbit, delay: 2ms}
duration: 2s
flows:
  bulk: {kind: tcp, from: h1, to: h2}
"""


def test_run_on_a_cluster_needs_no_root_but_a_worker_does(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(cli.os, "geteuid", lambda: 1000)
    seen = {}

    def refuse(address, cert):
        seen["address"], seen["cert"] = address, cert
        raise cluster.ClusterError(f"cluster {address}: stand-in")

    monkeypatch.setattr(cluster.Campaign, "__init__", lambda self, a, cert=None: refuse(a, cert))
    monkeypatch.delenv("NETRIG_CLUSTER", raising=False)
    assert cli.main(["run", "examples/003-window.yaml", "--cluster", "tls://10.0.0.1:8786",
                     "--cert", "/home/u/head.pem", "--out", str(tmp_path / "x")]) == 1
    assert seen == {"address": "tls://10.0.0.1:8786", "cert": "/home/u/head.pem"}  # no root asked
    assert not (tmp_path / "x").exists()  # nothing written for a cluster that is not there
    assert "needs root" not in capsys.readouterr().err
    monkeypatch.setenv("NETRIG_CLUSTER", "tls://10.0.0.2:8786")
    cli.main(["run", "examples/003-window.yaml", "--out", str(tmp_path / "x")])
    assert seen["address"] == "tls://10.0.0.2:8786"
    assert cli.main(["run", "examples/003-window.yaml", "--local"]) == 2  # here: root again
    assert "netrig run needs root" in capsys.readouterr().err
    assert cli.main(["cluster", "worker", "tls://10.0.0.1:8786"]) == 2
    assert "netrig cluster worker needs root" in capsys.readouterr().err
    assert cli.main(["cluster", "worker"]) == 1
    assert "the scheduler's (e.g. tls://" in capsys.readouterr().err


class Done:
    """A finished future's stand-in: its result, or the exception it raises."""

    def __init__(self, value=None, error: BaseException | None = None) -> None:
        self.value, self.error = value, error

    def result(self):
        if self.error is not None:
            raise self.error
        return self.value


def todo() -> Todo:
    point = loads_scenario(SCENARIO).points[0]
    return Todo(0, point, 0, 7, "p000-r00")


def run_json(rid: str = "p000-r00", status: str = "ok") -> bytes:
    return json.dumps({"run": rid, "point": 0, "rep": 0, "seed": 7, "params": {}, "status": status,
                       "flows": {}, "host": {"hostname": "wa"}}).encode()


def test_a_run_that_came_back_is_written_whole_with_its_worker(tmp_path):
    c = object.__new__(cluster.Campaign)
    tally = Tally(tmp_path)
    got = {"files": {"run.json": run_json(), "flows/bulk.json": b"{}\n", "series/bulk.jsonl": b""},
           "worker": {"name": "wb", "address": "tcp://x:1", "hostname": "wb-host", "lab": "nx1", "cpu": "z"}}
    note = c._record(Done(got), todo(), tmp_path, tally, ["wa", "wb"])
    rdir = tmp_path / "runs" / "p000-r00"
    assert sorted(str(p.relative_to(rdir)) for p in rdir.rglob("*") if p.is_file()) == \
        ["flows/bulk.json", "run.json", "series/bulk.jsonl"]
    doc = json.loads((rdir / "run.json").read_text())
    assert doc["worker"] == {"name": "wb", "address": "tcp://x:1", "hostname": "wb-host", "lab": "nx1",
                             "lost": ["wa"]}
    assert "its worker wa died while running it; its half was discarded and wb ran it again" in note
    assert tally.status == "complete"


def test_a_run_that_could_not_run_or_was_given_up_is_recorded_failed(tmp_path):
    from distributed import KilledWorker

    c = object.__new__(cluster.Campaign)
    tally = Tally(tmp_path)
    note = c._record(Done({"error": "its process ended by SIGKILL", "worker": {"name": "wa"}}), todo(),
                     tmp_path, tally, ["wa"])
    doc = json.loads((tmp_path / "runs" / "p000-r00" / "run.json").read_text())
    assert doc["status"] == "failed" and doc["error"] == "its process ended by SIGKILL"
    assert doc["worker"]["name"] == "wa" and note == "run p000-r00 failed: its process ended by SIGKILL"
    note = c._record(Done(error=KilledWorker("k", "w", 3)), todo(), tmp_path, tally, ["wa", "wb", "wa"])
    assert "its worker died 3 times while running it (wa, wb, wa)" in note and "--resume" in note
    assert tally.status == "failed" and tally.failures == 2
    c._record(Done(error=RuntimeError("pickling")), todo(), tmp_path, tally, [])
    with pytest.raises(Exception, match="three runs in a row failed; the last: the cluster could not run it"):
        tally.check()


def test_runs_that_end_out_of_order_count_up_and_say_where_they_ran():
    out = io.StringIO()
    with Display(4, 40.0, True, out, parallel=2) as shown:
        shown.start_run(1, 0, 2, {"flows.bulk.window": "16KB"}, 1, 2, where="wb (lab2)")
        shown.start_run(0, 0, 2, {"flows.bulk.window": "16KB"}, 0, 2, where="wa (lab1)")
        shown.end_run(1, 10.0, 0.0)
        shown.end_run(0, 10.0, 0.0)
        assert shown.done == 2
        assert shown.left_s == pytest.approx(20.0 - 11.5)  # two workers: half the estimate, each run half
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("run 2/4 on wb (lab2): point 1/2: bulk's window 16KB, repetition 2/2")


def test_the_report_says_when_a_points_runs_came_from_machines_that_differ():
    class R:
        runs = [{"run": "p000-r00", "point": 0, "host": {"hostname": "a", "kernel": "6.1", "cpu": "X"},
                 "emulator": {"packets": 1000, "over_budget": 20}},
                {"run": "p000-r01", "point": 0, "host": {"hostname": "b", "kernel": "6.6", "cpu": "X"},
                 "emulator": {"packets": 1000, "over_budget": 0}, "worker": {"name": "wb", "lost": ["wa"]}},
                {"run": "p001-r00", "point": 1, "host": {"hostname": "a", "kernel": "6.1", "cpu": "X"}},
                {"run": "p001-r01", "point": 1, "host": {"hostname": "a", "kernel": "6.1", "cpu": "X"}}]

        def label(self, point):
            return f"rate={point}"

    flags = report.host_flags(R())
    assert flags == ["rate=0: a (1 run; kernel 6.1, 2 % of packets > 1 ms late), "
                     "b (1 run; kernel 6.6, 0 % of packets > 1 ms late)"]
    assert report.ran_on(R.runs[1]) == "wb (b) after wa died"
    assert report.ran_on(R.runs[0]) == "a"


def test_a_scenario_on_real_hosts_is_not_handed_to_a_cluster(capsys, monkeypatch):
    monkeypatch.setattr(cluster.Campaign, "__init__", lambda *a, **k: pytest.fail("no cluster to reach"))
    assert cli.main(["run", "examples/005-real-hosts.yaml", "--cluster", "tls://10.0.0.1:8786"]) == 1
    err = capsys.readouterr().err
    assert "runs on real hosts (hosts:), which its runs would share" in err and "--local" in err


def test_an_interrupted_run_on_a_cluster_is_not_a_success_and_unwritable_files_fail_the_run(tmp_path):
    tally = Tally(tmp_path)
    doc = json.loads(run_json(status="interrupted"))
    assert "run p000-r00 was interrupted" in tally.ran(todo(), doc)
    assert tally.status == "failed"
    c = object.__new__(cluster.Campaign)
    got = {"files": {"run.json": run_json(), "../../escape": b"x"}, "worker": {"name": "wa"}}
    note = c._record(Done(got), todo(), tmp_path, Tally(tmp_path), ["wa"])
    assert "what its worker sent back was refused: file name \"../../escape\" is not a plain name" in note
    assert json.loads((tmp_path / "runs" / "p000-r00" / "run.json").read_text())["status"] == "failed"
    assert not (tmp_path.parent / "escape").exists()
    # A link on the way in the head's own directory: written through no link.
    out = tmp_path / "out"
    out.mkdir()
    (out / "runs").symlink_to(tmp_path / "elsewhere")
    note = c._record(Done({"files": {"run.json": run_json(), "x.txt": b"x"}, "worker": {"name": "wa"}}), todo(),
                     out, Tally(tmp_path), ["wa"])
    assert "its files could not be written here" in note and not (tmp_path / "elsewhere").exists()
