"""The benches' command lines: help printed and bad sizes refused before any lab is
built. No root, no network: the bench runs only with --help or a word it cannot read
(never a number: an older bench would build that lab); ranges are checked on its parser."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import scriptmod

ROUTING_SCALE = Path(__file__).resolve().parents[2] / "bench" / "routing_scale"


def routing_scale(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROUTING_SCALE), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_routing_scale_prints_its_usage(flag):
    p = routing_scale(flag)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("Time, memory and CPU of OSPF labs"), p.stdout[:200]
    assert "Usage: bench/routing_scale [--no-floor | --floor-first] [SIZES...]" in p.stdout
    assert p.stderr == ""


@pytest.mark.parametrize("arg", ["abc", "1.5", "--no-floor abc", "--floor-first abc"])
def test_routing_scale_refuses_a_word_in_one_sentence(arg):
    p = routing_scale(*arg.split())
    word = arg.split()[-1]
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stderr == (f"routing_scale: '{word}' is not a number of routers; give whole numbers from 1 to 2000 "
                        "(see --help)\n"), p.stderr
    assert p.stdout == ""


def test_routing_scale_refuses_no_floor_with_floor_first():
    p = routing_scale("--no-floor", "--floor-first", "10")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == "routing_scale: --floor-first and --no-floor: give one of them\n", p.stderr


def test_routing_scale_sizes_are_bounded():
    bench = scriptmod.load("bench/routing_scale", "routing_scale")
    assert bench.parse_sizes([]) == [10, 50, 100]
    assert bench.parse_sizes(["1", "500", "2000"]) == [1, 500, 2000]
    for bad, says in [("0", "0 routers is outside 1 to 2000"), ("2001", "2001 routers is outside 1 to 2000"),
                      ("-3", "-3 routers is outside"), ("ten", "'ten' is not a number of routers")]:
        with pytest.raises(ValueError, match=says):
            bench.parse_sizes(["10", bad])
