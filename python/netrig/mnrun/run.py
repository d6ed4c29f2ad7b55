"""`netrig mininet SCRIPT.py [ARGS...]` (or `-m MODULE`, `-c CODE`): a Mininet script,
unmodified, on netrig.

`activate()` makes `import mininet` answer with netrig's package
(python/netrig/mnshim/mininet) in this process and in every Python it starts: the
package's directory goes first on sys.path and on PYTHONPATH, and a directory of shims
goes first on PATH: `python` and `python3` (this Python, so `pexpect.spawn('python -m
mininet.examples.X')` in Mininet's tests runs netrig's Mininet) and `mn` (`netrig mn`).
Nothing outside the command changes: a real Mininet installed on the machine is
untouched, and imported by any other program as before.

The script runs in this process (runpy), as `python SCRIPT.py` would run it: its
`__name__` is "__main__", sys.argv is [SCRIPT, ARGS...]. Whatever networks it leaves up
are taken down when it ends, however it ends (an exception, sys.exit, Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import tempfile
from pathlib import Path

from netrig.errors import NetrigError

SHIM = Path(__file__).resolve().parents[1] / "mnshim"


class MininetRunError(NetrigError):
    pass


def activate() -> Path:
    """Puts netrig's `mininet` first for this process and its children; returns the
    directory of the PATH shims."""
    if str(SHIM) not in sys.path:
        sys.path.insert(0, str(SHIM))
    for name in [m for m in sys.modules if m == "mininet" or m.startswith("mininet.")]:
        mod = sys.modules[name]
        if not str(getattr(mod, "__file__", "") or "").startswith(str(SHIM)):
            del sys.modules[name]  # a real Mininet imported earlier: ours from now on
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    netrig_src = str(SHIM.parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(SHIM), netrig_src,
                                               *[p for p in paths if p not in (str(SHIM), netrig_src)]])
    bindir = _shims()
    path = os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
    if not path.startswith(str(bindir) + os.pathsep):
        os.environ["PATH"] = f"{bindir}{os.pathsep}{path}"
    return bindir


_BIN: Path | None = None


def _shims() -> Path:
    """A private directory (0700) of executables: python, python3 and mn; one per
    process (named after its PID, removed when it ends), and those of processes that
    died without removing theirs (killed) are removed here."""
    global _BIN
    if _BIN is not None and _BIN.is_dir():
        return _BIN
    _sweep_shims()
    d = Path(tempfile.mkdtemp(prefix=f"netrig-mn-{os.getpid()}-"))
    py = sys.executable
    scripts = {
        "python": f'#!/bin/sh\nexec "{py}" "$@"\n',
        "python3": f'#!/bin/sh\nexec "{py}" "$@"\n',
        "mn": f'#!/bin/sh\nexec "{py}" -m netrig mn "$@"\n',
    }
    for name, text in scripts.items():
        p = d / name
        p.write_text(text)
        p.chmod(0o700)
    import atexit
    import shutil

    atexit.register(shutil.rmtree, d, True)
    _BIN = d
    return d


def _sweep_shims() -> None:
    """Removes this user's shim directories whose process is gone."""
    import shutil

    for d in Path(tempfile.gettempdir()).glob("netrig-mn-*-*"):
        try:
            st = d.lstat()
            pid = int(d.name.split("-")[2])
        except (OSError, ValueError, IndexError):
            continue
        if d.is_symlink() or not d.is_dir() or st.st_uid != os.getuid() or Path(f"/proc/{pid}").exists():
            continue
        shutil.rmtree(d, ignore_errors=True)


def main(argv: list[str]) -> int:
    """`netrig mininet` with its arguments: SCRIPT [ARGS], -m MODULE [ARGS], -c CODE [ARGS]."""
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.split("\n\n")[0])
        print("usage: netrig mininet SCRIPT.py [ARGS...] | -m MODULE [ARGS...] | -c CODE [ARGS...]")
        return 0 if argv else 2
    activate()
    signal.signal(signal.SIGTERM, _terminated)
    signal.signal(signal.SIGHUP, _terminated)  # its terminal closed (pexpect.close does this)
    if argv[0] == "-m":
        if len(argv) < 2:
            raise MininetRunError("-m: give a module, e.g. -m mininet.examples.simpleperf")
        sys.argv = [argv[1], *argv[2:]]
        return _run(lambda: runpy.run_module(argv[1], run_name="__main__", alter_sys=True))
    if argv[0] == "-c":
        if len(argv) < 2:
            raise MininetRunError("-c: give the code, e.g. -c 'from mininet.net import Mininet'")
        sys.argv = ["-c", *argv[2:]]
        code = argv[1]
        return _run(lambda: exec(compile(code, "<string>", "exec"), {"__name__": "__main__"}))
    script = Path(argv[0])
    if not script.is_file():
        raise MininetRunError(f"cannot read the script {script} "
                              f"({'no such file' if not script.exists() else 'not a file'})")
    sys.argv = [str(script), *argv[1:]]
    sys.path.insert(0, str(script.resolve().parent))
    return _run(lambda: runpy.run_path(str(script), run_name="__main__"))


def _terminated(signum, frame) -> None:
    raise SystemExit(128 + signum)


# Host-wide settings a Mininet script may change in the root namespace (Mininet's
# linearbandwidth example runs `sysctl -w net.ipv4.tcp_congestion_control=reno`; its
# fixLimits raises buffers and tables): what they were is put back when the script ends.
HOST_SYSCTLS = ("net/ipv4/tcp_congestion_control", "net/ipv4/ip_forward", "net/core/rmem_max",
                "net/core/wmem_max", "net/ipv4/tcp_rmem", "net/ipv4/tcp_wmem",
                "net/core/netdev_max_backlog", "net/ipv4/neigh/default/gc_thresh1",
                "net/ipv4/neigh/default/gc_thresh2", "net/ipv4/neigh/default/gc_thresh3")


# The ARP table's sizes, which the lab raises itself (mininet.util.fixLimits): put back
# without a word.
QUIET = frozenset(("net/ipv4/neigh/default/gc_thresh1", "net/ipv4/neigh/default/gc_thresh2",
                   "net/ipv4/neigh/default/gc_thresh3"))


def _host_settings() -> dict[str, str]:
    out = {}
    for key in HOST_SYSCTLS:
        try:
            out[key] = (Path("/proc/sys") / key).read_text().strip()
        except OSError:
            pass
    return out


def _put_back(before: dict[str, str]) -> None:
    for key, value in before.items():
        path = Path("/proc/sys") / key
        try:
            now = path.read_text().strip()
            if now != value:
                path.write_text(value)
                if key in QUIET:
                    continue  # (raised by netrig's fixLimits for the lab, as Mininet does)
                print(f"netrig mininet: the script changed {key.replace('/', '.')} on this machine "
                      f"({value!r} -> {now!r}); put back", file=sys.stderr)
        except OSError:
            pass


def _run(fn) -> int:
    from mininet import _lab

    before = _host_settings()
    try:
        fn()
        return 0
    except SystemExit as e:
        code = e.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        for line in _lab.stop_all():
            print(f"netrig mininet: {line}", file=sys.stderr)
        _put_back(before)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
