"""Live link changes on a real lab do what they say (issue 13): a loss turned on and off
again is gone, every discipline can follow every other, and a TCP flow follows a rate
taken down and up under it. Each change is checked against what netrig-link reports
running and against the traffic it carries."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest
from netlab import needs_root
from netrig.lab.network import Network
from netrig.lab.state import LabState
from netrig.link.spec import DISCIPLINES
from netrig.topo.model import TopologyError

pytestmark = pytest.mark.net

LAB = """
name: live
nodes: {h1: host, h2: host, h3: host, h4: host}
links:
  - {a: h1, b: h2, rate: 20Mbit, delay: 2ms, aqm: {type: pie, target: 20ms}}
  - {a: h2, b: h3, emulated: true}
  - [h3, h4]
"""


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    needs_root()
    path = tmp_path_factory.mktemp("live") / "live.yaml"
    path.write_text(LAB)
    with Network(path, prefix=f"live{os.getpid() % 100000}") as n:
        n.ping("h1", "h2", count=1)  # ARP
        yield n


def running(net: Network, d: str = "a_to_b") -> dict:
    """What netrig-link runs on link h1-h2 in direction d: its spec and counters."""
    link = net.link_stats()["links"][0]
    return {**link[d], "spec": link["spec"][d]}


def lost(net: Network) -> int:
    return sum(running(net, d)["lost"] for d in ("a_to_b", "b_to_a"))


def test_a_loss_turned_off_is_gone(net: Network) -> None:
    net.set_link("h1", "h2", loss="5%")
    assert running(net)["spec"]["loss"]["random"]["p"] == 0.05
    before = lost(net)
    net.ping("h1", "h2", count=400, interval=0.005)
    on = lost(net) - before
    assert 10 <= on <= 90, f"5 % loss on each of 800 crossings dropped {on}"  # ~39 expected
    net.set_link("h1", "h2", loss="0%")
    assert "loss" not in running(net)["spec"] and "loss" not in running(net, "b_to_a")["spec"]
    before = lost(net)
    net.ping("h1", "h2", count=400, interval=0.005)
    assert lost(net) == before, "loss 0% left the link losing packets"
    # The lab's state says what runs; the rest of the link is as it was built.
    st = LabState.load(net.prefix)
    assert st.link_changes["h1-h2"]["loss"] == "0%"
    assert running(net)["spec"]["queue"] == {"discipline": "pie", "target_ns": 20_000_000}
    assert running(net)["spec"]["delay_ns"] == 2_000_000


def test_every_discipline_follows_every_other(net: Network) -> None:
    names = list(DISCIPLINES)
    for a in names:
        for b in names:
            if a == b:
                continue
            for name in (a, b):
                net.set_link("h1", "h2", aqm=name)
                now = running(net)
                assert (now["qdisc"], now["spec"]["queue"]) == (name, {"discipline": name}), (a, b)
    # With parameters, and back to drop-tail: none of PIE's is left behind.
    net.set_link("h1", "h2", aqm={"type": "fq_codel", "target": "10ms", "flows": 64})
    assert running(net)["spec"]["queue"] == {"discipline": "fq_codel", "target_ns": 10_000_000, "flows": 64}
    net.set_link("h1", "h2", aqm="droptail")
    assert running(net, "b_to_a")["spec"]["queue"] == {"discipline": "droptail"}
    assert net.ping("h1", "h2", count=5, interval=0.05).received == 5


def test_a_bad_change_changes_nothing(net: Network) -> None:
    net.set_link("h1", "h2", aqm={"type": "codel", "target": "5ms"})
    before = net.link_stats()["links"][0]["spec"]
    with pytest.raises(TopologyError, match=r"aqm: codel does not take flows"):
        net.set_link("h1", "h2", aqm={"type": "codel", "flows": 4})
    with pytest.raises(TopologyError, match=r"rate: '0bit' is outside 1kbit \.\. 100Gbit"):
        net.set_link("h1", "h2", rate="0bit")
    assert net.link_stats()["links"][0]["spec"] == before


def test_one_direction_and_a_plain_link(net: Network) -> None:
    net.set_link("h1", "h2", dir="b_to_a", delay="10ms")
    assert running(net, "b_to_a")["spec"]["delay_ns"] == 10_000_000
    assert running(net, "a_to_b")["spec"]["delay_ns"] == 2_000_000
    net.set_link("h1", "h2", delay="3ms")  # both: the direction's own 10ms gives way
    assert running(net, "b_to_a")["spec"]["delay_ns"] == 3_000_000
    with pytest.raises(Exception, match=r"h3-h4 is a plain veth pair .* add `emulated: true`"):
        net.set_link("h3", "h4", delay="5ms")


def test_an_emulated_link_unshaped_until_shaped_live(net: Network) -> None:
    h2h3 = net.link_stats()["links"][1]
    carried = h2h3["spec"]["a_to_b"]
    assert h2h3["link"] == "h2-h3" and carried["delay_ns"] == 0 and "rate_bps" not in carried
    assert net.ping("h2", "h3", count=5, interval=0.05).median_ms < 5
    net.set_link("h2", "h3", delay="15ms")
    rtt = net.ping("h2", "h3", count=5, interval=0.05)
    assert rtt.received == 5 and rtt.median_ms >= 30, rtt


def test_a_tcp_flow_follows_the_rate_down_and_up(net: Network) -> None:
    net.set_link("h1", "h2", rate="20Mbit", aqm="droptail", queue=100, delay="2ms")
    result = {}
    flow = threading.Thread(target=lambda: result.setdefault(
        "r", net.perf("h1", "h2", "-i", "0.5", seconds=9)))
    t0 = time.monotonic()
    flow.start()
    time.sleep(3)
    down = time.monotonic() - t0
    net.set_link("h1", "h2", rate="4Mbit")
    time.sleep(3)
    up = time.monotonic() - t0
    net.set_link("h1", "h2", rate="20Mbit")
    flow.join(timeout=60)
    intervals = [i["sum"] for i in result["r"].json["intervals"]]

    def during(lo: float, hi: float) -> list[float]:
        return [i["bits_per_second"] / 1e6 for i in intervals if i["start"] >= lo and i["end"] <= hi]

    slow = during(down + 1.0, up)  # the client starts a little after t0: a margin
    fast_after = during(up + 1.5, 99)
    assert slow and fast_after, intervals
    # A link at 4 Mbit/s carries no more (a change not applied would carry ~19).
    assert max(slow) < 4.6, f"at 4Mbit the flow got {slow} Mbit/s"
    # And at 20 Mbit/s again, the flow takes it (a rate left at 4 would cap it there).
    assert max(fast_after) > 10, f"back at 20Mbit the flow got {fast_after} Mbit/s"


def test_the_new_ecn_key_marks_what_loss_would_drop(net: Network) -> None:
    """`ecn` (issue 13's example of a key added in one place: Rust's schema row and its
    stage) live: with 100 % loss, ECN-capable pings arrive marked, the others are lost."""
    net.set_link("h1", "h2", loss="100%", ecn=True, rate="20Mbit", queue=100)
    assert running(net)["spec"]["ecn"] is True
    marks = running(net)["ecn_marks"]
    capable = net["h1"].run(["ping", "-n", "-q", "-c", "5", "-i", "0.05", "-W", "2", "-Q", "2",
                             net.addr("h2")], timeout=30)
    assert " 5 received" in capable.stdout, capable.stdout  # ECT(0): marked, not dropped
    assert running(net)["ecn_marks"] - marks == 5
    assert net.ping("h1", "h2", count=3, interval=0.05).received == 0  # not ECN-capable
    net.set_link("h1", "h2", loss="0%", ecn=False)
    assert "ecn" not in running(net)["spec"] and "loss" not in running(net)["spec"]
    assert net.ping("h1", "h2", count=3, interval=0.05).received == 3


def test_the_command_line_reads_values_as_a_file_would(net: Network) -> None:
    """`netrig link set`: ecn=true is a boolean, flows=64 a number, aqm.target one
    parameter of the discipline running."""
    def link_set(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "netrig", "link", "set", "h1", "h2", *args,
                               "--prefix", net.prefix], capture_output=True, text=True, timeout=60)

    net.set_link("h1", "h2", aqm={"type": "pie", "target": "20ms"}, loss="0%", ecn=False)
    p = link_set("aqm.tupdate=30ms", "ecn=true", "loss=1%")
    assert p.returncode == 0, p.stderr
    now = running(net)["spec"]
    assert {k: v for k, v in now["queue"].items() if k != "limit_packets"} == {
        "discipline": "pie", "target_ns": 20_000_000, "tupdate_ns": 30_000_000}
    assert now["ecn"] is True and now["loss"]["random"]["p"] == 0.01
    p = link_set("aqm=fq_codel", "aqm.flows=64", "--dir", "b_to_a")
    assert p.returncode == 0, p.stderr
    assert running(net, "b_to_a")["spec"]["queue"]["flows"] == 64
    assert running(net, "b_to_a")["spec"]["queue"]["discipline"] == "fq_codel"
    assert running(net, "a_to_b")["spec"]["queue"]["discipline"] == "pie"
    p = link_set("ecn=maybe")
    assert p.returncode != 0 and "ecn: 'maybe' is not true or false" in p.stderr, p.stderr
