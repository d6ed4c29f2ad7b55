"""Mininet's test_hifi on netrig's Mininet: the same checks with the same tolerances,
with shorter runs so they fit CI.

Mininet's own file (mininet/test/test_hifi.py of mininet/mininet, which Debian does not
ship) builds a single switch with two hosts for each check: a TCLink of 5 Mbit/s read by
`net.iperf` (the server's figure within 0.8 of it: 4 to 6 Mbit/s), 15 ms on each link
read by `pingFull` (RTT min, avg and max within 0.8 of 4 x 15 ms), 99 % loss (mn.ping
drops some), CPULimitedHost at 10 % read by `runCpuLimitTest` (every per-second share
within 0.8 of 10 %: 8 to 12 %), and all options at once (no ping dropped). Here one
script (`netrig mininet`, as a user runs one) builds the same networks one after the
other and prints what it measured; each test below checks one of them. Shorter than
Mininet's: iperf for 2 s (5), the CPU test for 2 s (5).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from netlab import needs_root

pytestmark = pytest.mark.net

SCRIPT = """
import json
from mininet.net import Mininet
from mininet.node import OVSSwitch, CPULimitedHost
from mininet.link import TCLink
from mininet.topo import Topo
from mininet.log import setLogLevel

setLogLevel('warning')


class SingleSwitchOptionsTopo(Topo):
    def __init__(self, n=2, hopts=None, lopts=None):
        Topo.__init__(self, hopts=hopts or {}, lopts=lopts or {})
        switch = self.addSwitch('s1')
        for h in range(n):
            self.addLink(self.addHost('h%s' % (h + 1)), switch)


got = {}
mn = Mininet(SingleSwitchOptionsTopo(lopts={'bw': 5, 'use_htb': True}), link=TCLink,
             switch=OVSSwitch, waitConnected=True)
got['iperf'] = mn.run(mn.iperf, fmt='m', seconds=2)

mn = Mininet(SingleSwitchOptionsTopo(lopts={'delay': '15ms', 'use_htb': True}), link=TCLink,
             switch=OVSSwitch, autoStaticArp=True, waitConnected=True)
mn.start()
for _ in range(3):
    full = mn.pingFull()
mn.stop()
got['pingFull'] = [[str(src), str(dst), list(out)] for src, dst, out in full]

mn = Mininet(SingleSwitchOptionsTopo(lopts={'loss': 99, 'use_htb': True}), host=CPULimitedHost,
             link=TCLink, switch=OVSSwitch, waitConnected=True)
mn.start()
got['loss_dropped'] = mn.ping(timeout='1')
mn.stop()

mn = Mininet(SingleSwitchOptionsTopo(hopts={'cpu': 0.1}), host=CPULimitedHost, switch=OVSSwitch,
             waitConnected=True)
mn.start()
got['cpu'] = mn.runCpuLimitTest(cpu=0.1, duration=2)
mn.stop()

mn = Mininet(SingleSwitchOptionsTopo(hopts={'cpu': 0.25}, lopts={'bw': 10, 'delay': '5ms',
                                                                   'use_htb': True}),
             host=CPULimitedHost, link=TCLink, switch=OVSSwitch, waitConnected=True)
got['most_dropped'] = mn.run(mn.ping)
print('RESULT', json.dumps(got))
"""


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """What the script measured (it runs once for the module)."""
    needs_root()
    script = tmp_path_factory.mktemp("hifi") / "hifi.py"
    script.write_text(textwrap.dedent(SCRIPT))
    prefix = f"mnh{os.getpid() % 100000}"
    p = subprocess.run([sys.executable, "-m", "netrig", "mininet", str(script)], capture_output=True,
                       text=True, timeout=180, env={**os.environ, "NETRIG_PREFIX": prefix})
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    left = [ns for ns in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                        text=True).stdout.split() if ns.startswith(prefix + "-")]
    assert left == [], left
    line = next(l for l in p.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def within(measured: float, expected: float, tolerance: float) -> bool:
    """Mininet's assertWithinTolerance: expected x tolerance <= measured <=
    expected x (2 - tolerance)."""
    return expected * tolerance <= measured <= expected + (1 - tolerance) * expected


def test_link_bandwidth(measured):
    """iperf's server figure on a 5 Mbit/s TCLink within 0.8 of it (Mininet's bound)."""
    server, client = measured["iperf"]
    assert server.endswith(" Mbits/sec") and client.endswith(" Mbits/sec"), measured["iperf"]
    assert within(float(server.split()[0]), 5, 0.8), measured["iperf"]


def test_link_delay(measured):
    """15 ms on each of h1's and h2's links: every RTT figure within 0.8 of 60 ms."""
    src, dst, (sent, received, rttmin, rttavg, rttmax, _dev) = measured["pingFull"][0]
    assert (src, dst) == ("h1", "h2")
    assert sent == received == 1, measured["pingFull"]
    for rtt in (rttmin, rttavg, rttmax):
        assert within(rtt, 15 * 4, 0.8), measured["pingFull"]


def test_link_loss(measured):
    """99 % loss on each link: mn.ping sees drops (no drop has odds of 1 in 10^8)."""
    assert measured["loss_dropped"] > 0


def test_cpu_limits(measured):
    """CPULimitedHost(cpu=.1): each host's share, each second, within 0.8 of 10 %."""
    shares = measured["cpu"]
    assert len(shares) == 4, shares  # 2 hosts x 2 s
    for pct in shares:
        assert within(pct / 100, 0.1, 0.8), shares


def test_most_options(measured):
    """bw, delay and a CPU limit together: no ping is dropped."""
    assert measured["most_dropped"] == 0
