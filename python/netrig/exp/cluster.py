"""Campaigns on a cluster: each run handed to a worker, every file gathered here.

`netrig run SCENARIO --cluster tcp://HOST:8786` (or NETRIG_CLUSTER) connects, as a
client, to a Dask distributed scheduler whose workers netrig started (`netrig cluster
worker`: one run at a time, root, the same netrig). The head builds nothing and needs no
root: it checks the workers (netrig's version, root, netrig-link), submits every run not
yet done, and as each comes back writes its files into `out/runs/RID/` (run.json last,
with the worker that ran it), so the report, `--resume`, `compare` and the CSV read a
campaign's directory as a local one. The runs' order, seeds and files are a local run's.

Dask does the hard parts: placing runs on free workers, and giving a run whose worker
died (a crash, a lost machine: `worker-ttl`) to another; the lost attempt never reaches
here. A run the scheduler gave up on (`allowed-failures` worker deaths) is recorded as
failed and `--resume` runs it again. Ctrl-C (or SIGTERM) sets the campaign's stop event:
runs going on tear down and come back "interrupted", within STOP_WAIT_S, and the rest
are cancelled.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from netrig import __version__, safefs, units
from netrig.errors import NetrigError
from netrig.exp import results as res
from netrig.exp import worker as wk

CONNECT_S = 10.0
WORKERS_WAIT_S = 30.0  # for a first worker to join a scheduler that has none yet
STOP_WAIT_S = 30.0  # for the runs going on to tear down when the campaign is stopped
HOW = "start one on each machine with `netrig cluster worker ADDRESS` (as root)"
# A worker takes one run at a time (one thread, one `run` resource) and, each time it
# starts, removes the labs a crash left (the preload); a worker silent for WORKER_TTL (a
# lost machine) has its run given to another.
WORKER_ARGS = ["--nthreads", "1", "--nworkers", "1", "--resources", f"{wk.RESOURCE}=1",
               "--preload", "netrig.exp.worker"]
WORKER_TTL = "30s"


class ClusterError(NetrigError):
    pass


class Campaign:
    """A connection to a cluster, checked, that runs a campaign's runs on its workers."""

    def __init__(self, address: str, wait_s: float = WORKERS_WAIT_S, strict: bool = True) -> None:
        from distributed import Client

        self.address = address
        self.id = uuid.uuid4().hex[:12]
        try:
            self.client = Client(address, timeout=CONNECT_S, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as e:
            raise ClusterError(f"cluster {address}: no scheduler answered within {CONNECT_S:.0f} s ({e}); "
                               "is `netrig cluster scheduler` running there, and is the address right "
                               "(tcp://HOST:PORT)?") from None
        try:
            self.workers = self._check(wait_s, strict)
        except BaseException:
            self.client.close()
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
            raise ClusterError(f"cluster {self.address}: no netrig worker joined within {wait_s:.0f} s{others}; {HOW}")
        try:
            facts = self.client.run(wk.facts, workers=runners)
        except Exception as e:  # a worker that left while asked, one that cannot import netrig
            raise ClusterError(f"cluster {self.address}: asking its workers what they run failed: "
                               f"{type(e).__name__}: {e}") from None
        problems = []
        for addr, f in sorted(facts.items()):
            who = f"worker {info[addr].get('name', addr)} ({f['hostname']}, {addr})"
            if f["netrig"] != __version__:
                problems.append(f"{who} runs netrig {f['netrig']}, this machine {__version__}: "
                                "install the same netrig on every worker")
            if not f["root"]:
                problems.append(f"{who} is not root: a worker builds networks; start it as root")
            if f["missing"]:
                problems.append(f"{who}: {f['missing']}")
        if problems and strict:
            raise ClusterError(f"cluster {self.address}: " + "\n".join(problems))
        return {a: {"name": str(info[a].get("name", a)), **facts[a]} for a in runners}

    def describe(self) -> dict[str, Any]:
        """What meta.json says of the cluster."""
        return {"address": self.address, "workers": [
            {k: f[k] for k in ("name", "hostname", "kernel", "cpu", "cpus", "netrig")}
            for _, f in sorted(self.workers.items())]}

    def run(self, scenario: Any, out: Path, todo: list[Any], shown: Any, tally: Any) -> None:
        """Runs `todo` (runner.Todo) on the workers; each run's files are written and
        accounted (tally) as it comes back."""
        from distributed import Event, as_completed

        started: queue.Queue[dict[str, Any]] = queue.Queue()
        tries: dict[str, list[str]] = {}
        self.client.subscribe_topic(wk.TOPIC, lambda ev: started.put(ev[1]))
        stop = Event(wk.stop_event(self.id), client=self.client)
        settle = units.seconds(scenario.points[0].spec.settle) if scenario.points else 0.0
        futures = {self.client.submit(wk.do_run, t.point, t.rep, t.seed, t.rid, self.id, __version__, settle,
                                      key=f"netrig-{self.id}-{t.rid}", pure=False, retries=0,
                                      resources={wk.RESOURCE: 1}): t for t in todo}
        by_rid = {t.rid: t for t in todo}
        npoints = len(scenario.points)
        pending = as_completed(futures, loop=self.client.loop)

        def starts() -> None:
            while not started.empty():
                ev = started.get()
                if ev.get("campaign") != self.id or ev["run"] not in by_rid:
                    continue
                tries.setdefault(ev["run"], []).append(ev["name"])
                t = by_rid[ev["run"]]
                shown.start_run(t.k, t.point.index, npoints, t.point.params, t.rep, scenario.repeat,
                                where=f"{ev['name']} ({ev['hostname']})")

        def finish(fut: Any) -> None:
            t = futures.pop(fut)
            time.sleep(0.05)  # the start event travels by the scheduler too
            starts()
            note = self._record(fut, t, out, tally, tries.get(t.rid, []))
            shown.end_run(t.k, t.point.length_s, 0.0, note)

        try:
            while not pending.is_empty():
                starts()
                for fut in pending.next_batch(block=False):  # (each of them: it is not given again)
                    finish(fut)
                tally.check()
                time.sleep(0.1)
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
            return tally.crashed(t, f"the cluster could not run it: {type(e).__name__}: {e}")
        who = {k: got["worker"][k] for k in ("name", "address", "hostname", "lab") if k in got["worker"]}
        if lost:
            who["lost"] = lost
        if got.get("stopped"):  # it was to start as the campaign stopped: not run
            return ""
        if "error" in got:
            return tally.crashed(t, got["error"], {"worker": who})
        files = got["files"]
        try:
            doc = json.loads(files.pop("run.json"))
            doc.pop("schema", None)
            doc["worker"] = who
            safefs.remove_tree(out, f"runs/{t.rid}")
            for rel, data in files.items():
                safefs.write(out, f"runs/{t.rid}/{rel}", data)
            res.write_json(out / "runs" / t.rid / "run.json", doc, out)
        except (OSError, ValueError, NetrigError) as e:  # (safefs.UnsafePath: a name out of the run's dir)
            return tally.crashed(t, f"its files could not be written here: {e}", {"worker": who})
        note = tally.ran(t, doc)
        if lost:
            note = "\n".join(x for x in (note, f"run {t.rid}: its worker {', '.join(lost)} died while "
                                         f"running it; its half was discarded and {who['name']} ran it again") if x)
        return note

    def close(self) -> None:
        self.client.close()


def status(address: str) -> list[dict[str, Any]]:
    """Each netrig worker of the cluster: its name, address and facts, and whether it is
    running a run now."""
    c = Campaign(address, wait_s=0.0, strict=False)  # (listed, whatever they run: `status` is for finding out)
    try:
        busy = c.client.processing()
        return [{"address": a, **f, "busy": bool(busy.get(a))} for a, f in sorted(c.workers.items())]
    finally:
        c.close()


def exec_scheduler(port: int, host: str | None) -> None:
    """Becomes a Dask scheduler for campaigns (`netrig cluster scheduler`), on loopback
    unless `host` says which address to listen on: whoever reaches it can run code as
    root on every worker (Dask's scheduler has no authentication of its own)."""
    env = dict(os.environ)
    env.setdefault("DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL", WORKER_TTL)
    where = host or "127.0.0.1"
    argv = ["distributed.cli.dask_scheduler", "--port", str(port), "--no-dashboard", "--host", where]
    print(f"netrig: a scheduler on {where}, port {port}; start a worker on each machine with "
          f"'netrig cluster worker tcp://{where}:{port}', then 'netrig run SCENARIO --cluster "
          f"tcp://{where}:{port}'. Anyone who reaches this port can run commands as root on the "
          "workers: listen only on a network you trust.", file=sys.stderr)
    _become(argv, env)


def exec_worker(address: str, name: str | None, host: str | None) -> None:
    """Becomes a netrig worker of the scheduler at `address` (`netrig cluster worker`)."""
    argv = ["distributed.cli.dask_worker", address, *WORKER_ARGS, "--no-dashboard"]
    argv += ["--name", name] if name else []
    argv += ["--host", host] if host else []
    _become(argv, dict(os.environ))


def _become(argv: list[str], env: dict[str, str]) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", *argv], env)
