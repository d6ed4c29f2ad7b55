"""The command line: the top parser, each command module's commands registered on
it, listed in `ORDER` (what `netrig help` shows, commands on a lab first), and the
`help` command itself.
"""

from __future__ import annotations

import argparse
import textwrap

from netrig import suggest
from netrig.cli import capture, cluster, examples, lab, results, run, tools, top, topology
from netrig.cli.base import WIDTH, Adder, Command, Parser
from netrig.errors import NetrigError

# The commands in the order `netrig help` lists them.
ORDER = ("perf", "up", "down", "status", "top", "exec", "cli", "pingall", "link", "tc", "capture",
         "analyze", "clean", "explain", "examples", "run", "cluster", "report", "compare", "plot",
         "graph", "mn", "mininet", "version", "help")

MODULES = (tools, lab, capture, topology, examples, run, cluster, results, top)


def build() -> tuple[argparse.ArgumentParser, dict[str, Command]]:
    """The top parser and each command by name, in ORDER."""
    ap = argparse.ArgumentParser(prog="netrig", add_help=False)
    add = Adder(ap.add_subparsers(dest="command", parser_class=Parser))
    for module in MODULES:
        module.register(add)
    p = add("help", help_, "help [COMMAND]", "the commands, or one command's arguments and "
            "examples", ["netrig help", "netrig help run"])
    p.add_argument("topic", nargs="?", metavar="COMMAND", help="a command (e.g. run)")
    assert sorted(add.commands) == sorted(ORDER), sorted(set(add.commands) ^ set(ORDER))
    return ap, {name: add.commands[name] for name in ORDER}


def usage(commands: dict[str, Command]) -> str:
    """`netrig help`: every command's synopsis and what it does, at most 80 columns."""
    out = ["usage: netrig COMMAND [ARGS]", "", "commands:"]
    for c in commands.values():
        what = textwrap.wrap(c.summary, WIDTH - 6)
        if len(c.synopsis) <= 30 and len(what) <= 2 and all(len(x) <= WIDTH - 34 for x in what):
            out.append(f"  {c.synopsis:<30}  {what[0]}")
            out += [" " * 34 + x for x in what[1:]]
        else:
            out.append(f"  {c.synopsis}")
            out += textwrap.wrap(c.summary, WIDTH, initial_indent=" " * 6, subsequent_indent=" " * 6)
    out += ["", "'netrig help COMMAND' or 'netrig COMMAND --help': its arguments and examples.",
            "'netrig --version': the versions of netrig and its binaries.",
            "run, report, compare: a results directory another user owns is refused unless",
            "--allow-foreign-dir is given."]
    return "\n".join(out) + "\n"


def unknown_command(word: str, commands: dict[str, Command]) -> str:
    return f"unknown command '{word}'{suggest.unknown(word, commands, 'commands')}"


def help_(args: argparse.Namespace) -> int:
    _, commands = build()
    if args.topic is None:
        print(usage(commands), end="")
        return 0
    if args.topic not in commands:
        raise NetrigError(unknown_command(args.topic, commands))
    print(commands[args.topic].parser.format_help(), end="")
    return 0
