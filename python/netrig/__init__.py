"""netrig: a network test rig.

Owns the Python side of netrig: the `netrig` command (`cli`), the topology model
(`topo`, pure), the running lab (`lab`), the link backends and the link-spec contract's
Python side (`link`), the experiment runner, results, figures and report (`exp`), the
formulas (`theory`), and the small shared pieces: `units` (one rule for unit strings),
`errors`, `safefs` (files written as root), `_bins` (finding the Rust binaries).

Does not own anything on the packet path: the traffic tool (`netrig-perf`) and the link
emulator are Rust binaries; Python starts them with flags and reads their JSON lines.
"""

from netrig._bins import BinaryNotFound, binary
from netrig.errors import NetrigError

__all__ = ["BinaryNotFound", "NetrigError", "__version__", "binary"]



def __getattr__(name: str) -> str:
    """`netrig.__version__`, read from the installed package's metadata when first asked
    (importlib.metadata costs ~50 ms at import: tc's shim, run once per `tc` line in a
    lab, never asks)."""
    if name != "__version__":
        raise AttributeError(f"module 'netrig' has no attribute {name!r}")
    global __version__
    try:
        from importlib.metadata import version as _version

        __version__ = _version("netrig")
    except Exception:  # pragma: no cover - running from a source tree
        __version__ = "0.0.0+source"
    return __version__
