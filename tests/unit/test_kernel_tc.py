"""The kernel backend's translators: the exact tc lines each direction becomes, and the
exact refusal of every parameter a kernel qdisc cannot express (pure: no tc is run)."""

from __future__ import annotations

import json

import pytest
from netrig.lab import qdiscs
from netrig.link import kernel, tc
from netrig.link.kernel import KernelBackendError
from netrig.link.spec import Direction, Discipline, resolve
from netrig.topo.load import loads

AT = "link r1-r2 a_to_b"
HTB30 = ["qdisc add dev eth0 root handle 1: htb default 1",
         "class add dev eth0 parent 1: classid 1:1 htb rate 30000000bit ceil 30000000bit burst 3750 cburst 3750"]
HTB10 = ["qdisc add dev eth0 root handle 1: htb default 1",
         "class add dev eth0 parent 1: classid 1:1 htb rate 10000000bit ceil 10000000bit burst 1600 cburst 1600"]
LEAF = "qdisc add dev eth0 parent 1:1 handle 10: "


def lines(text: dict) -> list[str]:
    return kernel.tc_lines("eth0", resolve(text), AT)


def refusal(text: dict | Direction) -> str:
    d = text if isinstance(text, Direction) else resolve(text)
    with pytest.raises(KernelBackendError) as e:
        kernel.tc_lines("eth0", d, AT)
    return str(e.value)


# htb and the drop-tail queues.

@pytest.mark.parametrize("text, want", [
    ({"rate": "30Mbit"}, HTB30 + [LEAF + "pfifo limit 1000"]),
    ({"rate": "30Mbit", "queue": "50p"}, HTB30 + [LEAF + "pfifo limit 50"]),
    ({"rate": "30Mbit", "queue": "64KB"}, HTB30 + [LEAF + "bfifo limit 64000"]),
    ({"rate": "30Mbit", "queue": "64KiB"}, HTB30 + [LEAF + "bfifo limit 65536"]),
    ({"rate": "1Gbit", "overhead": 24}, [
        "qdisc add dev eth0 root handle 1: htb default 1",
        "class add dev eth0 parent 1: classid 1:1 htb rate 1000000000bit ceil 1000000000bit burst 125000 "
        "cburst 125000 overhead 24", LEAF + "pfifo limit 1000"]),
    ({"queue": "20p"}, ["qdisc add dev eth0 root handle 10: pfifo limit 20"]),
    ({}, []),
])
def test_htb_and_fifo_lines(text, want):
    assert lines(text) == want


def test_a_rate_the_kernel_cannot_count_in_bytes_is_refused():
    assert refusal({"rate": "1001bit"}) == (
        "link r1-r2 a_to_b: rate: '1001bit' is 1001 bit/s, not a whole number of bytes per second, which is "
        "what the kernel's htb counts; use backend: userspace (netrig-link does it)")


# netem.

def test_netem_every_stage_exactly():
    assert lines({"rate": "30Mbit", "delay": "1.19ms", "jitter": "250us", "correlation": "25%",
                  "loss": "0.123456%", "loss_correlation": "10%", "duplicate": "1%", "corrupt": "0.1%",
                  "reorder": "25%", "reorder_gap": 5, "queue": "100p"}) == HTB30 + [
        LEAF + "netem limit 100 delay 1190us 250us 25% loss random 0.123456% 10% duplicate 1% corrupt 0.1% "
               "reorder 25% gap 5"]


@pytest.mark.parametrize("text, want", [
    ({"delay": "10ms"}, "netem limit 1000 delay 10000us"),
    ({"delay": "2.5s"}, "netem limit 1000 delay 2500000us"),
    ({"delay": "10ms", "jitter": "2ms", "distribution": "normal"},
     "netem limit 1000 delay 10000us 2000us distribution normal"),
    ({"delay": "10ms", "jitter": "2ms", "distribution": "uniform"}, "netem limit 1000 delay 10000us 2000us"),
    ({"loss": "5%"}, "netem limit 1000 loss random 5%"),
    ({"loss": "0.0001%"}, "netem limit 1000 loss random 0.0001%"),
    ({"loss": "33.333333333%"}, "netem limit 1000 loss random 33.333333333%"),
    ({"gemodel": {"p": "1%", "r": "10%", "loss_good": "0.5%", "loss_bad": "70%"}},
     "netem limit 1000 loss gemodel 1% 10% 70% 0.5%"),
    ({"gemodel": {"p": "1%", "r": "10%"}}, "netem limit 1000 loss gemodel 1% 10% 100% 0%"),
    ({"duplicate": "2%", "corrupt": "3%"}, "netem limit 1000 duplicate 2% corrupt 3%"),
    ({"delay": "5ms", "reorder": "10%"}, "netem limit 1000 delay 5000us reorder 10% gap 1"),
    # Modifiers of a stage that is off modify nothing, in netrig-link and here.
    ({"loss": "1%", "correlation": "50%", "reorder_gap": 3}, "netem limit 1000 loss random 1%"),
    ({"loss": "2%", "ecn": True}, "netem limit 1000 loss random 2% ecn"),
    ({"gemodel": {"p": "1%", "r": "10%"}, "ecn": True}, "netem limit 1000 loss gemodel 1% 10% 100% 0% ecn"),
])
def test_netem_lines(text, want):
    assert lines(text) == ["qdisc add dev eth0 root handle 10: " + want]


def test_percentages_are_what_the_user_wrote_and_read_back_as_the_same_number():
    for text in ("1", "0.123456", "33.333333333", "99.9999", "0.00001", "7", "29", "0.5"):
        p = float(text) / 100  # as netrig.units.fraction reads it
        assert tc.percent(p) == text + "%"
    # A fraction no percentage reads back exactly: netem's 32-bit value is still the same.
    s = tc.percent(1 / 3)
    assert round(float(s.rstrip("%")) / 100 * 0xFFFFFFFF) == round(1 / 3 * 0xFFFFFFFF)


@pytest.mark.parametrize("text, key, why", [
    ({"delay": "10ms", "queue": "64KB"}, "queue",
     "'64KB' is in bytes; the kernel's netem limits its queue in packets only"),
    ({"rate": "10Mbit", "delay": "10ms", "aqm": "pie"}, "aqm",
     "the kernel cannot put pie together with netem: netem, htb's leaf, holds the queue itself"),
    ({"delay": "1500ns"}, "delay",
     "'1500ns' (1500 ns) is not a whole number of microseconds, and the kernel's netem takes whole microseconds"),
    ({"delay": "10ms", "jitter": "1ms", "no_reorder": True}, "no_reorder",
     "the kernel's netem reorders jittered packets by their send time and cannot keep their order"),
    ({"trace": "/tmp/some.trace"}, "trace", "no kernel qdisc replays a delivery trace"),
])
def test_netem_refusals(text, key, why):
    assert refusal(text) == f"{AT}: {key}: {why}; use backend: userspace (netrig-link does it)"


# The AQMs: every parameter written, the schema's defaults included.

@pytest.mark.parametrize("aqm, want", [
    ("pie", "pie limit 1000 target 15000us tupdate 15000us alpha 2 beta 20 noecn"),
    ({"type": "pie", "target": "20ms", "tupdate": "30ms", "alpha": 0.25, "beta": 2, "ecn": True},
     "pie limit 1000 target 20000us tupdate 30000us alpha 4 beta 32 ecn"),
    ({"type": "pie", "alpha": 0.0625, "max_burst": "150ms"},
     "pie limit 1000 target 15000us tupdate 15000us alpha 1 beta 20 noecn"),
    ("codel", "codel limit 1000 target 5000us interval 100000us noecn"),
    ({"type": "codel", "target": "1.19ms", "interval": "50ms", "ecn": True},
     "codel limit 1000 target 1190us interval 50000us ecn"),
    ("fq_codel", "fq_codel limit 10240 flows 1024 quantum 1514 target 5000us interval 100000us ecn"),
    ({"type": "fq_codel", "flows": 64, "quantum": 300, "target": "2ms", "interval": "40ms", "ecn": False},
     "fq_codel limit 10240 flows 64 quantum 300 target 2000us interval 40000us noecn"),
    ("red", "red limit 400000 min 30000 max 90000 avpkt 1000 burst 133 probability 0.02 "
            "bandwidth 10000000bit"),
    ({"type": "red", "min_th": "20KB", "max_th": "60KB", "max_p": 0.1, "ecn": True},
     "red limit 400000 min 20000 max 60000 avpkt 1000 burst 106 probability 0.1 bandwidth 10000000bit ecn"),
])
def test_aqm_lines(aqm, want):
    assert lines({"rate": "10Mbit", "aqm": aqm}) == HTB10 + [LEAF + want]


def test_aqm_queue_limits_and_no_rate():
    assert lines({"aqm": "codel", "queue": "300p"}) == [
        "qdisc add dev eth0 root handle 10: codel limit 300 target 5000us interval 100000us noecn"]
    # Without a rate netrig-link's RED has no idle decay to time; tc's own default stands.
    assert lines({"aqm": "red", "queue": "100KB"}) == [
        "qdisc add dev eth0 root handle 10: red limit 100000 min 30000 max 90000 avpkt 1000 burst 133 "
        "probability 0.02"]


@pytest.mark.parametrize("aqm, queue, key, why", [
    ({"type": "pie", "alpha": 0.3}, None, "aqm.alpha",
     "0.3: the kernel's pie takes alpha in steps of 1/16 from 0.0625 to 2 (tc writes it as 1 .. 32)"),
    ({"type": "pie", "beta": 2.5}, None, "aqm.beta",
     "2.5: the kernel's pie takes beta in steps of 1/16 from 0.0625 to 2 (tc writes it as 1 .. 32)"),
    ({"type": "pie", "max_burst": "100ms"}, None, "aqm.max_burst",
     "'100ms': the kernel's pie has a fixed burst allowance of 150ms"),
    ({"type": "pie", "target": "15500ns"}, None, "aqm.target",
     "'15500ns' (15500 ns) is not a whole number of microseconds, and the kernel's pie takes whole microseconds"),
    ("pie", "64KB", "queue", "'64KB' is in bytes; the kernel's pie limits its queue in packets only"),
    ("codel", "64KB", "queue", "'64KB' is in bytes; the kernel's codel limits its queue in packets only"),
    ({"type": "codel", "interval": "100.0005ms"}, None, "aqm.interval",
     "'100.0005ms' (100000500 ns) is not a whole number of microseconds, and the kernel's codel takes "
     "whole microseconds"),
    ("fq_codel", "1MB", "queue", "'1MB' is in bytes; the kernel's fq_codel limits its queue in packets only"),
    ({"type": "fq_codel", "quantum": 128}, None, "aqm.quantum",
     "128: the kernel's fq_codel takes a quantum of 256 bytes or more"),
    ({"type": "red", "gentle": True}, None, "aqm.gentle", "the kernel's red has no gentle mode"),
    ("red", "300p", "queue", "'300p' is in packets; the kernel's red limits its queue in bytes only"),
    ({"type": "red", "max_p": 1}, None, "aqm.max_p",
     "1: the kernel's red takes a probability above 0 and below 1 (it holds it in 32 bits)"),
    ({"type": "red", "min_th": "1000B"}, None, "aqm.min_th",
     "1000 bytes: tc finds no burst that gives the kernel's red the averaging weight 2^-9 (netrig-link's "
     "is 0.002)"),
])
def test_aqm_refusals(aqm, queue, key, why):
    text = {"rate": "10Mbit", "aqm": aqm} | ({"queue": queue} if queue else {})
    assert refusal(text) == f"{AT}: {key}: {why}; use backend: userspace (netrig-link does it)"


def test_red_burst_gives_tc_the_weight_of_netrig_links_red():
    # tc derives Wlog from burst (tc_red_eval_ewma); 2^-9 is nearest netrig-link's wq 0.002.
    for min_th in (2000, 20000, 30000, 300000):
        burst = tc.red_burst(min_th)
        assert tc._red_wlog(min_th, burst, 1000) == 9
        assert tc._red_wlog(min_th, burst - 1, 1000) != 9
    # tc-red(8)'s rule of thumb, (2 min + max) / (3 avpkt), would give 1/32.
    assert tc._red_wlog(30000, (2 * 30000 + 90000) // 3000, 1000) == 5


# Every key is owned by a translator, or refused.

def test_a_key_no_translator_owns_is_refused():
    assert refusal(Direction({"rate": 10e6, "frobnicate": 1})) == (
        f"{AT}: frobnicate: the kernel backend has no translator for this key; use backend: userspace "
        "(netrig-link does it)")
    assert refusal(Direction({"rate": 10e6}, Discipline("pie", {"frobnicate": 1}))) == (
        f"{AT}: aqm.frobnicate: the kernel backend's pie has no translator for it; use backend: userspace "
        "(netrig-link does it)")
    assert refusal(Direction({"rate": 10e6}, Discipline("cake"))) == (
        f"{AT}: aqm: the kernel backend has no translator for the cake discipline; use backend: userspace "
        "(netrig-link does it)")


def test_every_schema_key_and_parameter_has_an_owner():
    from netrig.link.spec import DISCIPLINES, KEYS
    owned = set().union(*tc.OWNS.values())
    assert {k for k, key in KEYS.items() if key.kind != "discipline"} <= owned
    for name, info in DISCIPLINES.items():
        if name != "droptail":
            assert {f"aqm.{p}" for p in info.params} <= tc.OWNS[tc.AQM[name][0]], name


def test_the_probe_refuses_what_build_cannot_translate_before_touching_the_kernel():
    topo = loads(json.dumps({"backend": "kernel", "nodes": {"a": "host", "b": "host"}, "links": [
        {"a": "a", "b": "b", "rate": "10Mbit", "aqm": {"type": "red", "gentle": True}}]}))
    with pytest.raises(KernelBackendError) as e:
        qdiscs.check(topo, "never-made")  # no namespace is made: translation comes first
    assert "link a-b a_to_b: aqm.gentle: the kernel's red has no gentle mode" in str(e.value)
    assert "link a-b b_to_a: aqm.gentle" in str(e.value)
