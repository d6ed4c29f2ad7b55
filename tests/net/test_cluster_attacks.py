"""Who a netrig cluster refuses, tried with real processes (`netrig cluster scheduler`
and `worker`, tests/net/netlab.py's Cluster): Dask's `run` RPC (what `Client.run(os.system,
...)` sends) from a client with no certificate, with another CA's, or over plain tcp://,
on every port the scheduler, the worker and its nanny listen on (found from the
processes themselves, /proc); a worker with another CA's certificate that would join;
and a worker of the cluster whose every reply would run code where it is unpickled,
against the head. One scheduler and worker serve the probes (started once: CI's time).
"""

from __future__ import annotations

import asyncio
import http.client
import ipaddress
import json
import os
import pickle
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
from netlab import Cluster
from netrig.exp.execute import cluster as head
from netrig.exp.execute import cluster_tls as tls

pytestmark = pytest.mark.net


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tls")
    c = Cluster(tmp, [f"tls{os.getpid() % 10000}"])
    yield c
    c.stop()


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory):
    """A CA of another cluster, and a certificate of it."""
    d = tmp_path_factory.mktemp("other")
    d.chmod(0o700)
    tls.make_ca(d)
    return tls.issue(d, "stranger")


def pem_files(b: tls.Bundle, where: Path) -> tuple[Path, Path, Path]:
    """(CA, certificate, key) as three files, 0600."""
    paths = (where / "ca.pem", where / "cert.pem", where / "key.pem")
    for p, text in zip(paths, (b.ca, b.cert, b.key), strict=True):
        p.write_text(text)
        p.chmod(0o600)
    return paths


def family(pid: int) -> set[int]:
    """pid and every process below it."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        found.add(p)
        todo += children.get(p, [])
    return found


def listening(pids: set[int]) -> list[tuple[str, int]]:
    """The TCP sockets these processes listen on: (address, port)."""
    inodes = set()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                link = os.readlink(fd)
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    found = []
    for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] != "0A" or f[9] not in inodes:  # 0A: LISTEN
                continue
            hexaddr, hexport = f[1].split(":")
            raw = bytes.fromhex(hexaddr)
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # host-order words
            found.append((str(ipaddress.ip_address(raw if v6 else raw[:4])), int(hexport, 16)))
    return sorted(found)


def context(ca: str | None, cert: tls.Bundle | None, where: Path) -> ssl.SSLContext:
    """A TLS client that trusts `ca` (the cluster's: the strongest stranger) and presents
    `cert` (none: no certificate)."""
    ctx = ssl.create_default_context(cadata=ca) if ca else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    if not ca:
        ctx.verify_mode = ssl.CERT_NONE
    if cert is not None:
        _, c, k = pem_files(cert, where)
        ctx.load_cert_chain(c, k)
    return ctx


def run_ops(marker: Path) -> list[dict]:
    """Dask's `run` as a worker and a nanny take it, and as the scheduler broadcasts it
    (what Client.run(os.system, CMD) sends): each would create `marker` as root."""
    fn, args = pickle.dumps(os.system), pickle.dumps((f"touch {marker}",))
    run = {"op": "run", "function": fn, "args": args, "wait": True, "kwargs": pickle.dumps({})}
    return [{**run, "reply": True}, {"op": "broadcast", "msg": run, "reply": True}]


async def attempt(addr: str, ctx: ssl.SSLContext | None, msg: dict, wait: float = 1.5) -> str:
    """What `msg` sent to addr got: 'refused: ...' (no connection, or no answer within
    `wait`: Dask's HTTP servers wait for a request they can read), or the reply."""
    from distributed.comm import connect

    args = {"ssl_context": ctx, "require_encryption": False} if ctx else {}
    comm = None

    async def exchange() -> str:
        nonlocal comm
        comm = await connect(addr, timeout=wait / 2, **args)  # (Dask tries again until then)
        await comm.write(msg)
        return repr(await comm.read())

    try:
        return await asyncio.wait_for(exchange(), wait)
    except Exception as e:
        return f"refused: {type(e).__name__}"
    finally:
        if comm is not None:
            comm.abort()


def test_every_port_of_the_scheduler_worker_and_nanny_refuses_a_stranger(cluster, other_ca, tmp_path):
    info = cluster.client.scheduler_info(n_workers=-1)["workers"]
    (waddr, w), = info.items()
    comm_ports = {"scheduler": cluster.address, "worker": waddr, "nanny": w["nanny"]}
    pids = {"scheduler": family(cluster.scheduler_pid),
            "worker and nanny": family(next(iter(cluster.nanny_pids().values())))}
    assert next(iter(cluster.pids().values())) in pids["worker and nanny"]
    ports = {who: listening(p) for who, p in pids.items()}
    assert all(ports.values()), ports
    for who, socks in ports.items():  # none on every interface: on the one that reaches the scheduler
        assert {a for a, _ in socks} == {head.local_address("127.0.0.1")}, (who, socks)
    every = sorted({p for socks in ports.values() for _, p in socks})
    for addr in comm_ports.values():
        assert int(addr.rsplit(":", 1)[1]) in every
    ca = cluster.bundle.ca
    strangers = {"plain tcp": None, "TLS without a certificate": context(ca, None, tmp_path),
                 "another CA's certificate": context(ca, other_ca, tmp_path)}
    marks = tmp_path / "marks"
    marks.mkdir()

    async def probe_all() -> dict[str, str]:  # (all at once: a refusal may take the whole wait)
        tries = {f"{port} {name} {msg['op']}": attempt(f"{'tls' if ctx else 'tcp'}://127.0.0.1:{port}", ctx, msg)
                 for port in every for name, ctx in strangers.items()
                 for msg in run_ops(marks / f"{port}-{name.replace(' ', '_')}")}
        return dict(zip(tries, await asyncio.gather(*tries.values()), strict=True))

    got = asyncio.run(probe_all())
    assert all(v.startswith("refused") for v in got.values()), {k: v for k, v in got.items()
                                                               if not v.startswith("refused")}
    # The same RPC with the cluster's certificate does run (the probe is a real one): on
    # each of the three servers.
    good = context(cluster.bundle.ca, cluster.bundle, tmp_path)

    async def with_cert() -> list[str]:
        return [await attempt(addr, good, run_ops(marks / f"good-{who}")[who == "scheduler"], wait=30)
                for who, addr in comm_ports.items()]

    said = asyncio.run(with_cert())
    time.sleep(0.5)
    assert sorted(p.name for p in marks.iterdir()) == ["good-nanny", "good-scheduler", "good-worker"], said
    # Dask's HTTP servers (the other ports): on loopback, serving nothing.
    for port in sorted(set(every) - {int(a.rsplit(":", 1)[1]) for a in comm_ports.values()}):
        for path in ("/", "/health", "/metrics", "/info/main/workers.html", "/json/identity.json"):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", path)
            assert c.getresponse().status == 404, (port, path)
            c.close()


def test_a_plain_tcp_address_is_refused_with_why(cluster):
    tcp = cluster.address.replace("tls://", "tcp://")
    p = subprocess.run([sys.executable, "-m", "netrig", "cluster", "status", tcp], capture_output=True,
                       text=True, env=cluster.env, timeout=60)
    assert p.returncode == 1
    assert "plain tcp:// is Dask without TLS" in p.stderr and "use tls://HOST:PORT" in p.stderr
    p = subprocess.run([sys.executable, "-m", "netrig", "cluster", "status", cluster.address],
                       capture_output=True, text=True, env=cluster.env, timeout=60)
    assert p.returncode == 0 and "1 netrig worker(s)" in p.stdout, p.stderr[-2000:]


def test_a_worker_with_another_cas_certificate_cannot_join(cluster, other_ca, tmp_path):
    """Two Dask workers that trust the cluster's CA: one presents another CA's
    certificate, the other (the control) one of the cluster's; only the control joins."""
    procs = {}
    ca = pem_files(cluster.bundle, tmp_path)[0]
    for name, b in (("rogue", other_ca), ("control", tls.issue(cluster.dir, "control"))):
        (tmp_path / name).mkdir()
        _, cert, key = pem_files(b, tmp_path / name)
        env = {**os.environ, "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True",
               "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(ca),
               "DASK_DISTRIBUTED__COMM__TLS__WORKER__CERT": str(cert),
               "DASK_DISTRIBUTED__COMM__TLS__WORKER__KEY": str(key)}
        procs[name] = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", cluster.address, "--name", name,
             "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"],
            env=env, stdout=subprocess.DEVNULL, stderr=(tmp_path / f"{name}.log").open("w"))
    try:
        names = set()
        deadline = time.monotonic() + 60
        while "control" not in names:
            assert time.monotonic() < deadline, (tmp_path / "control.log").read_text()[-2000:]
            time.sleep(0.2)
            names = {w["name"] for w in cluster.client.scheduler_info(n_workers=-1)["workers"].values()}
        time.sleep(2)
        names = {w["name"] for w in cluster.client.scheduler_info(n_workers=-1)["workers"].values()}
        assert "rogue" not in names
    finally:
        for p in procs.values():
            p.terminate()
        for p in procs.values():
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    log = (tmp_path / "rogue.log").read_text()
    assert "Registered to" not in log


ROGUE = '''\
"""A worker holding a certificate of the cluster, whose every reply to a run would run
code where it is unpickled, by the ways Dask's client unpickles what a worker sends: the
result, the result's type, a task's exception. (A message the scheduler relays as it
came, `__Pickled__`: tests/unit/test_cluster_reply.py.)"""
import os
import pickle

PAYLOAD = ("import os; open(%r + '/ran-in-%%d' %% os.getpid(), 'w').close()" % os.environ["MARKS"])


class Evil:
    def __reduce__(self):
        return (exec, (PAYLOAD,))


class EvilError(Exception):
    pass


EVIL = pickle.dumps(Evil())


def dask_setup(worker):
    import distributed.protocol.core as core
    import distributed.worker_state_machine as wsm
    from distributed.protocol import pickle as dpickle

    import netrig.exp.execute.worker as wk

    split = core.serialize_and_split  # 1. a run's result pickled, whatever the head asks for

    def pickled(x, serializers=None, *a, **k):
        run = isinstance(getattr(x, "data", x), dict) and "files" in getattr(x, "data", x)
        return split(x, None if run else serializers, *a, **k)

    core.serialize_and_split = pickled

    class Types:  # 2. a result's type that runs code where it is unpickled
        loads = staticmethod(dpickle.loads)

        @staticmethod
        def dumps(x, *a, **k):
            return EVIL if isinstance(x, type) else dpickle.dumps(x, *a, **k)

    wsm.pickle = Types

    import distributed.worker as dw
    from distributed.protocol import to_serialize

    said = dw.error_message  # 3. an exception that runs code where it is unpickled

    def error_message(e, *a, **k):
        msg = said(e, *a, **k)
        return {**msg, "exception": to_serialize(EVIL)} if isinstance(e, EvilError) else msg

    dw.error_message = error_message

    def do_run(point, rep, *rest):
        from distributed import get_worker

        w = get_worker()
        if rep % 2:
            raise EvilError("boom")
        return {"files": {"run.json": Evil()}, "worker": {"name": str(w.name)}}

    wk.do_run = do_run
'''

TINY = """\
name: tiny
topology:
  nodes: {h1: host, h2: host}
  links:
    - {a: h1, b: h2, rate: 10Mbit}
duration: 1s
settle: 0s
repeat: 2
flows:
  bulk: {kind: tcp, from: h1, to: h2}
"""


def test_a_workers_reply_runs_no_code_on_the_head(tmp_path):
    """A scheduler whose one worker is a rogue of the cluster (it holds a certificate):
    the head records its runs as failed, and nothing it sent ran anywhere."""
    sched = Cluster(tmp_path, [])
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "rogue_preload.py").write_text(ROGUE)
    ca, cert, key = pem_files(tls.issue(sched.dir, "rogue"), tmp_path)
    env = {**os.environ, "MARKS": str(marks), "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True",
           "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(ca), "DASK_DISTRIBUTED__COMM__TLS__WORKER__CERT": str(cert),
           "DASK_DISTRIBUTED__COMM__TLS__WORKER__KEY": str(key), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    rogue = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_worker", sched.address, "--name", "rogue", "--nthreads", "1",
         "--no-nanny", "--no-dashboard", "--host", "127.0.0.1", "--resources", "run=1",
         "--preload", str(tmp_path / "rogue_preload.py")],
        env=env, stdout=subprocess.DEVNULL, stderr=(tmp_path / "rogue.log").open("w"))
    try:
        sched.client.wait_for_workers(1, timeout=60)
        (tmp_path / "s.yaml").write_text(TINY)
        out = tmp_path / "out"
        p = subprocess.Popen([sys.executable, "-m", "netrig", "run", str(tmp_path / "s.yaml"), "--out",
                              str(out), "-q", "--cluster", sched.address], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**sched.env, "MARKS": str(marks)})
        try:
            _, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    finally:
        rogue.terminate()
        try:
            rogue.wait(timeout=15)
        except subprocess.TimeoutExpired:
            rogue.kill()
            rogue.wait()
        sched.stop()
    ran = [m.name for m in marks.iterdir()]
    assert not ran, f"code ran in {ran}; the head was {p.pid}, the rogue {rogue.pid}: {err[-1500:]}"
    assert p.returncode == 1 and (out / "runs").is_dir(), err[-3000:]
    runs = {d.name: json.loads((d / "run.json").read_text()) for d in (out / "runs").iterdir()}
    assert {r["status"] for r in runs.values()} == {"failed"}, runs
    result, raised = runs["p000-r00"]["error"], runs["p000-r01"]["error"]
    assert "Data serialized with pickle but only able to deserialize data with ['msgpack', 'error']" in result
    assert "its worker raised an exception the head does not unpickle" in raised
