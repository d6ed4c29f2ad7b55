"""The netrig lab under a Mininet network, and which one new nodes belong to.

`MnLab` wraps `netrig.lab.live.LiveLab` with what Mininet's objects need: `ip` lines
queued while the network is being built and run in one batch per namespace (a
1,024-host build runs a few dozen `ip` processes, not thousands), the shells it
started, its hosts' cgroups, and the directory of the `tc` shim put first on every
node's PATH. `current()` is the lab a node made now joins: the network being built
(`using`), else a lab of its own for nodes made outside any network (Mininet's
low-level API), taken down at exit.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from netrig.lab import netns
from netrig.lab.live import LiveLab, free_prefix
from netrig.lab.state import LabError


class MnLab(LiveLab):
    def __init__(self, prefix: str | None = None) -> None:
        if os.geteuid() != 0:
            raise LabError("a Mininet network is built of network namespaces, which need root: "
                           "run it with sudo (e.g. sudo netrig mininet script.py)")
        super().__init__(prefix or os.environ.get("NETRIG_PREFIX") or free_prefix("mn"))
        self.queued: dict[str | None, list[str]] = {}
        self.batching = True  # until the network is built: ip lines wait for flush()
        self.shells: list[subprocess.Popen] = []
        self.cgroups: list[Cgroup] = []
        self.bindir = self._bindir()
        self.stopped = False

    def _bindir(self) -> Path:
        from netrig.lab import tcshim

        d = self.st.dir / "bin"
        tcshim.install(d)
        return d

    def log(self, ns: str | None, lines: list[str]) -> None:
        _say_lines(ns, lines)

    def say(self, ns: str | None, command: str) -> None:
        from mininet.log import debug

        debug(f"*** {ns or 'root namespace'}: {command}\n")

    def ip(self, ns: str | None, lines: list[str]) -> str:
        """Runs `ip` lines in ns (None: the root namespace); while building, queues them."""
        if self.batching or not self.realized:
            self.queued.setdefault(ns, []).extend(lines)
            return ""
        self.flush()
        _say_lines(ns, lines)
        try:
            netns.ip_batch(lines, ns)
        except netns.NetnsError as e:
            return str(e)
        return ""

    def flush(self) -> None:
        """Makes what is pending: namespaces, links, then the queued ip lines."""
        self._make()
        if not self.queued:
            return
        todo, self.queued = self.queued, {}
        for ns, lines in todo.items():
            _say_lines(ns, lines)
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda item: netns.ip_batch(item[1], item[0]), todo.items()))

    def built(self) -> None:
        self.realize()
        self.flush()
        self.batching = False

    def stop(self, notes: list[str] | None = None) -> list[str]:
        if self.stopped:
            return []
        self.stopped = True
        for name, pid in self.st.pids.items():
            self.say(None, f"kill {pid} ({name})")
        hangup(self.shells)
        for ns in self.st.namespaces:
            self.say(None, f"ip netns delete {ns}")
        errors = super().stop(notes)
        d = self.st.dir
        if not errors and d.is_dir() and not d.is_symlink() and not (d / "state.json").exists():
            shutil.rmtree(d, ignore_errors=True)  # the shims' bin/ and later netrig-links' dirs
        for cg in self.cgroups:
            errors += cg.remove()
        if self in _labs_alive:
            _labs_alive.remove(self)
        return errors


def hangup(shells: list[subprocess.Popen]) -> None:
    """Ends node shells as a closed terminal does: SIGHUP to each one's process group
    (an interactive bash ignores SIGTERM; its jobs go with it), SIGKILL after 2 s."""
    for shell in shells:
        if shell.poll() is None:
            try:
                os.killpg(shell.pid, signal.SIGHUP)
            except ProcessLookupError:
                pass
    for shell in shells:
        try:
            shell.wait(timeout=2)
        except subprocess.TimeoutExpired:
            shell.kill()
            shell.wait(timeout=2)


def _say_lines(ns: str | None, lines: list[str]) -> None:
    """Each `ip` line at Mininet's debug level, as Mininet logs each command it runs."""
    from mininet.log import debug

    for line in lines:
        debug(f"*** {ns or 'root namespace'}: ip {line}\n")


_active: list[MnLab] = []
_alone: MnLab | None = None
_labs_alive: list[MnLab] = []  # in the order they were made


def new(prefix: str | None = None) -> MnLab:
    lab = MnLab(prefix)
    _labs_alive.append(lab)
    _end_on_signals()
    return lab


def _ended(signum, frame) -> None:
    raise SystemExit(128 + signum)


def _end_on_signals() -> None:
    """SIGTERM and SIGHUP (a closed terminal: pexpect's close() sends it) end the program
    through SystemExit, so its networks are taken down (atexit), where their default
    action would kill it and leave them up. A handler the script set is left alone."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, _ended)


@contextmanager
def using(lab: MnLab) -> Iterator[MnLab]:
    _active.append(lab)
    try:
        yield lab
    finally:
        _active.pop()


def current() -> MnLab:
    """The lab a node made now belongs to: the network being built, else the network
    made last that still runs (sshd's `Node('root', inNamespace=False)` is linked into
    the network made before it), else a lab of its own."""
    global _alone
    if _active:
        return _active[-1]
    networks = [lab for lab in _labs_alive if lab is not _alone and not lab.stopped]
    if networks:
        return networks[-1]
    if _alone is None or _alone.stopped:
        _alone = new()
        _alone.batching = False
        _alone.realize()
    return _alone


def stop_all() -> list[str]:
    """Takes down every lab this process made and has not taken down (at exit, and
    `mininet.clean.cleanup()`)."""
    errors = []
    for lab in list(_labs_alive):
        errors += lab.stop()
    return errors


atexit.register(stop_all)


# Cgroups (CPULimitedHost).
V1 = Path("/sys/fs/cgroup")
V2 = Path("/sys/fs/cgroup")


def unified() -> bool:
    return (V2 / "cgroup.controllers").exists()


class Cgroup:
    """A host's cgroup: on v1 one directory per controller (cpu, cpuacct, cpuset), on v2
    one directory."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.v2 = unified()
        self.dirs: dict[str, Path] = {}
        if self.v2:
            d = V2 / name
            for c in ("+cpu", "+cpuset"):
                try:
                    (V2 / "cgroup.subtree_control").write_text(c)
                except OSError:
                    pass
            d.mkdir(exist_ok=True)
            self.dirs = {"cpu": d, "cpuacct": d, "cpuset": d}
        else:
            for c in ("cpu", "cpuacct", "cpuset"):
                root = V1 / c
                if not root.is_dir():
                    raise LabError(f"CPULimitedHost: no cgroup controller '{c}' at {root}")
                (root / name).mkdir(exist_ok=True)
                self.dirs[c] = root / name
            # cpuset's group takes no process until it has cpus and mems.
            for f in ("cpuset.cpus", "cpuset.mems"):
                (self.dirs["cpuset"] / f).write_text((V1 / "cpuset" / f).read_text().strip() or "0")

    def can(self, resource: str, f: str) -> bool:
        return (self.dirs[resource] / f).exists()

    def set(self, resource: str, f: str, value: Any) -> None:
        path = self.dirs[resource] / f
        try:
            path.write_text(str(value))
        except OSError as e:
            raise LabError(f"cgroup {self.name}: writing {value} to {path}: {e.strerror}") from None

    def get(self, resource: str, f: str) -> str:
        return (self.dirs[resource] / f).read_text().strip()

    def limit(self, quota_us: int, period_us: int) -> None:
        if self.v2:
            self.set("cpu", "cpu.max", f"{'max' if quota_us < 0 else quota_us} {period_us}")
        else:
            self.set("cpu", "cpu.cfs_period_us", period_us)
            self.set("cpu", "cpu.cfs_quota_us", quota_us)

    def cpus(self, cores: str, mems: str) -> None:
        self.set("cpuset", "cpuset.cpus", cores)
        if not self.v2:
            self.set("cpuset", "cpuset.mems", mems)

    def join(self, pid: int) -> None:
        for d in dict.fromkeys(self.dirs.values()):
            (d / "cgroup.procs").write_text(str(pid))

    def usage_s(self) -> float:
        if self.v2:
            for line in self.get("cpu", "cpu.stat").splitlines():
                k, _, v = line.partition(" ")
                if k == "usage_usec":
                    return int(v) / 1e6
            return 0.0
        return int(self.get("cpuacct", "cpuacct.usage")) / 1e9

    def remove(self) -> list[str]:
        errors = []
        for d in dict.fromkeys(self.dirs.values()):
            try:
                d.rmdir()
            except FileNotFoundError:
                pass
            except OSError as e:
                errors.append(f"cgroup {d}: {e.strerror}")
        return errors


def cgroup_create(name: str) -> Cgroup:
    return Cgroup(name)
