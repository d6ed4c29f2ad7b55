"""How a routed lab starts FRR, without running it: the lab's state saved in batches
as routers' daemons start (and what a crash between saves leaves to `frr.strays`)."""

from __future__ import annotations

import itertools

import pytest
from netrig.lab import build
from netrig.lab.state import LabState


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(build.time, "monotonic", c)
    return c


def _start(monkeypatch, clock: Clock, routers: int, step_s: float, **kw) -> list[int]:
    """Starts `routers` fake routers, `step_s` apart; how many each save named."""
    st = LabState("sv", "<python>")
    saves: list[int] = []
    monkeypatch.setattr(LabState, "save", lambda self: saves.append(len(self.frr)))

    def start(plan, lab_dir, node_ns, record) -> None:
        for k in range(routers):
            clock.now += step_s
            record(f"r{k}", {"zebra": [1000 + k, 7], "ospfd": [2000 + k, 7]})

    monkeypatch.setattr(build.frr, "start", start)
    build._start_frr(None, st, {}, **kw)
    assert len(st.frr) == routers
    return saves


def test_the_state_is_saved_every_50_routers_and_at_the_end(monkeypatch, clock):
    assert _start(monkeypatch, clock, 120, 0.001) == [50, 100, 120]


def test_the_state_is_saved_every_half_second_while_routers_start_slowly(monkeypatch, clock):
    assert _start(monkeypatch, clock, 10, 0.2) == [3, 6, 9, 10]


def test_a_small_lab_is_saved_once(monkeypatch, clock):
    assert _start(monkeypatch, clock, 4, 0.01) == [4]


def test_a_failed_start_saves_nothing_more_and_keeps_what_it_recorded(monkeypatch, clock):
    """build's failure path tears down from the state in memory (every router recorded),
    not from the file."""
    st = LabState("sv", "<python>")
    saves: list[int] = []
    monkeypatch.setattr(LabState, "save", lambda self: saves.append(len(self.frr)))
    count = itertools.count()

    def start(plan, lab_dir, node_ns, record) -> None:
        for k in range(3):
            record(f"r{k}", {"zebra": [next(count), 7]})
        raise build.LabError("router r3: zebra did not start")

    monkeypatch.setattr(build.frr, "start", start)
    with pytest.raises(build.LabError, match="r3"):
        build._start_frr(None, st, {})
    assert saves == [] and sorted(st.frr) == ["r0", "r1", "r2"]
