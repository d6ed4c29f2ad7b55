"""The notes netrig's Mininet says once per process on stderr (a switch kind that runs
as a Linux bridge, a controller not started, ...), and the keys a caller has said
itself (`quiet`, importable from `mininet.node`). Mininet has no such module.
"""

from __future__ import annotations

import sys

_said: set[str] = set()


def _say_once(key: str, text: str) -> None:
    if key not in _said:
        _said.add(key)
        print(text, file=sys.stderr)


def quiet(key: str) -> None:
    """The note `key` ("controller", "ovs", "user", "stp") is not said: the caller says
    its own (netrig mn notes --controller itself, and its default c0 is mn's, not asked for)."""
    _said.add(key)
