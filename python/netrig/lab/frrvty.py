"""A router's FRR daemons asked in-process, through the vty socket each daemon listens on
in its router's directory (`DAEMON.vty`), as vtysh itself talks to them: the command and
a NUL, then the answer up to three NULs and a status byte. No process per question
(vtysh builds its whole command tree at every start: ~25 ms of CPU each).

This module owns that exchange. An answer is bounded in size (MAX_REPLY) and time;
what goes wrong is a LabError naming the daemon and the command.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from pathlib import Path

from netrig.lab.state import LabError

MAX_REPLY = 16 << 20
CHUNK = 1 << 16


class _Late(Exception):
    pass


def reply(recv: Callable[[int], bytes], deadline: float) -> tuple[str, int]:
    """(text, status) of one answer read with recv; status 0 is success."""
    buf = bytearray()
    while not (len(buf) >= 4 and buf[-4:-1] == b"\0\0\0"):
        if time.monotonic() > deadline:
            raise _Late
        chunk = recv(CHUNK)
        if not chunk:
            raise LabError(f"the daemon closed its vty after {len(buf)} bytes, before its answer ended")
        buf += chunk
        if len(buf) > MAX_REPLY:
            raise LabError(f"an answer of more than {MAX_REPLY >> 20} MiB")
    return buf[:-4].decode(errors="replace"), buf[-1]


def ask(d: Path, daemon: str, command: str, timeout: float = 3.0) -> object:
    """One `show ... json` command to a router's daemon (its directory `d`), parsed."""
    path = d / f"{daemon}.vty"
    deadline = time.monotonic() + timeout
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(path))
            s.sendall(command.encode() + b"\0")
            text, status = reply(s.recv, deadline)
    except (_Late, TimeoutError):
        raise LabError(f"{daemon}: '{command}' gave no answer in {timeout:g} s") from None
    except LabError as e:
        raise LabError(f"{daemon}: '{command}': {e}") from None
    except OSError as e:
        raise LabError(f"{daemon}: '{command}': {path}: {e.strerror or e}") from None
    if status:
        raise LabError(f"{daemon}: '{command}' failed (status {status}): {text.strip()[:200]}")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise LabError(f"{daemon}: '{command}': {text.strip()[:200]}") from None
