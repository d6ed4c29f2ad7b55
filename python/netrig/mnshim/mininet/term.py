"""`mininet.term`: terminals on nodes. netrig opens none: each call says so in one
sentence and names the equivalent (`netrig exec --prefix P NODE` opens a shell in a
node from any terminal you have)."""

from __future__ import annotations

from typing import Any

from netrig.lab.state import LabError


def _refuse(what: str, node: Any = None) -> LabError:
    where = ""
    if node is not None and getattr(node, "lab", None) is not None:
        where = f": 'netrig exec --prefix {node.lab.prefix} {node.name}' gives a shell in it"
    return LabError(f"{what}: netrig opens no terminals or X11 windows{where}")


def tunnelX11(node: Any, display: str | None = None) -> Any:
    raise _refuse("tunnelX11", node)


def makeTerm(node: Any, title: str = "Node", term: str = "xterm", display: str | None = None,
             cmd: str = "bash") -> Any:
    raise _refuse(f"makeTerm({node}, term={term!r})", node)


def runX11(node: Any, cmd: str) -> Any:
    raise _refuse(f"runX11({node}, {cmd!r})", node)


def makeTerms(nodes: list, title: str = "Node", term: str = "xterm") -> Any:
    raise _refuse(f"makeTerms({', '.join(str(n) for n in nodes)})", nodes[0] if nodes else None)


def cleanUpScreens() -> None:
    """Nothing to clean: netrig starts no screen sessions."""
