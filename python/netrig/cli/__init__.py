"""The `netrig` command (`netrig = "netrig.cli:main"`; `python -m netrig`).

Subcommands hand over to the component that owns the work (`netrig help` lists them;
`netrig help CMD` shows one, with examples). Commands live one group to a module, each
with its arguments beside it and registered through `base.Adder`:

- `lab`: up, down, status, exec, cli (the mininet> prompt), pingall, link set, clean
- `run`: run (and --resume), through netrig.exp.pipeline
- `results`: report, compare, plot
- `capture`: capture, analyze
- `cluster`: cluster scheduler, worker, status, cert
- `topology`: explain, graph
- `top`: top (a running lab, live)
- `tools`: perf, tc, mn, mininet (their command lines passed whole), version
- `parser`: the top parser, the order of `netrig help`, and help itself
- `base`: what the modules share (parser classes, --prefix, refused files' words)
- `console`: stdout and stderr guarded against a reader that goes away

The package holds the words on the terminal and no rule of its own: those are in
netrig.lab, netrig.exp, netrig.capture. main() owns the root check, the exit status,
and how errors are told.
"""

from __future__ import annotations

import os
import sys

from netrig.cli import console, parser
from netrig.cli.base import NeedsRoot
from netrig.cli.tools import RAW
from netrig.errors import NetrigError, Terminated, os_words, plain

# Commands that need root, and why (said to a user who is not).
NEEDS_ROOT = {
    "up": "it creates network namespaces",
    "down": "it deletes the lab's network namespaces and stops its processes",
    "link": "it changes a running lab, whose state and emulator are root's",
    "run": "it creates network namespaces",
    "clean": "it deletes network namespaces and stops processes",
    "exec": "it enters a lab's network namespace",
    "pingall": "it pings inside a lab's network namespaces",
    "status": "a lab's state is root's alone",
    "cli": "it runs commands inside a lab's network namespaces",
}


def main(argv: list[str] | None = None) -> int:
    """Runs one command; its exit status. stdout and stderr are guarded
    (netrig.cli.console): a reader that goes away (`netrig run s.yaml | head -1`) stops
    the words, never the work, and a command that otherwise succeeded exits 141 then.
    Ctrl-C (SIGINT) exits 130, SIGTERM 143, whoever started netrig (console.take_back_sigint)."""
    console.take_back_sigint()
    with console.guarded() as con:
        code = _main(list(sys.argv[1:] if argv is None else argv))
    if con.broken and code == 0:
        return console.EXIT_PIPE_CLOSED
    return code


def _main(argv: list[str]) -> int:
    try:
        if not argv or argv[0] in ("-h", "--help"):
            _, commands = parser.build()
            print(parser.usage(commands), end="")
            return 0 if argv else 2
        if argv[0] in ("-V", "--version"):
            argv = ["version"]
        if argv[0] in RAW:
            return RAW[argv[0]](argv[1:])
        ap, commands = parser.build()
        if argv[0] not in commands:
            print(f"netrig: error: {parser.unknown_command(argv[0], commands)}\n"
                  "  ('netrig help' lists them)", file=sys.stderr)
            return 2
        parser_of = commands[argv[0]].parser
        if argv[0] != "exec" and (mininets := parser_of.mininets(argv[1:])):
            parser_of.unrecognized(mininets, argv)
        args, extra = ap.parse_known_args(argv)
        if extra:  # said with the command's own usage, not the top parser's
            commands[args.command].parser.unrecognized(extra, argv)
        if args.command in NEEDS_ROOT and os.geteuid() != 0:
            from netrig.cli.run import root_not_needed

            if not root_not_needed(args):
                name = "link set" if args.command == "link" else args.command
                raise NeedsRoot(f"netrig {name} needs root ({NEEDS_ROOT[args.command]}); run it with sudo")
        return args.fn(args)
    except NeedsRoot as e:
        print(e, file=sys.stderr)
        return 2
    except BrokenPipeError:  # a write that went around the guarded streams (none known)
        return console.EXIT_PIPE_CLOSED
    except NetrigError as e:
        print(f"netrig: error: {plain(str(e))}", file=sys.stderr)
        return 1
    except PermissionError as e:  # the system refused something a check above did not foresee
        print(f"netrig: error: {e.filename or ''}{': ' if e.filename else ''}{e.strerror}"
              " (netrig needs root for labs and experiments)", file=sys.stderr)
        return 1
    except OSError as e:  # (a file gone between a check and its use)
        print(f"netrig: error: {os_words(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        print("netrig: interrupted", file=sys.stderr)
        return 143 if isinstance(e, Terminated) else 130
