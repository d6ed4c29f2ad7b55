"""The headline table a terminal shows after `netrig run` and from `netrig report DIR`:
flow, metric, measured, theory, ratio, verdict, at most 80 columns, plain decimals."""

from __future__ import annotations

from pathlib import Path

import pytest
from netrig.cli import main
from netrig.exp.analysis import results
from netrig.exp.render import headline
from test_report import make_results


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return make_results(tmp_path / "r")


def test_the_table_per_point(out):
    assert headline.summary(results.load(out)).splitlines() == [
        "at window=16KB:",
        "flow  metric      measured            theory      ratio       verdict",
        "----  ----------  ------------------  ----------  ----------  -----------",
        "bulk  throughput  9.5 ± 0.9 Mbit/s    9.5 Mbit/s  1.00        within",
        "rtt   rtt p50     31 ± 2.5 ms         21–40 ms    1 (at 53%)  within",
        "",
        "at window=64KB:",
        "flow  metric      measured            theory      ratio       verdict",
        "----  ----------  ------------------  ----------  ----------  -----------",
        "bulk  throughput  6.65 ± 0.12 Mbit/s  9.5 Mbit/s  0.70        below (3/3)",
        "rtt   rtt p50     36 ± 2.5 ms         21–40 ms    1 (at 79%)  within",
        "1 of 4 rows far from theory"]


@pytest.mark.parametrize("width", [80, 60])
def test_the_table_fits_the_width(out, width):
    text = headline.table(results.load(out), width)
    assert max(len(x) for x in text.splitlines()) <= width


def test_numbers_are_plain_decimals_with_units():
    assert [headline.number(v) for v in (1408080.0, 0.000123, 21.05, 828.456)] == \
        ["1408080", "0.000123", "21.05", "828.5"]
    assert headline.unit("throughput_bps", 1.4e6) == ("throughput", "Mbit/s", 1e-6)
    assert headline.unit("rtt_ms_p50", 30) == ("rtt p50", "ms", 1.0)
    assert headline.unit("fetch_s_mean", 0.2) == ("fetch mean", "s", 1.0)


def test_a_range_missed_says_by_how_much(out):
    line = headline.Line("", "rtt", "rtt_ms_p50", [80.0, 82.0, 84.0], 21.0, 40.0, 3, 3)
    # The report's and results.csv's ratio: measured ÷ the bound it missed.
    assert headline.cells(line) == ["rtt", "rtt p50", "82 ± 5 ms", "21–40 ms", "2.05", "above (3/3)"]


def test_netrig_report_prints_the_table_then_the_page(out, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["report", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "at window=16KB:" and "bulk  throughput  6.65 ± 0.12 Mbit/s" in "\n".join(lines)
    assert lines[-1] == f"report: {out / 'report.html'}"
