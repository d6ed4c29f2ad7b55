"""The `netrig` command.

Subcommands hand over to the component that owns the work; today:
  netrig perf ARGS...   runs netrig-perf with the same arguments (iperf3's command line)
  netrig version        prints versions of netrig and its binaries
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from netrig import __version__
from netrig._bins import binary
from netrig.errors import NetrigError

USAGE = """\
netrig COMMAND [ARGS]

commands:
  perf ARGS...   traffic tool: iperf3's options and protocol, plus latency probes
                 (netrig perf --help lists them)
  version        versions of netrig and its binaries
"""


def _perf(args: list[str]) -> int:
    exe = str(binary("netrig-perf"))
    # Replace this process, so signals and exit codes are netrig-perf's own.
    if hasattr(os, "execv"):
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(exe, [exe, *args])
    return subprocess.call([exe, *args])  # pragma: no cover


def _version() -> int:
    print(f"netrig {__version__}")
    out = subprocess.run(
        [str(binary("netrig-perf")), "--version"], capture_output=True, text=True, check=False
    )
    print(out.stdout.strip())
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    try:
        if command == "perf":
            return _perf(rest)
        if command == "version":
            return _version()
        parser = argparse.ArgumentParser(prog="netrig")
        parser.error(f"unknown command '{command}' (try 'netrig --help')")
    except NetrigError as e:
        print(f"netrig: error: {e}", file=sys.stderr)
        return 1
    return 2
