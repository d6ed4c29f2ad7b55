"""The examples installed with netrig (netrig.exp.spec.examples): every one listed on a
line of at most 80 columns, a name found from any directory (a path that exists wins),
a topology file an example names found beside it, and a wrong name told with the
nearest one."""

from __future__ import annotations

from pathlib import Path

import pytest
from netrig.cli import main
from netrig.exp import pipeline
from netrig.exp.spec import examples as ex

REPO = Path(__file__).resolve().parents[2]


def test_the_examples_live_in_the_package_and_the_checkouts_examples_is_that_directory():
    assert ex.DIR.parent.name == "netrig" and (ex.DIR.parent / "__init__.py").is_file()
    assert (ex.DIR / "004-bufferbloat.yaml").is_file()
    if (REPO / "pyproject.toml").is_file() and (REPO / "python").is_dir():  # a checkout
        assert (REPO / "examples").is_symlink()
        assert (REPO / "examples").resolve() == (REPO / "python" / "netrig" / "examples").resolve()


def test_every_example_is_listed_with_its_kind_and_one_line():
    got = {e.name: e for e in ex.listed()}
    assert set(got) >= {p.stem for p in ex.DIR.glob("*.yaml")}
    assert got["004-bufferbloat"].kind == "scenario"
    assert got["004-bufferbloat"].about.startswith("Bufferbloat (seed 004): a bulk TCP flow")
    assert got["portfolio"].kind == "topology" and got["lan"].kind == "topology"
    assert got["lan"].about.startswith("Seed 000's LAN (VIRL)")  # its first comment sentence
    assert got["mininet/bufferbloat.py"].kind == "mininet"
    assert got["mininet/bufferbloat.py"].about.startswith("seed 004's experiment")
    for e in got.values():
        assert e.about and "\n" not in e.about, e.name


@pytest.mark.parametrize("width", [80, 60])
def test_the_listing_fits_its_width_one_line_an_example(width):
    listed = ex.listed()
    text = ex.listing(listed, width=width)
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines if not line.startswith("DIR: ")), \
        [line for line in lines if len(line) > width]
    for e in listed:
        assert sum(line.split()[0] == e.name for line in lines if line.startswith("  ")) == 1
    assert f"DIR: {ex.DIR}" in lines
    assert "  004-bufferbloat    Bufferbloat (seed 004): a bulk TCP flow through a 1.5…" in \
        ex.listing(listed, width=80)


def test_a_name_finds_the_installed_example_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert ex.find("004-bufferbloat") == str(ex.DIR / "004-bufferbloat.yaml")
    assert ex.find("004-bufferbloat.yaml") == str(ex.DIR / "004-bufferbloat.yaml")
    s = pipeline.load("004-bufferbloat", quick=True)
    assert s.name == "004-bufferbloat"
    # 002-paths names its topology file (topology: portfolio.yaml): found beside it
    assert "h9" in pipeline.load("002-paths", quick=True).points[0].topology.nodes


def test_a_path_that_exists_wins_over_a_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mine = (ex.DIR / "004-bufferbloat.yaml").read_text().replace(
        "name: 004-bufferbloat", "name: mine")
    (tmp_path / "004-bufferbloat.yaml").write_text(mine)
    assert ex.find("004-bufferbloat.yaml") == "004-bufferbloat.yaml"
    assert pipeline.load("004-bufferbloat.yaml").name == "mine"
    assert ex.find("004-bufferbloat") == str(ex.DIR / "004-bufferbloat.yaml")  # no such path


@pytest.mark.parametrize("given, said", [
    ("004-bufferbloa", "no scenario file or example named 004-bufferbloa; did you mean "
                       "004-bufferbloat? ('netrig examples' lists them)"),
    ("examples/004-bufferbloat.yaml", "no scenario file or example named "
     "examples/004-bufferbloat.yaml; did you mean 004-bufferbloat? ('netrig examples' lists them)"),
    ("zzzz", "no scenario file or example named zzzz ('netrig examples' lists them)"),
    ("mininet", "no scenario file or example named mininet ('netrig examples' lists them)"),
    ("../004-bufferbloat", "no scenario file or example named ../004-bufferbloat; did you mean "
                           "004-bufferbloat? ('netrig examples' lists them)"),
])
def test_a_wrong_name_is_told_with_the_nearest_example(tmp_path, monkeypatch, given, said):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ex.NoExample) as e:
        ex.find(given)
    assert str(e.value) == said


def test_a_name_past_its_bound_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ex.NoExample, match="a name has at most 255 characters"):
        ex.find("x" * 5000)
    with pytest.raises(ex.NoExample, match="a name has at most 255 characters"):
        ex.find("004-bufferbloat\0")


def test_the_commands_take_an_examples_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["examples"]) == 0
    out = capsys.readouterr().out
    assert "  004-bufferbloat  " in out and "  portfolio  " in out
    assert main(["graph", "004-bufferbloat"]) == 0
    assert "s0-h2  1.5 Mbit/s" in capsys.readouterr().out
    assert main(["explain", "portfolio", "h1", "h9"]) == 0
    assert "L3" in capsys.readouterr().out
    assert main(["graph", "portfolo"]) == 1
    assert "no topology or scenario file or example named portfolo; did you mean portfolio?" \
        in capsys.readouterr().err
