"""Commands on results directories: `report` (rebuild results.csv, figures and the
report, then print the headline table), `compare` (directories side by side) and
`plot` (recorded series on one plot). netrig.exp.pipeline and netrig.exp.render.plot do the
work; this says where it went.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from netrig.cli.base import Adder, foreign_arg, refused, terminal_width
from netrig.cli.run import say


def report(args: argparse.Namespace) -> int:
    from netrig.exp import pipeline

    say(pipeline.rebuild(Path(args.dir), args.allow_foreign_dir, warn=refused, width=terminal_width()))
    return 0


def compare(args: argparse.Namespace) -> int:
    from netrig.exp.render import plot

    print(plot.compare_dirs([Path(d) for d in args.dirs], Path(args.out) if args.out else None,
                            args.allow_foreign_dir, warn=refused))
    return 0


def plot(args: argparse.Namespace) -> int:
    from netrig.exp.render import plot

    dirs = [a for a in args.items if Path(a).is_dir()]
    names = [a for a in args.items if not Path(a).is_dir()]
    for path in plot.plot_command([Path(d) for d in dirs], names,
                                  Path(args.out) if args.out else None, args.format, args.run,
                                  warn=refused):
        print(path)
    return 0


def register(cmd: Adder) -> None:
    p = cmd("report", report, "report DIR", "print a results directory's headline table and "
            "rebuild its results.csv, figures and report",
            ["netrig report results/bufferbloat/20261123-101500"])
    p.add_argument("dir", metavar="DIR", help="a results directory netrig run wrote "
                   "(e.g. results/bufferbloat/20261123-101500)")
    foreign_arg(p)
    p = cmd("compare", compare, "compare DIR DIR [DIR...] [--out D]",
            "results directories of an experiment side by side, each named by what differs "
            "(scenario values, sweep, netrig version, host): sweep curves and time series",
            ["netrig compare results/bb/run1 results/bb/run2",
             "netrig compare results/004-bufferbloat/* --out /tmp/cmp"])
    p.add_argument("dirs", nargs="+", metavar="DIR",
                   help="two results directories or more (e.g. results/bb/run1 results/bb/run2)")
    p.add_argument("--out", metavar="D",
                   help="where to write compare.html (default: beside the first; e.g. /tmp/cmp)")
    foreign_arg(p)
    p = cmd("plot", plot, "plot DIR [DIR...] SERIES... [-o FILE] [--format F] [--run R]",
            "draw recorded series of one or more results directories on one plot, with "
            "theory's reference lines",
            ["netrig plot results/bb/run1 rtt queue",
             "netrig plot results/bb/run1 results/bb/run2 throughput -o tput.svg --format svg"])
    p.add_argument("items", nargs="+", metavar="DIR|SERIES",
                   help="results directories, then series: throughput, delivered, cwnd, tcp_rtt, "
                        "rtt, queue, sojourn, drops (e.g. results/bb/run1 rtt queue)")
    p.add_argument("-o", "--out", metavar="FILE", help="the file (several series: FILE-SERIES.FMT; "
                   "default ./netrig-plot-SERIES.FMT; e.g. rtt.png)")
    p.add_argument("--format", default="png", choices=["png", "svg", "pdf"],
                   help="the file format (e.g. --format svg)")
    p.add_argument("--run", action="append", metavar="RUN",
                   help="a run to draw (default: each point's first repetition; e.g. p000-r01)")
