"""The console: netrig's stdout and stderr, written so that a reader who goes away
costs the words it did not read and nothing else.

`netrig run s.yaml | head -1` closes the pipe while netrig still has runs, a report and
figures to write. Python ignores SIGPIPE, so each write to a closed pipe raises
BrokenPipeError (EPIPE) wherever it happens to be: the progress display in the middle
of a run (`2>&1 | head -2`), the headline's print, the final flush. `guarded()` puts a
`Guarded` stream in front of sys.stdout and sys.stderr for a command's duration. The
first EPIPE on a stream points its file descriptor at /dev/null (what is still buffered,
later writes and the children that inherit it go nowhere, silently) and is remembered;
the command carries on to its end, and `Console.broken` tells main() that a reader went
away (its exit status: 141, as a program that SIGPIPE ended, unless the command failed).

Owns how netrig writes to its terminal or pipe, and that Ctrl-C reaches it
(`take_back_sigint`); what it writes is each command's.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

# A command that ran to its end but whose reader went away exits as a program that
# SIGPIPE ended would (128 + 13), as `git log | head` does.
EXIT_PIPE_CLOSED = 141


def take_back_sigint() -> None:
    """Ctrl-C (SIGINT) stops netrig however it was started: bash starts a script's
    background jobs (`netrig run s.yaml &` in a script) with SIGINT ignored, and an
    ignored signal stays ignored across exec, so `kill -INT` would not stop the run. Its
    default (KeyboardInterrupt) is put back; a handler someone set on purpose is kept."""
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _is_epipe(e: OSError) -> bool:
    return isinstance(e, BrokenPipeError) or e.errno == errno.EPIPE


class Guarded:
    """A text stream in front of `inner` (sys.stdout or sys.stderr): writes pass
    through until the reader is gone, then go to /dev/null. Everything else (isatty,
    fileno, encoding...) is `inner`'s."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return self.inner.write(text)
            except OSError as e:
                if not _is_epipe(e):
                    raise
                self._gone()
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self.broken:
            return
        try:
            self.inner.flush()
        except OSError as e:
            if not _is_epipe(e):
                raise
            self._gone()
        except ValueError:  # closed by someone else: nothing left to flush
            pass

    def _gone(self) -> None:
        """The reader went away: the descriptor now points at /dev/null, so what the
        buffer still holds is flushed there and nothing writes to the pipe again (not
        Python at exit, not a child started later)."""
        self.broken = True
        try:
            fd = self.inner.fileno()
        except (OSError, ValueError):  # no descriptor (a test's capture): drop the buffer's bytes
            return
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, fd)
        finally:
            os.close(null)
        try:
            self.inner.flush()
        except OSError:  # cannot happen on /dev/null; the words were lost anyway
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@dataclass
class Console:
    """The two guarded streams of one command."""

    streams: list[Guarded] = field(default_factory=list)

    @property
    def broken(self) -> bool:
        return any(s.broken for s in self.streams)

    def flush(self) -> None:
        for s in self.streams:
            s.flush()


@contextmanager
def guarded() -> Iterator[Console]:
    """sys.stdout and sys.stderr guarded for the block (restored after it, flushed)."""
    old = sys.stdout, sys.stderr
    out, err = Guarded(sys.stdout), Guarded(sys.stderr)
    sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
    console = Console([out, err])
    try:
        yield console
    finally:
        console.flush()
        sys.stdout, sys.stderr = old
