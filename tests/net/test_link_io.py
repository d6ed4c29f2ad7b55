"""netrig-link's two ways of reading a link end, recvmmsg and the TPACKET_V2 receive ring,
on real veths: the bare forwarder (`netrig-link forward`, the floor benches measure) and
the daemon."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest
from netlab import assert_emulated_rtt, emulated_pair, totals
from netrig import binary

pytestmark = pytest.mark.net
MS = 1_000_000


@contextlib.contextmanager
def forwarder(pair, *flags: str) -> Iterator[subprocess.Popen]:
    """The pair's daemon stopped, and the bare forwarder on its ends instead."""
    pair.proc.send_signal(signal.SIGTERM)
    pair.proc.wait(timeout=30)
    p = subprocess.Popen(["ip", "netns", "exec", pair.emu_ns, str(binary("netrig-link")), "forward",
                          "--a", f"{pair.prefix}a1", "--b", f"{pair.prefix}b1", "--seconds", "30", *flags],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert '"ready"' in p.stdout.readline(), p.stderr.read() if p.poll() is not None else ""
        yield p
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=30)


def stop(p: subprocess.Popen) -> dict:
    """SIGTERM, then the forwarder's counters."""
    p.terminate()
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    return json.loads(out.splitlines()[-1])["forward"]


@pytest.mark.parametrize("io", ["recvmmsg", "ring"])
def test_the_bare_forwarder_carries_pings_both_ways(tmp_path, io):
    with emulated_pair(tmp_path, {}) as pair, forwarder(pair, "--io", io, "--threads", "1") as fw:
        rtts = pair.ping(count=5, interval=0.05)
        got = stop(fw)
    assert len(rtts) == 5 and got["io"] == io
    for d in ("a_to_b", "b_to_a"):
        assert got[d]["frames"] >= 5 and got[d]["refused"] == 0 and got[d]["kernel_drops"] == 0, got


def test_the_forwarder_holding_frames_delays_them_and_says_how_late_it_sent_them(tmp_path):
    """`--delay-us` (the lateness floor benches measure): every frame leaves 5 ms after it
    came, both ways from one thread, and each one's lateness is counted."""
    with emulated_pair(tmp_path, {}) as pair, \
            forwarder(pair, "--io", "ring", "--threads", "1", "--delay-us", "5000", "--rate-mbit", "100") as fw:
        rtts = pair.ping(count=5, interval=0.05)
        got = stop(fw)
    assert_emulated_rtt(rtts[1:], 10.0, crossings=2)
    hold = got["hold"]
    assert hold["delay_ns"] == 5 * MS and hold["rate_bps"] == 100_000_000, hold
    for d in ("a_to_b", "b_to_a"):
        assert hold[d]["lateness"]["count"] == got[d]["frames"] >= 5 and hold[d]["fifo_dropped"] == 0, got
    assert hold["lateness"]["count"] == got["a_to_b"]["frames"] + got["b_to_a"]["frames"], got


def test_superframes_cross_a_ring_whole_through_its_queue(tmp_path):
    """With offloads on, a ring's slots hold wire-sized frames and a superframe comes
    whole through the socket's queue: TCP's superframes arrive as they were sent."""
    with emulated_pair(tmp_path, {}, {"offloads_off": False}, host_offloads=True) as pair, \
            forwarder(pair, "--io", "ring", "--offloads-on") as fw:
        srv = pair.popen_b(str(binary("netrig-perf")), "-s", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.3)
            p = pair.in_a(str(binary("netrig-perf")), "-c", pair.b_ip, "-J", "-t", "1")
            got = stop(fw)
        finally:
            srv.terminate()
            srv.wait(timeout=10)
    assert p.returncode == 0, p.stderr
    received = json.loads(p.stdout)["end"]["sum_received"]["bytes"]
    a = got["a_to_b"]
    assert a["refused"] == 0 and a["bytes"] >= received, (got, received)
    # as wire frames there would have been one per 1448 bytes at least
    assert a["frames"] < received / 1448 / 2, (got, received)


@pytest.mark.parametrize("io", ["recvmmsg", "ring"])
def test_the_daemon_keeps_the_delay_whichever_way_it_reads(tmp_path, io):
    with emulated_pair(tmp_path, {"delay_ns": 5 * MS}, {"io": io}) as pair:
        rtts = pair.ping(count=10, interval=0.05)
        pair.proc.send_signal(signal.SIGTERM)
        pair.proc.wait(timeout=30)
    assert_emulated_rtt(rtts[1:], 10.0, crossings=2)
    link = totals(pair.log)["links"][0]
    for d in ("a_to_b", "b_to_a"):
        assert link[d]["delivered"] >= 10 and link[d]["drops_host"] == 0, link
