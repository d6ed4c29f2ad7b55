"""Every file netrig writes, written without following symbolic links (the first block
of `netrig.safefs`, whose docstring says how): a base directory the caller trusts
(`check_owner`), every component below it entered by descriptor, O_NOFOLLOW, files
written to a temporary name and renamed, modes explicit (`Modes`: `RESULTS`, `PRIVATE`).
"""

from __future__ import annotations

import os
import pwd
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import IO

from netrig.errors import NetrigError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePath(NetrigError):
    """A path below a base directory that netrig will not write through."""


class ForeignDir(NetrigError):
    """A directory to write into that another user owns."""


@dataclass(frozen=True)
class Modes:
    file: int
    dir: int
    enforce: bool  # also chmod directories that already exist (and are ours)


RESULTS = Modes(file=0o644, dir=0o755, enforce=False)
PRIVATE = Modes(file=0o600, dir=0o700, enforce=True)


def trusted_uids() -> set[int]:
    """Root, this process's user and, under sudo, the user who ran sudo."""
    uids = {0, os.geteuid(), os.getuid()}
    sudo = os.environ.get("SUDO_UID", "")
    if sudo.isdigit():
        uids.add(int(sudo))
    return uids


def _owner(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def check_owner(path: Path, allow_foreign: bool = False) -> None:
    """Refuses (ForeignDir) to write into `path` when it, or a directory or link on the
    way to it, belongs to a user other than root, us or the sudo user: that user could
    swap what netrig writes for links. Parts that do not exist yet are skipped;
    `allow_foreign` (--allow-foreign-dir) skips the check."""
    if allow_foreign:
        return
    trusted = trusted_uids()
    absolute = Path(os.path.abspath(path))
    real = Path(os.path.realpath(path))
    chain = [*reversed(absolute.parents), absolute, *reversed(real.parents), real]
    for p in dict.fromkeys(chain):  # the path as written, then where its links lead
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            continue
        if st.st_uid not in trusted:
            what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "a directory"
            where = ("" if p == absolute else f" (where {path} leads)" if p == real
                     else f" (on the way to {path})")
            raise ForeignDir(f"{p}: {what} owned by {_owner(st.st_uid)}{where}: netrig runs "
                             f"as {_owner(os.geteuid())} and does not write results where "
                             f"another user can replace them; choose another directory, or "
                             f"give --allow-foreign-dir if you trust that user")


def _parts(rel: str | PurePath) -> list[str]:
    parts = [p for p in PurePath(rel).parts if p not in ("", ".")]
    if not parts or PurePath(rel).is_absolute() or ".." in parts:
        raise UnsafePath(f"{rel}: not a relative path below the directory written into")
    return parts


def _open_base(base: Path, modes: Modes, create: bool) -> int:
    if create:
        os.makedirs(base, mode=modes.dir, exist_ok=True)
    # The base is the caller's (it may be /tmp): its mode is left alone.
    return os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def _tighten(fd: int, mode: int) -> None:
    st = os.fstat(fd)
    if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != mode:
        os.fchmod(fd, mode)


def _enter(parent: int, name: str, shown: Path, modes: Modes, create: bool) -> int:
    """The directory `name` in `parent`, opened without following a link (created
    with modes.dir if `create` and missing)."""
    if create:
        try:
            os.mkdir(name, modes.dir, dir_fd=parent)
        except FileExistsError:
            pass
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError as e:
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except OSError:
            raise e from None
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(name, dir_fd=parent)
            raise UnsafePath(f"{shown}: a symbolic link (to {target}); netrig does not follow "
                             "links inside the directory it writes: remove it") from None
        raise UnsafePath(f"{shown}: not a directory ({e.strerror})") from None
    if modes.enforce:
        _tighten(fd, modes.dir)
    return fd


@contextmanager
def directory(base: Path, rel: str | PurePath = ".", modes: Modes = RESULTS,
              create: bool = True) -> Iterator[int]:
    """A descriptor of base/rel, every component below `base` entered without
    following links (and created, with modes.dir, when `create`)."""
    names = _parts(rel) if str(rel) not in ("", ".") else []
    fd = _open_base(base, modes, create)
    shown = base
    try:
        for name in names:
            shown = shown / name
            nxt = _enter(fd, name, shown, modes, create)
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def makedirs(base: Path, rel: str | PurePath = ".", modes: Modes = RESULTS) -> Path:
    """base/rel created as directories, none of them through a link."""
    with directory(base, rel, modes):
        pass
    return base / rel


def _new_temp(dfd: int, name: str, mode: int) -> tuple[int, str]:
    for _ in range(16):
        tmp = f".{name}.{secrets.token_hex(8)}.tmp"
        try:
            return os.open(tmp, _NEW_FILE, mode, dir_fd=dfd), tmp
        except FileExistsError:
            continue
    raise UnsafePath(f"{name}: could not create a temporary file beside it")


def write(base: Path, rel: str | PurePath, data: str | bytes, modes: Modes = RESULTS) -> Path:
    """Writes base/rel atomically: a new, unpredictably named file, fsynced, renamed
    onto rel's name (replacing what is there, a link included; never writing through
    it). Returns base/rel."""
    parts = _parts(rel)
    blob = data.encode("utf-8") if isinstance(data, str) else data
    with directory(base, PurePath(*parts[:-1]), modes) as dfd:
        name = parts[-1]
        fd, tmp = _new_temp(dfd, name, modes.file)
        try:
            with os.fdopen(fd, "wb", closefd=True) as f:
                f.write(blob)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException as e:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            if isinstance(e, IsADirectoryError):
                raise UnsafePath(f"{base / rel}: a directory is in the way of the file") from None
            raise
    return base / rel


def open_new(base: Path, rel: str | PurePath, modes: Modes = RESULTS) -> IO[bytes]:
    """A new, empty file at base/rel for a process to write into (a log): created
    under a temporary name and renamed into place at once, so whatever was at rel (a
    link, another file's hard link) is replaced, never truncated or written through."""
    parts = _parts(rel)
    with directory(base, PurePath(*parts[:-1]), modes) as dfd:
        fd, tmp = _new_temp(dfd, parts[-1], modes.file)
        try:
            os.replace(tmp, parts[-1], src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            os.close(fd)
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            raise
    return os.fdopen(fd, "wb")


def unlink(base: Path, rel: str | PurePath, modes: Modes = RESULTS) -> None:
    """Removes the file (or link) base/rel if it is there; a link is removed, not followed."""
    parts = _parts(rel)
    try:
        with directory(base, PurePath(*parts[:-1]), modes, create=False) as dfd:
            os.unlink(parts[-1], dir_fd=dfd)
    except FileNotFoundError:
        pass


def remove_matching(base: Path, rel: str | PurePath, suffix: str, modes: Modes = RESULTS) -> None:
    """Removes the files and links in base/rel whose names end in `suffix`."""
    try:
        with directory(base, rel, modes, create=False) as dfd:
            for name in os.listdir(dfd):
                if name.endswith(suffix) and not stat.S_ISDIR(
                        os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode):
                    os.unlink(name, dir_fd=dfd)
    except FileNotFoundError:
        pass


def remove_tree(base: Path, rel: str | PurePath, modes: Modes = RESULTS) -> None:
    """Removes base/rel and everything in it, descending into real directories only
    (a link inside is removed, not followed)."""
    parts = _parts(rel)
    try:
        with directory(base, PurePath(*parts[:-1]), modes, create=False) as dfd:
            _remove_in(dfd, parts[-1])
    except FileNotFoundError:
        pass


def _remove_in(parent: int, name: str) -> None:
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=parent)
        return
    fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    try:
        for child in os.listdir(fd):
            _remove_in(fd, child)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)
