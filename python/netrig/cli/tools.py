"""Commands that hand their whole command line to a tool: `perf` (netrig-perf, which
replaces this process), `tc` (tc's shim inside a lab), `mn` (Mininet's mn) and
`mininet` (a Mininet script), all on netrig's own; and `version`.

main() calls perf, tc, mn and mininet with the words after the command, unparsed
(their options are the tool's); they are registered here for `netrig help`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from netrig import __version__
from netrig._bins import binary
from netrig.cli.base import Adder
from netrig.errors import NetrigError


def perf(args: list[str]) -> int:
    exe = str(binary("netrig-perf"))
    # Replace this process, so signals and exit codes are netrig-perf's own.
    if hasattr(os, "execv"):
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(exe, [exe, *args])
    return subprocess.call([exe, *args])  # pragma: no cover


def tc(args: list[str]) -> int:
    """tc's command line inside a lab (netrig.lab.tcshim): on a link netrig-link carries
    it is a live change or its counters; anything else runs the real tc."""
    from netrig.lab import tcshim

    sys.stdout.flush()
    return tcshim.main(args)


def mn(args: list[str]) -> int:
    """netrig mn: Mininet's mn command line, whole (mn's own -h), on netrig's Mininet
    (netrig.mnrun.mn puts the compat package first on sys.path before anything)."""
    from netrig.mnrun import mn

    return mn.main(args)


def mininet(args: list[str]) -> int:
    """netrig mininet: a Mininet script on netrig's Mininet (netrig.mnrun.run)."""
    from netrig.mnrun import run

    return run.main(args)


# The commands main() runs before parsing, with the words after them.
RAW = {"perf": perf, "tc": tc, "mn": mn, "mininet": mininet}


def version(_: argparse.Namespace) -> int:
    """netrig's version and each binary's own (`netrig-perf 0.1.0`); a binary that
    cannot be found or run is named, and the exit status is 1."""
    print(f"netrig {__version__}")
    code = 0
    for name in ("netrig-perf", "netrig-link", "netrig-analyze"):
        try:
            out = subprocess.run([str(binary(name)), "--version"], capture_output=True, text=True,
                                 check=False, timeout=10)
            line = out.stdout.strip() or out.stderr.strip()
            if out.returncode != 0 or not line:
                raise NetrigError(f"'{binary(name)} --version' exited with status {out.returncode}")
            print(line)
        except (NetrigError, OSError, subprocess.TimeoutExpired) as e:
            print(f"{name}: not available ({e})")
            code = 1
    return code


def _raw(args: argparse.Namespace) -> int:  # pragma: no cover (main() runs them unparsed)
    return RAW[args.command](list(args.args))


def register(cmd: Adder) -> None:
    p = cmd("perf", _raw, "perf ARGS...", "the traffic tool: iperf3's options and protocol, "
            "plus latency probes", ["netrig perf -s -1 &", "netrig perf -c 127.0.0.1 -t 5",
                                    "netrig perf -c 127.0.0.1 --probe -t 10"],
            "netrig perf runs netrig-perf with the same arguments; 'netrig perf --help' "
            "lists them.")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                   help="netrig-perf's arguments, as iperf3's (e.g. -c 127.0.0.1 -t 5)")
    p = cmd("tc", _raw, "tc ARGS...", "tc's command line inside a lab: on a link netrig-link "
            "carries, a live change or its counters", [
                "netrig exec s0 -- tc qdisc add dev s0-p2 root pie limit 1000 target 20ms",
                "netrig exec h1 -- tc -s qdisc show dev h1-eth0",
                "ip netns exec pf-h1 netrig tc qdisc change dev h1-eth0 root netem delay 20ms"],
            "netrig tc takes tc's own arguments. In a lab's namespace, 'tc qdisc add|change|replace|"
            "del dev IF root ...' (netem, pie, codel, fq_codel, red, tbf, htb with one class, "
            "pfifo, bfifo) on a device whose link netrig-link carries changes that link "
            "direction live, and 'tc -s qdisc show' prints its counters in tc's format; "
            "anything else runs the real tc. 'netrig exec' puts this tc first on PATH.")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                   help="tc's arguments (e.g. qdisc add dev h1-eth0 root netem delay 20ms)")
    p = cmd("mn", _raw, "mn [mn's OPTIONS...]", "Mininet's mn command line on a netrig lab", [
                "netrig mn --topo linear,3 --test pingall",
                "netrig mn --topo tree,2,2 --link tc,bw=10,delay=5ms",
                "netrig mn --custom mytopo.py --topo mytopo --test pingall"],
            "netrig mn takes mn's options ('netrig mn -h' lists them); every switch is a Linux "
            "bridge, shaped links are carried by netrig-link (exact delay on any kernel), and "
            "-c removes only what netrig made.")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="OPTIONS",
                   help="mn's options (e.g. --topo linear,3 --test pingall)")
    p = cmd("mininet", _raw, "mininet SCRIPT.py [ARGS...] | -m MODULE | -c CODE",
            "run a Mininet script, unmodified, on a netrig lab", [
                "netrig mininet examples/mininet/bufferbloat.py --time 10",
                "netrig mininet -m mininet.examples.simpleperf",
                "netrig mininet -c 'from mininet.net import Mininet; print(Mininet)'"],
            "Inside the command, 'import mininet' is netrig's Mininet (2.3's API): hosts in "
            "namespaces, switches as Linux bridges, TCLinks emulated exactly by netrig-link on "
            "any kernel, tc lines on them taken as live changes. A Mininet installed on the "
            "machine is untouched. Whatever the script leaves up is taken down when it ends.")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                   help="the script and its arguments (e.g. bufferbloat.py --time 10)")
    cmd("version", version, "version", "versions of netrig, netrig-perf and netrig-link",
        ["netrig version", "netrig --version"])
