"""The `netrig` command and binary lookup, without any network."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
from netrig import BinaryNotFound, binary
from netrig.cli import main


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    assert "perf ARGS" in capsys.readouterr().out


def test_no_command_is_a_usage_error(capsys):
    assert main([]) == 2


def test_unknown_command_is_named(capsys):
    assert main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err


def test_unknown_command_is_told_the_closest(capsys):
    assert main(["pingal"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("netrig: error: unknown command 'pingal'; did you mean pingall? "
                          "(commands: perf, up, down, ")


def test_netrig_bin_dir_wins(tmp_path, monkeypatch):
    fake = tmp_path / "netrig-perf"
    fake.write_text("#!/bin/sh\necho fake\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("NETRIG_BIN_DIR", str(tmp_path))
    assert binary("netrig-perf") == fake.resolve()


def test_missing_binary_says_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("NETRIG_BIN_DIR", str(tmp_path))
    with pytest.raises(BinaryNotFound) as e:
        binary("netrig-nonexistent")
    assert str(tmp_path) in str(e.value) and "pip install" in str(e.value)


def test_perf_execs_netrig_perf():
    p = subprocess.run([sys.executable, "-m", "netrig", "perf", "--version"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("netrig-perf "), (p.returncode, p.stdout, p.stderr)


def test_perf_passes_every_argument_through(monkeypatch):
    """netrig perf replaces itself with netrig-perf and its arguments, untouched (the
    exec is recorded, not done; tests/perf/test_client.py runs it for real)."""
    execs = []

    def execv(exe, argv):
        execs.append((exe, argv))
        raise SystemExit(0)

    monkeypatch.setattr(os, "execv", execv)
    args = ["-c", "192.0.2.1", "-p", "5999", "-t", "1", "--", "-J"]
    with pytest.raises(SystemExit):
        main(["perf", *args])
    exe = str(binary("netrig-perf"))
    assert execs == [(exe, [exe, *args])]


def test_launcher_script_is_installed():
    scripts = os.path.dirname(sys.executable)
    launcher = os.path.join(scripts, "netrig")
    if not os.path.exists(launcher):
        pytest.skip("netrig is not installed in this interpreter's environment")
    p = subprocess.run([launcher, "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "perf ARGS" in p.stdout


def test_clean_skips_a_lab_another_netrig_version_wrote(tmp_path, monkeypatch, capsys):
    """A state file with keys this netrig does not know (a newer netrig's lab on the same
    machine) is named and skipped; it is neither a traceback nor torn down."""
    import json

    from netrig.lab import state

    monkeypatch.setattr(state, "LABS_DIR", tmp_path / "labs")
    state.LabState("mine", "lab.yaml").save()
    newer = state.LABS_DIR / "newer" / "state.json"
    doc = json.loads((state.LABS_DIR / "mine" / "state.json").read_text())
    newer.parent.mkdir()
    newer.write_text(json.dumps({**doc, "prefix": "newer", "from_a_newer_netrig": 1}))
    assert main(["clean"]) == 0
    err = capsys.readouterr().err
    assert f"{newer}: a state file with keys this netrig does not know (from_a_newer_netrig)" in err
    assert newer.exists()
