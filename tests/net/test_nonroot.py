"""A user without root runs what needs none: `netrig report`, `analyze`, `graph` and
`examples`, as nobody, with the installed venv (scripts/install.sh makes it from a
Python every user can reach). Marked net: root is needed to become nobody (runuser).

A venv made another way (`python3 -m venv` with a Python under root's home, which other
users cannot enter) fails here first, with a sentence saying so: that is the defect this
test exists for, and scripts/install.sh remakes such a venv."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from netlab import needs_root

pytestmark = pytest.mark.net
TESTS = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent  # not resolved: the venv's own bin/, as users run it


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def as_nobody(*argv: str | Path, home: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """`argv` run as nobody, from /, with `home` as HOME (a user's own directory)."""
    runuser = shutil.which("runuser")
    if runuser is None:
        pytest.skip("runuser (util-linux) is not installed: cannot switch to nobody")
    return subprocess.run([runuser, "-u", "nobody", "--", "env", f"HOME={home}", *map(str, argv)],
                          cwd="/", capture_output=True, text=True, timeout=timeout)


def closed(path: Path, bits: int = 0o005) -> str:
    """The first directory on the way to `path` (links followed) that others cannot
    enter, or `path` itself when they lack `bits` on it; empty when nothing is closed."""
    real = path.resolve()
    for d in [*reversed(real.parents), real]:
        need = 0o001 if d != real else bits
        if d.stat().st_mode & need != need:
            return f"{d} (mode {d.stat().st_mode & 0o777:o})"
    return ""


def why_not(python: Path) -> str:
    """Why nobody cannot run the venv's `python`, in words that say what to do."""
    where = closed(VENV_BIN, 0o001)
    if where:
        return (f"the venv {VENV_BIN} lies behind {where}, which other users cannot enter: "
                "put the checkout where they can (e.g. /opt/netrig) and run scripts/install.sh "
                "there")
    return (f"this venv's Python {python} (-> {python.resolve()}; closed: "
            f"{closed(python) or 'none found, see the error'}) was not made by "
            "scripts/install.sh, which makes it from a Python every user can reach; run "
            "scripts/install.sh again")


@pytest.fixture
def base() -> Iterator[Path]:
    """A directory under /tmp that every user can enter (mode 0755), and nobody's HOME
    and results directory in it, owned by nobody."""
    needs_root()
    d = Path(tempfile.mkdtemp(prefix="netrig-nonroot-", dir="/tmp"))
    try:
        d.chmod(0o755)
        yield d
    finally:
        shutil.rmtree(d)


def own(path: Path) -> None:
    """`path` and everything in it made nobody's."""
    for p in [path, *path.rglob("*")]:
        os.chown(p, 65534, -1, follow_symlinks=False)


def test_nobody_runs_report_analyze_graph_and_examples(base):
    home = base / "home"
    home.mkdir()
    python, netrig = VENV_BIN / "python3", VENV_BIN / "netrig"
    assert netrig.is_file(), f"{netrig}: netrig is not installed in the venv running the tests"
    own(home)
    first = as_nobody(python, "-c", "import netrig.cli", home=home)
    assert first.returncode == 0, f"nobody cannot run netrig: {why_not(python)}\n{first.stderr[-1500:]}"

    # report: a results directory written by the record helpers, nobody's own
    results = base / "results"
    _load("test_report", TESTS / "unit" / "test_report.py").make_results(results)
    own(results)
    got = as_nobody(netrig, "report", results, home=home)
    assert got.returncode == 0, got.stderr[-3000:]
    assert (results / "report.html").is_file(), \
        sorted(p.name for p in results.iterdir())
    assert (results / "results.csv").stat().st_uid == 65534  # written by nobody

    # analyze: a hand-built capture (tests/fixtures/pcap/build.py), readable by all
    caps = _load("pcap_build", TESTS / "fixtures" / "pcap" / "build.py").build_all(base / "pcap")
    got = as_nobody(netrig, "analyze", caps["t.pcap"], "--json", home=home)
    assert got.returncode == 0, got.stderr[-3000:]
    assert '"packets": 40' in got.stdout

    # the examples the package carries, by name, from /
    got = as_nobody(netrig, "examples", home=home)
    assert got.returncode == 0, got.stderr[-3000:]
    assert "  004-bufferbloat  " in got.stdout
    got = as_nobody(netrig, "graph", "004-bufferbloat", home=home)
    assert got.returncode == 0, got.stderr[-3000:]
    assert "s0-h2" in got.stdout
