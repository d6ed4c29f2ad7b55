"""How a routed lab starts FRR, without running it: the lab's state saved in batches
as routers' daemons start (what a crash between saves leaves, `frr.strays` finds: see
tests/net/test_routing.py), each daemon started in its router's network namespace and
the lab's FRR mount namespace (no `ip netns exec`, no mount namespace per daemon), that
namespace made once before any daemon, every zebra before any other daemon, and vtysh
run in no namespace of the lab's."""

from __future__ import annotations

import itertools
import os
import subprocess
import time

import pytest
from netrig.lab import build
from netrig.lab.state import LabState


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(build.time, "monotonic", c)
    return c


def _start(monkeypatch, clock: Clock, routers: int, step_s: float, **kw) -> list[int]:
    """Starts `routers` fake routers, `step_s` apart; how many each save named."""
    st = LabState("sv", "<python>")
    saves: list[int] = []
    monkeypatch.setattr(LabState, "save", lambda self: saves.append(len(self.frr)))

    def start(plan, lab_dir, node_ns, record) -> None:
        for k in range(routers):
            clock.now += step_s
            record(f"r{k}", {"zebra": [1000 + k, 7], "ospfd": [2000 + k, 7]})

    monkeypatch.setattr(build.frr, "start", start)
    build._start_frr(None, st, {}, **kw)
    assert len(st.frr) == routers
    return saves


def test_the_state_is_saved_every_50_routers_and_at_the_end(monkeypatch, clock):
    assert _start(monkeypatch, clock, 120, 0.001) == [50, 100, 120]


def test_the_state_is_saved_every_half_second_while_routers_start_slowly(monkeypatch, clock):
    assert _start(monkeypatch, clock, 10, 0.2) == [3, 6, 9, 10]


def test_a_small_lab_is_saved_once(monkeypatch, clock):
    assert _start(monkeypatch, clock, 4, 0.01) == [4]


def test_a_failed_start_saves_nothing_more_and_keeps_what_it_recorded(monkeypatch, clock):
    """build's failure path tears down from the state in memory (every router recorded),
    not from the file."""
    st = LabState("sv", "<python>")
    saves: list[int] = []
    monkeypatch.setattr(LabState, "save", lambda self: saves.append(len(self.frr)))
    count = itertools.count()

    def start(plan, lab_dir, node_ns, record) -> None:
        for k in range(3):
            record(f"r{k}", {"zebra": [next(count), 7]})
        raise build.LabError("router r3: zebra did not start")

    monkeypatch.setattr(build.frr, "start", start)
    with pytest.raises(build.LabError, match="r3"):
        build._start_frr(None, st, {})
    assert saves == [] and sorted(st.frr) == ["r0", "r1", "r2"]


# The daemons: started in the router's network namespace only, zebras first.

def test_a_daemon_starts_in_its_network_and_the_labs_mount_namespace_without_ip_netns_exec(
        monkeypatch, tmp_path):
    from netrig.lab import frr

    lab = tmp_path / "labs" / "sv"
    lab.mkdir(parents=True)
    monkeypatch.setattr(frr, "ids", lambda: (os.getuid(), os.getgid(), {os.getgid()}))
    monkeypatch.setattr(frr, "daemons_dir", lambda lab_dir: tmp_path / "frr" / "sv")
    d = tmp_path / "frr" / "sv" / "r1"
    d.mkdir(parents=True)
    ran: list[tuple[str, list[str]]] = []
    joined: list[str] = []  # the namespaces a thread joined, to run what follows

    def run(argv, **kw):
        ran.append((joined[-1], joined[-2], argv))
        (d / "zebra.pid").write_text(f"{os.getpid()}\n")
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(frr.netns, "run_in", lambda ns, fn: (joined.append(ns), fn())[1])
    monkeypatch.setattr(frr.frrmount, "enter", lambda lab_dir: joined.append(f"mount {lab_dir}"))
    monkeypatch.setattr(frr.subprocess, "run", run)
    monkeypatch.setattr(frr, "_rel", lambda lab_dir, *names: (tmp_path, "/".join(("frr", "sv", *names))))
    pid, started = frr._start_daemon(lab, "r1", "sv-r1", "zebra")
    (mount, ns, argv), = ran
    assert ns == "sv-r1" and argv[0] == str(frr.frr_dir() / "zebra") and "netns" not in argv
    assert argv[argv.index("--limit-fds") + 1] == "1024"
    assert mount == f"mount {lab}"  # joined in the thread that joined sv-r1, before it ran
    assert pid == os.getpid() and started == frr.start_time(os.getpid())


def test_every_zebra_starts_before_any_other_daemon(monkeypatch):
    from netrig.lab import frr
    from netrig.topo.model import Topology
    from netrig.topo.plan import make_plan

    t = Topology("w")
    for r in ("r1", "r2", "r3"):
        t.router(r, ospf=True, bgp=65001)
    t.link("r1", "r2")
    t.link("r2", "r3")
    plan = make_plan(t)
    order: list[tuple[str, str]] = []
    fds_of: dict[str, int] = {}
    monkeypatch.setattr(frr, "write", lambda plan, lab_dir, r, ns: None)
    monkeypatch.setattr(frr, "_wait_zserv", lambda lab_dir, r: order.append((r, "zserv.api")))
    monkeypatch.setattr(frr, "_start_daemon",
                        lambda lab_dir, r, ns, name, fds: (order.append((r, name)), fds_of.setdefault(name, fds),
                                                           [len(order), 7])[2])
    monkeypatch.setattr(frr, "ids", lambda: (105, 113, {113}))
    monkeypatch.setattr(frr.frrmount, "make", lambda lab_dir, uid, gid, size:
                        order.append(("lab", f"mount ns {lab_dir} {uid}:{gid} {size >> 20} MiB")))
    recorded: dict[str, list] = {}
    frr.start(plan, "LAB", {r: f"w-{r}" for r in t.dynamic},
              lambda r, ds: recorded.setdefault(r, []).append(sorted(ds)), workers=2)
    assert order.pop(0) == ("lab", "mount ns LAB 105:113 64 MiB")  # once, before any daemon
    zebras = [k for k, (_, name) in enumerate(order) if name == "zebra"]
    assert len(zebras) == 3 and max(zebras) < min(k for k, (_, n) in enumerate(order) if n != "zebra")
    for r in ("r1", "r2", "r3"):  # its zebra's socket waited for, then ospfd, then bgpd
        mine = [n for x, n in order if x == r]
        assert mine == ["zebra", "zserv.api", "ospfd", "bgpd"], mine
        assert recorded[r] == [["zebra"], ["bgpd", "ospfd", "zebra"]]
    # FRR's packaged limit, not the 20,000 inherited (tables sized for it cost 2.9 MB a
    # router); bgpd's grows with the sessions it may have
    assert fds_of["zebra"] == fds_of["ospfd"] == 1024 and fds_of["bgpd"] == 1024 + 2 * (3 + 2)


def test_an_interrupted_start_starts_no_daemon_after_it_returns(monkeypatch):
    """A ^C (or SIGTERM, or a daemon that fails) while routers' daemons start: start
    raises at once, and no daemon starts after it has (those already started are
    recorded, for the teardown that follows)."""
    import threading

    from netrig.lab import frr
    from netrig.topo.model import Topology
    from netrig.topo.plan import make_plan

    t = Topology("w")
    for k in range(200):
        t.router(f"r{k}", ospf=True)
    for k in range(199):
        t.link(f"r{k}", f"r{k + 1}")
    plan = make_plan(t)
    lock, started, after = threading.Lock(), [], []
    returned = threading.Event()

    def start_daemon(lab_dir, r, ns, name, fds):
        with lock:
            (after if returned.is_set() else started).append((r, name))
            n = len(started)
        if n == 5:
            raise KeyboardInterrupt  # (as a ^C surfaces in the thread that waits)
        time.sleep(0.05)
        return [n, 7]

    monkeypatch.setattr(frr, "write", lambda plan, lab_dir, r, ns: None)
    monkeypatch.setattr(frr, "_wait_zserv", lambda lab_dir, r: None)
    monkeypatch.setattr(frr, "_start_daemon", start_daemon)
    monkeypatch.setattr(frr, "ids", lambda: (105, 113, {113}))
    monkeypatch.setattr(frr.frrmount, "make", lambda lab_dir, uid, gid, size: None)
    with pytest.raises(KeyboardInterrupt):
        frr.start(plan, "LAB", {r: f"w-{r}" for r in t.dynamic}, lambda r, ds: None, workers=4)
    returned.set()
    time.sleep(0.3)  # (what a queue left alone would start meanwhile: 24 zebras)
    # Those that ran when it raised finish; of the queue, only what the 4 threads took
    # before the waiting thread saw the failure (it would take a stall of ~1 s to reach
    # 100; left alone, the queue starts all 200 before start returns).
    assert after == [] and len(started) < 100, len(started)


def test_vtysh_runs_in_no_namespace_of_the_lab(monkeypatch, tmp_path):
    from netrig.lab import frr

    seen: list[list[str]] = []

    def run(argv, **kw):
        seen.append(argv)
        return subprocess.CompletedProcess(argv, 0, stdout='{"neighbors": {}}', stderr="")

    monkeypatch.setattr(frr.subprocess, "run", run)
    assert frr.vtysh(tmp_path, "ospfd", "show ip ospf neighbor json") == {"neighbors": {}}
    assert seen == [["vtysh", "--config_dir", str(tmp_path), "--vty_socket", str(tmp_path),
                     "-d", "ospfd", "-c", "show ip ospf neighbor json"]]
