"""The examples installed with netrig: scenario and topology files, one per experiment of
the seed reports, and Mininet scripts. They live in the package (python/netrig/examples;
`examples/` in a checkout is a link to it), so an installed netrig carries them.

Owns where they are (`DIR`), what each is (`listed`: its name, kind and one-line
description, and `listing`, the text of `netrig examples`) and a name given on the
command line resolved to a file (`find`): `netrig run 004-bufferbloat` from any
directory. A path that exists always wins over a name. Reads files only; never runs one.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import yaml

from netrig import suggest
from netrig.errors import NetrigError

DIR = Path(__file__).resolve().parents[2] / "examples"
MAX_NAME = 255  # a longer name on the command line is refused unread


class NoExample(NetrigError):
    """A name on the command line is neither a file nor an installed example."""


@dataclass(frozen=True)
class Example:
    name: str  # 004-bufferbloat, lan, mininet/bufferbloat.py
    kind: str  # scenario | topology | mininet
    path: Path
    about: str  # one line: the scenario's description, or its first comment sentence


def find(given: str, what: str = "scenario file") -> str:
    """`given` when it is a path that exists; else the installed example it names (with
    or without .yaml); else NoExample, with the nearest example's name (a missing path
    that is not an example's is given back: its reader says it does not exist).
    `what` names what the command takes ("topology file")."""
    if len(given) > MAX_NAME or "\0" in given:
        raise NoExample(f"no {what} or example named {given[:60]!r}…: a name has at most "
                        f"{MAX_NAME} characters ('netrig examples' lists them)")
    if Path(given).exists():
        return given
    stem = Path(given).name.removesuffix(".yaml")
    names = [e.name for e in listed() if e.kind != "mininet"]
    if "/" in given:  # a path: an example's, from elsewhere, or its reader says what is wrong
        return _refuse(given, what, suggest.did_you_mean(stem, names)) if stem in names else given
    for candidate in (DIR / given, DIR / f"{given}.yaml"):
        if candidate.suffix == ".yaml" and candidate.is_file():
            return str(candidate)
    return _refuse(given, what, suggest.did_you_mean(stem, names))


def _refuse(given: str, what: str, near: str) -> str:
    raise NoExample(f"no {what} or example named {given}{near} ('netrig examples' lists them)")


def listed(directory: Path = DIR) -> list[Example]:
    """Every example: scenarios, topologies, then Mininet scripts, each by name."""
    out = []
    for p in sorted(directory.glob("*.yaml")):
        data = _yaml(p)
        kind = "scenario" if isinstance(data, dict) and "flows" in data else "topology"
        about = data.get("description") if isinstance(data, dict) else None
        out.append(Example(p.stem, kind, p, _sentence(about if isinstance(about, str) else
                                                      _comment(p))))
    for p in sorted(directory.glob("mininet/*.py")):
        doc = _docstring(p)
        doc = re.sub(rf"^{re.escape(p.name)}:\s*", "", doc)
        out.append(Example(f"mininet/{p.name}", "mininet", p, _sentence(doc)))
    order = {"scenario": 0, "topology": 1, "mininet": 2}
    return sorted(out, key=lambda e: (order[e.kind], e.name))


HEADERS = {
    "scenario": "Scenarios (netrig run NAME [--quick]; netrig graph NAME):",
    "topology": "Topologies (netrig up NAME; netrig graph NAME; netrig explain NAME A B):",
    "mininet": "Mininet scripts (sudo netrig mininet DIR/NAME):",
}


def listing(examples: list[Example], directory: Path = DIR, width: int = 80) -> str:
    """`netrig examples`: a header per kind, then each example on one line of at most
    `width` columns (its description cut at a word, with …), then where they are."""
    out: list[str] = []
    for kind, header in HEADERS.items():
        group = [e for e in examples if e.kind == kind]
        if not group:
            continue
        col = max(len(e.name) for e in group) + 2
        out += ["" if out else None, *textwrap.wrap(header, width)]
        for e in group:
            room = width - 2 - col
            about = (textwrap.shorten(e.about, room, placeholder="…", break_on_hyphens=False)
                     if room > 8 else "")
            out.append(f"  {e.name:<{col}}{about}".rstrip())
    out += ["", f"DIR: {directory}",
            *textwrap.wrap("(copy one to change it: a file's path wins over an example's name)",
                           width)]
    return "\n".join(x for x in out if x is not None) + "\n"


def _yaml(p: Path) -> object:
    from netrig.topo import load as tload

    try:
        return yaml.safe_load(tload.read(p))
    except (tload.TopologyError, yaml.YAMLError):
        return None


def _comment(p: Path) -> str:
    """A YAML file's opening comment, its lines joined (up to the first blank one)."""
    from netrig.topo import load as tload

    try:
        text = tload.read(p)
    except tload.TopologyError:
        return ""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#") or not line.strip("# "):
            break
        lines.append(line.lstrip("#").strip())
    return " ".join(lines)


def _docstring(p: Path) -> str:
    from netrig.topo import load as tload

    try:
        return (ast.get_docstring(ast.parse(tload.read(p))) or "").split("\n\n")[0]
    except (tload.TopologyError, SyntaxError, ValueError):
        return ""


def _sentence(text: str) -> str:
    """The first sentence of `text`, whitespace made single spaces."""
    text = " ".join(text.split())
    m = re.search(r"(?<!e\.g)(?<!i\.e)\.(\s|$)", text)
    return text[:m.start() + 1] if m else text
