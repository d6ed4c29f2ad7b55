"""netrig-analyze's numbers beside the flags (retransmission ratios, goodput, ack_rtt
percentiles, time in zero window) against the same numbers worked out from tshark's own
fields (tests/tsharknumbers.py), on the hand-built captures of tests/fixtures/pcap."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from netrig.capture.tcp import analyze
from tsharkdiff import TSHARK, builder
from tsharknumbers import number_differences

pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> dict[str, Path]:
    return builder().build_all(tmp_path_factory.mktemp("pcap"))


@pytest.mark.parametrize("name", sorted(builder().files()))
def test_each_fixtures_numbers_equal_those_from_tsharks_fields(fixtures, name):
    problems = number_differences(fixtures[name], analyze(fixtures[name]))
    assert not problems, "\n".join(problems)


def test_the_comparison_fails_on_a_wrong_number(fixtures):
    # t2.pcap has zero windows, retransmissions and RTT samples: each number is checked.
    doc = analyze(fixtures["t2.pcap"])
    d = next(s["directions"][k] for s in doc["streams"] for k in ("a_to_b", "b_to_a")
             if s["directions"][k]["zero_window_time"]["episodes"])
    assert d["zero_window_time"]["total_s"] > 0
    for path, change in [(("zero_window_time", "total_s"), 0.001), (("unique_payload_bytes",), 1),
                         (("retransmitted_data_packets",), 1)]:
        bad = copy.deepcopy(doc)
        x = next(s["directions"][k] for s in bad["streams"] for k in ("a_to_b", "b_to_a")
                 if s["directions"][k]["zero_window_time"]["episodes"])
        *head, last = path
        for p in head:
            x = x[p]
        x[last] += change
        assert number_differences(fixtures["t2.pcap"], bad), path
