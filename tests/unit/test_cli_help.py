"""The command line that helps: --version, help with an example for every command and
argument at 80 columns, exec without --, link set by a link's name, the pingall matrix,
the cc check and the headline table. No root, no network."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
from netrig.cli import base, main, parser, tools
from netrig.cli.lab import ping_matrix
from netrig.errors import NetrigError
from netrig.exp.preflight.cc import congestion_controls
from netrig.exp.preflight.checks import preflight
from netrig.exp.spec.model import ScenarioError
from netrig.exp.spec.scenario import loads_scenario
from netrig.lab.linkset import words as link_words

HERE = Path(__file__).parent


def netrig(*args: str, columns: int = 200) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "netrig", *args], capture_output=True, text=True,
                          env=env, timeout=60)


@pytest.mark.parametrize("flag", ["--version", "version"])
def test_version_names_netrig_and_each_binary(flag):
    p = netrig(flag)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert [x.split()[0] for x in lines] == ["netrig", "netrig-perf", "netrig-link", "netrig-analyze"], p.stdout
    assert all(len(x.split()) == 2 and x.split()[1][0].isdigit() for x in lines), p.stdout


def test_version_names_a_binary_it_cannot_find(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NETRIG_BIN_DIR", str(tmp_path))
    monkeypatch.setattr("netrig._bins.binary", lambda name: tmp_path / name)
    monkeypatch.setattr(tools, "binary", lambda name: tmp_path / name)
    assert main(["version"]) == 1
    out = capsys.readouterr().out
    assert "netrig-perf: not available (" in out and "netrig-link: not available (" in out


def commands() -> dict[str, base.Command]:
    return parser.build()[1]


def test_every_command_and_argument_has_a_description_and_an_example():
    for name, c in commands().items():
        text = c.parser.format_help()
        assert "\nexample" in text and f"netrig {name}" in text.split("\nexample")[-1], name
        assert c.parser.description, name
        for action in c.parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help and "e.g." in action.help, (name, action.dest)
    assert {"run", "up", "link", "report", "compare", "exec", "pingall", "version"} <= set(commands())


@pytest.mark.parametrize("cmd", ["help", *(f"help {c}" for c in
                                          ("run", "up", "link", "exec", "explain", "report"))])
def test_help_fits_80_columns_on_a_wide_terminal(cmd):
    p = netrig(*cmd.split(), columns=200)
    assert p.returncode == 0, p.stderr
    wide = [x for x in p.stdout.splitlines() if len(x) > 80]
    assert not wide, wide
    if cmd != "help":
        assert "example" in p.stdout


def test_help_lists_every_command():
    p = netrig("help")
    for name in commands():
        assert f"\n  {name}" in p.stdout, name


def test_a_missing_argument_says_the_synopsis_and_an_example(capsys):
    with pytest.raises(SystemExit) as e:
        main(["up"])
    assert e.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["netrig up: error: the following arguments are required: FILE",
                   "  usage:   netrig up FILE [--prefix P] [-q] [--wait S|--no-wait]",
                   "  example: netrig up examples/portfolio.yaml",
                   "  ('netrig up --help' for more)"]


def parse(*argv: str) -> argparse.Namespace:
    return parser.build()[0].parse_args(list(argv))


def test_exec_takes_its_command_without_a_double_dash():
    a = parse("exec", "h1", "ping", "-c", "3", "h2")
    assert (a.node, a.cmd) == ("h1", ["ping", "-c", "3", "h2"])
    a = parse("exec", "--prefix", "pf", "h1", "ls", "-h")
    assert (a.prefix, a.node, a.cmd) == ("pf", "h1", ["ls", "-h"])


def test_exec_without_a_double_dash_reaches_the_node(monkeypatch, tmp_path):
    """exec h1 ping -c 1 h2 runs `ping -c 1 h2` in h1's namespace (the exec recorded),
    with tc's shim (netrig.lab.tcshim) first on PATH, root's alone."""
    import os

    from netrig.lab import state

    class St:
        prefix = "pf"
        node_ns = {"h1": "pf-h1"}
        dir = tmp_path

    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(state.LabState, "load", staticmethod(lambda prefix: St()))
    asked = []
    monkeypatch.setattr("netrig.lab.bringup.which", lambda prefix: asked.append(prefix) or "pf")
    done = []

    def execvp(exe, argv):
        done.append(argv)
        raise SystemExit(0)

    monkeypatch.setattr(os, "execvp", execvp)
    for argv in (["exec", "h1", "ping", "-c", "1", "h2"], ["exec", "h1", "--", "ping", "-c", "1", "h2"],
                 ["exec", "h1", "--prefix", "pf", "ping", "-c", "1", "h2"]):
        with pytest.raises(SystemExit):
            main(argv)
    assert done == [["ip", "netns", "exec", "pf-h1", "ping", "-c", "1", "h2"]] * 3
    assert asked == [None, None, "pf"]
    assert os.environ["PATH"] == f"{tmp_path / 'bin'}:/usr/bin:/bin"
    shim = tmp_path / "bin" / "tc"
    assert shim.stat().st_mode & 0o777 == 0o700 and "netrig.lab.tcshim" in shim.read_text()


def test_link_set_by_name_or_by_ends():
    assert link_words(["L2", "rate=10Mbit"]) == ("L2", None, ["rate=10Mbit"])
    assert link_words(["r2", "r3", "delay=50ms", "loss=1%"]) == ("r2", "r3", ["delay=50ms", "loss=1%"])
    a = parse("link", "set", "L2", "rate=10Mbit")
    assert link_words(a.words) == ("L2", None, ["rate=10Mbit"])


@pytest.mark.parametrize("words, said", [
    (["rate=10Mbit"], "which link? give its name or its two ends first"),
    (["r1", "r2", "r3", "rate=1Mbit"], "r1 r2 r3: a link is one name or two ends"),
    (["L2"], "nothing to set: give KEY=VALUE after the link (e.g. netrig link set L2 delay=50ms)"),
    (["L2", "rate=1Mbit", "r3"], "'r3' after the keys"),
])
def test_link_set_words_that_name_no_link(words, said):
    with pytest.raises(NetrigError, match=said.replace("?", r"\?").replace("(", r"\(").replace(")", r"\)")):
        link_words(words)


def test_pingall_matrix_has_names_and_median_rtts():
    hosts = ["h1", "h2", "server"]
    rtts = {("h1", "h2"): [0.5, 0.1, 0.2], ("h1", "server"): [40.2, 40.4],
            ("h2", "h1"): [0.123], ("h2", "server"): [], ("server", "h1"): [1500.0],
            ("server", "h2"): [12.34]}
    assert ping_matrix(hosts, rtts).splitlines() == [
        "median RTT in ms (x: no reply), from the row's host to the column's",
        "from \\ to     h1     h2  server",
        "h1             -  0.200    40.3",
        "h2         0.123      -       x",
        "server      1500   12.3       -"]


# The congestion control a flow asks for, checked before anything is built.
CC = """\
name: cc
topology: {nodes: {h1: host, h2: host}, links: [{a: h1, b: h2, rate: 10Mbit}]}
flows:
  bulk: {kind: tcp, from: h1, to: h2, cc: renoo}
"""


def test_congestion_controls_loaded_and_loadable(tmp_path):
    (tmp_path / "avail").write_text("reno cubic\n")
    mods = tmp_path / "ipv4"
    mods.mkdir()
    for f in ("tcp_bbr.ko.zst", "tcp_vegas.ko", "tcp_diag.ko", "udp_diag.ko"):
        (mods / f).write_text("")
    assert congestion_controls(tmp_path / "avail", mods) == {"reno", "cubic", "bbr", "vegas"}
    assert congestion_controls(tmp_path / "none", tmp_path / "none") == set()


def test_an_unknown_cc_is_refused_at_its_line(monkeypatch):
    monkeypatch.setattr("netrig.exp.preflight.cc.congestion_controls", lambda: {"reno", "cubic", "bbr"})
    with pytest.raises(ScenarioError) as e:
        preflight(loads_scenario(CC, "s.yaml"))
    assert e.value.problems == [
        "s.yaml:4: flows.bulk.cc: 'renoo' is not a TCP congestion control this kernel has; "
        "did you mean reno? (it has: bbr, cubic, reno)"]


def test_an_unknown_cc_in_a_sweep_is_refused_at_its_item(monkeypatch):
    monkeypatch.setattr("netrig.exp.preflight.cc.congestion_controls", lambda: {"reno", "cubic"})
    text = CC.replace("cc: renoo", "cc: reno") + "sweep:\n  flows.bulk.cc: [cubic, vegas]\n"
    with pytest.raises(ScenarioError) as e:
        preflight(loads_scenario(text, "s.yaml"))
    assert e.value.problems == [
        "s.yaml:6: sweep.flows.bulk.cc[1]: 'vegas': flows.bulk.cc: 'vegas' is not a TCP "
        "congestion control this kernel has (it has: cubic, reno)"]


def test_a_known_cc_passes(monkeypatch):
    monkeypatch.setattr("netrig.exp.preflight.cc.congestion_controls", lambda: {"reno", "cubic"})
    assert loads_scenario(CC.replace("renoo", "reno"), "s.yaml").points[0].spec.flows["bulk"].cc == "reno"


def test_exec_with_no_command_gives_a_shell_whose_prompt_names_the_node(monkeypatch, tmp_path):
    import os

    from netrig.lab import state

    class St:
        prefix = "pf"
        node_ns = {"h1": "pf-h1"}
        dir = tmp_path

    monkeypatch.setenv("SHELL", "/bin/bash")
    monkeypatch.delenv("PS1", raising=False)
    monkeypatch.delenv("debian_chroot", raising=False)
    monkeypatch.delenv("NETRIG_NODE", raising=False)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(state.LabState, "load", staticmethod(lambda prefix: St()))
    monkeypatch.setattr("netrig.lab.bringup.which", lambda prefix: "pf")
    done = []

    def execvp(exe, argv):
        done.append(argv)
        raise SystemExit(0)

    monkeypatch.setattr(os, "execvp", execvp)
    with pytest.raises(SystemExit):
        main(["exec", "h1"])
    assert done == [["ip", "netns", "exec", "pf-h1", "/bin/bash"]]
    assert os.environ["PS1"] == "h1 (lab pf)# "
    assert os.environ["debian_chroot"] == "h1 in lab pf"
    assert os.environ["NETRIG_NODE"] == "h1"
