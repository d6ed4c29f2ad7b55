"""`netrig run`: an experiment, every sweep point and repetition on a fresh network
(or on a cluster's workers), then its results.csv, figures and report, then the
headline table, in that order (netrig.exp.pipeline): the results directory is whole
before a word of its summary is printed.

Also says when a run needs no root (`root_not_needed`): on a cluster, or on real hosts.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from netrig.cli.base import Adder, foreign_arg, refused, terminal_width
from netrig.errors import NetrigError


def cluster_address(args: argparse.Namespace) -> str | None:
    """The cluster `netrig run` hands its runs to: --cluster, else NETRIG_CLUSTER, unless
    --local; None runs them here."""
    if getattr(args, "local", False) or getattr(args, "command", "") != "run":
        return None
    return args.cluster or os.environ.get("NETRIG_CLUSTER") or None


def root_not_needed(args: argparse.Namespace) -> bool:
    """A run handed to a cluster, or of a scenario on real hosts over SSH (hosts:),
    builds no namespace here (a scenario that does not load: root is asked first)."""
    if args.command != "run":
        return False
    if cluster_address(args):
        return True
    from netrig.exp import pipeline

    try:
        scenario = pipeline.load(args.scenario, bool(args.quick), args.set,
                                 Path(args.resume) if args.resume else None)
        return scenario.points[0].hosts is not None
    except (NetrigError, OSError, IndexError):
        return False


def run(args: argparse.Namespace) -> int:
    from netrig.exp import pipeline

    if args.resume and (args.scenario or args.quick or args.set):
        raise NetrigError("--resume DIR runs the scenario saved in DIR: give no scenario, --quick or --set")
    resume = Path(args.resume) if args.resume else None
    scenario = pipeline.load(args.scenario, args.quick, args.set, resume)
    given = Path(args.out) if args.out and resume is None else None
    if given is not None:
        pipeline.results_dir(given, Path(args.results), scenario.name)  # refused before a cluster is reached
    address = cluster_address(args)  # reached and checked before anything is written
    campaign = pipeline.open_campaign(address, args.cert, scenario) if address else None
    try:
        out = resume or given or pipeline.results_dir(None, Path(args.results), scenario.name,
                                                       args.allow_foreign_dir)
        if not args.quiet:
            from netrig.exp.execute.progress import opening

            print(opening(scenario.name, len(scenario.points), scenario.repeat,
                          scenario.estimate_s(), str(out), terminal_width()), file=sys.stderr)
        done = pipeline.run(scenario, out, resume=resume is not None, progress=not args.quiet,
                            argv=sys.argv, allow_foreign=args.allow_foreign_dir,
                            campaign=campaign, warn=refused, width=terminal_width())
    finally:
        if campaign is not None:
            campaign.close()
    say(done)
    if done.status in ("interrupted", "terminated"):
        print(f"netrig: interrupted; what was measured is in {done.out}; "
              f"'netrig run --resume {done.out}' finishes it", file=sys.stderr)
    print(done.out)
    return done.code


def say(done) -> None:
    """A finished results directory's headline table and report (or why not)."""
    if done.headline is not None:
        print(done.headline + "\n")
    else:
        print(f"netrig: no headline table ({done.headline_error})", file=sys.stderr)
    if done.report is not None:
        print(f"report: {done.report}")
    else:
        print(f"netrig: {done.report_error}", file=sys.stderr)


def register(cmd: Adder) -> None:
    p = cmd("run", run, "run SCENARIO [--quick] [--set K=V]... [--out DIR] | --resume DIR",
            "run an experiment: every sweep point and repetition on a fresh network; results, "
            "figures and report", ["netrig run 004-bufferbloat --quick",
                                   "netrig run examples/003-window.yaml --set repeat=1",
                                   "netrig run --resume results/bufferbloat/20261123-101500"],
            "Results go to results/<scenario>/<time>/ below the current directory (or --out); "
            "at the end the headline table and the report's path are printed.")
    p.add_argument("scenario", nargs="?", metavar="SCENARIO",
                   help="a scenario file, or an example's name (e.g. 004-bufferbloat; "
                        "netrig examples lists them)")
    p.add_argument("--quick", action="store_true",
                   help="the scenario's quick: variant (e.g. shorter, one repetition)")
    p.add_argument("--set", action="append", default=[], metavar="K=V",
                   help="change one value (e.g. links.r2-r3.delay=40ms, flows.bulk.window=64KB)")
    p.add_argument("--out", metavar="DIR",
                   help="results directory (default: RESULTS/<scenario>/<time>; e.g. /tmp/bb)")
    p.add_argument("--results", default="results", metavar="RESULTS",
                   help="where results go (default: ./results; e.g. /srv/results)")
    p.add_argument("--resume", metavar="DIR", help="finish an interrupted run in DIR "
                   "(e.g. results/bufferbloat/20261123-101500)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress display (e.g. in a script: netrig run FILE -q)")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="hand each run to a worker of this Dask cluster and gather the files "
                        "here, which then needs no root (default: $NETRIG_CLUSTER; "
                        "e.g. tls://10.0.0.1:8786)")
    p.add_argument("--cert", metavar="FILE", help=CERT_HELP)
    p.add_argument("--local", action="store_true",
                   help="run here even when NETRIG_CLUSTER is set (e.g. --local)")
    foreign_arg(p)


CERT_HELP = ("the cluster certificate bundle to present (default: $NETRIG_CLUSTER_CERT; on the "
             "machine holding the cluster's CA, none needed; e.g. --cert lab1.pem)")
