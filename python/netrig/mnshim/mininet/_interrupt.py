"""A node's ^C that reaches its command (what `NodeShell.sendInt` adds to Mininet's
write of chr(3) to the node's terminal). Mininet has no such module.

The terminal sends SIGINT to the shell's process group at once, but bash can swallow it
for a command that is starting: bash blocks SIGINT while it forks, and the forked child
runs bash's own SIGINT handler until it execs the program (bash 5.2's make_child). A ^C
that lands in that window is noted by a handler that exec then forgets, and the command
runs to its end (`sleep 30; echo never` ran 30 s and said never). The window lasts
microseconds on an idle host and as long as a busy one keeps the child waiting for a
core. So `Resend` looks at the shell's children from just before the ^C until its
command ends: a child that was still a copy of the shell then (forked, not yet its
program), or that was forked after it while none of the children of then has ended, is
sent SIGINT itself once it runs its program. Left alone, as Mininet leaves them: a child
that was already its program (the terminal's ^C reached it; one that catches ^C and
carries on is not sent a second), the commands bash runs after one has ended (a program
that took its ^C and exited 0 lets bash go on with the line), and the shell itself (it
would print a second prompt). Interrupted where Mininet's ^C would not reach: a subshell
of the line that traps ^C and then execs a program looks like bash's own fork.

A child is taken as ended only once it is gone or a zombie: while it execs, a child's
command line reads empty (the kernel has given it its new memory and not yet its
arguments), a window a busy host stretches to milliseconds; read as an end, it let the
program that child then became run to its end. Not ours to change: a ^C that reaches a
fork while it still runs bash's handler (after bash unblocked SIGINT in it, before the
subshell or program set its own) makes that child exit 130 without running anything,
and bash, seeing an exit rather than a death by SIGINT, goes on with the rest of the
line, as it does in a terminal (`( sleep 5 ); echo after` can print "after 130").
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable

from mininet.log import debug

WATCH_S = 30.0  # how long a starting command is looked for after the ^C
FIRST_LOOK_S, LAST_LOOK_S = 0.002, 0.1  # looks start this soon and slow down to this


def _argv(pid: int) -> bytes | None:
    """/proc's command line of pid, as the kernel shows it (None: pid is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return None


def _cmdline(pid: int) -> bytes | None:
    """pid's command line: b"" while it has none to show (in an exec, or leaving), None
    once it has ended (gone, or a zombie not yet reaped)."""
    cmd = _argv(pid)
    if cmd is None or cmd:
        return cmd
    stat = _stat(pid)  # (read after the command line: a child that ends meanwhile is ended)
    return None if stat is None or stat[0] in "ZX" else b""


def _stat(pid: int) -> tuple[str, int] | None:
    """pid's state letter and parent, from /proc (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def _parent(pid: int) -> int | None:
    stat = _stat(pid)
    return None if stat is None else stat[1]


def children(pid: int) -> dict[int, bytes] | None:
    """pid's children and their command lines (b"": one between programs, see _cmdline;
    None once pid is gone); a child that has ended and not yet been reaped is not one."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(x) for x in f.read().split()]
    except FileNotFoundError:
        if not os.path.exists(f"/proc/{pid}"):
            return None
        kids = [int(d) for d in os.listdir("/proc") if d.isdigit() and _parent(int(d)) == pid]
    except OSError:
        return None
    found = {k: _cmdline(k) for k in kids}
    return {k: c for k, c in found.items() if c is not None}


def _interrupt_child(parent: int, pid: int) -> bool:
    """SIGINT to pid if it is still parent's child (through a pidfd: never a reused pid);
    False if it has ended."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    try:
        if _parent(pid) != parent:
            return False
        signal.pidfd_send_signal(fd, signal.SIGINT)
        return True
    except ProcessLookupError:
        return False  # it ended between the look and the signal
    finally:
        os.close(fd)


class Resend:
    """Taken just before the ^C is written to `shell`'s terminal; `start()` after it
    watches (in a thread) while `running()` says the interrupted command still runs."""

    def __init__(self, shell: int, running: Callable[[], bool], watch_s: float = WATCH_S) -> None:
        self.shell, self.running, self.watch_s = shell, running, watch_s
        self.me = _cmdline(shell)
        before = children(shell) or {}
        self.then = set(before)  # the children when the ^C went out
        self.known = set(before)
        self.starting = {pid for pid, cmd in before.items() if cmd == self.me}
        self.one_ended = False  # bash may go on with the line: its new children are its own

    def start(self) -> None:
        if self.me:  # (none: the shell has just ended, nothing to watch)
            threading.Thread(target=self.watch, name=f"sendInt:{self.shell}", daemon=True).start()

    def look(self) -> bool:
        """One look at the shell's children; False once there is nothing left to watch."""
        now = children(self.shell)
        if now is None:
            return False
        # (/proc's list of children is reliable only for stopped ones, the kernel says: a
        # child not listed has ended only if it is no longer the shell's)
        for pid in (self.then | self.starting) - set(now):
            if _parent(pid) == self.shell and (cmd := _cmdline(pid)) is not None:
                now[pid] = cmd
        self.one_ended = self.one_ended or not self.then <= set(now)
        if not self.one_ended:
            self.starting |= set(now) - self.known
        self.known |= set(now)
        for pid in sorted(self.starting):
            cmd = now.get(pid)
            if cmd is None:
                self.starting.discard(pid)  # it ended (the ^C reached it)
            elif cmd and cmd != self.me:  # (b"": in its exec, look again)
                self.starting.discard(pid)
                if _interrupt_child(self.shell, pid):
                    debug(f"sendInt: SIGINT to {pid}, which was starting as the ^C went out\n")
        return bool(self.starting) or not self.one_ended

    def watch(self) -> None:
        end = time.monotonic() + self.watch_s
        pause = FIRST_LOOK_S
        while self.running() and time.monotonic() < end and self.look():
            time.sleep(pause)
            pause = min(pause * 2, LAST_LOOK_S)
