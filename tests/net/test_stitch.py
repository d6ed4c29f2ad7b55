"""Two labs built by netrig, stitched by a VXLAN link (netrig.lab.stitch): the prototype
of a topology split over two machines (docs/scaling.md).

Each "machine" is an underlay namespace; a veth joins them (the wire between machines).
Lab A (h1 - r1 - h3) and lab B (h2 - r2 - h4) are `netrig up` from their own files under their own
prefixes. The tunnel's ends are made in the underlay namespaces and moved into r1 and r2
(or, for an emulated link, into lab C's switch, behind netrig-link). Traffic passes,
TCP sees the tunnel's MTU, and a wrong VNI or a missing route stops it; at the end netrig
tears the labs down and the test removes its own namespaces by name.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from netlab import assert_emulated_rtt, needs_root
from netrig import binary
from netrig.lab import frr, netns
from netrig.lab.network import Network, PingResult
from netrig.lab.stitch import (
    Side,
    StitchError,
    make_end,
    make_underlay,
    place,
    remove_underlay,
    stitch,
    tunnel_mtu,
    unstitch,
)
from netrig.theory.formulas import goodput

pytestmark = pytest.mark.net

N = os.getpid() % 100000
PREFIX_A, PREFIX_B, PREFIX_C = f"sta{N}", f"stb{N}", f"stc{N}"
PREFIX_OA, PREFIX_OB = f"sto{N}", f"stp{N}"
UNDER = f"stu{N}"


def netrig(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netrig", *args], capture_output=True, text=True,
                          timeout=timeout)


def up(tmp: Path, name: str, prefix: str, pool: str, nodes: dict, links: list, **more) -> Network:
    f = tmp / f"{name}.yaml"
    f.write_text(json.dumps({"name": name, "prefix": prefix, "addressing": {"pool": pool, **more.pop("addressing", {})},
                             "nodes": nodes, "links": links, **more}))
    p = netrig("up", str(f), "-q")
    assert p.returncode == 0, p.stderr
    return Network.attach(prefix)


def ping(net: Network, node: str, dst: str, *opts: str, count: int = 3) -> PingResult:
    r = net[node].run(["ping", "-n", "-c", str(count), "-i", "0.2", "-W", "1", *opts, dst],
                      timeout=count + 10)
    return PingResult.parse(r.stdout + r.stderr, count)


def perf(src: Network, a: str, dst: Network, b: str, seconds: int = 2) -> dict:
    """netrig-perf TCP from node a of lab src to node b of lab dst (different labs, so
    not `Network.perf`): its JSON."""
    exe = str(binary("netrig-perf"))
    server = dst[b].popen([exe, "-s", "-1", "-p", "5299"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        r = src[a].run([exe, "-c", dst.addr(b), "-p", "5299", "-J", "-t", str(seconds)],
                       timeout=seconds + 30)
        assert r.code == 0, r.stdout[-800:] + r.stderr[-800:]
        return json.loads(r.stdout)
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(timeout=5)


@pytest.fixture(scope="module")
def labs(tmp_path_factory) -> Iterator[tuple[Network, Network]]:
    """Labs A (h1 - r1 - h3, 10.41/16) and B (h2 - r2 - h4, 10.42/16), up until the
    module ends; then torn down by netrig, and nothing of either left. (Two hosts on a
    router, so that each host's routes all leave by it: the plan gives it a default
    route, which also takes it to the other lab.)"""
    needs_root()
    tmp = tmp_path_factory.mktemp("stitch")
    made = []
    try:
        made.append(PREFIX_A)
        a = up(tmp, "sta", PREFIX_A, "10.41.0.0/16", {"h1": "host", "r1": "router", "h3": "host"},
               [["h1", "r1"], ["r1", "h3"]])
        made.append(PREFIX_B)
        b = up(tmp, "stb", PREFIX_B, "10.42.0.0/16", {"r2": "router", "h2": "host", "h4": "host"},
               [["r2", "h2"], ["r2", "h4"]])
        yield a, b
    finally:
        for prefix in made:
            down = netrig("down", "--prefix", prefix)
            assert down.returncode == 0, down.stderr
    left = [ns for ns in os.listdir("/run/netns") if ns.startswith((PREFIX_A + "-", PREFIX_B + "-"))]
    assert not left, left


@pytest.fixture
def underlay() -> Iterator:
    u = make_underlay(UNDER, "192.168.217.0/30", mtu=1500)
    try:
        yield u
    finally:
        assert remove_underlay(u) == []
        assert not netns.exists(u.a.ns) and not netns.exists(u.b.ns)


def sides(a: Network, b: Network, u, routes: bool = True) -> tuple[Side, Side]:
    sa = Side(u.a, *place(a, "r1"), dev="vx0", addr="10.50.0.1/30",
              routes=("10.42.0.0/16 via 10.50.0.2",) if routes else ())
    sb = Side(u.b, *place(b, "r2"), dev="vx0", addr="10.50.0.2/30",
              routes=("10.41.0.0/16 via 10.50.0.1",) if routes else ())
    return sa, sb


def test_two_labs_stitched_by_vxlan_pass_traffic_and_tcp_sees_1450(labs, underlay):
    a, b = labs
    sa, sb = sides(a, b, underlay)
    s = stitch(4242, sa, sb)
    try:
        for side in (sa, sb):
            dev = json.loads(subprocess.run(["ip", "-n", side.ns, "-d", "-j", "link", "show", "dev", "vx0"],
                                            capture_output=True, text=True, check=True).stdout)[0]
            assert dev["mtu"] == tunnel_mtu(1500) == 1450, dev
            assert dev["linkinfo"]["info_kind"] == "vxlan" and dev["linkinfo"]["info_data"]["id"] == 4242
        p = ping(a, "h1", b.addr("h2"))
        assert p.loss == 0, p  # host to host, through r1, the tunnel and r2
        assert ping(a, "r1", "10.50.0.2", "-M", "do", "-s", "1422").loss == 0  # 1422 + 28 = 1450
        r = a["r1"].run(["ping", "-n", "-c", "1", "-W", "1", "-M", "do", "-s", "1423", "10.50.0.2"])
        assert r.code != 0 and "mtu=1450" in r.stdout + r.stderr, r
        doc = perf(a, "r1", b, "r2")
        assert doc["start"]["tcp_mss_default"] == 1398, doc["start"]  # 1450 - 20 - 20 - 12
        assert doc["end"]["sum_received"]["bits_per_second"] > 10e6, doc["end"]
        # h1's own MTU is 1500: r1 tells it the tunnel's (path MTU discovery), and TCP flows.
        doc = perf(a, "h1", b, "h2")
        assert doc["end"]["sum_received"]["bits_per_second"] > 10e6, doc["end"]
    finally:
        assert unstitch(s) == []
    assert "vx0" not in subprocess.run(["ip", "-n", sa.ns, "link"], capture_output=True, text=True).stdout


def test_a_wrong_vni_passes_nothing(labs, underlay):
    a, b = labs
    sa, sb = sides(a, b, underlay)
    made = []
    try:
        make_end(sa, 4242, underlay.b.addr)
        made.append(sa)
        make_end(sb, 4243, underlay.a.addr)  # the other machine's end of another link
        made.append(sb)
        assert ping(a, "r1", "10.50.0.2").received == 0
        assert ping(a, "h1", b.addr("h2")).received == 0
    finally:
        for side in made:
            subprocess.run(["ip", "-n", side.ns, "link", "del", side.dev], check=True)


def test_without_routes_only_the_tunnel_ends_reach_each_other(labs, underlay):
    a, b = labs
    s = stitch(4242, *sides(a, b, underlay, routes=False))
    try:
        assert ping(a, "r1", "10.50.0.2").loss == 0
        assert ping(a, "h1", b.addr("h2")).received == 0  # r1 knows no way to 10.42/16
    finally:
        assert unstitch(s) == []


def test_bad_sides_are_refused_before_anything_is_made(labs, underlay):
    a, b = labs
    sa, sb = sides(a, b, underlay)
    bad = Side(sa.vtep, sa.ns, None, "vx0", addr="10.50.0.1",
               routes=("10.42.0.0/16 10.50.0.2",))
    with pytest.raises(StitchError) as e:
        stitch(4242, bad, sb)
    assert str(e.value) == (f"tunnel end {sa.ns}/vx0: '10.50.0.1' is not an IPv4 address with its "
                            "prefix length; route '10.42.0.0/16 10.50.0.2' is not 'DEST via GATEWAY'")
    with pytest.raises(StitchError, match="VNI 16777216 is not 1 .. 16777215"):
        stitch(1 << 24, sa, sb)
    with pytest.raises(StitchError, match="has no node named 'r9'"):
        place(a, "r9")
    for ns in (sa.ns, sb.ns, underlay.a.ns, underlay.b.ns):
        assert "vx" not in subprocess.run(["ip", "-n", ns, "-br", "link"], capture_output=True,
                                          text=True).stdout


def test_an_emulated_link_carried_over_the_tunnel_keeps_theory(labs, tmp_path):
    """Lab C's r1 - xs link is shaped by netrig-link (20 Mbit/s, 10 ms each way); the
    tunnel joins switch xs's bridge to lab B's r2. The underlay's MTU is 1550, so the
    tunnel carries 1500-byte packets and the lab keeps its MTU: theory's RTT and
    goodput (20 x 1448/1514) hold through it."""
    _, b = labs
    c = up(tmp_path, "stc", PREFIX_C, "10.43.0.0/16", {"h1": "host", "r1": "router", "xs": "switch"},
           [["h1", "r1"], {"a": "r1", "b": "xs", "name": "cross", "rate": "20Mbit", "delay": "10ms",
                           "addr_a": "10.51.0.1/24"}])
    u = s = None
    try:
        u = make_underlay(UNDER + "e", "192.168.218.0/30", mtu=1550)
        sc = Side(u.a, *place(c, "xs"), dev="vx1")
        sb = Side(u.b, *place(b, "r2"), dev="vx1", addr="10.51.0.2/24",
                  routes=("10.43.0.0/16 via 10.51.0.1",))
        r = c["r1"].run(["ip", "route", "add", "10.42.0.0/16", "via", "10.51.0.2"])
        assert r.code == 0, r.stderr
        s = stitch(4343, sc, sb)
        before = c.link_stats()
        p = ping(c, "h1", b.addr("h2"), count=10)
        assert_emulated_rtt(p.rtts_ms[1:], 20.0, crossings=2)  # 2 x 10 ms, the link crossed twice
        doc = perf(c, "h1", b, "h2", seconds=4)
        assert doc["start"]["tcp_mss_default"] == 1448, doc["start"]
        got, theory = doc["end"]["sum_received"]["bits_per_second"], goodput(20e6, mtu=1500)
        assert abs(got / theory - 1) < 0.05, (got, theory)
        after = c.link_stats()
        def delivered(stats: dict, d: str) -> int:
            return next(x for x in stats["links"] if x["link"] == "cross")[d]["delivered"]
        sent = [delivered(after, d) - delivered(before, d) for d in ("a_to_b", "b_to_a")]
        assert min(sent) > 10, (before, after)  # both ways through the emulator
    finally:
        errors = unstitch(s) if s else []
        if u:
            errors += remove_underlay(u)
        down = netrig("down", "--prefix", PREFIX_C)
        assert down.returncode == 0 and errors == [], (down.stderr, errors)
    assert not [ns for ns in os.listdir("/run/netns") if ns.startswith((PREFIX_C + "-", UNDER))]


def test_ospf_across_the_tunnel_routes_one_lab_to_the_other(tmp_path, underlay):
    """Routing unchanged: two OSPF labs (their own loopback pools, so router IDs differ),
    stitched with no static route; once OSPF runs on the tunnel interface (as the one
    plan of a split topology would have configured it), each router learns the other
    lab's subnets over the tunnel and h1 reaches h2."""
    needs_root()
    if shutil.which(frr.VTYSH) is None or not os.access(frr.frr_dir() / "ospfd", os.X_OK):
        pytest.fail("FRR is not installed: bash scripts/install.sh installs it")
    made, s = [], None
    try:
        nets = {}
        for prefix, name, pool, lo, r, hs in ((PREFIX_OA, "sto", "10.44.0.0/16", "10.255.44.0/24", "r1", ("h1", "h3")),
                                              (PREFIX_OB, "stp", "10.45.0.0/16", "10.255.45.0/24", "r2", ("h2", "h4"))):
            made.append(prefix)
            nets[r] = up(tmp_path, name, prefix, pool, {r: {"kind": "router", "ospf": True}, **dict.fromkeys(hs, "host")},
                         [[hs[0], r], [r, hs[1]]], addressing={"loopbacks": lo}, routing={"ospf": {"hello": "1s"}})
        a, b = nets["r1"], nets["r2"]
        s = stitch(4444, Side(underlay.a, *place(a, "r1"), dev="vx0", addr="10.50.0.1/30"),
                   Side(underlay.b, *place(b, "r2"), dev="vx0", addr="10.50.0.2/30"))
        assert ping(a, "r1", "10.50.0.2").loss == 0
        assert ping(a, "h1", b.addr("h2"), count=1).received == 0  # no route yet
        for net, r in ((a, "r1"), (b, "r2")):
            p = net[r].run(["vtysh", *frr.vtysh_args(frr.router_dir(net.state.dir, r)), "-c", "conf t",
                            "-c", "interface vx0", "-c", "ip ospf area 0", "-c", "ip ospf network point-to-point",
                            "-c", "ip ospf hello-interval 1", "-c", "ip ospf dead-interval 4"])
            assert p.code == 0, p.stdout + p.stderr
        deadline = time.monotonic() + 20
        while ping(a, "h1", b.addr("h2"), count=1).received == 0:
            assert time.monotonic() < deadline, subprocess.run(["ip", "-n", a["r1"].ns, "route"],
                                                               capture_output=True, text=True).stdout
        routes = subprocess.run(["ip", "-n", a["r1"].ns, "route"], capture_output=True, text=True).stdout
        assert "10.45.0.0/24 nhid" in routes and "via 10.50.0.2 dev vx0 proto ospf" in routes, routes
        assert ping(a, "h1", b.addr("h2")).loss == 0
    finally:
        errors = unstitch(s) if s else []
        for prefix in made:
            down = netrig("down", "--prefix", prefix)
            assert down.returncode == 0, down.stderr
        assert errors == []


def test_a_bridge_whose_ports_carry_more_than_the_tunnel_is_refused(labs, tmp_path, underlay):
    """Lab C's switch carries 1500-byte packets; a tunnel over a 1500-byte underlay
    carries 1450: a frame between the two would vanish at the bridge (no ICMP, no
    error), so the tunnel end is refused, and nothing of it is left."""
    _, b = labs
    c = up(tmp_path, "stc", PREFIX_C, "10.43.0.0/16", {"h1": "host", "r1": "router", "xs": "switch"},
           [["h1", "r1"], {"a": "r1", "b": "xs", "rate": "20Mbit", "addr_a": "10.51.0.1/24"}])
    try:
        sc = Side(underlay.a, *place(c, "xs"), dev="vx1")
        sb = Side(underlay.b, *place(b, "r2"), dev="vx1", addr="10.51.0.2/24")
        with pytest.raises(StitchError) as e:
            stitch(4343, sc, sb)
        assert str(e.value) == (f"tunnel VNI 4343, end {sc.ns}/vx1: bridge xs's port xs-p0 carries packets "
                                "of 1500 bytes, the tunnel 1450 (its underlay's MTU less 50); larger frames "
                                "would vanish at the bridge without an error: raise the underlay's MTU to "
                                "1550 or more, or lower the lab's MTU on this segment to 1450")
        for ns in (sc.ns, underlay.a.ns, sb.ns):
            assert "vx" not in subprocess.run(["ip", "-n", ns, "-br", "link"], capture_output=True,
                                              text=True).stdout, ns
    finally:
        down = netrig("down", "--prefix", PREFIX_C)
        assert down.returncode == 0, down.stderr
