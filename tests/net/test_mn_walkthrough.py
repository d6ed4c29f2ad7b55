"""Mininet's walkthrough on `netrig mn`, driven through pexpect as Mininet's own
test_walkthrough.py drives `mn` (mininet/test/ of mininet/mininet): the same steps,
commands and expected text, with one network shared by the steps that can share it.

Shorter than Mininet's: iperf runs 2 s on the shaped link and 1 s in mn's regression
runs (Mininet's 5). Left out, as they cannot apply to netrig (its switches are Linux bridges, with no
OpenFlow): Wireshark's OpenFlow dissector on the controller's traffic, dpctl, a remote
POX controller; and xterms (no display is assumed). `h1 ifconfig`/`s1 ifconfig` are
checked as the walkthrough's "own namespace" step has them: netrig's switches always
live in the lab's switch namespace, never in the root namespace.
"""

from __future__ import annotations

import os
import re
import sys
import textwrap

import pytest
from netlab import needs_root

pytestmark = pytest.mark.net

PROMPT = "mininet>"
# h1-eth0, s1-eth1, the machine's own eth0 (not after a '-'), lo; then the prompt.
INTERFACES = [r"h1-eth0[:\s]", r"s1-eth1[:\s]", r"[^-](eth|en)\w*\d[:\s]", r"lo[:\s]", PROMPT]


@pytest.fixture
def spawn(tmp_path):
    """pexpect.spawn of `netrig mn ARGS` (HOME in tmp_path: the prompt's history goes
    there); every child is closed at the end, its network stopped."""
    pexpect = pytest.importorskip("pexpect")
    needs_root()
    children = []
    env = {**os.environ, "HOME": str(tmp_path)}

    def start(args: str, timeout: float = 30):
        p = pexpect.spawn(sys.executable, ["-m", "netrig", "mn", *args.split()], env=env,
                          encoding="utf-8", timeout=timeout)
        children.append(p)
        return p

    yield start
    for p in children:
        p.close(force=True)


def test_help(spawn):
    p = spawn("-h")
    assert p.expect(["Usage: mn", pytest.importorskip("pexpect").EOF]) == 0


def interfaces_seen(p, line: str) -> list[int]:
    """Which of INTERFACES (by index) `line`'s output shows, up to the prompt."""
    p.sendline(line)
    seen = []
    while (index := p.expect(INTERFACES)) != 4:
        seen.append(index)
    return seen


def test_one_network_through_the_walkthrough(spawn):
    """Basic commands, host commands, own namespace, static MACs, connectivity, a link
    changed with --link tc, simple HTTP, py/px and link down/up, on one network; -v
    output says nothing before the prompt."""
    pexpect = pytest.importorskip("pexpect")
    p = spawn("-w -v output --mac --innamespace --link tc,bw=10,delay=10ms")
    p.expect(PROMPT)
    assert p.before == "", p.before  # -v output: nothing before the prompt
    # basic: help, nodes, net, dump
    p.sendline("help")
    assert p.expect(["commands", PROMPT]) == 0
    p.expect(PROMPT)
    p.sendline("nodes")
    p.expect(r"([chs]\d ?){4}")
    nodes = p.match.group(0).split()
    assert sorted(nodes) == ["c0", "h1", "h2", "s1"]
    p.expect(PROMPT)
    p.sendline("net")
    expected = list(nodes)
    while expected:
        p.expect(expected)
        expected.remove(p.match.group(0))
        p.expect("\n")
    p.expect(PROMPT)
    p.sendline("dump")
    dumped = []
    for _ in nodes:
        p.expect([rf"<\w+ ({n})" for n in nodes])
        dumped.append(p.match.group(1))
        p.expect("\n")
    assert sorted(dumped) == sorted(nodes)
    p.expect(PROMPT)
    # host commands: h1 sees its own interface and lo only; s1 (own namespace) likewise
    assert sorted(interfaces_seen(p, "h1 ifconfig -a")) == [0, 3]
    assert sorted(interfaces_seen(p, "s1 ifconfig -a")) == [1, 3]
    p.sendline("h1 ps -a | egrep -v 'ps|grep'")
    p.expect(PROMPT)
    h1_ps = set(p.before.split("\n")[1:])
    p.sendline("s1 ps -a | egrep -v 'ps|grep'")
    p.expect(PROMPT)
    assert len(h1_ps - set(p.before.split("\n")[1:])) <= 2
    # static MACs
    for i in (1, 2):
        p.sendline(f"h{i} ifconfig")
        p.expect(rf"\s00:00:00:00:00:0{i}\s")
        p.expect(PROMPT)
    # connectivity
    p.sendline("h1 route && ping -c 1 h2")
    p.expect("1 packets transmitted, 1 received")
    p.expect(PROMPT)
    p.sendline("pingall")
    p.expect("0% dropped")
    p.expect(PROMPT)
    # the link changed: bw=10 and delay=10ms (two links: 40 ms of RTT). The prompt's
    # iperf is net.iperf for 5 s, plus the drain of the sender's buffer (tcp_wmem here
    # lets it reach 16 MB): 12 s in all; 2 s give the figure in 5.
    p.sendline("py net.iperf(seconds=2)")
    p.expect(r"Results: \['([\d\.]+) Mbits/sec',")
    bw = float(p.match.group(1))
    assert 9.0 < bw < 10.1, bw
    p.expect(PROMPT)
    p.sendline("h1 ping -c 4 h2")
    p.expect(r"rtt min/avg/max/mdev = ([\d\.]+)/([\d\.]+)/([\d\.]+)/([\d\.]+) ms")
    assert 40 <= float(p.match.group(2)) <= 50, p.match.group(0)
    p.expect(PROMPT)
    # simple HTTP: a server on h1, wget from h2
    p.sendline("h1 python -m http.server 80 >& /dev/null &")
    p.expect(PROMPT)
    p.sendline("px from mininet.util import waitListening;waitListening(h1, port=80, timeout=30)")
    p.expect(PROMPT)
    p.sendline(" h2 wget -O - h1")
    p.expect("200 OK")
    p.expect(PROMPT)
    p.sendline("h1 kill %python")
    p.expect(PROMPT)
    # py and px: an address, a host and a link added while it runs
    p.sendline("py h1.IP()")
    p.expect("10.0.0.1")
    p.expect(PROMPT)
    p.sendline("px net.addHost('h3')")
    p.expect(PROMPT)
    p.sendline("px net.addLink(s1, h3)")
    p.expect(PROMPT)
    p.sendline("net")
    p.expect("h3")
    p.expect(PROMPT)
    p.sendline("py h3.MAC()")
    p.expect("([a-f0-9]{2}:?){6}")
    p.expect(PROMPT)
    # link down and up
    p.sendline("link s1 h1 down")
    p.expect(PROMPT)
    p.sendline("h1 ping -c 1 h2")
    p.expect("unreachable")
    p.expect(PROMPT)
    p.sendline("link s1 h1 up")
    p.expect(PROMPT)
    p.sendline("h1 ping -c 1 h2")
    p.expect("0% packet loss")
    p.expect(PROMPT)
    p.sendline("exit")
    p.expect(pexpect.EOF)
    p.close()
    assert p.exitstatus == 0


def test_regression_runs_and_switches(spawn):
    """--test pingpair (0 % dropped) and iperf (a rate above 0), with the user switch (a
    Linux bridge, as the default ovsk is: the other tests use that); iperf for 1 s (mn's
    splitArgs: iperf,seconds=1)."""
    pexpect = pytest.importorskip("pexpect")
    for switch in ("user",):
        p = spawn(f"--switch {switch} --test pingpair --test iperf,seconds=1")
        p.expect("0% dropped")
        p.expect(r"Results: \['([\d\.]+) .bits/sec',")
        assert float(p.match.group(1)) > 0
        p.expect(pexpect.EOF)


def test_topo_change(spawn):
    pexpect = pytest.importorskip("pexpect")
    for topo, pairs in (("single,3", 6), ("linear,4", 12)):
        p = spawn(f"--test pingall --topo {topo}")
        p.expect(r"(\d+)/(\d+) received")
        assert (int(p.match.group(1)), int(p.match.group(2))) == (pairs, pairs), topo
        p.expect(pexpect.EOF)


def test_custom_topo(spawn, tmp_path):
    """A --custom file's topology by name (two switches, a host on each)."""
    pexpect = pytest.importorskip("pexpect")
    custom = tmp_path / "two_switches.py"
    custom.write_text(textwrap.dedent("""
        from mininet.topo import Topo

        class TwoSwitches(Topo):
            def build(self):
                left, right = self.addHost('h1'), self.addHost('h2')
                s3, s4 = self.addSwitch('s3'), self.addSwitch('s4')
                self.addLink(left, s3)
                self.addLink(s3, s4)
                self.addLink(s4, right)

        topos = {'mytopo': lambda: TwoSwitches()}
    """))
    p = spawn(f"--custom {custom} --topo mytopo --test pingall")
    p.expect("0% dropped")
    p.expect(pexpect.EOF)


def test_benchmark_and_debug_verbosity(spawn):
    """--test none: 'completed in X seconds' under Mininet's 2 s; -v debug prints at
    info's headings, no error, and, as Mininet's walkthrough asks, more than 70
    lines: each step the lab takes (namespaces, devices, offloads, the bridge ports'
    wait, teardown) and each interface added, as Mininet logs each command it runs."""
    pexpect = pytest.importorskip("pexpect")
    p = spawn("--test none")
    p.expect(r"completed in ([\d\.]+) seconds")
    assert float(p.match.group(1)) < 2
    info = p.before.splitlines()
    p.expect(pexpect.EOF)
    p = spawn("-v debug --test none")
    p.expect(r"completed in ([\d\.]+) seconds")
    debug = p.before.splitlines()
    p.expect(pexpect.EOF)
    headings = {line for line in info if line.startswith("***")}
    assert "*** Creating network" in headings and headings <= set(debug), (info, debug)
    assert not re.search(r"(?i)traceback|error", "\n".join(debug)), debug
    assert len(debug) > 70, debug
    assert "added intf h1-eth0 (0) to node h1" in debug
    assert any("ip netns delete" in line for line in debug), debug
