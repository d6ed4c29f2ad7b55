"""`netrig run`'s progress: readable at 80 and 60 columns, one plain line per run in a
pipe; runs done of the total, the point in words, elapsed and left with units."""

from __future__ import annotations

import io
import re

import pytest
from netrig.exp.execute.progress import Display, duration, opening, status, words

PARAMS = {"links.s0-h2.aqm": {"type": "pie", "target": "20ms"}, "flows.bulk.window": "16KB"}


def test_durations_carry_units():
    assert [duration(s) for s in (0, 45, 125, 3720)] == ["0 s", "45 s", "2 min 05 s", "1 h 02 min"]


def test_a_point_in_words():
    assert words(PARAMS) == "aqm pie(target=20ms) on s0-h2, bulk's window 16KB"
    assert words({"flows.*.cc": "reno", "duration": "5s"}) == "every flow's cc reno, duration 5s"
    assert words({"flows.bulk.kind,flows.bulk.rate": ["udp", "10Mbit"]}) == \
        "bulk's kind udp, bulk's rate 10Mbit"


@pytest.mark.parametrize("width", [80, 60])
def test_the_status_line_fits_and_keeps_its_numbers(width):
    point = "point 3/8: " + words(PARAMS)
    line = status(7, 24, point, 125, 1510, width, "2/3")
    assert len(line) <= width, line
    assert "7/24" in line and "~25 min 10 s left" in line
    assert "point 3/8: aqm pie(target=20ms)" in line  # cut last, after the time elapsed
    if width == 80:
        assert "point 3/8: aqm pie(target=20ms) on s0-h2, bulk" in line


@pytest.mark.parametrize("rep", ["", "1/3"])
def test_at_80_columns_the_point_keeps_its_identity_and_decoration_goes_first(rep):
    # issue 27: on a terminal of 80 columns (79 drawn) the line was cut at `aqm pie(tar…`
    point = "point 3/4: aqm pie(target=20ms) on s0-h2"
    line = status(2, 4, point, 65, 130, 79, rep)
    assert len(line) <= 79, line
    assert "…" not in line and line.endswith(point + (", rep 1/3" if rep else "")), line
    assert line.startswith("2/4 runs · ~2 min 10 s left · point 3/4")  # elapsed went first


def test_a_point_too_long_for_the_barest_line_is_cut_at_its_end():
    point = "point 3/8: " + words(PARAMS)
    line = status(7, 24, point, 125, 1510, 50, "2/3")
    assert len(line) == 50 and line.startswith("7/24 · ~25 min 10 s left · point 3/8: aqm")
    assert line.endswith("…")
    assert status(7, 24, point, 125, 1510, 20) == "7/24 · ~25 min 10 s"  # no room for words


def test_the_opening_line_fits_80_columns():
    out = "results/bufferbloat/20261127-101500"
    said = opening("bufferbloat", 4, 1, 96, out, 80)
    assert said.splitlines() == ["netrig: bufferbloat: 4 points x 1 repetition = 4 runs, about 1 min 36 s",
                                 f"  results in {out}"]
    assert opening("b", 1, 3, 20, "r/b/1", 80) == "netrig: b: 1 point x 3 repetitions = 3 runs, about 20 s; results in r/b/1"


def test_a_status_line_at_80_columns_holds_the_whole_point_when_it_fits():
    line = status(1, 4, "point 2/4: aqm pie on s0-h2", 12, 30, 80)
    assert line == "1/4 runs done (25%) · 12 s elapsed · ~30 s left · point 2/4: aqm pie on s0-h2"


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def show(stream, monkeypatch, columns: int) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    with Display(4, 40.0, True, stream) as d:
        for k in range(4):
            d.start_run(k, k // 2, 2, {"links.s0-h2.aqm": ["droptail", "pie"][k // 2]}, k % 2, 2)
            d.tick(3.0)
            d.end_run(k, 8.0, 1.0, "run p001-r01 failed: no route" if k == 3 else "")


def test_in_a_pipe_one_line_per_run_and_no_carriage_return(monkeypatch):
    out = io.StringIO()
    show(out, monkeypatch, 80)
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert [re.match(r"run (\d)/4: ", x).group(1) for x in lines[:4]] == ["1", "2", "3", "4"]
    assert lines[0].startswith("run 1/4: point 1/2: aqm droptail on s0-h2, repetition 1/2 · 0 s elapsed")
    assert lines[0].endswith("~40 s left")
    assert lines[4] == "netrig: run p001-r01 failed: no route"


@pytest.mark.parametrize("columns", [80, 60])
def test_on_a_terminal_each_redraw_fits_the_width(monkeypatch, columns):
    out = FakeTty()
    show(out, monkeypatch, columns)
    shown = [s.removeprefix("\x1b[K") for chunk in out.getvalue().split("\n")
             for s in chunk.split("\r") if s]
    assert shown, out.getvalue()
    assert all(len(s) < columns for s in shown), [s for s in shown if len(s) >= columns]
    assert any(s.startswith("2/4 ") and "left" in s and "point 2/2: aqm pie on s0-h2" in s
               and ("elapsed" in s or columns < 80) for s in shown)
    assert "run p001-r01 failed: no route" in shown
    assert shown[-1].startswith("4/4 runs done (100%)")
