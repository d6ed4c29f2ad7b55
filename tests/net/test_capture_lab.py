"""Captures in real labs: a scenario's capture monitors of a plain link (one direction,
a BPF filter) and of a node's interface (a ring of files), read back by tshark; and
`netrig capture` on a running lab."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from netlab import needs_root

pytestmark = pytest.mark.net

SCENARIO = """\
name: captured
topology:
  nodes: {h1: host, s0: switch, h2: host}
  links:
    - [h1, s0]
    - [s0, h2]
duration: 3s
settle: 0s
flows:
  bulk: {kind: tcp, from: h1, to: h2, cc: cubic, rate: 20Mbit}
  rtt: {kind: ping, from: h1, to: h2, interval: 100ms}
monitors:
  - {kind: capture, link: h1-s0, dir: a_to_b, filter: tcp}
  - {kind: capture, node: h2, size: 400KB, files: 3}
  - {kind: capture, link: s0-h2, dir: a_to_b, filter: icmp}
"""


def netrig(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netrig", *args], capture_output=True, text=True,
                          timeout=timeout)


def fields(path: str, *names: str, filt: str | None = None) -> list[list[str]]:
    argv = ["tshark", "-r", path, "-T", "fields", *[x for n in names for x in ("-e", n)]]
    if filt:
        argv += ["-Y", filt]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return [line.split("\t") for line in p.stdout.splitlines()]


def test_a_runs_captures_hold_what_they_were_asked_for(tmp_path):
    needs_root()
    (tmp_path / "s.yaml").write_text(SCENARIO)
    out = tmp_path / "r"
    p = netrig("run", str(tmp_path / "s.yaml"), "--out", str(out), "-q")
    assert p.returncode == 0, p.stdout + p.stderr
    rdir = out / "runs" / "p000-r00"
    run = json.loads((rdir / "run.json").read_text())
    one, ring, pings = run["captures"]
    assert (one["monitor"], one["by"], one["dir"], one["filter"]) == (0, "dumpcap", "a_to_b", "tcp")
    (f,) = one["files"]
    rows = fields(str(rdir / f), "ip.src", "ip.dst", "ip.proto", "frame.interface_name")
    assert rows and len(rows) == one["frames"]
    # h1 -> s0 only (h1 sends; h2's ACKs come the other way), TCP only (no pings, no ARP)
    senders = {r[0] for r in rows}
    assert len(senders) == 1 and {r[2] for r in rows} == {"6"} and {r[3] for r in rows} == {"eth0"}
    assert sum(int(x[0] or 0) for x in fields(str(rdir / f), "tcp.len")) > 1_000_000
    # the ring on h2's interface: both directions, the newest 3 files at most, within the bound
    assert ring["node"] == "h2" and 2 <= len(ring["files"]) <= 3
    assert ring["bytes"] <= 400_000 + 3 * 70_000  # dumpcap switches files after a block
    seen = set()
    for f in ring["files"]:
        seen |= {r[0] for r in fields(str(rdir / f), "ip.src", filt="icmp or tcp")}
    assert senders < seen  # both ways: h2's own packets too
    # s0 -> h2, told at h2's end (a switch's port has no address of its own): the echo
    # requests only, every one of them
    (f,) = pings["files"]
    types = [r[0] for r in fields(str(rdir / f), "icmp.type")]
    assert set(types) == {"8"} and len(types) >= 25, types


def test_netrig_capture_on_a_running_lab_and_its_errors(tmp_path):
    needs_root()
    prefix = f"cpx{os.getpid() % 100000}"
    f = tmp_path / "two.yaml"
    f.write_text(json.dumps({"name": "two", "prefix": prefix, "nodes": {"a": "host", "b": "host"},
                             "links": [{"a": "a", "b": "b", "name": "L"}]}))
    try:
        up = netrig("up", str(f), "-q")
        assert up.returncode == 0, up.stderr
        pcap = tmp_path / "l.pcapng"
        cap = subprocess.Popen([sys.executable, "-m", "netrig", "capture", "--prefix", prefix, "L",
                                "--dir", "b_to_a", "-t", "4", "-w", str(pcap)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = cap.stdout.readline()
        assert first.startswith("capturing link L, b -> a (dumpcap)"), first + cap.stderr.read()
        ping = netrig("exec", "--prefix", prefix, "a", "ping", "-c", "5", "-i", "0.2", "b")
        assert ping.returncode == 0, ping.stderr
        rest, err = cap.communicate(timeout=30)
        assert cap.returncode == 0, err
        assert rest.startswith("captured link L, b -> a: 1 file,"), rest
        rows = fields(str(pcap), "icmp.type", filt="icmp")
        assert [r[0] for r in rows] == ["0"] * 5  # b's echo replies, none of a's requests
        assert not (tmp_path / "l.dumpcap.log").exists()
        bad = netrig("capture", "--prefix", prefix, "L9", "-t", "1")
        assert bad.returncode != 0 and "no link" in bad.stderr and "its links: L" in bad.stderr, bad.stderr
        bad = netrig("capture", "--prefix", prefix, "a:eth7", "-t", "1")
        assert bad.returncode != 0 and "a has no interface 'eth7' (it has eth0)" in bad.stderr, bad.stderr
        bad = netrig("capture", "--prefix", prefix, "L", "-f", "tcp prot 80", "-t", "1")
        assert bad.returncode != 0 and "tcp prot 80" in bad.stderr, bad.stderr
    finally:
        netrig("down", "--prefix", prefix)
    assert prefix not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


LOSSY = """\
name: lossy
topology:
  nodes: {h1: host, h2: host}
  links:
    - {a: h1, b: h2, rate: 20Mbit, delay: 5ms, queue: 30, a_to_b: {loss: 2%}}
duration: 4s
settle: 0s
flows:
  bulk: {kind: tcp, from: h1, to: h2, cc: cubic}
monitors:
  - {kind: capture, link: h1-h2, snaplen: 96}
  - {kind: capture, node: h1, filter: tcp, snaplen: 96}
"""


def test_an_emulated_links_capture_shows_its_drops_and_feeds_the_flows_retransmission_ratio(tmp_path):
    """netrig-link captures the lossy link both ways with every frame it dropped, commented
    with the cause; Wireshark's analysis of the capture gives the flow's retransmission
    ratio (seed 000's counting), the same as tshark's count of the same streams, beside
    TCP_INFO's; and the Stevens graph is drawn."""
    needs_root()
    (tmp_path / "s.yaml").write_text(LOSSY)
    out = tmp_path / "r"
    p = netrig("run", str(tmp_path / "s.yaml"), "--out", str(out), "-q")
    assert p.returncode == 0, p.stdout + p.stderr
    rdir = out / "runs" / "p000-r00"
    run = json.loads((rdir / "run.json").read_text())
    link, h1 = run["captures"]
    assert link["by"] == "netrig-link" and h1["by"] == "dumpcap"
    (f,) = link["files"]
    names = {r[0] for r in fields(str(rdir / f), "frame.interface_name")}
    assert names == {"h1-h2 a->b", "h1-h2 b->a"}
    comments = fields(str(rdir / f), "frame.comment", filt='frame.comment contains "dropped"')
    assert len(comments) == link["drops_written"] > 0
    assert {c[0] for c in comments} <= {"netrig-link dropped this frame: random loss (loss 2%)",
                                       "netrig-link dropped this frame: queue full (drop-tail, 30 packets)"}
    s = run["flows"]["bulk"]["summary"]
    assert s["capture_segments"] > 1000 and s["capture_retransmissions"] > 0
    assert s["retrans_pct_capture"] == pytest.approx(100 * s["capture_retransmissions"] / s["capture_segments"])
    where = run["flows"]["bulk"]["capture"]
    # h1's own interface is the sender's view, as seed 000's Wireshark saw it
    assert where["capture_monitor"] == 1 and (rdir / where["stevens"]).stat().st_size > 10_000
    (f,) = h1["files"]
    # tshark counts the same: the data streams (every stream to the server's port but the
    # first, netrig-perf's control connection), h1 -> h2
    server = json.loads((rdir / h1["analysis"]).read_text())
    streams = ",".join(str(x) for x in where["capture_streams"])
    filt = f"tcp.stream in {{{streams}}} and ip.src == {server['streams'][0]['a'].split(':')[0]}"
    retr = fields(str(rdir / f), "frame.number", filt=f"{filt} and tcp.analysis.retransmission")
    segs = fields(str(rdir / f), "frame.number", filt=f"{filt} and tcp.len > 0")
    assert (len(retr), len(segs)) == (s["capture_retransmissions"], s["capture_segments"])
    # TCP_INFO's estimate is there too, for comparison
    assert s["retrans_pct"] is not None
