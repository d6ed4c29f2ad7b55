"""`netrig top`: a running lab's emulated links, live in the terminal (netrig.lab.top
owns the numbers and the frame; this module owns the terminal: keys, refreshes, the
alternate screen and putting the terminal back).

On a terminal it redraws every --interval seconds until q, Ctrl-C or SIGTERM (the
terminal restored each time), and exits 1 saying so when the lab goes away. Piped, it
prints one frame as plain text after one window of samples and exits 0, as `top -b -n 1`
does: a snapshot in a log or a script is useful, and refusing would help nobody.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import time

from netrig.cli.base import Adder, NeedsRoot, prefix_arg, the_lab
from netrig.errors import NetrigError

INTERVAL = (0.05, 10.0)  # the refresh interval's bounds, seconds


class _Terminated(Exception):
    pass


def top(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        raise NeedsRoot("netrig top needs root (a lab's state and its emulator's control socket "
                        "are root's); run it with sudo")
    lo, hi = INTERVAL
    if not lo <= args.interval <= hi:
        raise NetrigError(f"--interval {args.interval:g}: give between {lo:g} and {hi:g} seconds "
                          "(e.g. --interval 0.5)")
    from netrig.lab import top as view

    feed = view.Feed(the_lab(args))
    tr = view.Tracker(feed.state.plan)
    try:
        if not sys.stdout.isatty():
            _gather(feed, tr, view.WINDOW_S + 0.1)
            print(view.text(_frame(view, feed, tr, view.WIDTH, None, live=False)), end="")
            return 0
        return _live(view, feed, tr, args.interval)
    finally:
        feed.close()


def _frame(view, feed, tr, width: int, height: int | None, live: bool = True):
    tr.stats(feed.stats())
    return view.frame(view.header(feed.state, view.clock()), view.rows(tr), width, height, live)


def _gather(feed, tr, seconds: float) -> None:
    """Reads samples for `seconds`."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if select.select([feed], [], [], left)[0]:
            feed.read(tr)


def _live(view, feed, tr, interval: float) -> int:
    import termios
    import tty

    from rich.console import Console
    from rich.live import Live

    keys = sys.stdin.fileno() if sys.stdin.isatty() else None
    saved = termios.tcgetattr(keys) if keys is not None else None
    console = Console()

    def terminated(signum, frame):
        raise _Terminated

    before = signal.signal(signal.SIGTERM, terminated)
    try:
        if keys is not None:
            tty.setcbreak(keys)  # a key at a time, unechoed; Ctrl-C still interrupts
        with Live(console=console, screen=True, auto_refresh=False, redirect_stderr=False) as live:
            next_draw = time.monotonic() + min(interval, 0.2)  # the first with samples
            while True:
                waits = [feed] + ([keys] if keys is not None else [])
                ready = select.select(waits, [], [], max(0.0, next_draw - time.monotonic()))[0]
                if feed in ready:
                    feed.read(tr)
                if keys is not None and keys in ready:
                    got = os.read(keys, 64)
                    if not got:
                        keys = None  # stdin closed: Ctrl-C or SIGTERM still quit
                    elif b"q" in got.lower():
                        return 0
                if time.monotonic() >= next_draw:
                    size = console.size
                    live.update(_frame(view, feed, tr, min(view.WIDTH, size.width), size.height),
                                refresh=True)
                    next_draw = max(next_draw + interval, time.monotonic() + interval / 2)
    except KeyboardInterrupt:
        return 0
    except _Terminated:
        return 143
    except view.LabGone as e:
        print(f"netrig top: {e}", file=sys.stderr)
        return 1
    finally:
        if saved is not None:
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, saved)
        signal.signal(signal.SIGTERM, before)


def register(add: Adder) -> None:
    p = add("top", top, "top [--prefix P] [--interval S]", "a running lab's emulated links, "
            "live: delivered against configured rate, queue, drops, ECN marks, lateness",
            ["netrig top", "netrig top --prefix pf --interval 1", "netrig top | cat"],
            "Busiest direction first: its delivered rate over the last second against its "
            "configured rate, its mean queue (packets) and sojourn (ms), drops since the lab "
            "came up by cause (o: queue overflow, a: AQM, l: emulated loss), ECN marks, "
            "netrig-link's lateness (p99 of its 10 ms windows) and the last 10 s of its "
            "rate. q or Ctrl-C quits; exits 1 when the lab goes away. Piped, it prints one "
            "frame as plain text after a second of samples.")
    prefix_arg(p)
    p.add_argument("--interval", type=float, default=0.25, metavar="S",
                   help="seconds between refreshes (default 0.25; 0.05 to 10; e.g. --interval 1)")
