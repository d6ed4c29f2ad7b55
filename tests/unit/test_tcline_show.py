"""`tc -s qdisc show` for a carried direction (netrig.link.tcshow): tc's own layout and
number formats, the kind that names what the direction runs, the counters' places; and
the shim's pure parts (netrig.lab.tcshim): its options, the real tc found past it on
PATH, the script it installs."""

from __future__ import annotations

import os
import re
import sys

import pytest
from netrig.lab import tcshim
from netrig.link import tcshow

COUNTERS = {"delivered": 2751, "delivered_bytes": 4052433, "lost": 10, "drops_overflow": 2400,
            "drops_aqm": 54, "drops_down": 0, "ecn_marks": 3, "queue_packets": 131, "queue_bytes": 198334}
SEED_PIE = {"rate": "10Mbit", "delay": "5ms", "aqm": {"type": "pie", "target": "20ms"}, "queue": "1000p"}


@pytest.mark.parametrize("n, shown", [(0, "0b"), (1514, "1514b"), (65536, "64Kb"), (65540, "64Kb"),
                                      (65552, "65552b"), (2 << 20, "2Mb"), (198334, "198334b")])
def test_sizes_as_tc_prints_them(n, shown):
    assert tcshow.sprint_size(n) == shown


@pytest.mark.parametrize("us, shown", [(20_000, "20ms"), (1_500_000, "1.5s"), (800, "800us"),
                                       (15_000, "15ms"), (1190, "1.19ms")])
def test_times_as_tc_prints_them(us, shown):
    assert tcshow.sprint_time(us) == shown


@pytest.mark.parametrize("bps, shown", [(10e6, "10Mbit"), (1.5e6, "1500Kbit"), (64, "64bit"),
                                        (1e9, "1Gbit"), (30e6, "30Mbit")])
def test_rates_as_tc_prints_them(bps, shown):
    assert tcshow.sprint_rate(bps) == shown


def test_seed_004s_pie_with_counters_is_tcs_layout():
    assert tcshow.show(SEED_PIE, COUNTERS, None) == (
        "qdisc pie 8001: root refcnt 2 limit 1000p target 20ms tupdate 15ms alpha 2 beta 20 \n"
        " Sent 4052433 bytes 2751 pkt (dropped 2464, overlimits 0 requeues 0) \n"
        " backlog 198334b 131p requeues 0\n")
    # seed 004's own regex reads the queue
    assert re.findall(r"backlog \d+b (\d+)p", tcshow.show(SEED_PIE, COUNTERS, None)) == ["131"]


def test_without_stats_one_line_and_the_device_named_when_tc_was_given_none():
    assert tcshow.show(SEED_PIE, None, "s0-eth2") == (
        "qdisc pie 8001: dev s0-eth2 root refcnt 2 limit 1000p target 20ms tupdate 15ms alpha 2 beta 20 \n")


@pytest.mark.parametrize("text, line", [
    ({"rate": "10Mbit", "delay": "20ms", "jitter": "5ms", "correlation": "25%", "loss": "1%",
      "queue": "100p"}, "qdisc netem 8001: root refcnt 2 limit 100 delay 20ms  5ms 25% loss 1% rate 10Mbit"),
    ({"gemodel": {"p": "1%", "r": "10%"}, "ecn": True},
     "qdisc netem 8001: root refcnt 2 limit 1000 loss gemodel p 1% r 10% 1-h 100% 1-k 0% ecn "),
    ({"delay": "5ms", "reorder": "25%", "reorder_gap": 5, "duplicate": "1%", "corrupt": "0.1%"},
     "qdisc netem 8001: root refcnt 2 limit 1000 delay 5ms duplicate 1% reorder 25% corrupt 0.1% gap 5"),
    ({"rate": "30Mbit", "overhead": 24}, "qdisc netem 8001: root refcnt 2 limit 1000 rate 30Mbit "
                                         "packetoverhead 24"),
    ({}, "qdisc pfifo 8001: root refcnt 2 limit 1000p"),
    ({"queue": "64KiB"}, "qdisc bfifo 8001: root refcnt 2 limit 64Kb"),
    ({"aqm": {"type": "codel", "ecn": True}}, "qdisc codel 8001: root refcnt 2 limit 1000p target 5ms "
                                              "interval 100ms ecn "),
    ({"aqm": "fq_codel"}, "qdisc fq_codel 8001: root refcnt 2 limit 10240p flows 1024 quantum 1514 "
                          "target 5ms interval 100ms ecn "),
    ({"aqm": "red", "rate": "10Mbit"}, "qdisc red 8001: root refcnt 2 limit 400000b min 30000b max 90000b "),
])
def test_the_kind_that_names_what_the_direction_runs(text, line):
    assert tcshow.show(text, None, None) == line + "\n"


def test_reds_overlimits_are_its_marks_and_early_drops():
    out = tcshow.show({"aqm": "red"}, COUNTERS, None)
    assert "(dropped 2464, overlimits 57 requeues 0)" in out


# The shim's pure parts.

def test_global_options_the_shim_takes_and_those_it_leaves_to_tc():
    assert tcshim._options(["-s", "qdisc", "show"]) == (True, ["qdisc", "show"])
    assert tcshim._options(["-statistics", "-d", "qdisc"]) == (True, ["qdisc"])
    assert tcshim._options(["--stats", "qdisc"]) == (True, ["qdisc"])
    assert tcshim._options(["qdisc", "add"]) == (False, ["qdisc", "add"])
    assert tcshim._options(["-j", "qdisc", "show"]) is None  # JSON: the real tc's
    assert tcshim._options(["-batch", "f"]) is None
    assert tcshim._show_args(["dev", "s0-eth2"]) == ("s0-eth2", False)
    assert tcshim._show_args(["dev", "s0-eth2", "ingress"]) == ("s0-eth2", True)
    assert tcshim._show_args(["root"]) == (None, False)


def test_the_real_tc_is_found_past_the_shim(tmp_path, monkeypatch):
    shim = tcshim.install(tmp_path / "bin")
    assert shim == tmp_path / "bin" / "tc" and shim.stat().st_mode & 0o777 == 0o700
    text = shim.read_text()
    assert text.startswith(f"#!{sys.executable}\n") and os.path.isabs(sys.executable)
    assert "from netrig.lab.tcshim import main" in text
    other = tmp_path / "other"
    other.mkdir()
    (other / "tc").write_text("#!/bin/sh\n")
    (other / "tc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{other}")
    assert tcshim.real_tc() == str(other / "tc")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}")
    assert tcshim.real_tc() in tcshim.REAL_TC


def test_a_state_file_without_the_shims_fields_reads_them_empty(tmp_path, monkeypatch):
    import json

    from netrig.lab import state

    monkeypatch.setattr(state, "LABS_DIR", tmp_path / "labs")
    (tmp_path / "labs" / "old").mkdir(parents=True)
    (tmp_path / "labs" / "old" / "state.json").write_text(json.dumps(
        {"prefix": "old", "topology": "<python>", "schema": 3, "frr": {}}))
    st = state.LabState.load("old")
    assert (st.egress, st.controls, st.tc_htb) == ({}, {}, {})
