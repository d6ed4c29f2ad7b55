"""What the CLI hands down: exp/pipeline.py (results whole before a word is printed;
a report that cannot be made fails the run, the results kept), exp/sets.py (--set's
words), lab/bringup.which (the lab a command means)."""

from __future__ import annotations

import pytest
from netrig.exp import pipeline
from netrig.exp.render import report
from netrig.exp.spec import sets
from netrig.lab import bringup
from netrig.lab.state import LabError
from test_report import make_results


def test_finish_writes_the_report_then_the_headline(tmp_path):
    out = make_results(tmp_path / "r")
    done = pipeline.finish(out, "complete", width=80)
    assert done.report == out / "report.html" and done.report.is_file()
    assert (out / "report.md").is_file() and (out / "results.csv").is_file()
    assert any((out / "figures").glob("*.png"))
    assert done.headline and done.headline.startswith("at window=16KB:")
    assert done.report_error is None and done.code == 0


@pytest.mark.parametrize("status, code", [("complete", 1), ("failed", 1), ("interrupted", 130)])
def test_a_run_whose_report_cannot_be_made_is_not_a_success(tmp_path, monkeypatch, status, code):
    out = make_results(tmp_path / "r")

    def missing(*_a, **_k):
        raise ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib")

    monkeypatch.setattr(report, "build", missing)
    done = pipeline.finish(out, status)
    assert done.report is None and done.code == code
    assert "needs the Python module 'matplotlib'" in done.report_error
    assert done.headline is not None  # the table is still there to print

    monkeypatch.setattr(report, "build", lambda *a, **k: 1 / 0)
    done = pipeline.finish(out, status)
    assert done.report_error == (f"the report failed (ZeroDivisionError: division by zero); "
                                 f"the results are in {out}") and done.code == code


def test_rebuild_refuses_a_directory_that_is_not_results(tmp_path):
    with pytest.raises(Exception, match="meta.json"):
        pipeline.rebuild(tmp_path)
    assert not (tmp_path / "report.html").exists()


def test_set_words():
    assert sets.parse(["links.r2-r3.delay=40ms", "repeat=1", "flows.a.on=true", "x="]) == {
        "links.r2-r3.delay": "40ms", "repeat": 1, "flows.a.on": True, "x": ""}
    assert sets.parse(["sweep.a=[1, 2]"]) == {"sweep.a": [1, 2]}
    for word, said in (("duration", "--set duration: expected KEY=VALUE"),
                       ("=5s", "--set =5s: expected KEY=VALUE"),
                       ("a=[1, 2", "--set a=[1, 2: the value is not YAML")):
        with pytest.raises(sets.SetError, match=said.replace("[", r"\[")):
            sets.parse([word])


def test_which_lab(monkeypatch):
    monkeypatch.setattr(bringup, "labs", lambda: [])
    assert bringup.which("pf") == "pf"
    with pytest.raises(LabError, match=r"no lab is up \(netrig up FILE builds one\)"):
        bringup.which(None)
    monkeypatch.setattr(bringup, "labs", lambda: ["a"])
    assert bringup.which(None) == "a"
    monkeypatch.setattr(bringup, "labs", lambda: ["a", "b"])
    with pytest.raises(LabError, match="several labs are up \\(a, b\\): say which with --prefix"):
        bringup.which(None)
