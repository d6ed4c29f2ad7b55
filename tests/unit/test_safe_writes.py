"""netrig writes as root: links planted in a results directory are never written
through, a results directory another user owns is refused unless --allow-foreign-dir,
and lab state is root's alone. The attacker is played by uid 65534 (nobody); the
tests that need chown skip without root."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from netrig.cli import main
from netrig.errors import NetrigError
from netrig.exp.execute import campaign, runner
from netrig.exp.record import files as rec
from netrig.exp.render import figures, report
from netrig.exp.spec.scenario import loads_scenario
from netrig.lab import state

NOBODY = 65534
ROOT = Path(__file__).resolve().parents[2]
SECRET = "root's own file\n"
SCENARIO = """\
name: tiny
topology:
  nodes: {h1: host, h2: host}
  links: [[h1, h2]]
duration: 1s
flows:
  bulk: {kind: tcp, from: h1, to: h2}
"""

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="plays the attacker with chown")


def _secret(tmp_path: Path) -> Path:
    """A file only root may write, which the attacker points links at."""
    f = tmp_path / "secret"
    f.write_text(SECRET)
    f.chmod(0o600)
    return f


def _attacker_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, NOBODY, NOBODY)
    return path


def _plant(link: Path, target: Path) -> None:
    link.symlink_to(target)
    os.lchown(link, NOBODY, NOBODY)


@needs_root
def test_links_at_the_temporary_and_final_names_are_not_written_through(tmp_path):
    secret = _secret(tmp_path)
    out = _attacker_dir(tmp_path / "out")
    _plant(out / f".meta.json.{os.getpid()}.tmp", secret)  # the name netrig used to use
    _plant(out / "meta.json", secret)
    rec.write_json(out / "meta.json", {"scenario": "tiny"})
    assert secret.read_text() == SECRET
    meta = out / "meta.json"
    assert not meta.is_symlink() and '"scenario": "tiny"' in meta.read_text()
    assert stat.S_IMODE(meta.stat().st_mode) == 0o644  # results are for people to read
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]


@needs_root
def test_a_link_in_place_of_runs_is_not_followed(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    _plant(out / "runs", elsewhere)

    def no_network(*args, **kw):
        raise RuntimeError("no network in a unit test")

    monkeypatch.setattr(runner, "run_one", no_network)
    monkeypatch.setattr(rec, "host_facts", lambda: {})
    error = ""
    try:
        campaign.run(loads_scenario(SCENARIO, "tiny.yaml"), out, progress=False)
    except NetrigError as e:
        error = str(e)
    assert list(elsewhere.iterdir()) == []
    assert f"{out / 'runs'}: a symbolic link (to {elsewhere})" in error


@needs_root
def test_a_link_in_place_of_figures_is_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.png").write_bytes(b"not netrig's")
    out = tmp_path / "out"
    rec.write_json(out / "meta.json", {"scenario": "tiny", "sweep_keys": [], "repeat": 1,
                                       "points": [], "status": "complete", "host": {}})
    _plant(out / "figures", elsewhere)
    error = ""
    try:
        figures.make_figures(out)
    except NetrigError as e:
        error = str(e)
    assert [p.name for p in elsewhere.iterdir()] == ["keep.png"]  # not removed, nothing added
    assert f"{out / 'figures'}: a symbolic link (to {elsewhere})" in error


def _fake_run(monkeypatch) -> list[Path]:
    """runner.run and report.build replaced: the CLI's own checks, no network."""
    ran: list[Path] = []

    def run(scenario, out, **kw):
        ran.append(out)
        return out, "complete"

    monkeypatch.setattr(campaign, "run", run)
    monkeypatch.setattr(report, "build", lambda out, *a, **kw: out / "report.html")
    return ran


@needs_root
def test_a_results_directory_another_user_owns_is_refused(tmp_path, monkeypatch, capsys):
    foreign = _attacker_dir(tmp_path / "results")
    ran = _fake_run(monkeypatch)
    argv = ["run", str(ROOT / "examples" / "000-lan-tcp.yaml"), "--quick", "-q",
            "--results", str(foreign)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"netrig: error: {foreign}: a directory owned by nobody (uid 65534)" in err
    assert "--allow-foreign-dir" in err
    assert ran == [] and list(foreign.iterdir()) == []
    assert main([*argv, "--allow-foreign-dir"]) == 0
    assert len(ran) == 1 and ran[0].parent == foreign / "000-lan-tcp"


@needs_root
def test_a_directory_another_user_owns_on_the_way_is_refused(tmp_path, monkeypatch, capsys):
    foreign = _attacker_dir(tmp_path / "shared")
    _fake_run(monkeypatch)
    assert main(["run", str(ROOT / "examples" / "000-lan-tcp.yaml"), "--quick", "-q",
                 "--results", str(foreign / "results")]) == 1
    assert (f"{foreign}: a directory owned by nobody (uid 65534) (on the way to "
            f"{foreign / 'results'})") in capsys.readouterr().err
    assert list(foreign.iterdir()) == []
    (tmp_path / "link").symlink_to(foreign)  # root's own link to nobody's directory
    assert main(["run", str(ROOT / "examples" / "000-lan-tcp.yaml"), "--quick", "-q",
                 "--results", str(tmp_path / "link")]) == 1
    assert (f"{foreign}: a directory owned by nobody (uid 65534) (where {tmp_path / 'link'} "
            "leads)") in capsys.readouterr().err
    assert list(foreign.iterdir()) == []


@needs_root
def test_report_refuses_a_directory_another_user_owns(tmp_path, capsys):
    out = tmp_path / "out"
    rec.write_json(out / "meta.json", {"scenario": "tiny", "sweep_keys": [], "repeat": 1,
                                       "points": [], "status": "complete", "host": {}})
    os.chown(out, NOBODY, NOBODY)
    assert main(["report", str(out)]) == 1
    assert f"{out}: a directory owned by nobody (uid 65534)" in capsys.readouterr().err
    assert not (out / "report.html").exists()
    assert main(["report", str(out), "--allow-foreign-dir"]) == 0
    assert (out / "report.html").is_file()


def test_lab_state_is_readable_by_root_only(tmp_path, monkeypatch):
    monkeypatch.setattr(state, "LABS_DIR", tmp_path / "run" / "labs")
    (tmp_path / "run" / "labs" / "old").mkdir(parents=True, mode=0o755)  # an older netrig's
    for prefix in ("t1", "old"):
        state.LabState(prefix, "lab.yaml", pids={"netrig-link": 4242}).save()
        f = state.LABS_DIR / prefix / "state.json"
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
        assert stat.S_IMODE(f.parent.stat().st_mode) == 0o700, f.parent
        assert state.LabState.load(prefix).pids == {"netrig-link": 4242}
    assert stat.S_IMODE(state.LABS_DIR.stat().st_mode) == 0o700


def test_a_link_at_the_state_files_names_is_not_written_through(tmp_path, monkeypatch):
    secret = _secret(tmp_path)
    monkeypatch.setattr(state, "LABS_DIR", tmp_path / "run" / "labs")
    d = state.LABS_DIR / "t1"
    d.mkdir(parents=True)
    (d / "state.json.tmp").symlink_to(secret)
    state.LabState("t1", "lab.yaml").save()
    assert secret.read_text() == SECRET
    assert not (d / "state.json").is_symlink()
    assert state.LabState.load("t1").topology == "lab.yaml"


def test_the_emulators_config_and_log_are_not_written_through_links(tmp_path, monkeypatch):
    """netrig-link's link.json and link.log in the lab's directory: a link planted at
    either name is replaced, and the file it pointed at is untouched."""
    from netrig.link import userspace

    secret = _secret(tmp_path)
    work = tmp_path / "lab"
    work.mkdir(mode=0o700)
    for name in ("link.json", "link.log"):
        (work / name).symlink_to(secret)

    class Ready:
        """Stands in for netrig-link: says it is ready on the log it was given."""

        def __init__(self, argv, stdout, **kw):
            stdout.write(b'{"event": "ready"}\n')
            stdout.flush()
            self.pid = 0

        def poll(self):
            return None

    monkeypatch.setattr(userspace, "binary", lambda name: name)
    monkeypatch.setattr(userspace.subprocess, "Popen", Ready)
    monkeypatch.setattr(userspace, "_started", {})
    userspace.start("ns", {"links": []}, work, timeout=5)
    assert secret.read_text() == SECRET
    for name in ("link.json", "link.log"):
        f = work / name
        assert f.is_file() and not f.is_symlink(), f
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
    assert json.loads((work / "link.json").read_text()) == {"links": []}
