"""`netrig examples`: the examples installed with netrig, one line each
(netrig.exp.spec.examples owns them and how a name finds one)."""

from __future__ import annotations

import argparse

from netrig.cli.base import Adder, terminal_width


def examples(args: argparse.Namespace) -> int:
    from netrig.exp.spec import examples as ex

    print(ex.listing(ex.listed(), width=terminal_width()), end="")
    return 0


def register(cmd: Adder) -> None:
    cmd("examples", examples, "examples",
        "list the installed examples, one line each",
        ["netrig examples", "netrig run 004-bufferbloat --quick"],
        "Each is named by its file's name (with or without .yaml) wherever a command "
        "takes a scenario or topology file, from any directory; a path that exists wins.")
