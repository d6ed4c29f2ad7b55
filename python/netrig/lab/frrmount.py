"""A lab's FRR mount namespace: the one place its daemons see /var/tmp/frr as a tmpfs
of their own, so that none of them touches the host's disk there.

FRR 8.4 gives every daemon a directory /var/tmp/frr/DAEMON.PID (its crash log and one
log buffer file per thread) and removes it at exit. On the host's ext4, mounted with
discard, a 500-router lab's 1,000 daemons removing theirs at once queue in the kernel:
hundreds of ospfds were still in rmdir 5 s after SIGKILL, and the lab's teardown failed.
On a tmpfs those removals cost nothing, and whatever a killed daemon leaves goes with
the namespace.

This module owns that namespace, from its making to its unmounting, and nothing else:
- `make(lab_dir, uid, gid, size)`: a new mount namespace (a copy of this process's, its
  mounts slaves of the host's: nothing mounted in it propagates back, and a network
  namespace deleted from the host's /run/netns, a shared mount, leaves it too), a tmpfs on its /var/tmp/frr (FRR's
  user's, 0700, nosuid, nodev, noexec, `size_for` the lab's routers), kept by a bind
  mount of the namespace on LAB/frrns/mnt. LAB/frrns is bound on itself and made
  private first (the kernel refuses a mount namespace's file on a shared mount). All
  in-process, no process forked: a thread unshares its mount namespace (a thread may:
  its filesystem context is unshared with it), mounts the tmpfs and hands over a
  descriptor of the namespace, which this thread binds.
- `enter(lab_dir)`: joins the calling thread to that namespace (setns, after unsharing
  the thread's filesystem context: the kernel refuses a mount namespace to a thread
  that shares it), so that what it starts runs there; ~50 us. For a thread that ends
  after (netns.run_in's): the daemons' starter.
- `release(lab_dir)`: unmounts whatever is mounted at or under LAB/frrns (read from
  /proc/self/mountinfo, deepest first, never through a link), then removes it; after a
  crashed lab too. The namespace and its tmpfs end with its last daemon.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import threading
from pathlib import Path

from netrig import safefs
from netrig.errors import NetrigError
from netrig.lab.state import LabError

TMPDIR = Path("/var/tmp/frr")  # FRR's (TMPBASEDIR of FRR 8.4)
NAME = "frrns"  # LAB/frrns: bound on itself (private); LAB/frrns/mnt holds the namespace
FILE = "mnt"
# What the tmpfs may hold (only what is written takes memory). Measured: a daemon's
# directory holds one 8 KiB log buffer file per thread: zebra 4, ospfd 1 (bgpd, a few):
# 40 KiB an OSPF router, ~80 KiB at most with BGP too. A full tmpfs would not stop FRR
# (it keeps the buffers in memory instead), but the bound leaves ~3x room.
SIZE = 64 * 2**20
PER_ROUTER = 256 * 2**10

CLONE_FS = 0x00000200
CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_SLAVE = 1 << 19
MNT_DETACH = 2
UMOUNT_NOFOLLOW = 8
_libc = ctypes.CDLL(None, use_errno=True)


class FrrMountError(LabError):
    pass


def path(lab_dir: Path) -> Path:
    """LAB/frrns/mnt: the file the lab's FRR mount namespace is bound on."""
    return lab_dir / NAME / FILE


def size_for(routers: int) -> int:
    """The tmpfs's bound for a lab of `routers` FRR routers: PER_ROUTER each, SIZE at
    least (a 2,000-router lab's is 500 MiB; only what is written is used: ~80 MiB)."""
    return max(SIZE, routers * PER_ROUTER)


def tmpfs_options(uid: int, gid: int, size: int) -> bytes:
    """mount(2)'s data for FRR's tmpfs: FRR's user's, 0700 (as FRR makes /var/tmp/frr)."""
    if size <= 0 or uid < 0 or gid < 0:
        raise ValueError(f"tmpfs of {size} bytes for uid {uid}, gid {gid}")
    return f"size={size},mode=0700,uid={uid},gid={gid}".encode()


def _unescape(field: str) -> str:
    """A path as /proc/PID/mountinfo writes it (space, tab, newline and backslash as
    octal escapes: \\040 \\011 \\012 \\134)."""
    out, i = [], 0
    while i < len(field):
        c = field[i]
        if c == "\\" and len(field[i + 1:i + 4]) == 3 and all(x in "01234567" for x in field[i + 1:i + 4]):
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(c)
            i += 1
    return "".join(out)


def mounts_under(mountinfo: str, top: str) -> list[str]:
    """The mount points at `top` or below it in /proc/PID/mountinfo's text, deepest
    first, each as often as it is mounted (stacked mounts: unmount one per line)."""
    top = top.rstrip("/") or "/"
    found = []
    for n, line in enumerate(mountinfo.splitlines()):
        fields = line.split(" ")
        if len(fields) < 5:
            continue
        point = _unescape(fields[4])
        if point == top or point.startswith(top + "/"):
            found.append((point.count("/"), n, point))
    # Deepest first; of two at one point, the later (on top) first.
    return [p for _, _, p in sorted(found, reverse=True)]


def _mounted(top: Path) -> list[str]:
    with open("/proc/self/mountinfo") as f:
        return mounts_under(f.read(), str(top))


def _fail(what: str) -> FrrMountError:
    err = ctypes.get_errno()
    hint = (" (netrig needs root with CAP_SYS_ADMIN for it: in a container, one allowed to "
            "mount)") if err == errno.EPERM else ""
    return FrrMountError(f"FRR's mount namespace: {what}: {os.strerror(err)}{hint}")


def _check_tmpdir(st: os.stat_result, uid: int) -> str | None:
    """Why the host's /var/tmp/frr will not do as the tmpfs's mount point (None if it
    will): it must be a real directory, root's or FRR's."""
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "not a directory"
    if st.st_uid not in (0, uid):
        return f"owned by uid {st.st_uid}, neither root nor FRR's user"
    return None


def _host_tmpdir(uid: int, gid: int) -> None:
    """The host's /var/tmp/frr, as FRR makes it if it is missing (FRR's, 0700)."""
    try:
        os.mkdir(TMPDIR, 0o700)
        os.chown(TMPDIR, uid, gid, follow_symlinks=False)
    except FileExistsError:
        pass
    except OSError as e:
        raise FrrMountError(f"cannot make {TMPDIR}: {e.strerror}") from None
    why = _check_tmpdir(os.lstat(TMPDIR), uid)
    if why is not None:
        raise FrrMountError(f"{TMPDIR} is {why}: FRR's daemons keep their crash logs there, "
                            "and netrig mounts a tmpfs of the lab's on it; remove it")


def _new_namespace(options: bytes) -> int:
    """A descriptor of a new mount namespace whose /var/tmp/frr is a tmpfs; made by a
    thread of its own, which ends after (its filesystem context is its own by then)."""
    box: dict[str, object] = {}

    def body() -> None:
        try:
            if _libc.unshare(CLONE_NEWNS) != 0:
                raise _fail("unshare")
            if _libc.mount(None, b"/", None, MS_REC | MS_SLAVE, None) != 0:
                raise _fail("making its mounts slaves of the host's")
            try:  # opened in the new namespace, never through a link
                fd = os.open(TMPDIR, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError as e:
                raise FrrMountError(f"FRR's mount namespace: {TMPDIR}: {e.strerror}") from None
            try:
                flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
                if _libc.mount(b"tmpfs", f"/proc/thread-self/fd/{fd}".encode(), b"tmpfs", flags, options) != 0:
                    raise _fail(f"a tmpfs on {TMPDIR}")
            finally:
                os.close(fd)
            box["fd"] = os.open("/proc/thread-self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
        except BaseException as e:  # handed to the caller
            box["error"] = e

    t = threading.Thread(target=body, name="frr-mount-ns")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["fd"]  # type: ignore[return-value]


def make(lab_dir: Path, uid: int, gid: int, size: int = SIZE) -> Path:
    """The lab's FRR mount namespace, bound on `path(lab_dir)` (one left by a crashed
    lab of the same prefix is released first); FrrMountError, with nothing left mounted,
    if it cannot be made."""
    problems = release(lab_dir)
    if problems:
        raise FrrMountError(f"a previous FRR mount namespace of this lab is still there: {problems[0]}")
    _host_tmpdir(uid, gid)
    ns = _new_namespace(tmpfs_options(uid, gid, size))
    d = lab_dir / NAME
    try:
        safefs.makedirs(lab_dir, NAME, safefs.PRIVATE)  # root's, 0700, no link on the way
        b = str(d).encode()
        if _libc.mount(b, b, None, MS_BIND, None) != 0:
            raise _fail(f"binding {d} on itself")
        if _libc.mount(None, b, None, MS_PRIVATE, None) != 0:
            raise _fail(f"making {d} private")
        os.close(os.open(path(lab_dir), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        if _libc.mount(f"/proc/self/fd/{ns}".encode(), str(path(lab_dir)).encode(), None, MS_BIND, None) != 0:
            raise _fail(f"binding it on {path(lab_dir)}")
    except BaseException:
        release(lab_dir)
        raise
    finally:
        os.close(ns)
    return path(lab_dir)


def exists(lab_dir: Path) -> bool:
    """Whether the lab's FRR mount namespace is bound (mounted at `path(lab_dir)`)."""
    return str(path(lab_dir)) in _mounted(lab_dir / NAME)


def enter(lab_dir: Path) -> None:
    """Joins the calling thread to the lab's FRR mount namespace: a thread that ends
    after starting what must run there (netns.run_in's), since its filesystem context
    (root, working directory: the namespace's /) is no longer the process's."""
    try:
        fd = os.open(path(lab_dir), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise FrrMountError(f"FRR's mount namespace {path(lab_dir)}: {e.strerror} ('netrig down' "
                            "and 'netrig up' again make it)") from None
    try:
        if _libc.unshare(CLONE_FS) != 0:
            raise _fail("unsharing the thread's filesystem context")
        if _libc.setns(fd, CLONE_NEWNS) != 0:
            raise _fail(f"joining {path(lab_dir)}")
    finally:
        os.close(fd)


def release(lab_dir: Path) -> list[str]:
    """Unmounts whatever is mounted at or under LAB/frrns, deepest first (detached: a
    daemon still running keeps the namespace until it exits), without following a
    link, then removes LAB/frrns; the problems (never raises)."""
    d = lab_dir / NAME
    errors = []
    for _ in range(8):  # stacked mounts: each pass unmounts one of each
        try:
            points = _mounted(d)
        except OSError as e:
            return [f"cannot read /proc/self/mountinfo: {e.strerror}"]
        if not points:
            break
        for point in points:
            if _libc.umount2(point.encode(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0:
                errors.append(f"umount {point}: {os.strerror(ctypes.get_errno())}")
        if errors:
            return errors
    else:
        return [f"{d} is still mounted after 8 rounds of umount"]
    try:
        safefs.remove_tree(lab_dir, NAME, safefs.PRIVATE)
    except (OSError, NetrigError) as e:
        errors.append(f"rm {d}: {e}")
    return errors
