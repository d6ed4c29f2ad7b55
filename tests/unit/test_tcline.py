"""tc's command line read as a change of a netrig link direction (netrig.link.tcline):
tc's units and abbreviations, each qdisc kind, the refusals with their words and exit
status, and round trips through the kernel backend's own translator (direction -> tc
lines -> this reader -> the same direction)."""

from __future__ import annotations

import pytest
from netrig.link import kernel, tcline, tcwords
from netrig.link.spec import resolve
from netrig.link.tcline import Htb, TcLineError

SEED = {"rate": "10Mbit", "delay": "5ms"}  # seed 004's bottleneck, as its topology gives it


def run(line: str, current: dict | None = None, htb: Htb | None = None) -> tcline.Applied:
    """`tc qdisc|class ...` (the words after tc) applied to a direction's keys."""
    obj, *words = line.split()
    return tcline.apply(tcline.parse(obj, words), current or {}, htb)


def refused(line: str, current: dict | None = None, htb: Htb | None = None) -> TcLineError:
    with pytest.raises(TcLineError) as e:
        run(line, current, htb)
    return e.value


# tc's units (iproute2 6.1: get_time, get_rate64, get_size, parse_percent).

@pytest.mark.parametrize("word, us", [("10ms", 10_000), ("1.5s", 1_500_000), ("100us", 100), ("100", 100),
                                      ("2MSEC", 2000), ("3secs", 3_000_000), ("1.0019ms", 1001)])
def test_times_as_tc_reads_them(word, us):
    assert tcwords.time_us(word, "x") == us


@pytest.mark.parametrize("word, bps", [
    ("10mbit", 10_000_000), ("10Mbit", 10_000_000), ("1mibit", 1 << 20), ("1mbps", 8_000_000),
    ("1MBps", 8_000_000), ("500kbit", 500_000), ("1Kibit", 1024), ("8000", 8000), ("1gbit", 10**9),
    ("1001bit", 1000),  # tc keeps whole bytes per second, truncated
])
def test_rates_as_tc_reads_them(word, bps):
    assert tcwords.rate_bps(word, "x") == bps


@pytest.mark.parametrize("word, n", [("1500", 1500), ("10kb", 10240), ("10K", 10240), ("1mb", 1 << 20),
                                     ("1mbit", 1 << 17), ("64b", 64)])
def test_sizes_as_tc_reads_them(word, n):
    assert tcwords.size(word, "x") == n


def test_percentages_with_or_without_the_sign():
    assert tcwords.percent("1%", "x") == tcwords.percent("1", "x") == 0.01
    assert tcwords.percent("0.123456%", "x") == float("0.123456") / 100
    for bad, status in (("101%", 1), ("1%%", 1), ("one", 1)):
        with pytest.raises(TcLineError) as e:
            tcwords.percent(bad, "netem loss")
        assert e.value.status == status and "netem loss" in str(e.value)


@pytest.mark.parametrize("word, reader", [("10m", tcwords.time_us), ("fast", tcwords.rate_bps),
                                          ("10mbits", tcwords.rate_bps), ("10kib", tcwords.size)])
def test_words_tc_cannot_read_are_status_1(word, reader):
    with pytest.raises(TcLineError) as e:
        reader(word, "netem delay")
    assert e.value.status == 1 and f"'{word}'" in str(e.value) and "netem delay" in str(e.value)


def test_a_rate_as_a_percentage_is_refused_naming_it():
    e = refused("qdisc add dev s0-eth2 root tbf rate 50% burst 15k latency 10ms")
    assert e.status == 2 and str(e).startswith("tbf rate 50%: a rate as a percentage of the device's speed")


def test_abbreviations_as_tc_matches_them():
    assert tcline.verb_of("del") == "delete" and tcline.verb_of("rep") == "replace"
    assert tcline.verb_of("a") == "add" and tcline.verb_of("dal") is None
    # netem's own: `lat` is latency, `dup` duplicate, `dist` distribution
    assert run("qdisc add dev x root netem lat 10ms dup 1% limit 50").text == {
        "delay": "10ms", "duplicate": "1%", "queue": "50p"}


# Seed 004's line, and each kind setting its stages while keeping the others.

def test_seed_004_pie_keeps_the_rate_and_the_delay():
    a = run("qdisc add dev s0-eth2 root pie limit 1000 target 20ms", SEED)
    assert a.text == {"rate": "10Mbit", "delay": "5ms", "aqm": {"type": "pie", "target": "20ms"},
                      "queue": "1000p"}
    d = resolve(a.text)
    assert (d.rate_bps, d.delay_s, d.aqm.name, d.aqm.get("target"), d.limit) == (10e6, 0.005, "pie", 0.02,
                                                                                 (1000, None))


def test_netem_sets_the_delay_loss_stage_whole_and_keeps_rate_and_queue():
    cur = {"rate": "10Mbit", "delay": "5ms", "loss": "1%", "queue": "100p", "aqm": "codel"}
    assert run("qdisc add dev x root netem delay 20ms", cur).text == {
        "rate": "10Mbit", "queue": "100p", "aqm": "codel", "delay": "20ms"}
    assert run("qdisc change dev x root netem delay 20ms 5ms 25% distribution normal loss random 1% 10% "
               "duplicate 2% corrupt 0.1% reorder 25% gap 5 limit 300 rate 30mbit 24 ecn", cur).text == {
        "aqm": "codel", "delay": "20ms", "jitter": "5ms", "correlation": "25%", "distribution": "normal",
        "loss": "1%", "loss_correlation": "10%", "duplicate": "2%", "corrupt": "0.1%", "reorder": "25%",
        "reorder_gap": 5, "queue": "300p", "rate": "30000000bit", "overhead": 24, "ecn": True}


def test_netem_loss_models():
    assert run("qdisc add dev x root netem loss gemodel 1% 10% 70% 0.1%").text == {
        "gemodel": {"p": "1%", "r": "10%", "loss_bad": "70%", "loss_good": "0.1%"}}
    assert run("qdisc add dev x root netem loss gemodel 1%").text == {   # tc's defaults: r = 1 - p
        "gemodel": {"p": "1%", "r": "99%", "loss_bad": "100%", "loss_good": "0%"}}
    assert run("qdisc add dev x root netem loss 2%").text == {"loss": "2%"}  # the old syntax
    # 4-state with p32 = p14 = 0 is Gilbert-Elliott (loss 0 in the gap, 100% in the burst)
    assert run("qdisc add dev x root netem loss state 1% 30%").text == {
        "gemodel": {"p": "1%", "r": "30%", "loss_good": "0%", "loss_bad": "100%"}}
    e = refused("qdisc add dev x root netem loss state 1% 30% 0 100% 2%")
    assert e.status == 2 and str(e).startswith("netem loss state p14 2%: netrig-link's loss has two states")


def test_aqms_take_the_queue_and_change_keeps_what_the_line_leaves_out():
    cur = {"rate": "10Mbit", "queue": "100p"}
    a = run("qdisc add dev x root codel target 2ms interval 40ms ecn", cur)
    assert a.text == {"rate": "10Mbit", "aqm": {"type": "codel", "target": "2ms", "interval": "40ms",
                                                "ecn": True}}
    b = run("qdisc change dev x root codel limit 50 noecn", a.text)
    assert b.text["aqm"] == {"type": "codel", "target": "2ms", "interval": "40ms", "ecn": False}
    assert b.text["queue"] == "50p"
    assert run("qdisc replace dev x root codel", a.text).text == {"rate": "10Mbit", "aqm": "codel"}
    assert run("qdisc add dev x root fq_codel flows 64 quantum 300 noecn").text == {
        "aqm": {"type": "fq_codel", "flows": 64, "quantum": 300, "ecn": False}}
    assert run("qdisc add dev x root pie alpha 4 beta 32 tupdate 30ms ecn").text == {
        "aqm": {"type": "pie", "alpha": 0.25, "beta": 2.0, "tupdate": "30ms", "ecn": True}}


def test_red_as_netrig_links_red():
    a = run("qdisc add dev x root red limit 400000 min 30000 max 90000 avpkt 1000 burst 133 "
            "probability 0.02 bandwidth 10mbit ecn", SEED)
    assert a.text == {**SEED, "aqm": {"type": "red", "ecn": True, "min_th": "30000B", "max_th": "90000B",
                                      "max_p": 0.02}, "queue": "400000B"}
    # tc's default burst (31 here) averages with 2^-2 where netrig-link's RED uses 0.002: refused, saying so
    e = refused("qdisc add dev x parent 5:1 handle 6: red limit 1000000 min 30000 max 35000 avpkt 1000 "
                "bandwidth 10mbit probability 1", SEED)
    assert e.status == 2 and str(e) == ("red burst 31: with min 30000 tc derives an averaging weight of "
                                        "2^-2; netrig-link's RED averages with 0.002 (2^-9): give burst 133")
    assert refused("qdisc add dev x root red limit 1000000 min 30000 avpkt 1000 burst 20").status == 1
    assert "avpkt 1500" in str(refused("qdisc add dev x root red limit 1000000 min 30000 avpkt 1500"))
    e = refused("qdisc add dev x root red limit 400000 min 30000 avpkt 1000 burst 133 bandwidth 20mbit",
                SEED)
    assert "link's own rate (10000000bit/s)" in str(e)


def test_tbf_sets_the_rate_and_the_queue_in_bytes():
    a = run("qdisc add dev x root tbf rate 5mbit burst 15k latency 20ms", {**SEED, "queue": "100p"})
    # tc's limit from latency: 625 000 B/s x 20 ms + 15 360 B of burst
    assert a.text == {"delay": "5ms", "rate": "5000000bit", "queue": "27860B"}
    assert run("qdisc add dev x root tbf rate 1mbit burst 1600 limit 3000 overhead 24").text == {
        "rate": "1000000bit", "queue": "3000B", "overhead": 24}
    assert refused("qdisc add dev x root tbf rate 1mbit limit 3000").status == 1  # burst is tc's mandatory
    assert str(refused("qdisc add dev x root tbf rate 1mbit burst 2k limit 3000 peakrate 2mbit mtu 1600")
               ).startswith("tbf peakrate: netrig-link's rate has no second (peak) bucket")


def test_htb_with_one_class_as_mininet_writes_it():
    a = run("qdisc add dev s1-eth1 root handle 5:0 htb default 1", SEED)
    assert (a.text, a.htb) == ({"delay": "5ms"}, Htb(5, 1))  # no rate until the class comes
    b = run("class add dev s1-eth1 parent 5:0 classid 5:1 htb rate 20.000000Mbit burst 15k", a.text, a.htb)
    assert (b.text, b.htb) == ({"delay": "5ms", "rate": "20000000bit"}, Htb(5, 1))
    c = run("qdisc add dev s1-eth1 parent 5:1 handle 10: netem delay 10ms limit 100", b.text, b.htb)
    assert (c.text, c.htb) == ({"rate": "20000000bit", "delay": "10ms", "queue": "100p"}, Htb(5, 1))
    e = refused("class add dev s1-eth1 parent 5:0 classid 5:2 htb rate 1mbit", a.text, a.htb)
    assert e.status == 2 and str(e).startswith("class 5:2: htb's default class is 5:1")
    e = refused("class add dev s1-eth1 parent 1: classid 1:1 htb rate 1mbit")
    assert str(e).startswith("class add: s1-eth1 has no htb qdisc at its root")
    assert "ceil" in str(refused("class add dev x parent 5: classid 5:1 htb rate 1mbit ceil 2mbit",
                                 a.text, a.htb))
    # default is hex, as tc reads it
    assert run("qdisc add dev x root handle 1: htb default 10").htb == Htb(1, 0x10)


def test_fifos_and_delete():
    assert run("qdisc add dev x root pfifo limit 50", {"aqm": "pie", **SEED}).text == {**SEED,
                                                                                       "queue": "50p"}
    assert run("qdisc add dev x root bfifo limit 64kb").text == {"queue": "65536B"}
    assert run("qdisc add dev x root bfifo").text == {"queue": "1514000B"}  # txqueuelen x (MTU + header)
    a = run("qdisc del dev x root", {**SEED, "aqm": "pie"}, Htb(1, 1))
    assert (a.text, a.htb) == ({}, None)
    e = refused("qdisc del dev x parent 5:1 handle 10:")
    assert e.status == 2 and "tc qdisc del dev x root" in str(e)


@pytest.mark.parametrize("line, status, start", [
    ("qdisc add dev x root netem slot 10ms", 2, "netem slot: netrig-link has no time slots"),
    ("qdisc add dev x root netem duplicate 1% 30%", 2, "netem duplicate correlation 30%: netrig-link's "
                                                      "duplicate is independent"),
    ("qdisc add dev x root netem rate 1mbit 0 53 5", 2, "netem rate cellsize 53: netrig-link's rate counts "
                                                        "frames"),
    ("qdisc add dev x root netem delay 10ms bogus", 1, "netem: what is 'bogus'?"),
    ("qdisc add dev x root netem reorder 10%", 1, "netem: reordering is not possible without some delay"),
    ("qdisc add dev x root netem delay", 255, "'delay' needs a value after it"),
    ("qdisc add dev x root netem distribution custom delay 1ms 1ms", 2, "netem distribution custom:"),
    ("qdisc add dev x root pie bytemode", 2, "pie bytemode: netrig-link's PIE (RFC 8033) measures"),
    ("qdisc add dev x root codel ce_threshold 1ms", 2, "codel ce_threshold: netrig-link's codel has no "
                                                      "ce_threshold"),
    ("qdisc add dev x root sfq perturb 10", 2, "qdisc sfq: netrig-link's direction is a rate, a delay/loss "
                                               "stage and one queue"),
    ("qdisc add dev x root red limit 1000 min 30000 max 90000 avpkt 1000 burst 133 adaptive", 2,
     "red adaptive:"),
    ("qdisc add dev x root handle 1: htb default 1 offload", 2, "htb offload:"),
    ("qdisc add dev x parent 1:1 handle 2: htb", 2, "htb under another qdisc:"),
    ("qdisc add dev x root", 2, "qdisc add: which qdisc?"),
    ("qdisc add dev x root estimator 1s 8s netem", 2, "estimator: netrig's tc takes no rate estimators"),
    ("class add dev x parent 1: classid 1:1 hfsc sc rate 1mbit", 2, "class of hfsc:"),
])
def test_refusals_name_the_word_and_give_tcs_status(line, status, start):
    e = refused(line, {}, Htb(1, 1))
    assert e.status == status and str(e).startswith(start), str(e)


# Round trips: a direction -> the kernel backend's tc lines -> this reader -> the same direction.

def replay(text: dict) -> dict:
    current: dict = {}
    htb = None
    for line in kernel.tc_lines("eth0", resolve(text), "link l a_to_b"):
        a = run(line, current, htb)
        current, htb = a.text, a.htb
    return current


def same(a: dict, b: dict) -> None:
    da, db = resolve(a), resolve(b)
    assert {k: v for k, v in da.values.items() if k != "queue"} == \
        {k: v for k, v in db.values.items() if k != "queue"}
    assert da.limit == db.limit and da.aqm.name == db.aqm.name
    assert {p: da.aqm.get(p) for p in da.aqm.info.params} == {p: db.aqm.get(p) for p in db.aqm.info.params}


@pytest.mark.parametrize("text", [
    {"rate": "30Mbit"},
    {"rate": "30Mbit", "queue": "50p"},
    {"rate": "30Mbit", "queue": "64KB"},
    {"rate": "1Gbit", "overhead": 24},
    {"queue": "20p"},
    {"rate": "30Mbit", "delay": "1.19ms", "jitter": "250us", "correlation": "25%", "loss": "0.123456%",
     "loss_correlation": "10%", "duplicate": "1%", "corrupt": "0.1%", "reorder": "25%", "reorder_gap": 5,
     "queue": "100p"},
    {"delay": "10ms", "jitter": "2ms", "distribution": "normal"},
    {"delay": "2.5s"},
    {"loss": "33.333333333%"},
    {"gemodel": {"p": "1%", "r": "10%", "loss_good": "0.5%", "loss_bad": "70%"}, "ecn": True},
    {"loss": "2%", "ecn": True},
    {"delay": "5ms", "reorder": "10%"},
    {"rate": "10Mbit", "aqm": "pie"},
    {"rate": "10Mbit", "aqm": {"type": "pie", "target": "20ms", "tupdate": "30ms", "alpha": 0.25, "beta": 2,
                               "ecn": True}},
    {"rate": "10Mbit", "aqm": {"type": "codel", "target": "1.19ms", "interval": "50ms", "ecn": True}},
    {"rate": "10Mbit", "aqm": "fq_codel"},
    {"rate": "10Mbit", "aqm": {"type": "fq_codel", "flows": 64, "quantum": 300, "target": "2ms",
                               "interval": "40ms", "ecn": False}},
    {"rate": "10Mbit", "aqm": "red"},
    {"rate": "10Mbit", "aqm": {"type": "red", "min_th": "20KB", "max_th": "60KB", "max_p": 0.1, "ecn": True}},
    {"aqm": "codel", "queue": "300p"},
    {},
])
def test_round_trip_through_the_kernel_backends_lines(text):
    same(replay(text), text)
