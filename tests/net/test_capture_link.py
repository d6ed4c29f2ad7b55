"""Captures of an emulated link (netrig-link's capture_start / capture_stop), read back
with tshark and tcpdump: both directions named, every delivered and every dropped
frame there with its cause, filters that keep what tcpdump keeps, rings within bounds."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from netlab import emulated_pair
from netrig import binary
from netrig.link.userspace import LinkDaemonError, capture_start, capture_stop

pytestmark = [
    pytest.mark.net,
    pytest.mark.skipif(shutil.which("tshark") is None or shutil.which("tcpdump") is None,
                       reason="tshark and tcpdump read the captures"),
]
MS = 1_000_000
DROPPED = "netrig-link dropped this frame"
# 10 Mbit/s with a 20-packet queue and 5 % loss: a 15 Mbit/s UDP flow overflows it.
LOSSY = {"rate_bps": 10_000_000, "delay_ns": 2 * MS, "queue": {"limit_packets": 20},
         "loss": {"random": {"p": 0.05}}}


def udp_flow(pair, rate: str = "15M", seconds: int = 2, length: int = 1000) -> None:
    """A bounded netrig-perf UDP flow from A to B (and its TCP control connection)."""
    srv = pair.popen_b(str(binary("netrig-perf")), "-s", "-p", "5201", "-1",
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        p = pair.in_a(str(binary("netrig-perf")), "-c", pair.b_ip, "-u", "-b", rate, "-l", str(length),
                      "-t", str(seconds), "-J", timeout=seconds + 30)
        assert p.returncode == 0, p.stderr + p.stdout[-1000:]
    finally:
        srv.terminate()
        srv.wait(timeout=5)
    time.sleep(0.2)  # what is queued or in flight leaves the link


def quiet(pair) -> None:
    """No frame crosses the link unasked: the captures started one after the other must
    all see the same frames (IPv6 would send listener reports at a time of its own)."""
    for ns in (pair.a_ns, pair.b_ns):
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                        "net.ipv6.conf.default.disable_ipv6=1"], check=True, timeout=30)
    time.sleep(0.2)


def tshark(path: Path, *fields: str, display_filter: str | None = None) -> list[list[str]]:
    args = ["tshark", "-n", "-r", str(path), "-T", "fields", "-E", "separator=\t"]
    if display_filter:
        args += ["-Y", display_filter]
    for f in fields:
        args += ["-e", f]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return [line.split("\t") for line in p.stdout.splitlines()]


def tcpdump_lines(path: Path, expr: str = "") -> list[str]:
    """What tcpdump prints of each frame (no timestamps: two captures of one frame may
    differ in the last digits of the wall clock)."""
    p = subprocess.run(["tcpdump", "-nn", "-t", "-r", str(path), *([expr] if expr else [])],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def diff(start: dict, stop: dict, d: str, key: str) -> int:
    return stop["link_counters"][d][key] - start["link_counters"][d][key]


def test_both_directions_show_every_delivered_and_every_dropped_frame_with_its_cause(tmp_path):
    cap = tmp_path / "l1.pcapng"
    with emulated_pair(tmp_path, LOSSY) as pair:
        start = capture_start(pair.control, "l1", cap)
        assert start["capture"]["interfaces"] == ["l1 a->b", "l1 b->a"], start
        assert len(pair.ping(count=5, interval=0.02)) >= 1  # traffic back from B, too
        udp_flow(pair)
        stop = capture_stop(pair.control, "l1")
    info = subprocess.run(["capinfos", str(cap)], capture_output=True, text=True, timeout=60).stdout
    assert "Name = l1 a->b" in info and "Name = l1 b->a" in info, info
    assert "rate 10 Mbit/s, delay 2 ms, queue drop-tail 20 packets, random loss (loss 5%)" in info, info
    rows = tshark(cap, "frame.interface_name", "frame.packet_flags", "frame.comment", "data.data", "udp.dstport")
    total_drops = 0
    for d, name in (("a_to_b", "l1 a->b"), ("b_to_a", "l1 b->a")):
        mine = [r for r in rows if r[0] == name]
        delivered = [r for r in mine if r[1] == "0x00000002" and not r[2]]
        dropped = [r for r in mine if r[1] == "0x00000001" and r[2].startswith(DROPPED)]
        assert len(delivered) + len(dropped) == len(mine), Counter((r[1], r[2]) for r in mine)
        assert len(delivered) == diff(start, stop, d, "delivered"), (d, stop)
        causes = Counter(r[2] for r in dropped)
        assert causes[f"{DROPPED}: queue full (drop-tail, 20 packets)"] == diff(start, stop, d, "drops_overflow")
        assert causes[f"{DROPPED}: random loss (loss 5%)"] == diff(start, stop, d, "lost")
        assert len(dropped) == sum(diff(start, stop, d, k)
                                   for k in ("lost", "drops_overflow", "drops_aqm", "drops_down"))
        total_drops += len(dropped)
        if d == "a_to_b":
            # The flow overflowed the queue and met the loss.
            assert diff(start, stop, d, "drops_overflow") > 100 and diff(start, stop, d, "lost") > 20, stop
            # A dropped frame is written with its own bytes: its datagram (iperf3's
            # sequence number, payload bytes 8-11) is never one that was delivered.
            # (The 4-byte datagrams that open the test have no sequence number.)
            seqs = {r[3][16:24] for r in delivered if r[4] == "5201" and len(r[3]) >= 24}
            dropped_seqs = [r[3][16:24] for r in dropped if r[4] == "5201" and len(r[3]) >= 24]
            assert len(dropped_seqs) > 100 and len(set(dropped_seqs)) == len(dropped_seqs)
            assert not seqs & set(dropped_seqs)
    # tshark's own filter on the comment finds them all.
    assert len(tshark(cap, "frame.number", display_filter='frame.comment contains "dropped"')) == total_drops
    counters = stop["capture"]["counters"]
    assert counters["drops"] == total_drops and counters["frames"] == len(rows), counters
    assert counters["bytes"] == cap.stat().st_size


# Expressions whose tcpdump programs the capture runs; each must keep what tcpdump keeps.
FILTERS = ["tcp", "udp port 5201", "host {a} and tcp[tcpflags] & tcp-syn != 0", "len > 1000", "vlan",
           "icmp and ip[8] < 64", "udp and not (ip[6:2] & 0x3fff != 0)"]


def test_a_filtered_capture_keeps_exactly_what_tcpdump_keeps(tmp_path):
    whole = tmp_path / "all.pcapng"
    with emulated_pair(tmp_path, LOSSY) as pair:
        quiet(pair)
        exprs = [f.format(a=pair.a_ip) for f in FILTERS]
        capture_start(pair.control, "l1", whole)
        for i, e in enumerate(exprs):
            capture_start(pair.control, "l1", tmp_path / f"f{i}.pcapng", bpf_filter=e)
        # Two captures on one link: stopping needs the path.
        with pytest.raises(LinkDaemonError, match="give the path"):
            capture_stop(pair.control, "l1")
        with pytest.raises(LinkDaemonError, match="already writes to"):
            capture_start(pair.control, "l1", whole)
        pair.ping(count=5, interval=0.02)
        assert pair.in_a("ping", "-c", "3", "-i", "0.05", "-s", "1200", pair.b_ip).returncode in (0, 1)
        udp_flow(pair, rate="12M", seconds=1)
        stops = [capture_stop(pair.control, "l1", path=tmp_path / f"f{i}.pcapng") for i in range(len(exprs))]
        capture_stop(pair.control, "l1")
    assert len(tcpdump_lines(whole)) > 1000
    for i, e in enumerate(exprs):
        expected = tcpdump_lines(whole, e)
        got = tcpdump_lines(tmp_path / f"f{i}.pcapng")
        assert got == expected, (e, len(got), len(expected))
        c = stops[i]["capture"]["counters"]
        assert c["frames"] == len(expected) and c["frames"] + c["filtered"] == len(tcpdump_lines(whole)), (e, c)
    # Not vacuous: the filters kept something, and not everything.
    kept = [len(tcpdump_lines(tmp_path / f"f{i}.pcapng")) for i in range(len(exprs))]
    # (SYNs: the control connection's SYN and SYN-ACK, and any the loss made TCP resend.)
    assert kept[0] > 0 and kept[1] > 500 and kept[2] >= 2 and kept[3] > 500 and kept[4] == 0, kept


def test_a_ring_of_files_stays_within_files_times_size(tmp_path):
    base = tmp_path / "ring.pcapng"
    size = 64_000
    with emulated_pair(tmp_path, LOSSY) as pair:
        capture_start(pair.control, "l1", base, snaplen=2000, file_size=size, files=3)
        udp_flow(pair, rate="8M", seconds=1)  # ~1 MB of frames
        stop = capture_stop(pair.control, "l1")
    names = sorted(p.name for p in tmp_path.glob("ring*"))
    assert names == ["ring.1.pcapng", "ring.2.pcapng", "ring.pcapng"], names
    sizes = [(tmp_path / n).stat().st_size for n in names]
    assert all(s <= size for s in sizes) and sum(sizes) <= 3 * size, sizes
    c = stop["capture"]["counters"]
    assert c["files_rotated"] >= 10 and c["bytes"] > 10 * size, c
    # Each file is a whole capture, and the files listed oldest first end with the newest.
    files = [Path(f) for f in stop["capture"]["files"]]
    assert sorted(f.name for f in files) == names
    oldest, newest = ([float(r[0]) for r in tshark(f, "frame.time_epoch")] for f in (files[0], files[-1]))
    assert max(oldest) < min(newest), "files are listed oldest first"
    for f in files:
        assert "Name = l1 a->b" in subprocess.run(["capinfos", str(f)], capture_output=True, text=True).stdout


def test_without_drops_the_next_frame_counts_them(tmp_path):
    """drops: false leaves the dropped frames out; epb_dropcount on the next frame
    written on the direction says how many there were."""
    cap = tmp_path / "a.pcapng"
    with emulated_pair(tmp_path, LOSSY) as pair:
        start = capture_start(pair.control, "l1", cap, dir="a_to_b", drops=False)
        udp_flow(pair, rate="15M", seconds=1)
        stop = capture_stop(pair.control, "l1")
    rows = tshark(cap, "frame.interface_name", "frame.drop_count", "frame.comment")
    assert {r[0] for r in rows} == {"l1 a->b"}
    assert not any(r[2] for r in rows)
    assert len(rows) == diff(start, stop, "a_to_b", "delivered")
    drops = diff(start, stop, "a_to_b", "lost") + diff(start, stop, "a_to_b", "drops_overflow")
    counted = sum(int(r[1]) for r in rows if r[1])
    # Drops after the last frame written have no frame to ride on (a few at most).
    assert drops > 100 and drops - 5 <= counted <= drops, (counted, drops)
    assert stop["capture"]["counters"]["drops"] == 0



def test_drops_by_a_down_link_and_by_a_live_change_say_so(tmp_path):
    cap = tmp_path / "l1.pcapng"
    with emulated_pair(tmp_path, {"delay_ns": 1 * MS}) as pair:
        start = capture_start(pair.control, "l1", cap, dir="a_to_b")
        assert pair.request({"cmd": "down", "link": "l1"})["ok"]
        assert pair.ping(count=3, interval=0.05) == []
        assert pair.request({"cmd": "up", "link": "l1"})["ok"]
        lossy = {"delay_ns": 1 * MS, "loss": {"random": {"p": 1.0}}}
        assert pair.request({"cmd": "set", "link": "l1", "dir": "a_to_b", "spec": lossy})["ok"]
        assert pair.ping(count=2, interval=0.05) == []
        stop = capture_stop(pair.control, "l1")
    comments = Counter(r[0] for r in tshark(cap, "frame.comment") if r[0])
    assert comments[f"{DROPPED}: link down"] == diff(start, stop, "a_to_b", "drops_down") >= 3, comments
    assert comments[f"{DROPPED}: random loss (loss 100%)"] == diff(start, stop, "a_to_b", "lost") >= 2, comments


def test_duplicated_and_corrupted_frames_carry_a_comment(tmp_path):
    cap = tmp_path / "l1.pcapng"
    spec = {"a_to_b": {"delay_ns": 1 * MS, "duplicate": {"p": 0.5}, "corrupt": {"p": 0.3}},
            "b_to_a": {"delay_ns": 1 * MS}}
    with emulated_pair(tmp_path, spec) as pair:
        start = capture_start(pair.control, "l1", cap, dir="a_to_b")
        pair.ping(count=40, interval=0.01)
        stop = capture_stop(pair.control, "l1")
    comments = Counter(r[0] for r in tshark(cap, "frame.comment") if r[0])
    dup = "netrig-link duplicated this frame (duplicate 50%)"
    bad = "netrig-link corrupted this frame: one bit flipped (corrupt 30%)"
    assert comments[dup] == diff(start, stop, "a_to_b", "duplicated") > 5, comments
    assert comments[bad] == diff(start, stop, "a_to_b", "corrupted") > 3, comments
    assert set(comments) == {dup, bad}, comments
