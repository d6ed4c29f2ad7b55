"""Readers of a results directory stay inside it: `netrig report`, `compare`, `plot` and
`--resume` read every file through safefs's read side, so a directory someone sent you
(or a user prepared for root) cannot make them read a file elsewhere, follow a link,
hang on a FIFO or swallow a file past its bound. Each attack is refused, named in the
report (HTML, Markdown) and on the console, and the rest of the report is as before.
No root needed but where said, no network."""

from __future__ import annotations

import base64
import json
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from netrig import safefs
from netrig.cli import main
from netrig.exp.analysis import results as res
from netrig.exp.execute import campaign
from netrig.exp.record import files as rec
from netrig.exp.render import plot, report
from test_report import make_results

SECRET = "TOP-SECRET-LINE of a file only root may read"
SECRET_PNG = b"\x89PNG\r\n\x1a\n" + b"SECRET-IMAGE-BYTES " * 8
GRAPH_PNG = b"\x89PNG\r\n\x1a\n" + b"the run's own Stevens graph " * 8
BULK_ROW = "<td>9.5 ± 0.896 Mbit/s (n=3)</td>"  # point 0's bulk in test_report's directory
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="netrig run needs root; root writes the report")
REFUSED = "Files refused: netrig reads a results directory without following links"


def _secret(tmp_path: Path, name: str = "secret.txt", data: bytes | None = None) -> Path:
    f = tmp_path / name
    f.write_bytes(data if data is not None else (SECRET + "\n").encode())
    f.chmod(0o600)
    return f


def _with_graphs(out: Path, graph: str) -> Path:
    """Run p000-r00's capture names its bulk flow's Stevens graph `graph`; run p000-r01
    has a graph of its own (capture/bulk-stevens.png), which the report must still show."""
    for rid, where in (("p000-r00", graph), ("p000-r01", "capture/bulk-stevens.png")):
        path = out / "runs" / rid / "run.json"
        doc = json.loads(path.read_text())
        doc["captures"] = [{"monitor": 2, "where": "s0-h2", "by": "netrig-link", "frames": 100,
                            "files": ["capture/2-s0-h2.pcapng"]}]
        doc["flows"]["bulk"]["summary"].update(retrans_pct_capture=0.5, capture_segments=200,
                                               capture_retransmissions=1)
        doc["flows"]["bulk"]["capture"] = {"stevens": where}
        path.write_text(json.dumps(doc))
    rec.atomic_write(out / "runs" / "p000-r01" / "capture" / "bulk-stevens.png", "", out)
    (out / "runs" / "p000-r01" / "capture" / "bulk-stevens.png").write_bytes(GRAPH_PNG)
    return out


def _report(out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str, str]:
    """`netrig report out`: (report.html, report.md, what it said on stderr)."""
    assert main(["report", str(out)]) == 0
    err = capsys.readouterr().err
    return ((out / "report.html").read_text(encoding="utf-8"),
            (out / "report.md").read_text(encoding="utf-8"), err)


def _named(said: str, page: str, md: str, err: str) -> None:
    """The refusal in the page (with the block that explains it), the Markdown and on the console."""
    assert REFUSED in page and REFUSED in md
    assert f"<li>{said}</li>" in page.replace("&#x27;", "'")
    assert f"- {said}" in md.replace("&#x27;", "'")
    assert f"netrig: {said}\n" in err


def test_a_capture_graph_whose_path_leaves_the_directory_is_refused_and_named(tmp_path, capsys):
    secret = _secret(tmp_path, "secret.png", SECRET_PNG)
    out = make_results(tmp_path / "sent" / "res")
    _with_graphs(out, os.path.relpath(secret, out / "runs" / "p000-r00"))  # ../../../../secret.png
    page, md, err = _report(out, capsys)
    assert base64.b64encode(SECRET_PNG).decode() not in page
    _named("capture graph of bulk in run p000-r00 (runs/p000-r00/../../../../secret.png) refused: "
           "its path leaves the results directory", page, md, err)
    assert "Not shown: capture graph of bulk in run p000-r00" in report_section(page, "Captures")
    # nothing else lost: the other run's graph, the numbers, every figure
    assert base64.b64encode(GRAPH_PNG).decode() in page
    assert BULK_ROW in page
    assert all(base64.b64encode(png.read_bytes()).decode() in page for png in (out / "figures").glob("*.png"))


def test_a_capture_graph_at_an_absolute_path_is_refused_and_named(tmp_path, capsys):
    secret = _secret(tmp_path, "secret.png", SECRET_PNG)
    out = _with_graphs(make_results(tmp_path / "res"), str(secret))
    page, md, err = _report(out, capsys)
    assert base64.b64encode(SECRET_PNG).decode() not in page
    _named(f"capture graph of bulk in run p000-r00 ({secret}) refused: its path is "
           "absolute: it leaves the results directory", page, md, err)
    assert base64.b64encode(GRAPH_PNG).decode() in page and BULK_ROW in page


def report_section(page: str, title: str) -> str:
    return page.split(f"<h2>{title}</h2>", 1)[1].split("<h2>", 1)[0]


def test_a_scenario_yaml_that_is_a_link_is_refused_and_named(tmp_path, capsys):
    out = make_results(tmp_path / "res")
    text = (out / "scenario.yaml").read_text()
    secret = _secret(tmp_path, "secret.yaml", (text + f"# {SECRET}\n").encode())  # YAML, and a secret
    (out / "scenario.yaml").unlink()
    (out / "scenario.yaml").symlink_to(secret)
    page, md, err = _report(out, capsys)
    assert SECRET not in page and SECRET not in md
    said = (f"scenario.yaml refused: it is a symbolic link (to {secret}); netrig does not follow "
            "links inside the results directory")
    _named(said, page, md, err)
    assert f"({said})" in report_section(page, "Scenario, host and runs").replace("&#x27;", "'")
    assert BULK_ROW in page  # the runs are read all the same


@needs_root
def test_a_topology_file_named_by_scenario_yaml_is_not_opened(tmp_path, capsys, monkeypatch):
    """netrig writes a run's topology inline; a scenario.yaml naming a file is refused (the
    report's drawing and theory go without it), and --resume refuses to run it."""
    out = make_results(tmp_path / "res")
    topo = _secret(tmp_path, "topo.yaml", b"nodes: {h1: host, s0: switch, h2: host, TOPSECRETNODE: host}\n"
                                          b"links: [[h1, s0], [s0, h2], [s0, TOPSECRETNODE]]\n")
    text = (out / "scenario.yaml").read_text()
    head, rest = text.split("topology:", 1)
    rest = rest.split("\nduration:", 1)[1]
    (out / "scenario.yaml").write_text(f"{head}topology: {os.path.relpath(topo, out)}\nduration:{rest}")
    page, md, err = _report(out, capsys)
    assert "TOPSECRETNODE" not in page and "TOPSECRETNODE" not in md
    _named("the topology file scenario.yaml names (../topo.yaml) refused: a results directory's "
           "scenario.yaml holds its topology inline, and netrig opens no other file it names",
           page, md, err)
    assert BULK_ROW in page
    ran = _no_runs(monkeypatch)
    assert main(["run", "--resume", str(out), "-q"]) == 1
    assert "scenario.yaml names a topology file (../topo.yaml)" in capsys.readouterr().err
    assert ran == []


def test_a_run_json_that_is_a_link_is_refused_and_the_other_runs_kept(tmp_path, capsys):
    out = make_results(tmp_path / "res")
    run = json.loads((out / "runs" / "p001-r02" / "run.json").read_text())
    secret = _secret(tmp_path, "secret.json", json.dumps(
        {**run, "status": "failed", "flows": {}, "error": SECRET}).encode())
    (out / "runs" / "p001-r02" / "run.json").unlink()
    (out / "runs" / "p001-r02" / "run.json").symlink_to(secret)
    page, md, err = _report(out, capsys)
    assert SECRET not in page and SECRET not in md
    _named(f"runs/p001-r02/run.json refused: it is a symbolic link (to {secret}); netrig does not "
           "follow links inside the results directory", page, md, err)
    assert "1 of 6 runs did not run" in page and BULK_ROW in page
    assert rec.finished(out) == {rec.run_id(p, r) for p in (0, 1) for r in range(3)} - {"p001-r02"}


def test_a_run_directory_or_runs_that_is_a_link_is_refused(tmp_path, capsys):
    elsewhere = make_results(tmp_path / "elsewhere")  # another directory's runs
    doc = json.loads((elsewhere / "runs" / "p000-r00" / "run.json").read_text())
    doc["flows"]["bulk"]["summary"]["error"] = SECRET
    doc["flows"]["bulk"]["summary"]["status"] = "error"
    (elsewhere / "runs" / "p000-r00" / "run.json").write_text(json.dumps(doc))
    out = make_results(tmp_path / "res")
    safefs.remove_tree(out, "runs/p000-r00")
    (out / "runs" / "p000-r00").symlink_to(elsewhere / "runs" / "p000-r00")
    page, md, err = _report(out, capsys)
    assert SECRET not in page
    _named(f"runs/p000-r00/run.json refused: runs/p000-r00 is a symbolic link (to "
           f"{elsewhere / 'runs' / 'p000-r00'}); netrig does not follow links inside the results "
           "directory", page, md, err)
    assert "1 of 6 runs did not run" in page
    # runs/ itself a link: no run is read, the report says so and renders the rest
    safefs.remove_tree(out, "runs")
    (out / "runs").symlink_to(elsewhere / "runs")
    page, md, err = _report(out, capsys)
    assert SECRET not in page
    _named(f"runs/ (every run) refused: runs is a symbolic link (to {elsewhere / 'runs'}); netrig "
           "does not follow links inside the results directory", page, md, err)
    assert "No flow was measured" in page and "6 of 6 runs did not run" in page
    assert rec.finished(out) == set()  # --resume runs them all again (into a real runs/)


def test_a_fifo_named_as_a_series_file_does_not_hang_the_report(tmp_path, capsys):
    out = make_results(tmp_path / "res")
    fifo = out / "runs" / "p000-r00" / "series" / "bulk.jsonl"
    fifo.unlink()
    os.mkfifo(fifo)
    done: dict[str, Any] = {}

    def build() -> None:
        try:
            done["code"] = main(["report", str(out)])
        except BaseException as e:  # (said by the assertion below)
            done["error"] = e

    t = threading.Thread(target=build, daemon=True)
    t.start()
    t.join(60)  # a report of this directory takes seconds; a reader stuck on the FIFO, forever
    hung = t.is_alive()
    deadline = time.monotonic() + 60
    while t.is_alive() and time.monotonic() < deadline:  # let a stuck reader go (EOF), each time it opens
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        time.sleep(0.05)
    assert not hung, "the report hung opening a FIFO in the results directory"
    assert done.get("code") == 0, done
    page = (out / "report.html").read_text(encoding="utf-8")
    md = (out / "report.md").read_text(encoding="utf-8")
    _named("series runs/p000-r00/series/bulk.jsonl refused: it is a FIFO (named pipe), not a "
           "regular file", page, md, capsys.readouterr().err)
    assert BULK_ROW in page and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_an_oversized_run_json_is_refused_unread(tmp_path, capsys):
    out = make_results(tmp_path / "res")
    big = out / "runs" / "p001-r00" / "run.json"
    with open(big, "r+b") as f:  # sparse: the size a reader would have to swallow
        f.truncate(16 * 2**20 + 1)
    page, md, err = _report(out, capsys)
    _named(f"runs/p001-r00/run.json refused: it holds {16 * 2**20 + 1} bytes; netrig "
           "reads at most 16 MiB of a run's run.json", page, md, err)
    assert "1 of 6 runs did not run" in page and BULK_ROW in page


def test_compare_and_plot_name_what_they_refused(tmp_path, capsys):
    a = make_results(tmp_path / "a")
    b = make_results(tmp_path / "b", scale=1.1)
    secret = _secret(tmp_path, "secret.jsonl", b'{"t": 0.1, "rtt_ms": 1e9}\n')
    series = b / "runs" / "p000-r00" / "series" / "rtt.jsonl"
    series.unlink()
    series.symlink_to(secret)
    said = (f"{b}: series runs/p000-r00/series/rtt.jsonl refused: it is a symbolic link (to "
            f"{secret}); netrig does not follow links inside the results directory")
    assert main(["compare", str(a), str(b)]) == 0
    page = (tmp_path / "compare-a-vs-b" / "compare.html").read_text(encoding="utf-8")
    assert f"<li>{said.split(': ', 1)[1]}</li>" in page and f"netrig: {said}\n" in capsys.readouterr().err
    assert "1e+09" not in page
    warned: list[str] = []
    got = plot.plot_command([a, b], ["rtt"], tmp_path / "rtt.png", warn=warned.append)
    assert got == [tmp_path / "rtt.png"] and warned == [said]


def _no_runs(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    ran: list[Path] = []
    monkeypatch.setattr(campaign, "run", lambda scenario, out, **kw: (ran.append(out), (out, "complete"))[1])
    monkeypatch.setattr(report, "build", lambda out, *a, **kw: out / "report.html")
    return ran


@needs_root
def test_resume_reads_the_directory_through_safefs(tmp_path, monkeypatch, capsys):
    """--resume runs the scenario saved in the directory: never one a link points at."""
    out = make_results(tmp_path / "res")
    other = _secret(tmp_path, "other.yaml", (out / "scenario.yaml").read_bytes())
    (out / "scenario.yaml").unlink()
    (out / "scenario.yaml").symlink_to(other)
    ran = _no_runs(monkeypatch)
    assert main(["run", "--resume", str(out), "-q"]) == 1
    assert (f"--resume {out}: scenario.yaml refused: it is a symbolic link (to {other}); netrig "
            "does not follow links inside the results directory") in capsys.readouterr().err
    assert ran == []
    meta = out / "meta.json"
    (out / "scenario.yaml").unlink()
    (out / "scenario.yaml").write_bytes(other.read_bytes())
    moved = _secret(tmp_path, "meta.json", meta.read_bytes())
    meta.unlink()
    meta.symlink_to(moved)
    assert main(["run", "--resume", str(out), "-q"]) == 1
    assert f"{out}: meta.json refused: it is a symbolic link (to {moved})" in capsys.readouterr().err
    with pytest.raises(rec.NotResults, match=f"{out}: meta.json refused: it is a symbolic link"):
        res.load(out)
    assert ran == []


@needs_root
def test_report_html_and_md_are_written_through_safefs(tmp_path):
    """Like every result file: a link planted at the report's names is replaced, never
    written through; the files are root's, 0644. (Held on main already: a guard.)"""
    secret = _secret(tmp_path)
    out = make_results(tmp_path / "res")
    for name in ("report.html", "report.md"):
        (out / name).symlink_to(secret)
    report.build(out)
    assert secret.read_text() == SECRET + "\n"
    for name in ("report.html", "report.md"):
        st = os.lstat(out / name)
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644 & ~_umask()
        assert st.st_uid == os.geteuid()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# safefs's read side itself
def test_read_bytes_refuses_what_leaves_the_base_links_and_non_files(tmp_path):
    base = tmp_path / "base"
    (base / "d").mkdir(parents=True)
    (base / "d" / "f").write_bytes(b"inside")
    secret = _secret(tmp_path)
    (base / "d" / "link").symlink_to(secret)
    (base / "up").symlink_to(tmp_path)
    os.mkfifo(base / "d" / "fifo")
    read = lambda rel: safefs.read_bytes(base, rel, safefs.LOG, "the base")  # noqa: E731
    assert read("d/f") == b"inside" and read("./d//f") == b"inside"
    cases = {"../secret.txt": "its path leaves the base",
             "d/../../secret.txt": "its path leaves the base",
             str(secret): "its path is absolute: it leaves the base",
             "d/link": f"it is a symbolic link (to {secret}); netrig does not follow links inside the base",
             "up/secret.txt": f"up is a symbolic link (to {tmp_path}); netrig does not follow links",
             "d/fifo": "it is a FIFO (named pipe), not a regular file",
             "d": "it is a directory, not a regular file",
             "d/f\0x": "its path holds a NUL byte"}
    for rel, why in cases.items():
        with pytest.raises(safefs.UnsafeRead) as e:
            read(rel)
        assert why in e.value.reason, rel
    with pytest.raises(FileNotFoundError):
        read("d/none")
    with pytest.raises(NotADirectoryError):
        read("d/f/x")
    assert safefs.list_dir(base, "d") == ["f", "fifo", "link"]
    with pytest.raises(safefs.UnsafeRead, match="up is a symbolic link"):
        safefs.list_dir(base, "up")


def test_read_bytes_stops_at_the_bound(tmp_path):
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(safefs.SERIES.limit + 1)  # sparse: refused by its size, unread
    with pytest.raises(safefs.TooLarge, match=r"it holds 268435457 bytes; netrig reads at most "
                                              r"256 MiB of a time series \(JSON lines\)"):
        safefs.read_bytes(tmp_path, "big", safefs.SERIES)
    (tmp_path / "ten").write_bytes(b"0123456789")
    assert safefs.read_bytes(tmp_path, "ten", safefs.Bound("a test file", 10)) == b"0123456789"
    with pytest.raises(safefs.TooLarge, match="it holds 10 bytes; netrig reads at most 9 bytes of a test file"):
        safefs.read_bytes(tmp_path, "ten", safefs.Bound("a test file", 9))


def test_a_server_log_swapped_for_a_link_is_not_copied_into_the_run(tmp_path):
    """The runner quotes a server's log in run.json when it does not start
    (results.log_tail): a link planted at the log's name is named, not followed."""
    secret = _secret(tmp_path)
    out = tmp_path / "res"
    (out / "runs" / "p000-r00").mkdir(parents=True)
    (out / "runs" / "p000-r00" / "server-bulk.log").symlink_to(secret)
    (out / "runs" / "p000-r00" / "server-bulk.json").write_text("x" * 400 + "address in use\n")
    said = rec.log_tail(out, "runs/p000-r00/server-bulk.log")
    assert SECRET not in said and said.startswith("runs/p000-r00/server-bulk.log refused: it is a symbolic link")
    assert rec.log_tail(out, "runs/p000-r00/server-bulk.json") == "x" * 286 + "address in use"
    assert rec.log_tail(out, "runs/p000-r00/server-none.log") == ""


def test_an_alias_bomb_in_scenario_yaml_is_not_expanded(tmp_path, capsys):
    """scenario.yaml is parsed within the scenario loader's bounds: a billion laughs is
    named and left out, and the runs are reported."""
    out = make_results(tmp_path / "res")
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi"))
    (out / "scenario.yaml").write_text(bomb)
    page, md, err = _report(out, capsys)
    assert "netrig: scenario.yaml not read: " in err and "an alias bomb" in err
    assert BULK_ROW in page
