"""Commands on a lab: `up`, `down`, `status`, `exec`, `cli` (the mininet> prompt),
`pingall`, `link set` and `clean`.

Each reads its arguments, calls netrig.lab (bringup, enter, linkset, build, status,
network) and says the outcome; the pingall matrix is drawn here (`ping_matrix`).
"""

from __future__ import annotations

import argparse
import os
import sys

from netrig.cli.base import Adder, prefix_arg, the_lab

DOWN_WAIT_S = 120.0  # the longest `down` waits for the kernel to free a lab


def up(args: argparse.Namespace) -> int:
    from netrig.exp.spec.examples import find
    from netrig.lab.bringup import bring_up

    said = None if args.quiet else lambda m: print(f"  {m}", file=sys.stderr)
    got = bring_up(find(args.file, "topology file"), args.prefix, args.wait, args.no_wait, progress=said)
    print(f"lab '{got.state.prefix}' is up ({got.nodes} nodes, {got.links} links) "
          f"in {got.took_s:.2f} s")
    if got.converged_s is not None:
        print(f"routing converged in {got.converged_s:.1f} s")
    if not args.quiet:
        from netrig.lab.status import print_nodes

        print_nodes(got.state.plan)
    if got.failed is not None:
        print(f"netrig: error: {got.failed}\n"
              f"  the lab is left up to look at: 'netrig status' (neighbours, peers, routes), "
              f"'netrig exec {got.router} -- vtysh -c \"show ip ospf neighbor\"', "
              f"'netrig exec {got.router} -- ip route'; 'netrig down' removes it", file=sys.stderr)
        return 1
    return 0


def down(args: argparse.Namespace) -> int:
    from netrig.lab import netns
    from netrig.lab.build import teardown
    from netrig.lab.state import LabState

    prefix = the_lab(args)
    notes: list[str] = []
    st = LabState.load(prefix)
    switches = sum(1 for n in st.plan.get("nodes", {}).values() if n.get("kind") == "switch")
    errors = teardown(st, notes)
    for e in notes + errors:
        print(f"netrig: {e}", file=sys.stderr)
    if errors:
        return 1
    if args.no_wait:
        print(f"lab '{prefix}' is down")
        return 0
    what = f"its {switches} bridges, one RCU grace period each" if switches else "its namespaces"

    def progress(waited: float) -> None:
        print(f"netrig: the kernel is still freeing the lab ({what}): {waited:.0f} s", file=sys.stderr)

    waited = netns.kernel_ready(DOWN_WAIT_S, progress)
    if waited is None:
        print(f"lab '{prefix}' is down; the kernel is still freeing it after {DOWN_WAIT_S:.0f} s "
              f"({what}): the next 'netrig up' waits for it")
    elif waited > 1:
        print(f"lab '{prefix}' is down (the kernel took {waited:.1f} s to free {what})")
    else:
        print(f"lab '{prefix}' is down")
    return 0


def status(args: argparse.Namespace) -> int:
    from netrig.lab import status

    return status.show(the_lab(args), args.json)


def exec_(args: argparse.Namespace) -> int:
    from netrig.lab.enter import entry
    from netrig.lab.state import LabState

    cmd = list(args.cmd)
    if cmd[:1] == ["--prefix"] and len(cmd) > 1 and args.prefix is None:
        args.prefix, cmd = cmd[1], cmd[2:]  # exec h1 --prefix pf ping h9
    if cmd[:1] == ["--"]:
        cmd = cmd[1:]
    got = entry(LabState.load(the_lab(args)), args.node, cmd, os.environ)
    os.environ.update(got.env)
    sys.stdout.flush()
    os.execvp(got.argv[0], got.argv)
    return 127  # pragma: no cover


def prompt(args: argparse.Namespace) -> int:
    """The mininet> prompt on a running lab, as Mininet's compat net (the lab stays up)."""
    from netrig.mnrun import run

    prefix = the_lab(args)
    run.activate()  # `import mininet` is netrig's from here on
    from mininet.cli import CLI
    from mininet.net import Mininet

    net = Mininet.attach(prefix)
    try:
        CLI(net)
    finally:
        net.stop()  # the shells it started; the lab stays up
    return 0


def pingall(args: argparse.Namespace) -> int:
    from netrig.lab.network import Network

    net = Network.attach(the_lab(args))
    results = net.pingall(count=args.count)
    hosts = net.hosts()
    print(ping_matrix(hosts, {pair: r.rtts_ms for pair, r in results.items()}))
    lost = [(a, b) for (a, b), r in results.items() if r.received == 0]
    n = len(results)
    print(f"pingall: {n - len(lost)}/{n} pairs reached"
          + (f"; unreachable: {', '.join(f'{a}->{b}' for a, b in lost[:10])}" if lost else ""))
    return 1 if lost else 0


def ping_matrix(hosts: list[str], rtts: dict[tuple[str, str], list[float]]) -> str:
    """The pingall matrix: a row per host that pings, a column per host pinged, each
    cell the median RTT in ms of the replies (x: none came back)."""
    def cell(a: str, b: str) -> str:
        if a == b:
            return "-"
        got = sorted(rtts.get((a, b)) or [])
        if not got:
            return "x"
        n = len(got)
        med = got[n // 2] if n % 2 else (got[n // 2 - 1] + got[n // 2]) / 2
        return f"{med:.3f}" if med < 10 else f"{med:.1f}" if med < 1000 else f"{med:.0f}"

    corner = "from \\ to"
    rows = [[cell(a, b) for b in hosts] for a in hosts]
    first = max(len(corner), *(len(h) for h in hosts))
    w = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(hosts)]
    out = ["median RTT in ms (x: no reply), from the row's host to the column's",
           f"{corner:<{first}}  " + "  ".join(h.rjust(w[k]) for k, h in enumerate(hosts))]
    out += [f"{a:<{first}}  " + "  ".join(c.rjust(w[k]) for k, c in enumerate(r))
            for a, r in zip(hosts, rows)]
    return "\n".join(x.rstrip() for x in out)


def link(args: argparse.Namespace) -> int:
    from netrig.errors import NetrigError
    from netrig.lab import linkset
    from netrig.lab.network import Network
    from netrig.topo.load import link_params

    if args.action != "set":
        raise NetrigError(f"netrig link {args.action}: only 'set' is known")
    a, b, given = linkset.words(args.words)
    params = link_params(given)
    net = Network.attach(the_lab(args))
    found = linkset.find(net, a, b)
    way, said = linkset.direction(found, args.dir, a, b)
    net.set_link(found.name, dir=way, **params)
    print(f"link {found.name}: set {' '.join(given)} on {said}{' only' if way else ''}")
    return 0


def clean(args: argparse.Namespace) -> int:
    from netrig.lab.build import clean

    removed = 0
    notes: list[str] = []
    found = clean(everything=args.all, notes=notes)
    for note in notes:
        print(f"netrig: {note}", file=sys.stderr)
    for prefix, why, errors in found:
        for e in errors:
            print(f"netrig: {e}", file=sys.stderr)
        if why:
            print(f"removed lab '{prefix}' ({why})")
            removed += 1
    if not removed:
        print("nothing to clean")
    return 0


def register(cmd: Adder) -> None:
    p = cmd("up", up, "up FILE [--prefix P] [-q] [--wait S|--no-wait]", "build the lab a "
            "topology file describes and leave it running", ["netrig up examples/portfolio.yaml",
                                                             "netrig up examples/lan.yaml --prefix lan2",
                                                             "netrig up examples/000-wan.yaml --wait 120"],
            "A lab whose routers run OSPF or BGP (FRR) is up once routing has converged: "
            "every router routes every prefix it should, its OSPF neighbours are Full, and "
            "every host reaches every host. After --wait seconds without that, netrig exits "
            "1, says what is missing, and leaves the lab up to look at.")
    p.add_argument("file", metavar="FILE",
                   help="a topology file: nodes and links (e.g. examples/portfolio.yaml)")
    p.add_argument("--prefix", metavar="P", help="the prefix of every name the lab creates "
                   "(default: the file's prefix: or name:; e.g. lan2)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print only the line saying the lab is up (e.g. netrig up FILE -q)")
    wait = p.add_mutually_exclusive_group()
    wait.add_argument("--wait", type=float, metavar="SECONDS",
                      help="with OSPF or BGP routers: wait at most this long for routing to "
                           "converge (default: 30 s plus three dead intervals, and BGP's "
                           "retries; e.g. --wait 120)")
    wait.add_argument("--no-wait", action="store_true",
                      help="return once the routers' daemons run, converged or not (e.g. "
                           "netrig up wan.yaml --no-wait)")
    p = cmd("down", down, "down [--prefix P] [--no-wait]", "tear a lab down: its processes, "
            "namespaces, links and emulator", ["netrig down", "netrig down --prefix pf"],
            "Returns once the kernel has freed the lab (a new namespace can be made): a Linux "
            "bridge takes the kernel about one RCU grace period (~16 ms here) to free, so a "
            "lab of 1,000 switches takes ~16 s; --no-wait returns as soon as the namespaces "
            "are deleted (the next 'netrig up' then waits for the kernel).")
    prefix_arg(p)
    p.add_argument("--no-wait", action="store_true",
                   help="return once the namespaces are deleted, before the kernel has freed "
                        "them (e.g. netrig down --no-wait)")
    p = cmd("status", status, "status [--prefix P] [--json]", "a lab's nodes, addresses, links "
            "and their live queues, drops and lateness; its routers' daemons, neighbours and routes",
            ["netrig status", "netrig status --json"],
            "Exits 1 with a DEAD: line for each dead emulator or FRR daemon, missing namespace "
            "or vanished builder. For each FRR router: its daemons, OSPF neighbours (state), "
            "BGP peers (state, prefixes received) and kernel route count.")
    prefix_arg(p)
    p.add_argument("--json", action="store_true",
                   help="the same as one JSON document (e.g. netrig status --json | jq .links)")
    p = cmd("exec", exec_, "exec NODE [--prefix P] [--] [CMD...]", "run a command inside a "
            "node; the lab's node names resolve", ["netrig exec h1 ping -c 3 h9",
                                                   "netrig exec h4 -- netrig-perf -s -1",
                                                   "netrig exec r1 -- vtysh -c 'show ip route'",
                                                   "netrig exec h1"],
            "Everything after NODE is the command, options and all ('--' before it is "
            "optional); no command starts a shell. Give --prefix before NODE. vtysh on a "
            "router running FRR talks to that router's daemons.")
    prefix_arg(p)
    p.add_argument("node", metavar="NODE", help="a node of the lab (e.g. h1)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD",
                   help="the command and its arguments (default: $SHELL; e.g. ping -c 3 h9)")
    prefix_arg(cmd("cli", prompt, "cli [--prefix P]", "the mininet> prompt on a running lab: "
                   "nodes, net, pingall, iperf, h1 ping h2, link h1 s1 down, link set, status, graph",
                   ["netrig cli", "printf 'pingall\\nh1 ping -c1 h2\\n' | netrig cli --prefix pf"],
                   "Mininet's CLI ('help' lists its commands) on any lab netrig up built: node "
                   "names in a node's command become addresses, and 'link L set delay=50ms' "
                   "changes a link while traffic runs. exit, quit or Ctrl-D leaves it; the lab "
                   "stays up ('netrig down' removes it). Commands can come through a pipe."))
    p = cmd("pingall", pingall, "pingall [--prefix P] [-c N]", "ping every host from every "
            "host: a matrix of median RTTs in ms", ["netrig pingall", "netrig pingall -c 5"])
    p.add_argument("-c", "--count", type=int, default=1, metavar="N",
                   help="echo requests per pair (default 1; e.g. -c 5)")
    prefix_arg(p)
    p = cmd("link", link, "link set LINK|A B KEY=VALUE... [--dir D] [--prefix P]",
            "change a link of a running lab live", ["netrig link set r2 r3 delay=50ms",
                                                    "netrig link set L1 rate=10Mbit loss=1%",
                                                    "netrig link set r2 r3 aqm=pie --dir r2-r3"],
            "Name the link by its name (one word) or by its two ends. loss=0%, delay=0ms and "
            "aqm=droptail turn a stage off; aqm.target=10ms sets one parameter of the "
            "discipline running.")
    p.add_argument("action", choices=["set"], metavar="set", help="what to do (e.g. set)")
    p.add_argument("words", nargs="+", metavar="LINK|A B KEY=VALUE",
                   help="the link, by name or by its ends, then the keys to change "
                        "(e.g. L1 delay=50ms, or r2 r3 rate=10Mbit)")
    p.add_argument("--dir", metavar="FROM-TO",
                   help="change one direction only, FROM-TO (or a_to_b, b_to_a: from the "
                        "first end named to the second; default: both; e.g. --dir r3-r2)")
    prefix_arg(p)
    p = cmd("clean", clean, "clean [--all]", "remove labs whose builder was killed or whose "
            "emulator died", ["netrig clean", "netrig clean --all"])
    p.add_argument("--all", action="store_true",
                   help="remove every lab netrig made, running or not (e.g. netrig clean --all)")
