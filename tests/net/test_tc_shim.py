"""tc's command line inside a lab (netrig.lab.tcshim): through `netrig exec`, tc on a
switch port whose link netrig-link carries changes that direction live (ping's RTT
moves by the delay added; seed 004's PIE line keeps the rate and the delay; netrig
status says so), `tc -s qdisc show` prints the emulator's counters in tc's format
under load, and anything else (lo, a qdisc this kernel lacks) is the real tc's."""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time

import pytest
from netlab import needs_root
from netrig.lab import tcshim
from netrig.lab.network import Network
from netrig.lab.state import LabState

pytestmark = pytest.mark.net

LAB = """
name: tcshim
nodes: {h1: host, h2: host, s0: switch}
links:
  - [h1, s0]
  - {a: s0, b: h2, rate: 10Mbit, delay: 5ms}
"""
PORT = "s0-p1"  # the switch's port of link s0-h2: its egress feeds s0 -> h2 (a_to_b)


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    needs_root()
    path = tmp_path_factory.mktemp("tcshim") / "tcshim.yaml"
    path.write_text(LAB)
    with Network(path, prefix=f"tcs{os.getpid() % 100000}") as n:
        n.ping("h1", "h2", count=1)  # ARP
        tcshim.install(LabState.load(n.prefix).dir / "bin")  # as netrig exec does
        yield n


def netrig(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netrig", *args], capture_output=True, text=True,
                          timeout=timeout)


def tc(net: Network, node: str, *args: str) -> subprocess.CompletedProcess:
    """tc as a user types it in a node's shell from `netrig exec` (the shim first on PATH)."""
    return netrig("exec", "--prefix", net.prefix, node, "--", "sh", "-c", 'exec tc "$@"', "tc", *args)


def shim(net: Network, node: str, *args: str) -> subprocess.CompletedProcess:
    """The shim `netrig exec` installed, run in the node's namespace straight (quicker)."""
    st = LabState.load(net.prefix)
    return subprocess.run(["ip", "netns", "exec", st.node_ns[node], str(st.dir / "bin" / "tc"), *args],
                          capture_output=True, text=True, timeout=30)


def spec(net: Network) -> dict:
    """What netrig-link runs on link s0-h2, by direction."""
    return next(x for x in net.link_stats()["links"] if x["link"] == "s0-h2")["spec"]


def rtt(net: Network) -> float:
    return statistics.median(net.ping("h1", "h2", count=10, interval=0.05).rtts_ms)


def test_egress_map_names_each_ends_direction(net: Network) -> None:
    st = LabState.load(net.prefix)
    assert st.egress[f"{net.prefix}--sw"] == {"s0-p0": ["h1-s0", "b_to_a"], PORT: ["s0-h2", "a_to_b"]}
    assert st.egress[f"{net.prefix}-h2"] == {"eth0": ["s0-h2", "b_to_a"]}
    assert st.controls == {}


def test_netem_delay_then_seed_004s_pie_line(net: Network) -> None:
    before = rtt(net)
    p = tc(net, "s0", "qdisc", "add", "dev", PORT, "root", "netem", "delay", "25ms")
    assert p.returncode == 0, p.stderr
    after = rtt(net)
    assert 15 <= after - before <= 30, f"RTT {before:.1f} ms -> {after:.1f} ms for 5 ms -> 25 ms one way"
    p = tc(net, "s0", "qdisc", "add", "dev", PORT, "root", "pie", "limit", "1000", "target", "20ms")
    assert p.returncode == 0, p.stderr
    now = spec(net)
    assert now["a_to_b"]["queue"] == {"discipline": "pie", "target_ns": 20_000_000, "limit_packets": 1000}
    assert (now["a_to_b"]["rate_bps"], now["a_to_b"]["delay_ns"]) == (10_000_000, 25_000_000)
    assert now["b_to_a"]["delay_ns"] == 5_000_000 and now["b_to_a"]["queue"]["discipline"] == "droptail"
    status = json.loads(netrig("status", "--prefix", net.prefix, "--json").stdout)
    link = next(x for x in status["links"] if x["name"] == "s0-h2")
    assert link["a_to_b"]["aqm"] == {"type": "pie", "target": "20ms"}, link
    assert link["a_to_b"]["delay"] == "25ms" and link["b_to_a"] == {"rate": "10Mbit", "delay": "5ms"}
    # netrig's own live change starts from what tc left, not from the file
    p = netrig("link", "set", "s0-h2", "loss=1%", "--dir", "a_to_b", "--prefix", net.prefix)
    assert p.returncode == 0, p.stderr
    now = spec(net)["a_to_b"]
    assert (now["queue"]["discipline"], now["delay_ns"], now["loss"]["random"]["p"]) == ("pie", 25_000_000, 0.01)


def test_show_reads_the_emulators_counters_under_load(net: Network) -> None:
    shim(net, "s0", "qdisc", "replace", "dev", PORT, "root", "pfifo", "limit", "200")
    result: dict = {}
    flow = threading.Thread(target=lambda: result.update(r=net.perf("h1", "h2", "-u", "-b", "20M",
                                                                    seconds=3)))
    flow.start()
    backlogs, out = [], ""
    time.sleep(0.5)
    while flow.is_alive() and len(backlogs) < 20:
        p = shim(net, "s0", "-s", "qdisc", "show", "dev", PORT)
        assert p.returncode == 0, p.stderr
        out = p.stdout
        backlogs += [int(x) for x in re.findall(r"backlog \d+b (\d+)p", out)]
        time.sleep(0.05)
    flow.join(timeout=30)
    assert out.startswith("qdisc netem 8001: root refcnt 2 limit 200 delay 25ms loss 1% rate 10Mbit"), out
    sent = re.search(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits 0 requeues 0\)", out)
    assert sent and int(sent.group(1)) > 100_000 and int(sent.group(2)) > 100, out
    assert backlogs and max(backlogs) > 50, f"20 Mbit/s into 10 Mbit/s left no queue: {backlogs}"
    # Without a device: the real tc's lines for the others, the emulator's for the port
    every = tc(net, "s0", "qdisc", "show")
    assert every.returncode == 0 and f"qdisc netem 8001: dev {PORT} root refcnt 2 limit 200" in every.stdout
    assert "dev s0-p0" in every.stdout and "dev s0 " in every.stdout, every.stdout


def test_anything_else_is_the_real_tcs(net: Network) -> None:
    p = tc(net, "h1", "qdisc", "show", "dev", "lo")
    assert p.returncode == 0 and p.stdout.startswith("qdisc noqueue 0: root refcnt 2"), p.stdout + p.stderr
    p = tc(net, "h1", "qdisc", "add", "dev", "lo", "root", "pie")  # this kernel has no sch_pie
    assert p.returncode == 2 and "Specified qdisc kind is unknown" in p.stderr, p.stderr
    # h1-s0 is a plain veth pair: not carried, so the real tc (and its kernel) answer
    p = shim(net, "h1", "qdisc", "add", "dev", "eth0", "root", "netem", "delay", "1ms")
    assert p.returncode == 2 and "Specified qdisc kind is unknown" in p.stderr, p.stderr
    # a line netrig cannot do on a carried device: tc's status, a sentence naming the word
    p = tc(net, "s0", "qdisc", "add", "dev", PORT, "root", "netem", "slot", "10ms")
    assert p.returncode == 2 and p.stderr.startswith(
        f"netrig tc: {PORT} (link s0-h2, a_to_b): netem slot: netrig-link has no time slots"), p.stderr
    p = shim(net, "h1", "qdisc", "add", "dev", "lo", "root", "estimator", "1s", "8s", "pie")
    assert p.returncode == 2 and "Specified qdisc kind is unknown" in p.stderr, p.stderr
    # Mininet's TCLink tree, line by line: htb (its class kept in the lab's state), netem under it
    for line in ("qdisc add dev s0-p1 root handle 5:0 htb default 1",
                 "class add dev s0-p1 parent 5:0 classid 5:1 htb rate 20.000000Mbit burst 15k",
                 "qdisc add dev s0-p1 parent 5:1 handle 10: netem delay 10ms loss 1.00000 limit 100"):
        p = shim(net, "s0", *line.split())
        assert p.returncode == 0, f"{line}: {p.stderr}"
    now = spec(net)["a_to_b"]
    assert (now["rate_bps"], now["delay_ns"], now["loss"]["random"]["p"], now["queue"]) == (
        20_000_000, 10_000_000, 0.01, {"discipline": "droptail", "limit_packets": 100}), now
    # del root: the direction unshaped, as Linux leaves it
    p = shim(net, "s0", "qdisc", "del", "dev", PORT, "root")
    assert p.returncode == 0, p.stderr
    now = spec(net)["a_to_b"]
    assert not now.get("delay_ns") and not now.get("rate_bps") and not now.get("loss"), now
    assert now["queue"]["discipline"] == "droptail", now
    # outside any lab (this process's namespace), netrig tc is the real tc
    p = netrig("tc", "qdisc", "show", "dev", "lo")
    assert p.returncode == 0 and p.stdout.startswith("qdisc noqueue 0: root refcnt 2"), p.stdout + p.stderr
