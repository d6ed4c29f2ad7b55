"""A cluster worker's side of a campaign: one run, on this machine, handed back whole.

A netrig worker is a Dask worker started by `netrig cluster worker ADDRESS`: one thread
and one `run` resource, so it takes one run at a time, and this module as its preload,
so each time it starts (a machine back from a crash, a worker its nanny restarted) it
first tears down the labs whose builder died (`netrig clean`).

`do_run` is the task the head submits for each run. It runs the run in a child process
of its own (`python -m netrig.exp.execute.worker DIR PARENT`, its own session) that writes the
run's directory under a private temporary DIR exactly as a local run would, then reads
every file back and returns them as bytes with the worker's facts; the head writes them
into its results directory. Nothing is written where the head looks until the whole run
is back, so a run lost with its worker leaves nothing half-done there: the scheduler
gives it to another worker. The child dies with the worker (PR_SET_PDEATHSIG: SIGTERM,
which tears its network down as Ctrl-C does); if both die at once the network is left
and the next start's clean removes it. The head stops a campaign by setting a Dask
Event the task watches (its name a secret the head hands the task): the child gets
SIGTERM and the run comes back "interrupted".

What goes back is plain data (names, bytes, texts: no object the head would unpickle),
within the bounds the head checks (exp/execute/cluster_reply.py); a run whose files exceed them
comes back as an error saying so. The preload refuses to serve a worker that does not
speak TLS (one started by other means than `netrig cluster worker`, without the
cluster's certificates): whoever reaches such a worker runs commands as root.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from netrig.exp.execute.cluster_reply import MAX_FILE_BYTES, MAX_RUN_BYTES

TOPIC = "netrig-runs"  # the workers' events the head subscribes to (a run started)
RESOURCE = "run"  # one per worker: one run at a time
PR_SET_PDEATHSIG = 1


def stop_event(secret: str) -> str:
    """The name of a campaign's stop event, from a secret only its head and tasks know."""
    return f"netrig-stop-{secret}"


def facts() -> dict[str, Any]:
    """What the head checks before it hands this worker a run, and what a run records
    of the machine that ran it."""
    from netrig import __version__
    from netrig._bins import binary
    from netrig.exp.record.files import run_host

    h = run_host()
    try:
        binary("netrig-link")
        bins = ""
    except Exception as e:  # what is missing is said to the head, not raised here
        bins = str(e)
    return {"netrig": __version__, "hostname": h["hostname"], "kernel": h["kernel"],
            "cpu": h["cpu"], "cpus": h["cpus"], "root": os.geteuid() == 0, "missing": bins}


def do_run(point: Any, rep: int, seed: int, rid: str, campaign: str, version: str,
           settle_s: float, stop_name: str) -> dict[str, Any]:
    """Runs one run here; returns {"files": {relpath: bytes}, "worker": {...}}, or when
    the run could not run at all {"error": why, ...}, or {"stopped": True, ...} when the
    campaign was stopped before it began. `version`: the head's netrig (a worker that
    joined after the head's check and runs another is refused here); `settle_s`: the
    pause between this worker's runs, as between a local run's; `stop_name`: the
    campaign's stop event."""
    from distributed import Event, get_worker

    global _last_end
    w = get_worker()
    me = {"name": str(w.name), "address": w.address, **facts()}
    if me["netrig"] != version or not me["root"] or me["missing"]:
        return {"worker": me, "error": f"worker {me['name']} ({me['hostname']}) cannot run it: " + (
            f"it runs netrig {me['netrig']}, the head {version}" if me["netrig"] != version
            else "it is not root" if not me["root"] else me["missing"])}
    stop = Event(stop_name)
    if _stopped(stop):  # the campaign stopped while this run waited for a worker
        return {"stopped": True, "worker": me}
    time.sleep(max(0.0, settle_s - (time.monotonic() - _last_end)))
    w.log_event(TOPIC, {"campaign": campaign, "run": rid, "name": me["name"],
                        "hostname": me["hostname"], "event": "start"})
    tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{rid}-"))
    child = None
    stopped = False
    try:
        with open(tmp / "child.log", "wb") as log:
            child = subprocess.Popen([sys.executable, "-m", "netrig.exp.execute.worker", str(tmp), str(os.getpid())],
                                     stdin=subprocess.PIPE, stdout=log, stderr=log, start_new_session=True)
            (tmp / "child.pid").write_text(str(child.pid))
            assert child.stdin is not None
            try:
                child.stdin.write(pickle.dumps((point, rep, seed, rid)))
                child.stdin.close()
            except BrokenPipeError:  # it died first: its log says why
                pass
            asked = 0.0
            while child.poll() is None:
                time.sleep(0.02)
                if not stopped and time.monotonic() - asked > 0.5:  # (a round trip to the scheduler)
                    asked = time.monotonic()
                    if _stopped(stop):
                        child.send_signal(signal.SIGTERM)  # its run tears down and says "interrupted"
                        stopped = True
        me["lab"] = f"nx{child.pid % 100000}"
        rdir = tmp / "runs" / rid
        if (rdir / "run.json").is_file():
            found = [p for p in sorted(rdir.rglob("*")) if p.is_file() and not p.is_symlink()]
            sizes = {str(p.relative_to(rdir)): p.stat().st_size for p in found}
            big = [f"{n} ({b} bytes)" for n, b in sizes.items() if b > MAX_FILE_BYTES]
            if big or sum(sizes.values()) > MAX_RUN_BYTES:
                return {"worker": me, "error": f"its files are too large to send to the head ("
                        f"{', '.join(big[:3]) or f'{sum(sizes.values())} bytes together'}; at most "
                        f"{MAX_FILE_BYTES} bytes a file, {MAX_RUN_BYTES} a run): a smaller capture "
                        "(size:), or run it with --local"}
            return {"files": {str(p.relative_to(rdir)): p.read_bytes() for p in found}, "worker": me}
        if stopped:  # stopped before its flows began: not run, as a local run stopped then
            return {"stopped": True, "worker": me}
        said = (tmp / "error.txt").read_text() if (tmp / "error.txt").exists() else ""
        if not said:
            rc = child.returncode
            tail = (tmp / "child.log").read_text(errors="replace").strip()[-500:]
            said = (f"its process ended by {signal.Signals(-rc).name}" if rc < 0
                    else f"its process exited {rc}") + (f": {tail}" if tail else "")
        _clean(w.name)  # a run killed outright left its lab
        return {"error": said, "worker": me}
    finally:
        if child is not None and child.poll() is None:  # this task failed (the scheduler gone...)
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        _last_end = time.monotonic()
        shutil.rmtree(tmp, ignore_errors=True)


_last_end = 0.0  # when this worker's last run ended (monotonic)
TMP_PREFIX = "netrig-run-"


def _stopped(stop: Any) -> bool:
    try:
        return bool(stop.is_set())
    except Exception:  # the scheduler did not answer this time: asked again later
        return False


def _clean(name: Any) -> None:
    """Tears down the labs on this machine whose builder died (none of a live run's)."""
    from netrig.lab.build import clean

    for prefix, why, errors in clean(orphans_only=True):
        print(f"netrig worker {name}: removed lab '{prefix}' ({why})"
              + (f": {'; '.join(errors)}" if errors else ""), file=sys.stderr, flush=True)


def _die_with(parent: int) -> None:
    """SIGTERM when the worker that started us dies (a SIGKILLed worker included)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # it died before the wish was made
        os.kill(os.getpid(), signal.SIGTERM)


def child(argv: list[str]) -> int:
    from netrig.exp.execute import runner
    from netrig.exp.execute.campaign import on_sigterm
    tmp, parent = Path(argv[0]), int(argv[1])
    signal.signal(signal.SIGTERM, on_sigterm)
    _die_with(parent)
    point, rep, seed, rid = pickle.loads(sys.stdin.buffer.read())
    try:
        runner.run_one(point, rep, seed, tmp, rid)
    except KeyboardInterrupt:  # stopped: its run.json, if any, says "interrupted"
        return 130
    except Exception as e:  # the head records the run as failed, with this
        (tmp / "error.txt").write_text(str(e) or type(e).__name__)
        return 3
    return 0


def dask_setup(worker: Any) -> None:
    """The preload's hook, run each time the worker starts: refuses to serve without
    root, removes the labs a crash left (as `netrig clean`, but only those whose builder
    died) and the run directories of runs whose process is gone."""
    if os.geteuid() != 0:
        raise SystemExit("netrig cluster worker: a worker builds networks, so it runs as root")
    if not str(worker.address).startswith("tls://") or not worker.security.require_encryption:
        raise SystemExit(f"netrig cluster worker: this worker listens on {worker.address} without "
                         "TLS, where whoever reaches it runs commands as root: start it with "
                         "`netrig cluster worker tls://SCHEDULER:PORT` (the cluster's certificates)")
    t = time.monotonic()
    _clean(worker.name)
    for d in Path(tempfile.gettempdir()).glob(f"{TMP_PREFIX}*"):
        try:
            pid = int((d / "child.pid").read_text())
        except (OSError, ValueError):
            continue  # (a run starting on another worker here: not yet ours to judge)
        if not Path(f"/proc/{pid}").exists():
            shutil.rmtree(d, ignore_errors=True)
    if time.monotonic() - t > 1:
        print(f"netrig worker {worker.name}: cleaning took {time.monotonic() - t:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(child(sys.argv[1:]))
