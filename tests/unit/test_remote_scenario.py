"""Scenarios of real hosts (hosts:, path:, clocks:): their checks at FILE:LINE: key, the
sweeps and sections refused there, and the declared path's topology and theory (no
network)."""

from __future__ import annotations

import pytest
from netrig.exp.grade.expect import expectations
from netrig.exp.spec.model import ScenarioError
from netrig.exp.spec.scenario import loads_scenario

REAL = """\
name: wifi
hosts:
  a: {ssh: alice@192.168.1.20, key: ~/.ssh/id_ed25519}
  b: {ssh: bob@192.168.1.21, port: 2222, address: 10.0.0.21}
path: {rate: 10Mbit, rtt: 20ms}
duration: 10s
flows:
  bulk: {kind: tcp, from: a, to: b}
  rtt: {kind: ping, from: a, to: b, interval: 100ms}
"""

LAB = """\
name: lab
topology:
  nodes: {a: host, b: host}
  links:
    - {a: a, b: b, rate: 10Mbit, delay: 10ms}
duration: 10s
flows:
  bulk: {kind: tcp, from: a, to: b}
  rtt: {kind: ping, from: a, to: b, interval: 100ms}
"""


def problems(text: str, **kw) -> list[str]:
    with pytest.raises(ScenarioError) as e:
        loads_scenario(text, "s.yaml", **kw)
    return e.value.problems


def test_a_hosts_scenario_loads_with_its_hosts_path_and_clocks():
    s = loads_scenario(REAL, "s.yaml")
    p = s.points[0]
    assert p.hosts is not None and list(p.hosts) == ["a", "b"]
    b = p.hosts["b"]
    assert (b.user, b.host, b.port, b.to_address, b.label()) == ("bob", "192.168.1.21", 2222, "10.0.0.21",
                                                                 "bob@192.168.1.21:2222")
    assert p.hosts["a"].to_address == "192.168.1.20" and p.hosts["a"].label() == "alice@192.168.1.20:22"
    assert p.spec.clocks == "unknown"
    assert s.resolved["hosts"]["a"]["ssh"] == "alice@192.168.1.20" and "topology" not in s.resolved
    # scenario.yaml (the resolved scenario) loads again, as --resume and the report do
    import yaml
    again = loads_scenario(yaml.safe_dump(s.resolved, sort_keys=False), "scenario.yaml")
    assert again.points[0].hosts == p.hosts


def test_the_declared_path_gives_the_theory_of_a_lab_with_that_path():
    """10 Mbit/s and 20 ms declared: theory's TCP rate and ping RTT are the built lab's
    (one 10 Mbit/s link, 10 ms each way)."""
    real, lab = loads_scenario(REAL, "r.yaml").points[0], loads_scenario(LAB, "l.yaml").points[0]
    (link,) = real.topology.links
    assert (link.a, link.b) == ("a", "b")
    er, el = expectations(real), expectations(lab)
    for name in ("bulk", "rtt"):
        assert (er[name].metric, er[name].limit) == (el[name].metric, el[name].limit)
        assert er[name].value == pytest.approx(el[name].value, rel=1e-9)
    assert er["bulk"].value == pytest.approx(10e6 * 1448 / 1514, rel=1e-6)
    assert 20 < er["rtt"].value < 21


def test_more_hosts_meet_at_one_switch_and_any_two_see_the_declared_rtt_and_loss():
    text = REAL.replace("path: {rate: 10Mbit, rtt: 20ms}", "path: {rate: 10Mbit, rtt: 20ms, loss: 1%}").replace(
        "  b: {ssh", "  c: {ssh: carol@192.168.1.22}\n  b: {ssh")
    p = loads_scenario(text, "s.yaml").points[0]
    assert p.topology.nodes == {"a": "host", "c": "host", "b": "host", "path": "switch"}
    from netrig.theory import analyse
    from netrig.topo.plan import make_plan

    for a, b in (("a", "b"), ("c", "a"), ("b", "c")):
        path = analyse(make_plan(p.topology), a, b)
        assert path.base_rtt_s == pytest.approx(0.020, abs=0.0005)  # plus a ping's serialisation
        assert path.loss_out == pytest.approx(0.01) and path.loss_back == pytest.approx(0.01)
        assert {lk.direction(d).rate_bps for lk in p.topology.links for d in (0, 1)} == {10e6}
    e = expectations(p)
    assert e["bulk"].limit.startswith("loss (Mathis") and e["bulk"].value < 10e6


def test_topology_and_hosts_are_one_or_the_other():
    both = REAL.replace("path:", "topology: {nodes: {a: host, b: host}, links: [[a, b]]}\npath:")
    assert problems(both) == ["s.yaml:2: hosts: give topology: (an emulated lab) or hosts: (real machines "
                              "over SSH), not both"]
    neither = "name: x\nduration: 1s\nflows:\n  f: {kind: ping, from: a, to: b}\n"
    got = problems(neither)
    assert got[0] == "s.yaml:1: (top level): a scenario needs topology: (an emulated lab) or hosts: (real machines reached over SSH)"
    lab_path = LAB.replace("duration:", "path: {rate: 1Mbit, rtt: 1ms}\nduration:")
    assert problems(lab_path) == ["s.yaml:6: path: path: describes real hosts (hosts:); an emulated lab's "
                                  "path is its links' rate, delay and loss"]


def test_hosts_problems_name_the_file_line_and_key():
    bad = REAL.replace("alice@192.168.1.20", "alice@").replace("port: 2222", "port: 70000").replace(
        "address: 10.0.0.21", "adress: 10.0.0.21")
    got = problems(bad)
    assert any(p.startswith("s.yaml:3: hosts.a.ssh: 'alice@' is not [user@]host") for p in got), got
    assert any(p.startswith("s.yaml:4: hosts.b.port:") for p in got), got
    assert any(p.startswith("s.yaml:4: hosts.b.adress:") and "address" in p for p in got), got
    option = problems(REAL.replace("alice@192.168.1.20", "-oProxyCommand=sh"))
    assert option[0].startswith("s.yaml:3: hosts.a.ssh: '-oProxyCommand=sh' is not [user@]host"), option
    no_path = problems(REAL.replace("path: {rate: 10Mbit, rtt: 20ms}\n", ""))
    assert len(no_path) == 1 and no_path[0].startswith("s.yaml:2: hosts: real hosts need path: {rate: ..., rtt: ...}")
    bad_path = problems(REAL.replace("rtt: 20ms", "rtt: fast"))
    assert len(bad_path) == 1 and bad_path[0].startswith("s.yaml:5: path.rtt:"), bad_path
    one = problems(REAL.replace("  b: {ssh: bob@192.168.1.21, port: 2222, address: 10.0.0.21}\n", "").replace(
        "to: b", "to: a"))
    assert "s.yaml:2: hosts: at least two hosts: flows run between them" in one
    named = problems(REAL.replace("  a: {ssh", "  path: {ssh"))
    assert any(p.startswith("s.yaml:3: hosts.path: 'path' names the declared path's switch") for p in named), named
    clocks = problems(REAL + "clocks: sure\n")
    assert len(clocks) == 1 and clocks[0].startswith("s.yaml:10: clocks:") and "synced" in clocks[0]


def test_a_flow_to_an_unknown_host_is_named():
    got = problems(REAL.replace("bulk: {kind: tcp, from: a, to: b}", "bulk: {kind: tcp, from: a, to: c}"))
    assert got == ["s.yaml:8: flows.bulk.to: no node named 'c' in the topology"]


def test_sweeps_that_would_change_a_real_network_are_refused():
    links = problems(REAL + "sweep:\n  links.a-b.rate: [1Mbit, 2Mbit]\n")
    assert len(links) == 1 and links[0].startswith("s.yaml:11: sweep.links.a-b.rate: links.* changes an "
                                                   "emulated lab; this scenario runs on real hosts"), links
    topo = problems(REAL + "sweep:\n  topology.backend: [kernel]\n")
    assert "topology.* changes an emulated lab" in topo[0]
    path = problems(REAL + "sweep:\n  path.rate: [1Mbit, 2Mbit]\n")
    assert path == ["s.yaml:11: sweep.path.rate: path: is what you declare about real machines: sweeping it "
                    "would change theory, not the network (sweep flows.* instead)"]
    # a flow's keys sweep as on a lab; --set may declare the path
    s = loads_scenario(REAL + "sweep:\n  flows.bulk.window: [16KB, 64KB]\n", "s.yaml", sets=["path.rtt=40ms"])
    assert len(s.points) == 2 and s.points[0].spec.path.rtt_s == 0.04
    assert problems(REAL, sets=["links.a-b.delay=5ms"])[0].startswith("--set links.a-b.delay=5ms: links.* changes")


def test_what_needs_an_emulated_lab_is_refused_on_real_hosts():
    text = REAL + ("monitors:\n  - {kind: queue, link: a-b}\n  - {kind: tcp_info, flow: bulk}\n"
                   "events:\n  - {at: 1s, link: a-b, down: true}\n")
    got = problems(text)
    assert any(p.startswith("s.yaml:11: monitors[0].kind: a queue monitor watches an emulated lab's") for p in got), got
    assert any(p.startswith("s.yaml:13: events: events change an emulated lab") for p in got), got
    assert not any("monitors[1]" in p for p in got)  # tcp_info: netrig-perf's own samples
    web = problems(REAL.replace("{kind: ping, from: a, to: b, interval: 100ms}", "{kind: web, from: a, to: b}"))
    assert any("flows.rtt.kind: a web flow runs nginx inside an emulated lab" in p for p in web), web


def test_netrig_run_of_real_hosts_needs_no_root(tmp_path, monkeypatch, capsys):
    """It builds no namespace; a lab scenario still asks for root."""
    from netrig import cli
    from netrig.exp.execute import campaign
    from netrig.exp.render import report
    ran = []
    monkeypatch.setattr(cli.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(campaign, "run", lambda scen, out, **kw: (ran.append(scen.name), (out, "complete"))[1])
    monkeypatch.setattr(report, "build", lambda out, allow_foreign=False, **kw: out / "report.html")
    (tmp_path / "real.yaml").write_text(REAL)
    (tmp_path / "lab.yaml").write_text(LAB)
    assert cli.main(["run", str(tmp_path / "real.yaml"), "--out", str(tmp_path / "o1"), "-q"]) == 0
    assert ran == ["wifi"]
    assert cli.main(["run", str(tmp_path / "lab.yaml"), "--out", str(tmp_path / "o2"), "-q"]) == 2
    assert "netrig run needs root (it creates network namespaces)" in capsys.readouterr().err
    assert ran == ["wifi"]


OPTIONS = """\
name: wifi
hosts:
  a: {ssh: alice@192.168.1.20, options: {StrictHostKeyChecking: accept-new}}
  b:
    ssh: bob@192.168.1.21
    options:
      LogLevel: ERROR
      X
path: {rate: 10Mbit, rtt: 20ms}
duration: 10s
flows:
  bulk: {kind: tcp, from: a, to: b}
"""


@pytest.mark.parametrize("line,key", [
    ("ProxyCommand: nc %h %p", "ProxyCommand"),
    ("proxycommand: nc %h %p", "proxycommand"),
    ("PROXYCOMMAND: nc %h %p", "PROXYCOMMAND"),
    ('"ProxyCommand=nc %h %p": x', "ProxyCommand=nc %h %p"),
    ('"ProxyCommand nc %h %p": ""', "ProxyCommand nc %h %p"),
    ("LocalCommand: touch /tmp/owned", "LocalCommand"),
    ("PermitLocalCommand: 'yes'", "PermitLocalCommand"),
    ("KnownHostsCommand: /bin/sh -c id", "KnownHostsCommand"),
    ("'Match exec \"touch /tmp/owned\"': x", 'Match exec "touch /tmp/owned"'),
    ('"match=exec true": x', "match=exec true"),
    ("PKCS11Provider: /tmp/evil.so", "PKCS11Provider"),
    ("ControlPath: /tmp/elsewhere", "ControlPath"),
    ("LocalForward: 8080 localhost:80", "LocalForward"),
    ("DynamicForward: 1080", "DynamicForward"),
    ("EnableSSHKeysign: 'yes'", "EnableSSHKeysign"),
    ("UpdateHostKeys: 'yes'", "UpdateHostKeys"),
    ("Tunnel: 'yes'", "Tunnel"),
    ("ForwardAgent: 'yes'", "ForwardAgent"),
])
def test_ssh_options_that_run_local_commands_are_refused_at_their_line(line, key):
    got = problems(OPTIONS.replace("X", line))
    name = key.replace("=", " ").split()[0]
    assert len(got) == 1 and got[0].startswith(f"s.yaml:8: hosts.b.options.{key}: {name} "), got
    assert "this machine" in got[0] or "its own ControlMaster" in got[0], got


@pytest.mark.parametrize("line,why", [
    ('Compression: "yes ProxyCommand=sh"', "Compression: its value carries another option, ProxyCommand, which runs"),
    ('User: "-oProxyCommand=sh"', "User: '-oProxyCommand=sh': a host or user that starts with '-'"),
    ('ProxyJump: "jump,-oProxyCommand=sh"', "ProxyJump: 'jump,-oProxyCommand=sh': a host or user that starts"),
    ('HostName: "x\\nProxyCommand sh"', "HostName: its value spans lines"),
    ("UserKnownHostsFile: /etc/cron.d/x", "UserKnownHostsFile: '/etc/cron.d/x' makes ssh append host keys"),
])
def test_an_option_smuggled_in_a_value_is_refused_naming_the_key(line, why):
    got = problems(OPTIONS.replace("X", line))
    assert len(got) == 1 and got[0].startswith(f"s.yaml:6: hosts.b.options: {why}"), got


def test_harmless_options_and_a_jump_host_load():
    text = OPTIONS.replace("X", 'ProxyJump: "alice@jump:22,bob@jump2"\n      Ciphers: "-3des-cbc"\n'
                                "      IdentityFile: ~/.ssh/match\n      UserKnownHostsFile: /dev/null")
    b = loads_scenario(text, "s.yaml").points[0].hosts["b"]
    assert b.options["ProxyJump"] == "alice@jump:22,bob@jump2" and b.options["Ciphers"] == "-3des-cbc"
    key = problems(OPTIONS.replace("X", "").replace("{ssh: alice@192.168.1.20,", "{ssh: alice@h, key: -oX=y,"))
    assert key[0].startswith("s.yaml:3: hosts.a.key: '-oX=y' starts with '-'"), key
