"""Captures in a running lab: of a link, one direction or both, or of a node's interface.

    where = capture.lab.resolve(net, link="s0-h2", dir="a_to_b")
    with safefs.Held(Path("out")) as into:
        cap = capture.lab.Capture(net, where, into, "s0-h2", Options(filter="tcp"))
        cap.start()
        ...
        summary = cap.stop()   # the files written, frames, drops written, rotations

A link netrig-link emulates is captured by netrig-link itself: what the link delivered,
as it left the emulator, and every frame it dropped, at the moment it did, with a
comment naming the cause (pcapng's opt_comment: Wireshark shows it, `frame.comment`
filters on it). Any other link, and a node's interface, is captured by dumpcap
(Wireshark's own capture engine) in the node's namespace, at the link's a end; one
direction is the kernel's `outbound` or `inbound` there. Both write pcapng files with
each interface named.

The size bound: `size` bytes in all. With `files: 1` the capture stops writing at the
bound; with `files: N` it is a ring of N files of size/N each, the oldest overwritten,
so the newest N files remain (tcpdump's -C/-W).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from netrig import safefs
from netrig.errors import NetrigError
from netrig.link import bpf, userspace

DIRS = ("a_to_b", "b_to_a", "both")
SNAPLEN = 262_144
DEFAULT_SIZE = 1_000_000_000  # bytes, all the files of one capture together
START_S = 10.0
KERNEL_WAY_S = 0.5  # dumpcap with `inbound`/`outbound` sees nothing for its first 0.25 s
# The kernel hands dumpcap its frames a block at a time, a block at least every 0.25 s;
# at SIGINT dumpcap writes what it was handed, so the last frames need that long first.
FLUSH_S = 0.6


class CaptureError(NetrigError):
    pass


@dataclass(frozen=True)
class Options:
    """How to capture: the BPF filter (tcpdump's syntax), the snap length, the size
    bound over `files` files, and whether frames the emulator dropped are written."""

    filter: str | None = None
    snaplen: int = SNAPLEN
    size: int = DEFAULT_SIZE
    files: int = 1
    drops: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.snaplen <= SNAPLEN:
            raise CaptureError(f"snaplen: {self.snaplen} is not between 1 and {SNAPLEN} bytes")
        if not 1 <= self.files <= 1000:
            raise CaptureError(f"files: {self.files} is not between 1 and 1000")
        if self.size < 10_000 * self.files:
            raise CaptureError(f"size: {self.size} bytes over {self.files} files leaves under "
                               "10 kB a file")


@dataclass(frozen=True)
class Where:
    """What a capture watches, found in a lab: a link (`dir` of it) or a node's
    interface; where the capture runs (namespace and device, for dumpcap), and whether
    netrig-link emulates it (then netrig-link captures it)."""

    label: str  # a file-name-safe name: s0-h2, s0-h2-a_to_b, h1-eth0
    describe: str  # what a person reads: link s0-h2, a -> b (s0 -> h2)
    link: str | None
    dir: str
    node: str | None
    ns: str
    dev: str
    emulated: bool
    way: str | None = None  # the BPF that keeps `dir` at this end (None: both ways)


def resolve(net: Any, link: str | None = None, dir: str = "both", node: str | None = None,
            iface: str | None = None) -> Where:
    """Where to capture in `net` (a running Network): a link by its name or `a-b`, or a
    node's interface (all of a node's interfaces are not one capture: name one). A
    CaptureError names what is not in the lab."""
    if dir not in DIRS:
        raise CaptureError(f"dir: '{dir}' (expected {', '.join(DIRS)})")
    if (link is None) == (node is None):
        raise CaptureError("a capture needs a link, or a node and its interface (not both)")
    plan, topo = net.plan, net.topo
    if link is not None:
        from netrig.lab import build  # a lab's link ends; build imports the link stack

        try:
            l = topo.link_named(link)
        except Exception as e:
            raise CaptureError(str(e)) from None
        st = net._lab()
        ends = build._ends(plan, st.prefix)[topo.links.index(l)]
        emulated = build._uses_emulator(plan, l)
        arrow = {"a_to_b": f", {l.a} -> {l.b}", "b_to_a": f", {l.b} -> {l.a}", "both": ""}[dir]
        label = l.name if dir == "both" else f"{l.name}-{dir}"
        # One direction is told by the source address a node's interface sends from
        # (the kernel's `outbound`/`inbound` makes dumpcap miss its first 0.25 s), so at
        # a node's end; between two switches, by `outbound`/`inbound` at the a end.
        at = 1 if topo.nodes[l.a] == "switch" and topo.nodes[l.b] != "switch" else 0
        end, way = ends[at], None
        if dir != "both":
            sends = (dir == "a_to_b") == (at == 0)
            if topo.nodes[(l.a, l.b)[at]] == "switch":
                way = "outbound" if sends else "inbound"
            else:
                mac = _mac(end.ns, end.dev)
                way = f"ether src {mac}" if sends else f"not ether src {mac}"
        return Where(_safe(label), f"link {l.name}{arrow}", l.name, dir, None, end.ns, end.dev,
                     emulated, way)
    if node not in topo.nodes:
        raise CaptureError(f"no node named '{node}'")
    names = [i.name for i in plan.ifaces[node]]
    if iface is None:
        if len(names) != 1:
            raise CaptureError(f"{node} has {len(names)} interfaces ({', '.join(names) or 'none'}): "
                               "say which (iface:)")
        iface = names[0]
    if iface not in names:
        raise CaptureError(f"{node} has no interface '{iface}' (it has {', '.join(names) or 'none'})")
    if dir != "both":
        raise CaptureError("dir: a node's interface is captured both ways (name a link for one)")
    return Where(_safe(f"{node}-{iface}"), f"{node}'s {iface}", None, "both", node, net[node].ns,
                 iface, False)


def _mac(ns: str, dev: str) -> str:
    p = subprocess.run(["ip", "-n", ns, "-j", "link", "show", "dev", dev], capture_output=True,
                       text=True, timeout=10)
    if p.returncode != 0:
        raise CaptureError(f"{dev} in {ns}: {p.stderr.strip()}")
    return json.loads(p.stdout)[0]["address"]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)  # no dot: dumpcap cuts a ring's names at one


class Capture:
    """One capture, started and stopped; `stop` returns its summary (and is safe to call
    twice, and after a failed start).

    Its files are NAME.pcapng (or a ring's NAME_NNNNN_TIME.pcapng, NAME.N.pcapng) and
    NAME.dumpcap.log in `into`, a directory netrig holds open. dumpcap and netrig-link
    (both root) write them into a private directory made inside it for this capture
    (safefs.Staging), named to them through a descriptor (/proc/self/fd/N, inherited,
    for dumpcap; /proc/PID/fd/N, netrig's, for netrig-link), and `stop` renames them into
    `into`: a component of into's path swapped for a link meanwhile changes nothing.
    `keep_log`: keep dumpcap's log when the capture did not fail (a run keeps it,
    `netrig capture` does not)."""

    def __init__(self, net: Any, where: Where, into: safefs.Held | None, name: str,
                 options: Options = Options(), keep_log: bool = True) -> None:
        self.net, self.where, self.into, self.name, self.opt = net, where, into, name, options
        self.keep_log = keep_log
        self.proc: subprocess.Popen | None = None
        self.stage: safefs.Staging | None = None
        self.log = f"{name}.dumpcap.log"
        self.started = False
        self.summary: dict[str, Any] | None = None
        # Checked before anything starts: a bad filter names itself, not a dead process.
        self.program = bpf.compile_bpf(options.filter) if options.filter else None

    def start(self) -> None:
        assert self.into is not None
        self.stage = safefs.Staging(self.into, "capture")
        if self.where.emulated:
            self._start_emulated()
        else:
            self._start_dumpcap()
        self.started = True

    def _pcapng(self) -> str:
        assert self.stage is not None
        return self.stage.proc_path(f"{self.name}.pcapng")

    def _start_emulated(self) -> None:
        o = self.opt
        try:
            userspace.capture_start(self.net._lab().control, self.where.link, self._pcapng(),
                                    dir=self.where.dir, snaplen=o.snaplen, bpf_filter=o.filter,
                                    drops=o.drops, file_size=o.size // o.files, files=o.files)
        except NetrigError as e:
            raise CaptureError(f"netrig-link would not capture {self.where.describe}: {e}") from None

    def _dumpcap_argv(self, out: str) -> list[str]:
        w, o = self.where, self.opt
        expr = o.filter
        if w.way:
            expr = f"{w.way} and ({expr})" if expr else w.way
        argv = ["ip", "netns", "exec", w.ns, "dumpcap", "-q", "-n", "-i", w.dev, "-s", str(o.snaplen),
                "-w", out]
        if expr:
            argv += ["-f", expr]
        kb = max(o.size // o.files // 1000, 10)
        if o.files == 1:
            argv += ["-a", f"filesize:{kb}"]
        else:
            argv += ["-b", f"filesize:{kb}", "-b", f"files:{o.files}"]
        return argv

    def _said(self) -> str:
        return self.stage.read_tail(self.log, 1 << 20) if self.stage is not None else ""

    def _start_dumpcap(self) -> None:
        assert self.stage is not None
        fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=self.stage.fd)
        # dumpcap gives up its capabilities once capturing, so it may not enter another
        # process's /proc/PID/fd: it gets the directory as a descriptor of its own.
        out = f"/proc/self/fd/{self.stage.fd}/{self.name}.pcapng"
        with os.fdopen(fd, "wb") as log:
            self.proc = subprocess.Popen(self._dumpcap_argv(out), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, pass_fds=(self.stage.fd,))
        deadline = time.monotonic() + START_S
        while "File: " not in self._said():  # after "Capturing on": the file is open
            if self.proc.poll() is not None:
                said = self._said().strip()[-400:]
                raise CaptureError(f"dumpcap could not capture {self.where.describe}: {said}")
            if time.monotonic() > deadline:
                self._end_dumpcap()
                raise CaptureError(f"dumpcap did not start capturing {self.where.describe} "
                                   f"in {START_S:g} s")
            time.sleep(0.02)
        if self.where.way in ("inbound", "outbound"):
            time.sleep(KERNEL_WAY_S)

    def _end_dumpcap(self, flushed: bool = False) -> int | None:
        p = self.proc
        if p is None:
            return None
        if p.poll() is None:
            if not flushed:
                time.sleep(FLUSH_S)
            p.send_signal(signal.SIGINT)  # dumpcap writes its statistics and closes the file
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        self.proc = None
        return p.returncode

    def stop(self, flushed: bool = False) -> dict[str, Any]:
        """Stops the capture (flushed: FLUSH_S has passed since the traffic of interest,
        as `stop_all` sees to), moves its files into place and returns its summary."""
        if self.summary is not None:
            return self.summary
        out: dict[str, Any] = {"where": self.where.describe, "link": self.where.link,
                               "dir": self.where.dir, "node": self.where.node,
                               "by": "netrig-link" if self.where.emulated else "dumpcap",
                               "filter": self.opt.filter, "snaplen": self.opt.snaplen,
                               "size": self.opt.size, "files_max": self.opt.files}
        names: list[str] | None = None
        if self.where.emulated and self.started:
            try:
                answer = userspace.capture_stop(self.net._lab().control, self.where.link,
                                                self._pcapng())["capture"]
            except (NetrigError, KeyError) as e:
                answer = {"error": str(e)}
            if answer.get("error"):
                out["error"] = f"netrig-link: {answer['error']}"
            c = answer.get("counters") or {}
            out.update({"frames": c.get("frames"), "drops_written": c.get("drops"),
                        "filtered": c.get("filtered"), "lost": c.get("lost"),
                        "over_size": c.get("over_size"), "files_rotated": c.get("files_rotated"),
                        "superframes": c.get("superframes"), "unsegmented": c.get("unsegmented")})
            if answer.get("files") is not None:
                names = [os.path.basename(f) for f in answer["files"]]
        elif not self.where.emulated:
            code = self._end_dumpcap(flushed)
            text = self._said()
            m = re.search(r"Packets received/dropped on interface '[^']*': (\d+)/(\d+)", text)
            if m:
                out["frames"], out["kernel_dropped"] = int(m.group(1)), int(m.group(2))
            if code not in (0, None, -signal.SIGINT):
                out["error"] = f"dumpcap exited {code}: {text.strip()[-300:]}"
        out["files"], out["bytes"] = self._move_in(names, keep_log=self.keep_log or "error" in out)
        self.summary = out
        return out

    def _move_in(self, names: list[str] | None, keep_log: bool) -> tuple[list[str], int]:
        """Renames the capture's files (`names`, oldest first, or those found) and its
        log (if `keep_log`) into `into`; their paths there and their bytes."""
        stage, self.stage = self.stage, None
        if stage is None or self.into is None:
            return [], 0
        try:
            present = stage.names()
            files = [n for n in (names if names is not None else capture_files(self.name, present))
                     if n in present]
            size = sum(stage.size(n) for n in files)
            stage.move_in(files + ([self.log] if keep_log and self.log in present else []))
        finally:
            stage.remove()
        return [str(self.into.path / n) for n in files], size


def stop_all(captures: list[tuple[int, Capture]]) -> None:
    """Stops each capture, after one wait for dumpcap's last frames (not one each)."""
    if any(c.proc is not None and c.proc.poll() is None for _, c in captures):
        time.sleep(FLUSH_S)
    for _, c in captures:
        c.stop(flushed=True)


def capture_files(name: str, present: list[str]) -> list[str]:
    """A capture's files among `present` (names, oldest first), in that order:
    NAME.pcapng alone, or a ring's files (dumpcap's NAME_NNNNN_TIME.pcapng, netrig-link's
    NAME.N.pcapng)."""
    pattern = re.escape(name) + r"(_\d+_\d+|\.\d+)?\.pcapng"
    return [n for n in present if re.fullmatch(pattern, n)]


def for_monitors(net: Any, monitors: list[Any], into: safefs.Held) -> list[tuple[int, Capture]]:
    """A Capture for each `capture` monitor of a scenario (by its index), writing
    K-LABEL.pcapng into the directory `into`; not started."""
    from netrig import units

    out = []
    for i, m in enumerate(monitors):
        if m.kind != "capture":
            continue
        where = resolve(net, link=m.link, dir=m.dir, node=m.node, iface=m.iface)
        opt = Options(filter=m.filter, snaplen=m.snaplen or SNAPLEN,
                      size=units.size_bytes(m.size) if m.size is not None else DEFAULT_SIZE,
                      files=m.files or 1, drops=True if m.drops is None else m.drops)
        out.append((i, Capture(net, where, into, f"{i}-{where.label}", opt)))
    return out


def resolve_word(net: Any, what: str, dir: str = "both") -> Where:
    """Where `netrig capture WHAT` means: `NODE[:IFACE]` when NODE is one of the lab's
    nodes other than a switch, else a link by its name or ends (`L2`, `s0-h2`). A
    CaptureError names what is not there, with the lab's links."""
    node, _, iface = what.partition(":")
    try:
        if node in net.topo.nodes and net.topo.nodes[node] != "switch":
            return resolve(net, node=node, iface=iface or None, dir=dir)
        return resolve(net, link=what, dir=dir)
    except CaptureError as e:
        links = ", ".join(x.name for x in net.topo.links)
        raise CaptureError(f"lab '{net.prefix}': {e} (its links: {links}; or NODE:IFACE)") from None
