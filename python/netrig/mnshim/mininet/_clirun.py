"""Running commands at the prompt (a part of `mininet.cli.CLI`): `NODE CMD...` in the
node's shell with node names replaced by their addresses (`substitute`), its output as
it comes, the keys typed passed on and Ctrl-C sent to it (`waitForNode`); `noecho`,
`sh`, `py`, `px`, `time` and `source` (files read a line at a time, at most
`MAX_SOURCE_DEPTH` deep, lines of at most `MAX_LINE` characters). Mininet has no such
module.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import termios
import threading
import time
from collections.abc import Iterator
from typing import Any

from netrig import suggest

from mininet.log import error, output

MAX_LINE = 65536  # characters in one command line (a node's command included)
MAX_SOURCE_DEPTH = 8  # `source` inside `source`
WAKE_MS = 1000  # a running command's shell is checked for life this often


def substitute(args: str, address: Any) -> str:
    """`args` with every whitespace-separated word that `address(word)` maps to an
    address replaced by it (`ping -c1 h2` -> `ping -c1 10.0.0.2`); a name inside a
    longer word (`h2-eth0`, `h2,h3`, `'h2'`) stays, and so does the spacing."""
    return re.sub(r"\S+", lambda m: address(m.group()) or m.group(), args)


def strip_comment(line: str) -> str:
    """The line without a comment: from a `#` that starts a word to the end (a `#`
    inside a word, `http://x/#top`, stays)."""
    m = re.search(r"(^|\s)#", line)
    return line[: m.start()].rstrip() if m else line


@contextlib.contextmanager
def _interrupts_go_to(node: Any) -> Iterator[None]:
    """While node's command runs, Ctrl-C is sent on to it (sendInt) by the SIGINT handler
    itself: at once, wherever the waiting loop is, and nothing it was printing is lost. (As
    a KeyboardInterrupt, as Mininet has it, a ^C that came as the loop jumped back to
    `while node.waiting` was raised there, outside the loop's try: it went up to the
    prompt, which stopped the command and dropped its last words, ping's statistics.)
    A ^C once the command has ended is dropped (written to an idle shell it would make a
    stray prompt). Only Python's own handler is replaced, in the main thread; elsewhere,
    or under a script's own handler, the loop's `except KeyboardInterrupt` remains."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return

    def forward(_sig: int, _frame: Any) -> None:
        if node.waiting:
            node.sendInt()

    signal.signal(signal.SIGINT, forward)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


class RunCommands:
    """A node's command, and the prompt's commands that run something."""

    def default(self, line: str) -> None:
        """NODE CMD...: CMD run in NODE's shell, node names replaced by addresses."""
        line = line.strip()
        first, args = (line.split(None, 1) + [""])[:2] if line else ("", "")  # h1-x is not h1
        if first not in self.mn:
            names = [*self.commands(), *self.mn]
            error(f"*** Unknown command: {line}{suggest.did_you_mean(first, names)}\n")
            return
        if not args:
            error(f"*** Please enter a command for node: {first} <cmd>\n")
            return
        node = self.mn[first]

        def address(word: str) -> str | None:
            return self.mn[word].IP() if word in self.mn else None

        node.sendCmd(substitute(args, address))
        self.waitForNode(node)

    def waitForNode(self, node: Any) -> None:
        """Prints node's output as it comes until its command ends; on a terminal the
        keys typed go to the command (unbuffered) and Ctrl-C interrupts it (sendInt)."""
        with _interrupts_go_to(node):
            self._waitForNode(node)

    def _waitForNode(self, node: Any) -> None:
        fd = self.stdin.fileno() if self.isatty() else None
        out = node.stdout.fileno()
        poller = select.poll()
        poller.register(out, select.POLLIN)  # (node.monitor's own wait also wakes on POLLOUT)
        saved = None
        if fd is not None:
            poller.register(fd, select.POLLIN)
            saved = termios.tcgetattr(fd)
            raw = termios.tcgetattr(fd)
            raw[3] &= ~termios.ICANON  # a key at a time; echo and Ctrl-C as they were
            raw[6][termios.VMIN], raw[6][termios.VTIME] = 1, 0
            termios.tcsetattr(fd, termios.TCSANOW, raw)
        try:
            while node.waiting:
                try:
                    events = dict(poller.poll(WAKE_MS))
                    if fd is not None and events.get(fd, 0) & select.POLLIN:
                        typed = os.read(fd, 1024)
                        if typed:
                            node.write(typed.decode("utf-8", "replace"))
                    data = node.monitor() if events.get(out) else ""
                    if data:
                        output(data)
                    elif self._shell_gone(node, events.get(out, 0)):
                        break
                except KeyboardInterrupt:
                    node.sendInt()
        finally:
            if saved is not None:
                termios.tcsetattr(fd, termios.TCSADRAIN, saved)

    @staticmethod
    def _shell_gone(node: Any, event: int) -> bool:
        """Whether node's shell has exited or closed its output (said, once)."""
        shell = getattr(node, "shell", None)
        code = shell.poll() if shell is not None else None
        if code is None and not event & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
            return False
        how = f"exited (status {code})" if code is not None else "closed its output"
        error(f"*** {node.name}'s shell has {how}: its command's end cannot be told\n")
        node.waiting = False
        return True

    def do_noecho(self, line: str) -> None:
        """Run a node's command with echo off: noecho NODE CMD..."""
        fd = self.stdin.fileno() if self.isatty() else None
        saved = termios.tcgetattr(fd) if fd is not None else None
        if fd is not None:
            quiet = termios.tcgetattr(fd)
            quiet[3] &= ~termios.ECHO
            termios.tcsetattr(fd, termios.TCSANOW, quiet)
        try:
            self.default(line)
        finally:
            if saved is not None:
                termios.tcsetattr(fd, termios.TCSADRAIN, saved)

    def do_sh(self, line: str) -> None:
        """Run a shell command here, not in a node: sh CMD..."""
        subprocess.call(line, shell=True)

    def do_py(self, line: str) -> None:
        """Evaluate a Python expression: py h1.cmd('ls')

        `net` and every node by name are in scope (py net.hosts, py h1.IP()). This is
        your own prompt, as Mininet's: the expression runs in this process, with its
        rights (root's)."""
        try:
            result = eval(line, self.getLocals())  # noqa: S307 (the user's own)
        except Exception as e:  # the user's own expression: its error is the answer
            output(f"{type(e).__name__}: {e}\n")
            return
        if result is None or result == "":
            return
        output((result if isinstance(result, str) else repr(result)) + "\n")

    def do_px(self, line: str) -> None:
        """Execute a Python statement: px x = h1.IP()

        As py (your own prompt, in this process): `net` and the nodes in scope; what
        it assigns stays for later py and px."""
        try:
            exec(line, self.getLocals())  # noqa: S102 (the user's own)
        except Exception as e:  # the user's own statement: its error is the answer
            output(f"{type(e).__name__}: {e}\n")

    def do_time(self, line: str) -> bool:
        """Measure the time a command takes: time COMMAND..."""
        start = time.time()
        stop = self.onecmd(line)
        output("*** Elapsed time: %0.6f secs\n" % (time.time() - start))
        return stop

    def do_source(self, line: str) -> bool:
        """Read commands from a file: source FILE

        One command a line; # starts a comment; exit ends the file and the prompt."""
        args = line.split()
        if len(args) != 1:
            error("usage: source <file>\n")
            return False
        if self._depth >= MAX_SOURCE_DEPTH:
            error(f"*** source {args[0]}: files source each other {MAX_SOURCE_DEPTH} deep "
                  "(does one source itself?); not read\n")
            return False
        try:
            f = open(args[0], encoding="utf-8", errors="replace")  # noqa: SIM115 (read as it runs)
        except OSError as e:
            error(f"*** source {args[0]}: cannot read it ({e.strerror})\n")
            return False
        self._depth += 1
        try:
            with f:
                for n, text in enumerate(f, 1):
                    if len(text) > MAX_LINE:
                        error(f"*** {args[0]}:{n}: a line of {len(text)} characters (at most "
                              f"{MAX_LINE}); the rest of the file is not run\n")
                        return False
                    if self.onecmd(self.precmd(text.rstrip("\n"))):
                        return True
        finally:
            self._depth -= 1
        return False
