"""What every command module of the CLI shares: the parser classes (a mistake told in a
few lines), the `Command` record, the `Adder` each module registers its commands
through, the common arguments (--prefix, --allow-foreign-dir), and the few words all
commands say the same way (a refused file, a lab to pick).

Help: every command has a synopsis, a line saying what it does and examples; every
argument says what it takes and gives an example ("e.g."). Lines fit 80 columns.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from netrig import suggest
from netrig.errors import NetrigError

WIDTH = 80
# Mininet's `mn` options, which a user coming from Mininet gives `netrig up` or `run`.
MININET_OPTIONS = frozenset({
    "--topo", "--switch", "--controller", "--link", "--host", "--custom", "--test", "--mac",
    "--arp", "--nat", "--xterms", "--ipbase", "--innamespace", "--listenport",
    "--pin", "--verbosity", "--twoway", "--placement", "--autosetmac", "--autopinswitches"})


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
        lines = textwrap.wrap(f"{self.prog}: error: {message}", WIDTH, subsequent_indent="  ",
                              break_on_hyphens=False, break_long_words=False)
        if self.synopsis:
            kept = re.sub(r"(-[\w-]+) (?=[A-Z])", "\\1\xa0", self.synopsis)  # --resume DIR: one
            lines += [x.replace("\xa0", " ") for x in textwrap.wrap(
                f"netrig {kept}", WIDTH, initial_indent="  usage:   ", subsequent_indent=" " * 18,
                break_on_hyphens=False)]
        if self.examples:
            lines.append(f"  example: {self.examples[0]}")
        lines.append(f"  ('{self.prog} --help' for more)")
        self.exit(2, "\n".join(lines) + "\n")

    def options(self) -> list[str]:
        return [o for a in self._actions for o in a.option_strings]

    def mininets(self, argv: list[str]) -> list[str]:
        """Mininet's options in `argv` (the command's words) that the command does not
        take, from the first (checked before parsing: `up --topo=linear,3` would first be
        told its FILE is missing)."""
        words = argv[: argv.index("--")] if "--" in argv else argv
        mine = set(self.options())
        at = [k for k, w in enumerate(words)
              if w.partition("=")[0] in MININET_OPTIONS - mine]
        return words[at[0]:] if at else []

    def unrecognized(self, extra: list[str], argv: list[str]) -> NoReturn:
        """Words of `argv` the command does not take (`extra`), said with its own usage: an
        option told the closest it has (`--quik`: did you mean --quick?), one of Mininet's
        told `netrig mn`."""
        word = extra[0]
        also = f" (also not taken: {' '.join(extra[1:])})" if extra[1:] else ""
        if not word.startswith("-") or word == "-":
            self.error(f"unrecognized argument '{word}'{also}")
        name = word.partition("=")[0]
        if name in MININET_OPTIONS:
            at = argv.index(word) if word in argv else len(argv)
            value = argv[at + 1: at + 2] if "=" not in word else []  # (taken as a positional)
            given = " ".join([word, *(v for v in value if not v.startswith("-"))])
            self.error(f"{name} is Mininet's option: 'netrig mn {given}' builds that network "
                       "(Mininet's mn, on netrig)")
        options = self.options()
        near = suggest.did_you_mean(name, [o for o in options if o.startswith("--")] if
                                    name.startswith("--") else options)
        self.error(f"unrecognized option {name}{near}{also}")


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
