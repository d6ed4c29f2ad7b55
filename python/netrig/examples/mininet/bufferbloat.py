#!/usr/bin/env python3
"""bufferbloat.py: seed 004's experiment (Stanford CS244's bufferbloat assignment).

    h1 --- s0 ===bottleneck===> h2
       fast        1.5 Mbit/s, 5 ms, 100-packet queue (s0-eth2)

A long-lived TCP flow (iperf) from h1 to h2 fills the bottleneck's queue. Meanwhile h1
pings h2 every 0.1 s, fetches a 100 KB web page from h2 with curl every few seconds,
and the queue's length is read from `tc -s qdisc show dev s0-eth2`. With --pie the
bottleneck runs PIE with a 20 ms target, set as the seed did:
    switch.cmd('tc qdisc add dev s0-eth2 root pie limit 1000 target 20ms')

The defaults are examples/004-bufferbloat.yaml's links, so the figures compare with
`netrig run examples/004-bufferbloat.yaml`. Base RTT: 4 x 5 ms = 20 ms; a full 100-packet
queue adds 100 x 1514 B at 1.5 Mbit/s = 0.8 s.

Run: sudo netrig mininet bufferbloat.py [--pie] [--time 60] [--dir DIR]
It writes DIR/ping.txt, qlen.txt, fetch.txt, iperf.out and summary.txt/summary.csv,
and prints the summary.
"""

import argparse
import os
import re
import statistics
import sys
import threading
import time

from mininet.link import TCLink
from mininet.log import info, setLogLevel
from mininet.net import Mininet
from mininet.nodelib import LinuxBridge
from mininet.topo import Topo

IFACE = 's0-eth2'  # the switch's port towards h2: the bottleneck's queue


class BBTopo(Topo):
    "h1 - s0 - h2, the s0-h2 link the bottleneck."

    def build(self, bw_host=1000, bw_net=1.5, delay='5ms', maxq=100):
        h1 = self.addHost('h1')
        h2 = self.addHost('h2')
        s0 = self.addSwitch('s0')
        self.addLink(h1, s0, bw=bw_host, delay=delay)
        self.addLink(s0, h2, bw=bw_net, delay=delay, max_queue_size=maxq)


def parse_args():
    ap = argparse.ArgumentParser(description='Bufferbloat (seed 004, CS244).')
    ap.add_argument('--bw-host', '-B', type=float, default=1000,
                    help='h1-s0 bandwidth, Mbit/s (default 1000)')
    ap.add_argument('--bw-net', '-b', type=float, default=1.5,
                    help='bottleneck bandwidth, Mbit/s (default 1.5)')
    ap.add_argument('--delay', type=float, default=5,
                    help='one-way delay of each link, ms (default 5)')
    ap.add_argument('--maxq', type=int, default=100,
                    help='bottleneck queue, packets (default 100)')
    ap.add_argument('--time', '-t', type=int, default=60,
                    help='seconds the experiment runs (default 60)')
    ap.add_argument('--fetch-every', type=float, default=2,
                    help='seconds between web page fetches (default 2)')
    ap.add_argument('--dir', '-d', default='bb-results',
                    help='where the files go (default ./bb-results)')
    ap.add_argument('--cong', default='cubic',
                    help="the long flow's TCP congestion control (iperf -Z; default cubic)")
    ap.add_argument('--pie', action='store_true',
                    help='PIE (target 20 ms) on the bottleneck, set with tc')
    args = ap.parse_args()
    if not re.fullmatch(r'[a-z0-9_]{1,16}', args.cong):
        ap.error('--cong takes a congestion control name, e.g. cubic or reno')
    for name, lo, hi in (('bw_host', 0.01, 100000), ('bw_net', 0.01, 100000),
                         ('delay', 0, 10000), ('maxq', 1, 100000), ('time', 2, 86400),
                         ('fetch_every', 0.5, 3600)):
        if not lo <= getattr(args, name) <= hi:
            ap.error('--%s takes %s to %s' % (name.replace('_', '-'), lo, hi))
    return args


def start_webserver(h2, outdir):
    "A 100 KB index.html, served on port 80 by Python's http.server."
    www = os.path.join(outdir, 'www')
    os.makedirs(www, exist_ok=True)
    with open(os.path.join(www, 'index.html'), 'w') as f:
        f.write('<html><body><pre>\n' + ('x' * 99 + '\n') * 1020 + '</pre></body></html>\n')
    return h2.popen('python3 -m http.server 80 --bind %s --directory %s' % (h2.IP(), www))


def monitor_qlen(switch, iface, outfile, stop, interval=0.1):
    "Polls `tc -s qdisc show dev IFACE`; writes 'seconds,packets' lines."
    pattern = re.compile(r'backlog \S+ (\d+)p')
    start = time.time()
    with open(outfile, 'w') as f:
        while not stop.is_set():
            tick = time.time()
            out, _ = switch.popen('tc -s qdisc show dev %s' % iface).communicate()
            found = pattern.findall(out.decode(errors='replace'))
            if found:
                f.write('%.3f,%d\n' % (tick - start, max(int(x) for x in found)))
                f.flush()
            stop.wait(max(0, interval - (time.time() - tick)))


def fetch(h1, h2):
    "Seconds curl takes to get the page, or None if it failed."
    out = h1.cmd('curl -o /dev/null -s -m 30 -w %%{time_total} http://%s/index.html'
                  % h2.IP())
    try:
        return float(out.strip().split()[-1])
    except (ValueError, IndexError):
        return None


def read_floats(path, pattern):
    with open(path) as f:
        return [float(x) for x in re.findall(pattern, f.read())]


def summarize(args, fetches):
    "The figures, printed and written to DIR/summary.txt and DIR/summary.csv."
    rtts = read_floats(os.path.join(args.dir, 'ping.txt'), r'time=([\d.]+) ms')
    qlen = read_floats(os.path.join(args.dir, 'qlen.txt'), r',(\d+)\n')
    rates = read_floats(os.path.join(args.dir, 'iperf.out'), r'([\d.]+) Mbits/sec')
    ok = [t for t in fetches if t is not None]
    rows = [
        ('aqm', 'pie' if args.pie else 'droptail'),
        ('cc', args.cong), ('bw_net_mbit', args.bw_net), ('delay_ms', args.delay),
        ('maxq_pkts', args.maxq),
        ('seconds', args.time),
        ('ping_replies', len(rtts)),
        ('rtt_median_ms', round(statistics.median(rtts), 3) if rtts else ''),
        ('rtt_mean_ms', round(statistics.mean(rtts), 3) if rtts else ''),
        ('rtt_max_ms', max(rtts) if rtts else ''),
        ('queue_samples', len(qlen)),
        ('queue_mean_pkts', round(statistics.mean(qlen), 2) if qlen else ''),
        ('queue_max_pkts', int(max(qlen)) if qlen else ''),
        ('fetches', len(fetches)), ('fetches_failed', len(fetches) - len(ok)),
        ('fetch_mean_s', round(statistics.mean(ok), 4) if ok else ''),
        ('fetch_stdev_s', round(statistics.stdev(ok), 4) if len(ok) > 1 else ''),
        ('iperf_mbit', rates[-1] if rates else ''),
    ]
    text = ''.join('%-16s %s\n' % row for row in rows)
    with open(os.path.join(args.dir, 'summary.txt'), 'w') as f:
        f.write(text)
    with open(os.path.join(args.dir, 'summary.csv'), 'w') as f:
        f.write(','.join(k for k, _ in rows) + '\n')
        f.write(','.join(str(v) for _, v in rows) + '\n')
    print(text, end='')
    return bool(rtts and qlen and ok)


def bufferbloat(args):
    os.makedirs(args.dir, exist_ok=True)
    topo = BBTopo(bw_host=args.bw_host, bw_net=args.bw_net, delay='%gms' % args.delay,
                  maxq=args.maxq)
    net = Mininet(topo=topo, link=TCLink, switch=LinuxBridge, controller=None)
    net.start()
    stop = threading.Event()
    procs, qmon = [], None
    try:
        h1, h2, switch = net.get('h1', 'h2', 's0')
        net.pingAll()
        if args.pie:
            switch.cmd('tc qdisc add dev %s root pie limit 1000 target 20ms' % IFACE)
            info('*** AQM PIE added\n')
            info(switch.cmd('tc -s qdisc show dev %s' % IFACE))
        procs.append(h2.popen('iperf -s -w 16m'))
        procs.append(start_webserver(h2, args.dir))
        time.sleep(1)  # the servers listen
        info('*** Long-lived TCP flow, ping every 0.1 s, a fetch every %g s, for %d s\n'
             % (args.fetch_every, args.time))
        start = time.time()
        iperf = h1.popen('iperf -c %s -t %d -Z %s > %s/iperf.out'
                         % (h2.IP(), args.time, args.cong, args.dir), shell=True)
        ping = h1.popen('ping -i 0.1 -w %d %s > %s/ping.txt'
                        % (args.time, h2.IP(), args.dir), shell=True)
        qmon = threading.Thread(target=monitor_qlen,
                                args=(switch, IFACE, os.path.join(args.dir, 'qlen.txt'), stop))
        qmon.start()
        fetches = []
        with open(os.path.join(args.dir, 'fetch.txt'), 'w') as f:
            while time.time() - start < args.time - 1:
                began = time.time()
                t = fetch(h1, h2)
                fetches.append(t)
                f.write('%.3f,%s\n' % (began - start, 'failed' if t is None else '%.4f' % t))
                f.flush()
                time.sleep(max(0, args.fetch_every - (time.time() - began)))
        iperf.wait()
        ping.wait()
    finally:
        stop.set()
        if qmon is not None:
            qmon.join()
        for p in procs:
            p.terminate()
            p.wait()
        net.stop()
    return summarize(args, fetches)


if __name__ == '__main__':
    setLogLevel('info')
    sys.exit(0 if bufferbloat(parse_args()) else 1)
