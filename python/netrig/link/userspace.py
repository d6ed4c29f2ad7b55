"""The user-space backend: the netrig-link daemon's life and its control socket.

What each link direction becomes in netrig-link's JSON is `netrig.link.spec.Direction.spec()`.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from netrig import safefs
from netrig._bins import binary
from netrig.errors import NetrigError

# The netrig-link processes this process started, by pid: their exit status, if they
# end while we run (a lab's state holds only the pid).
_started: dict[int, subprocess.Popen] = {}


class LinkDaemonError(NetrigError):
    pass


def start(ns: str, config: dict[str, Any], workdir: Path, timeout: float = 15) -> subprocess.Popen:
    """Starts netrig-link in namespace ns (its own session, so it outlives us) and waits
    for its "ready" line."""
    # The lab's own directory (root's, 0700); written as netrig writes every file, so a
    # link planted at either name is replaced, never written through.
    cfg_path = safefs.write(workdir, "link.json", json.dumps(config, indent=1) + "\n", safefs.PRIVATE)
    log = workdir / "link.log"
    with safefs.open_new(workdir, "link.log", safefs.PRIVATE) as f:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, str(binary("netrig-link")), "run", "--config", str(cfg_path)],
            stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + timeout
    while '"ready"' not in log.read_text():
        if proc.poll() is not None:
            raise LinkDaemonError(f"netrig-link failed: {log.read_text().strip()[-800:]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise LinkDaemonError(f"netrig-link did not start within {timeout:.0f} s: {log}")
        time.sleep(0.01)
    _started[proc.pid] = proc
    return proc


def exit_status(pid: int, wait: float = 0.0) -> int | None:
    """The return code of a netrig-link this process started and that has ended
    (negative: the signal that ended it), waiting up to `wait` seconds for it (a process
    seen dying may not have finished exiting); None while it runs, or if we did not start it."""
    proc = _started.get(pid)
    if proc is None:
        return None
    try:
        return proc.wait(timeout=wait) if wait > 0 else proc.poll()
    except subprocess.TimeoutExpired:
        return None


def forget(pid: int) -> None:
    """Reaps a netrig-link this process started, once it has been stopped."""
    proc = _started.pop(pid, None)
    if proc is not None:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def request(control: str | Path, req: dict[str, Any], timeout: float = 5) -> dict[str, Any]:
    """One request on the daemon's control socket; its answer, or LinkDaemonError with
    the daemon's complaint."""
    answer = exchange(control, req, timeout)
    if isinstance(answer, dict) and answer.get("error"):
        raise LinkDaemonError(f"netrig-link: {answer['error']}")
    return answer


def exchange(control: str | Path, req: dict[str, Any], timeout: float = 5) -> dict[str, Any]:
    """One request on the daemon's control socket; its one-line answer as it is."""
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(timeout)
            s.connect(str(control))
            s.sendall((json.dumps(req) + "\n").encode())
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
    except OSError as e:
        raise LinkDaemonError(f"netrig-link control socket {control}: {e}") from None
    try:
        answer = json.loads(buf)
    except json.JSONDecodeError:
        raise LinkDaemonError(f"netrig-link answered {buf[:200]!r}") from None
    return answer


# Captures (netrig-link's `capture_start` / `capture_stop`): one per link at a time.
DEFAULT_SNAPLEN = 262_144


def capture_request(link: str, path: str | Path, *, dir: str = "both", snaplen: int = DEFAULT_SNAPLEN,
                    bpf_filter: str | None = None, drops: bool = True, file_size: int | None = None,
                    files: int = 1) -> dict[str, Any]:
    """A capture of `link` as netrig-link takes it (the `capture_start` request without
    its "cmd", and an entry of its config's "captures").

    dir: "a_to_b", "b_to_a" or "both" (one file, an interface each). bpf_filter: a
    tcpdump expression, compiled here by tcpdump. drops: also write the frames the link
    drops, each with a comment naming the cause. file_size (bytes) and files: a ring of
    files `path`, `path` with ".1" before its extension, ... the oldest overwritten."""
    from netrig.link.bpf import compile_bpf

    if dir not in ("a_to_b", "b_to_a", "both"):
        raise LinkDaemonError(f"capture of {link}: dir {dir!r} is not a_to_b, b_to_a or both")
    return {"link": link, "dir": dir, "path": str(Path(path).absolute()), "snaplen": snaplen,
            "bpf": [list(i) for i in compile_bpf(bpf_filter)] if bpf_filter else None,
            "drops": drops, "file_size": file_size, "files": files}


def capture_start(control: str | Path, link: str, path: str | Path, *, dir: str = "both",
                  snaplen: int = DEFAULT_SNAPLEN, bpf_filter: str | None = None, drops: bool = True,
                  file_size: int | None = None, files: int = 1) -> dict[str, Any]:
    """Starts a capture of `link` (options: as `capture_request`); the daemon's answer:
    {"capture": status, "link_counters": {"a_to_b": ..., "b_to_a": ...}} with the
    link's counters at the moment the capture began."""
    req = capture_request(link, path, dir=dir, snaplen=snaplen, bpf_filter=bpf_filter, drops=drops,
                          file_size=file_size, files=files)
    return request(control, {"cmd": "capture_start", **req})


def capture_stop(control: str | Path, link: str, path: str | Path | None = None) -> dict[str, Any]:
    """Stops `link`'s capture (the one writing to `path`, needed when the link has
    several), flushing and closing its file; the daemon's answer: {"capture": final
    status with "counters" (frames, filtered, drops, bytes, files_rotated, superframes,
    unsegmented) and "files" (oldest first), "link_counters": the link's counters at the
    stop}."""
    req: dict[str, Any] = {"cmd": "capture_stop", "link": link}
    if path is not None:
        req["path"] = str(Path(path).absolute())
    return request(control, req)
