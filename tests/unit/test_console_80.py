"""issue 27's console: `netrig status` fits 80 columns, each command's own usage with a
did-you-mean on an argument error, errors in netrig's own words, signals' exit codes."""

from __future__ import annotations

import signal
from pathlib import Path
from types import SimpleNamespace

import pytest
from netrig.cli import main

LIVE = {"queue_packets": 1000, "queue_bytes": 1_514_000, "delivered": 123_456_789,
        "delivered_bytes": 184_000_000_000, "drops_overflow": 123_456, "drops_aqm": 65_432,
        "lost": 9_876, "lateness": {"p99_us": 1234.5}}


def fake_lab(monkeypatch) -> None:
    """`netrig status` of a lab whose state, emulator and namespaces are faked."""
    from netrig.lab import frr, netns, status
    from netrig.link import userspace

    iface = [{"name": f"eth{k}", "addr": f"10.0.{k}.1/24"} for k in range(5)]
    plan = {"nodes": {"router12": {"kind": "router", "ifaces": iface},
                      "router13": {"kind": "router", "ifaces": iface[:2]}},
            "links": [{"name": "backbone-1", "a": "router12", "b": "router13",
                       "a_to_b": {"rate": "10Mbit", "delay": "40ms", "queue": 100,
                                  "aqm": {"type": "pie"}},
                       "b_to_a": {"rate": "5Mbit", "delay": "40ms", "loss": "1%"}}]}
    st = SimpleNamespace(prefix="pf", topology="/tmp/a-longish-name/portfolio.yaml", status="up",
                         backend="userspace", plan=plan, control="/run/x.sock", pids={"netrig-link": 1},
                         namespaces=[], frr={}, owner_pid=0, topology_sha256=None, dir=Path("/nonexistent"))
    monkeypatch.setattr(status.LabState, "load", staticmethod(lambda prefix: st))
    monkeypatch.setattr(status, "alive", lambda *a: True)
    monkeypatch.setattr(netns, "exists", lambda ns: True)
    monkeypatch.setattr(frr, "daemons_dir", lambda d: Path("/nonexistent"))
    monkeypatch.setattr(userspace, "request", lambda control, cmd: {
        "links": [{"link": "backbone-1", "a_to_b": LIVE, "b_to_a": LIVE}]})


def test_status_fits_80_columns(monkeypatch, capsys):
    from netrig.lab import status

    fake_lab(monkeypatch)
    monkeypatch.setenv("COLUMNS", "80")
    assert status.show("pf") == 0
    out = capsys.readouterr().out
    assert [x for x in out.splitlines() if len(x) > 80] == []
    assert "router12→router13: queue 1000 p (1.51 MB)" in out  # in the ends' own order
    assert "router13→router12: rate=5Mbit delay=40ms loss=1%" in out
    assert "123456 queue full, 65432 aqm, 9876 loss" in out and "late p99 1234 µs" in out
    assert "delivered 123456789 p (184 GB)" in out


def test_fit_never_splits_a_part():
    from netrig.lab.status import fit

    assert fit(["aaaa", "bbbb", "cccc"], "x: ", 3, width=12) == ["x: aaaa,", "   bbbb,", "   cccc"]
    assert fit(["a" * 20], "x: ", 3, width=12) == ["x:", "   " + "a" * 20]  # its own line


# -- each command's own usage, with a did-you-mean for options

def usage_error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "{perf,tc" not in err and "usage: netrig\n" not in err, err  # not the top-level usage
    assert all(len(x) <= 80 for x in err.splitlines()), err
    return err


def test_an_unknown_option_gets_its_commands_usage_and_the_closest(capsys):
    err = usage_error(["run", "base.yaml", "--quik"], capsys)
    assert err.startswith("netrig run: error: unrecognized option --quik; did you mean --quick?\n")
    assert "  usage:   netrig run SCENARIO [--quick]" in err


def test_mininets_topo_option_on_up_points_to_mn(capsys):
    err = usage_error(["up", "--topo", "linear,3"], capsys)
    assert " ".join(err.split()).startswith("netrig up: error: --topo is Mininet's option: "
                                            "'netrig mn --topo linear,3' builds that network")
    assert "  usage:   netrig up FILE" in err
    err = usage_error(["up", "--topo=linear,3"], capsys)  # not "FILE is missing"
    assert "'netrig mn --topo=linear,3'" in err


def test_a_stray_word_gets_its_commands_usage(capsys):
    err = usage_error(["down", "pf"], capsys)
    assert err.startswith("netrig down: error: unrecognized argument 'pf'")
    assert "usage:   netrig down [--prefix P]" in err


# -- errors in netrig's own words

@pytest.mark.parametrize("argv", [["run", "/nonexistent/s.yaml"], ["up", "/nonexistent/t.yaml"],
                                  ["graph", "/nonexistent/t.yaml"]])
def test_a_missing_file_is_said_without_errno(argv, capsys):
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert "Errno" not in err and "No such file or directory" not in err, err
    assert "/nonexistent/" in err and "does not exist" in err, err


def test_report_of_a_missing_directory_says_it_does_not_exist(capsys):
    assert main(["report", "/nonexistent/results"]) == 1
    err = capsys.readouterr().err
    assert "meta.json" not in err and "/nonexistent/results: no such directory" in err, err


# -- signals

class Stopped:
    """An executor whose first run is stopped by `sig` sent to this process."""

    size = 1

    def __init__(self, sig: int) -> None:
        self.sig = sig

    def describe(self):
        return {"address": "test"}

    def run(self, scenario, out, todo, shown, tally) -> None:
        import os
        import time

        os.kill(os.getpid(), self.sig)
        time.sleep(5)  # (the signal's handler raises at once)
        raise AssertionError("the signal did not stop the run")


@pytest.mark.parametrize("sig, status, code", [(signal.SIGTERM, "terminated", 143),
                                               (signal.SIGINT, "interrupted", 130)])
def test_a_campaign_stopped_by_sigterm_exits_143_and_by_sigint_130(tmp_path, monkeypatch, sig, status,
                                                                     code):
    import json

    from netrig.exp import pipeline
    from netrig.exp.execute import campaign
    from netrig.exp.record import files as rec
    from netrig.exp.spec.scenario import loads_scenario

    monkeypatch.setattr(rec, "host_facts", lambda: {"netrig": "test"})  # (it asks iperf3 and ping)
    scen = loads_scenario(SCENARIO % ("", 1, 1, 1, "false"), "s.yaml")
    out, said = campaign.run(scen, tmp_path / "o", progress=False, executor=Stopped(sig))
    assert said == status and pipeline.EXIT[said] == code
    assert json.loads((out / "meta.json").read_text())["status"] == "interrupted"  # (the record's word)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # its handler put back


def test_sigterm_outside_a_campaign_exits_143(monkeypatch, capsys):
    from netrig.errors import Terminated

    def stopped(args):
        raise Terminated()
    from netrig.cli import topology
    monkeypatch.setattr(topology, "graph", stopped)
    assert main(["graph", "x.yaml"]) == 143


def test_sigint_is_taken_back_when_started_ignoring_it(monkeypatch):
    from netrig.cli import console

    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        console.take_back_sigint()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, old)


def test_errno_wording_left_in_a_message_is_said_plainly():
    from netrig.errors import os_words, plain

    assert plain("x.yaml: cannot read: [Errno 2] No such file or directory: '/a/x.yaml'") == \
        "x.yaml: cannot read: /a/x.yaml does not exist"
    assert plain("socket /run/s: [Errno 111] Connection refused") == "socket /run/s: connection refused"
    assert os_words(FileNotFoundError(2, "No such file or directory", "/a")) == "/a does not exist"
    assert os_words(IsADirectoryError(21, "Is a directory", "/tmp")) == "/tmp is a directory, not a file"


SCENARIO = """name: s
topology:
  nodes: {h1: host, h2: host}
  links: [{a: h1, b: h2, rate: 10Mbit, delay: 5ms%s}]
duration: 3s
repeat: %s
seed: %s
flows:
  bulk: {kind: tcp, from: h1, to: h2, parallel: %s, reverse: %s}
"""


@pytest.mark.parametrize("values, said", [
    (("", 0, 1, 1, "false"), "repeat: 0 is below 1: a scenario runs at least once"),
    (("", 5000, 1, 1, "false"), "repeat: 5000 is above 1000"),
    (("", 1, -1, 1, "false"), "seed: -1 is below 0"),
    (("", 1, 1, 0, "false"), "flows.bulk.parallel: 0 is below 1: a flow has at least one stream"),
    (("", "twice", 1, 1, "false"), "repeat: 'twice' is not a whole number"),
    (("", 1.5, 1, 1, "false"), "repeat: 1.5 is not a whole number"),
    (("", 1, 1, 1, "perhaps"), "flows.bulk.reverse: 'perhaps' is not true or false"),
    ((", ecn: 3", 1, 1, 1, "false"), "topology.links[0].ecn: 3 is not true or false"),
])
def test_a_scenario_is_refused_in_netrigs_words(tmp_path, values, said):
    from netrig.errors import NetrigError
    from netrig.exp.spec.scenario import load_scenario

    (tmp_path / "s.yaml").write_text(SCENARIO % values)
    with pytest.raises(NetrigError) as e:
        load_scenario(str(tmp_path / "s.yaml"))
    assert said in str(e.value) and "Input should" not in str(e.value), str(e.value)


def test_a_topology_is_refused_in_netrigs_words():
    from netrig.topo.load import loads
    from netrig.topo.model import TopologyError

    with pytest.raises(TopologyError) as e:
        loads("name: 5\naddressing: {prefix_len: 40}\nnodes: {a: host, b: host}\nlinks: [[a, b]]\n")
    assert e.value.problems == ["<string>:1: name: 5 is not text (quote it)",
                                "<string>:2: addressing.prefix_len: 40 is above 30: a lab's subnets are /8 to /30"]



# -- link set's direction

R3R4 = SimpleNamespace(name="r3-r4", a="r3", b="r4")


@pytest.mark.parametrize("given, named, way, said", [
    ("a_to_b", ("r4", "r3"), "b_to_a", "r4→r3"),  # issue 27: it changed r3→r4
    ("a_to_b", ("r3", "r4"), "a_to_b", "r3→r4"),
    ("b_to_a", ("r4", "r3"), "a_to_b", "r3→r4"),
    ("a_to_b", ("r3-r4", None), "a_to_b", "r3→r4"),  # by name: the file's a to b
    ("r4-r3", ("r3", "r4"), "b_to_a", "r4→r3"),
    ("r3->r4", ("r4", "r3"), "a_to_b", "r3→r4"),
    (None, ("r4", "r3"), None, "r3→r4 and r4→r3"),
])
def test_link_set_reads_its_direction_in_the_order_the_ends_were_named(given, named, way, said):
    from netrig.lab.linkset import direction

    assert direction(R3R4, given, *named) == (way, said)


def test_link_set_refuses_a_direction_between_other_nodes():
    from netrig.errors import NetrigError
    from netrig.lab.linkset import direction

    with pytest.raises(NetrigError, match=r"--dir r1-r2: link r3-r4 joins r3 and r4: give --dir r3-r4 or"):
        direction(R3R4, "r1-r2", "r3", "r4")


# -- explain takes a scenario, as graph does

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_explain_takes_a_scenario_and_its_first_flows_ends(capsys):
    assert main(["explain", str(EXAMPLES / "004-bufferbloat.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Scenario 004-bufferbloat, flow bulk (h1 → h2); give SRC DST for another pair\n"
                          "Path h1 → h2 ")
    assert "Bottleneck  s0-h2 (s0 → h2) at 1.5 Mbit/s" in out
    assert main(["explain", str(EXAMPLES / "004-bufferbloat.yaml"), "h2", "h1"]) == 0
    assert capsys.readouterr().out.startswith("Path h2 → h1 ")


def test_explain_of_a_topology_file_still_needs_its_ends(capsys):
    assert main(["explain", str(EXAMPLES / "portfolio.yaml")]) == 1
    assert "give the two ends, SRC and DST" in capsys.readouterr().err


def test_a_ping_warmup_is_sent_but_not_counted():
    from netrig.lab.network import PingResult

    out = ("PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.\n"
           "64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=153 ms\n"
           "64 bytes from 10.0.0.2: icmp_seq=2 ttl=64 time=80.1 ms\n"
           "64 bytes from 10.0.0.2: icmp_seq=3 ttl=64 time=80.3 ms\n")
    r = PingResult.parse(out, 2, warmup=1)
    assert (r.sent, r.rtts_ms, r.loss) == (2, [80.1, 80.3], 0.0)
    assert PingResult.parse(out, 3).rtts_ms == [153.0, 80.1, 80.3]
