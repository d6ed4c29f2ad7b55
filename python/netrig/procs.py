"""Ending processes: a child by its Popen (SIGTERM, a grace period, then SIGKILL; always
reaped), and processes netrig did not start itself (a lab's daemons, found by PID) by
their PID and start time, waited for through pidfds until each has exited.

"Exited" is the kernel's word (what a pidfd reports): every thread of the process has
ended and released what it held (sockets, files, its namespaces). Its entry may stay in
/proc as a zombie until its parent collects it; the lab's daemons are orphans, so that
parent is PID 1, which netrig does not control (in a minimal container it collects
about once a second: `ps` then still lists them, as <defunct>).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def end(p: subprocess.Popen, grace_s: float = 3.0) -> None:
    """Stops `p` (if it still runs) by SIGTERM, then SIGKILL after `grace_s`; waits for it."""
    if p.poll() is None:
        p.terminate()
    try:
        p.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(timeout=grace_s)


@dataclass(frozen=True)
class Proc:
    """A process by its PID and start time (/proc/PID/stat field 22, clock ticks after
    boot): the pair names one process, never a later one that reuses the number."""

    pid: int
    started: int
    name: str  # what a person reads: "bgpd of r12", "netrig-link", "sleep in lab-h1"


def start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat, whatever the process's state (None: no such PID)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[-1].split()[19])


def here(pid: int, name: str) -> Proc | None:
    """The process `pid` as it is now (None if there is none)."""
    started = start_time(pid) if pid > 0 else None
    return None if started is None else Proc(pid, started, name)


@dataclass
class Stopped:
    """What `stop` did: the processes it had to SIGKILL, and any it could not end."""

    killed: list[Proc]
    left: list[Proc]


KILL_WAIT_S = 5.0  # how long `stop` waits after SIGKILL (a process in the kernel's D state)


def stop(procs: list[Proc], grace_s: float = 5.0, kill_wait_s: float = KILL_WAIT_S,
         sig: int = signal.SIGTERM) -> Stopped:
    """Sends `sig` to each process of `procs` that is still the one named (PID and start
    time) and has not exited, waits up to `grace_s` for them all to exit, SIGKILLs the
    rest and waits up to `kill_wait_s` again. Returns only when each has exited, or
    that bound passed (those are `left`); `killed`: those SIGKILLed. `sig` SIGKILL: no
    grace (every one still there is killed)."""
    fds: dict[int, Proc] = {}
    try:
        for p in procs:
            fd = _pidfd(p)
            if fd is not None:
                fds[fd] = p
        for fd in fds:
            _send(fd, sig)
        if sig != signal.SIGKILL:
            _wait(fds, grace_s)
        killed = list(fds.values())
        for fd in fds:
            _send(fd, signal.SIGKILL)
        _wait(fds, kill_wait_s)
        return Stopped(killed, list(fds.values()))
    finally:
        for fd in fds:
            os.close(fd)
        fds.clear()


# Frames of /proc/PID/stack that say only that a task sleeps or entered the kernel.
_SLEEP_FRAMES = ("__schedule", "schedule", "io_schedule", "do_syscall_64", "entry_SYSCALL",
                 "__x64_sys_", "x64_sys_call", "__do_sys_", "ret_from_fork")


def kernel_frames(stack: str, most: int = 4) -> str:
    """/proc/PID/stack's text ("[<0>] rtnl_lock+0x15/0x20", a frame a line, innermost
    first) as its `most` innermost frames that say what the task waits for: "a < b"."""
    names = []
    for line in stack.splitlines():
        name = line.split("]", 1)[-1].strip().split("+", 1)[0]
        if name and not name.startswith(_SLEEP_FRAMES):
            names.append(name)
    return " < ".join(names[:most])


def in_kernel(pid: int, tasks: int = 64) -> str:
    """Where the threads of `pid` wait in the kernel: each distinct `kernel_frames` of
    /proc/PID/task/*/stack (root's to read; at most `tasks` threads), "; " between them,
    "" if none can be read. What a process still there after SIGKILL is blocked on."""
    seen: list[str] = []
    try:
        tids = sorted(os.listdir(f"/proc/{pid}/task"), key=int)[:tasks]
    except (OSError, ValueError):
        return ""
    for tid in tids:
        try:
            where = kernel_frames(Path(f"/proc/{pid}/task/{tid}/stack").read_text())
        except OSError:
            continue
        if where and where not in seen:
            seen.append(where)
    return "; ".join(seen)


REAP_WAIT_S = 3.0  # how long `reaped` waits for PID 1 to collect exited orphans
_PR_SET_CHILD_SUBREAPER = 36


_adopting = 0  # how many `adopting` blocks are open (threads start daemons at once)
_adopting_lock = threading.Lock()


@contextmanager
def adopting() -> Iterator[None]:
    """Within it, this process collects the orphans of its descendants (the kernel's
    child subreaper) instead of PID 1: a daemon started here (FRR's fork away from their
    starter) becomes our child, so when it exits `collect` ends its zombie at once (PID 1
    may take a second). Only within: orphans of later (an nginx worker whose master was
    killed) go to PID 1 as ever. Without prctl (not Linux): nothing."""
    global _adopting
    with _adopting_lock:
        if _adopting == 0:
            _subreaper(1)
        _adopting += 1
    try:
        yield
    finally:
        with _adopting_lock:
            _adopting -= 1
            if _adopting == 0:
                _subreaper(0)


def _subreaper(on: int) -> None:
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, on, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def collect(procs: list[Proc]) -> None:
    """Collects those of `procs` that are this process's exited children (daemons it
    adopted: `adopting`), so that they leave /proc now. Only for processes that no
    subprocess.Popen of ours owns (their Popen would lose its exit status)."""
    me = os.getpid()
    for p in procs:
        if start_time(p.pid) == p.started and _parent(p.pid) == me:
            try:
                os.waitpid(p.pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def reaped(procs: list[Proc], timeout: float = REAP_WAIT_S) -> list[Proc]:
    """Waits until none of `procs` is in /proc any more (an exited orphan stays there, a
    zombie, until PID 1 collects it: at once under systemd, about once a second in some
    containers), at most `timeout`; returns those still listed then. `ps` and `pgrep`
    list zombies, so a lab is gone for whoever looks only once they are collected."""
    deadline = time.monotonic() + timeout
    me = os.getpid()
    while True:  # (this process's own children are its to collect: not waited for here)
        left = [p for p in procs if start_time(p.pid) == p.started and _parent(p.pid) != me]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.02)


def _pidfd(p: Proc) -> int | None:
    """A pidfd of `p` if it is still that process and has not exited, else None."""
    try:
        fd = os.pidfd_open(p.pid)
    except (ProcessLookupError, OSError):
        return None
    # Opened first, checked second: the PID cannot be reused while the pidfd is held
    # unexited, so a matching start time now means the pidfd is that process's.
    if start_time(p.pid) != p.started or _exited(fd):
        os.close(fd)
        return None
    return fd


def _exited(fd: int) -> bool:
    # poll, not select: a lab's thousands of pidfds go past select's FD_SETSIZE (1024).
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def _send(fd: int, sig: int) -> None:
    try:
        signal.pidfd_send_signal(fd, sig)
    except ProcessLookupError:
        pass


def _wait(fds: dict[int, Proc], timeout: float) -> None:
    """Until every pidfd in `fds` says its process exited (each removed and closed as it
    does) or `timeout` passes."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    deadline = time.monotonic() + timeout
    while fds:
        left_ms = (deadline - time.monotonic()) * 1000
        if left_ms <= 0:
            return
        for fd, _ in poller.poll(left_ms):
            poller.unregister(fd)
            os.close(fd)
            fds.pop(fd, None)
