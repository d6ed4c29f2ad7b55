"""Ending a child: SIGTERM first, SIGKILL after the grace period, always reaped; and
ending processes by PID and start time (netrig.procs.stop), waited for through pidfds."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time

import pytest
from netrig import procs
from netrig.procs import end


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_and_reaped():
    p = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                          "signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    t = time.monotonic()
    end(p, grace_s=0.3)
    assert p.returncode == -signal.SIGKILL and time.monotonic() - t < 10
    q = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    end(q)
    assert q.returncode == -signal.SIGTERM
    end(q)  # an ended one: nothing


def _ready(code: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", f"import signal, time\n{code}\nprint('ready', flush=True)\n"
                          "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def test_stop_waits_until_each_has_exited_and_names_those_it_killed():
    stubborn = _ready("signal.signal(signal.SIGTERM, signal.SIG_IGN)")
    polite = _ready("")
    mine = [procs.here(stubborn.pid, "stubborn"), procs.here(polite.pid, "polite")]
    t = time.monotonic()
    done = procs.stop(mine, grace_s=0.3)
    assert [p.name for p in done.killed] == ["stubborn"] and done.left == []
    assert time.monotonic() - t < 10
    # exited: their pidfds said so before stop returned (they are zombies of ours now)
    assert stubborn.wait(timeout=0.1) == -signal.SIGKILL and polite.wait(timeout=0.1) == -signal.SIGTERM
    assert procs.stop(mine) == procs.Stopped([], [])  # nothing left to stop


def test_stop_never_signals_another_process_that_has_the_pid():
    p = _ready("")
    wrong = procs.Proc(p.pid, procs.start_time(p.pid) + 1, "an older process of that number")
    assert procs.stop([wrong], grace_s=0.1) == procs.Stopped([], [])
    assert p.poll() is None
    procs.stop([procs.here(p.pid, "it")], sig=signal.SIGKILL)
    assert p.wait(timeout=0.1) == -signal.SIGKILL


def _daemon() -> procs.Proc:
    """A process that forks away from its starter, as FRR's daemons do (its parent
    exits at once): its PID and start time."""
    out = subprocess.run(["sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True,
                         check=True)
    pid = int(out.stdout)
    p = procs.here(pid, "sleep")
    assert p is not None
    return p


def test_a_daemon_started_while_adopting_is_ours_and_leaves_no_zombie_once_stopped():
    with procs.adopting():
        p = _daemon()
    later = None
    try:
        assert procs._parent(p.pid) == os.getpid()  # adopted, not PID 1's
        later = _daemon()  # started after: PID 1's (or whoever collected orphans before us)
        assert procs._parent(later.pid) != os.getpid()
        done = procs.stop([p, later], grace_s=5)
        assert done.left == []
        procs.collect([p, later])
        assert procs.start_time(p.pid) != p.started  # gone from /proc, not <defunct>
        assert procs.reaped([later], timeout=10) == []  # PID 1 collects its own
    finally:
        for x in (p, later):
            if x is not None and procs.start_time(x.pid) == x.started:
                os.kill(x.pid, signal.SIGKILL)


def test_stop_reads_pidfds_past_select_s_limit_of_1024():
    # A lab of 1,000 routers holds 2,000 pidfds at once: their numbers pass FD_SETSIZE.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"the open file limit ({hard}) leaves no fd past 1024")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    null = os.open(os.devnull, os.O_RDONLY)
    fillers = []
    try:
        while (fd := os.dup(null)) < 1030:
            fillers.append(fd)
        os.close(fd)
        polite = _ready("")
        done = procs.stop([procs.here(polite.pid, "polite")], grace_s=5)
        assert done == procs.Stopped([], [])
        assert polite.wait(timeout=1) == -signal.SIGTERM
    finally:
        for fd in fillers:
            os.close(fd)
        os.close(null)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


STACK = """\
[<0>] __schedule+0x3c1/0x1090
[<0>] schedule+0x27/0xf0
[<0>] schedule_preempt_disabled+0x15/0x30
[<0>] __mutex_lock.constprop.0+0x3b7/0x6d0
[<0>] rtnl_lock+0x15/0x20
[<0>] ip_mc_drop_socket+0x2a/0xb0
[<0>] inet_release+0x3a/0x80
[<0>] __sock_release+0x3d/0xb0
[<0>] do_exit+0x2ce/0xab0
[<0>] do_syscall_64+0x71/0x280
[<0>] entry_SYSCALL_64_after_hwframe+0x76/0x7e
"""


def test_where_a_task_waits_is_its_innermost_frames_past_the_scheduler():
    assert procs.kernel_frames(STACK) == "__mutex_lock.constprop.0 < rtnl_lock < ip_mc_drop_socket < inet_release"
    assert procs.kernel_frames(STACK, most=2) == "__mutex_lock.constprop.0 < rtnl_lock"
    assert procs.kernel_frames("[<0>] do_syscall_64+0x71/0x280\n\n") == ""
    assert procs.kernel_frames("") == ""


def test_where_a_sleeping_child_waits_in_the_kernel_is_read_from_proc():
    p = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        readable = os.access(f"/proc/{p.pid}/task/{p.pid}/stack", os.R_OK) and os.geteuid() == 0
        # (after its print it may still be on its way into the sleep: looked at again)
        deadline = time.monotonic() + 10
        where = procs.in_kernel(p.pid)
        while readable and "nanosleep" not in where and time.monotonic() < deadline:
            time.sleep(0.01)
            where = procs.in_kernel(p.pid)
        assert ("nanosleep" in where) if readable else where == "", where
    finally:
        end(p, grace_s=0.1)
    assert procs.in_kernel(p.pid) == ""  # gone: nothing to say
