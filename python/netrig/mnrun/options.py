"""`netrig mn`'s command line: mn's options, their spellings, defaults and help as
/usr/bin/mn of Mininet 2.3 has them (`parse`), the names each takes by default
(topologies, switches, hosts, links, controllers, tests), the options refused with a
sentence (`refuse`), and the errors a run ends with (`MnUsage`: exit 2, `MnError`: 1).
Checking what the names and arguments mean is `netrig.mnrun.tables`'; running is
`netrig.mnrun.mn`'s.
"""

from __future__ import annotations

import argparse
import sys

from netrig import suggest
from netrig.errors import NetrigError

MAX_NODES = 20_000  # nodes in one `netrig mn` topology
MAX_CUSTOM_BYTES = 1 << 20  # a --custom file, a --pre/--post script

# Names mn takes, and what each resolves to in the compat package: (module, class,
# defaults). Resolved only when the network is built, so parsing imports none of it.
TOPOS = {"minimal": ("mininet.topo", "MinimalTopo"), "linear": ("mininet.topo", "LinearTopo"),
         "reversed": ("mininet.topo", "SingleSwitchReversedTopo"),
         "single": ("mininet.topo", "SingleSwitchTopo"), "tree": ("mininet.topolib", "TreeTopo"),
         "torus": ("mininet.topolib", "TorusTopo")}
# default: a Linux bridge by its own name (mn without a controller falls back to OVS's
# bridge mode; netrig's OVS classes are Linux bridges too, but say so on stderr).
SWITCHES = {"default": "LinuxBridge", "ovs": "OVSSwitch", "ovsk": "OVSSwitch",
            "ovsbr": "OVSBridge", "user": "UserSwitch", "lxbr": "LinuxBridge",
            "ivs": "IVSSwitch"}
HOSTS = {"proc": ("Host", {}), "process": ("Host", {}),
         "rt": ("CPULimitedHost", {"sched": "rt"}), "cfs": ("CPULimitedHost", {"sched": "cfs"})}
LINKS = {"default": "Link", "tc": "TCLink", "tcu": "TCULink", "ovs": "OVSLink"}
# Controllers: the compat package's classes, none of them started (None: no controller).
CONTROLLERS = {"ref": "Controller", "ovsc": "OVSController", "nox": "NOX",
               "remote": "RemoteController", "ryu": "Ryu", "default": "Controller",
               "none": None}
TESTS = ("pingall", "pingpair", "iperf", "iperfudp", "all", "none", "build")
ALTSPELLING = {"pingall": "pingAll", "pingpair": "pingPair"}
LEVELS = ("debug", "info", "output", "warning", "warn", "error", "critical")
# What --link tc (and tcu) take: TCIntf.config's keys, and use_htb (htb is the default).
TC_KEYS = ("bw", "delay", "jitter", "loss", "max_queue_size", "speedup", "use_htb",
           "use_tbf", "use_hfsc", "enable_red", "enable_ecn", "latency_ms")

class MnUsage(NetrigError):
    """A command line mn cannot run: an unknown option, name or argument (exit 2)."""


class MnError(NetrigError):
    """A run that failed: a --custom file that raised, a class the package lacks, ..."""


class _Done(Exception):
    def __init__(self, status: int):
        self.status = status


class _UsageFormatter(argparse.HelpFormatter):
    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, actions, groups, prefix="Usage: ")  # as mn's optparse says it


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise MnUsage(message)

    def exit(self, status: int = 0, message: str | None = None):
        if message:
            print(message, file=sys.stderr, end="")
        raise _Done(status)


def _parser() -> _Parser:
    ap = _Parser(prog="mn", usage="%(prog)s [options]\n(type %(prog)s -h for details)",
                 formatter_class=_UsageFormatter,
                 description="netrig mn builds a Mininet network from the command line, on "
                 "netrig's lab (namespaces, Linux bridges, netrig-link for shaped links): "
                 "parametrized topologies, Mininet's CLI and tests, as Mininet's mn.")

    def names(table, extra: str = "[,param=value...]") -> str:
        return "|".join(sorted(table)) + extra

    ap.add_argument("--switch", default="default", help=names(SWITCHES) + " (every kind is "
                    "a Linux bridge; e.g. --switch lxbr,stp=1)")
    ap.add_argument("--host", default="proc", help=names(HOSTS) + " (e.g. --host cfs,cpu=.5)")
    ap.add_argument("--controller", action="append", default=[],
                    help=names(CONTROLLERS) + " (accepted, not started: bridges need none)")
    ap.add_argument("--link", default="default",
                    help=names(LINKS) + " (e.g. --link tc,bw=10,delay=5ms,loss=1)")
    ap.add_argument("--topo", default="minimal",
                    help=names(TOPOS, "[,arg...]") + " (e.g. --topo linear,3 or tree,2,3)")
    ap.add_argument("-c", "--clean", action="store_true",
                    help="remove what netrig made (labs whose builder died) and exit")
    ap.add_argument("--custom", action="append", default=[], metavar="FILE",
                    help="read custom topos, switches, hosts, links, tests from .py file(s)")
    ap.add_argument("--test", action="append", default=[],
                    help="|".join(TESTS) + " or a Mininet method; several may be given")
    ap.add_argument("-x", "--xterms", action="store_true", help="(refused: no xterms)")
    ap.add_argument("-i", "--ipbase", default="10.0.0.0/8", help="base IP address for hosts")
    ap.add_argument("--mac", action="store_true", help="automatically set host MACs")
    ap.add_argument("--arp", action="store_true", help="set all-pairs ARP entries")
    ap.add_argument("-v", "--verbosity", default="info", type=_level, help="|".join(LEVELS))
    ap.add_argument("--innamespace", action="store_true",
                    help="switches in their own namespace (always so in netrig)")
    ap.add_argument("--listenport", type=int, default=6654,
                    help="(accepted: netrig's switches have no OpenFlow port)")
    ap.add_argument("--nolistenport", action="store_true", help="(accepted, as --listenport)")
    ap.add_argument("--pre", metavar="FILE", help="CLI script to run before tests")
    ap.add_argument("--post", metavar="FILE", help="CLI script to run after tests")
    ap.add_argument("--pin", action="store_true",
                    help="pin hosts to CPU cores (requires --host cfs or --host rt)")
    ap.add_argument("--nat", nargs="?", const="", metavar="OPTIONS",
                    help="(refused: netrig labs have no NAT to the Internet)")
    ap.add_argument("--version", action="store_true", help="print the version and exit")
    ap.add_argument("-w", "--wait", action="store_true", default=None,
                    help="wait for switches to connect")
    ap.add_argument("-t", "--twait", type=int, dest="wait", metavar="SECONDS",
                    help="timed wait (s) for switches to connect")
    ap.add_argument("--cluster", metavar="server1,server2...",
                    help="(refused: Mininet's cluster edition)")
    ap.add_argument("--placement", choices=("block", "random"), default="block",
                    help="(with --cluster only)")
    ap.add_argument("extra", nargs="*", help=argparse.SUPPRESS)
    return ap


def _level(name: str) -> str:
    if name not in LEVELS:
        raise MnUsage(f"-v {name}: unknown verbosity{suggest.unknown(name, LEVELS, 'levels')}")
    return name


def parse(argv: list[str]) -> argparse.Namespace:
    """mn's options from the command line (-h prints the help and raises _Done(0))."""
    opts = _parser().parse_args(argv)
    if opts.extra:
        raise MnUsage(f"mn takes options only, not '{' '.join(opts.extra)}' (e.g. --topo "
                      "linear,3 --test pingall)")
    return opts

def refuse(opts: argparse.Namespace) -> None:
    """The options netrig mn cannot honour: MnUsage with why."""
    for option in ("xterms", "nat", "cluster"):
        if getattr(opts, option) is not None and getattr(opts, option) is not False:
            raise MnUsage(_REFUSED[option])

_REFUSED = {
    "xterms": "-x/--xterms: netrig mn opens no xterms (no display is assumed); use the "
              "prompt's 'h1 CMD', or 'netrig exec h1' from another terminal",
    "nat": "--nat: netrig labs have no NAT to the Internet (the lab stays inside its "
           "namespaces); give a host a route out yourself if you must",
    "cluster": "--cluster: Mininet's cluster edition is not part of netrig mn; netrig runs "
               "campaigns on a cluster with 'netrig run' (README: Campaigns on a cluster)",
}
