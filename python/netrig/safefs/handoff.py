"""Directories and files handed to other processes (the last block of `netrig.safefs`):
a directory held open and named to a child by descriptor (`Held`), a private staging
directory whose files are renamed in (`Staging`), trees shared with a daemon's user
(`Shared`, `shared_dir`, `write_shared`), and reading what a child wrote (`read_tail`).
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import IO

from netrig.safefs.writes import (
    _DIR_FLAGS,
    RESULTS,
    Modes,
    UnsafePath,
    _enter,
    _new_temp,
    _owner,
    _parts,
    _remove_in,
    directory,
)

# Files written by other processes, and trees shared with a daemon's user (netrig issue
# 24): a child (dumpcap, netrig-link, nginx) never gets a path it could be sent
# elsewhere through. It writes into a directory netrig holds open, named to it as
# /proc/PID/fd/N (the kernel resolves that to the directory itself, whatever is renamed
# or replaced on the way to it since), a private one netrig created for the purpose
# (`Staging`: 0700, ours, nothing else can add a name there), whose files are renamed
# into the results directory, by descriptors, once finished. A log a child only appends
# to is a descriptor netrig opened (`open_new`) and hands over.

class Held:
    """A directory netrig holds open by descriptor (base/rel, entered as `directory`
    does) until `close`: files are created in it relative to that descriptor, so
    swapping a component of its path for a link afterwards changes nothing."""

    def __init__(self, base: Path, rel: str | PurePath = ".", modes: Modes = RESULTS) -> None:
        self.path = base / rel
        with directory(base, rel, modes) as fd:
            self.fd = os.dup(fd)
        os.set_inheritable(self.fd, False)

    def proc_path(self, name: str = "") -> str:
        """The directory (or `name` in it) as this process's descriptor names it: for
        another process of root's (netrig-link) to open while this one holds it."""
        return f"/proc/{os.getpid()}/fd/{self.fd}" + (f"/{name}" if name else "")

    def open_new(self, name: str, mode: int = 0o644) -> IO[bytes]:
        """A new, empty file `name` in it for a child to write into (a log), created
        under a temporary name and renamed into place (whatever was at `name` is
        replaced, never written through)."""
        fd, tmp = _new_temp(self.fd, name, mode)
        try:
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            os.close(fd)
            raise
        return os.fdopen(fd, "wb")

    def read_tail(self, name: str, limit: int = 4096) -> str:
        """The last `limit` bytes of the file `name` in it, as text, without following a
        link at that name ("" if there is no such file)."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.fd)
        except OSError:
            return ""
        return _tail_of(fd, limit)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Held:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Staging(Held):
    """A fresh private directory (0700, ours, an unpredictable name starting with
    `.netrig-`) inside a Held directory, for children to write into; `move_in` renames
    its finished files into the Held directory (replacing what is at their names, a link
    included, never writing through it) and removes it."""

    def __init__(self, into: Held, what: str) -> None:
        self.into = into
        for _ in range(16):
            self.name = f".netrig-{what}-{secrets.token_hex(6)}"
            try:
                os.mkdir(self.name, 0o700, dir_fd=into.fd)
                break
            except FileExistsError:
                continue
        else:
            raise UnsafePath(f"{into.path}: could not create a private directory in it")
        self.path = into.path / self.name
        self.fd = os.open(self.name, _DIR_FLAGS, dir_fd=into.fd)
        st = os.fstat(self.fd)
        if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o077:
            os.close(self.fd)
            raise UnsafePath(f"{self.path}: not a private directory of ours")

    def names(self) -> list[str]:
        """The files in it, oldest first (by modification time, then name)."""
        entries = [(os.stat(n, dir_fd=self.fd, follow_symlinks=False), n) for n in os.listdir(self.fd)]
        return [n for st, n in sorted(entries, key=lambda e: (e[0].st_mtime_ns, e[1]))
                if stat.S_ISREG(st.st_mode)]

    def size(self, name: str) -> int:
        return os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_size

    def move_in(self, names: list[str], mode: int = 0o644) -> None:
        """Renames `names` (files of this directory) into the Held directory under the
        same names, each chmodded to `mode` first."""
        for n in names:
            fd = os.open(n, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.fd)
            try:
                os.fchmod(fd, mode)
            finally:
                os.close(fd)
            os.replace(n, n, src_dir_fd=self.fd, dst_dir_fd=self.into.fd)

    def remove(self) -> None:
        """Removes the directory and whatever is still in it; closes it."""
        if self.fd < 0:
            return
        for n in os.listdir(self.fd):
            _remove_in(self.fd, n)
        self.close()
        os.rmdir(self.name, dir_fd=self.into.fd)


@dataclass(frozen=True)
class Shared:
    """A tree a daemon's user (FRR's `frr`, nginx's `www-data`) must enter: directories
    root's with that user's group, `dir` (search only) on the way and `leaf` at the end,
    files root's with `file` (that group reads them)."""

    gid: int
    leaf: int
    dir: int = 0o710
    file: int = 0o640


def shared_dir(base: Path, rel: str | PurePath, share: Shared) -> Path:
    """base/rel, each component below `base` created (or found: then it must be ours)
    without following links and given our uid, share.gid and its mode through its
    descriptor. `base` must be ours; it is made searchable by everyone (0711 at least:
    its other entries stay as they are)."""
    st = os.stat(base)
    if st.st_uid != os.geteuid():
        raise UnsafePath(f"{base}: not ours ({_owner(st.st_uid)}); a daemon's files are not put there")
    if stat.S_IMODE(st.st_mode) & 0o111 != 0o111:
        os.chmod(base, stat.S_IMODE(st.st_mode) | 0o111)
    names = _parts(rel)
    fd = os.open(base, _DIR_FLAGS)
    shown = base
    try:
        for i, name in enumerate(names):
            shown = shown / name
            nxt = _enter(fd, name, shown, RESULTS, True)
            os.close(fd)
            fd = nxt
            st = os.fstat(fd)
            if st.st_uid != os.geteuid():
                raise UnsafePath(f"{shown}: owned by {_owner(st.st_uid)}, not by netrig's user: remove it")
            os.fchown(fd, -1, share.gid)
            os.fchmod(fd, share.leaf if i == len(names) - 1 else share.dir)
    finally:
        os.close(fd)
    return base / rel


def write_shared(base: Path, rel: str | PurePath, data: str | bytes, share: Shared) -> Path:
    """Writes base/rel as `write` does (the directories must exist), the file ours with
    share.gid and share.file."""
    parts = _parts(rel)
    blob = data.encode("utf-8") if isinstance(data, str) else data
    with directory(base, PurePath(*parts[:-1]), RESULTS, create=False) as dfd:
        fd, tmp = _new_temp(dfd, parts[-1], 0o600)
        try:
            os.fchown(fd, -1, share.gid)
            os.fchmod(fd, share.file)
            with os.fdopen(fd, "wb", closefd=True) as f:
                f.write(blob)
            os.replace(tmp, parts[-1], src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            raise
    return base / rel


def read_tail(path: Path, limit: int = 4096) -> str:
    """The last `limit` bytes of the file at `path` as text, opened without following a
    link at its name ("" if it is missing, a link or unreadable): for a log in a
    directory a daemon's user can write."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""
    return _tail_of(fd, limit)


def _tail_of(fd: int, limit: int) -> str:
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return ""
        f.seek(max(0, st.st_size - limit))
        return f.read().decode(errors="replace")


def unreachable_by(path: Path, uid: int, gids: set[int]) -> Path | None:
    """The first directory on the way to `path` (itself included) that the user `uid`
    (in groups `gids`) may not search, or None."""
    for p in [*reversed(Path(os.path.abspath(path)).parents), Path(os.path.abspath(path))]:
        try:
            st = os.stat(p)
        except FileNotFoundError:
            return None
        m = stat.S_IMODE(st.st_mode)
        ok = (m & 0o100 if st.st_uid == uid else m & 0o010 if st.st_gid in gids else m & 0o001)
        if not ok:
            return p
    return None
