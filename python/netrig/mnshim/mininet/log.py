"""mininet.log: Mininet 2.3's logging, as scripts call it.

Owns the `mininet` logger (`lg`), its levels (Mininet's, with `output` = 25 between
info and warning), and the functions scripts import: `info`, `output`, `debug`, `warn`,
`warning`, `error`, `setLogLevel`. As in Mininet, a message is written as given, with no
newline added (`info('*** Adding hosts:\\n')` carries its own), several arguments are
joined by spaces (`info('h1', 2, '\\n')`), everything goes to stderr, and the default
level is `output`.

Where it departs from Mininet, and why:
- Mininet makes its logger class the default for every logger created afterwards
  (`logging.setLoggerClass`); this module makes only the `mininet` logger, and leaves
  the logging module as it found it (netrig's own loggers stay plain).
- The handler writes to whatever `sys.stderr` is at the time of the call (Mininet's
  keeps the stream it saw when imported), so a script or test that swaps stderr sees
  the messages; `lg.ch.setStream(f)` pins it to `f`, as with any StreamHandler.
- An unknown level name is a `LogLevelError` naming the valid ones.
"""

from __future__ import annotations

import logging
import sys

from netrig.errors import NetrigError

OUTPUT = 25

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "output": OUTPUT,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}
LOGLEVELDEFAULT = OUTPUT
LOGMSGFORMAT = "%(message)s"


class LogLevelError(NetrigError):
    """setLogLevel was given a name that is not one of LEVELS."""


class StreamHandlerNoNewline(logging.StreamHandler):
    """Writes each message as it is, without a trailing newline, and flushes it; its
    stream is the current sys.stderr unless one was set."""

    def __init__(self, stream=None):
        self._pinned = stream
        super().__init__(stream)

    @property
    def stream(self):
        return self._pinned if self._pinned is not None else sys.stderr

    @stream.setter
    def stream(self, value):
        # StreamHandler.__init__ stores sys.stderr here when given no stream: keep
        # following sys.stderr then, rather than the object it was at import.
        self._pinned = None if value is sys.__stderr__ or value is sys.stderr else value

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            stream = self.stream
            try:
                stream.write(text)
            except UnicodeEncodeError:
                stream.write(text.encode("utf-8", "replace").decode("ascii", "replace"))
            self.flush()
        except RecursionError:
            raise
        except Exception:  # logging's own rule: a failing handler reports, never raises
            self.handleError(record)


def _joined(args: tuple) -> tuple:
    """Mininet's calling convention: one argument is the message (formatted with no
    arguments, so a '%' in it stays), several are joined by spaces."""
    if len(args) == 1:
        return args
    return (" ".join(str(a) for a in args),)


class MininetLogger(logging.Logger):
    """The `mininet` logger: its handler `ch` writes without newlines; `setLogLevel`
    takes Mininet's level names; `output` logs at OUTPUT."""

    def __init__(self, name: str = "mininet"):
        super().__init__(name)
        self.ch = StreamHandlerNoNewline()
        self.ch.setFormatter(logging.Formatter(LOGMSGFORMAT))
        self.addHandler(self.ch)
        self.setLogLevel()

    def setLogLevel(self, levelname: str | None = None) -> None:
        """Sets the level of the logger and its handler by Mininet's name for it
        (None: the default, output)."""
        if levelname and levelname not in LEVELS:
            raise LogLevelError(f"setLogLevel: unknown level '{levelname}' (valid: "
                                f"{', '.join(LEVELS)})")
        level = LEVELS.get(levelname, LOGLEVELDEFAULT) if levelname else LOGLEVELDEFAULT
        self.setLevel(level)
        self.ch.setLevel(level)

    # Mininet's functions take their words as separate arguments: info('a', 1, 'b').
    def debug(self, *args, **kw):
        if self.isEnabledFor(logging.DEBUG):
            self._log(logging.DEBUG, _joined(args)[0], (), **kw)

    def info(self, *args, **kw):
        if self.isEnabledFor(logging.INFO):
            self._log(logging.INFO, _joined(args)[0], (), **kw)

    def output(self, *args, **kw):
        """Logs at OUTPUT: what the user asked to see (a command's output at the prompt)."""
        if self.isEnabledFor(OUTPUT):
            self._log(OUTPUT, _joined(args)[0], (), **kw)

    def warning(self, *args, **kw):
        if self.isEnabledFor(logging.WARNING):
            self._log(logging.WARNING, _joined(args)[0], (), **kw)

    warn = warning

    def error(self, *args, **kw):
        if self.isEnabledFor(logging.ERROR):
            self._log(logging.ERROR, _joined(args)[0], (), **kw)


def _the_logger() -> MininetLogger:
    """The one `mininet` logger of this process, registered with the logging module
    (so logging.getLogger('mininet') is it) without changing the class of any other."""
    manager = logging.Logger.manager
    existing = manager.loggerDict.get("mininet")
    if isinstance(existing, MininetLogger):
        return existing
    if isinstance(existing, logging.Logger):  # someone made a plain one first: ours stands apart
        return MininetLogger("mininet")
    saved = manager.loggerClass
    manager.setLoggerClass(MininetLogger)
    try:
        made = logging.getLogger("mininet")
    finally:
        manager.loggerClass = saved
    assert isinstance(made, MininetLogger)
    return made


lg = _the_logger()
info = lg.info
output = lg.output
warning = lg.warning
warn = lg.warning
error = lg.error
debug = lg.debug
setLogLevel = lg.setLogLevel
