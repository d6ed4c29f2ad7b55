"""Whether this kernel can build a kernel-backend lab, asked before anything is built.

`check()` first translates every direction (`netrig.link.kernel.plan`), so a parameter
the kernel cannot express is refused by name before any probing; then it runs each
distinct direction's own `tc` lines, the ones build will write, on a veth end in a
scratch namespace, and refuses naming the qdisc the kernel lacks (or the line tc
refused) and the links that want it. The probe cannot pass on a line build would not
write.
"""

from __future__ import annotations

import subprocess

from netrig.lab import netns
from netrig.link.kernel import DIRS, KernelBackendError, Qdisc, lines, plan
from netrig.topo.model import Topology

PROBE_DEV = "nrprobe0"
_UNKNOWN = ("Specified qdisc kind is unknown", "Specified qdisc not found", "No such file or directory")


def _tc(ns: str, line: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tc", "-n", ns, *line.split()], capture_output=True, text=True, timeout=10)


def _try(qdiscs: list[Qdisc], ns: str) -> tuple[str, str] | None:
    """Runs the lines of one direction's layout on the probe device; (kind, what failed)
    for the first line the kernel refuses, else None."""
    try:
        for q in qdiscs:
            for line in lines(PROBE_DEV, [q]):
                p = _tc(ns, line)
                if p.returncode != 0:
                    err = p.stderr.strip() or p.stdout.strip()
                    if any(u in err for u in _UNKNOWN):
                        return q.kind, f"the '{q.kind}' qdisc"
                    return q.kind, f"'{line}' (tc: {err})"
        return None
    finally:
        _tc(ns, f"qdisc del dev {PROBE_DEV} root")


def check(topo: Topology, scratch_ns: str) -> None:
    """Raises naming every link direction that wants what this kernel cannot do."""
    layouts: dict[tuple[Qdisc, ...], list[str]] = {}
    refused = []
    for link in topo.links:
        if link.plain:
            continue
        for d in (0, 1):
            at = f"link {link.name} {DIRS[d]}"
            try:
                qdiscs = plan(link.direction(d), at)
            except KernelBackendError as e:
                refused.append(str(e))
                continue
            if qdiscs:
                why = ", ".join(q.why for q in qdiscs if q.kind not in ("pfifo", "bfifo", "htb"))
                layouts.setdefault(tuple(qdiscs), []).append(f"{at} ({why or qdiscs[-1].why})")
    if refused:
        raise KernelBackendError("backend: kernel cannot build this topology:\n  " + "\n  ".join(refused))
    if not layouts:
        return
    missing: dict[str, list[str]] = {}
    netns.add([scratch_ns])
    try:
        netns.ip_batch([f"link add {PROBE_DEV} type veth peer name {PROBE_DEV}p"], scratch_ns)
        for qdiscs, users in layouts.items():
            failed = _try(list(qdiscs), scratch_ns)
            if failed:
                missing.setdefault(failed[1], []).extend(users)
    finally:
        netns.delete([scratch_ns])
    if missing:
        raise KernelBackendError(
            "backend: kernel cannot build this topology on this kernel:\n  "
            + "\n  ".join(f"{users[0]}: the kernel backend cannot do {what}"
                          + (f" (and {len(users) - 1} more)" if len(users) > 1 else "")
                          for what, users in missing.items())
            + "\nuse backend: userspace (netrig-link does all of these), or remove them")
