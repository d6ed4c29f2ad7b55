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

The commands that run something (a node's command, `noecho`, `sh`, `py`, `px`, `time`,
`source`) are `RunCommands` (`mininet._clirun`); netrig's `link ... set`, `status` and
`graph` are `LabCommands` (`mininet._clilab`): parts of `CLI` in private modules.
"""

from __future__ import annotations

import builtins
import inspect
import os
import pwd
import sys
from cmd import Cmd
from pathlib import Path
from typing import Any

from netrig import suggest
from netrig.errors import NetrigError

from mininet._clilab import LabCommands
from mininet._clirun import MAX_LINE, MAX_SOURCE_DEPTH, RunCommands, strip_comment, substitute  # noqa: F401 (MAX_SOURCE_DEPTH, substitute: read from here)
from mininet.log import error, info, output

HISTORY_LINES = 1000
HISTORY_BYTES = 1 << 20


def history_file() -> Path:
    """~/.mininet_history of the user who ran this (under sudo, the invoking user's)."""
    uid = os.environ.get("SUDO_UID", "")
    if os.geteuid() == 0 and uid.isdigit():
        try:
            return Path(pwd.getpwuid(int(uid)).pw_dir) / ".mininet_history"
        except KeyError:
            pass  # a uid without an account: root's own home below
    return Path.home() / ".mininet_history"


class CLI(RunCommands, LabCommands, Cmd):
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
