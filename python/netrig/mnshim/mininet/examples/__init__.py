"""`mininet.examples`: an installed Mininet's examples, run on netrig's Mininet.

Mininet ships its examples as the package `mininet.examples` (Debian:
/usr/lib/python3/dist-packages/mininet/examples). This package's path is that directory,
so `python -m mininet.examples.simpleperf` and `from mininet.examples.simpleperf import
SingleSwitchTopo` load Mininet's own files, which import `mininet.net` etc.: netrig's.
With no Mininet installed the package is empty, and importing an example says so.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from pathlib import Path

_PLACES = [os.environ.get("NETRIG_MININET_EXAMPLES", ""),
           *(str(Path(p) / "mininet" / "examples") for p in sys.path
             if p and "mnshim" not in p and "dist-packages" in p),
           "/usr/lib/python3/dist-packages/mininet/examples",
           "/usr/local/lib/python3/dist-packages/mininet/examples",
           "/usr/share/doc/mininet/examples"]


def _installed() -> list[str]:
    out = []
    for p in _PLACES:
        if p and Path(p).is_dir() and (Path(p) / "__init__.py").exists() and p not in out:
            out.append(p)
    return out[:1]


__path__ = _installed()  # noqa: F811 (a package's search path, by design)
if __spec__ is not None:
    __spec__.submodule_search_locations = __path__
_ = importlib.machinery
