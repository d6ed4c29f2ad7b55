"""`netrig mn`: mn's options, their names and arguments, the refusals, --custom files,
and the run's steps in mn's order, against a stand-in mininet.net (nothing is built;
tests/net/test_mn_lab.py builds for real)."""

from __future__ import annotations

import io
import sys
import types
from pathlib import Path

import netrig
import pytest
from netrig.cli import main as netrig_main
from netrig.mnrun import mn

SHIM = Path(netrig.__file__).resolve().parent / "mnshim"
if str(SHIM) not in sys.path:
    sys.path.insert(0, str(SHIM))

import mininet  # noqa: E402  (netrig's, from SHIM)
from mininet.log import lg, setLogLevel  # noqa: E402
from mininet.topo import LinearTopo, Topo  # noqa: E402


@pytest.fixture(autouse=True)
def _no_shims(monkeypatch):
    """netrig mn activates the compat package for its process and children (PATH shims
    in a new directory, PYTHONPATH); here only sys.path is needed (SHIM is on it), so
    the tests' environment stays as it is. test_activation runs the real one."""
    monkeypatch.setattr(mn, "_activate", lambda: None)


def checked(*argv: str):
    opts = mn.parse(list(argv))
    mn.refuse(opts)
    tables = mn.Tables()
    for value in opts.custom:
        tables.load(value)
    return opts, tables, mn.check(opts, tables)


def refused(capsys, *argv: str) -> str:
    assert mn.main(list(argv)) == 2
    return capsys.readouterr().err


# Options and their names

def test_defaults_are_mns():
    opts, _, topo = checked()
    assert (opts.topo, opts.switch, opts.host, opts.link) == ("minimal", "default", "proc", "default")
    assert opts.ipbase == "10.0.0.0/8" and opts.verbosity == "info" and opts.test == []
    assert topo.hosts() == ["h1", "h2"] and topo.switches() == ["s1"]


def test_topologies_and_their_arguments():
    _, _, topo = checked("--topo", "linear,3,2")
    assert isinstance(topo, LinearTopo) and (topo.k, topo.n) == (3, 2)
    assert topo.hosts() == ["h1s1", "h1s2", "h1s3", "h2s1", "h2s2", "h2s3"]
    assert len(checked("--topo=single,4")[2].hosts()) == 4
    assert len(checked("--topo", "tree,depth=2,fanout=3")[2].hosts()) == 9
    assert checked("--topo", "reversed,3")[2].port("h1", "s1") == (0, 3)
    assert len(checked("--topo", "torus,3,3")[2].switches()) == 9
    assert len(checked("--top", "linear,4")[2].switches()) == 4  # optparse's abbreviations


def test_link_host_switch_controller_test_names():
    opts, _, _ = checked("--link", "tc,bw=10,delay=5ms,loss=1,max_queue_size=100,use_htb=True",
                         "--host", "cfs,cpu=.5", "--switch", "lxbr,stp=1", "--controller",
                         "remote,ip=10.0.0.9", "--test", "pingall", "--test", "iperf+pingpair",
                         "--test", "iperfudp,5M", "--mac", "--arp", "-i", "192.168.0.0/16",
                         "-v", "output", "-w", "--innamespace")
    assert mininet.util.splitArgs(opts.link) == (
        "tc", [], {"bw": 10, "delay": "5ms", "loss": 1, "max_queue_size": 100, "use_htb": "True"})
    assert opts.controller == ["remote,ip=10.0.0.9"]
    assert opts.test == ["pingall", "iperf+pingpair", "iperfudp,5M"]
    assert opts.mac and opts.arp and opts.wait is True and opts.ipbase == "192.168.0.0/16"
    assert mn.parse(["-t", "5"]).wait == 5
    for switch in ("default", "ovs", "ovsk", "ovsbr", "user", "lxbr"):
        checked("--switch", switch)
    for host in ("proc", "cfs", "rt"):
        checked("--host", host)


@pytest.mark.parametrize(("argv", "said"), [
    (["--topo", "linar,3"], "--topo linar,3: unknown topology 'linar'; did you mean linear? "
                            "(topologies: minimal, linear,"),
    (["--topo", "linear,x"], "linear's arguments are whole numbers (e.g. linear,4 or linear,3,2)"),
    (["--topo", "linear,-2"], "linear's arguments are whole numbers"),
    (["--topo", "single,1,2"], "--topo single,1,2: single takes k (too many positional"),
    (["--topo", "tree,depth=2,fan=3"], "tree takes depth,fanout (got an unexpected keyword"),
    (["--topo", "torus,2,3"], "each side must be 3 or more"),
    (["--topo", "tree,40,2"], "--topo tree,40,2 makes more than 20000 nodes"),
    (["--topo", "linear,10000,3"], "makes more than 20000 nodes"),
    (["--link", "tc,bw=10,dealy=5ms"], "unknown key 'dealy'; did you mean delay?"),
    (["--link", "tc,10"], "tc takes key=value only"),
    (["--link", "default,bw=10"], "a default link takes no parameters; a shaped one is "
                                  "--link tc,bw=10"),
    (["--link", "tcc"], "unknown link 'tcc'; did you mean tc"),
    (["--switch", "ovsbrr"], "unknown switch 'ovsbrr'; did you mean ovsbr?"),
    (["--host", "cfss"], "unknown host 'cfss'; did you mean cfs?"),
    (["--controller", "remot"], "unknown controller 'remot'; did you mean remote?"),
    (["--test", "pingal"], "--test pingal: unknown test 'pingal'; did you mean pingall?"),
    (["--test", "pingall+iprf"], "unknown test 'iprf'; did you mean iperf"),
    (["-v", "loud"], "-v loud: unknown verbosity (levels: debug, info, output,"),
    (["--ipbase", "10.0.0.0/40"], "--ipbase 10.0.0.0/40:"),
    (["--ipbase", "10.0.0.0/31"], "a prefix of /1 to /30"),
    (["--ipbase", "net"], "not an IPv4 address"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["linear"], "mn takes options only, not 'linear'"),
    (["--pre", "/nonexistent/pre.cli"], "--pre /nonexistent/pre.cli: no such file"),
    (["--custom", "/nonexistent/c.py"], "--custom /nonexistent/c.py: no such file"),
    (["-x"], "-x/--xterms: netrig mn opens no xterms"),
    (["--nat"], "--nat: netrig labs have no NAT to the Internet"),
    (["--nat", "subnet=10.9.0.0/24"], "--nat: netrig labs have no NAT"),
    (["--cluster", "a,b"], "--cluster: Mininet's cluster edition is not part of netrig mn"),
])
def test_bad_command_lines_say_what_and_exit_2(capsys, argv, said):
    err = refused(capsys, *argv)
    assert err.startswith("netrig mn: error: ") and said in err, err
    assert "('netrig mn -h' lists mn's options)" in err


def test_help_and_version(capsys):
    assert mn.main(["-h"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: mn [options]")  # what Mininet's walkthrough test expects
    for option in ("--topo", "--link", "--switch", "--controller", "--custom", "--test", "--pre"):
        assert option in out
    assert mn.main(["--version"]) == 0
    assert capsys.readouterr().out == "2.3.0\n"


def test_netrig_mn_passes_everything_to_mn(capsys):
    assert netrig_main(["mn", "--topo", "linar,3"]) == 2
    assert "did you mean linear?" in capsys.readouterr().err
    assert netrig_main(["mn", "-h"]) == 0
    assert capsys.readouterr().out.startswith("Usage: mn")
    assert netrig_main(["help", "mn"]) == 0
    assert "netrig mn --topo linear,3 --test pingall" in capsys.readouterr().out


# --custom files

CUSTOM = '''
from mininet.topo import Topo

class MyTopo(Topo):
    "two switches, n hosts"
    def build(self, n=2):
        s1, s2 = self.addSwitch('s1'), self.addSwitch('s2')
        for i in range(1, n + 1):
            self.addLink(self.addHost('h%d' % i), s1 if i % 2 else s2)
        self.addLink(s1, s2)

def hello(net, word='hi'):
    net.said.append(word)

class Big:
    def __init__(self, *args, **params):
        self.args, self.params = args, params

topos = {'mytopo': MyTopo, 'lambda': (lambda: MyTopo(n=1))}
tests = {'hello': hello}
switches = {'big': Big}
if __name__ == '__main__':
    raise SystemExit('a custom file is not run as a script')
'''


def test_custom_file_adds_topologies_tests_and_classes(tmp_path, stand_in):
    f = tmp_path / "custom.py"
    f.write_text(CUSTOM)
    opts, tables, topo = checked("--custom", str(f), "--topo", "mytopo,3", "--test", "hello,yo",
                                 "--switch", "big,7,size=2")
    assert topo.hosts() == ["h1", "h2", "h3"] and topo.switches() == ["s1", "s2"]
    assert "hello" in tables.tests and "mytopo" in tables.topos
    assert len(checked("--custom", str(f), "--topo", "lambda")[2].hosts()) == 1
    switch = mn._classes(opts, tables)["switch"]("s9")
    assert switch.args == ("s9", 7) and switch.params == {"size": 2}
    net = types.SimpleNamespace(said=[])
    mn.run_tests(net, opts.test, tables)
    assert net.said == ["yo"]


def test_custom_file_mistakes_name_file_and_line(tmp_path, capsys):
    f = tmp_path / "bad.py"
    f.write_text("from mininet.topo import Topo\n\nraise ValueError('nope')\n")
    assert mn.main(["--custom", str(f)]) == 1
    assert f"--custom {f}:3: ValueError: nope" in capsys.readouterr().err
    f.write_text("topos = {\n")
    assert mn.main(["--custom", str(f)]) == 1
    assert f"--custom {f}:1: SyntaxError" in capsys.readouterr().err
    f.write_text("topos = ['mytopo']\n")
    assert "'topos' must be a dict of names" in refused(capsys, "--custom", str(f))
    f.write_text(CUSTOM)
    err = refused(capsys, "--custom", str(f), "--topo", "mytop")
    assert "unknown topology 'mytop'; did you mean mytopo?" in err
    err = refused(capsys, "--custom", str(f), "--topo", "mytopo,1,2")
    assert "--topo mytopo,1,2: mytopo takes n (too many positional arguments)" in err


# The run, against a stand-in network

class FakeNet:
    made: list = []

    def __init__(self, topo=None, **kw):
        self.topo, self.kw, self.calls = topo, kw, []
        FakeNet.made.append(self)

    def start(self):
        self.calls.append("start")

    def stop(self):
        self.calls.append("stop")

    def pingAll(self, timeout=None):
        self.calls.append(("pingAll", timeout))

    def pingPair(self):
        self.calls.append("pingPair")

    def ping(self):
        self.calls.append("ping")

    def iperf(self, hosts=None, l4Type="TCP", udpBw="10M"):
        self.calls.append(("iperf", l4Type, udpBw))


class FakeCLI:
    def __init__(self, net, script=None):
        net.calls.append(("CLI", script))


@pytest.fixture
def stand_in(monkeypatch):
    """mininet.net, .node, .link and .cli as stand-ins that record what mn asks."""
    FakeNet.made = []
    node = types.ModuleType("mininet.node")
    for name in ("Host", "CPULimitedHost", "OVSSwitch", "OVSBridge", "UserSwitch", "LinuxBridge",
                 "Controller", "RemoteController"):
        setattr(node, name, type(name, (), {"__init__": lambda self, *a, **k: None}))
    node.quieted = []
    node.quiet = node.quieted.append
    link = types.ModuleType("mininet.link")
    link.Link = type("Link", (), {})
    link.TCLink = type("TCLink", (), {"__init__": lambda self, *a, **k: None})
    net = types.ModuleType("mininet.net")
    net.Mininet = FakeNet
    cli = types.ModuleType("mininet.cli")
    cli.CLI = FakeCLI
    for name, module in (("node", node), ("link", link), ("net", net), ("cli", cli)):
        monkeypatch.setitem(sys.modules, f"mininet.{name}", module)
        monkeypatch.setattr(mininet, name, module, raising=False)
    buf = io.StringIO()
    lg.ch.setStream(buf)
    yield types.SimpleNamespace(node=node, link=link, log=buf)
    lg.ch.setStream(sys.stderr)
    setLogLevel()


def test_run_in_mns_order(stand_in, tmp_path, capsys):
    pre, post = tmp_path / "pre.cli", tmp_path / "post.cli"
    pre.write_text("nodes\n")
    post.write_text("net\n")
    assert mn.main(["--topo", "linear,3", "--link", "tc,bw=10,delay=5ms", "--switch", "lxbr",
                    "--host", "cfs,cpu=.5", "--mac", "--arp", "--ipbase", "10.1.0.0/16",
                    "--pre", str(pre), "--post", str(post), "--test", "pingall",
                    "--test", "pingpair+iperfudp,5M", "--controller", "remote"]) == 0
    (net,) = FakeNet.made
    assert net.topo.hosts() == ["h1", "h2", "h3"]
    assert net.calls == [("CLI", str(pre)), "start", ("pingAll", None), "pingPair",
                         ("iperf", "UDP", "5M"), ("CLI", str(post)), "stop"]
    kw = net.kw
    assert kw["ipBase"] == "10.1.0.0/16"
    (remote,) = kw["controller"]  # the one asked for, not started; said once, by mn
    assert remote is stand_in.node.RemoteController and stand_in.node.quieted == ["controller"]
    assert kw["autoSetMacs"] and kw["autoStaticArp"] and kw["waitConnected"] is True
    assert issubclass(kw["link"], stand_in.link.TCLink)
    assert issubclass(kw["switch"], stand_in.node.LinuxBridge)
    assert issubclass(kw["host"], stand_in.node.CPULimitedHost)
    # the defaults of the option, and the host kind's sched, reach the class
    made = []
    monkey = kw["link"].__mro__[1]
    monkey.__init__ = lambda self, *a, **k: made.append(k)
    kw["link"]("h1", "s1", bw=20)
    assert made == [{"bw": 20, "delay": "5ms"}]
    err = capsys.readouterr().err
    assert err.count("--controller remote: accepted, not started") == 1
    assert "completed in " in stand_in.log.getvalue()


def test_without_a_test_the_prompt_opens(stand_in):
    assert mn.main(["-v", "output"]) == 0
    (net,) = FakeNet.made
    assert net.calls == ["start", ("CLI", None), "stop"]
    assert net.kw["waitConnected"] is False
    assert net.kw["switch"] is stand_in.node.LinuxBridge  # no OVS note: none was asked for
    assert net.kw["controller"] == [stand_in.node.Controller]  # mn's c0, quiet
    assert stand_in.log.getvalue() == ""  # -v output: nothing before the prompt


def test_controller_none_leaves_c0_out(stand_in, capsys):
    assert mn.main(["--controller", "none", "--test", "none"]) == 0
    (net,) = FakeNet.made
    assert net.kw["controller"] is None
    assert "not started" not in capsys.readouterr().err  # none asked for: nothing to say


def test_the_network_is_stopped_when_a_test_fails(stand_in, capsys):
    def broken(self, timeout=None):
        raise RuntimeError("ping broke")

    FakeNet.pingAll = broken
    try:
        assert mn.main(["--test", "pingall"]) == 1
    finally:
        del FakeNet.pingAll
        FakeNet.pingAll = lambda self, timeout=None: self.calls.append(("pingAll", timeout))
    (net,) = FakeNet.made
    assert net.calls[-1] == "stop"
    assert "netrig mn: error: RuntimeError: ping broke" in capsys.readouterr().err


def test_a_method_of_mininet_is_a_test(stand_in):
    assert mn.main(["--test", "ping", "--test", "none", "--test", "build", "--test", "all"]) == 0
    assert FakeNet.made[0].calls == ["start", "ping", "ping", ("iperf", "TCP", "10M"), "stop"]


def test_activation_puts_netrigs_mininet_first(monkeypatch):
    import os
    import shutil

    monkeypatch.undo()  # the real _activate, and the environment put back after it
    for var in ("PATH", "PYTHONPATH"):
        if var in os.environ:
            monkeypatch.setenv(var, os.environ[var])
        else:
            monkeypatch.delenv(var, raising=False)
    before = os.environ["PATH"]
    try:
        mn._activate()
        assert Path(mininet.__file__).resolve().parent == SHIM / "mininet"
        assert str(SHIM) in sys.path
    finally:
        first = os.environ["PATH"].split(os.pathsep)[0]
        if os.environ["PATH"] != before and Path(first).name.startswith("netrig-mn-"):
            shutil.rmtree(first)


def test_activation_refuses_another_mininet(monkeypatch, tmp_path):
    """A `mininet` found before netrig's (here a stand-in package) is refused before
    anything runs: mn -c of a real Mininet would kill whatever looks like Mininet's."""
    import importlib

    other = tmp_path / "mininet"
    other.mkdir()
    (other / "__init__.py").write_text("")
    monkeypatch.undo()
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    for name in [m for m in sys.modules if m == "mininet" or m.startswith("mininet.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "netrig.mnrun.run", None)  # (the fallback: sys.path only)
    try:
        with pytest.raises(mn.MnError, match="finds .*, not netrig's compat package"):
            mn._activate()
    finally:
        for name in [m for m in sys.modules if m == "mininet" or m.startswith("mininet.")]:
            del sys.modules[name]
    monkeypatch.undo()
    importlib.import_module("mininet")


def test_topology_of_a_custom_class_without_build(tmp_path):
    class Old(Topo):  # Mininet 2.0's style: the constructor adds the nodes
        def __init__(self, n=1):
            Topo.__init__(self)
            for i in range(n):
                self.addHost(f"h{i + 1}")

    tables = mn.Tables()
    tables.topos["old"] = Old
    assert mn.topology("old,2", tables).hosts() == ["h1", "h2"]
    with pytest.raises(mn.MnUsage, match="old takes n"):
        mn.topology("old,1,2", tables)
