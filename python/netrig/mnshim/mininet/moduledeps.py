"""`mininet.moduledeps`: the kernel modules and programs a script needs.

netrig loads and unloads no kernel module (a lab needs none beyond network namespaces,
veth and bridges; the link emulator is netrig-link, in user space): `moduleDeps`,
`modprobe` and `rmmod` change nothing. `pathCheck` is Mininet's: it stops the program,
naming what is missing, when a command is not on PATH."""

from __future__ import annotations

import shutil
import subprocess
import sys
from typing import Any

from mininet.log import error


def lsmod() -> str:
    return subprocess.run(["cat", "/proc/modules"], capture_output=True, text=True).stdout


def rmmod(mod: str) -> str:
    return ""


def modprobe(mod: str) -> str:
    return ""


def moduleDeps(subtract: Any = None, add: Any = None) -> None:
    """Nothing to load: netrig's links and switches need no module of their own."""


def pathCheck(*args: str, **kwargs: Any) -> None:
    module = kwargs.get("moduleName", "it")
    for arg in args:
        if not shutil.which(arg):
            error(f"Cannot find required executable {arg}.\nPlease make sure that {module} is "
                  "installed and available in your $PATH:\n(PATH)\n")
            sys.exit(1)
