"""Commands on a topology file, no lab needed: `explain` (what theory expects between
two nodes, netrig.theory) and `graph` (the topology drawn, netrig.topo.graph)."""

from __future__ import annotations

import argparse

from netrig.cli.base import Adder


def explain(args: argparse.Namespace) -> int:
    from netrig import units
    from netrig.exp.spec.examples import find
    from netrig.theory import analyse, explain_text
    from netrig.topo.load import load
    from netrig.topo.plan import make_plan

    plan = make_plan(load(find(args.file, "topology file")))
    window = units.size_bytes(args.window) if args.window else None
    loss = units.fraction(args.loss) if args.loss else None
    report = analyse(plan, args.src, args.dst, window=window, loss=loss, flows=args.flows or None)
    print(explain_text(report))
    return 0


def graph(args: argparse.Namespace) -> int:
    from netrig.exp.spec.examples import find
    from netrig.exp.spec.scenario import drawable
    from netrig.topo.graph import graph_command

    out = graph_command(find(args.file, "topology or scenario file"), args.out, args.format, scenario=drawable)
    print(out, end="" if out.endswith("\n") else "\n")
    return 0


def register(cmd: Adder) -> None:
    p = cmd("explain", explain, "explain FILE SRC DST [--window W] [--loss P] [--flows F...]",
            "what theory expects between two nodes: path, bottleneck, base RTT, BDP, goodput",
            ["netrig explain examples/portfolio.yaml h1 h9",
             "netrig explain examples/portfolio.yaml h1 h9 --window 64KB --loss 1%"])
    p.add_argument("file", metavar="FILE", help="a topology file, or an example's name (e.g. portfolio)")
    p.add_argument("src", metavar="SRC", help="the node sending (e.g. h1)")
    p.add_argument("dst", metavar="DST", help="the node receiving (e.g. h9)")
    p.add_argument("--window", metavar="W", help="TCP window: adds the W/RTT limit (e.g. 64KB)")
    p.add_argument("--loss", metavar="P", help="random loss: adds the Mathis limit (e.g. 1%%)")
    p.add_argument("--flows", nargs="+", metavar="SRC:DST[xN]",
                   help="concurrent flows: their max-min fair shares (e.g. h1:h9x2 h4:h9)")
    p = cmd("graph", graph, "graph FILE [-o OUT.svg|.png] [--format F]",
            "draw a topology (or a scenario's, with its flows' paths): each link's rate, delay, "
            "queue and discipline, the bottleneck marked; text for a terminal, or SVG/PNG",
            ["netrig graph examples/portfolio.yaml", "netrig graph examples/004-bufferbloat.yaml -o bb.svg"])
    p.add_argument("file", metavar="FILE",
                   help="a topology file, or a scenario, or an example's name "
                        "(e.g. portfolio)")
    p.add_argument("-o", "--out", metavar="OUT",
                   help="write the drawing here, .svg or .png (e.g. lab.svg); default: text")
    p.add_argument("--format", choices=["text", "svg", "png"],
                   help="the format (default: -o's suffix; e.g. --format svg)")
