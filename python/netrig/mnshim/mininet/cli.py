"""The `mininet>` prompt: Mininet 2.3's `CLI`, on netrig.

Owns the prompt's commands and their words on the terminal, the replacement of node
names by their addresses in a node's command, running that command interactively (its
output as it comes, the keys typed passed on, Ctrl-C sent to it), and the prompt's
history and completion. It is written against Mininet's public API only (the net: `in`,
`[]`, iteration over node names, `values()`, `hosts`, `switches`, `links`, `pingAll`,
`pingPair`, `iperf`, `configLinkStatus`, `waitConnected`; a node: `sendCmd`, `monitor`,
`waiting`, `sendInt`, `write`, `IP`, `intfList`), so the same class drives
netrig's Mininet (`netrig mininet`, `netrig mn`), a running netrig lab attached as one
(`netrig cli`) and Debian's own Mininet. netrig's own commands (`link ... set`, `status`,
`graph`) need netrig's extras on the net (`set_link`, `prefix`, `lab_state()`) and say so
where a net has none.

As Mininet's: constructing `CLI(net)` runs the prompt until exit, quit or end of input;
`CLI(net, script=FILE)` runs FILE's commands and returns. Scripts subclass it and add
`do_NAME` methods (Mininet's examples/clustercli.py), which then appear in `help`.
Answers are the same whether stdin is a terminal or a pipe (`printf 'nodes\\n' | ...`);
only a terminal gets history (~/.mininet_history of the user who ran it, under sudo the
invoking user's), tab completion of commands and node names, and its keys passed to a
running command.
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import io
import os
import pwd
import re
import select
import subprocess
import sys
import termios
import time
from cmd import Cmd
from pathlib import Path
from typing import Any

from netrig import suggest
from netrig.errors import NetrigError

from mininet.log import error, info, output

MAX_LINE = 65536  # characters in one command line (a node's command included)
MAX_SOURCE_DEPTH = 8  # `source` inside `source`
HISTORY_LINES = 1000
HISTORY_BYTES = 1 << 20
WAKE_MS = 1000  # a running command's shell is checked for life this often


def substitute(args: str, address: Any) -> str:
    """`args` with every whitespace-separated word that `address(word)` maps to an
    address replaced by it (`ping -c1 h2` -> `ping -c1 10.0.0.2`); a name inside a
    longer word (`h2-eth0`, `h2,h3`, `'h2'`) stays, and so does the spacing."""
    return re.sub(r"\S+", lambda m: address(m.group()) or m.group(), args)


def strip_comment(line: str) -> str:
    """The line without a comment: from a `#` that starts a word to the end (a `#`
    inside a word, `http://x/#top`, stays)."""
    m = re.search(r"(^|\s)#", line)
    return line[: m.start()].rstrip() if m else line


def history_file() -> Path:
    """~/.mininet_history of the user who ran this (under sudo, the invoking user's)."""
    uid = os.environ.get("SUDO_UID", "")
    if os.geteuid() == 0 and uid.isdigit():
        try:
            return Path(pwd.getpwuid(int(uid)).pw_dir) / ".mininet_history"
        except KeyError:
            pass  # a uid without an account: root's own home below
    return Path.home() / ".mininet_history"


class CLI(Cmd):
    """The `mininet>` prompt on a Mininet network (Mininet 2.3's, on netrig)."""

    prompt = "mininet> "
    helpStr = (
        "You may also send a command to a node using:\n"
        "  <node> command {args}\n"
        "For example:\n"
        "  mininet> h1 ifconfig\n"
        "\n"
        "Node names given as words of their own after the first are replaced by\n"
        "the node's IP address, so\n"
        "  mininet> h2 ping h3\n"
        "pings h3 from h2 (a name inside a word, h3-eth0 or h3,h4, stays as it is).\n"
        "A running command gets the keys you type; Ctrl-C interrupts it.\n"
        "\n"
        "Some character-oriented interactive commands require noecho:\n"
        "  mininet> noecho h2 vi foo.py\n"
        "netrig opens no terminal windows (xterm, gterm, x): in a terminal of your\n"
        "own, 'netrig exec --prefix P h2' gives a shell in h2.\n"
        "\n"
        "netrig's own: 'link h1 s1 set delay=50ms' changes a link while it runs,\n"
        "'status' shows the lab, 'graph [FILE.svg]' draws it as it runs now.\n\n"
    )
    historyLoaded = False

    def __init__(self, mininet: Any, stdin: Any = sys.stdin, script: str | None = None,
                 **kwargs: Any) -> None:
        """Runs the prompt on `mininet` until exit (or `script`'s commands, then returns)."""
        self.mn = mininet
        # `py`/`px`'s namespace (one dict, so a comprehension sees the nodes and px's
        # assignments last): builtins, net, the nodes.
        self.locals: dict[str, Any] = {"__builtins__": builtins, "net": mininet}
        self.inputFile = script
        self._depth = 0  # `source` nesting
        Cmd.__init__(self, stdin=stdin, **kwargs)
        info("*** Starting CLI:\n")
        # A terminal on our own stdin: readline (history, completion) through input();
        # anything else is read a line at a time, the prompt written before each.
        self.use_rawinput = stdin is sys.stdin and self.isatty()
        if script:
            self.do_source(script)
            return
        self.initReadline()
        self.run()

    # The loop.
    def initReadline(self) -> None:
        """On a terminal, the history (once per process) and completion."""
        if not self.use_rawinput or CLI.historyLoaded:
            return
        import readline

        CLI.historyLoaded = True
        readline.set_history_length(HISTORY_LINES)
        path = history_file()
        from netrig import safefs

        try:
            text = safefs.read_text(path.parent, path.name,
                                    safefs.Bound("a prompt history", HISTORY_BYTES), "your home")
        except FileNotFoundError:
            return
        except (NetrigError, OSError, ValueError) as e:
            error(f"*** history not read: {e}\n")
            return
        for line in text.splitlines()[-HISTORY_LINES:]:
            if line.strip():
                readline.add_history(line)

    def saveHistory(self) -> None:
        """Writes the history back (never through a link planted at its name)."""
        if not self.use_rawinput:
            return
        import readline

        from netrig import safefs

        n = readline.get_current_history_length()
        lines = [readline.get_history_item(i) for i in range(max(1, n - HISTORY_LINES + 1), n + 1)]
        path = history_file()
        try:
            safefs.write(path.parent, path.name, "".join(f"{x}\n" for x in lines if x),
                         safefs.Modes(file=0o600, dir=0o700, enforce=False))
            owner = path.parent.stat()
            if os.geteuid() == 0 and owner.st_uid != 0:  # root writing into the user's home
                os.chown(path, owner.st_uid, owner.st_gid, follow_symlinks=False)
        except (NetrigError, OSError) as e:
            error(f"*** history not saved: {e}\n")

    def run(self) -> None:
        """The prompt until exit; Ctrl-C at the prompt says Interrupt and prompts again."""
        try:
            while True:
                try:
                    for node in self.mn.values():  # a script's command still running
                        while node.waiting:
                            output(f"stopping {node.name}\n")
                            node.sendInt()
                            node.waitOutput()
                    self.cmdloop()
                    break
                except KeyboardInterrupt:
                    output("\nInterrupt\n")
        finally:
            self.saveHistory()

    def emptyline(self) -> bool:
        """An empty line does nothing (it does not repeat the last command)."""
        return False

    def precmd(self, line: str) -> str:
        if len(line) > MAX_LINE:
            error(f"*** a line of {len(line)} characters: the prompt takes lines of at most "
                  f"{MAX_LINE}\n")
            return ""
        return strip_comment(line)

    def onecmd(self, line: str) -> bool:
        try:
            return bool(Cmd.onecmd(self, line))
        except NetrigError as e:
            error(f"*** {e}\n")
            return False

    def isatty(self) -> bool:
        """Is our stdin a terminal?"""
        try:
            return os.isatty(self.stdin.fileno())
        except (AttributeError, OSError, ValueError):
            return False  # (a StringIO has no descriptor)

    def getLocals(self) -> dict[str, Any]:
        """What `py` sees: `net` and every node by name."""
        self.locals.update({name: self.mn[name] for name in self.mn})
        return self.locals

    # Names: commands and nodes.
    def commands(self) -> list[str]:
        return sorted(n[3:] for n in self.get_names() if n.startswith("do_") and n != "do_EOF")

    def completenames(self, text: str, *ignored: Any) -> list[str]:
        return [n for n in [*self.commands(), *self.mn] if n.startswith(text)]

    def completedefault(self, text: str, *ignored: Any) -> list[str]:
        return [n for n in self.mn if n.startswith(text)]

    def _nodes(self, names: list[str]) -> list[Any] | None:
        """The nodes named, or None after saying which name is not one."""
        for n in names:
            if n not in self.mn:
                error(f"node '{n}' not in network{self._near(n, list(self.mn), 'nodes')}\n")
                return None
        return [self.mn[n] for n in names]

    @staticmethod
    def _near(word: str, names: list[str], what: str) -> str:
        """`; did you mean h1?`, else the names when they are few (`(nodes: h1, h2)`)."""
        near = suggest.did_you_mean(word, names)
        if near or not names:
            return near
        return f" ({what}: {', '.join(names)})" if len(names) <= 12 else f" ('{what}' lists them)"

    # Help.
    def do_help(self, line: str) -> None:  # type: ignore[override]
        """Describe the commands, or one: help [COMMAND]"""
        topic = line.strip()
        if not topic:
            output("Commands ('help COMMAND' for one):\n")
            for name in self.commands():
                doc = inspect.getdoc(getattr(self, "do_" + name)) or ""
                output(f"  {name:<12} {doc.splitlines()[0] if doc else ''}\n")
            output("\n" + self.helpStr)
        elif hasattr(self, "help_" + topic):
            getattr(self, "help_" + topic)()
        elif hasattr(self, "do_" + topic):
            output((inspect.getdoc(getattr(self, "do_" + topic)) or f"{topic}: no help") + "\n")
        else:
            error(f"*** No help on {topic}{suggest.did_you_mean(topic, self.commands())}\n")

    # What the net is.
    def do_nodes(self, _line: str) -> None:
        """List all nodes."""
        output("available nodes are: \n%s\n" % " ".join(sorted(self.mn)))

    def do_net(self, _line: str) -> None:
        """List network connections: each interface and its peer."""
        for node in self.mn.values():
            said = [node.name]
            for intf in node.intfList():
                link = getattr(intf, "link", None)
                other = (link.intf2 if link.intf1 is intf else link.intf1) if link else " "
                said.append(f" {intf}:{other}")
            output("".join(said) + "\n")

    def do_links(self, _line: str) -> None:
        """Report on links: their interfaces, up or not."""
        for link in self.mn.links:
            output(f"{link} {link.status()}\n")

    def do_intfs(self, _line: str) -> None:
        """List interfaces."""
        for node in self.mn.values():
            output("%s: %s\n" % (node.name, ",".join(str(i) for i in node.intfList())))

    def do_ports(self, _line: str) -> None:
        """Display ports and interfaces for each switch."""
        for sw in self.mn.switches:
            output(sw.name + " " + "".join(f"{i}:{sw.ports[i]} " for i in sw.intfList()) + "\n")

    def do_dump(self, _line: str) -> None:
        """Dump node info."""
        for node in self.mn.values():
            output(f"{node!r}\n")

    # Tests.
    def do_pingall(self, line: str) -> None:
        """Ping between all hosts: pingall [TIMEOUT]"""
        self.mn.pingAll(line.strip() or None)

    def do_pingallfull(self, _line: str) -> None:
        """Ping between all hosts, with every ping's result."""
        self.mn.pingAllFull()

    def do_pingpair(self, _line: str) -> None:
        """Ping between the first two hosts."""
        self.mn.pingPair()

    def do_pingpairfull(self, _line: str) -> None:
        """Ping between the first two hosts, with each result."""
        self.mn.pingPairFull()

    def do_iperf(self, line: str) -> None:
        """TCP bandwidth between two hosts: iperf [h1 h2]

        Without hosts, between the first and the last."""
        args = line.split()
        if not args:
            self.mn.iperf()
        elif len(args) == 2:
            hosts = self._nodes(args)
            if hosts:
                self.mn.iperf(hosts)
        else:
            error("invalid number of args: iperf src dst\n")

    def do_iperfudp(self, line: str) -> None:
        """UDP bandwidth at BW between two hosts: iperfudp [BW [h1 h2]]

        BW as iperf takes it (10M); without hosts, the first and the last."""
        args = line.split()
        if not args:
            self.mn.iperf(l4Type="UDP")
        elif len(args) == 1:
            self.mn.iperf(l4Type="UDP", udpBw=args[0])
        elif len(args) == 3:
            hosts = self._nodes(args[1:])
            if hosts:
                self.mn.iperf(hosts, l4Type="UDP", udpBw=args[0])
        else:
            error("invalid number of args: iperfudp bw src dst\nbw examples: 10M\n")

    def do_wait(self, _line: str) -> None:
        """Wait until the switches are connected (bridges: at once)."""
        self.mn.waitConnected()

    # Links.
    def do_link(self, line: str) -> None:
        """Take a link down or up, or change it live (netrig's set).

        link NODE1 NODE2 up|down
        link NODE1 NODE2 set KEY=VALUE... [dir=a_to_b|b_to_a]   (netrig's)
        link LINK set KEY=VALUE... [dir=a_to_b|b_to_a]          (by the link's name)
        e.g. link h1 s1 down
             link s1 s2 set delay=50ms loss=1%
             link s1 s2 set rate=10Mbit aqm=pie aqm.target=10ms"""
        args = line.split()
        if "set" in args:
            self._link_set(args[: args.index("set")], args[args.index("set") + 1:])
        elif len(args) != 3:
            error("invalid number of args: link end1 end2 [up down]\n")
        elif args[2] not in ("up", "down"):
            error("invalid type: link end1 end2 [up down]\n")
        elif self._nodes(args[:2]) is not None:
            self.mn.configLinkStatus(*args)

    def _link_set(self, ends: list[str], words: list[str]) -> None:
        example = f"link {' '.join(ends) or 's1 s2'} set delay=50ms"
        set_link = getattr(self.mn, "set_link", None)
        if set_link is None:
            error("*** link set: this network cannot change a link while it runs (it is not "
                  "a netrig lab); netrig mininet, netrig mn and netrig cli can\n")
            return
        direction = [w.partition("=")[2] for w in words if w.startswith("dir=")]
        params = [w for w in words if not w.startswith("dir=")]
        bad = [w for w in params if "=" not in w or w.startswith("=")]
        if bad or not params or len(direction) > 1:
            why = (f"'{bad[0]}' is not KEY=VALUE" if bad else "dir= given twice" if direction[1:]
                   else "nothing to set")
            error(f"*** link set: {why} (e.g. {example}, or dir=a_to_b for one direction)\n")
            return
        said = " ".join(ends)
        if len(ends) == 1:
            ends = self._link_named(ends[0])
            if not ends:
                return
            said += f" ({ends[0]} {ends[1]})"
        elif len(ends) != 2:
            error(f"*** link set: a link is two nodes or one link's name, then set (e.g. {example})\n")
            return
        elif self._nodes(ends) is None:
            return
        from netrig.topo.load import link_params

        set_link(ends[0], ends[1], dir=direction[0] if direction else None, **link_params(params))
        output(f"link {said}: set {' '.join(words)}\n")

    def _lab_state(self) -> Any:
        """The lab's state as it is now, read again (tc lines in the nodes and other
        processes change it); None for a net that is no netrig lab (no prefix)."""
        prefix = getattr(self.mn, "prefix", None)
        if not prefix:
            return None
        from netrig.lab.state import LabState

        return LabState.load(prefix)

    def _link_named(self, name: str) -> list[str]:
        st = self._lab_state()
        links = st.plan.get("links", []) if st else []
        for link in links:
            if link["name"] == name:
                return [link["a"], link["b"]]
        error(f"*** link set: no link named '{name}'{self._near(name, [x['name'] for x in links], 'links')}; "
              "or give the link's two nodes (e.g. link s1 s2 set delay=50ms)\n")
        return []

    # netrig's view of the lab.
    def do_status(self, _line: str) -> None:
        """netrig's status of the lab: links as they run, queues, drops.

        Nodes and addresses, each link's shaping as it runs now, each emulated
        direction's live queue, drops and lateness (netrig status)."""
        prefix = getattr(self.mn, "prefix", None)
        if not prefix:
            error("*** status: this network is not a netrig lab (it has no prefix); "
                  "'dump' and 'links' describe it\n")
            return
        from netrig.lab import status

        said = io.StringIO()
        with contextlib.redirect_stdout(said):  # as every answer: through mininet.log
            status.show(prefix)
        output(said.getvalue())

    def do_graph(self, line: str) -> None:
        """Draw the lab as it runs now: graph [FILE.svg|FILE.png]

        As text here, or into FILE (.svg or .png); live link changes included."""
        args = line.split()
        if len(args) > 1:
            error("*** usage: graph [FILE.svg|FILE.png]\n")
            return
        st = self._lab_state()
        if st is None:
            error("*** graph: this network is not a netrig lab (it has no prefix, no plan to "
                  "draw); 'net' lists its connections\n")
            return
        from netrig.lab import status

        drawn = status.drawing(st, args[0] if args else None)
        output(drawn if not args else f"graph: wrote {drawn}\n")

    # Running commands.
    def default(self, line: str) -> None:
        """NODE CMD...: CMD run in NODE's shell, node names replaced by addresses."""
        line = line.strip()
        first, args = (line.split(None, 1) + [""])[:2] if line else ("", "")  # h1-x is not h1
        if first not in self.mn:
            names = [*self.commands(), *self.mn]
            error(f"*** Unknown command: {line}{suggest.did_you_mean(first, names)}\n")
            return
        if not args:
            error(f"*** Please enter a command for node: {first} <cmd>\n")
            return
        node = self.mn[first]

        def address(word: str) -> str | None:
            return self.mn[word].IP() if word in self.mn else None

        node.sendCmd(substitute(args, address))
        self.waitForNode(node)

    def waitForNode(self, node: Any) -> None:
        """Prints node's output as it comes until its command ends; on a terminal the
        keys typed go to the command (unbuffered) and Ctrl-C interrupts it (sendInt)."""
        fd = self.stdin.fileno() if self.isatty() else None
        out = node.stdout.fileno()
        poller = select.poll()
        poller.register(out, select.POLLIN)  # (node.monitor's own wait also wakes on POLLOUT)
        saved = None
        if fd is not None:
            poller.register(fd, select.POLLIN)
            saved = termios.tcgetattr(fd)
            raw = termios.tcgetattr(fd)
            raw[3] &= ~termios.ICANON  # a key at a time; echo and Ctrl-C as they were
            raw[6][termios.VMIN], raw[6][termios.VTIME] = 1, 0
            termios.tcsetattr(fd, termios.TCSANOW, raw)
        try:
            while node.waiting:
                try:
                    events = dict(poller.poll(WAKE_MS))
                    if fd is not None and events.get(fd, 0) & select.POLLIN:
                        typed = os.read(fd, 1024)
                        if typed:
                            node.write(typed.decode("utf-8", "replace"))
                    data = node.monitor() if events.get(out) else ""
                    if data:
                        output(data)
                    elif self._shell_gone(node, events.get(out, 0)):
                        break
                except KeyboardInterrupt:
                    node.sendInt()
        finally:
            if saved is not None:
                termios.tcsetattr(fd, termios.TCSADRAIN, saved)

    @staticmethod
    def _shell_gone(node: Any, event: int) -> bool:
        """Whether node's shell has exited or closed its output (said, once)."""
        shell = getattr(node, "shell", None)
        code = shell.poll() if shell is not None else None
        if code is None and not event & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
            return False
        how = f"exited (status {code})" if code is not None else "closed its output"
        error(f"*** {node.name}'s shell has {how}: its command's end cannot be told\n")
        node.waiting = False
        return True

    def do_noecho(self, line: str) -> None:
        """Run a node's command with echo off: noecho NODE CMD..."""
        fd = self.stdin.fileno() if self.isatty() else None
        saved = termios.tcgetattr(fd) if fd is not None else None
        if fd is not None:
            quiet = termios.tcgetattr(fd)
            quiet[3] &= ~termios.ECHO
            termios.tcsetattr(fd, termios.TCSANOW, quiet)
        try:
            self.default(line)
        finally:
            if saved is not None:
                termios.tcsetattr(fd, termios.TCSADRAIN, saved)

    def do_sh(self, line: str) -> None:
        """Run a shell command here, not in a node: sh CMD..."""
        subprocess.call(line, shell=True)

    def do_py(self, line: str) -> None:
        """Evaluate a Python expression: py h1.cmd('ls')

        `net` and every node by name are in scope (py net.hosts, py h1.IP()). This is
        your own prompt, as Mininet's: the expression runs in this process, with its
        rights (root's)."""
        try:
            result = eval(line, self.getLocals())  # noqa: S307 (the user's own)
        except Exception as e:  # the user's own expression: its error is the answer
            output(f"{type(e).__name__}: {e}\n")
            return
        if result is None or result == "":
            return
        output((result if isinstance(result, str) else repr(result)) + "\n")

    def do_px(self, line: str) -> None:
        """Execute a Python statement: px x = h1.IP()

        As py (your own prompt, in this process): `net` and the nodes in scope; what
        it assigns stays for later py and px."""
        try:
            exec(line, self.getLocals())  # noqa: S102 (the user's own)
        except Exception as e:  # the user's own statement: its error is the answer
            output(f"{type(e).__name__}: {e}\n")

    def do_time(self, line: str) -> bool:
        """Measure the time a command takes: time COMMAND..."""
        start = time.time()
        stop = self.onecmd(line)
        output("*** Elapsed time: %0.6f secs\n" % (time.time() - start))
        return stop

    def do_source(self, line: str) -> bool:
        """Read commands from a file: source FILE

        One command a line; # starts a comment; exit ends the file and the prompt."""
        args = line.split()
        if len(args) != 1:
            error("usage: source <file>\n")
            return False
        if self._depth >= MAX_SOURCE_DEPTH:
            error(f"*** source {args[0]}: files source each other {MAX_SOURCE_DEPTH} deep "
                  "(does one source itself?); not read\n")
            return False
        try:
            f = open(args[0], encoding="utf-8", errors="replace")  # noqa: SIM115 (read as it runs)
        except OSError as e:
            error(f"*** source {args[0]}: cannot read it ({e.strerror})\n")
            return False
        self._depth += 1
        try:
            with f:
                for n, text in enumerate(f, 1):
                    if len(text) > MAX_LINE:
                        error(f"*** {args[0]}:{n}: a line of {len(text)} characters (at most "
                              f"{MAX_LINE}); the rest of the file is not run\n")
                        return False
                    if self.onecmd(self.precmd(text.rstrip("\n"))):
                        return True
        finally:
            self._depth -= 1
        return False

    def do_dpctl(self, _line: str) -> None:
        """Refused: netrig's switches are Linux bridges (no OpenFlow)."""
        error("*** dpctl: netrig's switches are Linux bridges, which learn addresses as a "
              "plain switch does and have no OpenFlow flow tables to show or change\n")

    def do_xterm(self, line: str, term: str = "xterm") -> None:
        """Refused: netrig opens no terminals (netrig exec NODE does)."""
        names = line.split()
        if not names:
            error(f"usage: {term} node1 node2 ...\n")
            return
        if self._nodes(names[:1] if term == "x" else names) is None:
            return
        prefix = getattr(self.mn, "prefix", None)
        instead = (f"in a terminal of your own, 'netrig exec --prefix {prefix} {names[0]}' "
                   "gives a shell in it" if prefix else f"here, '{names[0]} CMD' runs CMD in it")
        if not os.environ.get("DISPLAY"):
            error(f"*** {term}: there is no display to open a terminal on (DISPLAY is not "
                  f"set); {instead}\n")
        else:
            error(f"*** {term}: netrig does not open terminals; {instead}\n")

    def do_gterm(self, line: str) -> None:
        """Refused: netrig opens no terminals (netrig exec NODE does)."""
        self.do_xterm(line, term="gterm")

    def do_x(self, line: str) -> None:
        """Refused: netrig opens no X11 tunnels (netrig exec NODE)."""
        self.do_xterm(line, term="x")

    def do_exit(self, _line: str) -> str:
        """Leave the prompt."""
        return "exited by user command"

    def do_quit(self, line: str) -> str:
        """Leave the prompt."""
        return self.do_exit(line)

    def do_EOF(self, line: str) -> str:
        """Leave the prompt (end of input, Ctrl-D)."""
        output("\n")
        return self.do_exit(line)
