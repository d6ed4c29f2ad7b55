"""The `netrig` command.

Subcommands hand over to the component that owns the work (`netrig help` lists them;
`netrig help CMD` shows one, with examples). Each is registered in `_parser()` by one
`cmd(name, function, synopsis, summary, examples)` block followed by its arguments,
each with a help text that gives an example. This module owns the words on the
terminal: help, "did you mean", the pingall matrix, the headline table's place.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from typing import NoReturn

from netrig import __version__, suggest
from netrig._bins import binary
from netrig.errors import NetrigError

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


class NeedsRoot(NetrigError):
    pass


def _real_hosts_only(args: argparse.Namespace) -> bool:
    """A `netrig run` of a scenario on real hosts over SSH (hosts:): it builds no
    namespace, so it needs no root (a scenario that does not load: root is asked first)."""
    if args.command != "run":
        return False
    from pathlib import Path

    from netrig.exp.record.files import load_scenario_of
    from netrig.exp.spec.scenario import load_scenario

    try:
        if args.resume:  # (a results directory: read through safefs)
            return load_scenario_of(Path(args.resume)).points[0].hosts is not None
        return args.scenario is not None and load_scenario(
            args.scenario, quick=bool(args.quick), sets=args.set).points[0].hosts is not None
    except (NetrigError, OSError, IndexError):
        return False


def _perf(args: list[str]) -> int:
    exe = str(binary("netrig-perf"))
    # Replace this process, so signals and exit codes are netrig-perf's own.
    if hasattr(os, "execv"):
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(exe, [exe, *args])
    return subprocess.call([exe, *args])  # pragma: no cover


def _tc(args: list[str]) -> int:
    """tc's command line inside a lab (netrig.lab.tcshim): on a link netrig-link carries
    it is a live change or its counters; anything else runs the real tc."""
    from netrig.lab import tcshim

    sys.stdout.flush()
    return tcshim.main(args)


def _mn(args: list[str]) -> int:
    """netrig mn: Mininet's mn command line, whole (mn's own -h), on netrig's Mininet
    (netrig.mnrun.mn puts the compat package first on sys.path before anything)."""
    from netrig.mnrun import mn

    return mn.main(args)


def _mininet(args: list[str]) -> int:
    """netrig mininet: a Mininet script on netrig's Mininet (netrig.mnrun.run)."""
    from netrig.mnrun import run

    return run.main(args)


def _version(_: argparse.Namespace) -> int:
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
    from netrig.lab import frr
    from netrig.lab.state import LabError

    if args.wait is not None and args.wait <= 0:
        raise NetrigError(f"--wait {args.wait:g}: give seconds above 0 (or --no-wait)")
    net = Network(topo, prefix=args.prefix, topology_text=text,
                  progress=None if args.quiet else lambda m: print(f"  {m}", file=sys.stderr))
    net.start()
    routed = bool(net.topo.dynamic) and not args.no_wait
    wait = args.wait if args.wait is not None else frr.default_wait_s(net.topo)
    took: float | None = None
    failed: LabError | None = None
    try:
        if routed:
            if not args.quiet:
                print(f"  waiting up to {wait:g} s for routing to converge", file=sys.stderr)
            took = net.converge(wait)
    except LabError as e:
        failed = e
    finally:
        st = net.detach()  # up, converged or not: the lab stays for a look
    print(f"lab '{st.prefix}' is up ({len(net.topo.nodes)} nodes, {len(net.topo.links)} links) "
          f"in {time.monotonic() - t0:.2f} s")
    if took is not None:
        print(f"routing converged in {took:.1f} s")
    if not args.quiet:
        from netrig.lab.status import print_nodes

        print_nodes(st.plan)
    if failed is not None:
        router = net.topo.dynamic[0]
        print(f"netrig: error: {failed}\n"
              f"  the lab is left up to look at: 'netrig status' (neighbours, peers, routes), "
              f"'netrig exec {router} -- vtysh -c \"show ip ospf neighbor\"', "
              f"'netrig exec {router} -- ip route'; 'netrig down' removes it", file=sys.stderr)
        return 1
    return 0


def _down(args: argparse.Namespace) -> int:
    from netrig.lab.build import teardown
    from netrig.lab.state import LabState

    prefix = _prefix(args)
    notes: list[str] = []
    errors = teardown(LabState.load(prefix), notes)
    for e in notes + errors:
        print(f"netrig: {e}", file=sys.stderr)
    if not errors:
        print(f"lab '{prefix}' is down")
    return 1 if errors else 0


def _status(args: argparse.Namespace) -> int:
    from netrig.lab import status

    return status.show(_prefix(args), args.json)


def _exec(args: argparse.Namespace) -> int:
    from netrig.lab import frr, tcshim
    from netrig.lab.state import LabState

    cmd = list(args.cmd)
    if cmd[:1] == ["--prefix"] and len(cmd) > 1 and args.prefix is None:
        args.prefix, cmd = cmd[1], cmd[2:]  # exec h1 --prefix pf ping h9
    if cmd[:1] == ["--"]:
        cmd = cmd[1:]
    st = LabState.load(_prefix(args))
    if args.node not in st.node_ns:
        raise NetrigError(f"lab '{st.prefix}' has no node '{args.node}'"
                          f"{suggest.unknown(args.node, st.node_ns, 'it has')}")
    if not cmd:  # an interactive shell whose prompt names the node: "h1 (lab pf)# "
        shell = os.environ.get("SHELL", "/bin/sh")
        cmd = [shell]
        os.environ["PS1"] = f"{args.node} (lab {st.prefix})# "
        os.environ["debian_chroot"] = f"{args.node} in lab {st.prefix}"  # Debian's bashrc shows it
        os.environ["NETRIG_NODE"] = args.node
    if cmd[0] in ("netrig-perf", "netrig-link") and shutil.which(cmd[0]) is None:
        cmd[0] = str(binary(cmd[0]))  # netrig's own binaries run whatever the PATH (a venv not activated)
    if os.path.basename(cmd[0]) == frr.VTYSH:  # to this router's daemons, without PAM
        d = frr.router_dir(st.dir, args.node)
        if not d.is_dir():
            raise NetrigError(f"{args.node} runs no FRR in lab '{st.prefix}' (no {d}): vtysh has "
                              "no daemons to talk to there")
        cmd = [cmd[0], *frr.vtysh_args(d), *cmd[1:]]
    argv = ["ip", "netns", "exec", st.node_ns[args.node], *cmd]
    # tc's shim first on PATH: tc on a link netrig-link carries changes it live
    bindir = tcshim.install(st.dir / "bin").parent
    os.environ["PATH"] = os.pathsep.join([str(bindir), *(p for p in os.environ.get("PATH", "").split(
        os.pathsep) if p and p != str(bindir))]) or str(bindir)
    sys.stdout.flush()
    os.execvp(argv[0], argv)
    return 127  # pragma: no cover


def _cli(args: argparse.Namespace) -> int:
    """The mininet> prompt on a running lab, as Mininet's compat net (the lab stays up)."""
    from netrig.mnrun import run

    prefix = _prefix(args)
    run.activate()  # `import mininet` is netrig's from here on
    from mininet.cli import CLI
    from mininet.net import Mininet

    net = Mininet.attach(prefix)
    try:
        CLI(net)
    finally:
        net.stop()  # the shells it started; the lab stays up
    return 0


def _pingall(args: argparse.Namespace) -> int:
    from netrig.lab.network import Network

    net = Network.attach(_prefix(args))
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


def link_words(words: list[str]) -> tuple[str, str | None, list[str]]:
    """`netrig link set`'s words as (link name or end A, end B or None, KEY=VALUE...):
    one word before the keys is a link's name, two are its ends."""
    ends = [w for w in words if "=" not in w]
    params = [w for w in words if "=" in w]
    if ends != words[: len(ends)]:
        raise NetrigError(f"netrig link set: '{ends[-1]}' after the keys: the link comes first "
                          "(e.g. L1, or r2 r3), then KEY=VALUE (e.g. delay=50ms)")
    if not ends:
        raise NetrigError("netrig link set: which link? give its name or its two ends first "
                          "(e.g. netrig link set L1 delay=50ms, or netrig link set r2 r3 delay=50ms)")
    if len(ends) > 2:
        raise NetrigError(f"netrig link set: {' '.join(ends)}: a link is one name or two ends; "
                          "a key is KEY=VALUE (e.g. delay=50ms)")
    if not params:
        raise NetrigError("netrig link set: nothing to set: give KEY=VALUE after the link "
                          f"(e.g. netrig link set {' '.join(ends)} delay=50ms)")
    return ends[0], (ends[1] if len(ends) == 2 else None), params


def _capture(args: argparse.Namespace) -> int:
    import signal
    from pathlib import Path

    from netrig import units
    from netrig.capture import lab as cap
    from netrig.lab.network import Network

    net = Network.attach(_prefix(args))
    what = args.what
    node, _, iface = what.partition(":")
    try:
        if node in net.topo.nodes and net.topo.nodes[node] != "switch":
            where = cap.resolve(net, node=node, iface=iface or None, dir=args.dir)
        else:
            where = cap.resolve(net, link=what, dir=args.dir)
    except cap.CaptureError as e:
        links = ", ".join(x.name for x in net.topo.links)
        raise NetrigError(f"lab '{net.prefix}': {e} (its links: {links}; or NODE:IFACE)") from None
    out = Path(args.write or f"{where.label}.pcapng")
    base = out.with_suffix("") if out.suffix == ".pcapng" else out
    options = cap.Options(filter=args.filter, snaplen=args.snaplen, size=units.size_bytes(args.size),
                          files=args.files, drops=not args.no_drops)
    from netrig import safefs

    into = safefs.Held(base.resolve().parent)
    c = cap.Capture(net, where, into, base.name, options, keep_log=False)
    stop = False

    def interrupted(*_: object) -> None:
        nonlocal stop
        stop = True

    old = signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    try:
        c.start()
        by = "netrig-link, with the frames it drops" if where.emulated else "dumpcap"
        print(f"capturing {where.describe} ({by}) into {base}.pcapng; "
              + (f"for {args.seconds:g} s" if args.seconds else "Ctrl-C stops"), flush=True)
        t0 = time.monotonic()
        while not stop and (args.seconds is None or time.monotonic() - t0 < args.seconds):
            time.sleep(0.1)
    finally:
        summary = c.stop()
        into.close()
        signal.signal(signal.SIGINT, old)
    files = summary["files"]
    said = [f"{len(files)} file{'s' if len(files) != 1 else ''}", f"{summary['bytes'] / 1e6:.1f} MB"]
    if summary.get("frames") is not None:
        said.append(f"{summary['frames']} frames")
    if summary.get("drops_written"):
        said.append(f"{summary['drops_written']} the link dropped (commented)")
    print(f"captured {where.describe}: {', '.join(said)}: {' '.join(files)}")
    if summary.get("error"):
        raise NetrigError(summary["error"])
    if args.analyze and files:
        from netrig.capture import report as capreport

        print(capreport.tcp_table(files), end="")
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from pathlib import Path

    from netrig.capture import flows as capflows
    from netrig.capture import report as capreport
    from netrig.capture import stevens

    if args.stevens is not None:
        a = capflows.analyze_files([Path(f) for f in args.files])
        out = Path(args.output or f"stream{args.stevens}-stevens.png")
        if args.stevens not in {s["stream"] for s in a.get("streams", [])}:
            raise NetrigError(f"no TCP stream {args.stevens} in {' '.join(args.files)} (it has "
                              f"{len(a.get('streams', []))}, numbered from 0 as Wireshark's tcp.stream)")
        print(stevens.stevens_figure(a, args.stevens, out))
    elif args.json:
        a = capflows.analyze_files([Path(f) for f in args.files], series=None)
        print(json.dumps(a, indent=1))
    else:
        print(capreport.tcp_table(args.files), end="")
    return 0


def _link(args: argparse.Namespace) -> int:
    from netrig.lab.network import Network
    from netrig.topo.model import TopologyError

    if args.action != "set":
        raise NetrigError(f"netrig link {args.action}: only 'set' is known")
    from netrig.topo import load as tload

    a, b, given = link_words(args.words)
    params = tload.link_params(given)
    net = Network.attach(_prefix(args))
    try:
        link = net.topo.link_named(a, b)
    except TopologyError:
        links = net.topo.links
        if b is None:
            raise NetrigError(f"lab '{net.prefix}' has no link named '{a}'"
                              f"{suggest.unknown(a, [x.name for x in links], 'its links')}; "
                              "or give the link's two ends (e.g. r2 r3)") from None
        raise NetrigError(f"lab '{net.prefix}' has no link between {a} and {b} (its links: "
                          f"{', '.join(f'{x.name} ({x.a} {x.b})' for x in links)})") from None
    net.set_link(link.name, dir=args.dir, **params)
    print(f"link {link.name}: set {' '.join(given)}")
    return 0


def _clean(args: argparse.Namespace) -> int:
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

    from netrig.exp.execute import runner
    from netrig.exp.record import files as rec
    from netrig.exp.spec.scenario import load_scenario

    if args.resume:
        out = Path(args.resume)
        if args.scenario or args.quick or args.set:
            raise NetrigError("--resume DIR runs the scenario saved in DIR: give no scenario, --quick or --set")
        scenario = rec.load_scenario_of(out)  # (meta.json and scenario.yaml through safefs)
    else:
        if not args.scenario:
            raise NetrigError("netrig run SCENARIO (or --resume DIR)")
        scenario = load_scenario(args.scenario, quick=args.quick, sets=args.set)
        if args.out and (Path(args.out) / "meta.json").exists():
            raise NetrigError(f"--out {args.out}: it already holds results (use --resume {args.out} "
                              "to finish them)")
    campaign = None
    if address := _cluster_address(args):  # reached and checked before anything is written
        from netrig.exp.execute.cluster import Campaign

        if scenario.points and scenario.points[0].hosts:
            raise NetrigError(f"--cluster {address}: {scenario.name} runs on real hosts (hosts:), which "
                              "its runs would share: several at once would measure each other. Run it "
                              "from one machine (--local)")
        campaign = Campaign(address, cert=args.cert)
    try:
        if not args.resume:
            out = Path(args.out) if args.out else rec.new_dir(Path(args.results), scenario.name,
                                                               args.allow_foreign_dir)
    except BaseException:
        if campaign is not None:
            campaign.close()
        raise
    if not args.quiet:
        print(f"netrig: {scenario.name}: {len(scenario.points)} point(s) x {scenario.repeat} "
              f"repetition(s) = {scenario.runs} run(s), about {scenario.estimate_s() / 60:.1f} min; "
              f"results in {out}", file=sys.stderr)
    try:
        out, status = runner.run(scenario, out, resume=bool(args.resume), progress=not args.quiet,
                                 argv=sys.argv, allow_foreign=args.allow_foreign_dir, campaign=campaign)
    finally:
        if campaign is not None:
            campaign.close()
        from netrig.exp.render import table_csv

        table_csv.write_csv(out)  # (whatever happened: what was measured, as a table)
    code = {"complete": 0, "failed": 1, "interrupted": 130}[status]
    _headline(out)
    try:
        from netrig.exp.render import report
        page = report.build(out, args.allow_foreign_dir, warn=_refused)
        print(f"report: {page}")
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


def _cluster_address(args: argparse.Namespace) -> str | None:
    """The cluster `netrig run` hands its runs to: --cluster, else NETRIG_CLUSTER, unless
    --local; None runs them here."""
    if getattr(args, "local", False) or getattr(args, "command", "") != "run":
        return None
    return args.cluster or os.environ.get("NETRIG_CLUSTER") or None


def _cluster(args: argparse.Namespace) -> int:
    from netrig.exp.execute import cluster
    if args.action == "scheduler":
        if args.target:
            raise NetrigError("netrig cluster scheduler takes no ADDRESS (--host and --port say where it listens)")
        cluster.serve_scheduler(args.port, args.host)
        return 0
    if args.action == "cert":
        if not args.target or not args.out:
            raise NetrigError("netrig cluster cert NAME -o FILE: the machine's name (e.g. lab1) and "
                              "the bundle file to write (e.g. -o lab1.pem)")
        b = cluster.issue(args.target, args.out)
        print(f"{args.out}: a certificate for {b.name}, valid until {b.not_after:%Y-%m-%d}, with its key "
              f"and the cluster's CA ({b.source}). Copy it to that machine (it holds a private key: "
              "keep it 0600 there) and give it with --cert FILE or NETRIG_CLUSTER_CERT. Whoever holds "
              "it can run commands as root on every worker.")
        return 0
    if not args.target:
        raise NetrigError(f"netrig cluster {args.action} ADDRESS: the scheduler's (e.g. tls://10.0.0.1:8786)")
    if args.action == "status":
        rows = cluster.status(args.target, args.cert)
        print(f"{len(rows)} netrig worker(s) at {args.target}")
        for r in sorted(rows, key=lambda r: r["name"]):  # two lines each: 80 columns
            print(f"  {r['name']:<12} {'busy' if r['busy'] else 'idle':<4}  {r['hostname']}  {r['address']}\n"
                  f"  {'':<12} kernel {r['kernel']}, {r['cpus']} CPU(s), netrig {r['netrig']}")
        return 0
    if os.geteuid() != 0:
        raise NeedsRoot("netrig cluster worker needs root (its runs create network namespaces); "
                        "run it with sudo")
    cluster.serve_worker(args.target, args.name, args.host, args.cert)
    return 0


def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from netrig.exp.analysis import results as res
    from netrig.exp.render import report
    res.load(Path(args.dir))  # not a results directory: said before anything is written
    _headline(Path(args.dir))
    print(f"report: {report.build(Path(args.dir), args.allow_foreign_dir, warn=_refused)}")
    return 0


def _refused(said: str) -> None:
    """A file a results directory's reader refused (netrig.safefs), on stderr."""
    print(f"netrig: {said}", file=sys.stderr)


def _headline(out) -> None:
    """The headline table of results directory `out`, as wide as the terminal up to 80
    columns; a directory that cannot be read is said in a line, and the rest goes on."""
    from netrig.exp.analysis import results as res
    from netrig.exp.render import headline
    try:
        text = headline.summary(res.load(out), min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns))
    except (NetrigError, OSError, ValueError, KeyError, TypeError) as e:
        print(f"netrig: no headline table ({e})", file=sys.stderr)
        return
    print(text + "\n")


def _compare(args: argparse.Namespace) -> int:
    from pathlib import Path

    from netrig.exp.render import plot
    print(plot.compare_dirs([Path(d) for d in args.dirs], Path(args.out) if args.out else None,
                            args.allow_foreign_dir, warn=_refused))
    return 0


def _plot(args: argparse.Namespace) -> int:
    from pathlib import Path

    from netrig.exp.render import plot
    dirs = [a for a in args.items if Path(a).is_dir()]
    names = [a for a in args.items if not Path(a).is_dir()]
    for path in plot.plot_command([Path(d) for d in dirs], names,
                                  Path(args.out) if args.out else None, args.format, args.run,
                                  warn=_refused):
        print(path)
    return 0


def _graph(args: argparse.Namespace) -> int:
    from netrig.exp.spec.scenario import drawable
    from netrig.topo.graph import graph_command

    out = graph_command(args.file, args.out, args.format, scenario=drawable)
    print(out, end="" if out.endswith("\n") else "\n")
    return 0


# Help: every command has a synopsis, a line saying what it does and examples; every
# argument says what it takes and gives an example ("e.g."). `netrig help` lists the
# commands; `netrig help CMD` and `netrig CMD --help` show one. Lines fit 80 columns.
WIDTH = 80


class _Help(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns),
                         max_help_position=28)


class _Parser(argparse.ArgumentParser):
    """A command's parser: a mistake is told in a few lines (what is wrong, the
    synopsis, an example), not the whole usage."""

    synopsis = ""
    examples: tuple[str, ...] = ()

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        lines = [f"{self.prog}: error: {message}"]
        if self.synopsis:
            lines.append(f"  usage:   netrig {self.synopsis}")
        if self.examples:
            lines.append(f"  example: {self.examples[0]}")
        lines.append(f"  ('{self.prog} --help' for more)")
        self.exit(2, "\n".join(lines) + "\n")


@dataclass
class Command:
    name: str
    synopsis: str  # `up FILE [--prefix P] [-q]`
    summary: str
    parser: _Parser


def _parser() -> tuple[argparse.ArgumentParser, dict[str, Command]]:
    """The command line: the top parser and each command by name."""
    ap = argparse.ArgumentParser(prog="netrig", add_help=False)
    sub = ap.add_subparsers(dest="command", parser_class=_Parser)
    commands: dict[str, Command] = {}

    def cmd(name: str, fn, synopsis: str, summary: str, examples: list[str],
            about: str = "") -> _Parser:
        """A command: what it does in a line, more in `about`, and examples to copy."""
        shown = "\n".join(f"  {e}" for e in examples)
        p = sub.add_parser(name, help=summary, formatter_class=_Help,
                           usage=f"netrig {synopsis}",
                           description="\n\n".join(textwrap.fill(x, WIDTH) for x in (
                               summary[0].upper() + summary[1:] + ".", about) if x),
                           epilog=f"example{'s' if len(examples) > 1 else ''}:\n{shown}")
        p.synopsis, p.examples = synopsis, tuple(examples)
        p.set_defaults(fn=fn)
        commands[name] = Command(name, synopsis, summary, p)
        return p

    def prefix(p: argparse.ArgumentParser) -> None:
        p.add_argument("--prefix", metavar="P",
                       help="the lab, by its prefix (default: the only one up; e.g. pf)")

    def foreign(p: argparse.ArgumentParser) -> None:
        p.add_argument("--allow-foreign-dir", action="store_true",
                       help="write into a results directory another user owns "
                            "(e.g. one made by sudo -u alice)")

    p = cmd("perf", _perf, "perf ARGS...", "the traffic tool: iperf3's options and protocol, "
            "plus latency probes", ["netrig perf -s -1 &", "netrig perf -c 127.0.0.1 -t 5",
                                    "netrig perf -c 127.0.0.1 --probe -t 10"],
            "netrig perf runs netrig-perf with the same arguments; 'netrig perf --help' "
            "lists them.")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                   help="netrig-perf's arguments, as iperf3's (e.g. -c 127.0.0.1 -t 5)")
    p = cmd("up", _up, "up FILE [--prefix P] [-q] [--wait S|--no-wait]", "build the lab a "
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
    prefix(cmd("down", _down, "down [--prefix P]", "tear a lab down: its processes, "
               "namespaces, links and emulator", ["netrig down", "netrig down --prefix pf"]))
    p = cmd("status", _status, "status [--prefix P] [--json]", "a lab's nodes, addresses, links "
            "and their live queues, drops and lateness; its routers' daemons, neighbours and routes",
            ["netrig status", "netrig status --json"],
            "Exits 1 with a DEAD: line for each dead emulator or FRR daemon, missing namespace "
            "or vanished builder. For each FRR router: its daemons, OSPF neighbours (state), "
            "BGP peers (state, prefixes received) and kernel route count.")
    prefix(p)
    p.add_argument("--json", action="store_true",
                   help="the same as one JSON document (e.g. netrig status --json | jq .links)")
    p = cmd("exec", _exec, "exec NODE [--prefix P] [--] [CMD...]", "run a command inside a "
            "node; the lab's node names resolve", ["netrig exec h1 ping -c 3 h9",
                                                   "netrig exec h4 -- netrig-perf -s -1",
                                                   "netrig exec r1 -- vtysh -c 'show ip route'",
                                                   "netrig exec h1"],
            "Everything after NODE is the command, options and all ('--' before it is "
            "optional); no command starts a shell. Give --prefix before NODE. vtysh on a "
            "router running FRR talks to that router's daemons.")
    prefix(p)
    p.add_argument("node", metavar="NODE", help="a node of the lab (e.g. h1)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD",
                   help="the command and its arguments (default: $SHELL; e.g. ping -c 3 h9)")
    prefix(cmd("cli", _cli, "cli [--prefix P]", "the mininet> prompt on a running lab: nodes, "
               "net, pingall, iperf, h1 ping h2, link h1 s1 down, link set, status, graph",
               ["netrig cli", "printf 'pingall\\nh1 ping -c1 h2\\n' | netrig cli --prefix pf"],
               "Mininet's CLI ('help' lists its commands) on any lab netrig up built: node "
               "names in a node's command become addresses, and 'link L set delay=50ms' "
               "changes a link while traffic runs. exit, quit or Ctrl-D leaves it; the lab "
               "stays up ('netrig down' removes it). Commands can come through a pipe."))
    p = cmd("pingall", _pingall, "pingall [--prefix P] [-c N]", "ping every host from every "
            "host: a matrix of median RTTs in ms", ["netrig pingall", "netrig pingall -c 5"])
    p.add_argument("-c", "--count", type=int, default=1, metavar="N",
                   help="echo requests per pair (default 1; e.g. -c 5)")
    prefix(p)
    p = cmd("link", _link, "link set LINK|A B KEY=VALUE... [--dir D] [--prefix P]",
            "change a link of a running lab live", ["netrig link set r2 r3 delay=50ms",
                                                    "netrig link set L1 rate=10Mbit loss=1%",
                                                    "netrig link set r2 r3 aqm=pie --dir a_to_b"],
            "Name the link by its name (one word) or by its two ends. loss=0%, delay=0ms and "
            "aqm=droptail turn a stage off; aqm.target=10ms sets one parameter of the "
            "discipline running.")
    p.add_argument("action", choices=["set"], metavar="set", help="what to do (e.g. set)")
    p.add_argument("words", nargs="+", metavar="LINK|A B KEY=VALUE",
                   help="the link, by name or by its ends, then the keys to change "
                        "(e.g. L1 delay=50ms, or r2 r3 rate=10Mbit)")
    p.add_argument("--dir", choices=["a_to_b", "b_to_a"],
                   help="change one direction only (default: both; e.g. --dir a_to_b)")
    prefix(p)
    p = cmd("tc", _tc, "tc ARGS...", "tc's command line inside a lab: on a link netrig-link "
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
    p = cmd("capture", _capture, "capture LINK|NODE[:IFACE] [--dir D] [-f FILTER] [-w FILE] "
            "[-t S] [--analyze]", "capture a link or a node's interface of a running lab to "
            "pcapng", ["netrig capture s0-h2 --dir a_to_b -t 10 -w bloat.pcapng",
                       "netrig capture h1:eth0 -f 'tcp port 5201' --analyze",
                       "netrig capture L2 --size 200MB --files 4"],
            "A link netrig-link emulates is captured by netrig-link: each frame as the link "
            "delivers it, and each frame it drops, commented with the cause (Wireshark shows "
            "the comment; the filter frame.comment finds them). Any other link, and a node's "
            "interface, is captured by dumpcap in the node's namespace. --analyze prints "
            "Wireshark's TCP analysis of each connection captured.")
    prefix(p)
    p.add_argument("what", metavar="LINK|NODE[:IFACE]",
                   help="a link by its name or ends (e.g. L2, s0-h2), or a node's interface "
                        "(e.g. h1:eth0; h1 alone if it has one)")
    p.add_argument("--dir", choices=["a_to_b", "b_to_a", "both"], default="both",
                   help="a link's direction (default both; e.g. --dir a_to_b)")
    p.add_argument("-f", "--filter", metavar="EXPR",
                   help="a BPF filter, in tcpdump's syntax (e.g. -f 'tcp port 5201')")
    p.add_argument("-s", "--snaplen", type=int, default=262_144, metavar="BYTES",
                   help="bytes kept of each frame (default 262144; e.g. -s 128)")
    p.add_argument("-w", "--write", metavar="FILE",
                   help="the capture file (default LINK.pcapng here; e.g. -w run1.pcapng)")
    p.add_argument("-t", "--seconds", type=float, metavar="S",
                   help="stop after S seconds (default: at Ctrl-C; e.g. -t 10)")
    p.add_argument("--size", default="1GB", metavar="SIZE",
                   help="the bound on all the files together (default 1GB; e.g. 200MB)")
    p.add_argument("--files", type=int, default=1, metavar="N",
                   help="1: stop writing at --size; N: a ring of N files, the oldest "
                        "overwritten (default 1; e.g. --files 4)")
    p.add_argument("--no-drops", action="store_true",
                   help="leave out the frames an emulated link dropped (e.g. --no-drops)")
    p.add_argument("--analyze", action="store_true",
                   help="then print each TCP connection's analysis: retransmissions, dup "
                        "ACKs, out-of-order, zero windows, RTT (e.g. --analyze)")
    p = cmd("analyze", _analyze, "analyze FILE... [--json] [--stevens N [-o PNG]]",
            "Wireshark's TCP analysis of a capture: retransmissions, dup ACKs, out-of-order, "
            "zero windows, RTT", ["netrig analyze bloat.pcapng",
                                  "netrig analyze run.pcap --json | jq .totals",
                                  "netrig analyze bloat.pcapng --stevens 1 -o s1.png"],
            "Counts agree with tshark -Y tcp.analysis.* (Wireshark 4.0) frame for frame; "
            "netrig-analyze does it some 50 times faster. Several files are one capture (a "
            "ring's files, oldest first). pcap or pcapng; Ethernet, raw IP, Linux cooked.")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="a pcap or pcapng file, or a ring's files in order (e.g. cap.pcapng)")
    p.add_argument("--json", action="store_true",
                   help="the whole analysis as JSON, per stream and direction (e.g. --json)")
    p.add_argument("--stevens", type=int, metavar="N",
                   help="draw TCP stream N's time-sequence (Stevens) graph and throughput "
                        "(e.g. --stevens 1)")
    p.add_argument("-o", "--output", metavar="PNG",
                   help="where the graph goes (default streamN-stevens.png; e.g. -o s1.png)")
    p = cmd("clean", _clean, "clean [--all]", "remove labs whose builder was killed or whose "
            "emulator died", ["netrig clean", "netrig clean --all"])
    p.add_argument("--all", action="store_true",
                   help="remove every lab netrig made, running or not (e.g. netrig clean --all)")
    p = cmd("explain", _explain, "explain FILE SRC DST [--window W] [--loss P] [--flows F...]",
            "what theory expects between two nodes: path, bottleneck, base RTT, BDP, goodput",
            ["netrig explain examples/portfolio.yaml h1 h9",
             "netrig explain examples/portfolio.yaml h1 h9 --window 64KB --loss 1%"])
    p.add_argument("file", metavar="FILE", help="a topology file (e.g. examples/portfolio.yaml)")
    p.add_argument("src", metavar="SRC", help="the node sending (e.g. h1)")
    p.add_argument("dst", metavar="DST", help="the node receiving (e.g. h9)")
    p.add_argument("--window", metavar="W", help="TCP window: adds the W/RTT limit (e.g. 64KB)")
    p.add_argument("--loss", metavar="P", help="random loss: adds the Mathis limit (e.g. 1%%)")
    p.add_argument("--flows", nargs="+", metavar="SRC:DST[xN]",
                   help="concurrent flows: their max-min fair shares (e.g. h1:h9x2 h4:h9)")
    p = cmd("run", _run, "run SCENARIO [--quick] [--set K=V]... [--out DIR] | --resume DIR",
            "run an experiment: every sweep point and repetition on a fresh network; results, "
            "figures and report", ["netrig run examples/004-bufferbloat.yaml --quick",
                                   "netrig run examples/003-window.yaml --set repeat=1",
                                   "netrig run --resume results/bufferbloat/20261123-101500"],
            "Results go to results/<scenario>/<time>/ below the current directory (or --out); "
            "at the end the headline table and the report's path are printed.")
    p.add_argument("scenario", nargs="?", metavar="SCENARIO",
                   help="a scenario file (e.g. examples/004-bufferbloat.yaml)")
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
    cert_help = ("the cluster certificate bundle to present (default: $NETRIG_CLUSTER_CERT; on the "
                 "machine holding the cluster's CA, none needed; e.g. --cert lab1.pem)")
    p.add_argument("--cert", metavar="FILE", help=cert_help)
    p.add_argument("--local", action="store_true",
                   help="run here even when NETRIG_CLUSTER is set (e.g. --local)")
    foreign(p)
    p = cmd("cluster", _cluster, "cluster scheduler | worker ADDRESS | "
            "status ADDRESS | cert NAME -o FILE",
            "run campaigns on several machines: a Dask scheduler, a netrig worker on each "
            "machine (root, one run at a time), then netrig run --cluster ADDRESS; only the "
            "cluster's own certificates get in (TLS)",
            ["netrig cluster scheduler --host 10.0.0.1",
             "sudo netrig cluster worker tls://10.0.0.1:8786 --name lab1",
             "netrig cluster cert lab2 -o lab2.pem",
             "sudo netrig cluster worker tls://10.0.0.1:8786 --cert lab2.pem   # on lab2",
             "netrig cluster status tls://10.0.0.1:8786",
             "netrig run examples/003-window.yaml --cluster tls://10.0.0.1:8786"],
            "Every machine needs the same netrig. The first scheduler makes the cluster's CA "
            "in $NETRIG_CLUSTER_DIR (~/.config/netrig/cluster); on that machine workers and "
            "heads need no --cert. A worker starts by removing the labs a crash left (as "
            "netrig clean); a run whose worker dies is run again on another.")
    p.add_argument("action", choices=["scheduler", "worker", "status", "cert"],
                   help="start a scheduler, start a worker, list the workers, or issue a "
                        "certificate (e.g. status)")
    p.add_argument("target", nargs="?", metavar="ADDRESS|NAME",
                   help="the scheduler's address, for worker and status (e.g. tls://10.0.0.1:8786); "
                        "the machine's name, for cert (e.g. lab2)")
    p.add_argument("--port", type=int, default=8786, metavar="P",
                   help="the scheduler's port (default 8786; 0: any free one; e.g. --port 9000)")
    p.add_argument("--host", metavar="H",
                   help="the address to listen on and tell others (default: the scheduler on "
                        "127.0.0.1, a worker on the address that reaches the scheduler; e.g. "
                        "--host 10.0.0.1)")
    p.add_argument("--name", metavar="N", help="the worker's name (default: its address; e.g. lab1)")
    p.add_argument("--cert", metavar="FILE", help=cert_help)
    p.add_argument("-o", "--out", metavar="FILE", help="cert: the bundle file to write, new (e.g. -o lab2.pem)")
    p = cmd("report", _report, "report DIR", "print a results directory's headline table and "
            "rebuild its results.csv, figures and report",
            ["netrig report results/bufferbloat/20261123-101500"])
    p.add_argument("dir", metavar="DIR", help="a results directory netrig run wrote "
                   "(e.g. results/bufferbloat/20261123-101500)")
    foreign(p)
    p = cmd("compare", _compare, "compare DIR DIR [DIR...] [--out D]",
            "results directories of an experiment side by side, each named by what differs "
            "(scenario values, sweep, netrig version, host): sweep curves and time series",
            ["netrig compare results/bb/run1 results/bb/run2",
             "netrig compare results/004-bufferbloat/* --out /tmp/cmp"])
    p.add_argument("dirs", nargs="+", metavar="DIR",
                   help="two results directories or more (e.g. results/bb/run1 results/bb/run2)")
    p.add_argument("--out", metavar="D",
                   help="where to write compare.html (default: beside the first; e.g. /tmp/cmp)")
    foreign(p)
    p = cmd("plot", _plot, "plot DIR [DIR...] SERIES... [-o FILE] [--format F] [--run R]",
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
    p = cmd("graph", _graph, "graph FILE [-o OUT.svg|.png] [--format F]",
            "draw a topology (or a scenario's, with its flows' paths): each link's rate, delay, "
            "queue and discipline, the bottleneck marked; text for a terminal, or SVG/PNG",
            ["netrig graph examples/portfolio.yaml", "netrig graph examples/004-bufferbloat.yaml -o bb.svg"])
    p.add_argument("file", metavar="FILE",
                   help="a topology file, or a scenario (e.g. examples/portfolio.yaml)")
    p.add_argument("-o", "--out", metavar="OUT",
                   help="write the drawing here, .svg or .png (e.g. lab.svg); default: text")
    p.add_argument("--format", choices=["text", "svg", "png"],
                   help="the format (default: -o's suffix; e.g. --format svg)")
    p = cmd("mn", _mn, "mn [mn's OPTIONS...]", "Mininet's mn command line on a netrig lab", [
                "netrig mn --topo linear,3 --test pingall",
                "netrig mn --topo tree,2,2 --link tc,bw=10,delay=5ms",
                "netrig mn --custom mytopo.py --topo mytopo --test pingall"],
            "netrig mn takes mn's options ('netrig mn -h' lists them); every switch is a Linux "
            "bridge, shaped links are carried by netrig-link (exact delay on any kernel), and "
            "-c removes only what netrig made.")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="OPTIONS",
                   help="mn's options (e.g. --topo linear,3 --test pingall)")
    p = cmd("mininet", _mininet, "mininet SCRIPT.py [ARGS...] | -m MODULE | -c CODE",
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
    cmd("version", _version, "version", "versions of netrig, netrig-perf and netrig-link",
        ["netrig version", "netrig --version"])
    p = cmd("help", _help, "help [COMMAND]", "the commands, or one command's arguments and "
            "examples", ["netrig help", "netrig help run"])
    p.add_argument("topic", nargs="?", metavar="COMMAND", help="a command (e.g. run)")
    return ap, commands


def usage(commands: dict[str, Command]) -> str:
    """`netrig help`: every command's synopsis and what it does, at most 80 columns."""
    out = ["usage: netrig COMMAND [ARGS]", "", "commands:"]
    for c in commands.values():
        what = textwrap.wrap(c.summary, WIDTH - 6)
        if len(c.synopsis) <= 30 and len(what) <= 2 and all(len(x) <= WIDTH - 34 for x in what):
            out.append(f"  {c.synopsis:<30}  {what[0]}")
            out += [" " * 34 + x for x in what[1:]]
        else:
            out.append(f"  {c.synopsis}")
            out += textwrap.wrap(c.summary, WIDTH, initial_indent=" " * 6, subsequent_indent=" " * 6)
    out += ["", "'netrig help COMMAND' or 'netrig COMMAND --help': its arguments and examples.",
            "'netrig --version': the versions of netrig and its binaries.",
            "run, report, compare: a results directory another user owns is refused unless",
            "--allow-foreign-dir is given."]
    return "\n".join(out) + "\n"


def _help(args: argparse.Namespace) -> int:
    _, commands = _parser()
    if args.topic is None:
        print(usage(commands), end="")
        return 0
    if args.topic not in commands:
        raise NetrigError(_unknown_command(args.topic, commands))
    print(commands[args.topic].parser.format_help(), end="")
    return 0


def _unknown_command(word: str, commands: dict[str, Command]) -> str:
    return f"unknown command '{word}'{suggest.unknown(word, commands, 'commands')}"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if not argv or argv[0] in ("-h", "--help"):
            _, commands = _parser()
            print(usage(commands), end="")
            sys.stdout.flush()
            return 0 if argv else 2
        if argv[0] in ("-V", "--version"):
            argv = ["version"]
        if argv[0] == "perf":
            return _perf(argv[1:])
        if argv[0] == "tc":
            return _tc(argv[1:])
        if argv[0] == "mn":
            return _mn(argv[1:])
        if argv[0] == "mininet":
            return _mininet(argv[1:])
        ap, commands = _parser()
        if argv[0] not in commands:
            print(f"netrig: error: {_unknown_command(argv[0], commands)}\n"
                  "  ('netrig help' lists them)", file=sys.stderr)
            return 2
        args = ap.parse_args(argv)
        if (args.command in NEEDS_ROOT and os.geteuid() != 0 and not _cluster_address(args)
                and not _real_hosts_only(args)):
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
