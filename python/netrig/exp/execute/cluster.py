"""Campaigns on a cluster: each run handed to a worker, every file gathered here.

`netrig run SCENARIO --cluster tls://HOST:8786` (or NETRIG_CLUSTER) connects, as a
client, to a Dask distributed scheduler whose workers netrig started (`netrig cluster
worker`: one run at a time, root, the same netrig). The head builds nothing and needs no
root: it checks the workers (netrig's version, root, netrig-link), submits every run not
yet done, and as each comes back checks it (exp/execute/cluster_reply.py) and writes its files
into `out/runs/RID/` (run.json last, with the worker that ran it), so the report,
`--resume`, `compare` and the CSV read a campaign's directory as a local one. The runs'
order, seeds and files are a local run's.

Only the cluster's own certificates get in (exp/execute/cluster_tls.py): the scheduler, each
worker and nanny and each head speak Dask's TLS, mutual, and nothing else (a `tcp://`
address is refused: whoever reaches a plain Dask port runs commands as root on the
workers). The scheduler listens on loopback unless told an address; a worker and its
nanny on the address that reaches the scheduler; their HTTP servers (Dask's dashboard,
which netrig does not use) on loopback, serving nothing.

Dask does the hard parts: placing runs on free workers, and giving a run whose worker
died (a crash, a lost machine: `worker-ttl`) to another; the lost attempt never reaches
here. A run the scheduler gave up on (`allowed-failures` worker deaths) is recorded as
failed and `--resume` runs it again. Ctrl-C (or SIGTERM) sets the campaign's stop event
(its name a secret of the head's and its workers'): runs going on tear down and come
back "interrupted", within STOP_WAIT_S, and the rest are cancelled.
"""

from __future__ import annotations

import os
import queue
import secrets
import socket
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from netrig import __version__, safefs, units
from netrig.errors import NetrigError
from netrig.exp.execute import cluster_reply as reply
from netrig.exp.execute import cluster_tls as tls
from netrig.exp.execute import worker as wk
from netrig.exp.execute.progress import Display
from netrig.exp.execute.tally import Tally, Todo
from netrig.exp.record.run import from_doc, write_run
from netrig.exp.spec.model import Scenario

CONNECT_S = 10.0
WORKERS_WAIT_S = 30.0  # for a first worker to join a scheduler that has none yet
STOP_WAIT_S = 30.0  # for the runs going on to tear down when the campaign is stopped
LOST_S = 20.0  # the head's connection to the scheduler down this long: the campaign fails
PORT = 8786
HOW = "start one on each machine with `netrig cluster worker ADDRESS` (as root)"
# A worker takes one run at a time (one thread, one `run` resource) and, each time it
# starts, removes the labs a crash left (the preload); a worker silent for WORKER_TTL (a
# lost machine) has its run given to another.
WORKER_ARGS = ["--nthreads", "1", "--nworkers", "1", "--resources", f"{wk.RESOURCE}=1",
               "--preload", "netrig.exp.execute.worker"]
WORKER_TTL = "30s"
# Dask's HTTP servers (a scheduler's, a worker's: the dashboard, metrics) start whatever
# --no-dashboard says: on loopback, with no routes, they serve nothing.
QUIET_HTTP = ["--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
NO_ROUTES = {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": []}


class ClusterError(NetrigError):
    pass


def parse_address(address: str) -> tuple[str, str, int]:
    """(tls://HOST:PORT, HOST, PORT) of a scheduler's address (HOST:PORT alone means
    tls://); a plain tcp:// one, or any other, is refused with why."""
    a = address.strip()
    scheme, sep, rest = a.partition("://")
    if not sep:
        scheme, rest = "tls", a
    if scheme == "tcp":
        raise ClusterError(f"{address}: plain tcp:// is Dask without TLS, where whoever reaches a port "
                           "runs commands as root on every worker; a netrig cluster speaks only "
                           "tls:// with its own certificates: use tls://HOST:PORT (as "
                           "`netrig cluster scheduler` prints it)")
    if scheme != "tls":
        raise ClusterError(f"{address}: a netrig cluster speaks only tls:// (e.g. tls://10.0.0.1:{PORT})")
    host, port = rest, PORT
    if rest.startswith("["):  # [v6]:port
        host, _, tail = rest[1:].partition("]")
        port_s = tail.removeprefix(":")
    elif rest.count(":") == 1:
        host, _, port_s = rest.partition(":")
    else:
        port_s = ""
    if port_s:
        if not port_s.isdigit() or not 0 < int(port_s) < 65536:
            raise ClusterError(f"{address}: the port is not a number from 1 to 65535")
        port = int(port_s)
    if not host or "/" in host:
        raise ClusterError(f"{address}: no host (e.g. tls://10.0.0.1:{PORT})")
    shown = f"[{host}]" if ":" in host else host
    return f"tls://{shown}:{port}", host, port


def local_address(host: str) -> str:
    """This machine's address that reaches `host` (the one the kernel would send from)."""
    try:
        family, _, _, _, sa = socket.getaddrinfo(host, 9, type=socket.SOCK_DGRAM)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect(sa)  # (UDP: nothing is sent)
            return str(s.getsockname()[0])
    except OSError as e:
        raise ClusterError(f"cannot tell which of this machine's addresses reaches {host} "
                           f"({e.strerror or e}); give --host ADDRESS") from None


async def _loop_ident() -> int:
    return threading.get_ident()


class Campaign:
    """A connection to a cluster, checked, that runs a campaign's runs on its workers.
    `cert`: the bundle to present (--cert), else as exp/cluster_tls.find says."""

    def __init__(self, address: str, wait_s: float = WORKERS_WAIT_S, strict: bool = True,
                 cert: str | None = None) -> None:
        from distributed import Client
        from distributed.utils import offload

        self.url, _, _ = parse_address(address)
        self.address = address
        self.id = uuid.uuid4().hex[:12]
        self.bundle = tls.find(cert, f"head {os.environ.get('USER') or os.getuid()}@{socket.gethostname()}")
        try:
            self.client = Client(self.url, timeout=CONNECT_S, set_as_default=False,
                                 security=self.bundle.security(), deserializers=list(reply.DESERIALIZERS))
        except (OSError, TimeoutError, ValueError) as e:
            raise ClusterError(f"cluster {address}: no scheduler answered over TLS within {CONNECT_S:.0f} s "
                               f"({e}); is `netrig cluster scheduler` running there, is the address "
                               f"right (tls://HOST:PORT), and is the certificate ({self.bundle.source}) "
                               "one of this cluster's?") from None
        try:
            # What the workers send is decoded on the client's thread (or Dask's offload
            # thread, for large messages): no pickle there may name code.
            threads = [threading.get_ident(), self.client.sync(_loop_ident),
                       self.client.sync(offload, threading.get_ident)]
            self._guard = reply.refusing_pickles(threads)
            self._guard.__enter__()
        except BaseException:
            self.client.close()
            raise
        try:
            self.workers = self._check(wait_s, strict)
        except BaseException:
            self.close()
            raise

    @property
    def size(self) -> int:
        return len(self.workers)

    def _check(self, wait_s: float, strict: bool = True) -> dict[str, dict[str, Any]]:
        """The workers that will run runs (address: facts); refuses a cluster with none,
        or (strict) with one that would not measure what a local run does."""
        deadline = time.monotonic() + wait_s
        while True:
            info = self.client.scheduler_info(n_workers=-1)["workers"]
            runners = [a for a, w in info.items() if (w.get("resources") or {}).get(wk.RESOURCE)]
            if runners or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if not runners:
            others = f" (its {len(info)} worker(s) lack the '{wk.RESOURCE}' resource)" if info else ""
            when = f"joined within {wait_s:.0f} s" if wait_s >= 1 else "has joined"
            raise ClusterError(f"cluster {self.address}: no netrig worker {when}{others}; {HOW}")
        try:
            facts = self.client.run(wk.facts, workers=runners)
        except Exception as e:  # a worker that left while asked, one that cannot import netrig
            raise ClusterError(f"cluster {self.address}: asking its workers what they run failed: "
                               f"{type(e).__name__}: {e}") from None
        problems, good = [], {}
        for addr in sorted(runners):
            name = str(info[addr].get("name", addr))[:100]
            try:
                f = reply.check_facts(facts.get(addr))
            except reply.BadReply as e:
                problems.append(f"worker {name} ({addr}): what it says of itself was refused: {e}")
                continue
            good[addr] = {"name": name, **f}
            who = f"worker {name} ({f['hostname']}, {addr})"
            if f["netrig"] != __version__:
                problems.append(f"{who} runs netrig {f['netrig']}, this machine {__version__}: "
                                "install the same netrig on every worker")
            if not f["root"]:
                problems.append(f"{who} is not root: a worker builds networks; start it as root")
            if f["missing"]:
                problems.append(f"{who}: {f['missing']}")
        if problems and strict:
            raise ClusterError(f"cluster {self.address}: " + "\n".join(problems))
        return good

    def describe(self) -> dict[str, Any]:
        """What meta.json says of the cluster."""
        return {"address": self.address, "workers": [
            {k: f[k] for k in ("name", "hostname", "kernel", "cpu", "cpus", "netrig")}
            for _, f in sorted(self.workers.items())]}

    def run(self, scenario: Scenario, out: Path, todo: list[Todo], shown: Display, tally: Tally) -> None:
        """Runs `todo` on the workers (an executor: executor.py); each run's files are
        written and accounted (tally) as it comes back."""
        from distributed import Event, as_completed

        started: queue.Queue[dict[str, Any]] = queue.Queue()
        tries: dict[str, list[str]] = {}
        self.client.subscribe_topic(wk.TOPIC, lambda ev: started.put(ev[1]))
        # The stop event's name is a secret of this head's and the tasks' (not the
        # campaign's id, which every task's key shows).
        stop_name = wk.stop_event(secrets.token_hex(16))
        stop = Event(stop_name, client=self.client)
        settle = units.seconds(scenario.points[0].spec.settle) if scenario.points else 0.0
        futures = {self.client.submit(wk.do_run, t.point, t.rep, t.seed, t.rid, self.id, __version__, settle,
                                      stop_name, key=f"netrig-{self.id}-{t.rid}", pure=False, retries=0,
                                      resources={wk.RESOURCE: 1}): t for t in todo}
        by_rid = {t.rid: t for t in todo}
        npoints = len(scenario.points)
        pending = as_completed(futures, loop=self.client.loop)

        def starts() -> None:
            while not started.empty():
                ev = started.get()  # (a worker's word: each field checked)
                if not isinstance(ev, dict) or ev.get("campaign") != self.id or ev.get("run") not in by_rid:
                    continue
                name, host = (str(ev.get(k, "?"))[:100] for k in ("name", "hostname"))
                tries.setdefault(ev["run"], []).append(name)
                t = by_rid[ev["run"]]
                shown.start_run(t.k, t.point.index, npoints, t.point.params, t.rep, scenario.repeat,
                                where=f"{name} ({host})")

        def finish(fut: Any) -> None:
            t = futures.pop(fut)
            time.sleep(0.05)  # the start event travels by the scheduler too
            starts()
            note = self._record(fut, t, out, tally, tries.get(t.rid, []))
            shown.end_run(t.k, t.point.length_s, 0.0, note)

        down_since: float | None = None
        try:
            while not pending.is_empty():
                starts()
                for fut in pending.next_batch(block=False):  # (each of them: it is not given again)
                    finish(fut)
                tally.check()
                # A scheduler that went away (or a connection that a refused message
                # closed) is tried again by Dask, and its futures never end: not forever.
                if self.client.status == "running":
                    down_since = None
                elif (down_since := down_since or time.monotonic()) < time.monotonic() - LOST_S:
                    raise ClusterError(f"cluster {self.address}: lost the scheduler: no connection for "
                                       f"{LOST_S:.0f} s ({len(futures)} runs had not come back; those that "
                                       "did are written; `--resume` runs the rest when it is back)")
                time.sleep(0.1)
        except ClusterError:  # nobody to tell the runs going on to stop
            self.client.cancel(list(futures))
            raise
        except BaseException:  # Ctrl-C, SIGTERM, three failures in a row
            stop.set()  # runs going on tear down; one starting now does not start
            starts()
            waiting = [f for f, t in futures.items() if t.rid not in tries and not f.done()]
            self.client.cancel(waiting)
            for f in waiting:
                futures.pop(f)
            deadline = time.monotonic() + STOP_WAIT_S
            while futures and time.monotonic() < deadline:
                for fut in [f for f in futures if f.done()]:  # what came back is kept
                    finish(fut)
                time.sleep(0.1)
            self.client.cancel(list(futures))
            raise
        finally:
            self.client.unsubscribe_topic(wk.TOPIC)

    def _record(self, fut: Any, t: Any, out: Path, tally: Any, tries: list[str]) -> str:
        """Writes what came back for run t (its files, or a failed run.json); its note."""
        from distributed import KilledWorker

        lost = tries[:-1]  # attempts whose worker died: their halves never came back
        try:
            got = fut.result()
        except KilledWorker:
            return tally.crashed(t, f"its worker died {len(tries) or 'several'} times while running it "
                                 f"({', '.join(tries) or 'workers unknown'}); the scheduler gave up "
                                 "(distributed.scheduler.allowed-failures); --resume runs it again",
                                 {"worker": {"lost": tries}})
        except Exception as e:
            if "scheduler-connection-lost" in str(e):  # (distributed's FutureCancelledError)
                return tally.crashed(t, f"the cluster could not run it: the head lost the scheduler "
                                     f"({self.address}) while it ran: it stopped, or the network between "
                                     "them failed; --resume runs it again")
            if e.args and isinstance(e.args[0], bytes):  # a worker's exception not unpickled here
                return tally.crashed(t, "the cluster could not run it: its worker raised an exception "
                                     "the head does not unpickle (see the worker's log)")
            return tally.crashed(t, f"the cluster could not run it: {type(e).__name__}: {str(e)[:2000]}")
        try:
            r = reply.read(got, t.rid, t.point.index, t.rep, t.seed, t.point.params)
        except reply.BadReply as e:  # nothing of it is written
            who = {**e.worker, **({"lost": lost} if lost else {})}
            return tally.crashed(t, f"what its worker sent back was refused: {e}", {"worker": who})
        who = {**r.worker, **({"lost": lost} if lost else {})}
        if r.stopped:  # it was to start as the campaign stopped: not run
            return ""
        if r.error is not None:
            return tally.crashed(t, r.error, {"worker": who})
        assert r.doc is not None
        try:
            record = from_doc(r.doc, t.point)  # (its shape checked again, as a record)
            record.sections["worker"] = who
            safefs.remove_tree(out, f"runs/{t.rid}")
            for rel, data in r.files.items():
                if rel != "run.json":
                    safefs.write(out, f"runs/{t.rid}/{rel}", data)
            doc = write_run(out, record)
        except (OSError, ValueError, NetrigError) as e:  # (safefs.UnsafePath: a link on the way)
            return tally.crashed(t, f"its files could not be written here: {e}", {"worker": who})
        note = tally.ran(t, doc)
        if lost:
            note = "\n".join(x for x in (note, f"run {t.rid}: its worker {', '.join(lost)} died while "
                                         f"running it; its half was discarded and "
                                         f"{who.get('name', 'another')} ran it again") if x)
        return note

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            guard = getattr(self, "_guard", None)
            if guard is not None:
                self._guard = None
                guard.__exit__(None, None, None)


def status(address: str, cert: str | None = None) -> list[dict[str, Any]]:
    """Each netrig worker of the cluster: its name, address and facts, and whether it is
    running a run now."""
    c = Campaign(address, wait_s=0.0, strict=False, cert=cert)  # (listed, whatever they run)
    try:
        busy = c.client.processing()
        return [{"address": a, **f, "busy": bool(busy.get(a))} for a, f in sorted(c.workers.items())]
    finally:
        c.close()


def issue(name: str, out: str) -> tls.Bundle:
    """`netrig cluster cert NAME -o FILE`: a bundle for a worker or head elsewhere."""
    b = tls.issue(tls.cluster_dir(), name)
    tls.write_bundle(b, Path(out))
    return b


def serve_scheduler(port: int, host: str | None) -> None:
    """Runs a Dask scheduler for campaigns (`netrig cluster scheduler`) until it is
    stopped: TLS with the cluster's certificates (the CA and the scheduler's made the
    first time), on loopback unless `host` says which address to listen on."""
    import dask

    d = tls.cluster_dir(create=True)
    bundle = tls.scheduler_bundle(d)
    where = host or "127.0.0.1"
    shown = f"tls://{f'[{where}]' if ':' in where else where}:{port or 'PORT'}"
    cfg = {**bundle.dask_config(), **NO_ROUTES,
           "temporary-directory": str(safefs.makedirs(d, "scratch", safefs.PRIVATE))}
    if "DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL" not in os.environ:
        cfg["distributed.scheduler.worker-ttl"] = WORKER_TTL
    dask.config.set(cfg)
    print(f"netrig: a scheduler on {where}, port {port or 'any'}, TLS with the cluster's certificates "
          f"(CA in {d}). On this machine: 'sudo netrig cluster worker {shown}' and 'netrig run SCENARIO "
          f"--cluster {shown}'; for another machine: 'netrig cluster cert NAME -o NAME.pem', copied "
          "there and given with --cert NAME.pem. Whoever holds a certificate of this CA can run "
          "commands as root on every worker.", file=sys.stderr, flush=True)
    _dask("distributed.cli.dask_scheduler", "netrig cluster scheduler",
          ["--port", str(port), "--host", where, "--protocol", "tls", *QUIET_HTTP])


def serve_worker(address: str, name: str | None, host: str | None, cert: str | None) -> None:
    """Runs a netrig worker of the scheduler at `address` (`netrig cluster worker`)
    until it is stopped: its certificate (`cert`, else as exp/cluster_tls.find says), and
    it and its nanny listening on `host`, else on the address that reaches the scheduler."""
    import dask

    url, shost, _ = parse_address(address)
    bundle = tls.find(cert, f"worker {name or socket.gethostname()}")
    listen = host or local_address(shost)
    work = safefs.makedirs(Path(os.environ.get("NETRIG_RUN_DIR", "/run/netrig")), "cluster-worker",
                           safefs.PRIVATE)  # (not /tmp/dask-scratch-space, which anyone may make first)
    dask.config.set({**bundle.dask_config(), **NO_ROUTES, "temporary-directory": str(work)})
    argv = [url, *WORKER_ARGS, *QUIET_HTTP, "--host", f"[{listen}]" if ":" in listen else listen]
    argv += ["--name", name] if name else []
    _dask("distributed.cli.dask_worker", "netrig cluster worker", argv)


def _dask(module: str, prog: str, argv: list[str]) -> None:
    """Runs Dask's command `module` here, with the configuration set above (a nanny hands
    it, and its Security, to the worker process it starts)."""
    import importlib

    sys.stdout.flush()
    sys.stderr.flush()
    importlib.import_module(module).main.main(args=argv, prog_name=prog, standalone_mode=True)
