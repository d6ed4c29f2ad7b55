"""What `netrig run` shows while it runs: runs done of the total, the point being run
in words, the time elapsed and the time left, each with its unit.

On a terminal, one line redrawn in place that fits the terminal's width: the point
(`point 3/4: aqm pie(target=20ms)`) is what a reader looks for, so decoration goes
first (the percentage, "done", "repetition" spelled out, "elapsed", then the time
elapsed) and the point's words are cut last. Anywhere else (a pipe, a
log file), one plain line per run and no carriage returns. A note (a failed run, a
late emulator) is always a line of its own.

Owns the wording and layout of progress (`status`, `opening`, `words`, `duration`); the runner
says when a run starts, ticks and ends. Reads nothing of the run itself.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import Any, TextIO

from netrig.exp.analysis.words import in_words as words

SEP = " · "


def duration(s: float) -> str:
    """`45 s`, `2 min 05 s`, `1 h 02 min`: a time a reader takes in at a glance."""
    s = max(0, int(round(s)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def status(done: int, total: int, point: str, elapsed_s: float, left_s: float, width: int,
           rep: str = "") -> str:
    """The one-line status on a terminal `width` columns wide (never wider): runs done of
    total, the point (`point 3/4: aqm pie(target=20ms) on s0-h2`) and its repetition
    (`rep`: `2/3`), time elapsed and left. Decoration goes first (the percentage, "done",
    the word "repetition", then "elapsed"), then the time elapsed; the point's words are
    cut only when even the barest line leaves them no room."""
    el, left = duration(elapsed_s), f"~{duration(left_s)} left"
    pct = f" ({100 * done // total}%)" if total else ""
    runs = f"{done}/{total} runs"
    heads = (f"{runs} done{pct}{SEP}{el} elapsed{SEP}{left}",  # richest first
             f"{runs}{SEP}{el} elapsed{SEP}{left}",
             f"{runs}{SEP}{el} in{SEP}{left}",
             f"{runs}{SEP}{left}",
             f"{done}/{total}{SEP}{left}")  # (a narrow terminal)
    if not point:
        return next((h for h in heads if len(h) <= width), heads[-1][:width])
    points = [point + f", repetition {rep}", point + f", rep {rep}"] if rep else [point]
    tried = [(h, x) for h in heads[:2] for x in points] + [(h, points[-1]) for h in heads[2:]]
    for head, about in tried:
        if len(head) + len(SEP) + len(about) <= width:
            return head + SEP + about
    about = points[-1]  # too long for any line: cut, beside the richest head leaving it 40
    head = next((h for h in heads[2:] if width - len(h) - len(SEP) >= 40), heads[-1])
    room = width - len(head) - len(SEP)
    if room < 12:  # (a very narrow terminal: the numbers alone)
        return head[:width].rstrip()
    return head + SEP + about[: room - 1] + "…"


def opening(name: str, points: int, repeat: int, estimate_s: float, out: str,
            width: int) -> str:
    """What `netrig run` says before it builds anything: the runs it will make, about
    how long they take and where the results go; on two lines when one would be wider
    than `width` (a results directory's path is long)."""
    def n(k: int, what: str) -> str:
        return f"{k} {what}{'' if k == 1 else 's'}"

    runs = f"{n(points, 'point')} x {n(repeat, 'repetition')} = {n(points * repeat, 'run')}"
    first = f"netrig: {name}: {runs}, about {duration(estimate_s)}"
    line = f"{first}; results in {out}"
    return line if len(line) <= width else f"{first}\n  results in {out}"


class Display:
    """Progress on `stream` (stderr): a line redrawn in place on a terminal, one line
    per run elsewhere; nothing when not `enabled`."""

    def __init__(self, total: int, estimate_s: float, enabled: bool = True,
                 stream: TextIO | None = None, parallel: int = 1) -> None:
        self.total = total
        self.left_s = estimate_s / parallel
        self.parallel = parallel  # runs going on at once (a cluster's workers)
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.live = enabled and self.stream.isatty()
        self.t0 = time.monotonic()
        self.done = 0
        self.point = ""
        self.rep = ""  # `2/3`, when the scenario repeats
        self.run_s = 0.0  # of the run going on
        self.drawn = 0.0

    def __enter__(self) -> Display:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()

    def width(self) -> int:
        return max(20, shutil.get_terminal_size((80, 24)).columns - 1)  # not the last column

    def left(self) -> float:
        return max(0.0, self.left_s - self.run_s)

    def start_run(self, k: int, point_index: int, npoints: int, params: dict[str, Any], rep: int,
                  repeat: int, where: str = "") -> None:
        """Run k (counted from 0 among all runs) starts; `where`: the worker running it."""
        self.run_s = 0.0
        about = words(params)
        self.point = ((f"{where}: " if where else "") + f"point {point_index + 1}/{npoints}"
                      + (f": {about}" if about else ""))
        self.rep = f"{rep + 1}/{repeat}" if repeat > 1 else ""
        if self.live:
            self._draw()
        elif self.enabled:
            point = self.point + (f", repetition {self.rep}" if self.rep else "")
            self._line(f"run {k + 1}/{self.total}" + (f" on {point}" if where else f": {point}")
                       + f"{SEP}{duration(time.monotonic() - self.t0)} elapsed{SEP}~{duration(self.left())} left")

    def tick(self, run_elapsed_s: float) -> None:
        self.run_s = run_elapsed_s
        if self.live and time.monotonic() - self.drawn >= 0.5:
            self._draw()

    def end_run(self, k: int, length_s: float, settle_s: float, note: str = "") -> None:
        self.left_s = max(0.0, self.left_s - (length_s + settle_s + 1.5) / self.parallel)
        self.done, self.run_s = self.done + 1, 0.0
        if self.done == self.total:  # the last line says the whole, not a point
            self.point = self.rep = ""
        if note and self.enabled:
            if self.live:
                self.stream.write("\r\x1b[K")
            self._line(note if self.live else f"netrig: {note}")
        elif note:  # failures are said even without a progress display
            print(f"netrig: {note}", file=self.stream, flush=True)
        if self.live:
            self._draw()

    def _draw(self) -> None:
        self.drawn = time.monotonic()
        text = status(self.done, self.total, self.point, self.drawn - self.t0, self.left(),
                      self.width(), self.rep)
        self.stream.write("\r\x1b[K" + text)
        self.stream.flush()

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
