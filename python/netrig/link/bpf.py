"""Capture filters: tcpdump compiles the expression to classic BPF; netrig-link runs it.

`compile_bpf("udp port 5201")` asks `tcpdump -ddd` for the program (one
`(code, jt, jf, k)` per instruction), so a filter means exactly what it means to
tcpdump. Does not run filters (netrig-link's `wire::bpf` does) or capture anything.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from netrig.errors import NetrigError

Instruction = tuple[int, int, int, int]


class CaptureFilterError(NetrigError):
    pass


def _tcpdump() -> str:
    # `ip netns exec` and sudo drop PATH; Debian installs tcpdump in /usr/bin.
    found = shutil.which("tcpdump")
    if found:
        return found
    for p in ("/usr/bin/tcpdump", "/usr/sbin/tcpdump"):
        if Path(p).exists():
            return p
    raise CaptureFilterError("capture filters are compiled by tcpdump, which is not installed "
                             "(Debian/Ubuntu: apt-get install tcpdump)")


def compile_bpf(expr: str, linktype: str = "EN10MB") -> list[Instruction]:
    """The classic BPF program of a tcpdump filter expression for frames of `linktype`
    (EN10MB: Ethernet). A bad expression raises CaptureFilterError quoting tcpdump."""
    try:
        p = subprocess.run([_tcpdump(), "-ddd", "-y", linktype, "--", expr],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CaptureFilterError(f"capture filter {expr!r}: could not run tcpdump: {e}") from None
    # tcpdump warns that it runs as root on stderr; only its complaint is worth quoting.
    complaint = "; ".join(line for line in p.stderr.splitlines()
                          if line.strip() and not line.startswith("Running as user"))
    if p.returncode != 0:
        raise CaptureFilterError(f"capture filter {expr!r}: {complaint or f'tcpdump exited {p.returncode}'}")
    lines = p.stdout.split()
    try:
        count = int(lines[0])
        numbers = [int(x) for x in lines[1:]]
    except (IndexError, ValueError):
        raise CaptureFilterError(f"capture filter {expr!r}: tcpdump printed {p.stdout[:200]!r}") from None
    if count < 1 or len(numbers) != 4 * count:
        raise CaptureFilterError(f"capture filter {expr!r}: tcpdump printed {count} instructions "
                                 f"but {len(numbers)} numbers")
    return [(numbers[i], numbers[i + 1], numbers[i + 2], numbers[i + 3]) for i in range(0, len(numbers), 4)]
