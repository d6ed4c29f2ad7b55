"""Commands on a topology file or a scenario's topology, no lab needed: `explain` (what
theory expects between two nodes, netrig.theory; a scenario's first flow's by default)
and `graph` (the topology drawn, netrig.topo.graph)."""

from __future__ import annotations

import argparse

from netrig.cli.base import Adder


def explain(args: argparse.Namespace) -> int:
    from netrig import units
    from netrig.exp.spec.examples import find
    from netrig.theory import analyse, explain_text
    from netrig.topo.plan import make_plan

    topo, src, dst, said = explained(str(find(args.file, "topology or scenario file")), args.src, args.dst)
    plan = make_plan(topo)
    window = units.size_bytes(args.window) if args.window else None
    loss = units.fraction(args.loss) if args.loss else None
    report = analyse(plan, src, dst, window=window, loss=loss, flows=args.flows or None)
    if said:
        print(said)
    print(explain_text(report))
    return 0


def explained(file: str, src: str | None, dst: str | None):
    """What `netrig explain FILE [SRC DST]` is about: the topology (a topology file's,
    or a scenario's at its first sweep point, as `graph` draws it), the two ends (given,
    else the scenario's first flow's, as its data goes) and a line saying where they came
    from (empty when given)."""
    import yaml

    from netrig.errors import NetrigError
    from netrig.exp.spec.scenario import drawable
    from netrig.topo import load as tload

    if (src is None) != (dst is None):
        raise NetrigError(f"netrig explain {file} {src}: give both ends, SRC and DST (e.g. h1 h9)")
    try:
        data = tload.parse_value(tload.read(file))
    except yaml.YAMLError:
        data = None  # (said by the topology's reader, at its line)
    if not (isinstance(data, dict) and "flows" in data):
        if src is None or dst is None:
            raise NetrigError(f"netrig explain {file}: a topology file: give the two ends, "
                              f"SRC and DST (e.g. netrig explain {file} h1 h9)")
        return tload.load(file), src, dst, ""
    topo, flows, name = drawable(file)
    if src is not None and dst is not None:
        return topo, src, dst, ""
    if not flows:
        raise NetrigError(f"netrig explain {file}: scenario {name} has no flow between two "
                          "nodes: give the two ends, SRC and DST (e.g. h1 h2)")
    flow, (src, dst) = next(iter(flows.items()))
    return topo, src, dst, (f"Scenario {name}, flow {flow} ({src} → {dst}); give SRC DST "
                            "for another pair")


def graph(args: argparse.Namespace) -> int:
    from netrig.exp.spec.examples import find
    from netrig.exp.spec.scenario import drawable
    from netrig.topo.graph import graph_command

    out = graph_command(find(args.file, "topology or scenario file"), args.out, args.format, scenario=drawable)
    print(out, end="" if out.endswith("\n") else "\n")
    return 0


def register(cmd: Adder) -> None:
    p = cmd("explain", explain, "explain FILE [SRC DST] [--window W] [--loss P] [--flows F...]",
            "what theory expects between two nodes: path, bottleneck, base RTT, BDP, goodput",
            ["netrig explain examples/portfolio.yaml h1 h9",
             "netrig explain examples/portfolio.yaml h1 h9 --window 64KB --loss 1%",
             "netrig explain examples/004-bufferbloat.yaml"],
            "FILE is a topology file, or a scenario (its topology at its first sweep point, "
            "as graph draws it); of a scenario, SRC and DST default to its first flow's ends.")
    p.add_argument("file", metavar="FILE",
                   help="a topology file or a scenario, or an example's name (e.g. portfolio)")
    p.add_argument("src", metavar="SRC", nargs="?",
                   help="the node sending (e.g. h1; a scenario's: its first flow's sender)")
    p.add_argument("dst", metavar="DST", nargs="?",
                   help="the node receiving (e.g. h9; a scenario's: its first flow's receiver)")
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
