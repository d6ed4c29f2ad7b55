"""Every file netrig writes, written without following symbolic links.

netrig runs as root and writes into directories a user may own (`./results`), so a
planted link must never send a write elsewhere. This module owns how files and
directories are created; the modules that decide what to write (exp/analysis/results.py,
exp/execute/runner.py, exp/render/report.py, exp/render/figures.py, lab/state.py) call it with a base
directory they trust and a path below it:

- the base is the directory the user named (checked with `check_owner`) or one netrig
  owns (the labs directory); everything below it is entered one component at a time,
  each opened O_NOFOLLOW|O_DIRECTORY relative to its parent's descriptor: a component
  that is a symbolic link is refused (`UnsafePath`), never followed;
- a file is written to an unpredictable temporary name created O_CREAT|O_EXCL|O_NOFOLLOW,
  fsynced, then renamed onto its name: a link planted at either name is never written
  through (a link at the final name is replaced);
- modes are explicit: `RESULTS` (0644 files, 0755 directories: results are for people)
  or `PRIVATE` (0600 and 0700, enforced on existing directories below the base too:
  lab state holds PIDs and paths); the umask may narrow them further.

Reading, its next block, is the same door the other way (`read_bytes`, `read_text`,
`list_dir`): nothing outside the base, no link followed, regular files only, each kind
of file within its `Bound`. Its last block is for files other processes write (a
directory held open and named to them by descriptor, a private staging directory whose
files are renamed in) and for trees shared with a daemon's user (FRR's, nginx's
worker's). It does not own which files exist.
"""

from __future__ import annotations

import errno
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


# Reading: the other side of the door. ---------------------------------------------------
# Everything below reads files below a base directory someone else may have written (a
# results directory you were sent, one a user prepared for root): each directory below
# the base is entered O_DIRECTORY|O_NOFOLLOW relative to its parent's descriptor, the
# file is opened O_NOFOLLOW|O_NONBLOCK (a FIFO swapped in cannot hang the reader) and read
# only if it is a regular file, at most its kind's Bound. A path that is absolute or goes
# up (`..`) is refused unread, as is a symbolic link anywhere below the base: nothing
# outside the base is ever opened. The base itself is the caller's (the directory the
# user named, links and all).

MiB = 1 << 20


@dataclass(frozen=True)
class Bound:
    """How much of one kind of file netrig reads: `what` names the kind in errors."""

    what: str
    limit: int  # bytes


META_JSON = Bound("a results directory's meta.json", 16 * MiB)
RUN_JSON = Bound("a run's run.json", 16 * MiB)
SCENARIO_YAML = Bound("a scenario.yaml", 1 * MiB)  # as the scenario loader (topo/load.py MAX_BYTES)
SERIES = Bound("a time series (JSON lines)", 256 * MiB)
IMAGE = Bound("an image", 32 * MiB)
LOG = Bound("a log", 16 * MiB)

_READ_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


class UnsafeRead(NetrigError):
    """A file below a base directory that netrig will not read: its path leaves the base,
    goes through a symbolic link, or names something other than a regular file. `path`
    is the file as named (base/rel); `reason` says why in a clause of its own ("its path
    leaves the results directory", "runs is a symbolic link (to /tmp/x); ...")."""

    def __init__(self, path: PurePath, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class TooLarge(UnsafeRead):
    """A file larger than its kind's Bound: refused unread past the bound."""


def _read_parts(base: Path, rel: str | PurePath, inside: str) -> list[str]:
    text = str(rel)
    if "\0" in text:
        raise UnsafeRead(base / text.replace("\0", "\\0"), "its path holds a NUL byte")
    pure = PurePath(text)
    parts = [p for p in pure.parts if p not in ("", ".")]
    if pure.is_absolute():
        raise UnsafeRead(pure, f"its path is absolute: it leaves {inside}")
    if ".." in parts:
        raise UnsafeRead(base / pure, f"its path leaves {inside}")
    if not parts:
        raise UnsafeRead(base / pure, f"not a file below {inside}")
    return parts


def _why_not(parent: int, name: str, subject: str, shown: Path, inside: str,
             e: OSError) -> UnsafeRead | OSError:
    """Why `name` in `parent` could not be opened: a link (UnsafeRead naming `subject`:
    "it", or the directory on the way), else e itself (not there, not a directory)."""
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except OSError:
        return e
    if stat.S_ISLNK(st.st_mode):
        return UnsafeRead(shown, f"{subject} is a symbolic link (to {os.readlink(name, dir_fd=parent)}); "
                                 f"netrig does not follow links inside {inside}")
    return e


@contextmanager
def _read_dir(base: Path, names: list[str], file: Path, inside: str) -> Iterator[int]:
    """A descriptor of base/names..., every name entered without following links (a link
    on the way to `file` refuses it)."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for k, name in enumerate(names):
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as e:
                raise _why_not(fd, name, "/".join(names[:k + 1]), file, inside, e) from None
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def _not_regular(mode: int) -> str:
    return next((f"it is {what}, not a regular file" for test, what in _KINDS if test(mode)),
                "it is not a regular file")


def read_bytes(base: Path, rel: str | PurePath, bound: Bound,
               inside: str = "the directory read") -> bytes:
    """The bytes of the regular file base/rel, opened without following a link and only
    below `base`, at most bound.limit of them. Raises UnsafeRead (TooLarge past the bound)
    with a sentence naming the file and why; FileNotFoundError (NotADirectoryError) when
    it is not there. `inside` names the base in those sentences ("the results directory")."""
    parts = _read_parts(base, rel, inside)
    shown = base / PurePath(*parts)
    with _read_dir(base, parts[:-1], shown, inside) as dfd:
        name = parts[-1]
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)  # FileNotFoundError: not there
        if stat.S_ISLNK(st.st_mode):
            raise _why_not(dfd, name, "it", shown, inside, OSError(errno.ELOOP, "a link"))
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeRead(shown, _not_regular(st.st_mode))  # (never opened: a device's open acts)
        try:
            fd = os.open(name, _READ_FILE, dir_fd=dfd)
        except OSError as e:  # swapped since the stat
            raise _why_not(dfd, name, "it", shown, inside, e) from None
        with os.fdopen(fd, "rb", closefd=True) as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise UnsafeRead(shown, _not_regular(st.st_mode))
            if st.st_size > bound.limit:
                raise TooLarge(shown, f"it holds {st.st_size} bytes; netrig reads at most "
                                      f"{_size(bound.limit)} of {bound.what}")
            blob = f.read(bound.limit + 1)
            if len(blob) > bound.limit:  # it grew since the fstat
                raise TooLarge(shown, f"it holds more than {_size(bound.limit)}; netrig reads "
                                      f"at most that of {bound.what}")
            return blob


def read_text(base: Path, rel: str | PurePath, bound: Bound,
              inside: str = "the directory read") -> str:
    """read_bytes decoded as UTF-8 (UnicodeDecodeError, a ValueError, when it is not)."""
    return read_bytes(base, rel, bound, inside).decode("utf-8")


def list_dir(base: Path, rel: str | PurePath = ".", inside: str = "the directory read") -> list[str]:
    """The names in the directory base/rel (sorted), entered without following links;
    UnsafeRead for a link or a path out of `base`, FileNotFoundError when it is not there."""
    names = [] if str(rel) in ("", ".") else _read_parts(base, rel, inside)
    with _read_dir(base, names, base / PurePath(*names), inside) as fd:
        return sorted(os.listdir(fd))


def _size(n: int) -> str:
    return f"{n // MiB} MiB" if n % MiB == 0 else f"{n} bytes"


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
