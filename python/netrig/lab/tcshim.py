"""tc's command line inside a lab: `tc` first on a node's PATH, for the links netrig-link carries.

Owns the runtime of tc's shim: `install(bindir)` writes an executable `tc` that runs
`main` with tc's own arguments (node shells, `netrig exec` and the prompt put bindir
first on PATH; `netrig tc ARGS` runs the same `main`). `main` finds the lab and the
namespace the calling process is in (the inode of /proc/self/ns/net against
/run/netns/NAME of each lab's namespaces), and looks the device up in the lab's
`egress` map:

- `tc qdisc add|change|replace|link|delete dev IF ...` and `tc class ... htb` on a device
  whose link direction netrig-link carries become a live change of that direction
  (netrig.link.tcline reads the line; a `set` request on the link's control socket
  replaces that direction's whole spec, the other direction untouched), recorded in the
  lab's state as `netrig link set` records one (`plan["links"]`, `link_changes`);
- `tc [-s] qdisc show [dev IF]` prints a carried device's direction from netrig-link's
  counters in tc's format (netrig.link.tcshow); without a device, the real tc's lines
  with each carried device's replaced;
- everything else (another device, `tc filter`, a namespace of no lab, options such as
  `-j` or `-batch`) runs the real tc (PATH without the shim's directory, else
  /usr/sbin/tc or /sbin/tc) with the same arguments, so scripts keep working.

A line it cannot apply fails with tc's exit status and a sentence (netrig.link.tcline).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from netrig import safefs, units
from netrig.errors import NetrigError
from netrig.lab.state import LabState, alive, labs
from netrig.link import spec as linkspec
from netrig.link import tcline, tcshow, userspace
from netrig.link.tcline import Htb, TcLineError

MARK = "netrig.lab.tcshim"  # in the shim's text: how the real tc is told from it on PATH
NETNS_DIR = Path("/run/netns")
REAL_TC = ("/usr/sbin/tc", "/sbin/tc")
SCRIPT_MODES = safefs.Modes(file=0o700, dir=0o700, enforce=True)  # root's alone, as the lab's directory


def install(bindir: Path) -> Path:
    """Writes bindir/tc (root's, 0700, through netrig.safefs): this Python, by absolute
    path, running `main` of the netrig that installed it; returns its path."""
    root = Path(__file__).resolve().parents[2]  # the directory holding the netrig package
    text = (f"#!{sys.executable}\n"
            f"# tc on links netrig-link carries ({MARK}); anything else runs the real tc.\n"
            "import sys\n"
            f"sys.path.insert(0, {str(root)!r})\n"
            "from netrig.lab.tcshim import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    bindir = Path(bindir)
    return safefs.write(bindir.parent, f"{bindir.name}/tc", text, SCRIPT_MODES)


def real_tc() -> str:
    """The first tc on PATH that is not a shim, else /usr/sbin/tc or /sbin/tc."""
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = Path(d or ".") / "tc"
        try:
            if not (p.is_file() and os.access(p, os.X_OK)):
                continue
            with open(p, "rb") as f:
                if MARK.encode() in f.read(512):
                    continue
        except OSError:
            continue
        return str(p)
    for p in REAL_TC:
        if os.access(p, os.X_OK):
            return p
    raise NetrigError("no real tc found (PATH, /usr/sbin/tc, /sbin/tc): install iproute2")


def run_real(argv: Sequence[str]) -> int:
    """Becomes the real tc with the same arguments."""
    exe = real_tc()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, [exe, *argv])
    return 127  # pragma: no cover


def here() -> tuple[LabState, str] | None:
    """The lab and namespace this process is in, if it is in one of a lab's."""
    try:
        me = os.stat("/proc/self/ns/net")
        prefixes = labs()
    except OSError:
        return None
    for prefix in prefixes:
        try:
            st = LabState.load(prefix)
        except (NetrigError, OSError):
            continue
        for ns in st.namespaces:
            try:
                s = os.stat(NETNS_DIR / ns)
            except OSError:
                continue
            if (s.st_dev, s.st_ino) == (me.st_dev, me.st_ino):
                return st, ns
    return None


class Carried:
    """A device whose egress feeds a link direction netrig-link carries."""

    def __init__(self, st: LabState, dev: str, link: str, dir: str, control: str) -> None:
        self.st, self.dev, self.link, self.dir, self.control = st, dev, link, dir, control

    @property
    def entry(self) -> dict[str, Any]:
        return next(x for x in self.st.plan.get("links", []) if x["name"] == self.link)

    @property
    def text(self) -> dict[str, Any]:
        """The direction's keys as it runs now."""
        return dict(self.entry.get(self.dir) or {})

    @property
    def htb(self) -> Htb | None:
        h = self.st.tc_htb.get(self.link, {}).get(self.dir)
        return Htb(*h) if h else None


def carried(st: LabState, ns: str, dev: str | None) -> Carried | None:
    if dev is None:
        return None
    where = st.egress.get(ns, {}).get(dev)
    if not where:
        return None
    link, dir = where
    entry = next((x for x in st.plan.get("links", []) if x.get("name") == link), None)
    control = st.controls.get(link) or st.control
    if entry is None or not entry.get("emulated") or not control:
        return None
    return Carried(st, dev, link, dir, control)


def _explicit(text: dict[str, Any]) -> dict[str, Any]:
    """A direction's keys with every other key named as not set, so nothing of the
    link's own or the topology's defaults comes back under it."""
    return {k: text.get(k) for k in linkspec.KEYS}


def change(c: Carried, cmd: tcline.Command) -> None:
    """Applies cmd to c's direction: netrig-link first, then the lab's state."""
    st = c.st
    current = c.text
    applied = tcline.apply(cmd, current, c.htb)
    at = f"{c.dev} (link {c.link}, {c.dir})"
    try:
        d = linkspec.resolve(applied.text)
    except units.UnitError as e:
        raise TcLineError(f"{at}: {e}", status=2) from None
    spec = d.spec()
    trace = applied.text.get("trace")
    if trace and not os.path.isabs(trace) and not st.topology.startswith("<"):
        # a trace kept from the topology: relative to its file, as the lab read it
        spec["trace"]["path"] = os.path.join(os.path.dirname(st.topology), os.path.expanduser(trace))
    pid = st.pids.get("netrig-link", 0)
    if c.control == st.control and pid and not alive(pid, "netrig-link"):
        raise TcLineError(f"{at}: the lab's link emulator (netrig-link pid {pid}) is not running", status=2)
    try:
        userspace.request(c.control, {"cmd": "set", "link": c.link, "dir": c.dir, "spec": spec,
                                      "version": linkspec.VERSION})
    except userspace.LinkDaemonError as e:
        raise TcLineError(f"{at}: {e}", status=2) from None
    # The state as it is now (another command may have saved since we read it).
    fresh = LabState.load(st.prefix)
    entry = next(x for x in fresh.plan["links"] if x["name"] == c.link)
    entry[c.dir] = applied.text
    other = "b_to_a" if c.dir == "a_to_b" else "a_to_b"
    changes = dict(fresh.link_changes.get(c.link) or {})
    changes[c.dir] = _explicit(applied.text)
    changes[other] = _explicit(dict(entry.get(other) or {}))
    fresh.link_changes[c.link] = changes
    dirs = fresh.tc_htb.setdefault(c.link, {})
    if applied.htb is None:
        dirs.pop(c.dir, None)
    else:
        dirs[c.dir] = [applied.htb.major, applied.htb.default]
    if not dirs:
        fresh.tc_htb.pop(c.link)
    fresh.save()


def counters(c: Carried) -> dict[str, Any]:
    """netrig-link's counters for c's direction."""
    try:
        answer = userspace.request(c.control, {"cmd": "stats"})
    except userspace.LinkDaemonError as e:
        raise TcLineError(f"{c.dev} (link {c.link}): {e}", status=2) from None
    for link in answer.get("links", []):
        if link.get("link") == c.link:
            return link.get(c.dir) or {}
    raise TcLineError(f"{c.dev}: netrig-link carries no link '{c.link}'", status=2)


def _show_args(words: Sequence[str]) -> tuple[str | None, bool]:
    """`show`'s filter words: (the device, whether a filter leaves the root qdisc out)."""
    dev, other = None, False
    i = 0
    while i < len(words):
        w = words[i]
        if w == "dev" and i + 1 < len(words):
            dev = words[i + 1]
            i += 1
        elif w in ("ingress", "clsact") or tcline.matches(w, "parent") or tcline.matches(w, "handle"):
            other = True
            i += 1
        i += 1
    return dev, other


def show(st: LabState, ns: str, argv: Sequence[str], words: Sequence[str], stats: bool) -> int:
    dev, filtered = _show_args(words)
    if dev is not None:
        c = carried(st, ns, dev)
        if c is None:
            return run_real(argv)
        if not filtered:
            sys.stdout.write(tcshow.show(c.text, counters(c) if stats else None, None))
        return 0
    # Every device: the real tc's lines, each carried device's block replaced.
    p = subprocess.run([real_tc(), *argv], capture_output=True, text=True, timeout=30)
    sys.stderr.write(p.stderr)
    blocks: list[list[str]] = []
    for line in p.stdout.splitlines(keepends=True):
        if line.startswith("qdisc ") or not blocks:
            blocks.append([])
        blocks[-1].append(line)
    out = []
    for block in blocks:
        words_ = block[0].split()
        name = words_[words_.index("dev") + 1] if "dev" in words_[:4] else None
        c = carried(st, ns, name)
        if c is None:
            out.append("".join(block))
        elif not filtered:
            out.append(tcshow.show(c.text, counters(c) if stats else None, name))
    sys.stdout.write("".join(out))
    return p.returncode


def _options(argv: Sequence[str]) -> tuple[bool, list[str]] | None:
    """tc's global options that the shim takes (-s, -statistics, -d, -details, each
    abbreviated as tc allows), and the rest; None when another option is given."""
    stats = False
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        o = argv[i][1:] if argv[i].startswith("--") else argv[i]
        if tcline.matches(o, "-stats") or tcline.matches(o, "-statistics"):
            stats = True
        elif not tcline.matches(o, "-details"):
            return None
        i += 1
    return stats, list(argv[i:])


def run(argv: Sequence[str]) -> int:
    got = _options(argv)
    if got is None or not got[1]:
        return run_real(argv)
    stats, (obj, *words) = got
    what = "qdisc" if tcline.matches(obj, "qdisc") else "class" if tcline.matches(obj, "class") else None
    lab = here() if what else None
    if lab is None:
        return run_real(argv)
    st, ns = lab
    if what == "qdisc" and (not words or any(tcline.matches(words[0], w) for w in ("list", "show", "lst"))):
        return show(st, ns, argv, words[1:], stats)
    if not words or tcline.verb_of(words[0]) is None:
        return run_real(argv)
    at = words.index("dev") if "dev" in words[:-1] else None
    c = carried(st, ns, words[at + 1] if at is not None else None)
    if c is None or any(w in ("ingress", "clsact") for w in words[1:]):
        return run_real(argv)  # a line for another device is the real tc's, however it reads
    try:
        change(c, tcline.parse(what, words))
    except TcLineError as e:
        if not str(e).startswith(c.dev):
            raise TcLineError(f"{c.dev} (link {c.link}, {c.dir}): {e}", e.status) from None
        raise
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """tc's command line (argv without the program's name); its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return run(argv)
    except TcLineError as e:
        print(f"netrig tc: {e}", file=sys.stderr)
        return e.status
    except NetrigError as e:
        print(f"netrig tc: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
