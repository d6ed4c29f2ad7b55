#!/usr/bin/env python3
"""portfolio_topology.py: seed 002's network, as a Mininet script.

9 hosts, 4 Linux routers and 2 switches in eight subnets:

    h1  h2  h3             h7          h8
      \\  |  /              |           |
        s1 --- r1 ==L1== r2 ==L2==== r3 ==L3== r4 --- h9
                                      |
                                      s2
                                    / | \\
                                  h4 h5  h6

    A 10.0.0.0/24  h1 h2 h3 s1 r1      E 10.0.5.0/24  h4 h5 h6 s2 r3
    B 10.0.1.0/24  r1-r2 (L1)          F 10.0.4.0/24  r3 h8
    C 10.0.2.0/24  r2 h7               G 10.0.6.0/24  r3-r4 (L3)
    D 10.0.3.0/24  r2-r3 (L2)          I 10.0.7.0/24  r4 h9

    L1  r1-r2  40 Mbit/s  10 ms  queue 67   (TCLink, HTB)
    L2  r2-r3  30 Mbit/s  20 ms  queue 100
    L3  r3-r4  20 Mbit/s  10 ms  queue 33

Theory: RTT h1->h4 60 ms (L1 + L2, both ways), h1->h9 80 ms, h7->h9 60 ms;
bottlenecks 30, 20 and 20 Mbit/s.

Run it with Mininet (sudo python3 portfolio_topology.py) or on netrig, which gives
the links their delay on any kernel (sudo netrig mininet portfolio_topology.py).
It pings every pair, then opens the mininet> prompt; with --test it measures instead
(ping RTTs of the seed's three pairs and an iperf between h1 and h4) and exits.
"""

import argparse
import re
import sys

from mininet.cli import CLI
from mininet.link import TCLink
from mininet.log import info, setLogLevel
from mininet.net import Mininet
from mininet.node import Node
from mininet.nodelib import LinuxBridge
from mininet.topo import Topo
from mininet.util import dumpNodeConnections


class LinuxRouter(Node):
    "A node that forwards IPv4 between its interfaces."

    def config(self, **params):
        super(LinuxRouter, self).config(**params)
        self.cmd('sysctl -w net.ipv4.ip_forward=1')

    def terminate(self):
        self.cmd('sysctl -w net.ipv4.ip_forward=0')
        super(LinuxRouter, self).terminate()


# Each router's static routes: subnet -> next hop.
ROUTES = {
    'r1': {'10.0.2.0/24': '10.0.1.2', '10.0.3.0/24': '10.0.1.2',
           '10.0.4.0/24': '10.0.1.2', '10.0.5.0/24': '10.0.1.2',
           '10.0.6.0/24': '10.0.1.2', '10.0.7.0/24': '10.0.1.2'},
    'r2': {'10.0.0.0/24': '10.0.1.1',
           '10.0.4.0/24': '10.0.3.2', '10.0.5.0/24': '10.0.3.2',
           '10.0.6.0/24': '10.0.3.2', '10.0.7.0/24': '10.0.3.2'},
    'r3': {'10.0.0.0/24': '10.0.3.1', '10.0.1.0/24': '10.0.3.1',
           '10.0.2.0/24': '10.0.3.1', '10.0.7.0/24': '10.0.6.2'},
    'r4': {'10.0.0.0/24': '10.0.6.1', '10.0.1.0/24': '10.0.6.1',
           '10.0.2.0/24': '10.0.6.1', '10.0.3.0/24': '10.0.6.1',
           '10.0.4.0/24': '10.0.6.1', '10.0.5.0/24': '10.0.6.1'},
}


class PortfolioTopo(Topo):
    "Seed 002's topology. Links are added in the order that gives its interface names."

    def build(self, **_opts):
        # Each router's ip is its eth0's address.
        r1 = self.addHost('r1', cls=LinuxRouter, ip='10.0.0.1/24')
        r2 = self.addHost('r2', cls=LinuxRouter, ip='10.0.1.2/24')
        r3 = self.addHost('r3', cls=LinuxRouter, ip='10.0.3.2/24')
        r4 = self.addHost('r4', cls=LinuxRouter, ip='10.0.6.2/24')
        s1 = self.addSwitch('s1')
        s2 = self.addSwitch('s2')

        def host(name, ip, gw):
            return self.addHost(name, ip=ip + '/24', defaultRoute='via ' + gw)

        # Subnet A: h1 h2 h3 on s1; subnet E: h4 h5 h6 on s2
        for i in (1, 2, 3):
            self.addLink(host('h%d' % i, '10.0.0.%d' % (9 + i), '10.0.0.1'), s1)
        for i in (4, 5, 6):
            self.addLink(host('h%d' % i, '10.0.5.%d' % (6 + i), '10.0.5.1'), s2)
        self.addLink(r1, s1, params1={'ip': '10.0.0.1/24'})              # A
        self.addLink(r1, r2, cls=TCLink, bw=40, delay='10ms',             # B: L1
                     max_queue_size=67, use_htb=True,
                     params1={'ip': '10.0.1.1/24'}, params2={'ip': '10.0.1.2/24'})
        self.addLink(r2, host('h7', '10.0.2.10', '10.0.2.1'),             # C
                     params1={'ip': '10.0.2.1/24'})
        self.addLink(r2, r3, cls=TCLink, bw=30, delay='20ms',             # D: L2
                     max_queue_size=100, use_htb=True,
                     params1={'ip': '10.0.3.1/24'}, params2={'ip': '10.0.3.2/24'})
        self.addLink(r3, host('h8', '10.0.4.10', '10.0.4.1'),             # F
                     params1={'ip': '10.0.4.1/24'})
        self.addLink(r3, s2, params1={'ip': '10.0.5.1/24'})              # E
        self.addLink(r3, r4, cls=TCLink, bw=20, delay='10ms',             # G: L3
                     max_queue_size=33, use_htb=True,
                     params1={'ip': '10.0.6.1/24'}, params2={'ip': '10.0.6.2/24'})
        self.addLink(r4, host('h9', '10.0.7.10', '10.0.7.1'),             # I
                     params1={'ip': '10.0.7.1/24'})


def configure(net):
    "Static routes on the routers; offloads off everywhere, as the seed did."
    for name, routes in sorted(ROUTES.items()):
        for subnet, via in sorted(routes.items()):
            net[name].cmd('ip route add %s via %s' % (subnet, via))
    for node in net.hosts:
        for intf in node.intfNames():
            if intf != 'lo':
                node.cmd('ethtool -K %s tso off gso off lro off gro off ufo off '
                         '>/dev/null 2>&1' % intf)


def rtt(net, src, dst, count):
    "Ping dst from src; returns (min, avg, max) in ms, or None if no reply came back."
    out = net[src].cmd('ping -c %d -i 0.2 -W 2 %s' % (count, net[dst].IP()))
    m = re.search(r'= ([\d.]+)/([\d.]+)/([\d.]+)/', out)
    return tuple(float(x) for x in m.groups()) if m else None


def measure(net, count, seconds):
    "The seed's measurements: ping RTT of three pairs, an iperf between h1 and h4."
    dumpNodeConnections(net.hosts)  # the interfaces, as the prompt's `net` shows them
    failed = False
    for src, dst, theory in (('h1', 'h4', 60), ('h1', 'h9', 80), ('h7', 'h9', 60)):
        r = rtt(net, src, dst, count)
        if r is None:
            print('rtt %s->%s: no reply (theory %d ms)' % (src, dst, theory))
            failed = True
        else:
            print('rtt %s->%s min/avg/max %.3f/%.3f/%.3f ms (theory %d ms)'
                  % (src, dst, r[0], r[1], r[2], theory))
    h1, h4 = net.get('h1', 'h4')
    server, client = net.iperf((h1, h4), seconds=seconds)
    print('iperf h1->h4 TCP %s (server) %s (client) (bottleneck 30 Mbit/s)' % (server, client))
    return not failed


def main():
    ap = argparse.ArgumentParser(description="Seed 002's portfolio topology.")
    ap.add_argument('--test', action='store_true',
                    help='measure RTTs and an iperf, then exit (no prompt)')
    ap.add_argument('--count', type=int, default=10, help='pings per pair with --test')
    ap.add_argument('--time', type=int, default=5, help='iperf seconds with --test')
    args = ap.parse_args()
    if not 1 <= args.count <= 1000 or not 1 <= args.time <= 3600:
        ap.error('--count takes 1 to 1000, --time 1 to 3600')

    net = Mininet(topo=PortfolioTopo(), switch=LinuxBridge, controller=None)
    net.start()
    ok = True
    try:
        configure(net)
        info('*** Routing and offloads configured\n')
        dropped = net.pingAll()
        if args.test:
            ok = measure(net, args.count, args.time) and dropped == 0
        else:
            CLI(net)
    finally:
        net.stop()
    return 0 if ok else 1


if __name__ == '__main__':
    setLogLevel('info')
    sys.exit(main())
