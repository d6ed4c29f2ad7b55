"""Routed labs for real, with FRR: an OSPF ring of four routers (two links through
netrig-link, one through a bridge) converges, every host reaches every host, equal
costs give a multipath route; a silent link failure and a carrier loss reroute within
the dead interval; two ASes over eBGP (iBGP over OSPF inside one) converge; `netrig up`
waits and says so, or fails and leaves the lab up; and nothing of FRR is left after
`down` (its daemons kept their /var/tmp/frr on the lab's tmpfs, none on the host's, and
nothing of the lab stays mounted), nor after `clean` of a lab whose netrig was killed
with SIGKILL."""

from __future__ import annotations

import json
import os
import pwd
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from netlab import needs_root
from netrig import procs
from netrig.lab import frr
from netrig.lab.network import Network
from netrig.lab.state import LABS_DIR
from netrig.link import userspace
from netrig.topo.load import loads

pytestmark = pytest.mark.net
DEAD_S = 4

# h1 - r1 ... r3 - h2; r1-r2 and r2-r3 through netrig-link (delay), r3-s1-r4 a bridge.
# Every link costs 1: r1 reaches r3's side both ways round at cost 2 (ECMP).
RING = f"""
name: ring
routing: {{ospf: {{hello: 1s, dead: {DEAD_S}s}}}}
nodes:
  h1: host
  h2: host
  s1: switch
  r1: {{kind: router, ospf: true}}
  r2: {{kind: router, ospf: true}}
  r3: {{kind: router, ospf: true}}
  r4: {{kind: router, ospf: true}}
links:
  - [h1, r1]
  - {{a: r1, b: r2, delay: 1ms}}
  - {{a: r2, b: r3, delay: 1ms}}
  - [r3, s1]
  - [s1, r4]
  - [r4, r1]
  - [h2, r3]
"""

TWO_AS = """
name: wan
routing:
  ospf: {hello: 1s, dead: 4s}
  bgp: {keepalive: 1s, hold: 3s, connect_retry: 1s, advertisement_interval: 0s}
nodes:
  h1: host
  h2: host
  a1: {kind: router, bgp: 65001, ospf: true}
  a2: {kind: router, bgp: 65001, ospf: true}
  b1: {kind: router, bgp: 65002}
links:
  - [h1, a1]
  - {a: a1, b: a2, delay: 1ms}
  - [a2, b1]
  - [b1, h2]
"""


def netrig(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netrig", *args], capture_output=True, text=True,
                          timeout=timeout)


def named(lab_dir: Path) -> list[str]:
    """Processes whose command line names a path under the lab's directory."""
    top = str(lab_dir)
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace").split("\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if state != "Z" and any(a.removeprefix("file:").startswith(top + "/") for a in args):
            out.append(f"{entry}: {' '.join(args)}")
    return out


def namespaces(prefix: str) -> list[str]:
    return [ns for ns in os.listdir("/run/netns") if ns.startswith(prefix + "-")] \
        if os.path.isdir("/run/netns") else []


def route(net: Network, node: str, dest: str) -> dict:
    r = net[node].run(["ip", "-j", "route", "show", dest])
    got = json.loads(r.stdout or "[]")
    return got[0] if got else {}


def devs(r: dict) -> set[str]:
    return {h["dev"] for h in r.get("nexthops", [])} or ({r["dev"]} if "dev" in r else set())


def wait_for(what, timeout: float, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        got = what()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(every)


@pytest.fixture(scope="module")
def ring():
    needs_root()
    if not (frr.frr_dir() / "zebra").exists():
        pytest.fail("FRR is not installed: bash scripts/install.sh installs it")
    with Network(loads(RING, "<ring>"), prefix=f"rg{os.getpid() % 100000}") as net:
        net.took = net.converge(60)
        yield net


def test_ring_converges_and_every_host_reaches_every_host(ring):
    assert ring.took < 3 * DEAD_S + 30
    results = ring.pingall()
    assert [p for p, r in results.items() if r.received == 0] == []
    # Every router routes every subnet and loopback of the ring.
    for r, want in frr.expected_routes(ring.plan).items():
        assert set(want) <= ring.kernel_routes(r), r


def test_ospf_hellos_cross_netrig_link_and_the_bridge(ring):
    status = ring.routing_status()
    r2 = {(n["iface"], n["state"].split("/")[0]) for n in status["r2"]["ospf"]}
    assert r2 == {("eth0", "Full"), ("eth1", "Full")}  # both links emulated by netrig-link
    r3 = {n["iface"]: n["state"] for n in status["r3"]["ospf"]}
    assert r3["eth1"].startswith("Full/")  # through the bridge (broadcast: DR or Backup)
    assert all(d["running"] for s in status.values() for d in s["daemons"].values())
    assert all(s["routes"] >= 9 for s in status.values())


def test_equal_costs_give_a_multipath_route(ring):
    h2_net = str(ring.plan.ifaces["h2"][0].addr.network)
    r = route(ring, "r1", h2_net)
    assert len(r.get("nexthops", [])) == 2, r
    assert devs(r) == {"eth1", "eth2"}  # via r2 and via r4


def test_vtysh_through_netrig_exec(ring):
    p = netrig("exec", "--prefix", ring.prefix, "r1", "--", "vtysh", "-c", "show ip ospf neighbor json")
    assert p.returncode == 0, p.stderr
    assert set(json.loads(p.stdout)["neighbors"]) == {"10.255.0.2", "10.255.0.4"}
    p = netrig("status", "--prefix", ring.prefix)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "routing (FRR):" in p.stdout and "Full/" in p.stdout and "kernel routes" in p.stdout


def test_a_silent_link_failure_reroutes_within_the_dead_interval(ring):
    st = ring.state
    r2_lo = str(ring.plan.loopbacks["r2"].ip)
    assert devs(route(ring, "r1", r2_lo)) == {"eth1"}  # straight to r2
    userspace.request(st.control, {"cmd": "down", "link": "r1-r2"})
    try:
        t0 = time.monotonic()
        moved = wait_for(lambda: devs(route(ring, "r1", r2_lo)) == {"eth2"}, DEAD_S + 15)
        took = time.monotonic() - t0
        assert moved, f"r1 still routes r2's loopback by {route(ring, 'r1', r2_lo)} after {took:.1f} s"
        # the carrier stayed up: only the dead interval could tell (never tight: > 1 hello)
        assert took > 1.0, took
        assert ring.ping("h1", "h2", count=1, timeout=2).received == 1
    finally:
        userspace.request(st.control, {"cmd": "up", "link": "r1-r2"})
    ring.converge(60)
    assert devs(route(ring, "r1", r2_lo)) == {"eth1"}


def test_carrier_loss_reroutes_and_comes_back(ring):
    r2_lo = str(ring.plan.loopbacks["r2"].ip)
    assert devs(route(ring, "r3", r2_lo)) == {"eth0"}
    ring.link_carrier("r2-r3", False)
    try:
        moved = wait_for(lambda: devs(route(ring, "r3", r2_lo)) == {"eth1"}, DEAD_S + 15)
        assert moved, route(ring, "r3", r2_lo)
        assert ring.ping("h2", "h1", count=1, timeout=2).received == 1
    finally:
        ring.link_carrier("r2-r3", True)
    ring.converge(60)
    assert devs(route(ring, "r3", r2_lo)) == {"eth0"}


def test_a_host_link_carrier_brings_its_static_route_back(ring):
    ring.link_carrier("h1-r1", False)
    assert ring.kernel_routes("h1") == set()  # the kernel drops routes through a down link
    ring.link_carrier("h1-r1", True)
    ring.converge(60)
    assert ring.ping("h1", "h2", count=1, timeout=2).received == 1


def test_stopping_a_routers_daemons_withdraws_its_routes(ring):
    r4_lo = str(ring.plan.loopbacks["r4"].ip)
    assert devs(route(ring, "r4", str(ring.plan.loopbacks["r2"].ip)))
    ring.stop_routing("r4")
    try:
        assert ring.state.frr.get("r4") is None
        # zebra took its OSPF routes with it: r4 keeps its connected subnets only
        assert all(n.prefixlen == 24 for n in ring.kernel_routes("r4"))
        gone = wait_for(lambda: not route(ring, "r1", r4_lo), DEAD_S + 15)
        assert gone, route(ring, "r1", r4_lo)
    finally:
        ring.start_routing("r4")
    ring.converge(60)
    assert route(ring, "r1", r4_lo)


def test_two_ases_converge_over_ebgp_and_ibgp():
    needs_root()
    with Network(loads(TWO_AS, "<wan>"), prefix=f"as{os.getpid() % 100000}") as net:
        net.converge(60)
        results = net.pingall()
        assert [p for p, r in results.items() if r.received == 0] == []
        status = net.routing_status()
        b1 = status["b1"]["bgp"]
        assert [(p["as"], p["state"]) for p in b1] == [(65001, "Established")]
        assert b1[0]["received"] >= 4  # AS 65001's subnets and loopbacks
        a1 = {p["address"]: p for p in status["a1"]["bgp"]}
        assert a1[str(net.plan.loopbacks["a2"].ip)]["state"] == "Established"  # iBGP, loopbacks
        b1_lo = str(net.plan.loopbacks["b1"].ip)
        assert route(net, "a1", b1_lo).get("protocol") == "bgp"


def test_down_leaves_nothing_of_frr():
    needs_root()
    prefix = f"dn{os.getpid() % 100000}"
    net = Network(loads(RING, "<ring>"), prefix=prefix)
    net.start()
    lab = net.state.dir
    routers = frr.daemons_dir(lab)
    daemons = [(pid, started) for ds in net.state.frr.values() for pid, started in ds.values()]
    try:
        assert len(named(routers)) == 8 == len(daemons)  # zebra and ospfd on four routers
        # Each sees /var/tmp/frr as the lab's tmpfs (FRR's, 0700), keeps its directory
        # there (zebra.PID, ospfd.PID: PIDs before they daemonized), none on the host's.
        # (By device: the host's may hold other labs' leftovers of the same names.)
        host = os.stat("/var/tmp/frr").st_dev
        seen: set[str] = set()
        for pid, _ in daemons:
            tmp = [x.split(" - ")[1].split() for x in Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
                   if x.split()[4] == "/var/tmp/frr"]
            assert tmp and tmp[-1][0] == "tmpfs" and "mode=700" in tmp[-1][2], tmp
            root = Path(f"/proc/{pid}/root/var/tmp/frr")
            seen |= set(os.listdir(root))
            assert all((root / x).stat().st_dev != host for x in os.listdir(root))
        assert sorted(x.split(".")[0] for x in seen) == ["ospfd"] * 4 + ["zebra"] * 4, seen
        assert mounted(lab) == [f"{lab}/frrns/mnt", f"{lab}/frrns"]
    finally:
        assert net.stop() == []
    assert named(routers) == [] and not routers.exists() and namespaces(prefix) == []
    assert mounted(lab) == []  # the namespace unbound: its tmpfs went with its last daemon
    # Not even <defunct> in ps: down waits until PID 1 has collected the daemons (orphans).
    assert [pid for pid, started in daemons if procs.start_time(pid) == started] == []
    assert not lab.exists() and not any(Path("/etc/netns").glob(prefix + "-*"))


def mounted(lab_dir: Path) -> list[str]:
    """What is mounted under the lab's directory (its FRR mount namespace), deepest first."""
    from netrig.lab import frrmount

    return frrmount.mounts_under(Path("/proc/self/mountinfo").read_text(), str(lab_dir))


def still_running(pid: int, started: int) -> bool:
    """Has the process (PID and start time) not exited yet? A zombie whose threads have
    all ended has (its parent, PID 1 for a daemon, has yet to collect it)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
        threads = len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return False
    return int(fields[19]) == started and not (fields[0] == "Z" and threads <= 1)


def sleeping_60(pid: int) -> bool:
    """Is `pid` a `sleep 60` that has not exited?"""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x0060\x00" and \
            Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def lab_processes(prefix: str) -> dict[int, int]:
    """PID -> start time of every process in the lab's namespaces."""
    inodes = {os.stat(f"/run/netns/{ns}").st_ino for ns in namespaces(prefix)}
    out = {}
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.stat(f"/proc/{entry}/ns/net").st_ino in inodes:
                out[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[-1].split()[19])
        except OSError:
            continue
    return out


def test_down_returns_once_every_process_of_the_lab_has_exited_and_up_again_works(tmp_path):
    needs_root()
    prefix = f"dg{os.getpid() % 100000}"
    f = tmp_path / "wan.yaml"
    f.write_text(TWO_AS)
    spawned = tmp_path / "spawned"
    # A process of the lab that ignores SIGTERM and, told to stop, starts another.
    script = f"trap 'sleep 60 & echo $! > {spawned}' TERM; echo ready; while :; do sleep 0.1; done"
    shell = None
    try:
        p = netrig("up", str(f), "--prefix", prefix, "-q")
        assert p.returncode == 0 and "routing converged" in p.stdout, p.stdout + p.stderr
        shell = subprocess.Popen([sys.executable, "-m", "netrig", "exec", "--prefix", prefix, "h1", "sh", "-c",
                                  script], stdout=subprocess.PIPE, text=True)
        assert shell.stdout.readline().strip() == "ready"
        st = json.loads((LABS_DIR / prefix / "state.json").read_text())
        daemons = {p: s for ds in st["frr"].values() for p, s in ds.values()}
        before = {**lab_processes(prefix), **daemons}
        assert len(daemons) == 8 and shell.pid in before  # zebra, ospfd, bgpd on a1 and a2; zebra, bgpd on b1
        down = netrig("down", "--prefix", prefix)
        assert down.returncode == 0, down.stderr
        child = int(spawned.read_text())
        left = [pid for pid, started in before.items() if still_running(pid, started)]
        assert left == [] and not sleeping_60(child), (left, child)
        # Nor listed by ps: the daemons (orphans) collected, not left <defunct> (the shell
        # is this test's child: it collects that one itself).
        listed = [pid for pid, started in before.items() if pid != shell.pid and procs.start_time(pid) == started]
        assert listed == [], listed
        assert f"killed sh in {prefix}-h1 (pid {shell.pid}): it had not exited 2 s after SIGTERM" in down.stderr
        assert f"killed sleep in {prefix}-h1 (pid {child}): it started after the lab was told to stop" \
            in down.stderr, down.stderr
        again = netrig("up", str(f), "--prefix", prefix, "-q")  # at once, the same prefix
        assert again.returncode == 0 and "routing converged" in again.stdout, again.stdout + again.stderr
        assert netrig("pingall", "--prefix", prefix).returncode == 0
    finally:
        netrig("down", "--prefix", prefix)
        if shell is not None:
            shell.kill()
            shell.wait(timeout=10)


def test_clean_after_sigkill_of_netrig_up_leaves_nothing(tmp_path):
    needs_root()
    prefix = f"kl{os.getpid() % 100000}"
    f = tmp_path / "ring.yaml"
    f.write_text(RING)
    lab = LABS_DIR / prefix
    routers = frr.daemons_dir(lab)
    up = subprocess.Popen([sys.executable, "-m", "netrig", "up", str(f), "--prefix", prefix],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    extra = f"{prefix}-x"
    try:
        assert wait_for(lambda: (routers / "r4" / "zebra.pid").exists(), 30, 0.005)
        up.send_signal(signal.SIGKILL)
        up.wait(timeout=10)
        # And a daemon no state names, outside the lab's namespaces (as if netrig died
        # between starting it and recording it): only its command line says whose it is.
        d = routers / "stray"
        d.mkdir()
        os.chown(d, 0, pwd.getpwnam("frr").pw_gid)
        d.chmod(0o770)  # as netrig makes a router's: frr writes its pid file and sockets
        for name in ("zebra.conf", "vtysh.conf"):
            (d / name).write_text("hostname stray\n")
        subprocess.run(["ip", "netns", "add", extra], check=True)
        subprocess.run(["ip", "netns", "exec", extra, str(frr.frr_dir() / "zebra"), "-d", "-P", "0",
                        "-f", str(d / "zebra.conf"), "-i", str(d / "zebra.pid"), "-z", str(d / "zserv.api"),
                        "--vty_socket", str(d), "--log", f"file:{d}/zebra.log"],
                       check=True, capture_output=True, timeout=30)
        assert len(named(routers)) >= 2
        p = netrig("clean")
        assert p.returncode == 0 and f"removed lab '{prefix}'" in p.stdout, p.stdout + p.stderr
        assert named(routers) == []  # clean returned once they had all exited
        assert not lab.exists() and not routers.exists() and namespaces(prefix) == [extra]
        assert mounted(lab) == []  # its FRR mount namespace too
    finally:
        if up.poll() is None:
            up.kill()
        subprocess.run(["ip", "netns", "del", extra], capture_output=True)
        if lab.exists():
            netrig("down", "--prefix", prefix)


def test_netrig_up_waits_for_routing_and_says_how_long(tmp_path):
    needs_root()
    prefix = f"up{os.getpid() % 100000}"
    f = tmp_path / "ring.yaml"
    f.write_text(RING)
    try:
        p = netrig("up", str(f), "--prefix", prefix, "--wait", "60", "-q")
        assert p.returncode == 0, p.stdout + p.stderr
        assert "routing converged in" in p.stdout
        assert netrig("pingall", "--prefix", prefix).returncode == 0
    finally:
        netrig("down", "--prefix", prefix)


def test_netrig_up_that_cannot_converge_fails_and_leaves_the_lab_up(tmp_path):
    needs_root()
    prefix = f"nc{os.getpid() % 100000}"
    f = tmp_path / "ring.yaml"
    # r2 hears nobody: r1-r2 and r2-r3 never form adjacencies
    f.write_text(RING.replace("r2: {kind: router, ospf: true}",
                              'r2: {kind: router, ospf: true, frr: {ospfd: "router ospf\\n passive-interface default"}}'))
    try:
        p = netrig("up", str(f), "--prefix", prefix, "--wait", "3", "-q")
        assert p.returncode == 1, p.stdout + p.stderr
        assert f"lab '{prefix}' is up" in p.stdout and "routing converged" not in p.stdout
        assert "routing did not converge in 3 s" in p.stderr
        assert "r2 has no route to" in p.stderr or "r2's protocols are not all up" in p.stderr
        assert "'netrig status'" in p.stderr and "'netrig down'" in p.stderr
        assert netrig("status", "--prefix", prefix).returncode == 0  # up, daemons running
        p = netrig("up", str(f), "--prefix", f"{prefix}w", "--no-wait", "-q")
        assert p.returncode == 0 and "routing converged" not in p.stdout, p.stdout + p.stderr
    finally:
        netrig("down", "--prefix", prefix)
        netrig("down", "--prefix", f"{prefix}w")
