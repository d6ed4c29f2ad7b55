"""Which qdiscs this kernel has, asked before a kernel-backend lab is built.

`check()` tries every qdisc kind the topology's directions need (`netrig.link.kernel.needs`)
on `lo` of a scratch namespace and refuses, naming the missing qdisc and the link that
wants it.
"""

from __future__ import annotations

import subprocess

from netrig.lab import netns
from netrig.link.kernel import DIRS, KernelBackendError, needs
from netrig.topo.model import Topology


def _available(kind: str, ns: str) -> bool:
    args = {"htb": ["htb"], "netem": ["netem", "delay", "1ms"], "red": [
        "red", "limit", "400000", "min", "30000", "max", "90000", "avpkt", "1000", "burst", "55",
        "bandwidth", "10mbit"]}.get(kind, [kind])
    p = subprocess.run(["tc", "-n", ns, "qdisc", "replace", "dev", "lo", "root", *args],
                       capture_output=True, text=True, timeout=10)
    return p.returncode == 0


def check(topo: Topology, scratch_ns: str) -> None:
    """Raises naming every link direction that needs what this kernel lacks."""
    wanted: dict[str, list[str]] = {}
    for link in topo.links:
        if link.plain:
            continue
        for d in (0, 1):
            for kind, why in needs(link.direction(d)):
                wanted.setdefault(kind, []).append(f"link {link.name} {DIRS[d]} ({why})")
    if not wanted:
        return
    missing = []
    netns.add([scratch_ns])
    try:
        for kind, users in wanted.items():
            if kind == "trace" or "together with netem" in users[0] or not _available(kind, scratch_ns):
                what = "a trace" if kind == "trace" else f"the '{kind}' qdisc"
                missing.append(f"{users[0]}: the kernel backend cannot do {what}"
                               + (f" (and {len(users) - 1} more)" if len(users) > 1 else ""))
    finally:
        netns.delete([scratch_ns])
    if missing:
        raise KernelBackendError(
            "backend: kernel cannot build this topology on this kernel:\n  " + "\n  ".join(missing)
            + "\nuse backend: userspace (netrig-link does all of these), or remove them")


