"""netrig.lab.rtnl on real namespaces: the lines a lab is built of, sent in-process,
leave exactly what `ip -batch` leaves (links, bridges and their settings, masters,
addresses, routes); a line the kernel refuses is named with the kernel's words; a line
rtnl does not speak goes to `ip`; the caller's thread stays in its namespace."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from netlab import needs_root
from netrig.lab import netns

pytestmark = pytest.mark.net

LINES = ["link set lo up", "link add s1 type bridge stp_state 0 forward_delay 0", "link set p0 master s1",
         "link set s1 up", "link set p0 up", "link set v0 up", "addr add 10.71.0.1/24 dev v0",
         "addr add 10.71.9.1/32 dev lo", "route add 10.72.0.0/16 via 10.71.0.9 dev v0",
         "route add default via 10.71.0.254 dev v0"]


def ipj(ns: str, *args: str) -> list[dict]:
    return json.loads(subprocess.run(["ip", "-n", ns, "-j", "-d", *args], capture_output=True, text=True,
                                     check=True).stdout)


def state(ns: str) -> dict:
    links = {l["ifname"]: (l.get("master"), "UP" in l["flags"], l.get("linkinfo", {}).get("info_kind"),
                           {k: v for k, v in l.get("linkinfo", {}).get("info_data", {}).items()
                            if k in ("stp_state", "forward_delay")})
             for l in ipj(ns, "link", "show")}
    addrs = sorted((a["ifname"], i["local"], i["prefixlen"]) for a in ipj(ns, "addr", "show")
                   for i in a["addr_info"] if i["family"] == "inet")
    routes = sorted((r["dst"], r.get("gateway"), r["dev"], r.get("protocol"), r.get("scope")) for r in ipj(ns, "route", "show"))
    ports = {l["ifname"]: l.get("linkinfo", {}).get("info_slave_data", {}).get("state")
             for l in ipj(ns, "link", "show") if l.get("linkinfo", {}).get("info_slave_kind") == "bridge"}
    return {"links": links, "addrs": addrs, "routes": routes, "ports": ports}


@pytest.fixture
def two():
    needs_root()
    names = [f"rtnl{os.getpid()}{c}" for c in "ab"]
    netns.delete(names)
    netns.add(names)
    try:
        for ns in names:
            netns.ip_batch(["link add v0 type veth peer name v1", "link add p0 type veth peer name p1"], ns)
        yield names
    finally:
        netns.delete(names)


def test_in_process_leaves_what_ip_leaves(two):
    mine, theirs = two
    home = os.readlink("/proc/thread-self/ns/net")
    netns.configure({mine: ([], LINES)})  # rtnl, from a worker thread that joins the namespace
    subprocess.run(["ip", "-n", theirs, "-batch", "-"], input="\n".join(LINES) + "\n", text=True, check=True)
    got, want = state(mine), state(theirs)
    assert got == want
    assert got["links"]["s1"][2:] == ("bridge", {"stp_state": 0, "forward_delay": 0})
    assert got["links"]["p0"][0] == "s1" and set(got["ports"]) == {"p0"}
    assert ("10.72.0.0/16", "10.71.0.9", "v0", "boot", "global") in got["routes"]
    assert os.readlink("/proc/thread-self/ns/net") == home


def test_refusals_are_named(two):
    ns = two[0]
    with pytest.raises(netns.NetnsError) as e:
        netns.ip_batch(["addr add 10.71.0.1/24 dev v0", "route add 10.73.0.0/16 via 10.99.0.1 dev v0",
                        "link set nosuch up", "addr add 10.71.0.2/24 dev nosuch", "link set v0 up"], ns)
    text = str(e.value)
    assert f"ip in namespace {ns}: " in text
    assert "route add 10.73.0.0/16 via 10.99.0.1 dev v0: " in text  # the kernel's words follow
    assert "link set nosuch up: " in text
    assert "addr add 10.71.0.2/24 dev nosuch: no device nosuch" in text
    # As `ip -force`, the batch went on past each refusal.
    assert [l for l in ipj(ns, "link", "show") if l["ifname"] == "v0"][0]["flags"].count("UP") == 1


def test_a_line_rtnl_does_not_speak_goes_to_ip(two):
    ns = two[0]
    netns.configure({ns: ([], ["link set v0 mtu 1400", "link set v0 up"])})
    [v0] = [l for l in ipj(ns, "link", "show") if l["ifname"] == "v0"]
    assert v0["mtu"] == 1400 and "UP" in v0["flags"]


def test_kernel_ready_returns_once_the_kernel_has_freed_a_namespace():
    """Bridges take the kernel a grace period each to free, after the namespace is gone:
    once kernel_ready returns, making a namespace must not wait for that any more."""
    needs_root()
    ns = f"rtnlk{os.getpid()}"
    netns.add([ns])
    try:
        netns.ip_batch([f"link add b{i} type bridge" for i in range(80)] + [f"link set b{i} up" for i in range(80)], ns)
    finally:
        netns.delete([ns])
    waited = netns.kernel_ready(60)
    assert waited is not None
    t0 = time.monotonic()
    subprocess.run(["unshare", "-n", "true"], check=True, timeout=60)
    assert time.monotonic() - t0 < 0.6  # 80 bridges still being freed would take ~1.3 s


def test_offloads_off_in_one_request_clears_what_the_six_legacy_ones_do(two):
    """One ETHTOOL_SFEATURES per device (bits found by name) leaves the device as the
    six legacy requests (rx/tx checksum, sg, tso, gso, gro) did, plus TSO's newest
    variant (AccECN) which the legacy TSO request misses on 6.18."""
    import socket

    ns = two[0]

    def legacy() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            netns._set_features(s, "v0", None)

    netns.run_in(ns, legacy)
    netns.offloads_off(ns, ["p0"])

    def k(dev: str) -> dict[str, str]:
        out = subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-k", dev], capture_output=True,
                             text=True, check=True).stdout.splitlines()[1:]
        return dict(line.strip().split(": ", 1) for line in out if ": " in line)

    old, new, untouched = k("v0"), k("p0"), k("v1")
    differ = {f for f in old if old[f] != new[f]}
    assert differ <= {"tcp-segmentation-offload", "tx-tcp-accecn-segmentation"}
    assert new.get("tx-tcp-accecn-segmentation", "off").startswith("off")
    for f in ("rx-checksumming", "tx-checksumming", "scatter-gather", "tcp-segmentation-offload",
              "generic-segmentation-offload", "generic-receive-offload"):
        assert new[f].startswith("off"), f
        assert f == "generic-receive-offload" or untouched[f].startswith("on"), f  # (veth: GRO off already)


def test_sync_links_leaves_every_end_up_and_names_a_missing_device(two):
    """Ends whose ifindexes are equal (a host's eth0 and switch port 2) are not urgent to
    the kernel's linkwatch; after sync_links their carrier is taken in (operstate UP),
    whatever linkwatch's backlog; a device that is not there is named."""
    a, b = two
    for i in (7, 8):
        subprocess.run(["ip", "link", "add", "name", f"e{i}", "netns", a, "index", str(i), "type", "veth",
                        "peer", "name", f"f{i}", "netns", b, "index", str(i)], check=True)
    netns.ip_batch(["link set e7 up", "link set e8 up"], a)
    netns.ip_batch(["link set f7 up", "link set f8 up"], b)
    netns.sync_links({a: ["e7", "e8"], b: ["f7", "f8"]})
    assert {l["ifname"]: l["operstate"] for l in ipj(a, "link", "show") if l["ifname"][0] == "e"} == \
        {"e7": "UP", "e8": "UP"}
    assert {l["ifname"]: l["operstate"] for l in ipj(b, "link", "show") if l["ifname"][0] == "f"} == \
        {"f7": "UP", "f8": "UP"}
    with pytest.raises(netns.NetnsError, match=f"{a}/nosuch0: ethtool get link"):
        netns.sync_links({a: ["e7", "nosuch0"]})



def test_the_wait_for_bridge_ports_names_a_port_that_never_forwards(two):
    from netrig.lab import build
    from netrig.lab.state import LabError

    mine, _ = two
    netns.configure({mine: ([], LINES)})  # p0's peer p1 stays down: p0 never forwards
    with pytest.raises(LabError, match=r"1 not yet, e.g. p0: disabled, its link lowerlayerdown"):
        build._wait_bridges([mine], timeout=0.2)
    netns.ip_batch(["link set p1 up"], mine)
    netns.sync_links({mine: ["p0", "p1"]})
    build._wait_bridges([mine], timeout=10)
    assert build._bridge_ports(mine) == [("p0", "UP", "forwarding")]
