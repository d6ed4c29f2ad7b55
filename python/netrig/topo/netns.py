"""Network namespaces, quickly: `ip -batch` for links and addresses (one process per
namespace, not one per command), and in-process `setns` threads for sysctls and
ethtool offloads (no process at all).

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
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from netrig.errors import NetrigError

NETNS_DIR = Path("/run/netns")
CLONE_NEWNET = 0x40000000
SIOCETHTOOL = 0x8946
# Legacy ethtool "set" commands (struct ethtool_value {u32 cmd; u32 data}).
_OFFLOADS = (0x15, 0x17, 0x19, 0x1F, 0x24, 0x2B)  # rx/tx csum, sg, tso, gso, gro
_libc = ctypes.CDLL(None, use_errno=True)
T = TypeVar("T")


class NetnsError(NetrigError):
    pass


def exists(ns: str) -> bool:
    return (NETNS_DIR / ns).exists()


def ip_batch(lines: Iterable[str], ns: str | None = None, what: str = "ip") -> None:
    """Runs `ip [-n ns] -batch -` (or `tc`, with what="tc"); the error names the line."""
    text = "\n".join(lines) + "\n"
    if not text.strip():
        return
    cmd = [what, *(["-n", ns] if ns else []), "-force", "-batch", "-"]
    p = subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        where = f" in namespace {ns}" if ns else ""
        raise NetnsError(f"{what}{where}: {p.stderr.strip() or p.stdout.strip()}")


def add(names: list[str]) -> None:
    for ns in names:
        p = subprocess.run(["ip", "netns", "add", ns], capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            raise NetnsError(f"ip netns add {ns}: {p.stderr.strip()}")


def delete(names: Iterable[str]) -> list[str]:
    """Deletes the namespaces that exist; returns the errors (never raises)."""
    errors = []
    for ns in names:
        if not exists(ns):
            continue
        p = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            errors.append(f"ip netns del {ns}: {p.stderr.strip()}")
    return errors


def pids(ns: str) -> list[int]:
    """Processes whose network namespace is ns (what `ip netns pids` prints)."""
    if not exists(ns):
        return []
    p = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=30)
    return [int(x) for x in p.stdout.split() if x.isdigit()]


def run_in(ns: str, fn: Callable[[], T]) -> T:
    """Calls fn in a thread that has joined namespace ns (sockets it opens, and
    /proc/sys/net it reads, are the namespace's)."""
    box: dict[str, object] = {}

    def body() -> None:
        try:
            fd = os.open(NETNS_DIR / ns, os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise NetnsError(f"setns {ns}: {os.strerror(err)}")
            finally:
                os.close(fd)
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
    def write() -> None:
        for key, value in values.items():
            path = Path("/proc/sys") / key.replace(".", "/")
            try:
                path.write_text(value)
            except OSError as e:
                raise NetnsError(f"sysctl {key}={value} in {ns}: {e.strerror}") from None

    run_in(ns, write)


def offloads_off(ns: str, ifaces: list[str]) -> None:
    """Checksum, scatter-gather, TSO, GSO and GRO off: every frame is a wire frame."""

    def turn_off() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for name in ifaces:
                for cmd in _OFFLOADS:
                    value = ctypes.create_string_buffer(struct.pack("II", cmd, 0))
                    ifr = struct.pack("16sP16x", name.encode()[:15], ctypes.addressof(value))
                    try:
                        fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifr)
                    except OSError as e:
                        if e.errno not in (95,):  # EOPNOTSUPP: a feature the device lacks
                            raise NetnsError(f"{ns}/{name}: ethtool offloads off: {e.strerror}") from None

    run_in(ns, turn_off)


def write_hosts(ns: str, text: str) -> Path:
    """/etc/netns/NS/hosts: `ip netns exec` bind-mounts it over /etc/hosts."""
    d = Path("/etc/netns") / ns
    d.mkdir(parents=True, exist_ok=True)
    (d / "hosts").write_text(text)
    return d


def remove_etc(ns: str) -> None:
    d = Path("/etc/netns") / ns
    if d.is_dir():
        for f in d.iterdir():
            f.unlink(missing_ok=True)
        d.rmdir()
