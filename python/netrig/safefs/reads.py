"""Reading files below a base directory someone else may have written (the second block
of `netrig.safefs`): nothing outside the base, no link followed, regular files only,
each kind of file within its `Bound` (`read_bytes`, `read_text`, `list_dir`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePath

from netrig.errors import NetrigError
from netrig.safefs.writes import _DIR_FLAGS

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
