"""What every command module of the CLI shares: the parser classes (a mistake told in a
few lines), the `Command` record, the `Adder` each module registers its commands
through, the common arguments (--prefix, --allow-foreign-dir), and the few words all
commands say the same way (a refused file, a lab to pick).

Help: every command has a synopsis, a line saying what it does and examples; every
argument says what it takes and gives an example ("e.g."). Lines fit 80 columns.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from netrig.errors import NetrigError

WIDTH = 80


class NeedsRoot(NetrigError):
    pass


class _Help(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns),
                         max_help_position=28)


class Parser(argparse.ArgumentParser):
    """A command's parser: a mistake is told in a few lines (what is wrong, the
    synopsis, an example), not the whole usage."""

    synopsis = ""
    examples: tuple[str, ...] = ()

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        lines = [f"{self.prog}: error: {message}"]
        if self.synopsis:
            lines.append(f"  usage:   netrig {self.synopsis}")
        if self.examples:
            lines.append(f"  example: {self.examples[0]}")
        lines.append(f"  ('{self.prog} --help' for more)")
        self.exit(2, "\n".join(lines) + "\n")


@dataclass
class Command:
    name: str
    synopsis: str  # `up FILE [--prefix P] [-q]`
    summary: str
    parser: Parser


Handler = Callable[[argparse.Namespace], int]


class Adder:
    """Registers commands on the top parser's subparsers: `add(name, fn, synopsis,
    summary, examples, about)` returns the command's parser for its arguments."""

    def __init__(self, sub: argparse._SubParsersAction) -> None:
        self.sub = sub
        self.commands: dict[str, Command] = {}

    def __call__(self, name: str, fn: Handler, synopsis: str, summary: str,
                 examples: list[str], about: str = "") -> Parser:
        """A command: what it does in a line, more in `about`, and examples to copy."""
        shown = "\n".join(f"  {e}" for e in examples)
        p = self.sub.add_parser(name, help=summary, formatter_class=_Help,
                                usage=f"netrig {synopsis}",
                                description="\n\n".join(textwrap.fill(x, WIDTH) for x in (
                                    summary[0].upper() + summary[1:] + ".", about) if x),
                                epilog=f"example{'s' if len(examples) > 1 else ''}:\n{shown}")
        p.synopsis, p.examples = synopsis, tuple(examples)
        p.set_defaults(fn=fn)
        self.commands[name] = Command(name, synopsis, summary, p)
        return p


def prefix_arg(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--prefix", metavar="P",
                   help="the lab, by its prefix (default: the only one up; e.g. pf)")
    return p


def foreign_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-foreign-dir", action="store_true",
                   help="write into a results directory another user owns "
                        "(e.g. one made by sudo -u alice)")


def refused(said: str) -> None:
    """A file a results directory's reader refused (netrig.safefs), on stderr."""
    print(f"netrig: {said}", file=sys.stderr)


def the_lab(args: argparse.Namespace) -> str:
    """The lab a command acts on: --prefix, else the only one up (netrig.lab.bringup)."""
    from netrig.lab.bringup import which

    return which(args.prefix)


def terminal_width() -> int:
    """The terminal's width, at most 80 columns."""
    return min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns)
