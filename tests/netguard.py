"""The guard that keeps pure tests pure: a test not marked `net` that opens a network
socket, creates a network namespace or starts a program that does (ip, tc, ping, iperf3,
netrig-perf, netrig-link, a lab command of the netrig CLI, a browser) fails loudly.

tests/conftest.py arms it around every test without the `net` marker. What it watches:
- sockets of the families that carry traffic or configure the network (AF_INET,
  AF_INET6, AF_PACKET, AF_NETLINK): connect, connect_ex, bind, sendto, sendmsg with an
  address. AF_UNIX stays allowed (pure tests talk to stand-in daemons over it);
- processes, by the command they run: subprocess.Popen (and so run, call,
  check_output, asyncio's subprocesses), os.system, os.exec*, os.posix_spawn*, with
  wrappers (env, timeout, nice, stdbuf, sh -c SCRIPT) looked through;
- namespaces made in-process: os.unshare and os.setns where Python has them, and
  netrig's own libc handle (netrig.lab.netns._libc.unshare/setns).

A violation raises NetworkInPureTest (an AssertionError, so `except OSError` around a
connect does not swallow it) and is also recorded: the test fails at teardown even if
its code caught the exception.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shlex
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import PurePath
from typing import Any

# Programs that build namespaces, shape links or send traffic whatever their arguments.
# Headless chromium is here because it resolves names and connects out (DNS, and
# 2001:4860:4860::8888:443, seen with strace) even to render a file:// page.
NETWORK_PROGRAMS = frozenset({
    "ip", "tc", "ping", "ping6", "iperf3", "nsenter", "unshare", "tcpdump", "dumpcap", "ethtool",
    "chromium", "chromium-browser", "google-chrome",
})
# netrig's own binaries, and the web flow's client and server: network tools, except for
# these pure invocations.
NETRIG_BINARIES = frozenset({"netrig-perf", "netrig-link", "curl", "nginx"})
INFO_FLAGS = frozenset({"--version", "-V", "-v", "--help", "-h"})
PURE_SUBCOMMANDS = {"netrig-link": frozenset({"schema"})}
# Subcommands of the `netrig` CLI that build, enter or change a lab, or run traffic.
LAB_COMMANDS = frozenset({"up", "down", "run", "exec", "link", "pingall", "capture", "mn", "mininet",
                          "cli", "tc"})
# tcpdump only compiling a filter (-d, -dd, -ddd), for a link type (-y), opens nothing.
COMPILE_FLAGS = frozenset({"-d", "-dd", "-ddd"})
# Wrappers that run the rest of their arguments as a command. (Not setpriv: tests use it
# to run the CLI as an unprivileged user, who can create no namespace, to see it refuse.)
# Each with its options that take a separate value.
WRAPPERS = {
    "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "nice": {"-n", "--adjustment"},
    "stdbuf": {"-i", "-o", "-e"},
    "setsid": set(),
    "nohup": set(),
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-U", "-r", "-t"},
}
SHELLS = frozenset({"sh", "bash", "dash", "zsh"})
GUARDED_FAMILIES = frozenset(
    getattr(socket, name) for name in ("AF_INET", "AF_INET6", "AF_PACKET", "AF_NETLINK")
    if hasattr(socket, name))


class NetworkInPureTest(AssertionError):
    """A test without the `net` marker reached for the network."""


def _name(word: Any) -> str:
    if isinstance(word, bytes):
        word = word.decode(errors="replace")
    return PurePath(os.fspath(word)).name


def _argv(args: Any) -> list[str]:
    if isinstance(args, (str, bytes, os.PathLike)):
        return [os.fsdecode(args)]
    return [os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else str(a) for a in args]


def _unwrap(argv: list[str]) -> list[str]:
    """The command a wrapper runs: `env A=1 timeout -s KILL 5 ip ...` is `ip ...`."""
    while argv and (wrapper := _name(argv[0])) in WRAPPERS:
        rest = argv[1:]
        while rest and (rest[0].startswith("-") or (wrapper == "env" and "=" in rest[0])):
            rest = rest[2:] if rest[0] in WRAPPERS[wrapper] else rest[1:]
        if wrapper == "timeout" and rest:
            rest = rest[1:]  # the duration
        argv = rest
    return argv


def _script_commands(script: str) -> list[list[str]]:
    """The simple commands of a shell line, split at ; & | && || and newlines."""
    lex = shlex.shlex(script, posix=True, punctuation_chars=";&|")
    lex.whitespace_split = True
    lex.commenters = "#"
    try:
        words = list(lex)
    except ValueError:
        words = script.split()
    out, cur = [], []
    for w in words:
        if w and set(w) <= set(";&|"):
            out.append(cur)
            cur = []
        else:
            cur.append(w)
    return [c for c in [*out, cur] if c]


def _netrig_cli_args(argv: list[str]) -> list[str] | None:
    """The arguments of a `netrig` CLI invocation (`netrig ...` or `python -m netrig ...`),
    or None if argv is not one."""
    prog = _name(argv[0])
    if prog == "netrig":
        return argv[1:]
    if prog.startswith("python") or argv[0] == sys.executable:
        for i, a in enumerate(argv[1:-1], 1):
            if a == "-m":
                return argv[i + 2:] if argv[i + 1] == "netrig" else None
            if not a.startswith("-"):
                return None
    return None


def why_network(args: Any, shell: bool = False) -> str | None:
    """Why running `args` reaches for the network (a sentence), or None if it does not."""
    if shell:
        text = args if isinstance(args, (str, bytes)) else shlex.join(_argv(args))
        return why_network(["sh", "-c", os.fsdecode(text)])
    argv = _unwrap(_argv(args))
    if not argv:
        return None
    prog = _name(argv[0])
    if prog in SHELLS:
        script = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-c"), None)
        if script is None:
            return None
        for cmd in _script_commands(script):
            if why := why_network(cmd):
                return why
        return None
    if prog == "tcpdump" and COMPILE_FLAGS & set(argv) and "-y" in argv and not {"-i", "-r"} & set(argv):
        return None
    if prog in NETWORK_PROGRAMS:
        return f"it runs {prog}"
    if prog in NETRIG_BINARIES:
        rest = argv[1:]
        if len(rest) == 1 and rest[0] in INFO_FLAGS:
            return None
        if rest and rest[0] in PURE_SUBCOMMANDS.get(prog, ()):
            return None
        return f"it runs {prog} {' '.join(rest)}".rstrip()
    cli = _netrig_cli_args(argv)
    if cli is not None:
        sub = next((a for a in cli if not a.startswith("-")), None)
        if sub in LAB_COMMANDS:
            return f"it runs `netrig {sub}`"
        if sub == "perf":
            return why_network(["netrig-perf", *cli[cli.index("perf") + 1:]])
    return None


class Guard:
    """Arms the checks (see the module's docstring) and records what they caught."""

    def __init__(self, test: str) -> None:
        self.test = test
        self.caught: list[str] = []

    def violation(self, what: str) -> NetworkInPureTest:
        msg = (f"{self.test} is not marked `net` but {what}: mark it "
               "@pytest.mark.net (and keep it under tests/net or tests/perf), or keep it off the network")
        self.caught.append(msg)
        return NetworkInPureTest(msg)

    def check_command(self, args: Any, shell: bool = False) -> None:
        if why := why_network(args, shell):
            raise self.violation(f"{why} ({' '.join(_argv(args))[:200]})")

    def check_socket(self, sock: socket.socket, op: str, address: Any) -> None:
        if sock.family in GUARDED_FAMILIES:
            raise self.violation(f"{op}s a {socket.AddressFamily(sock.family).name} socket "
                                 f"to {address!r}")

    @contextlib.contextmanager
    def armed(self) -> Iterator[Guard]:
        with contextlib.ExitStack() as stack:
            for target, name, wrapper in self._patches():
                original = getattr(target, name)
                setattr(target, name, wrapper(original))
                stack.callback(setattr, target, name, original)
            yield self

    def _patches(self) -> Iterator[tuple[Any, str, Callable]]:
        guard = self

        def sock_op(op: str, addr_at: int | None) -> Callable:
            def wrap(original):
                def guarded(sock, *args, **kw):
                    address = args[addr_at] if addr_at is not None and len(args) > addr_at else None
                    if addr_at is None or address is not None:
                        guard.check_socket(sock, op, address if addr_at is not None else args[0])
                    return original(sock, *args, **kw)
                return guarded
            return wrap

        yield socket.socket, "connect", sock_op("connect", None)
        yield socket.socket, "connect_ex", sock_op("connect", None)
        yield socket.socket, "bind", sock_op("bind", None)
        yield socket.socket, "sendto", lambda o: _sendto(guard, o)
        yield socket.socket, "sendmsg", sock_op("sendmsg", 3)

        def popen_init(original):
            def guarded(self, args, *a, **kw):
                guard.check_command(args, kw.get("shell", False))
                return original(self, args, *a, **kw)
            return guarded

        yield subprocess.Popen, "__init__", popen_init

        def exec_like(path_at: int, argv_at: int):
            def wrap(original):
                def guarded(*args, **kw):
                    argv = list(args[argv_at]) if len(args) > argv_at else [args[path_at]]
                    guard.check_command([args[path_at], *argv[1:]])
                    return original(*args, **kw)
                return guarded
            return wrap

        # (os.execl* and os.execvp* end in these, through the os module's globals.)
        for name in ("execv", "execve", "posix_spawn", "posix_spawnp"):
            if hasattr(os, name):
                yield os, name, exec_like(0, 1)

        def system(original):
            def guarded(command):
                guard.check_command(command, shell=True)
                return original(command)
            return guarded

        yield os, "system", system

        def forbid(what: str):
            def wrap(original):
                def guarded(*args, **kw):
                    raise guard.violation(what)
                return guarded
            return wrap

        for name in ("unshare", "setns"):
            if hasattr(os, name):
                yield os, name, forbid(f"calls os.{name} (a new or another namespace)")
        try:
            libc = getattr(importlib.import_module("netrig.lab.netns"), "_libc", None)
        except ImportError:
            libc = None
        if libc is not None:
            for name in ("unshare", "setns"):
                yield libc, name, forbid(f"calls {name}(2) through netrig.lab.netns")


def _sendto(guard: Guard, original):
    def guarded(sock, data, *args):
        guard.check_socket(sock, "sendto", args[-1] if args else None)
        return original(sock, data, *args)
    return guarded
