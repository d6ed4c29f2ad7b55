"""A Mininet node's shell: a bash of its own in the node's namespace, behind a
pseudo-terminal, started the first time the node is used, and the commands run through
it (`cmd`, `sendCmd` / `waitOutput` / `monitor`, `sendInt`) or beside it in the same
namespaces (`popen`, `pexec`). `NodeShell` is a part of `mininet.node.Node` (made in
`mininet._nodebase`, whose `__init__` sets the attributes read here); Mininet has no
such module: scripts reach all this through their nodes.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import subprocess
import termios
from subprocess import PIPE
from typing import Any

from netrig.lab.state import LabError

from mininet._interrupt import Resend
from mininet.log import debug, error, info, warn


def _is_builtin(cmd: str) -> bool:
    word = cmd.split(" ")[0]
    return word in ("cd", "export", "set", "unset", "source", ".", "alias", "wait", "jobs",
                    "kill", "echo", "printf", "read", "exit", "ulimit", "umask", "trap")


class NodeShell:
    """The shell half of a Node: its bash, and commands in and beside it."""

    # The shell, started when first needed.
    @property
    def pid(self) -> int | None:
        return self.shell.pid if self.shell else None

    @property
    def shell(self) -> subprocess.Popen | None:
        """The node's bash (started now if it has not been)."""
        if self._shell is None and not self._stopped:
            self.startShell()
        return self._shell

    @shell.setter
    def shell(self, value: subprocess.Popen | None) -> None:
        self._shell = value

    @property
    def stdin(self):
        return self._stdin if self.shell else None

    @property
    def stdout(self):
        return self.stdin

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PATH"] = f"{self.lab.bindir}:{env.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"
        return env

    def _enter(self) -> list[str]:
        """The argv prefix that runs a program in this node's namespaces."""
        if self.ns is None:
            return []
        if self._shell is not None and self._shell.poll() is None:
            return ["nsenter", "--target", str(self._shell.pid), "--net", "--mount", "--"]
        return ["ip", "netns", "exec", self.ns]

    def startShell(self, mnopts: Any = None) -> None:
        if self._shell is not None:
            error(f"{self.name}: shell is already running\n")
            return
        self.lab.flush()
        self.master, self.slave = pty.openpty()
        argv = [*self._enter(), "env", "PS1=" + chr(127), "bash", "--norc", "--noediting", "-is",
                "mininet:" + self.name]

        def own_terminal() -> None:  # the pty is the shell's terminal: ^C reaches its job
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self._shell = subprocess.Popen(argv, stdin=self.slave, stdout=self.slave, stderr=self.slave,
                                      close_fds=True, preexec_fn=own_terminal, env=self._env())
        self.lab.shells.append(self._shell)
        self._stdin = os.fdopen(self.master, "r", closefd=False)
        self.pollOut = select.poll()
        self.pollOut.register(self.master, select.POLLIN)
        self.outToNode[self.master] = self
        self.inToNode[self.master] = self
        self.readbuf = ""
        while True:
            data = self.read(1024)
            if data.endswith(chr(127)):
                break
            if self._shell.poll() is not None:
                raise LabError(f"{self.name}: its shell exited at once: {data.strip()[-300:]}")
            self.pollOut.poll(1000)
        self.waiting = False
        self.cmd("unset HISTFILE; stty -echo; set +m")
        self.mountPrivateDirs()
        self._shell_started()

    def _shell_started(self) -> None:
        """Subclasses' hook: the shell runs (a CPU-limited host joins its cgroup)."""

    def mountPrivateDirs(self) -> None:
        """Each private directory mounted in the node's own mount namespace (its shell's:
        `ip netns exec` gives it one): a (dir, source) pair is bound from source
        (`%(name)s` is the node's name), a lone dir is a fresh tmpfs."""
        for d in self.privateDirs:
            if isinstance(d, tuple):
                src = d[1] % {**self.__dict__, "name": self.name}
                self.cmd(f"mkdir -p {src}; mkdir -p {d[0]}; mount --bind {src} {d[0]}")
            else:
                self.cmd(f"mkdir -p {d}; mount -n -t tmpfs tmpfs {d}")

    def unmountPrivateDirs(self) -> None:
        for d in self.privateDirs:
            self.cmd(f"umount {d[0] if isinstance(d, tuple) else d}")

    def read(self, size: int = 1024) -> str:
        if self.master is None and self.shell is None:
            return ""
        count = len(self.readbuf)
        if count < size:
            try:
                data = os.read(self.master, size - count)
            except OSError:
                data = b""
            self.readbuf += self._decoder.decode(data)
        result, self.readbuf = self.readbuf[:size], self.readbuf[size:]
        return result

    def readline(self) -> str:
        while "\n" not in self.readbuf:
            self.readbuf += self.read(1024)
        line, self.readbuf = self.readbuf.split("\n", 1)
        return line + "\n"

    def write(self, data: str) -> None:
        if self._shell is None:
            self.startShell()
        os.write(self.master, data.encode())

    def waitReadable(self, timeoutms: float | None = None) -> list:
        if self.shell is None:
            return []
        if self.readbuf:
            return [(self.master, select.POLLIN)]
        return self.pollOut.poll(timeoutms)

    def sendCmd(self, *args: Any, **kwargs: Any) -> None:
        if self._shell is None:
            self.startShell()
        if self.waiting:
            raise LabError(f"{self.name}: a command is still running ({self.lastCmd!r}); "
                           "waitOutput() first")
        cmd = args[0] if len(args) == 1 and isinstance(args[0], list) else args
        cmd = cmd if isinstance(cmd, str) else " ".join(str(c) for c in cmd)
        if not re.search(r"\w", cmd):
            cmd = "echo -n"
        self.lastCmd = cmd
        self._interrupts += 1  # a ^C's watch (mininet._interrupt) ends with its command
        if cmd.rstrip().endswith("&"):
            cmd += ' printf "\\001%d\\012" $! '
        self.write(cmd + "\n")
        self.lastPid = None
        self.waiting = True

    def sendInt(self, intr: str = chr(3)) -> None:
        """^C to the running command, as Mininet's: chr(3) written to the node's terminal;
        and, for a command that was starting then, SIGINT once it runs (`mininet._interrupt`)."""
        debug(f"sendInt: writing chr({ord(intr)})\n")
        self._interrupts += 1
        shell = self.shell
        if intr != chr(3) or not self.waiting or shell is None or shell.poll() is not None:
            self.write(intr)
            return
        turn = self._interrupts
        resend = Resend(shell.pid, lambda: self.waiting and self._interrupts == turn and not self._stopped)
        self.write(intr)
        resend.start()

    def monitor(self, timeoutms: float | None = None, findPid: bool = True) -> str:
        if not self.waitReadable(timeoutms):
            return ""
        data = self.read(1024)
        marker = chr(1) + r"\d+\r\n"
        if findPid and chr(1) in data:
            data = re.sub(r"\[\d+\] \d+\r\n", "", data)
            while not re.findall(marker, data):
                data += self.read(1024)
            found = re.findall(marker, data)
            if found:
                self.lastPid = int(found[0][1:])
                data = re.sub(marker, "", data)
        if data.endswith(chr(127)):
            self.waiting = False
            data = data[:-1]
        elif chr(127) in data:
            self.waiting = False
            data = data.replace(chr(127), "")
        return data

    def waitOutput(self, verbose: bool = False, findPid: bool = True) -> str:
        log = info if verbose else debug
        out = ""
        while self.waiting:
            data = self.monitor(findPid=findPid)
            if not data and self._shell is not None and self._shell.poll() is not None:
                self.waiting = False
                break
            out += data
            log(data)
        return out

    def cmd(self, *args: Any, **kwargs: Any) -> str | None:
        verbose = kwargs.get("verbose", False)
        (info if verbose else debug)(f"*** {self.name} : {args}\n")
        if self._stopped:
            warn(f"({self} exited - ignoring cmd{args})\n")
            return None
        if self._shell is not None and self._shell.poll() is not None:
            print("shell died on ", self.name)
            self._shell = None
        self.sendCmd(*args, **kwargs)
        return self.waitOutput(verbose)

    def cmdPrint(self, *args: Any) -> str | None:
        return self.cmd(*args, verbose=True)

    def popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen:
        """A process in this node's namespaces (Popen's keywords; shell=True runs the
        line through $SHELL -c)."""
        defaults: dict[str, Any] = {"stdout": PIPE, "stderr": PIPE}
        defaults.update(kwargs)
        shell = defaults.pop("shell", False)
        defaults.pop("mncmd", None)
        if len(args) == 1:
            if isinstance(args[0], list):
                cmd = list(args[0])
            elif isinstance(args[0], str):
                cmd = [args[0]] if shell else args[0].split()
            else:
                raise TypeError("popen() requires a string or list")
        else:
            cmd = [str(a) for a in args]
        if shell:
            cmd = [os.environ.get("SHELL", "/bin/sh"), "-c", " ".join(cmd)]
        self.lab.flush()
        if self.privateDirs and self._shell is None:
            self.startShell()  # its mounts are the node's
        defaults.setdefault("env", self._env())
        pre = self._popen_hook()
        if pre is not None:
            defaults["preexec_fn"] = pre
        p = subprocess.Popen([*self._enter(), *cmd], **defaults)
        debug("_popen", cmd, p.pid)
        return p

    def _popen_hook(self):
        return None

    def pexec(self, *args: Any, **kwargs: Any) -> tuple[str, str, int]:
        defaults = {"stdout": PIPE, "stderr": PIPE, "stdin": PIPE}
        defaults.update(kwargs)
        p = self.popen(*args, **defaults)
        out, err = p.communicate()
        return (out.decode(errors="replace") if isinstance(out, bytes) else out or "",
                err.decode(errors="replace") if isinstance(err, bytes) else err or "", p.wait())
