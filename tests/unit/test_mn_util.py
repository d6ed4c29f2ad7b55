"""netrig's mininet.log and mininet.util: Mininet 2.3's levels and line-less output,
address arithmetic, natural sort, class customising, running commands, the wiring
dumps (through the node API only) and the refusals of what the lab owns."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from pathlib import Path

import netrig
import pytest

SHIM = Path(netrig.__file__).resolve().parent / "mnshim"
if str(SHIM) not in sys.path:
    sys.path.insert(0, str(SHIM))

from mininet import log, util  # noqa: E402  (netrig's, from SHIM)
from mininet.log import LogLevelError, lg, setLogLevel  # noqa: E402


@pytest.fixture
def logged():
    """What the mininet logger writes, at the level a test sets; the level is put back."""
    buf = io.StringIO()
    lg.ch.setStream(buf)
    try:
        yield buf
    finally:
        lg.ch.setStream(sys.stderr)
        setLogLevel()


# mininet.log

def test_levels_are_mininets():
    assert log.OUTPUT == 25
    assert log.LEVELS["output"] == 25 and log.LEVELS["warn"] == logging.WARNING
    assert set(log.LEVELS) == {"debug", "info", "output", "warning", "warn", "error", "critical"}
    assert logging.getLogger("mininet") is lg
    # other loggers stay plain: the logging module's default class is not changed
    assert type(logging.getLogger("netrig-test-plain")) is logging.Logger


def test_messages_carry_their_own_newlines(logged):
    setLogLevel("info")
    log.info("*** Adding hosts:\n")
    log.info("h1 ")
    log.info("h2 ")
    log.info("\n")
    log.output("a", 1, "b\n")  # several arguments are joined by spaces
    log.info("100% dropped\n")  # one argument is not %-formatted
    assert logged.getvalue() == "*** Adding hosts:\nh1 h2 \na 1 b\n100% dropped\n"


def test_default_level_is_output(logged):
    setLogLevel()
    log.info("hidden\n")
    log.debug("hidden\n")
    log.output("shown\n")
    log.warn("warned\n")
    log.error("failed\n")
    assert logged.getvalue() == "shown\nwarned\nfailed\n"
    setLogLevel("debug")
    log.debug("d")
    setLogLevel("error")
    log.warning("w")
    log.output("o")
    log.error("e")
    assert logged.getvalue().endswith("de")


def test_unknown_level_is_named():
    with pytest.raises(LogLevelError, match="unknown level 'loud'.*output"):
        setLogLevel("loud")


def test_messages_go_to_stderr_as_it_is_now(capsys):
    setLogLevel("info")
    try:
        log.info("to stderr\n")
    finally:
        setLogLevel()
    out, err = capsys.readouterr()
    assert err == "to stderr\n" and out == ""


# Addresses

def test_ip_and_mac_helpers():
    assert util.ipStr(0x0a000001) == "10.0.0.1"
    assert util.ipNum(192, 168, 1, 2) == 0xc0a80102
    assert util.ipParse("10.0.0.1") == 0x0a000001
    assert util.ipParse("10.1") == 0x0a000001  # Mininet's short form: zeros before the last
    assert util.netParse("10.0.0.0/8") == (0x0a000000, 8)
    assert util.netParse("192.168.5.0") == (0xc0a80500, 24)
    assert util.ipAdd(1) == "10.0.0.1"
    assert util.ipAdd(5, prefixLen=24, ipBaseNum=util.ipParse("192.168.7.0")) == "192.168.7.5"
    assert util.ipAdd(0x10203, ipBaseNum=util.ipParse("10.200.0.0")) == "10.1.2.3"
    assert util.macColonHex(1) == "00:00:00:00:00:01"
    assert util.macColonHex(0xa0b0c0d0e0f) == "0a:0b:0c:0d:0e:0f"


def test_bad_addresses_say_so():
    with pytest.raises(util.AddressError, match="not enough IP addresses"):
        util.ipAdd(256, prefixLen=24, ipBaseNum=util.ipParse("10.0.0.0"))
    with pytest.raises(util.AddressError, match="not an IPv4 address"):
        util.ipParse("10.0.0.300")
    with pytest.raises(util.AddressError, match="not an IPv4 address"):
        util.ipParse("ten.0.0.1")
    with pytest.raises(util.AddressError, match="prefix length"):
        util.netParse("10.0.0.0/40")


# Sorting, ranges, arguments

def test_natural_order_and_irange():
    assert sorted(["s10", "s2", "h1", "s1"], key=util.natural) == ["h1", "s1", "s2", "s10"]
    assert util.naturalSeq(("h2", "s10")) == [["h", 2, ""], ["s", 10, ""]]
    assert list(util.irange(1, 3)) == [1, 2, 3]


def test_split_args_and_numbers():
    assert util.splitArgs("linear,3,2") == ("linear", [3, 2], {})
    assert util.splitArgs("tc,bw=10,delay=5ms,loss=0.5") == (
        "tc", [], {"bw": 10, "delay": "5ms", "loss": 0.5})
    assert util.splitArgs("remote,ip=10.0.0.1:6653") == ("remote", [], {"ip": "10.0.0.1:6653"})
    assert util.makeNumeric("1e3") == 1000.0 and util.makeNumeric("x") == "x"


class Base:
    def __init__(self, *args, **params):
        self.args, self.params = args, params


def test_custom_class_and_special_class():
    assert util.customClass({"base": Base}, "base") is Base
    C = util.customClass({"base": Base}, "base,1,bw=10")
    c = C(0, delay="5ms")
    assert c.args == (0, 1) and c.params == {"bw": 10, "delay": "5ms"}
    assert C(0, bw=5).params["bw"] == 5  # a default, which the caller overrides
    S = util.specialClass(Base, prepend=["p"], append=["a"], defaults={"x": 1}, override={"y": 2})
    s = S("m", x=3, y=4)
    assert s.args == ("p", "m", "a") and s.params == {"x": 3, "y": 2}
    assert issubclass(S, Base)
    with pytest.raises(util.MininetUtilError, match="'bsae' is unknown; did you mean base"):
        util.customClass({"base": Base}, "bsae")
    made = util.custom(Base, bw=10)(1, bw=5)
    assert made.params == {"bw": 10}  # custom's parameters win, as in Mininet


def test_build_topo():
    from mininet.topo import LinearTopo
    t = util.buildTopo({"linear": LinearTopo}, "linear,3,2")
    assert len(t.hosts()) == 6
    with pytest.raises(util.MininetUtilError, match="unknown topology 'linar'; did you mean linear"):
        util.buildTopo({"linear": LinearTopo}, "linar,3")


# Running commands

def test_err_run_and_quiet_run():
    out, err, ret = util.errRun("sh -c 'echo out; echo err >&2; exit 3'", shell=True)
    assert (out, err, ret) == ("out\n", "err\n", 3)
    r = util.errRun(["printf", "a b"])
    assert r.out == "a b" and r.ret == 0
    assert util.errRun("printf %s x").out == "x"  # a string is split on spaces
    assert util.quietRun("sh -c 'echo o; echo e >&2'", shell=True) == "o\ne\n"
    assert util.quietRun(["printf", "é"]) == "é"
    assert util.which("sh").endswith("/sh") and util.which("no-such-program-here") is None
    assert util.isShellBuiltin("cd /tmp") and not util.isShellBuiltin("ls -l")


def test_err_fail_names_the_command():
    assert util.errFail("true").ret == 0
    with pytest.raises(util.MininetUtilError, match=r"'sh -c \"echo no >&2; exit 2\"' exited "
                                                    r"with status 2: no"):
        util.errFail('sh -c "echo no >&2; exit 2"', shell=True)


def test_pmonitor_yields_lines_by_host():
    popens = {name: subprocess.Popen(["sh", "-c", f"echo {name} one; echo {name} two"],
                                     stdout=subprocess.PIPE) for name in ("h1", "h2")}
    lines = [(h, line) for h, line in util.pmonitor(popens, timeoutms=5000) if h]
    assert sorted(lines) == [("h1", "h1 one\n"), ("h1", "h1 two\n"),
                             ("h2", "h2 one\n"), ("h2", "h2 two\n")]
    assert popens == {}


def test_retry_gives_up_with_exit_1(capsys):
    calls = []
    util.retry(3, 0, lambda: calls.append(1) or len(calls) == 4)  # succeeds on the last try
    assert len(calls) == 4
    with pytest.raises(SystemExit) as e:
        util.retry(2, 0, lambda: False)
    assert e.value.code == 1


# The wiring dumps: only the node API

class Intf:
    def __init__(self, name):
        self.name, self.link = name, None

    def __str__(self):
        return self.name


class Link:
    def __init__(self, a, b):
        self.intf1, self.intf2 = a, b
        a.link = b.link = self


class Node:
    def __init__(self, name, *intfs):
        self.name, self._intfs = name, list(intfs)
        self.ports = {i: n for n, i in enumerate(intfs, start=1)}

    def intfList(self):
        return self._intfs

    def __repr__(self):
        return f"<Host {self.name}: pid=1> "


def test_dumps(logged):
    setLogLevel("output")
    h1, s1a, s1b, h2, lo = (Intf(n) for n in ("h1-eth0", "s1-eth1", "s1-eth2", "h2-eth0", "lo"))
    Link(h1, s1a)
    Link(s1b, h2)
    nodes = [Node("h1", h1), Node("s1", lo, s1a, s1b), Node("h2", h2)]
    util.dumpNodeConnections(nodes)
    assert logged.getvalue() == ("h1 h1-eth0:s1-eth1\n"
                                 "s1 lo:  s1-eth1:h1-eth0 s1-eth2:h2-eth0\n"
                                 "h2 h2-eth0:s1-eth2\n")
    logged.truncate(0)
    logged.seek(0)
    util.dumpPorts([nodes[1]])
    assert logged.getvalue() == "s1 lo:1 s1-eth1:2 s1-eth2:3 \n"
    logged.truncate(0)
    logged.seek(0)

    class Net:
        controllers, switches, hosts = [], [nodes[1]], [nodes[0]]

    util.dumpNetConnections(Net)
    assert logged.getvalue() == "s1 lo:  s1-eth1:h1-eth0 s1-eth2:h2-eth0\nh1 h1-eth0:s1-eth1\n"
    logged.truncate(0)
    logged.seek(0)
    util.dumpNodes(nodes[:1])
    assert logged.getvalue() == "<Host h1: pid=1> \n"


def test_wait_listening_asks_the_client_node(logged):
    class Client:
        def __init__(self, answers):
            self.answers, self.asked = list(answers), []

        def cmd(self, line):
            self.asked.append(line)
            return self.answers.pop(0)

    class Server:
        def IP(self):
            return "10.0.0.2"

    c = Client(["bash: connect: Connection refused\n", "Connected\n"])
    assert util.waitListening(c, Server(), 80, timeout=5)
    assert "/dev/tcp/10.0.0.2/80" in c.asked[0] and len(c.asked) == 2
    c = Client(["bash: connect: No route to host\n"])
    assert not util.waitListening(c, "10.9.9.9", 22)
    c = Client(["Connection refused"] * 3)
    assert not util.waitListening(c, "10.0.0.3", 22, timeout=0.5)


# What netrig's lab owns

def test_fix_limits_raises_the_arp_table_to_mininets_sizes_and_nothing_else(monkeypatch, tmp_path):
    """The kernel's one ARP table, for every namespace: 64 hosts pinging each other need
    4,032 entries; a size already larger is left as it is."""
    for key, now in zip([k for k, _ in util.ARP_TABLE], ("128", "512", "100000")):
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_text(now + "\n")
    monkeypatch.setattr(util, "SYSCTL", tmp_path)
    util.fixLimits()
    got = [(tmp_path / k).read_text().strip() for k, _ in util.ARP_TABLE]
    assert got == ["4096", "8192", "100000"]
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["gc_thresh1", "gc_thresh2", "gc_thresh3"]


def test_refusals_and_no_ops():
    with pytest.raises(util.NotNetrigs, match="makes every interface itself"):
        util.makeIntfPair("a-eth0", "b-eth0")
    with pytest.raises(util.NotNetrigs, match="places every interface"):
        util.moveIntf("a-eth0", Node("h1"))
    with pytest.raises(util.NotNetrigs, match="does not change the host's sysctls"):
        util.sysctlTestAndSet("net.core.wmem_max", 1 << 24)
    assert util.mountCgroups() is None
    assert util.numCores() >= 1
    assert util.Python3 and util.BaseString is str
    assert util.decode(util.encode("é")) == "é"


def test_pexpect_speaks_str():
    p = util.pexpect.spawn("printf 'hello\\n'")
    assert p.expect(["hello", util.pexpect.EOF]) == 0
    assert isinstance(p.before, str)
    p.expect(util.pexpect.EOF)
    p.close()
    assert util.StrictVersion("1.12.0") > util.StrictVersion("1.9.1")


# Every name Mininet's own examples import from these modules

EXAMPLES = [Path("/usr/lib/python3/dist-packages/mininet/examples"),
            Path("/usr/share/doc/mininet/examples")]
OURS = ("mininet.util", "mininet.log", "mininet.topo", "mininet.topolib")


def test_every_name_mininets_examples_import_from_ours_exists():
    import ast
    import importlib
    import warnings

    files = [f for d in EXAMPLES if d.is_dir() for f in sorted(d.rglob("*.py"))]
    if not files:
        pytest.skip("Mininet's examples are not installed (Debian's mininet package)")
    wanted: set[tuple[str, str]] = set()
    for f in files:
        try:
            with warnings.catch_warnings():  # their regexes' escapes
                warnings.simplefilter("ignore")
                tree = ast.parse(f.read_text(errors="replace"))
        except SyntaxError:
            continue  # a Python 2 file
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in OURS:
                wanted |= {(node.module, a.name) for a in node.names}
    assert len(wanted) > 20, wanted
    missing = [f"{m}.{n}" for m, n in sorted(wanted)
               if not hasattr(importlib.import_module(m), n)]
    assert missing == []


def test_a_switch_dpid_from_its_name_or_mininets_sentence():
    """A switch's default dpid is the first number of its name in hex, 16 digits; a name
    without one is refused with Mininet's own sentence (test_switchdpidassignment
    looks for it), then which switch."""
    from types import SimpleNamespace

    from mininet.node import Switch

    assert Switch.defaultDpid(SimpleNamespace(name="s123", dpidLen=16)) == "000000000000007b"
    assert Switch.defaultDpid(SimpleNamespace(name="x", dpidLen=16), "1:2") == "0000000000000012"
    with pytest.raises(Exception) as e:
        Switch.defaultDpid(SimpleNamespace(name="A", dpidLen=16))
    assert ("Unable to derive default datapath ID - please either specify a dpid or use a "
            "canonical switch name such as s23.") in str(e.value) and "'A'" in str(e.value)
