"""Network namespaces, quickly: links, addresses and routes by in-process netlink
(netrig.lab.rtnl; `ip -batch`, one process per namespace, for lines it does not speak),
sysctls and ethtool offloads from threads that have joined the namespace (`setns`).

Everything here acts on names it is given; what to create is decided elsewhere.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from netrig.errors import NetrigError
from netrig.lab import rtnl

NETNS_DIR = Path("/run/netns")
CLONE_NEWNET = 0x40000000
MS_BIND = 4096
MNT_DETACH = 2
SIOCETHTOOL = 0x8946
ETHTOOL_GLINK = 0x0000000A
# Legacy ethtool "set" commands (struct ethtool_value {u32 cmd; u32 data}).
_OFFLOADS = (0x15, 0x17, 0x19, 0x1F, 0x24, 0x2B)  # rx/tx csum, sg, tso, gso, gro
_libc = ctypes.CDLL(None, use_errno=True)
T = TypeVar("T")


class NetnsError(NetrigError):
    pass


def exists(ns: str) -> bool:
    return (NETNS_DIR / ns).exists()


def ip_batch(lines: Iterable[str], ns: str | None = None, what: str = "ip") -> None:
    """Runs `ip [-n ns] -batch -` (or `tc`, with what="tc"); the error names the line.
    `ip` lines netrig.lab.rtnl speaks are sent in-process instead (no process)."""
    lines = list(lines)
    ops = rtnl.compile_lines(lines) if what == "ip" else None
    if ops is not None:
        if ops:
            _refused(ns, rtnl.run(ops) if ns is None else run_in(ns, lambda: rtnl.run(ops)))
        return
    text = "\n".join(lines) + "\n"
    if not text.strip():
        return
    cmd = [what, *(["-n", ns] if ns else []), "-force", "-batch", "-"]
    p = subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        where = f" in namespace {ns}" if ns else ""
        raise NetnsError(f"{what}{where}: {p.stderr.strip() or p.stdout.strip()}")


def _refused(ns: str | None, errors: list[str]) -> None:
    if errors:
        where = f" in namespace {ns}" if ns else ""
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        raise NetnsError(f"ip{where}: " + "; ".join(errors[:3]) + more)


def _in_workers(items: list[T], fn: Callable[[T], None], workers: int) -> None:
    """fn(item) for each item, in order, by a few threads that may join namespaces (each
    goes back to its own at the end); raises the first error once all are done."""
    errors: list[BaseException] = []
    lock = threading.Lock()
    queue = deque(items)  # taken in order, each by whichever thread is free

    def worker(k: int) -> None:
        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        try:
            while queue:
                try:
                    item = queue.popleft()
                except IndexError:  # the other thread took the last one
                    break
                try:
                    fn(item)
                except BaseException as e:  # handed to the caller
                    with lock:
                        errors.append(e)
        finally:
            if _libc.setns(home, CLONE_NEWNET) != 0:  # never leave a thread in a lab
                with lock:
                    errors.append(NetnsError(f"setns back: {os.strerror(ctypes.get_errno())}"))
            os.close(home)

    threads = [threading.Thread(target=worker, args=(k,), name=f"netns-{k}")
               for k in range(min(workers, len(items)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def configure(work: dict[str, tuple[list[str], list[str]]], workers: int = 2) -> None:
    """For each namespace: (devices whose offloads go off, `ip` lines), done by a few
    threads that join one namespace after another (no thread or process per namespace)."""

    def one(item: tuple[str, tuple[list[str], list[str]]]) -> None:
        ns, (devs, lines) = item
        ops = rtnl.compile_lines(lines)
        _join(ns)
        if devs:
            _offloads_off(ns, devs)
        if ops is None:  # a line rtnl does not speak: ip does them all
            ip_batch(lines, ns)
        elif ops:
            _refused(ns, rtnl.run(ops))

    _in_workers(list(work.items()), one, workers)


def sync_links(devs: dict[str, list[str]], workers: int = 2) -> None:
    """Has the kernel take in now the carrier of each namespace's devices (ETHTOOL_GLINK
    runs the device's pending linkwatch event), rather than when linkwatch gets to it.

    linkwatch, which turns a carrier into operstate UP, attaches the device's qdisc and
    tells a bridge its port may forward, runs "urgent" events at once but others at most
    100 a second. A veth end is urgent unless its peer has the same ifindex (in another
    namespace: a host's eth0 and the switch port numbered 2), and a bridge never is; at
    1,000 switches the bridges' own events queue up, and a port behind them waited up to
    25 s (until then its frames, or its host's, were lost)."""

    def one(item: tuple[str, list[str]]) -> None:
        ns, names = item
        _join(ns)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for name in names:
                try:
                    _ethtool(s, name, bytearray(struct.pack("II", ETHTOOL_GLINK, 0)))
                except OSError as e:
                    raise NetnsError(f"{ns}/{name}: ethtool get link: {e.strerror}") from None

    _in_workers([(ns, names) for ns, names in devs.items() if names], one, workers)


def _join(ns: str) -> None:
    fd = os.open(NETNS_DIR / ns, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            raise NetnsError(f"setns {ns}: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)


def add(names: list[str], settings: dict[str, dict[str, str]] | None = None, workers: int = 2) -> None:
    """Creates the namespaces as `ip netns add` does, the first with ip itself (it makes
    /run/netns a shared mount once), the rest in-process: a few threads each unshare a
    new network namespace and bind-mount it on /run/netns/NAME, one after another (no
    process or thread per namespace). settings[ns] are sysctls written as soon as it
    exists, before any device is in it: a device made in the namespace later takes its
    `default` values (rp_filter, disable_ipv6) from them."""
    settings = settings or {}
    rest = list(names)
    if rest and not _shared_mount():
        first = rest.pop(0)
        try:
            p = subprocess.run(["ip", "netns", "add", first], capture_output=True, text=True,
                               timeout=ADD_WAIT_S)
        except subprocess.TimeoutExpired:
            raise NetnsError(f"ip netns add {first} did not return in {ADD_WAIT_S:g} s: the kernel "
                             "holds its network lock (freeing another lab's namespaces? 'ip netns "
                             "list' shows what is left)") from None
        if p.returncode != 0:
            raise NetnsError(f"ip netns add {first}: {p.stderr.strip()}")
        if settings.get(first):
            sysctls(first, settings[first])

    def one(ns: str) -> None:
        target = NETNS_DIR / ns
        try:
            os.close(os.open(target, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0))
        except FileExistsError:
            raise NetnsError(f"namespace {ns} exists") from None
        if _libc.unshare(CLONE_NEWNET) != 0:
            err = os.strerror(ctypes.get_errno())
            target.unlink(missing_ok=True)
            raise NetnsError(f"creating namespace {ns}: unshare: {err}")
        if _libc.mount(b"/proc/thread-self/ns/net", str(target).encode(), None, MS_BIND, None) != 0:
            err = os.strerror(ctypes.get_errno())
            target.unlink(missing_ok=True)
            raise NetnsError(f"creating namespace {ns}: mount: {err}")
        if settings.get(ns):
            _write_sysctls(ns, settings[ns])

    _in_workers(rest, one, workers)


ADD_WAIT_S = 120.0  # a kernel freeing 1,000 bridges holds rtnl for ~16 s; many labs, longer


def _shared_mount() -> bool:
    """Whether /run/netns is already the shared mount `ip netns add` makes once (so a
    namespace can be made in-process without it)."""
    try:
        with open("/proc/self/mountinfo") as f:
            return shared_in(f.read(), str(NETNS_DIR))
    except OSError:
        return False


def shared_in(mountinfo: str, path: str) -> bool:
    """Whether `path` is a mount point with shared propagation in /proc/PID/mountinfo's
    text (fields: id parent dev root mountpoint options [optional...] - fstype ...)."""
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 6 and fields[4] == path and "-" in fields[6:]:
            if any(w.startswith("shared:") for w in fields[6:fields.index("-", 6)]):
                return True
    return False


def delete(names: Iterable[str]) -> list[str]:
    """Deletes the namespaces that exist (unmount and unlink, as `ip netns del`);
    returns the errors (never raises)."""
    errors = []
    for ns in names:
        target = NETNS_DIR / ns
        if not target.exists():
            continue
        if _libc.umount2(str(target).encode(), MNT_DETACH) != 0:
            e = ctypes.get_errno()
            if e != 22:  # EINVAL: not mounted (a half-made namespace): just unlink
                errors.append(f"umount {target}: {os.strerror(e)}")
                continue
        try:
            target.unlink()
        except OSError as e:
            errors.append(f"rm {target}: {e.strerror}")
    return errors


def kernel_ready(timeout: float, progress: Callable[[float], None] | None = None) -> float | None:
    """Waits until the kernel can make a network namespace again, as the next `up` will
    need; returns how long that took, or None if it still could not after timeout.

    A deleted namespace is freed later by the kernel (cleanup_net, under the lock that
    creating one needs). Its cost is the devices': on the 6.18 kernel measured, a Linux
    bridge takes one RCU grace period to free (br_dev_uninit -> br_multicast_dev_del ->
    rcu_barrier, ~16 ms at HZ=250, one after another), so a lab of 1,000 switches keeps
    the kernel busy for ~16 s after its namespaces are gone. The probe makes a namespace
    in a thread (and lets it go): it returns once the kernel has finished. The first
    probe waits a little: the kernel starts freeing a few ms after the delete returns,
    and a probe that comes first would find it idle."""
    t0 = time.monotonic()
    done = threading.Event()

    def probe() -> None:
        for pause in (0.05, 0.2):
            time.sleep(pause)
            t = time.monotonic()
            if _libc.unshare(CLONE_NEWNET) != 0:
                break  # cannot probe (no privilege): nothing to wait for that we can see
            if time.monotonic() - t > 0.02:
                break  # it waited for the kernel, which is now done
        done.set()

    threading.Thread(target=probe, name="netns-probe", daemon=True).start()
    while not done.wait(min(2.0, max(0.0, t0 + timeout - time.monotonic()))):
        if time.monotonic() - t0 >= timeout:
            return None
        if progress:
            progress(time.monotonic() - t0)
    return time.monotonic() - t0


def _inode(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def inodes(names: Iterable[str]) -> dict[str, tuple[int, int]]:
    """Each existing namespace's (device, inode): what its processes' /proc/PID/ns/net
    are, still, once it is unmounted."""
    return {ns: ino for ns in names if (ino := _inode(str(NETNS_DIR / ns))) is not None}


def pids(names: Iterable[str] | dict[str, tuple[int, int]]) -> dict[str, list[int]]:
    """Processes in each namespace (what `ip netns pids` prints), in one pass over /proc;
    namespaces by name, or by name -> inode (netns.inodes) for ones already unmounted."""
    known = names if isinstance(names, dict) else inodes(names)
    want = {ino: ns for ns, ino in known.items()}
    out: dict[str, list[int]] = {ns: [] for ns in want.values()}
    if not want:
        return out
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            ns = want.get(_inode(f"/proc/{entry}/ns/net"))  # type: ignore[arg-type]
            if ns is not None:
                out[ns].append(int(entry))
    return out


def run_in(ns: str, fn: Callable[[], T]) -> T:
    """Calls fn in a thread that has joined namespace ns (sockets it opens, and
    /proc/sys/net it reads, are the namespace's)."""
    box: dict[str, object] = {}

    def body() -> None:
        try:
            _join(ns)
            box["value"] = fn()
        except BaseException as e:  # handed to the caller
            box["error"] = e

    t = threading.Thread(target=body, name=f"netns-{ns}")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def sysctls(ns: str, values: dict[str, str]) -> None:
    run_in(ns, lambda: _write_sysctls(ns, values))


def _write_sysctls(ns: str, values: dict[str, str]) -> None:
    """In a thread that has joined ns: /proc/sys/net is the thread's namespace's."""
    for key, value in values.items():
        path = Path("/proc/sys") / key.replace(".", "/")
        try:
            path.write_text(value)
        except OSError as e:
            raise NetnsError(f"sysctl {key}={value} in {ns}: {e.strerror}") from None


def offloads_off(ns: str, ifaces: list[str]) -> None:
    """Checksum, scatter-gather, TSO, GSO and GRO off: every frame is a wire frame."""
    run_in(ns, lambda: _offloads_off(ns, ifaces))


def _offloads_off(ns: str, ifaces: list[str]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        words = _feature_words(s)
        for name in ifaces:
            try:
                _set_features(s, name, words)
            except OSError as e:
                raise NetnsError(f"{ns}/{name}: ethtool offloads off: {e.strerror}") from None


# The features the legacy ethtool "set" commands of _OFFLOADS clear, by their names
# (ETH_SS_FEATURES strings; their bit numbers change between kernels).
_OFF_NAMES = ("rx-checksum", "tx-checksum-ipv4", "tx-checksum-ip-generic", "tx-checksum-ipv6",
              "tx-checksum-fcoe-crc", "tx-checksum-sctp", "tx-scatter-gather",
              "tx-scatter-gather-fraglist", "tx-generic-segmentation", "rx-gro")
_features: list[tuple[int, int]] | None = None  # per 32-bit word: (valid, requested)


def _is_off_feature(name: str) -> bool:
    return name in _OFF_NAMES or name.startswith("tx-tcp") and name.endswith("-segmentation")


def _ethtool(s: socket.socket, name: str, data: bytearray) -> int:
    ifr = struct.pack("16sP16x", name.encode()[:15], ctypes.addressof(ctypes.c_char.from_buffer(data)))
    return fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifr)


def _feature_words(s: socket.socket) -> list[tuple[int, int]] | None:
    """One ETHTOOL_SFEATURES request clearing every offload (the feature names read
    once from the kernel, on lo), or None where the kernel does not say them."""
    global _features
    if _features is None:
        try:
            info = bytearray(struct.pack("IIQI", 0x37, 0, 1 << 4, 0))  # GSSET_INFO, ETH_SS_FEATURES
            _ethtool(s, "lo", info)
            count = struct.unpack_from("I", info, 16)[0]
            strings = bytearray(struct.pack("III", 0x1B, 4, count) + bytes(32 * count))  # GSTRINGS
            _ethtool(s, "lo", strings)
        except OSError:
            _features = []
            return None
        names = [strings[12 + 32 * i:12 + 32 * (i + 1)].split(b"\0")[0].decode() for i in range(count)]
        words = [0] * ((count + 31) // 32)
        for bit, feature in enumerate(names):
            if _is_off_feature(feature):
                words[bit // 32] |= 1 << (bit % 32)
        _features = [(w, 0) for w in words]
    return _features or None


def _set_features(s: socket.socket, name: str, words: list[tuple[int, int]] | None) -> None:
    """The offloads off on one device: one ETHTOOL_SFEATURES (features a device lacks
    are left as they are), or the six legacy requests where that is not available."""
    if words:
        req = bytearray(struct.pack("II", 0x3B, len(words)) + b"".join(struct.pack("II", v, r) for v, r in words))
        _ethtool(s, name, req)
        return
    for cmd in _OFFLOADS:
        try:
            _ethtool(s, name, bytearray(struct.pack("II", cmd, 0)))
        except OSError as e:
            if e.errno != 95:  # EOPNOTSUPP: a feature the device lacks
                raise


def write_hosts(names: list[str], text: str) -> None:
    """/etc/netns/NS/hosts for each namespace (`ip netns exec` bind-mounts it over
    /etc/hosts): written once, hard-linked into the others (a lab of N nodes would
    otherwise write N copies of an N-line file)."""
    first: Path | None = None
    for ns in names:
        d = Path("/etc/netns") / ns
        d.mkdir(parents=True, exist_ok=True)
        path = d / "hosts"
        path.unlink(missing_ok=True)
        if first is None:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "w") as f:
                f.write(text)
            first = path
        else:
            os.link(first, path)


def remove_etc(ns: str) -> None:
    d = Path("/etc/netns") / ns
    if d.is_dir():
        for f in d.iterdir():
            f.unlink(missing_ok=True)
        d.rmdir()
