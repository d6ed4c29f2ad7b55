"""The mininet> prompt (netrig's mininet.cli.CLI) driven on a fake net: no namespaces.

The fake follows Mininet's public API as the prompt uses it (names in, [], values(),
hosts, switches, links, pingAll, iperf, configLinkStatus; a node's sendCmd, monitor,
waiting, stdout, sendInt, IP, intfList): a node "runs" a command by writing what it was
given to a pipe, then Mininet's end-of-command sentinel (chr(127))."""

from __future__ import annotations

import io
import os
import signal
import sys
from pathlib import Path

import netrig
import pytest

MNSHIM = Path(netrig.__file__).resolve().parent / "mnshim"


def _cli_module():
    sys.path.insert(0, str(MNSHIM))
    try:
        import mininet.cli
    finally:
        sys.path.remove(str(MNSHIM))
    return mininet.cli


mncli = _cli_module()
CLI = mncli.CLI


class Intf:
    def __init__(self, name: str, node: Node) -> None:
        self.name, self.node, self.link = name, node, None

    def __str__(self) -> str:
        return self.name


class Link:
    def __init__(self, a: Intf, b: Intf) -> None:
        self.intf1, self.intf2 = a, b
        a.link = b.link = self

    def __str__(self) -> str:
        return f"{self.intf1}<->{self.intf2}"

    def status(self) -> str:
        return "(OK OK)"


class Node:
    def __init__(self, name: str, ip: str | None) -> None:
        self.name, self.ip, self.waiting = name, ip, False
        self.intfs: list[Intf] = []
        self.ports: dict[Intf, int] = {}
        self.sent: list[str] = []
        self.ints = 0
        r, w = os.pipe()
        self.stdout, self._w = os.fdopen(r, "rb", buffering=0), w

    def IP(self) -> str | None:
        return self.ip

    def intfList(self) -> list[Intf]:
        return self.intfs

    def sendCmd(self, cmd: str) -> None:
        assert not self.waiting
        self.sent.append(cmd)
        self.waiting = True
        os.write(self._w, f"{self.name} ran: {cmd}\n".encode() + b"\x7f")

    def monitor(self) -> str:
        data = os.read(self.stdout.fileno(), 65536).decode()
        if "\x7f" in data:
            self.waiting = False
        return data.replace("\x7f", "")

    def sendInt(self) -> None:
        self.ints += 1

    def write(self, data: str) -> None:
        raise AssertionError("nothing is typed through a pipe")

    def __repr__(self) -> str:
        return f"<Node {self.name}>"


class Net:
    """h1, h2 (10.0.0.1, .2) on s1 (no address); what the prompt asks of it, recorded."""

    def __init__(self) -> None:
        self.nodes = {n: Node(n, ip) for n, ip in (("h1", "10.0.0.1"), ("h2", "10.0.0.2"), ("s1", None))}
        self.hosts = [self.nodes["h1"], self.nodes["h2"]]
        self.switches = [self.nodes["s1"]]
        self.links = []
        for k, h in enumerate(self.hosts, 1):
            a, b = Intf(f"{h.name}-eth0", h), Intf(f"s1-eth{k}", self.nodes["s1"])
            h.intfs.append(a)
            self.nodes["s1"].intfs.append(b)
            self.nodes["s1"].ports[b] = k
            self.links.append(Link(a, b))
        self.calls: list[tuple] = []

    def __iter__(self):
        return iter(self.nodes)

    def __contains__(self, name: str) -> bool:
        return name in self.nodes

    def __getitem__(self, name: str) -> Node:
        return self.nodes[name]

    def values(self) -> list[Node]:
        return list(self.nodes.values())

    def __getattr__(self, name: str):
        if name in ("pingAll", "pingAllFull", "pingPair", "pingPairFull", "iperf",
                    "configLinkStatus", "waitConnected"):
            return lambda *a, **kw: self.calls.append((name, a, kw))
        raise AttributeError(name)


class LabNet(Net):
    """A net with netrig's extras: set_link, prefix, lab_state()."""

    prefix = "tlab"

    def set_link(self, a, b, dir=None, **params):
        self.calls.append(("set_link", (a, b), {"dir": dir, **params}))

    @staticmethod
    def lab_state(prefix: str = "tlab"):
        from netrig.lab.state import LabState

        assert prefix == "tlab"
        shaped = {"rate": "10Mbit", "delay": "20ms"}
        plan = {"name": "tiny", "nodes": {n: {"kind": "switch" if n == "s1" else "host", "ifaces": []}
                                          for n in ("h1", "h2", "s1")},
                "links": [{"name": "L1", "a": "h1", "b": "s1", "a_to_b": shaped, "b_to_a": shaped},
                          {"name": "L2", "a": "h2", "b": "s1", "a_to_b": {}, "b_to_a": {}}]}
        return LabState(prefix=prefix, topology="<python>", plan=plan)


@pytest.fixture(autouse=True)
def _state_file(monkeypatch):
    """The prompt reads a lab's state again, by prefix: LabNet's stands in for the file."""
    monkeypatch.setattr("netrig.lab.state.LabState.load", LabNet.lab_state)


def run(net, text: str, capsys, cls=CLI) -> str:
    """The prompt fed `text` through a pipe-like stdin; what it printed, prompts (stdout)
    and answers (mininet.log's stream, stderr as Mininet's) in the order they came."""
    from mininet.log import lg

    lg.ch.setStream(sys.stdout)
    try:
        cls(net, stdin=io.StringIO(text))
    finally:
        lg.ch.setStream(sys.stderr)  # (following sys.stderr again)
    out, err = capsys.readouterr()
    return out + err


def test_answers_go_where_mininets_go(capsys):
    """Prompts on stdout; answers and errors through mininet.log (stderr), as Mininet's
    CLI: setLogLevel('warning') hides the answers, not the errors."""
    from mininet.log import setLogLevel

    CLI(Net(), stdin=io.StringIO("nodes\nnodez\n"))
    out, err = capsys.readouterr()
    assert out == "mininet> " * 3 and "available nodes are" in err and "Unknown command: nodez" in err
    setLogLevel("warning")
    try:
        CLI(Net(), stdin=io.StringIO("nodes\nnodez\n"))
    finally:
        setLogLevel("output")
    out, err = capsys.readouterr()
    assert "available nodes" not in err and "Unknown command: nodez" in err


def test_node_command_gets_addresses_for_whole_names_only(capsys):
    net = Net()
    out = run(net, "h1 ping -c1 h2\nh1 echo h2-eth0 h2,h1 xh2  h2\ts1 'h2'\n", capsys)
    assert net["h1"].sent == ["ping -c1 10.0.0.2",
                              "echo h2-eth0 h2,h1 xh2  10.0.0.2\ts1 'h2'"]  # spacing kept; s1 has no IP
    assert "h1 ran: ping -c1 10.0.0.2\n" in out
    assert out.startswith("mininet> ") and out.count("mininet> ") == 3  # each prompt, then EOF


def test_substitute_and_comments():
    ips = {"h1": "10.0.0.1", "h10": "10.0.0.10"}.get
    assert mncli.substitute("ping h1 h10 h100 -c h1", ips) == "ping 10.0.0.1 10.0.0.10 h100 -c 10.0.0.1"
    assert mncli.substitute("  scp f h1:/tmp  ", ips) == "  scp f h1:/tmp  "
    assert mncli.strip_comment("h1 ping h2  # check") == "h1 ping h2"
    assert mncli.strip_comment("# all of it") == ""
    assert mncli.strip_comment("h1 curl http://h2/#top") == "h1 curl http://h2/#top"


def test_unknown_commands_are_mininets_words_and_a_suggestion(capsys):
    out = run(Net(), "nodez\nhh1 ping h2\nzzzz top\nh1\n", capsys)
    assert "*** Unknown command: nodez; did you mean nodes?\n" in out
    assert "*** Unknown command: hh1 ping h2; did you mean h1?\n" in out
    assert "*** Unknown command: zzzz top\n" in out
    assert "*** Please enter a command for node: h1 <cmd>\n" in out


def test_a_word_that_starts_with_a_node_name_is_not_that_node(capsys):
    net = Net()
    out = run(net, "h1-eth0 up\n", capsys)
    assert net["h1"].sent == [] and "*** Unknown command: h1-eth0 up" in out


def test_help_lists_every_command_and_a_subclass_own(capsys):
    class MyCLI(CLI):
        def do_plot(self, _line):
            """Plot the topology."""

    out = run(Net(), "help\nhelp link\nhelp nodez\n", capsys, cls=MyCLI)
    listed = [line.split()[0] for line in out.split("Commands ('help COMMAND' for one):\n")[1]
              .split("\n\n")[0].splitlines()]
    for name in ("nodes", "net", "links", "dump", "intfs", "ports", "pingall", "pingallfull",
                 "pingpair", "pingpairfull", "iperf", "iperfudp", "link", "py", "px", "sh",
                 "source", "time", "noecho", "wait", "x", "xterm", "gterm", "dpctl", "exit",
                 "quit", "status", "graph", "plot"):
        assert name in listed, name
    assert "EOF" not in listed
    assert "link NODE1 NODE2 set KEY=VALUE... [dir=a_to_b|b_to_a]" in out  # help link
    assert "*** No help on nodez; did you mean nodes?" in out
    assert all(len(line) <= 80 for line in out.splitlines()), out


def test_a_subclass_command_runs(capsys):
    class MyCLI(CLI):
        def do_hosts(self, _line):
            """Count the hosts."""
            print(f"{len(self.mn.hosts)} hosts")

    assert "2 hosts\n" in run(Net(), "hosts\n", capsys, cls=MyCLI)


def test_what_the_net_is(capsys):
    out = run(Net(), "nodes\nnet\nlinks\nintfs\nports\ndump\n", capsys)
    assert "available nodes are: \nh1 h2 s1\n" in out
    assert "h1 h1-eth0:s1-eth1\nh2 h2-eth0:s1-eth2\ns1 s1-eth1:h1-eth0 s1-eth2:h2-eth0\n" in out
    assert "h1-eth0<->s1-eth1 (OK OK)\nh2-eth0<->s1-eth2 (OK OK)\n" in out
    assert "h1: h1-eth0\nh2: h2-eth0\ns1: s1-eth1,s1-eth2\n" in out
    assert "s1 s1-eth1:1 s1-eth2:2 \n" in out
    assert "<Node h1>\n<Node h2>\n<Node s1>\n" in out


def test_tests_call_the_net(capsys):
    net = Net()
    out = run(net, "pingall\npingall 1\npingallfull\npingpair\npingpairfull\niperf\niperf h1 h2\n"
                   "iperf h1\niperf h1 h9\niperfudp\niperfudp 5M\niperfudp 5M h2 h1\nwait\n", capsys)
    h1, h2 = net["h1"], net["h2"]
    assert net.calls == [("pingAll", (None,), {}), ("pingAll", ("1",), {}), ("pingAllFull", (), {}),
                         ("pingPair", (), {}), ("pingPairFull", (), {}), ("iperf", (), {}),
                         ("iperf", ([h1, h2],), {}), ("iperf", (), {"l4Type": "UDP"}),
                         ("iperf", (), {"l4Type": "UDP", "udpBw": "5M"}),
                         ("iperf", ([h2, h1],), {"l4Type": "UDP", "udpBw": "5M"}),
                         ("waitConnected", (), {})]
    assert "invalid number of args: iperf src dst" in out
    assert "node 'h9' not in network (nodes: h1, h2, s1)" in out


def test_link_up_down_and_its_mistakes(capsys):
    net = Net()
    out = run(net, "link h1 s1 down\nlink h1 s1 up\nlink h1 s1\nlink h1 s1 sideways\n"
                   "link h1 s9 down\nlink hh1 s1 down\nlink h1 s1 set delay=50ms\n", capsys)
    assert net.calls == [("configLinkStatus", ("h1", "s1", "down"), {}),
                         ("configLinkStatus", ("h1", "s1", "up"), {})]
    assert "invalid number of args: link end1 end2 [up down]" in out
    assert "invalid type: link end1 end2 [up down]" in out
    assert "node 's9' not in network (nodes: h1, h2, s1)" in out
    assert "node 'hh1' not in network; did you mean h1?" in out
    assert "*** link set: this network cannot change a link while it runs (it is not a netrig lab)" in out


def test_link_set_changes_a_link_live(capsys):
    net = LabNet()
    out = run(net, "link h1 s1 set delay=50ms loss=1%\nlink h1 s1 set aqm=pie aqm.target=10ms dir=b_to_a\n"
                   "link L2 set rate=5Mbit\nlink L3 set rate=5Mbit\nlink h1 s1 set\nlink h1 s1 set delay\n"
                   "link h1 s1 set delay=1ms dir=a_to_b dir=b_to_a\nlink h1 h2 s1 set delay=1ms\n", capsys)
    assert net.calls == [
        ("set_link", ("h1", "s1"), {"dir": None, "delay": "50ms", "loss": "1%"}),
        ("set_link", ("h1", "s1"), {"dir": "b_to_a", "aqm": {"type": "pie", "target": "10ms"}}),
        ("set_link", ("h2", "s1"), {"dir": None, "rate": "5Mbit"})]
    assert "link h1 s1: set delay=50ms loss=1%\n" in out and "link L2 (h2 s1): set rate=5Mbit\n" in out
    assert "no link named 'L3' (links: L1, L2); or give the link's two nodes" in out
    assert "*** link set: nothing to set (e.g. link h1 s1 set delay=50ms" in out
    assert "*** link set: 'delay' is not KEY=VALUE" in out
    assert "*** link set: dir= given twice" in out
    assert "a link is two nodes or one link's name" in out


def test_py_and_px_see_the_net_and_its_nodes(capsys):
    out = run(Net(), "py h1.IP()\npy [net[n].IP() for n in ('h1', 'h2')]\npx x = h2.IP()\npy x\n"
                     "py nosuch\npy None\n", capsys)
    assert "mininet> 10.0.0.1\n" in out
    assert "['10.0.0.1', '10.0.0.2']\n" in out
    assert "mininet> 10.0.0.2\n" in out
    assert "NameError: name 'nosuch' is not defined\n" in out


def test_source_runs_a_file_and_stops_at_exit(tmp_path, capsys):
    f = tmp_path / "cmds"
    f.write_text("# a comment\nh1 echo one  # and another\n\nnodes\nexit\nh1 echo never\n")
    net = Net()
    out = run(net, f"source {f}\nh1 echo after\n", capsys)
    assert net["h1"].sent == ["echo one"]  # exit ends the file and the prompt
    assert "available nodes are" in out
    net = Net()
    CLI(net, script=str(f), stdin=io.StringIO("h1 echo not read\n"))  # script=: the file, then return
    assert net["h1"].sent == ["echo one"]


def test_source_mistakes(tmp_path, capsys):
    loop = tmp_path / "loop"
    loop.write_text(f"h1 echo x\nsource {loop}\n")
    long = tmp_path / "long"
    long.write_text("h1 echo a\n" + "h1 echo " + "x" * mncli.MAX_LINE + "\nh1 echo b\n")
    net = Net()
    out = run(net, f"source {tmp_path / 'missing'}\nsource\nsource {loop}\nsource {long}\n", capsys)
    assert f"*** source {tmp_path / 'missing'}: cannot read it (No such file or directory)" in out
    assert "usage: source <file>" in out
    assert f"files source each other {mncli.MAX_SOURCE_DEPTH} deep" in out
    assert net["h1"].sent == ["echo x"] * mncli.MAX_SOURCE_DEPTH + ["echo a"]
    assert f"{long}:2: a line of {mncli.MAX_LINE + 9} characters" in out


def test_a_line_too_long_is_refused(capsys):
    net = Net()
    out = run(net, "h1 echo " + "y" * mncli.MAX_LINE + "\nh1 echo ok\n", capsys)
    assert net["h1"].sent == ["echo ok"]
    assert f"*** a line of {mncli.MAX_LINE + 8} characters" in out


def test_noecho_time_and_the_ways_out(capsys):
    net = Net()
    out = run(net, "noecho h1 cat f\ntime h2 sleep 0\nquit\nh1 echo never\n", capsys)
    assert net["h1"].sent == ["cat f"] and net["h2"].sent == ["sleep 0"]
    assert "*** Elapsed time: " in out
    net = Net()
    out = run(net, "exit\nh1 echo never\n", capsys)
    assert net["h1"].sent == [] and out == "mininet> "
    out = run(Net(), "nodes\n", capsys)  # end of input: EOF, a newline, out
    assert out.endswith("mininet> \n")


def test_sh_runs_here(capfd):
    CLI(Net(), stdin=io.StringIO("sh echo from-sh-$((6*7))\n"))
    assert "from-sh-42\n" in capfd.readouterr().out


def test_terminals_and_openflow_are_refused(monkeypatch, capsys):
    monkeypatch.delenv("DISPLAY", raising=False)
    out = run(LabNet(), "xterm h1\ngterm h1 h2\nx h9\nxterm\ndpctl dump-flows\n", capsys)
    assert ("*** xterm: there is no display to open a terminal on (DISPLAY is not set); in a "
            "terminal of your own, 'netrig exec --prefix tlab h1' gives a shell in it") in out
    assert "*** gterm: there is no display" in out
    assert "node 'h9' not in network" in out and "usage: xterm node1 node2 ..." in out
    assert "*** dpctl: netrig's switches are Linux bridges" in out and "no OpenFlow flow tables" in out
    monkeypatch.setenv("DISPLAY", ":0")
    out = run(Net(), "xterm h2\n", capsys)
    assert "*** xterm: netrig does not open terminals; here, 'h2 CMD' runs CMD in it" in out


def test_status_and_graph_need_a_netrig_lab(capsys):
    out = run(Net(), "status\ngraph\n", capsys)
    assert "*** status: this network is not a netrig lab (it has no prefix)" in out
    assert "*** graph: this network is not a netrig lab (it has no prefix, no plan to draw)" in out


def test_graph_draws_the_lab_as_it_runs(tmp_path, capsys):
    out = run(LabNet(), f"graph\ngraph {tmp_path / 'lab.svg'}\ngraph {tmp_path / 'lab.txt'}\n", capsys)
    assert "tiny (lab tlab, as it runs): 2 hosts, 1 switch, 2 links" in out
    assert "* L1 h1-s1" in out and "10 Mbit/s, 20 ms" in out
    assert f"graph: wrote {tmp_path / 'lab.svg'}" in out
    assert "<svg" in (tmp_path / "lab.svg").read_text()
    assert "lab.txt: draws .svg or .png files" in out


def test_history_is_the_invoking_users(monkeypatch):
    import pwd

    monkeypatch.setenv("HOME", "/tmp/nohome")
    monkeypatch.delenv("SUDO_UID", raising=False)
    assert mncli.history_file() == Path("/tmp/nohome/.mininet_history")
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        monkeypatch.setenv("SUDO_UID", str(nobody.pw_uid))
        assert mncli.history_file() == Path(nobody.pw_dir) / ".mininet_history"


def test_a_script_command_left_running_is_stopped_first(capsys):
    net = Net()
    net["h2"].sendCmd("sleep 100")
    net["h2"].waitOutput = lambda: net["h2"].monitor()
    out = run(net, "nodes\n", capsys)
    assert net["h2"].ints == 1 and not net["h2"].waiting
    assert "stopping h2" in out


class Pinging(Node):
    """ping: a line, then nothing until ^C, which brings its statistics and the prompt.
    The ^C (SIGINT to this process) comes as the prompt's loop looks at `waiting` again
    after printing the line: where a stalled host may deliver it."""

    def sendCmd(self, cmd: str) -> None:
        self.sent.append(cmd)
        self._waiting, self.looks = True, 0
        os.write(self._w, b"64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.1 ms\n")

    @property
    def waiting(self) -> bool:
        self.looks = getattr(self, "looks", 0) + 1
        if self.looks == 2:
            os.kill(os.getpid(), signal.SIGINT)
        return self._waiting

    @waiting.setter
    def waiting(self, value: bool) -> None:
        self._waiting = value

    def sendInt(self) -> None:
        self.ints += 1
        os.write(self._w, b"1 packets transmitted, 1 received, 0% packet loss\n\x7f")


def test_ctrl_c_reaches_the_command_wherever_the_loop_is(capsys):
    """The ^C is sent on to the command and its statistics are printed, once; it is not
    raised at the prompt (which said Interrupt, stopped the command and dropped them)."""
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    net = Net()
    net.nodes["h1"] = Pinging("h1", "10.0.0.1")
    out = run(net, "h1 ping h2\n", capsys)
    assert "0% packet loss" in out and "Interrupt" not in out, out
    assert net["h1"].ints == 1
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_a_netrig_error_is_said_and_the_prompt_goes_on(capsys):
    from netrig.errors import NetrigError

    net = Net()

    def fails(*_a, **_kw):
        raise NetrigError("lab 'x': its link emulator is not running")

    net.__dict__["pingAll"] = fails
    out = run(net, "pingall\nh1 echo still here\n", capsys)
    assert "*** lab 'x': its link emulator is not running\n" in out
    assert net["h1"].sent == ["echo still here"]


@pytest.mark.parametrize("words", [["h1", "ping", "h2"]])
def test_completion_offers_commands_and_node_names(words):
    cli = CLI.__new__(CLI)
    cli.mn = Net()
    assert cli.completenames("no") == ["nodes", "noecho"]
    assert cli.completenames("h") == ["help", "h1", "h2"]
    assert cli.completedefault("h", " ".join(words), 0, 0) == ["h1", "h2"]
