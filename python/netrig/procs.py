"""Ending a child process: SIGTERM, a grace period, then SIGKILL; always reaped."""

from __future__ import annotations

import subprocess


def end(p: subprocess.Popen, grace_s: float = 3.0) -> None:
    """Stops `p` (if it still runs) by SIGTERM, then SIGKILL after `grace_s`; waits for it."""
    if p.poll() is None:
        p.terminate()
    try:
        p.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(timeout=grace_s)
