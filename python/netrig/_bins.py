"""Finding netrig's Rust binaries by absolute path.

`ip netns exec` and sudo drop PATH, so callers always get an absolute path: from
`NETRIG_BIN_DIR` if set, else the scripts directory of the running interpreter (where
`pip install .` puts them), else a Cargo build tree next to the sources (development).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

from netrig.errors import NetrigError


class BinaryNotFound(NetrigError):
    pass


def _candidates(name: str) -> list[Path]:
    dirs: list[Path] = []
    env = os.environ.get("NETRIG_BIN_DIR")
    if env:
        dirs.append(Path(env))
    dirs.append(Path(sysconfig.get_path("scripts")))
    dirs.append(Path(sys.executable).parent)
    repo = Path(__file__).resolve().parents[2]
    dirs += [repo / "target" / "release", repo / "target" / "debug"]
    return [d / name for d in dirs]


def binary(name: str) -> Path:
    """Absolute path of a netrig binary (`netrig-perf`, ...)."""
    tried = _candidates(name)
    for path in tried:
        if path.is_file() and os.access(path, os.X_OK):
            return path.resolve()
    where = ", ".join(str(p.parent) for p in tried)
    raise BinaryNotFound(
        f"cannot find the '{name}' binary (looked in {where}); "
        "install netrig with 'pip install .' or set NETRIG_BIN_DIR"
    )
