"""The TCP congestion controls this machine's kernel has, or can load."""

from __future__ import annotations

import os
from pathlib import Path

CC_AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


def congestion_controls(available: Path = CC_AVAILABLE, modules: Path | None = None) -> set[str]:
    """The TCP congestion controls a flow can ask for: those the kernel has loaded, and
    those a module could add (`tcp_X.ko*` below the running kernel's net/ipv4, which the
    kernel loads when a socket asks as root). Namespaces share the host's kernel, so
    this is every node's list. Empty when neither can be read (nothing is refused)."""
    names: set[str] = set()
    try:
        names.update(available.read_text().split())
    except OSError:
        pass
    if modules is None:
        modules = Path("/lib/modules") / os.uname().release / "kernel" / "net" / "ipv4"
    try:
        for ko in modules.glob("tcp_*.ko*"):
            names.add(ko.name.split(".", 1)[0].removeprefix("tcp_"))
    except OSError:
        pass
    names.discard("diag")  # tcp_diag is a socket monitor, not a congestion control
    return names


