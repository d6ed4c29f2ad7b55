"""The tests a Mininet network runs on its hosts, as Mininet's `Mininet` has them: ping
reachability (`ping`, `pingAll`, `pingPair`: one raw ICMP echo request per pair, from
every source at once, in each host's namespace; `pingFull` and the ...Full variants:
`ping -c1` per pair for RTT figures), `iperf` (iperf 2 between two hosts, stopping only
the server it started) and `runCpuLimitTest`. `NetTests` is a part of
`mininet.net.Mininet`: scripts call these methods on their net. Mininet has no such
module.
"""

from __future__ import annotations

import os
import re
import select
import socket
import struct
import time
from concurrent.futures import ThreadPoolExecutor
from math import ceil
from typing import Any

from netrig.lab import netns
from netrig.lab.state import LabError

from mininet.log import debug, error, info, output
from mininet.node import Host
from mininet.util import waitListening


class NetTests:
    """Mininet's tests of a network (the net's `hosts` and `lab`)."""

    def ping(self, hosts: list | None = None, timeout: Any = None) -> float:
        """One echo request from every host to every other (all sources at once); prints
        Mininet's table and returns the loss in percent."""
        packets = lost = 0
        if not hosts:
            hosts = self.hosts
            output("*** Ping: testing ping reachability\n")
        wait_s = float(timeout) if timeout else 10.0
        self.lab.flush()

        def row(node: Host) -> list[bool]:
            dests = [d for d in hosts if d is not node]
            ips = [d.IP() if d.intfs else None for d in dests]
            got = _echo(node.ns, [ip for ip in ips if ip], wait_s)
            it = iter(got)
            return [next(it) if ip else False for ip in ips]

        with ThreadPoolExecutor(max_workers=16) as pool:
            for node, replies in zip(hosts, pool.map(row, hosts)):
                output(f"{node.name} -> ")
                dests = [d for d in hosts if d is not node]
                for dest, ok in zip(dests, replies):
                    if dest.intfs:
                        packets += 1
                        lost += 0 if ok else 1
                    output(f"{dest.name} " if ok else "X ")
                output("\n")
        if packets > 0:
            ploss = 100.0 * lost / packets
            output(f"*** Results: {int(ploss)}% dropped ({packets - lost}/{packets} received)\n")
            return ploss
        output("*** Warning: No packets sent\n")
        return 0

    @staticmethod
    def _parsePing(pingOutput: str) -> tuple[int, int]:
        if re.search(r"connect: Network is unreachable", pingOutput):
            return 1, 0
        m = re.search(r"(\d+) packets transmitted, (\d+)( packets)? received", pingOutput)
        if m is None:
            error(f"*** Error: could not parse ping output: {pingOutput}\n")
            return 1, 0
        return int(m.group(1)), int(m.group(2))

    @staticmethod
    def _parsePingFull(pingOutput: str) -> tuple:
        err = (1, 0, 0, 0, 0, 0)
        if re.search(r"[uU]nreachable", pingOutput):
            return err
        m = re.search(r"(\d+) packets transmitted, (\d+)( packets)? received", pingOutput)
        if m is None:
            error(f"*** Error: could not parse ping output: {pingOutput}\n")
            return err
        sent, received = int(m.group(1)), int(m.group(2))
        m = re.search(r"rtt min/avg/max/mdev = (\d+\.\d+)/(\d+\.\d+)/(\d+\.\d+)/(\d+\.\d+) ms", pingOutput)
        if m is None:
            if received:
                error(f"*** Error: could not parse ping output: {pingOutput}\n")
            return err
        return (sent, received, *(float(m.group(i)) for i in range(1, 5)))

    def pingFull(self, hosts: list | None = None, timeout: Any = None) -> list:
        all_outputs = []
        if not hosts:
            hosts = self.hosts
            output("*** Ping: testing ping reachability\n")
        for node in hosts:
            output(f"{node.name} -> ")
            for dest in hosts:
                if node is dest:
                    continue
                opts = f"-W {timeout}" if timeout else ""
                result = node.cmd(f"ping -c1 {opts} {dest.IP()}")
                outputs = self._parsePingFull(result)
                all_outputs.append((node, dest, outputs))
                output(f"{dest.name} " if outputs[1] else "X ")
            output("\n")
        output("*** Results: \n")
        for src, dest, (sent, received, rmin, ravg, rmax, rdev) in all_outputs:
            output(f" {src}->{dest}: {sent}/{received}, ")
            output(f"rtt min/avg/max/mdev {rmin:0.3f}/{ravg:0.3f}/{rmax:0.3f}/{rdev:0.3f} ms\n")
        return all_outputs

    def pingAll(self, timeout: Any = None) -> float:
        return self.ping(timeout=timeout)

    def pingPair(self) -> float:
        return self.ping(hosts=[self.hosts[0], self.hosts[1]])

    def pingAllFull(self) -> list:
        return self.pingFull()

    def pingPairFull(self) -> list:
        return self.pingFull(hosts=[self.hosts[0], self.hosts[1]])

    @staticmethod
    def _parseIperf(iperfOutput: str) -> str:
        m = re.findall(r"([\d\.]+ \w+/sec)", iperfOutput)
        if m:
            return m[-1]
        error("could not parse iperf output: " + iperfOutput)
        return ""

    def iperf(self, hosts: list | None = None, l4Type: str = "TCP", udpBw: str = "10M",
              fmt: str | None = None, seconds: int = 5, port: int = 5001) -> list[str]:
        """iperf 2 between two hosts, as Mininet runs it: [server, client] speeds (UDP:
        [udpBw, server, client])."""
        hosts = hosts or [self.hosts[0], self.hosts[-1]]
        assert len(hosts) == 2
        client, server = hosts
        output("*** Iperf: testing", l4Type, "bandwidth between", client, "and", server, "\n")
        args = f"iperf -p {port} "
        bw = ""
        if l4Type == "UDP":
            args += "-u "
            bw = f"-b {udpBw} "
        elif l4Type != "TCP":
            raise ValueError(f"Unexpected l4 type: {l4Type}")
        if fmt:
            args += f"-f {fmt} "
        server.sendCmd(args + "-s")
        if l4Type == "TCP" and not waitListening(client, server.IP(), port):
            raise LabError(f"Could not connect to iperf on port {port}")
        cliout = client.cmd(args + f"-t {seconds} -c " + server.IP() + " " + bw)
        debug(f"Client output: {cliout}\n")
        # The server's report of the test: Mininet waits for two with TCP (iperf 2.0
        # reported waitListening's empty connection too; 2.1 does not), so: the second,
        # or the first and a quiet second after it.
        servout = ""
        count = 2 if l4Type == "TCP" else 1
        deadline = time.monotonic() + 30
        while len(re.findall("/sec", servout)) < count and time.monotonic() < deadline:
            more = server.monitor(timeoutms=1000 if "/sec" in servout else 5000)
            if not more and "/sec" in servout:
                break
            servout += more
        server.sendInt()
        servout += server.waitOutput()
        debug(f"Server output: {servout}\n")
        result = [self._parseIperf(servout), self._parseIperf(cliout)]
        if l4Type == "UDP":
            result.insert(0, udpBw)
        output(f"*** Results: {result}\n")
        return result

    def runCpuLimitTest(self, cpu: float, duration: int = 5) -> list[float]:
        """Busy loops in every host; each second, each host's share of the machine's CPU
        (percent), read from its cgroup (CPULimitedHost)."""
        info(f"*** Testing CPU {cpu * 100:.0f}% bandwidth limit\n")
        hosts = self.hosts
        cores = os.cpu_count() or 1
        procs = int(ceil(cores * cpu))
        pids: dict[Any, list[str]] = {}
        for h in hosts:
            pids[h] = []
            for _ in range(procs):
                h.cmd("while true; do a=1; done &")
                pids[h].append(h.cmd("echo $!").strip())
        outputs: dict[Any, list[float]] = {h: [] for h in hosts}
        last = {h: h.cpu_seconds() for h in hosts}
        for _ in range(duration):
            time.sleep(1)
            for h in hosts:
                now = h.cpu_seconds()
                outputs[h].append((now - last[h]) / cores * 100)
                last[h] = now
        for h, ps in pids.items():
            for pid in ps:
                h.cmd(f"kill -9 {pid}")
        fractions = [pct for h in hosts for pct in outputs[h]]
        output(f"*** Results: {fractions}\n")
        return fractions


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return ~s & 0xffff


def _echo(ns: str | None, ips: list[str], wait_s: float) -> list[bool]:
    """One ICMP echo request from namespace ns to each address at once; whether each was
    answered within wait_s."""
    if not ips:
        return []

    def go() -> list[bool]:
        ident = (os.getpid() ^ id(ips)) & 0xffff
        with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP) as s:
            s.setblocking(False)
            sent = 0
            for seq, ip in enumerate(ips):
                body = struct.pack("!d", time.time()) + bytes(48)
                head = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
                pkt = struct.pack("!BBHHH", 8, 0, _checksum(head + body), ident, seq) + body
                try:
                    s.sendto(pkt, (ip, 0))
                    sent += 1
                except OSError:
                    pass  # unreachable (no route, interface down): no reply to wait for
            answered = [False] * len(ips)
            want = {ip: k for k, ip in enumerate(ips)}
            left = sent
            deadline = time.monotonic() + wait_s
            while left and time.monotonic() < deadline:
                r, _, _ = select.select([s], [], [], max(0.0, deadline - time.monotonic()))
                if not r:
                    break
                while True:
                    try:
                        data, (src, _) = s.recvfrom(2048)
                    except BlockingIOError:
                        break
                    ihl = (data[0] & 0x0F) * 4
                    if len(data) < ihl + 8:
                        continue
                    typ, _, _, rid, seq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
                    k = want.get(src)
                    if typ == 0 and rid == ident and k == seq and not answered[k]:
                        answered[k] = True
                        left -= 1
            return answered

    return netns.run_in(ns, go) if ns else go()
