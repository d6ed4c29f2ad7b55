"""The kernel's path (netrig.lab.paths.kernel_path) in a real lab: a static diamond of
routers whose planned routes go one way round, read back from each namespace's routes,
equals the plan's path; flow_paths records both for run.json; a missing route is named.
(No FRR needed: the routers route statically, as netrig plans.)"""

from __future__ import annotations

import os
import subprocess

import pytest
from netlab import needs_root
from netrig.lab import paths
from netrig.lab.network import Network
from netrig.topo.model import Topology
from netrig.topo.plan import make_plan, path
from netrig.topo.routing import nodes_of

pytestmark = pytest.mark.net


def diamond(prefix: str) -> Topology:
    """h1 - r1, r1-r2-r4 (1 ms each) and r1-r3-r4 (20 ms each), r4 - s1 - h2."""
    t = Topology("diamond", prefix=prefix)
    for h in ("h1", "h2"):
        t.host(h)
    for r in ("r1", "r2", "r3", "r4"):
        t.router(r)
    t.switch("s1")
    t.link("h1", "r1")
    t.link("r1", "r2", delay="1ms")
    t.link("r2", "r4", delay="1ms")
    t.link("r1", "r3", delay="20ms")
    t.link("r3", "r4", delay="20ms")
    t.link("r4", "s1")
    t.link("s1", "h2")
    return t


@pytest.fixture(scope="module")
def lab():
    needs_root()
    with Network(diamond(f"kp{os.getpid() % 100000}")) as net:
        yield net


def test_kernel_path_is_the_planned_path_both_ways(lab):
    plan = make_plan(lab.topo)
    for src, dst in (("h1", "h2"), ("h2", "h1"), ("h1", "r4"), ("r3", "h2")):
        assert paths.kernel_path(lab, src, dst) == nodes_of(src, path(plan, src, dst)), (src, dst)
    assert paths.kernel_path(lab, "h1", "h2") == ["h1", "r1", "r2", "r4", "s1", "h2"]
    assert paths.kernel_path(lab, "h1", "h2", {"proto": "tcp", "sport": 40000, "dport": 5201}) == \
        ["h1", "r1", "r2", "r4", "s1", "h2"]


def test_flow_paths_and_a_route_changed_by_hand(lab):
    class Flow:
        kind, src, to, reverse = "tcp", "h1", "h2", False

    rec = paths.flow_paths(lab, lab.plan, {"bulk": Flow()})["bulk"]
    assert rec["predicted"] == rec["kernel"] == ["h1", "r1", "r2", "r4", "s1", "h2"] and not rec["ecmp"]
    # Send r1's traffic for h2 round by r3: the kernel's path shows it, theory's does not.
    h2net = str(lab.plan.segments[lab.plan.ifaces["h2"][0].segment].subnet)
    r3 = next(j for i in lab.plan.ifaces["r1"] for j in lab.plan.segments[i.segment].ifaces if j.node == "r3")
    dev = next(i.name for i in lab.plan.ifaces["r1"] if i.segment == r3.segment)
    ns = lab["r1"].ns
    subprocess.run(["ip", "-n", ns, "route", "replace", h2net, "via", str(r3.addr.ip), "dev", dev], check=True)
    rec = paths.flow_paths(lab, lab.plan, {"bulk": Flow()})["bulk"]
    assert rec["kernel"] == ["h1", "r1", "r3", "r4", "s1", "h2"] and rec["predicted"][2] == "r2"
    # No route at r1: named.
    subprocess.run(["ip", "-n", ns, "route", "del", h2net], check=True)
    with pytest.raises(paths.PathError, match="no route at r1 toward h2"):
        paths.kernel_path(lab, "h1", "h2")
    assert "kernel: no route at r1" in paths.flow_paths(lab, lab.plan, {"bulk": Flow()})["bulk"]["error"]
