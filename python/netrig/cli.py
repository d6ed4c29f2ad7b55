"""The `netrig` command.

Subcommands hand over to the component that owns the work:
  netrig perf ARGS...            netrig-perf with the same arguments (iperf3's command line)
  netrig up FILE                 build the lab a topology file describes, and leave it up
  netrig down | status | pingall | exec NODE -- CMD | link set A B k=v | clean
  netrig explain FILE SRC DST    what theory expects between two nodes
  netrig run SCENARIO            an experiment: sweeps, repetitions, results, report
  netrig report DIR | compare DIR1 DIR2
  netrig version                 versions of netrig and its binaries
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from netrig import __version__
from netrig._bins import binary
from netrig.errors import NetrigError

USAGE = """\
netrig COMMAND [ARGS]

commands:
  perf ARGS...                 traffic tool: iperf3's options and protocol, plus latency
                               probes (netrig perf --help lists them)
  up FILE [--prefix P]         build the lab FILE describes and leave it running
  down [--prefix P]            tear a lab down: its processes, namespaces, links
  status [--prefix P] [--json] nodes, addresses, links and their live stats
  exec NODE [--prefix P] -- CMD
                               run CMD inside NODE (names of the lab resolve)
  pingall [--prefix P] [-c N]  ping every host from every host
  link set A B KEY=VALUE...    change the link A-B live (delay=50ms rate=10Mbit loss=1%)
  clean [--all]                remove labs left by a crashed netrig or netrig-link
  explain FILE SRC DST [--window W] [--loss P] [--flows SRC:DST[xN] ...]
                               the path, bottleneck, base RTT, BDP and expected goodput
  run SCENARIO [--quick] [--set KEY=VALUE ...] [--out DIR] [--resume DIR]
                               run an experiment: every sweep point, every repetition,
                               on a fresh network each; results, figures and report.html
                               in results/<scenario>/<time>/ (or --out)
  report DIR                   rebuild a results directory's figures and report
  compare DIR1 DIR2 [--out D]  two runs of an experiment side by side
      (run, report, compare: a results directory another user owns is refused
       unless --allow-foreign-dir is given)
  version                      versions of netrig and its binaries
"""


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
}


class NeedsRoot(NetrigError):
    pass


def _perf(args: list[str]) -> int:
    exe = str(binary("netrig-perf"))
    # Replace this process, so signals and exit codes are netrig-perf's own.
    if hasattr(os, "execv"):
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(exe, [exe, *args])
    return subprocess.call([exe, *args])  # pragma: no cover


def _version(_: argparse.Namespace) -> int:
    print(f"netrig {__version__}")
    out = subprocess.run(
        [str(binary("netrig-perf")), "--version"], capture_output=True, text=True, check=False
    )
    print(out.stdout.strip())
    return 0


def _prefix(args: argparse.Namespace) -> str:
    from netrig.lab.state import LabError, labs

    if args.prefix:
        return args.prefix
    up = labs()
    if len(up) == 1:
        return up[0]
    if not up:
        raise LabError("no lab is up (netrig up FILE builds one)")
    raise LabError(f"several labs are up ({', '.join(up)}): say which with --prefix")


def _up(args: argparse.Namespace) -> int:
    from netrig.lab.network import Network
    from netrig.lab.state import read_topology
    from netrig.topo.load import loads
    from netrig.topo.model import TopologyError

    t0 = time.monotonic()
    _, text, _ = read_topology(args.file)  # read once: what is built is what is recorded
    topo = loads(text, source=args.file)  # errors name the file as typed; the lab, its absolute path
    problem = None if args.prefix else topo.lab_prefix_problem()
    if problem:  # found here, at its line, rather than by the builder
        raise TopologyError([problem])
    net = Network(topo, prefix=args.prefix, topology_text=text,
                  progress=None if args.quiet else lambda m: print(f"  {m}", file=sys.stderr))
    net.start()
    st = net.detach()
    print(f"lab '{st.prefix}' is up ({len(net.topo.nodes)} nodes, {len(net.topo.links)} links) "
          f"in {time.monotonic() - t0:.2f} s")
    if not args.quiet:
        _print_nodes(st.plan)
    return 0


def _down(args: argparse.Namespace) -> int:
    from netrig.lab.build import teardown
    from netrig.lab.state import LabState

    prefix = _prefix(args)
    errors = teardown(LabState.load(prefix))
    for e in errors:
        print(f"netrig: {e}", file=sys.stderr)
    if not errors:
        print(f"lab '{prefix}' is down")
    return 1 if errors else 0


def _print_nodes(plan: dict) -> None:
    for name, n in plan["nodes"].items():
        addrs = ", ".join(f"{i['name']} {i['addr']}" for i in n["ifaces"]) or "-"
        print(f"  {name:<10} {n['kind']:<7} {addrs}")


def _fmt_shaping(s: dict) -> str:
    keys = ("rate", "delay", "jitter", "loss", "queue", "aqm")
    parts = [f"{k}={s[k]['type'] if isinstance(s[k], dict) and 'type' in s[k] else s[k]}"
             for k in keys if k in s]
    return " ".join(parts) or "unshaped"


def _status(args: argparse.Namespace) -> int:
    from netrig.lab import netns
    from netrig.lab.state import LabState, alive
    from netrig.link import userspace

    st = LabState.load(_prefix(args))
    pid = st.pids.get("netrig-link", 0)
    emu_alive = alive(pid, "netrig-link")
    stats = {}
    if st.control and emu_alive:
        try:
            stats = {l["link"]: l for l in userspace.request(st.control, {"cmd": "stats"})["links"]}
        except NetrigError as e:
            print(f"netrig: {e}", file=sys.stderr)
    missing = [ns for ns in st.namespaces if not netns.exists(ns)]
    dead = _dead(st, missing)
    if args.json:
        print(json.dumps({"prefix": st.prefix, "status": st.status, "topology": st.topology,
                          "missing_namespaces": missing, "netrig_link": {"pid": pid, "alive": emu_alive},
                          "dead": dead, **st.plan, "live": stats}, indent=1))
        return 1 if dead else 0
    print(f"lab '{st.prefix}' ({st.topology}): {'NOT ALL UP' if dead else st.status}, "
          f"backend {st.backend}")
    for line in dead:
        print(f"  {line}")
    if st.topology_sha256 and _file_sha256(st.topology) != st.topology_sha256:
        print(f"  CHANGED: {st.topology} is no longer the file the lab was built from "
              "(link set refuses it)")
    if st.control and emu_alive:
        print(f"  netrig-link pid {pid}: running")
    print("nodes:")
    _print_nodes(st.plan)
    print("links:")
    for l in st.plan["links"]:
        line = f"  {l['name']:<10} {l['a']}-{l['b']:<8} "
        a, b = _fmt_shaping(l["a_to_b"]), _fmt_shaping(l["b_to_a"])
        line += a if a == b else f"a_to_b: {a}; b_to_a: {b}"
        print(line)
        live = stats.get(l["name"])
        if live:
            for d in ("a_to_b", "b_to_a"):
                x = live.get(d, {})
                print(f"      {d}: queue {x.get('queue_packets', 0)} p / {x.get('queue_bytes', 0)} B, "
                      f"delivered {x.get('delivered', 0)} ({x.get('delivered_bytes', 0)} B), "
                      f"drops: queue full {x.get('drops_overflow', 0)}, aqm {x.get('drops_aqm', 0)}, "
                      f"loss {x.get('lost', 0)}; late p99 {x.get('lateness', {}).get('p99_us', 0):.0f} us")
    return 1 if dead else 0


def _file_sha256(path: str) -> str | None:
    from netrig.lab.state import read_topology

    try:
        return read_topology(path)[2]
    except NetrigError:
        return None


def _dead(st, missing: list[str]) -> list[str]:
    """What of lab `st` is dead, gone or not up yet, one line each (none when all is up)."""
    from netrig.lab.state import alive

    dead = []
    for role, pid in st.pids.items():  # the lab's emulators
        if not alive(pid, role):
            dead.append(f"DEAD: {role} (pid {pid}) is NOT RUNNING: the links it emulates pass nothing")
    dead += [f"DEAD: namespace {ns} is gone" for ns in missing]
    if st.owner_pid and not alive(st.owner_pid):
        who = "the netrig building it" if st.status == "building" else "the netrig running it"
        dead.append(f"DEAD: {who} (pid {st.owner_pid}) is gone; 'netrig clean' removes the lab")
    elif st.status != "up":
        dead.append(f"BUILDING: pid {st.owner_pid} is still building it; it is not up yet")
    return dead


def _exec(args: argparse.Namespace) -> int:
    from netrig.lab.state import LabState

    st = LabState.load(_prefix(args))
    if args.node not in st.node_ns:
        raise NetrigError(f"lab '{st.prefix}' has no node '{args.node}' "
                          f"(it has {', '.join(st.node_ns)})")
    cmd = [c for c in args.cmd if c != "--"] or [os.environ.get("SHELL", "/bin/sh")]
    argv = ["ip", "netns", "exec", st.node_ns[args.node], *cmd]
    sys.stdout.flush()
    os.execvp(argv[0], argv)
    return 127  # pragma: no cover


def _pingall(args: argparse.Namespace) -> int:
    from netrig.lab.network import Network

    net = Network.attach(_prefix(args))
    results = net.pingall(count=args.count)
    lost = [(a, b) for (a, b), r in results.items() if r.received == 0]
    hosts = net.hosts()
    width = max(len(h) for h in hosts)
    for a in hosts:
        row = [("." if results[(a, b)].received else "X") if a != b else " " for b in hosts]
        print(f"{a:<{width}} -> {' '.join(row)}")
    n = len(results)
    print(f"pingall: {n - len(lost)}/{n} pairs reached"
          + (f"; unreachable: {', '.join(f'{a}->{b}' for a, b in lost[:10])}" if lost else ""))
    return 1 if lost else 0


def _link(args: argparse.Namespace) -> int:
    from netrig.lab.network import Network

    if args.action != "set":
        raise NetrigError(f"netrig link {args.action}: only 'set' is known")
    import yaml

    from netrig.topo import load as tload

    params: dict = {}
    for kv in args.params:
        key, sep, value = kv.partition("=")
        if not sep:
            raise NetrigError(f"'{kv}': write KEY=VALUE, e.g. delay=50ms")
        # As a file would read it: ecn=true is a boolean, flows=64 a number, 10ms text.
        try:
            parsed = tload.parse_value(value) if value.strip() else ""
        except yaml.YAMLError as e:
            raise NetrigError(f"{kv}: the value is not YAML: {e}") from None
        if "." in key:  # aqm.target=10ms: one parameter of the link's discipline
            outer, _, inner = key.partition(".")
            now = params.get(outer)
            params[outer] = {**({"type": now} if isinstance(now, str) else now or {}), inner: parsed}
        elif isinstance(params.get(key), dict) and isinstance(parsed, str):
            params[key] = {**params[key], "type": parsed}  # aqm.flows=64 aqm=fq_codel
        else:
            params[key] = parsed
    if not params:
        raise NetrigError("nothing to set: give KEY=VALUE, e.g. delay=50ms")
    net = Network.attach(_prefix(args))
    net.set_link(args.a, args.b, dir=args.dir, **params)
    print(f"link {net.topo.link_named(args.a, args.b).name}: set {' '.join(args.params)}")
    return 0


def _clean(args: argparse.Namespace) -> int:
    from netrig.lab.build import teardown
    from netrig.lab.state import LabState, alive, labs

    removed = 0
    for prefix in labs():
        try:
            st = LabState.load(prefix)
        except NetrigError as e:
            print(f"netrig: {e}", file=sys.stderr)
            continue
        crashed = st.owner_pid and not alive(st.owner_pid)
        emu_dead = "netrig-link" in st.pids and not alive(st.pids["netrig-link"], "netrig-link")
        why = ("--all" if args.all else "its builder died" if crashed
               else "its netrig-link died" if emu_dead else "")
        if not why:
            continue
        errors = teardown(st)
        for e in errors:
            print(f"netrig: {e}", file=sys.stderr)
        print(f"removed lab '{prefix}' ({why})")
        removed += 1
    if not removed:
        print("nothing to clean")
    return 0


def _explain(args: argparse.Namespace) -> int:
    from netrig import units
    from netrig.theory import analyse, explain_text
    from netrig.topo.load import load
    from netrig.topo.plan import make_plan

    plan = make_plan(load(args.file))
    window = units.size_bytes(args.window) if args.window else None
    loss = units.fraction(args.loss) if args.loss else None
    report = analyse(plan, args.src, args.dst, window=window, loss=loss, flows=args.flows or None)
    print(explain_text(report))
    return 0


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from netrig.exp import results as res
    from netrig.exp import runner
    from netrig.exp.scenario import load_scenario

    if args.resume:
        out = Path(args.resume)
        if not (out / "meta.json").exists() or not (out / "scenario.yaml").exists():
            raise NetrigError(f"--resume {out}: not a netrig results directory "
                              "(it lacks meta.json or scenario.yaml)")
        if args.scenario or args.quick or args.set:
            raise NetrigError("--resume DIR runs the scenario saved in DIR: give no scenario, --quick or --set")
        scenario = load_scenario(out / "scenario.yaml")
    else:
        if not args.scenario:
            raise NetrigError("netrig run SCENARIO (or --resume DIR)")
        scenario = load_scenario(args.scenario, quick=args.quick, sets=args.set)
        out = Path(args.out) if args.out else res.new_dir(Path(args.results), scenario.name,
                                                           args.allow_foreign_dir)
        if args.out and (out / "meta.json").exists():
            raise NetrigError(f"--out {out}: it already holds results (use --resume {out} to finish them)")
    if not args.quiet:
        print(f"netrig: {scenario.name}: {len(scenario.points)} point(s) x {scenario.repeat} "
              f"repetition(s) = {scenario.runs} run(s), about {scenario.estimate_s() / 60:.1f} min; "
              f"results in {out}", file=sys.stderr)
    out, status = runner.run(scenario, out, resume=bool(args.resume), progress=not args.quiet,
                             argv=sys.argv, allow_foreign=args.allow_foreign_dir)
    code = {"complete": 0, "failed": 1, "interrupted": 130}[status]
    try:
        from netrig.exp import report

        page = report.build(out, args.allow_foreign_dir)
        print(f"netrig: report: {page}", file=sys.stderr)
    except ImportError:
        pass
    except Exception as e:  # the measurements are kept whatever the report does
        print(f"netrig: the report failed ({e}); the results are in {out}", file=sys.stderr)
        code = code or 1
    if status == "interrupted":
        print(f"netrig: interrupted; what was measured is in {out}; "
              f"'netrig run --resume {out}' finishes it", file=sys.stderr)
    print(out)
    return code


def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from netrig.exp import report

    print(report.build(Path(args.dir), args.allow_foreign_dir))
    return 0


def _compare(args: argparse.Namespace) -> int:
    from pathlib import Path

    from netrig.exp import plot

    print(plot.compare_dirs([Path(d) for d in args.dirs], Path(args.out) if args.out else None,
                            args.allow_foreign_dir))
    return 0


def _plot(args: argparse.Namespace) -> int:
    from pathlib import Path

    from netrig.exp import plot

    dirs = [a for a in args.items if Path(a).is_dir()]
    names = [a for a in args.items if not Path(a).is_dir()]
    for path in plot.plot_command([Path(d) for d in dirs], names,
                                  Path(args.out) if args.out else None, args.format, args.run):
        print(path)
    return 0


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="netrig")
    sub = ap.add_subparsers(dest="command")

    def cmd(name: str, fn, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help)
        p.set_defaults(fn=fn)
        return p

    def prefix(p: argparse.ArgumentParser) -> None:
        p.add_argument("--prefix", help="the lab (default: the only one up)")

    def foreign(p: argparse.ArgumentParser) -> None:
        p.add_argument("--allow-foreign-dir", action="store_true",
                       help="write results into a directory another user owns")

    p = cmd("up", _up, "build a lab and leave it up")
    p.add_argument("file")
    p.add_argument("--prefix", help="name prefix of everything created (default: the file's)")
    p.add_argument("-q", "--quiet", action="store_true")
    prefix(cmd("down", _down, "tear a lab down"))
    p = cmd("status", _status, "a lab's nodes, links and live stats")
    prefix(p)
    p.add_argument("--json", action="store_true")
    p = cmd("exec", _exec, "run a command in a node")
    p.add_argument("node")
    p.add_argument("cmd", nargs="*", help="after --: the command and its arguments")
    prefix(p)
    p = cmd("pingall", _pingall, "ping every host pair")
    p.add_argument("-c", "--count", type=int, default=1)
    prefix(p)
    p = cmd("link", _link, "change a link live")
    p.add_argument("action", choices=["set"])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("params", nargs="*", help="KEY=VALUE: delay=50ms loss=0%% aqm=pie ...")
    p.add_argument("--dir", choices=["a_to_b", "b_to_a"],
                   help="change one direction only (default: both)")
    prefix(p)
    p = cmd("clean", _clean, "remove crashed labs")
    p.add_argument("--all", action="store_true", help="remove every lab netrig made")
    p = cmd("explain", _explain, "what theory expects between two nodes")
    p.add_argument("file")
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--window", help="TCP window (e.g. 64KB): adds the W/RTT limit")
    p.add_argument("--loss", help="random loss (e.g. 1%%): adds the Mathis limit")
    p.add_argument("--flows", nargs="+", metavar="SRC:DST[xN]",
                   help="concurrent flows: their max-min fair shares")
    p = cmd("run", _run, "run an experiment")
    p.add_argument("scenario", nargs="?")
    p.add_argument("--quick", action="store_true", help="the scenario's quick: variant")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="change one value (e.g. links.r2-r3.delay=40ms, flows.bulk.window=64KB)")
    p.add_argument("--out", help="results directory (default: RESULTS/<scenario>/<time>)")
    p.add_argument("--results", default="results", help="where results go (default: ./results)")
    p.add_argument("--resume", metavar="DIR", help="finish an interrupted run in DIR")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    foreign(p)
    p = cmd("report", _report, "rebuild the figures and report of a results directory")
    p.add_argument("dir")
    foreign(p)
    p = cmd("compare", _compare, "results directories side by side, named by what differs")
    p.add_argument("dirs", nargs="+", metavar="DIR",
                   help="two results directories or more (e.g. results/004-bufferbloat/*)")
    p.add_argument("--out", help="where to write the comparison (default: beside the first)")
    foreign(p)
    p = cmd("plot", _plot, "draw recorded series of results directories on one plot")
    p.add_argument("items", nargs="+", metavar="DIR|SERIES",
                   help="results directories, then series: throughput, delivered, cwnd, "
                        "tcp_rtt, rtt, queue, sojourn, drops (e.g. results/004/x rtt queue)")
    p.add_argument("-o", "--out", help="the file (several series: FILE-SERIES.FMT; "
                   "default ./netrig-plot-SERIES.FMT)")
    p.add_argument("--format", default="png", choices=["png", "svg", "pdf"])
    p.add_argument("--run", action="append", metavar="RUN",
                   help="a run to draw (p000-r01); default the first repetition of each point")
    cmd("version", _version, "versions")
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if not argv or argv[0] in ("-h", "--help", "help"):
            print(USAGE, end="")
            sys.stdout.flush()
            return 0 if argv else 2
        if argv[0] == "perf":
            return _perf(argv[1:])
        ap = _parser()
        if argv[0] not in ap._subparsers._group_actions[0].choices:  # type: ignore[union-attr]
            ap.error(f"unknown command '{argv[0]}' (try 'netrig --help')")
        if argv[0] == "exec" and "--" in argv:
            i = argv.index("--")
            args = ap.parse_args(argv[:i])
            args.cmd = argv[i + 1:]
        else:
            args = ap.parse_args(argv)
        if args.command in NEEDS_ROOT and os.geteuid() != 0:
            name = "link set" if args.command == "link" else args.command
            raise NeedsRoot(f"netrig {name} needs root ({NEEDS_ROOT[args.command]}); run it with sudo")
        code = args.fn(args)
        sys.stdout.flush()  # a closed pipe is found here, not at exit
        return code
    except NeedsRoot as e:
        print(e, file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`netrig status | head -1`): stop quietly, as a program
        # killed by SIGPIPE would; stdout goes to /dev/null so the exit flush says nothing.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141
    except NetrigError as e:
        print(f"netrig: error: {e}", file=sys.stderr)
        return 1
    except PermissionError as e:  # the system refused something a check above did not foresee
        print(f"netrig: error: {e.filename or ''}{': ' if e.filename else ''}{e.strerror}"
              " (netrig needs root for labs and experiments)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("netrig: interrupted", file=sys.stderr)
        return 130
