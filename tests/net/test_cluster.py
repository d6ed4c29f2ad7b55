"""Campaigns on a real Dask cluster: a scheduler and two netrig workers started here
(`netrig cluster scheduler|worker`, each worker with a host name of its own by `unshare
--uts`, TLS with the cluster's certificates), the head `netrig run --cluster`. The
campaign's results directory is a local run's; a worker killed mid-run loses nothing and
leaves no network behind. And the checks a cluster must pass before a run is handed out,
against an in-process Dask cluster speaking TLS on loopback (so these are here too).
Who is refused (no certificate, another CA's, plain tcp://, a rogue worker's reply):
test_cluster_attacks.py."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from netlab import Cluster
from netrig.exp.execute import cluster as head
from netrig.exp.execute import cluster_tls as tls
from netrig.exp.execute import worker as wk

pytestmark = pytest.mark.net

SCENARIO = """\
name: campaign
topology:
  nodes: {h1: host, h2: host}
  links:
    - {a: h1, b: h2, rate: 20Mbit, delay: 2ms, queue: 50}
duration: %s
settle: 0s
repeat: 2
flows:
  bulk: {kind: tcp, from: h1, to: h2, cc: cubic}
  rtt: {kind: ping, from: h1, to: h2, interval: 100ms}
sweep:
  links.h1-h2.rate: %s
"""
LABS = Path("/run/netrig/labs")
VOLATILE = {"started", "seconds", "worker", "host", "emulator", "schema", "teardown_errors"}


@pytest.fixture
def cluster(tmp_path):
    tag = f"t{os.getpid() % 10000}"
    c = Cluster(tmp_path, [f"{tag}a", f"{tag}b"])
    yield c
    c.stop()


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA for the in-process clusters, and a head's bundle of it (a file)."""
    d = tmp_path_factory.mktemp("ca")
    d.chmod(0o700)
    tls.make_ca(d)
    tls.write_bundle(tls.issue(d, "head"), d / "head.pem")
    return d


def tls_cluster(certs: Path, **kw):
    """A scheduler and workers inside this process, TLS with a certificate of `certs`
    (their HTTP server on loopback)."""
    from distributed import LocalCluster

    return LocalCluster(threads_per_worker=1, processes=False, protocol="tls://", host="127.0.0.1",
                        security=tls.issue(certs, "in-process").security(),
                        dashboard_address="127.0.0.1:0", **kw)


@pytest.fixture
def local_dask(certs):
    """A scheduler and one netrig-like worker inside this process."""
    c = tls_cluster(certs, n_workers=1, resources={wk.RESOURCE: 1})
    yield c
    c.close()


def good_facts():
    return {"netrig": head.__version__, "hostname": "w", "kernel": "6.1", "cpu": "x", "cpus": 2,
            "root": True, "missing": ""}


def test_a_cluster_without_netrig_workers_is_refused_with_what_to_do(certs):
    with tls_cluster(certs, n_workers=1) as c:
        with pytest.raises(head.ClusterError) as e:
            head.Campaign(c.scheduler_address, wait_s=0.5, cert=str(certs / "head.pem"))
    assert "no netrig worker has joined (its 1 worker(s) lack the 'run' resource)" in str(e.value)
    assert "netrig cluster worker ADDRESS" in str(e.value)


@pytest.mark.parametrize("change,said", [
    ({"netrig": "0.0.1"}, "runs netrig 0.0.1, this machine"),
    ({"root": False}, "is not root: a worker builds networks"),
    ({"missing": "netrig-link not found"}, "netrig-link not found"),
])
def test_a_worker_that_would_not_measure_the_same_is_refused(local_dask, certs, monkeypatch, change, said):
    monkeypatch.setattr(wk, "facts", lambda: {**good_facts(), **change})
    with pytest.raises(head.ClusterError) as e:
        head.Campaign(local_dask.scheduler_address, wait_s=5, cert=str(certs / "head.pem"))
    assert said in str(e.value) and "(w, tls://127.0.0.1:" in str(e.value)


def test_what_a_worker_says_of_itself_is_checked_before_it_is_used(local_dask, certs, monkeypatch):
    monkeypatch.setattr(wk, "facts", lambda: {**good_facts(), "cpus": "many", "extra": 1})
    with pytest.raises(head.ClusterError) as e:
        head.Campaign(local_dask.scheduler_address, wait_s=5, cert=str(certs / "head.pem"))
    assert "what it says of itself was refused: not a worker's facts" in str(e.value)


def test_a_good_cluster_is_described_for_meta_json(local_dask, certs, monkeypatch):
    monkeypatch.setattr(wk, "facts", good_facts)
    c = head.Campaign(local_dask.scheduler_address, wait_s=5, cert=str(certs / "head.pem"))
    try:
        assert c.size == 1
        d = c.describe()
        assert d["address"] == local_dask.scheduler_address
        assert d["workers"][0]["hostname"] == "w" and d["workers"][0]["netrig"] == head.__version__
    finally:
        c.close()


def test_no_scheduler_is_said_plainly(monkeypatch, certs):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(head, "CONNECT_S", 0.5)
    with pytest.raises(head.ClusterError) as e:
        head.Campaign(f"tls://127.0.0.1:{port}", wait_s=0, cert=str(certs / "head.pem"))
    assert "no scheduler answered over TLS within 0 s" in str(e.value)
    assert "netrig cluster scheduler" in str(e.value) and "head.pem" in str(e.value)


BATCH = """\
name: tiny
topology:
  nodes: {h1: host, h2: host}
  links:
    - {a: h1, b: h2, rate: 10Mbit, delay: 2ms}
duration: 2s
repeat: 4
flows:
  bulk: {kind: tcp, from: h1, to: h2}
"""
# Repetition: (seconds it takes, how it ends): three failures in a row, and a fourth run
# that ends well 20 ms after the third has returned (it waits for it: started a few ms
# apart on a busy machine, a fourth that only slept 20 ms longer came back first twice,
# and no three failures were in a row): it comes back with the third or while the head
# stops, and is kept.
PLAN = {0: (0.1, "failed"), 1: (0.3, "failed"), 2: (1.0, "failed"), 3: (0.02, "ok")}
THIRD_BACK = threading.Event()


STOPS: list[tuple[str, str]] = []  # (a task's key, the stop event it was told)


def stand_in_run(point, rep, seed, rid, campaign, version, settle_s, stop_name):
    from distributed import get_worker

    w = get_worker()
    STOPS.append((str(w.get_current_task()), stop_name))
    w.log_event(wk.TOPIC, {"campaign": campaign, "run": rid, "name": str(w.name), "hostname": "h"})
    took, status = PLAN[rep]
    if rep == 3:
        THIRD_BACK.wait(30)
    time.sleep(took)
    doc = {"run": rid, "point": 0, "rep": rep, "seed": seed, "params": {}, "status": status,
           "error": "boom" if status == "failed" else "", "flows": {}}
    if rep == 2:
        THIRD_BACK.set()
    return {"files": {"run.json": json.dumps(doc).encode(), "x.txt": b"x"},
            "worker": {"name": str(w.name), "hostname": "h"}}


def test_runs_that_came_back_with_the_third_failure_are_kept_and_the_stop_is_prompt(monkeypatch, tmp_path,
                                                                                    certs):
    from netrig.exp.execute.progress import Display
    from netrig.exp.execute.tally import RunFailed, Tally, Todo
    from netrig.exp.spec.scenario import loads_scenario

    monkeypatch.setattr(wk, "do_run", stand_in_run)
    monkeypatch.setattr(wk, "facts", good_facts)
    monkeypatch.setattr(head, "STOP_WAIT_S", 30.0)
    THIRD_BACK.clear()
    sc = loads_scenario(BATCH)
    with tls_cluster(certs, n_workers=4, resources={wk.RESOURCE: 1}) as lc:
        c = head.Campaign(lc.scheduler_address, wait_s=5, cert=str(certs / "head.pem"))
        try:
            todo = [Todo(r, sc.points[0], r, r, f"p000-r{r:02d}") for r in range(4)]
            t = time.monotonic()
            with pytest.raises(RunFailed, match="three runs in a row failed"):
                with Display(4, 10, False) as shown:
                    c.run(sc, tmp_path, todo, shown, Tally(tmp_path))
            # not the whole stop wait (30 s; a bound a busy machine keeps: it once took 6 s of 8)
            assert time.monotonic() - t < 15
        finally:
            c.close()
    got = {d.name: json.loads((d / "run.json").read_text())["status"] for d in (tmp_path / "runs").iterdir()}
    assert got == {"p000-r00": "failed", "p000-r01": "failed", "p000-r02": "failed", "p000-r03": "ok"}
    # The stop event's name: one secret for the campaign, not found in what every client
    # of the cluster sees of its tasks (their keys name the campaign).
    names = {name for _, name in STOPS}
    assert len(STOPS) == 4 and len(names) == 1 and re.fullmatch(r"netrig-stop-[0-9a-f]{32}", names.pop())
    assert all(c.id in key and c.id not in name for key, name in STOPS)


def netrig(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "netrig", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def runs(out: Path) -> dict[str, dict]:
    return {d.name: json.loads((d / "run.json").read_text()) for d in sorted((out / "runs").iterdir())}


def files(run_dir: Path) -> list[str]:
    return sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file())


def labs_of(parent: int) -> dict[str, int]:
    """The labs whose builder is a child of `parent` (a worker's run): prefix, builder."""
    found = {}
    for st in LABS.glob("*/state.json") if LABS.is_dir() else []:
        try:
            owner = json.loads(st.read_text())["owner_pid"]
            ppid = int(Path(f"/proc/{owner}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, KeyError, IndexError):
            continue
        if ppid == parent:
            found[st.parent.name] = owner
    return found


def wait_for_run_on(parent: int, timeout: float = 60) -> tuple[str, int]:
    deadline = time.monotonic() + timeout
    while not (found := labs_of(parent)):
        assert time.monotonic() < deadline, "no run started on the worker"
        time.sleep(0.05)
    return next(iter(found.items()))


def gone(prefix: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while (LABS / prefix).exists() or prefix in subprocess.run(
            ["ip", "netns", "list"], capture_output=True, text=True).stdout:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_a_campaign_on_two_workers_writes_what_a_local_run_writes(cluster, tmp_path):
    (tmp_path / "s.yaml").write_text(SCENARIO % ("2s", "[10Mbit, 20Mbit]"))
    local, far = tmp_path / "local", tmp_path / "far"
    p = netrig("run", str(tmp_path / "s.yaml"), "--out", str(local), "-q", "--local")
    _, err = p.communicate(timeout=180)
    assert p.returncode == 0, err[-2000:]
    p = netrig("run", str(tmp_path / "s.yaml"), "--out", str(far), "--cluster", cluster.address, env=cluster.env)
    _, err = p.communicate(timeout=180)
    assert p.returncode == 0, err[-2000:]
    assert re.search(r"run \d/4 on t\d+[ab] \(t\d+[ab]-host\)", err), err[-2000:]  # progress names the worker

    a, b = runs(local), runs(far)
    assert list(a) == list(b) == ["p000-r00", "p000-r01", "p001-r00", "p001-r01"]
    for rid in a:
        assert files(local / "runs" / rid) == files(far / "runs" / rid), rid
        x, y = a[rid], b[rid]
        assert {k: v for k, v in x.items() if k not in VOLATILE | {"flows"}} == \
               {k: v for k, v in y.items() if k not in VOLATILE | {"flows"}}, rid
        assert y["status"] == "ok" and y["seed"] == x["seed"] and y["params"] == x["params"]
        for name, f in x["flows"].items():
            g = y["flows"][name]
            assert set(g["summary"]) == set(f["summary"]), (rid, name)
            if "expected" in f:  # theory is the same; the measurement agrees with it
                assert g["expected"]["value"] == f["expected"]["value"]
                assert 0.7 < g["expected"]["ratio"] < 1.15, g["expected"]  # (wide: a noisy host)
        assert x["host"]["hostname"] != y["host"]["hostname"]  # a worker's own name
        assert y["worker"]["name"] in cluster.names and y["host"]["hostname"] == y["worker"]["name"] + "-host"
        assert "worker" not in x
    assert {r["worker"]["name"] for r in b.values()} == set(cluster.names)  # both worked
    csv_a, csv_b = ((d / "results.csv").read_text().splitlines() for d in (local, far))
    assert csv_a[0] == csv_b[0] and len(csv_a) == len(csv_b)
    meta = json.loads((far / "meta.json").read_text())
    assert meta["status"] == "complete"
    assert sorted(w["name"] for w in meta["cluster"]["workers"]) == sorted(cluster.names)
    report = (far / "report.md").read_text()
    assert "ran on" in report and "The runs ran on the workers of the cluster" in report

    # --resume of a campaign directory runs only what is missing, here on the cluster.
    (far / "runs" / "p001-r01" / "run.json").unlink()
    kept = (far / "runs" / "p000-r00" / "run.json").stat().st_mtime_ns
    p = netrig("run", "--resume", str(far), "-q", "--cluster", cluster.address, env=cluster.env)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err[-2000:]
    assert runs(far)["p001-r01"]["status"] == "ok"
    assert (far / "runs" / "p000-r00" / "run.json").stat().st_mtime_ns == kept


def test_a_worker_killed_mid_run_loses_nothing_and_its_network_is_removed(cluster, tmp_path):
    # Runs of 8 s: a run that went on after its worker died would hold its lab for 7 s
    # more, past the 6 s allowed for its teardown.
    (tmp_path / "s.yaml").write_text(SCENARIO % ("8s", "[10Mbit, 20Mbit]"))
    out = tmp_path / "out"
    victim = cluster.names[0]
    p = netrig("run", str(tmp_path / "s.yaml"), "--out", str(out), "-q", "--cluster", cluster.address, env=cluster.env)
    # 1. The worker process alone dies (its nanny restarts it): its run's process gets
    # SIGTERM from the kernel and tears its network down at once.
    worker = cluster.pids()[victim]
    prefix, builder = wait_for_run_on(worker)
    time.sleep(0.5)
    os.kill(worker, signal.SIGKILL)
    assert gone(prefix, 6), f"the killed worker's lab {prefix} was left"
    # 2. The worker and its run die together (a machine that crashed): the network stays
    # until the worker starts again, whose first act is to clean it.
    deadline = time.monotonic() + 30
    while (worker2 := cluster.pids().get(victim)) in (None, worker):
        assert time.monotonic() < deadline, "the nanny did not restart the worker"
        time.sleep(0.2)
    prefix2, builder2 = wait_for_run_on(worker2)
    time.sleep(0.5)
    os.kill(builder2, signal.SIGKILL)
    os.kill(worker2, signal.SIGKILL)
    time.sleep(0.3)
    assert gone(prefix2, 30), f"the crashed run's lab {prefix2} was not cleaned when the worker came back"
    _, err = p.communicate(timeout=240)
    assert p.returncode == 0, err[-3000:]
    done = runs(out)
    assert len(done) == 4 and all(r["status"] == "ok" for r in done.values()), err[-3000:]
    lost = [r for r in done.values() if r["worker"].get("lost")]
    # Two attempts lost (one run may have lost both: its rerun can land on the victim again).
    assert sum(len(r["worker"]["lost"]) for r in lost) == 2, [r["worker"] for r in done.values()]
    assert all(set(r["worker"]["lost"]) == {victim} for r in lost)
    assert f"its worker {victim}" in err and "died while running it" in err
    assert builder != builder2


def test_a_stopped_campaign_tears_its_runs_down_and_resume_finishes_it(cluster, tmp_path):
    (tmp_path / "s.yaml").write_text(SCENARIO % ("6s", "[10Mbit, 20Mbit]"))
    out = tmp_path / "out"
    p = netrig("run", str(tmp_path / "s.yaml"), "--out", str(out), "-q", "--cluster", cluster.address, env=cluster.env)
    pids = cluster.pids()
    going = [wait_for_run_on(pid)[0] for pid in pids.values()]  # a run on each worker
    time.sleep(1.0)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143, err[-2000:]  # SIGTERM
    assert json.loads((out / "meta.json").read_text())["status"] == "interrupted"
    stopped = runs(out)
    assert stopped and all(r["status"] == "interrupted" for r in stopped.values()), stopped
    assert all(gone(prefix, 10) for prefix in going)  # torn down on the workers
    p = netrig("run", "--resume", str(out), "-q", "--cluster", cluster.address, env=cluster.env)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err[-2000:]
    assert [r["status"] for r in runs(out).values()] == ["ok"] * 4


def slow_run(point, rep, seed, rid, campaign, version, settle_s, stop_name):
    time.sleep(4)  # the scheduler goes away meanwhile
    return {}


def test_a_campaign_whose_scheduler_goes_away_fails_saying_so_and_does_not_wait_forever(monkeypatch, tmp_path,
                                                                                        certs):
    from netrig.exp.execute.progress import Display
    from netrig.exp.execute.tally import Tally, Todo
    from netrig.exp.spec.scenario import loads_scenario

    monkeypatch.setattr(wk, "do_run", slow_run)
    monkeypatch.setattr(wk, "facts", good_facts)
    monkeypatch.setattr(head, "STOP_WAIT_S", 2.0)
    sc = loads_scenario(BATCH)
    lc = tls_cluster(certs, n_workers=1, resources={wk.RESOURCE: 1})
    try:
        c = head.Campaign(lc.scheduler_address, wait_s=5, cert=str(certs / "head.pem"))
        todo = [Todo(r, sc.points[0], r, r, f"p000-r{r:02d}") for r in range(2)]
        threading.Timer(2.0, lambda: lc.sync(lc.scheduler.close)).start()
        t = time.monotonic()
        try:
            with Display(2, 10, False) as shown:
                c.run(sc, tmp_path, todo, shown, Tally(tmp_path))
        except head.ClusterError as e:
            assert "lost the scheduler" in str(e)
        finally:
            c.close()
        assert time.monotonic() - t < 6 + head.LOST_S, "it waited for the runs, not for the scheduler"
    finally:
        for w in list(lc.workers.values()):
            lc.sync(w.close, timeout=5)
        with contextlib.suppress(TimeoutError):  # (its scheduler is gone already)
            lc.close(timeout=5)
    for d in (tmp_path / "runs").iterdir():
        assert "lost the scheduler" in json.loads((d / "run.json").read_text())["error"]
