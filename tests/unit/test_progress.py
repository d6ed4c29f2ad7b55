"""`netrig run`'s progress: readable at 80 and 60 columns, one plain line per run in a
pipe; runs done of the total, the point in words, elapsed and left with units."""

from __future__ import annotations

import io
import re

import pytest
from netrig.exp.execute.progress import Display, duration, status, words

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
    point = "point 3/8: " + words(PARAMS) + ", repetition 2/3"
    line = status(7, 24, point, 125, 1510, width)
    assert len(line) <= width, line
    assert "7/24 runs" in line and "2 min 05 s" in line and "~25 min 10 s left" in line
    assert "point 3/8" in line  # the start of the point's words: they are cut, not the numbers


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
    assert any(s.startswith("2/4 runs") and "elapsed" in s and "left" in s for s in shown)
    assert "run p001-r01 failed: no route" in shown
    assert shown[-1].startswith("4/4 runs done (100%)")
