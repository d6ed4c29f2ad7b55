"""compile_bpf: tcpdump's program for an expression, and tcpdump's words for a bad one."""

from __future__ import annotations

import shutil

import pytest
from netrig.link.bpf import CaptureFilterError, compile_bpf

pytestmark = [pytest.mark.net,  # tcpdump (netguard keeps pure tests from running it)
              pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump compiles filters")]


def test_an_expression_compiles_to_tcpdumps_instructions():
    assert compile_bpf("len > 1000") == [(128, 0, 0, 0), (37, 0, 1, 1000), (6, 0, 0, 262144), (6, 0, 0, 0)]
    tcp = compile_bpf("tcp")
    assert tcp[0] == (40, 0, 0, 12) and tcp[-1] == (6, 0, 0, 0) and all(len(i) == 4 for i in tcp)


def test_a_bad_expression_quotes_tcpdump():
    with pytest.raises(CaptureFilterError) as e:
        compile_bpf("tcp[")
    assert str(e.value) == "capture filter 'tcp[': tcpdump: can't parse filter expression: syntax error"


def test_an_expression_is_never_taken_for_an_option():
    with pytest.raises(CaptureFilterError, match="capture filter '-w /tmp/x'"):
        compile_bpf("-w /tmp/x")
