"""The console (netrig.cli.console): a reader that goes away stops netrig's words,
never its work. A guarded stream on a pipe whose read end is closed takes every write
without a word, its descriptor then on /dev/null; `netrig report DIR | head -1` writes
the whole report and ends quietly with 141."""

from __future__ import annotations

import os
import subprocess
import sys

from netrig.cli import console, main
from test_report import make_results


def test_a_guarded_stream_on_a_closed_pipe_takes_every_write_silently():
    r, w = os.pipe()
    os.close(r)  # the reader is gone
    f = os.fdopen(w, "w")
    g = console.Guarded(f)
    assert not g.broken
    for _ in range(200):  # past the buffer: the write itself meets the closed pipe
        g.write("x" * 1000 + "\n")
    print("and a print", file=g, flush=True)
    g.flush()
    assert g.broken
    assert os.fstat(w).st_rdev == os.stat(os.devnull).st_rdev  # what is left goes nowhere
    g.write("after\n")
    f.close()  # its buffer flushed to /dev/null: no BrokenPipeError at exit


def test_an_error_other_than_a_closed_pipe_is_not_swallowed(tmp_path):
    f = open(tmp_path / "x", "w")
    f.close()
    g = console.Guarded(f)
    try:
        g.write("x")
    except ValueError:
        pass
    else:
        raise AssertionError("a write to a closed file went unsaid")
    assert not g.broken


def test_guarded_restores_the_streams_and_says_whether_a_reader_left():
    r, w = os.pipe()
    os.close(r)
    before = sys.stdout
    real = os.fdopen(w, "w")
    sys.stdout = real
    try:
        with console.guarded() as con:
            assert isinstance(sys.stdout, console.Guarded) and not con.broken
            print("x" * 100_000)
        assert con.broken and sys.stdout is real
    finally:
        sys.stdout = before
        real.close()


def test_netrig_report_through_a_pipe_closed_after_one_line(tmp_path):
    out = make_results(tmp_path / "r")
    for name in ("report.md", "report.html", "results.csv"):
        (out / name).unlink(missing_ok=True)
    p = subprocess.Popen([sys.executable, "-m", "netrig", "report", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={**os.environ, "COLUMNS": "80"})
    assert p.stdout is not None and p.stderr is not None
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) in (0, 141)  # 0: it had written everything before the close
    assert err == "", err  # no "the report failed", no traceback
    assert (out / "report.md").read_text().startswith("# netrig report")
    assert (out / "report.html").read_text().rstrip().endswith("</html>")
    assert len((out / "results.csv").read_text().splitlines()) > 1


def test_netrig_help_into_a_pipe_already_closed_exits_141_quietly():
    p = subprocess.Popen([sys.executable, "-m", "netrig", "help"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 141 and err == "", err


def test_a_report_that_cannot_be_made_fails_the_command_and_says_why(tmp_path, monkeypatch, capsys):
    """A module the report needs that is missing is an error naming it (exit 1), never
    a report silently skipped; the results stay."""
    from netrig.exp.render import report

    out = make_results(tmp_path / "r")

    def missing(*_a, **_k):
        raise ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib")

    monkeypatch.setattr(report, "build", missing)
    assert main(["report", str(out)]) == 1
    err = capsys.readouterr().err
    assert "needs the Python module 'matplotlib', which is not installed" in err, err
    assert f"'netrig report {out}' makes the report" in err
    assert (out / "runs").is_dir()
