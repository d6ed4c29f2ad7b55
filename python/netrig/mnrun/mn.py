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

The command line (options, spellings, refusals, errors) is `netrig.mnrun.options`'; the
tables of names, `--custom` files and the checks before a build are
`netrig.mnrun.tables`'; this module runs: `main`, `-c`, the tests, the run. Their names
are importable from here too.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from netrig import suggest
from netrig.errors import NetrigError
from netrig.mnrun.options import (
    ALTSPELLING,
    CONTROLLERS,
    HOSTS,
    LINKS,
    MAX_CUSTOM_BYTES,
    MAX_NODES,
    SWITCHES,
    TC_KEYS,
    TESTS,
    TOPOS,
    MnError,
    MnUsage,
    _Done,
    parse,
    refuse,
)
from netrig.mnrun.tables import Tables, _classes, _split, check, topology

__all__ = ["ALTSPELLING", "CONTROLLERS", "HOSTS", "LINKS", "MAX_CUSTOM_BYTES", "MAX_NODES", "SWITCHES",
           "TC_KEYS", "TESTS", "TOPOS", "MnError", "MnUsage", "Tables", "check", "clean", "main", "parse",
           "refuse", "run_tests", "topology"]


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
