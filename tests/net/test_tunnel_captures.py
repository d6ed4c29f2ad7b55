"""netrig-analyze on captures of tunnels, against tshark: the TCP inside is found and
analysed as tshark analyses it.

Two namespaces joined by a veth (the underlay, 10 Mbit/s by tbf on A's side: a transfer
overruns it and loses segments) carry four tunnels: VXLAN (the kernel's, on tshark's
port 4789, as lab/stitch.py makes it), and GRE, GRE-tap and IPIP made by
tests/net/usertunnel.py over TUN/TAP devices (this machine's kernel has no ip_gre or
ipip module; the packets on the wire are the same), which also drops every 40th packet
A sends. Through each tunnel in turn netrig-perf moves 400 kB while tcpdump records that
tunnel's packets on A's underlay veth; netrig-analyze must find the inner TCP stream
(inner addresses, port 5201) and agree with tshark on every flag and ack_rtt
(tests/tsharkdiff.py)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from netlab import needs_root, offloads_off, sh
from netrig import binary
from tsharkdiff import TSHARK, differences

pytestmark = pytest.mark.net
HERE = Path(__file__).resolve().parent

# Each tunnel: its device in each namespace, the inner /24, and tcpdump's filter for its
# packets on the underlay (GRE's protocol type is at ip[22:2]).
TUNNELS = {
    "vxlan": ("vx0", 4, "udp port 4789"),
    "gre": ("gre0", 1, "ip proto 47 and ip[22:2] = 0x0800"),
    "gretap": ("gtap0", 2, "ip proto 47 and ip[22:2] = 0x6558"),
    "ipip": ("ipip0", 3, "ip proto 4"),
}


class Lab:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.a, self.b = f"{prefix}-a", f"{prefix}-b"
        self.under = ("10.78.0.1", "10.78.0.2")
        self.procs: list[subprocess.Popen] = []
        self.namespaces: list[str] = []

    def inner(self, kind: str, side: int) -> str:
        return f"10.79.{TUNNELS[kind][1]}.{side}"

    def exec(self, ns: str, *cmd: str) -> None:
        sh("ip", "netns", "exec", ns, *cmd)


@contextlib.contextmanager
def tunnel_lab() -> Iterator[Lab]:
    needs_root()
    lab = Lab(f"nrtu{os.getpid() % 100000}")
    try:
        for ns in (lab.a, lab.b):
            sh("ip", "netns", "add", ns)
            lab.namespaces.append(ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "link", "add", "u0", "netns", lab.a, "type", "veth", "peer", "name", "u1", "netns", lab.b)
        for ns, dev, addr, side in ((lab.a, "u0", lab.under[0], 1), (lab.b, "u1", lab.under[1], 2)):
            sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            offloads_off(ns, dev)
            local, remote = lab.under if side == 1 else lab.under[::-1]
            sh("ip", "-n", ns, "link", "add", "vx0", "type", "vxlan", "id", "42", "local", local, "remote",
               remote, "dstport", "4789", "dev", dev)
            sh("ip", "-n", ns, "tuntap", "add", "dev", "gre0", "mode", "tun")
            sh("ip", "-n", ns, "tuntap", "add", "dev", "ipip0", "mode", "tun")
            sh("ip", "-n", ns, "tuntap", "add", "dev", "gtap0", "mode", "tap")
            for kind, (tdev, _, _) in TUNNELS.items():
                lab.exec(ns, "sysctl", "-q", "-w", f"net.ipv6.conf.{tdev}.disable_ipv6=1")
                sh("ip", "-n", ns, "link", "set", tdev, "mtu", "1400", "up")
                sh("ip", "-n", ns, "addr", "add", f"{lab.inner(kind, side)}/24", "dev", tdev)
            drop = ["--drop", "40"] if side == 1 else []
            p = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, str(HERE / "usertunnel.py"), local,
                                  remote, "60", *drop, "gre=gre0", "gretap=gtap0", "ipip=ipip0"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            lab.procs.append(p)
            assert p.stdout is not None and p.stdout.readline().strip() == "ready", p.stderr.read()
        sh("ip", "netns", "exec", lab.a, "tc", "qdisc", "add", "dev", "u0", "root", "tbf", "rate", "10mbit",
           "burst", "16kb", "latency", "20ms")
        yield lab
    finally:
        for p in lab.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=5)
        for ns in lab.namespaces:
            sh("ip", "netns", "del", ns, check=False)


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    with tunnel_lab() as lab:
        yield lab


def start_tcpdump(ns: str, dev: str, bpf: str, out: Path) -> subprocess.Popen:
    p = subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-n", "-i", dev, "-s", "256", "--immediate-mode",
                          "-w", str(out), bpf], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    line = ""
    while "listening on" not in line:
        if p.poll() is not None or time.monotonic() > deadline:
            p.kill()
            raise RuntimeError(f"tcpdump on {dev} did not start: {line}")
        line = p.stderr.readline() if p.stderr else ""
    return p


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
@pytest.mark.parametrize("kind", list(TUNNELS))
def test_the_tcp_inside_a_tunnel_is_analysed_as_tshark_does(lab, kind, tmp_path):
    pcap = tmp_path / f"{kind}.pcap"
    server_ip, client_ip = lab.inner(kind, 2), lab.inner(kind, 1)
    srv = subprocess.Popen(["ip", "netns", "exec", lab.b, str(binary("netrig-perf")), "-s", "-1", "-p", "5201",
                            "-B", server_ip], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dump = None
    try:
        dump = start_tcpdump(lab.a, "u0", TUNNELS[kind][2], pcap)
        time.sleep(0.2)
        run = subprocess.run(["ip", "netns", "exec", lab.a, str(binary("netrig-perf")), "-c", server_ip, "-p",
                              "5201", "-n", "400K", "-J"], capture_output=True, text=True, timeout=40)
        assert run.returncode == 0, run.stderr + run.stdout[-1000:]
        srv.wait(timeout=20)
        time.sleep(0.3)
    finally:
        if dump is not None:
            dump.send_signal(signal.SIGINT)
            dump.wait(timeout=10)
        if srv.poll() is None:
            srv.kill()
            srv.wait(timeout=10)
    p = subprocess.run([str(binary("netrig-analyze")), "tcp", str(pcap), "--frames"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    data = [s for s in doc["streams"] if s["b"] == f"{server_ip}:5201"
            and s["a"].startswith(f"{client_ip}:") and s["counts"]["packets"] > 100]
    shown = {k: v for k, v in doc["totals"].items() if isinstance(v, int) and v and k != "packets"}
    print(f"{kind}: {doc['file']['packets']} packets, {len(doc['streams'])} streams, {shown}")
    assert data, f"{kind}: no TCP stream {client_ip} -> {server_ip}:5201 found: {doc['streams']}"
    assert doc["totals"]["retransmission"] + doc["totals"]["lost_segment"] > 0, f"{kind}: no loss seen: {shown}"
    problems = differences(pcap, doc)
    assert not problems, "\n".join(problems)
