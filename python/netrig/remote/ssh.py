"""The SSH transport: the `ssh` and `scp` binaries, run as subprocesses.

They need no Python dependency and honour what the user has set up (~/.ssh/config,
the agent, ProxyJump, known_hosts), and their messages are ones users recognise. Every
command runs with BatchMode (never a prompt) and a ConnectTimeout, through one
ControlMaster per host per run (its socket in a private temporary directory; the
master is this process's child, stopped by `ssh -O exit` and then by its PID), so each
command costs a round trip, not a handshake.

Errors are `HostError`: one line naming the host (its name and user@host:port), the
step (connect, authenticate, copy netrig-perf, start server, run flow, collect, ...),
what ssh said and what to do.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from netrig.errors import NetrigError
from netrig.procs import end as end_process
from netrig.remote.hosts import HostSpec, option_problem

SSH_FAILED = 255  # ssh's own exit status: it, not the remote command, failed
AUTH_SLACK_S = 5.0  # how long after the connect timeout authentication may still take
_DENIED = re.compile(r"permission denied \(", re.I)  # "Permission denied (publickey)." (not a file's)


class HostError(NetrigError):
    """Something failed on (or on the way to) one host, at one step."""

    def __init__(self, name: str, spec: HostSpec, step: str, said: str, hint: str) -> None:
        self.host, self.step, self.said = name, step, said
        super().__init__(f"host {name} ({spec.label()}): {step}: {said}" + (f" — {hint}" if hint else ""))


@dataclass
class Done:
    """A finished command: its exit status and output."""

    code: int
    stdout: str
    stderr: str


def said(stderr: str) -> str:
    """What ssh said, in one line: its last lines that are not warnings about known hosts."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip()
             and not x.startswith("Warning: Permanently added")]
    if not lines:
        return "(ssh said nothing)"
    # "No ED25519 host key is known for ... / Host key verification failed.": both count
    tail = lines[-2:] if len(lines) > 1 and "host key" in lines[-1].lower() else lines[-1:]
    return " / ".join(tail)[:400]


def classify(name: str, spec: HostSpec, stderr: str, step: str = "connect") -> HostError:
    """The error ssh's message means: which step failed and what to do. `step` is the
    step under way when ssh itself (not the remote command) failed."""
    msg = said(stderr)
    low = msg.lower()
    host, port = spec.host, spec.port or 22
    key = f"the key {spec.key}" if spec.key else "your agent's or ~/.ssh's keys"
    if _DENIED.search(msg):
        return HostError(name, spec, "authenticate", msg,
                         f"is {key} authorised for {spec.user or 'that user'} on {host}? (add the "
                         "public key to its ~/.ssh/authorized_keys, or give key: one that is)")
    if "host key" in low or "host identification has changed" in low:
        return HostError(name, spec, "authenticate", msg,
                         f"ssh does not trust {host}'s host key: connect once by hand (ssh -p {port} "
                         f"{spec.ssh}) to check and record it in known_hosts, or set options: "
                         "{StrictHostKeyChecking: accept-new}")
    if ("load key" in low or "no such identity" in low or "identity file" in low) and spec.key:
        return HostError(name, spec, "authenticate", msg, f"is key: {spec.key} a readable private key?")
    if "could not resolve hostname" in low:
        return HostError(name, spec, "connect", msg, f"is {host} {name}'s name or address?")
    if "connection refused" in low:
        return HostError(name, spec, "connect", msg, f"is sshd running on {host}, on port {port}?")
    if any(w in low for w in ("no route to host", "timed out", "network is unreachable",
                              "host is down", "no answer within")):
        return HostError(name, spec, "connect", msg, f"is {name} up, and is {host} its address?")
    if any(w in low for w in ("connection closed", "closed by remote host", "connection reset", "broken pipe",
                              "not responding")):
        return HostError(name, spec, step, msg, f"{name} closed the connection or stopped answering: "
                         "is it still up?")
    return HostError(name, spec, step, msg, "")


class Host:
    """One real machine over SSH, for one run: `open()` starts the ControlMaster (connect
    and authenticate), `run`/`popen`/`copy` go through it, `close()` stops it."""

    def __init__(self, name: str, spec: HostSpec, ssh: str = "ssh", scp: str = "scp") -> None:
        self.name, self.spec = name, spec
        self.ssh, self.scp = ssh, scp
        self._dir: str | None = None
        self._master: subprocess.Popen | None = None

    @property
    def control(self) -> str | None:
        return None if self._dir is None else os.path.join(self._dir, "c")

    def options(self, master: bool = False) -> list[str]:
        """The -o options of every ssh and scp command to this host."""
        s = self.spec
        opts = {"BatchMode": "yes", "ConnectTimeout": f"{max(1, round(s.connect_timeout_s))}",
                "ServerAliveInterval": "5", "ServerAliveCountMax": "3"}
        if self.control is not None:
            opts.update({"ControlMaster": "yes" if master else "no", "ControlPath": self.control})
        if s.key:
            opts["IdentitiesOnly"] = "yes"
        for k, v in s.options.items():  # checked when the scenario loaded; again here, whoever built it
            if (why := option_problem(k, v)) is not None:
                raise HostError(self.name, s, "connect", f"options: {k}: refused", why)
        opts.update({k: str(v) for k, v in s.options.items()})
        out: list[str] = []
        for k, v in opts.items():
            out += ["-o", f"{k}={v}"]
        if s.key:
            out += ["-i", os.path.expanduser(s.key)]
        return out

    def argv(self, command: str | None, master: bool = False) -> list[str]:
        """ssh's command line: run `command` (a shell line) on the host; None: none
        (-N, the master)."""
        s = self.spec
        argv = [self.ssh, *self.options(master)]
        if s.port:
            argv += ["-p", str(s.port)]
        if command is None:
            return [*argv, "-N", s.ssh]
        return [*argv, s.ssh, "--", command]

    def open(self) -> None:
        """Connects and authenticates: starts the master and waits for its socket
        (ssh makes it once authenticated); a HostError (connect or authenticate) when
        ssh gives up, or when nothing happens within the connect timeout and 5 s more."""
        self._dir = tempfile.mkdtemp(prefix="netrig-ssh-")
        os.chmod(self._dir, 0o700)
        errf = tempfile.TemporaryFile(mode="w+")
        try:
            self._master = subprocess.Popen(self.argv(None, master=True), stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=errf, start_new_session=True)
        except OSError as e:
            self.close()
            raise HostError(self.name, self.spec, "connect", f"cannot run {self.ssh}: {e}",
                            "install openssh-client") from None
        limit = time.monotonic() + self.spec.connect_timeout_s + AUTH_SLACK_S
        assert self.control is not None
        while not os.path.exists(self.control):
            if self._master.poll() is not None or time.monotonic() > limit:
                late = self._master.poll() is None
                self.close()
                errf.seek(0)
                text = errf.read()
                if late:
                    text += (f"\nno answer within {self.spec.connect_timeout_s + AUTH_SLACK_S:g} s "
                             "(ssh neither connected nor gave up)")
                raise classify(self.name, self.spec, text, "connect")
            time.sleep(0.02)
        errf.close()

    def run(self, command: str, timeout: float, step: str) -> Done:
        """Runs a shell line on the host to its end (or `timeout`: a HostError at
        `step`); ssh's own failure (status 255) is a HostError too."""
        try:
            p = subprocess.run(self.argv(command), stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise HostError(self.name, self.spec, step, f"no answer within {timeout:g} s",
                            f"is {self.name} still up?") from None
        if p.returncode == SSH_FAILED:
            raise classify(self.name, self.spec, p.stderr, step)
        return Done(p.returncode, p.stdout, p.stderr)

    def popen(self, command: str, stdin=subprocess.DEVNULL, **kw) -> subprocess.Popen:
        """Starts a shell line on the host; the caller reads and waits (and writes, with
        stdin=subprocess.PIPE: what the command reads, never on a command line)."""
        return subprocess.Popen(self.argv(command), stdin=stdin, **kw)

    def copy(self, src: Path, dest: str, timeout: float) -> None:
        """Copies a local file to `dest` on the host (relative: to its home)."""
        argv = [self.scp, "-q", *self.options()]
        if self.spec.port:
            argv += ["-P", str(self.spec.port)]
        argv += [str(src), f"{self.spec.ssh}:{dest}"]
        try:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            raise HostError(self.name, self.spec, "copy netrig-perf", f"scp did not finish within {timeout:g} s",
                            f"is {self.name} still up, and its disk not full?") from None
        if p.returncode != 0:
            e = classify(self.name, self.spec, p.stderr, "copy netrig-perf")
            if e.step == "copy netrig-perf":
                e = HostError(self.name, self.spec, "copy netrig-perf", e.said,
                              f"install netrig-perf on {self.name} (its PATH, or give perf: its path)")
            raise e

    def close(self) -> None:
        """Stops the master (ssh -O exit, then its PID) and removes its directory."""
        m, self._master = self._master, None
        if m is not None:
            if m.poll() is None and self.control and os.path.exists(self.control):
                try:
                    subprocess.run([self.ssh, "-o", f"ControlPath={self.control}", "-O", "exit", self.spec.ssh],
                                   stdin=subprocess.DEVNULL, capture_output=True, timeout=5)
                    m.wait(timeout=3)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            end_process(m)  # a master that never connected, or did not leave when asked
        if self._dir is not None:
            for f in Path(self._dir).iterdir():
                try:
                    f.unlink()
                except OSError:
                    pass
            try:
                os.rmdir(self._dir)
            except OSError:
                pass
            self._dir = None


def quote(argv: list[str]) -> str:
    """A command line as one shell line for the remote shell."""
    return shlex.join(argv)
