"""Mininet's `mininet.nodelib`: where Mininet 2.3 keeps `LinuxBridge` and `NAT`, so
scripts that import them from here (`from mininet.nodelib import LinuxBridge`) run.

`LinuxBridge` is `mininet.node.LinuxBridge` (every switch is a Linux bridge here).
`NAT` is refused when made, as `Mininet.addNAT` is: a lab has no way out to the host's
network, on purpose.
"""

from __future__ import annotations

from typing import Any

from netrig.lab.state import LabError

from mininet.node import LinuxBridge, Node

__all__ = ["LinuxBridge", "NAT"]


class NAT(Node):
    """Refused: netrig's labs have no way out to the Internet."""

    def __init__(self, name: str, *args: Any, **kwargs: Any) -> None:
        raise LabError(f"NAT {name}: netrig's labs have no way out to the Internet (a NAT to "
                       "the host's network is left out on purpose: traffic stays inside the lab)")
