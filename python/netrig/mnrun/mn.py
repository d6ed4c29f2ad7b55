"""`netrig mn`: Mininet's `mn` command line, on netrig's Mininet compatibility package.

Owns mn's options (their spellings, defaults and meaning, as /usr/bin/mn of Mininet 2.3
has them), the tables of names they take (topologies, switches, hosts, links,
controllers, tests), `--custom` files (run as mn runs them, with `import mininet` being
netrig's), and the run itself: build, `--pre` script, start, tests or the `mininet>`
prompt, `--post` script, stop, `completed in X seconds`. Everything printed on the way
(`*** Creating network` ... `*** Done`) is the compat package's, as it is Mininet's.

Not its business: how the network is built (mininet.net, the lab), the prompt
(mininet.cli), what a link class does with bw= or delay= (mininet.link).

Where it departs from mn, and why:
- every switch kind is a Linux bridge (the compat package's classes), so no controller
  is started: mn's default c0 is there as in mn (`nodes`, `net`, `dump` list it; Mininet's
  walkthrough counts it) and says nothing; an explicit --controller is said once on
  stderr; --controller none leaves c0 out;
- -x (xterms), --nat (NAT to the Internet) and --cluster are refused with a sentence;
- -c removes only what netrig made (labs whose builder died), never every `*-ethN` or
  process that looks like Mininet's;
- bad options are errors with a did-you-mean and exit status 2 (mn prints help and
  exits 0 for stray arguments); a topology of more than MAX_NODES nodes is refused
  before anything is built; `--test iperfudp[,BW]` runs net.iperf(l4Type='UDP') (mn 2.3
  looks for a method iperfUdp that Mininet does not have).
"""

from __future__ import annotations

import argparse
import inspect
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def _tree_size(depth: int = 1, fanout: int = 2) -> int:
    """Nodes of TreeTopo(depth, fanout), counted until past MAX_NODES."""
    if fanout <= 1:
        return depth + 1 if fanout else 1
    total, level = 0, 1
    for _ in range(depth + 1):
        total += level
        if total > MAX_NODES:
            break
        level *= fanout
    return total


# The nodes each builtin topology makes, from its arguments.
_SIZES = {
    "minimal": lambda: 3,
    "single": lambda k=2: k + 1,
    "reversed": lambda k=2: k + 1,
    "linear": lambda k=2, n=1: k * (n + 1),
    "tree": _tree_size,
    "torus": lambda x, y, n=1: x * y * (n + 1),
}


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


def _split(text: str) -> tuple[str, list, dict]:
    """mn's NAME,arg,...,key=value (numbers become int or float): mininet.util's."""
    from mininet.util import splitArgs

    return splitArgs(text)


@dataclass
class Tables:
    """The names mn's options take: mn's own, plus what --custom files add (a name
    maps to a spec of the compat package, or to the custom file's own object)."""

    topos: dict[str, Any] = field(default_factory=lambda: dict(TOPOS))
    switches: dict[str, Any] = field(default_factory=lambda: dict(SWITCHES))
    hosts: dict[str, Any] = field(default_factory=lambda: dict(HOSTS))
    links: dict[str, Any] = field(default_factory=lambda: dict(LINKS))
    controllers: dict[str, Any] = field(default_factory=lambda: dict(CONTROLLERS))
    tests: dict[str, Any] = field(default_factory=lambda: dict.fromkeys(TESTS))
    validate: Any = None
    cli: Any = None

    def load(self, value: str) -> None:
        """Runs a --custom file (or comma-separated files) as mn does, and takes the
        names it defines: topos, switches, hosts, links, controllers, tests (dicts),
        validate (called with the options), CLI (the prompt's class)."""
        files = [value] if os.path.isfile(value) else value.split(",")
        for name in files:
            self._load_one(Path(name))

    def _load_one(self, path: Path) -> None:
        if not path.is_file():
            raise MnUsage(f"--custom {path}: no such file (a Python file defining topos = "
                          "{'name': MyTopo}, e.g. Mininet's custom/topo-2sw-2host.py)")
        with open(path, "rb") as f:
            text = f.read(MAX_CUSTOM_BYTES + 1)
        if len(text) > MAX_CUSTOM_BYTES:
            raise MnUsage(f"--custom {path}: larger than {MAX_CUSTOM_BYTES} bytes")
        space: dict[str, Any] = {"__name__": "__mn_custom__", "__file__": str(path)}
        try:
            exec(compile(text, str(path), "exec"), space)  # mn runs custom files: trusted code
        except Exception as e:
            raise MnError(f"--custom {path}{_where(e, str(path))}: {type(e).__name__}: {e}") from None
        for key in ("topos", "switches", "hosts", "links", "controllers", "tests"):
            if key in space:
                if not isinstance(space[key], dict):
                    raise MnUsage(f"--custom {path}: '{key}' must be a dict of names "
                                  f"(e.g. {key} = {{'mine': ...}}), not {type(space[key]).__name__}")
                getattr(self, key).update(space[key])
        if callable(space.get("validate")):
            self.validate = space["validate"]
        if space.get("CLI") is not None:
            self.cli = space["CLI"]


def _where(e: BaseException, filename: str) -> str:
    """':LINE' of the last frame of `filename` in the exception (its own line for a
    syntax error); empty when none is in that file."""
    if isinstance(e, SyntaxError) and e.lineno:
        return f":{e.lineno}"
    line, tb = None, e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f":{line}" if line else ""


def _pick(table: dict, value: str, option: str, what: str, plural: str) -> tuple[str, list, dict]:
    name, args, kwargs = _split(value)
    if name not in table:
        raise MnUsage(f"{option} {value}: unknown {what} '{name}'{suggest.unknown(name, table, plural)}")
    return name, args, kwargs


def refuse(opts: argparse.Namespace) -> None:
    """The options netrig mn cannot honour: MnUsage with why."""
    for option in ("xterms", "nat", "cluster"):
        if getattr(opts, option) is not None and getattr(opts, option) is not False:
            raise MnUsage(_REFUSED[option])


def check(opts: argparse.Namespace, tables: Tables):
    """Every name and argument of the options, before anything is built: raises MnUsage
    naming the option, with a did-you-mean. Returns the topology (a pure Topo)."""
    _pick(tables.switches, opts.switch, "--switch", "switch", "switches")
    _pick(tables.hosts, opts.host, "--host", "host", "hosts")
    for c in opts.controller:
        _pick(tables.controllers, c, "--controller", "controller", "controllers")
    name, args, kwargs = _pick(tables.links, opts.link, "--link", "link", "links")
    if name in ("tc", "tcu") and tables.links[name] == LINKS[name]:
        if args:
            raise MnUsage(f"--link {opts.link}: tc takes key=value only (e.g. tc,bw=10,delay=5ms)")
        for key in kwargs:
            if key not in TC_KEYS:
                raise MnUsage(f"--link {opts.link}: unknown key '{key}'{suggest.unknown(key, TC_KEYS, 'keys')}")
    elif name == "default" and tables.links[name] == LINKS[name] and (args or kwargs):
        raise MnUsage(f"--link {opts.link}: a default link takes no parameters; a shaped "
                      f"one is --link tc,{opts.link.split(',', 1)[1]}")
    methods = _net_methods()
    for test in opts.test:
        for one in test.split("+"):
            tname = _split(one)[0]
            if (tname.lower() not in tables.tests and tname not in tables.tests
                    and ALTSPELLING.get(tname.lower(), tname) not in methods):
                near = [*tables.tests, *sorted(m for m in methods if m.lower() not in tables.tests)]
                raise MnUsage(f"--test {one}: unknown test '{tname}'"
                              f"{suggest.did_you_mean(tname, near)} (tests: "
                              f"{', '.join(tables.tests)}, or a method of Mininet: pingFull, ...)")
    from mininet.util import netParse

    try:
        _, plen = netParse(opts.ipbase)
    except NetrigError as e:
        raise MnUsage(f"--ipbase {opts.ipbase}: {e}") from None
    if not 0 < plen < 31:
        raise MnUsage(f"--ipbase {opts.ipbase}: a prefix of /1 to /30 leaves room for hosts "
                      "(e.g. 10.0.0.0/8)")
    for option in ("pre", "post"):
        path = getattr(opts, option)
        if path and not os.path.isfile(path):
            raise MnUsage(f"--{option} {path}: no such file (a file of prompt commands, one a line)")
        if path and os.path.getsize(path) > MAX_CUSTOM_BYTES:
            raise MnUsage(f"--{option} {path}: larger than {MAX_CUSTOM_BYTES} bytes")
    return topology(opts.topo, tables)  # a pure description: building it checks its arguments


def _net_methods() -> set[str]:
    """The public methods of mininet.net.Mininet, which --test may name (none while the
    compat package has no mininet.net)."""
    try:
        from mininet.net import Mininet
    except ImportError:
        return set()
    return {m for m in dir(Mininet) if not m.startswith("_") and callable(getattr(Mininet, m))}


_REFUSED = {
    "xterms": "-x/--xterms: netrig mn opens no xterms (no display is assumed); use the "
              "prompt's 'h1 CMD', or 'netrig exec h1' from another terminal",
    "nat": "--nat: netrig labs have no NAT to the Internet (the lab stays inside its "
           "namespaces); give a host a route out yourself if you must",
    "cluster": "--cluster: Mininet's cluster edition is not part of netrig mn; netrig runs "
               "campaigns on a cluster with 'netrig run' (README: Campaigns on a cluster)",
}


def topology(value: str, tables: Tables):
    """The Topo --topo names, built (pure: a description, no network). A builtin one's
    arguments are checked, and its size, before it is built."""
    name, args, kwargs = _pick(tables.topos, value, "--topo", "topology", "topologies")
    spec = tables.topos[name]
    builtin = spec == TOPOS.get(name)
    maker = _resolve(*spec) if builtin else spec
    _check_call(maker, args, kwargs, f"--topo {value}: {name}")
    if builtin:
        if any(not isinstance(a, int) or a < 0 for a in [*args, *kwargs.values()]):
            raise MnUsage(f"--topo {value}: {name}'s arguments are whole numbers (e.g. "
                          f"{_EXAMPLES[name]})")
        size = _SIZES[name](*args, **kwargs)
        if size > MAX_NODES:
            raise MnUsage(f"--topo {value} makes more than {MAX_NODES} nodes, the most netrig "
                          "mn builds in one network")
    try:
        return maker(*args, **kwargs)
    except NetrigError as e:
        raise MnUsage(f"--topo {value}: {e}") from None
    except Exception as e:
        raise MnError(f"--topo {value}: {type(e).__name__}: {e}") from e


def _check_call(maker, args: list, kwargs: dict, what: str) -> None:
    """MnUsage when `maker(*args, **kwargs)` does not fit its parameters: those of its
    build() for a Topo subclass that keeps Topo's constructor, else its own."""
    from mininet.topo import Topo

    bound: tuple = tuple(args)
    target = maker
    if isinstance(maker, type) and issubclass(maker, Topo) and maker.__init__ is Topo.__init__:
        target, bound = maker.build, (None, *args)
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return  # a callable without a signature: it says itself what it takes
    try:
        sig.bind(*bound, **kwargs)
    except TypeError as e:
        params = [p for p in sig.parameters if p not in ("self", "_opts", "opts", "params")]
        raise MnUsage(f"{what} takes {','.join(params) or 'no arguments'} ({e})") from None


_EXAMPLES = {"minimal": "minimal", "single": "single,3", "reversed": "reversed,3",
             "linear": "linear,4 or linear,3,2", "tree": "tree,2,3", "torus": "torus,3,3"}


def _resolve(module: str, name: str):
    """A class of the compat package, by module and name (LinuxBridge may be in
    mininet.nodelib, as in Mininet)."""
    import importlib

    for mod in (module, "mininet.nodelib") if name == "LinuxBridge" else (module,):
        try:
            found = getattr(importlib.import_module(mod), name, None)
        except ImportError:
            continue
        if found is not None:
            return found
    raise MnError(f"netrig's Mininet has no {module}.{name}")


def _classes(opts: argparse.Namespace, tables: Tables) -> dict[str, Any]:
    """Mininet()'s switch, host and link arguments from the options: each a class of
    the compat package (or of a --custom file), specialised with the option's params."""
    from mininet.util import specialClass

    def made(table: dict, value: str, kind: str, option: str):
        name, args, kwargs = _split(value)
        spec = table[name]
        defaults: dict = {}
        if isinstance(spec, tuple):  # (class name, defaults) for hosts
            spec, defaults = spec
        cls = _resolve(f"mininet.{kind}", spec) if isinstance(spec, str) else spec
        if not args and not kwargs and not defaults:
            return cls
        if not isinstance(cls, type):
            raise MnUsage(f"{option} {value}: '{name}' of the --custom file is not a class, "
                          "so it takes no parameters")
        return specialClass(cls, append=args, defaults={**defaults, **kwargs})

    controllers = [made(tables.controllers, c, "node", "--controller")
                   for c in opts.controller or ["default"]
                   if tables.controllers[_split(c)[0]] is not None]
    return {"switch": made(tables.switches, opts.switch, "node", "--switch"),
            "host": made(tables.hosts, opts.host, "node", "--host"),
            "link": made(tables.links, opts.link, "link", "--link"),
            "controller": controllers or None}


def clean() -> int:
    """mn -c: netrig's clean (mininet.clean.cleanup when the compat package has it)."""
    try:
        from mininet.clean import cleanup
    except ImportError:
        cleanup = None
    if cleanup is not None:
        cleanup()
        return 0
    from mininet.log import info

    from netrig.lab.build import clean as lab_clean

    info("*** Removing what netrig made and no builder owns\n")
    for prefix, why, problems in lab_clean():
        if not why:  # its state could not be read: nothing of it is touched
            info(f"*** lab '{prefix}' left as it is: {'; '.join(problems)}\n")
            continue
        info(f"*** lab '{prefix}' removed ({why})\n")
        for p in problems:
            info(f"    {p}\n")
    info("*** Cleanup complete.\n")
    return 0


def run_tests(net, tests: list[str], tables: Tables) -> None:
    """mn's --test: each test (several joined by '+') with its arguments, in order."""
    for option in tests:
        for one in option.split("+"):
            name, args, kwargs = _split(one)
            custom = tables.tests.get(name)
            if callable(custom):
                custom(net, *args, **kwargs)
            elif name.lower() in ("none", "build"):
                pass
            elif name.lower() == "all":  # (mn starts the network again first: it is started)
                net.ping()
                net.iperf()
            elif name.lower() == "iperfudp":
                net.iperf(l4Type="UDP", udpBw=str(args[0]) if args else "10M", **kwargs)
            elif callable(getattr(net, ALTSPELLING.get(name.lower(), name), None)):
                getattr(net, ALTSPELLING.get(name.lower(), name))(*args, **kwargs)
            else:
                raise MnUsage(f"--test {one}: unknown test '{name}'"
                              f"{suggest.unknown(name, tables.tests, 'tests')}")


def _activate() -> None:
    """Puts the compat package first on sys.path (netrig.mnrun.run.activate where it
    exists), and makes sure `import mininet` is it: mn -c of a real Mininet would kill
    every process and interface that looks like Mininet's."""
    shim = Path(__file__).resolve().parents[1] / "mnshim"
    try:
        from netrig.mnrun import run as runner
    except ImportError:
        runner = None
    if runner is not None and hasattr(runner, "activate"):
        runner.activate()
    elif str(shim) not in sys.path:  # until netrig.mnrun.run lands
        sys.path.insert(0, str(shim))
    import mininet

    where = Path(getattr(mininet, "__file__", "") or ".").resolve().parent
    if where != shim / "mininet":
        raise MnError(f"'import mininet' finds {where}, not netrig's compat package ({shim}); "
                      "netrig mn runs only on netrig's")


def main(argv: list[str]) -> int:
    """netrig mn ARGS: 0 when the run went through, 1 when it failed, 2 for a bad
    command line."""
    try:
        return _main(argv)
    except _Done as d:
        return d.status
    except MnUsage as e:
        print(f"netrig mn: error: {e}\n  ('netrig mn -h' lists mn's options)", file=sys.stderr)
        return 2
    except NetrigError as e:
        print(f"netrig mn: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a defect below (the compat package, a --custom class): said, not hidden
        import traceback

        print(f"netrig mn: error: {type(e).__name__}: {e}\n  (the traceback follows; the "
              "network, if built, was stopped)", file=sys.stderr)
        traceback.print_exc()
        return 1


def _main(argv: list[str]) -> int:
    opts = parse(argv)
    _activate()
    if opts.version:
        import mininet

        print(getattr(mininet, "VERSION", "2.3.0"))
        return 0
    from mininet.log import lg, warn

    if opts.verbosity in ("warning", "warn", "error", "critical"):
        warn(f"*** WARNING: selected verbosity level ({opts.verbosity}) will hide CLI output!\n"
             "Please restart Mininet with -v [debug, info, output].\n")
    lg.setLogLevel(opts.verbosity)
    refuse(opts)
    if opts.clean:
        return clean()
    tables = Tables()
    for value in opts.custom:
        tables.load(value)
    started = time.time()
    topo = check(opts, tables)
    asked = [c for c in opts.controller if tables.controllers[_split(c)[0]] is not None]
    if asked:
        print(f"netrig mn: --controller {' '.join(asked)}: accepted, not started "
              "(netrig's switches are Linux bridges, which learn by themselves)", file=sys.stderr)
    if tables.validate:
        tables.validate(opts)
    if os.geteuid() != 0:
        print("netrig mn needs root (it creates network namespaces); run it with sudo",
              file=sys.stderr)
        return 2
    return _run(opts, tables, topo, started)


def _run(opts: argparse.Namespace, tables: Tables, topo, started: float) -> int:
    from mininet.log import info

    try:
        from mininet.net import Mininet
    except ImportError as e:
        raise MnError(f"netrig's Mininet cannot build a network here: {e}") from None
    wait = opts.wait
    if wait is None:  # mn waits for switches when it runs a test (other than none)
        wait = bool(opts.test) and opts.test != ["none"]
    extra = {"autoPinCpus": True} if opts.pin else {}
    net = None
    # A closed terminal (SIGHUP: pexpect's close, a test that ends without 'exit') or
    # SIGTERM ends the run as an exception does: the network is stopped, not left up.
    saved = {sig: signal.signal(sig, _hung_up) for sig in (signal.SIGHUP, signal.SIGTERM)}
    try:
        classes = _classes(opts, tables)
        from mininet.node import quiet

        quiet("controller")  # said above for an explicit --controller; the default is mn's
        net = Mininet(topo=topo, ipBase=opts.ipbase, autoSetMacs=opts.mac,
                      autoStaticArp=opts.arp, waitConnected=wait, **classes, **extra)
        if opts.pre:
            _cli(tables)(net, script=opts.pre)
        net.start()
        if opts.test:
            run_tests(net, opts.test, tables)
        else:
            _cli(tables)(net)
        if opts.post:
            _cli(tables)(net, script=opts.post)
    except KeyboardInterrupt:
        info("\n\nKeyboard Interrupt. Shutting down and cleaning up...\n\n")
        return 130
    finally:
        try:
            if net is not None:
                net.stop()
        finally:
            for sig, handler in saved.items():
                signal.signal(sig, handler)
    info(f"completed in {time.time() - started:0.3f} seconds\n")
    return 0


def _hung_up(signum: int, _frame) -> None:
    """The run ends: later signals (pexpect's close sends SIGHUP, SIGCONT, SIGINT) no
    longer interrupt the network's stop."""
    for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def _cli(tables: Tables):
    """The prompt's class: a --custom file's CLI, else mininet.cli.CLI as it is now
    (a custom file may have replaced it)."""
    if tables.cli is not None:
        return tables.cli
    import mininet.cli

    return mininet.cli.CLI
