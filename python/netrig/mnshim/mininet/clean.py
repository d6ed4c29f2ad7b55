"""`mininet.clean`: cleaning up after Mininet, netrig's way.

`cleanup()` takes down what netrig's Mininet made: the networks of this process, then
every lab whose builder has died (`netrig clean`'s rule). It never touches what netrig
did not make (Mininet's `mn -c` kills processes by name and deletes every `*-eth*`
interface of the machine; netrig acts only by recorded names and PIDs).
"""

from __future__ import annotations

import subprocess

from netrig.lab import build

from mininet import _lab
from mininet.log import info


def sh(cmd: str) -> str:
    """Runs a shell command (Mininet's helper, used by its tests); its output."""
    info(cmd + "\n")
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    return p.stdout + p.stderr


def cleanup() -> None:
    info("*** Removing netrig's Mininet networks and labs whose builder died\n")
    for line in _lab.stop_all():
        info(f"*** {line}\n")
    for prefix, why, problems in build.clean(orphans_only=True):
        info(f"*** lab {prefix}: {why or 'unreadable'}{': ' + '; '.join(problems) if problems else ''}\n")
    info("*** Cleanup complete.\n")


class Cleanup:
    callbacks: list = []

    @classmethod
    def cleanup(cls) -> None:
        cleanup()
        for cb in cls.callbacks:
            cb()

    @classmethod
    def addCleanupCallback(cls, callback) -> None:
        if callback not in cls.callbacks:
            cls.callbacks.append(callback)


def killprocs(pattern: str) -> None:
    raise RuntimeError("killprocs: netrig never kills processes by name; "
                       "netrig down --prefix P stops a lab's processes")
