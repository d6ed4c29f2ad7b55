"""netrig-link with real traffic between namespaces: rate, delay, loss, stats, pcap,
live changes, failing closed."""

from __future__ import annotations

import json
import shutil
import signal
import statistics
import subprocess
import sys
import time

import pytest
from netlab import assert_emulated_rtt, emulated_pair, needs_root, totals
from netrig import binary
from netrig.lab.network import PingResult

pytestmark = pytest.mark.net
MS = 1_000_000


def perf_server(pair, port: int = 5201) -> subprocess.Popen:
    srv = pair.popen_b(str(binary("netrig-perf")), "-s", "-p", str(port),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    return srv


def perf(pair, *args: str) -> dict:
    p = pair.in_a(str(binary("netrig-perf")), "-c", pair.b_ip, "-J", *args)
    assert p.returncode == 0, p.stderr + p.stdout[-1000:]
    return json.loads(p.stdout)


def test_delay_is_the_configured_rtt(tmp_path):
    with emulated_pair(tmp_path, {"delay_ns": 10 * MS}) as pair:
        rtts = pair.ping(count=20)
        assert len(rtts) >= 19
        assert_emulated_rtt(rtts[1:], 20.0, crossings=2)  # 2 x 10 ms, the link crossed twice


def test_rate_gives_the_theoretical_tcp_goodput(tmp_path):
    # 20 Mbit/s of frames: TCP payload is 1448 of every 1514 frame bytes.
    with emulated_pair(tmp_path, {"rate_bps": 20_000_000, "delay_ns": 2 * MS, "queue": {"limit_packets": 100}}) as pair:
        srv = perf_server(pair)
        try:
            doc = perf(pair, "-t", "4", "-O", "1")
        finally:
            srv.terminate()
        got = doc["end"]["sum_received"]["bits_per_second"]
        theory = 20e6 * 1448 / 1514
        assert abs(got / theory - 1) < 0.03, (got, theory)


def test_loss_drops_the_configured_share(tmp_path):
    spec = {"loss": {"random": {"p": 0.1}}}
    with emulated_pair(tmp_path, spec) as pair:
        srv = perf_server(pair)
        try:
            doc = perf(pair, "-u", "-b", "8M", "-l", "1000", "-t", "3")
        finally:
            srv.terminate()
        pair.proc.send_signal(signal.SIGTERM)
        pair.proc.wait(timeout=5)
        t = totals(pair.log)["links"][0]["a_to_b"]
        n, lost = t["arrived"], t["lost"]
        sd = (n * 0.1 * 0.9) ** 0.5
        assert abs(lost - 0.1 * n) < 3.3 * sd, (lost, n)
        udp = doc["end"]["sum"]
        assert 7 < udp["lost_percent"] < 13, udp


def test_stats_stream_shows_the_queue_building(tmp_path):
    spec = {"rate_bps": 10_000_000, "delay_ns": 5 * MS, "queue": {"limit_packets": 60}}
    with emulated_pair(tmp_path, spec) as pair:
        srv = perf_server(pair)
        try:
            # cubic fills the buffer (bbr, this kernel's default, would keep it short).
            perf(pair, "-t", "3", "-C", "cubic")
        finally:
            srv.terminate()
        pair.proc.send_signal(signal.SIGTERM)
        pair.proc.wait(timeout=5)
    lines = [json.loads(x) for x in pair.stats.read_text().splitlines()]
    samples = [x for x in lines if x.get("dir") == "a_to_b" and "queue_packets" in x]
    # ~100 samples a second for ~3.5 s.
    assert len(samples) > 250, len(samples)
    peak = max(s["queue_packets"] for s in samples)
    assert 30 < peak <= 60, peak
    # A full 60-packet queue at 10 Mbit/s waits 60 x 1.2 ms = 72 ms at most.
    assert max(s.get("sojourn_max_us", 0) for s in samples) <= 73_000
    assert sum(s["drops_overflow"] for s in samples) > 0
    rates = [s["rate_bps"] for s in samples if s["queue_packets"] > 10]
    assert 9e6 < statistics.median(rates) < 11e6
    assert lines[-1]["totals"]["lateness"]["count"] > 1000


def test_live_changes_through_the_control_socket(tmp_path):
    with emulated_pair(tmp_path, {"delay_ns": 5 * MS}) as pair:
        assert_emulated_rtt(pair.ping(count=10)[1:], 10.0, crossings=2)  # there and back
        r = pair.request({"cmd": "set", "link": "l1", "spec": {"delay_ns": 25 * MS}})
        assert r["ok"], r
        assert_emulated_rtt(pair.ping(count=10)[1:], 50.0, crossings=2)
        # A spec replaces the whole spec: a stage it leaves out is off, not kept.
        lossy = {"delay_ns": 25 * MS, "loss": {"random": {"p": 1.0}}}
        r = pair.request({"cmd": "set", "link": "l1", "dir": "a_to_b", "spec": lossy})
        assert r["ok"] and r["spec"]["a_to_b"]["loss"] == {"random": {"p": 1.0, "correlation": 0.0}}
        assert pair.ping(count=3, interval=0.2) == []
        r = pair.request({"cmd": "set", "link": "l1", "dir": "a_to_b", "spec": {"delay_ns": 25 * MS}})
        assert r["ok"] and "loss" not in r["spec"]["a_to_b"], r
        assert len(pair.ping(count=3, interval=0.2)) == 3
        r = pair.request({"cmd": "set", "link": "l1", "dir": "a_to_b", "spec": {"delay_ns": 0}})
        assert r["ok"] and r["spec"]["a_to_b"]["delay_ns"] == 0
        assert_emulated_rtt(pair.ping(count=10)[1:], 25.0, crossings=2)
        assert pair.request({"cmd": "down", "link": "l1"})["ok"]
        assert pair.ping(count=3, interval=0.2) == []
        assert pair.request({"cmd": "up", "link": "l1"})["ok"]
        assert len(pair.ping(count=3, interval=0.2)) == 3
        stats = pair.request({"cmd": "stats"})
        assert stats["links"][0]["a_to_b"]["drops_down"] >= 3
        bad = pair.request({"cmd": "set", "link": "l1", "spec": {"loss": {"random": {"p": 3}}}})
        assert not bad["ok"] and "loss.random.p: 3 is outside 0 .. 1" in bad["error"], bad
        assert not pair.request({"cmd": "set", "link": "nope", "spec": {}})["ok"]
        assert "warp" in pair.request({"cmd": "warp"})["error"]


@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump is not installed")
def test_pcap_of_a_direction_reads_in_tcpdump(tmp_path):
    cap = tmp_path / "l1.pcap"
    extra = {"pcap": [{"link": "l1", "dir": "a_to_b", "path": str(cap)}]}
    with emulated_pair(tmp_path, {"delay_ns": 1 * MS}, extra) as pair:
        assert len(pair.ping(count=5)) == 5
        pair.proc.send_signal(signal.SIGTERM)
        pair.proc.wait(timeout=5)
    p = subprocess.run(["tcpdump", "-nn", "-r", str(cap), "icmp"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    requests = [x for x in p.stdout.splitlines() if "echo request" in x]
    assert len(requests) == 5


def test_a_killed_daemon_fails_closed(tmp_path):
    with emulated_pair(tmp_path, {"delay_ns": 1 * MS}) as pair:
        assert len(pair.ping(count=3)) == 3
        pair.proc.send_signal(signal.SIGKILL)
        pair.proc.wait(timeout=5)
        assert pair.ping(count=3, interval=0.2) == []  # nothing passes unshaped


def test_shell_runs_a_command_behind_the_link_and_cleans_up():
    needs_root()
    p = subprocess.run([str(binary("netrig-link")), "shell", "--delay", "5ms", "--rate", "50Mbit", "--",
                        "sh", "-c", "ping -c 5 -i 0.05 $NETRIG_LINK_HOST"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rtts = PingResult.parse(p.stdout, 5).rtts_ms
    assert len(rtts) == 5
    assert_emulated_rtt(rtts, 10.0, crossings=2)
    assert '"totals"' in p.stderr
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "nrl" not in left


def test_clean_removes_what_a_killed_shell_left():
    needs_root()
    sh = subprocess.Popen([str(binary("netrig-link")), "shell", "--delay", "1ms", "--", "sleep", "30"],
                          stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        name = f"nrl{sh.pid}-in"
        while name not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        sh.send_signal(signal.SIGKILL)
        sh.wait(timeout=5)
        assert name in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        out = subprocess.run([str(binary("netrig-link")), "clean"], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0
        assert f"removed nrl{sh.pid}-in" in out.stdout
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert f"nrl{sh.pid}" not in left
        assert f"nrl{sh.pid}o0" not in subprocess.run(["ip", "link"], capture_output=True, text=True).stdout
    finally:
        if sh.poll() is None:
            sh.kill()
        # The sleep inside the namespace was the shell's child: end it by its pid file-less way.
        subprocess.run([str(binary("netrig-link")), "clean"], capture_output=True, timeout=30)


def queueing_delays(stats_path, skip_s: float) -> list[float]:
    """Per-sample mean sojourn (ms) of the a_to_b queue, after the first `skip_s`."""
    out = []
    for line in stats_path.read_text().splitlines():
        x = json.loads(line)
        if x.get("dir") == "a_to_b" and x.get("dequeued", 0) > 0 and x["t"] > skip_s:
            out.append(x["sojourn_mean_us"] / 1000)
    return out


@pytest.mark.parametrize("discipline", ["pie", "droptail"])
def test_pie_holds_the_queueing_delay_near_its_target(tmp_path, discipline):
    """A long-lived TCP flow through a 1.5 Mbit/s bottleneck (the bufferbloat seed):
    drop-tail with 100 packets lets the queue grow to ~800 ms; PIE keeps it near 20 ms."""
    queue = {"discipline": "pie", "target_ns": 20 * MS, "limit_packets": 1000} if discipline == "pie" \
        else {"discipline": "droptail", "limit_packets": 100}
    spec = {"a_to_b": {"rate_bps": 1_500_000, "delay_ns": 10 * MS, "queue": queue},
            "b_to_a": {"delay_ns": 10 * MS}}
    with emulated_pair(tmp_path, spec) as pair:
        srv = perf_server(pair)
        try:
            doc = perf(pair, "-t", "10", "-C", "cubic")
        finally:
            srv.terminate()
        pair.proc.send_signal(signal.SIGTERM)
        pair.proc.wait(timeout=5)
    goodput = doc["end"]["sum_received"]["bits_per_second"]
    assert goodput > 0.8 * 1.5e6 * 1448 / 1514, goodput
    delays = queueing_delays(pair.stats, skip_s=4)
    med = statistics.median(delays)
    if discipline == "pie":
        assert 5 < med < 40, med
    else:
        assert med > 300, med


def test_offload_superframes_pass_whole_when_offloads_stay_on(tmp_path):
    """With offloads kept, GSO superframes cross the emulator whole (virtio-net header
    and all) and are charged for the segments they stand for: the rate still holds."""
    spec = {"rate_bps": 50_000_000, "delay_ns": 1 * MS, "queue": {"limit_packets": 1000}}
    with emulated_pair(tmp_path, spec, {"offloads_off": False}, host_offloads=True) as pair:
        srv = perf_server(pair)
        try:
            doc = perf(pair, "-t", "3", "-O", "1")
        finally:
            srv.terminate()
    got = doc["end"]["sum_received"]["bits_per_second"]
    assert abs(got / (50e6 * 1448 / 1514) - 1) < 0.04, got


# B counts the UDP datagrams its sockets accept on ports 9001 and 9002 for ARGV[1] s.
UDP_COUNT = """
import select, socket, sys, time
socks = {}
for port in (9001, 9002):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    socks[s] = port
counts = {9001: 0, 9002: 0}
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    for s in select.select(list(socks), [], [], 0.05)[0]:
        s.recv(65536)
        counts[socks[s]] += 1
print(counts[9001], counts[9002], flush=True)
"""
# A sends 100 datagrams to port 9001, then 50 UDP GSO sends (UDP_SEGMENT: each one
# superframe of 4 datagrams of 1000 bytes) to port 9002.
UDP_SEND = """
import socket, sys, time
plain = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(100):
    plain.sendto(bytes([i]) * 1000, (sys.argv[1], 9001))
    time.sleep(0.002)
gso = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
gso.setsockopt(17, 103, 1000)  # SOL_UDP, UDP_SEGMENT
for i in range(50):
    gso.sendto(bytes([i]) * 4000, (sys.argv[1], 9002))
    time.sleep(0.002)
"""


def test_corrupted_frames_with_offloads_on_are_refused_by_the_receiver(tmp_path):
    """With offloads on, frames come with their checksums left to the device; a corrupted
    one must still fail the receiver's checks (its checksum completed before the bit
    flips), and a corrupted superframe loses one segment, as on a wire."""
    spec = {"delay_ns": 1 * MS}
    with emulated_pair(tmp_path, spec, {"offloads_off": False}, host_offloads=True) as pair:
        assert len(pair.ping(count=2, interval=0.05)) == 2  # neighbours resolved first
        bad = spec | {"corrupt": {"p": 1.0}}
        assert pair.request({"cmd": "set", "link": "l1", "dir": "a_to_b", "spec": bad})["ok"]
        rx = pair.popen_b(sys.executable, "-c", UDP_COUNT, "2.5", stdout=subprocess.PIPE, text=True)
        try:
            assert rx.stdout.readline().strip() == "ready"
            p = pair.in_a(sys.executable, "-c", UDP_SEND, pair.b_ip, timeout=20)
            assert p.returncode == 0, p.stderr
            out, _ = rx.communicate(timeout=20)
        finally:
            if rx.poll() is None:
                rx.kill()
                rx.wait()
        stats = pair.request({"cmd": "stats"})
    plain, gso = (int(x) for x in out.split())
    assert plain == 0, f"{plain} of 100 corrupted datagrams accepted"
    # Each superframe's corruption hits one of its 4 datagrams.
    assert gso == 150, (gso, stats)
