"""netrig.lab.routewatch on a real namespace: 20,000 routes added by `ip -batch` while
the watcher is not read (its socket buffer made small, so the kernel drops events and
the watcher must dump the table again), then 5,000 deleted and 2,000 made multipath:
the watcher's table is then exactly `ip route`'s, and it counts the prefixes it was told
to expect."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import time

import pytest
from netlab import needs_root
from netrig.lab import netns, routewatch

pytestmark = pytest.mark.net

N = 20_000


def batch(ns: str, lines: list[str]) -> None:
    p = subprocess.run(["ip", "-n", ns, "-batch", "-"], input="\n".join(lines) + "\n", text=True,
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr[-500:]


def dump(ns: str) -> dict[str, set]:
    """The main table's unicast routes: destination -> {(gateway, ifindex), ...}."""
    index = {l["ifname"]: l["ifindex"] for l in json.loads(subprocess.run(
        ["ip", "-n", ns, "-j", "link", "show"], capture_output=True, text=True, check=True).stdout)}
    out = {}
    for r in json.loads(subprocess.run(["ip", "-n", ns, "-j", "route", "show", "table", "main"],
                                       capture_output=True, text=True, check=True, timeout=60).stdout):
        if r.get("type", "unicast") != "unicast":
            continue
        dst = str(ipaddress.IPv4Network("0.0.0.0/0" if r["dst"] == "default" else r["dst"]))
        out[dst] = {(h.get("gateway", ""), index[h["dev"]]) for h in r.get("nexthops") or [r]}
    return out


def watched(table: routewatch.Table) -> dict[str, set]:
    return {d: {(str(ipaddress.IPv4Address(gw)) if gw else "", oif) for gw, oif in hops}
            for d, ((_, hops),) in table.routes.items()}


def test_the_watched_table_is_the_kernels_after_a_storm():
    needs_root()
    ns = f"rwt{os.getpid()}"
    netns.delete([ns])
    netns.add([ns])
    try:
        batch(ns, ["link add d0 type veth peer name e0", "link add d1 type veth peer name e1",
                   *(f"link set {d} up" for d in ("d0", "e0", "d1", "e1")),
                   "addr add 10.10.0.1/24 dev d0", "addr add 10.11.0.1/24 dev d1"])
        dsts = [str(ipaddress.IPv4Address("10.100.0.0") + i) + "/32" for i in range(N)]
        want = set(dsts) | {"10.99.0.0/24"}  # one that never comes
        with routewatch.Watcher({"r": ns}, {"r": want}, rcvbuf=1 << 16) as w:
            table = w.tables["r"]
            batch(ns, [f"route add {d} via 10.10.0.2 dev d0" for d in dsts])  # not read meanwhile
            batch(ns, [f"route del {d}" for d in dsts[:5000]]
                  + [f"route replace {d} nexthop via 10.10.0.2 dev d0 nexthop via 10.11.0.2 dev d1"
                     for d in dsts[5000:7000]])
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and (w.poll(0.5) or table.dump_seq is not None):
                pass
            got, kernel = watched(table), dump(ns)
            wrong = {d for d in got.keys() | kernel.keys() if got.get(d) != kernel.get(d)}
            assert not wrong, (f"{len(wrong)} destinations differ, e.g. {sorted(wrong)[:3]}; dumps {table.dumps}, "
                               f"one under way: {table.dump_seq is not None}, last problem: {table.problem!r}")
            assert table.have == N - 5000 and not table.complete
            assert set(table.missing()) == {*dsts[:5000], "10.99.0.0/24"}
            assert table.dumps >= 2, "a 64 KiB buffer took 20,000 route events without dropping any"
            assert len(table.routes[dsts[5000]][0][1]) == 2  # multipath
    finally:
        netns.delete([ns])


def test_a_namespace_that_is_not_there_is_named():
    needs_root()
    with pytest.raises(routewatch.WatchError, match=r"r9: watching its routes \(namespace rwt-none-\d+\): "
                                                     r"No such file or directory"):
        routewatch.Watcher({"r9": f"rwt-none-{os.getpid()}"}, {"r9": set()})
