"""iperf3's control channel by hand, for tests that play a misbehaving client: a
cookie, a length-prefixed JSON frame, and how many threads a server runs."""

from __future__ import annotations

import json
import random
import struct


def cookie() -> bytes:
    """A fresh 37-byte cookie (36 of iperf3's alphabet and a NUL)."""
    alphabet = b"abcdefghijklmnopqrstuvwxyz234567"
    return bytes(random.choice(alphabet) for _ in range(36)) + b"\x00"


def frame(doc: dict) -> bytes:
    """`doc` as iperf3 frames JSON: a 4-byte big-endian length, then the bytes."""
    body = json.dumps(doc).encode()
    return struct.pack(">I", len(body)) + body


def threads(pid: int) -> int:
    """The process's thread count, from /proc/PID/status."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError(f"no Threads line for pid {pid}")
