"""`tool:` on tcp and udp flows: iperf3's and iperf2's command lines, their output read
into the summary keys and series rows netrig-perf's flows have (fixtures made on
loopback with Debian's iperf 2.1.8 and iperf3 3.12: tests/fixtures/make_iperf_fixtures.sh),
output that is not theirs refused, and the keys a tool cannot do refused when the
scenario is read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from netrig.exp.kinds.base import Call
from netrig.exp.kinds.registry import KINDS, TOOLS, Outcome, output_ext, tool_of
from netrig.exp.kinds.tools import iperf2
from netrig.exp.spec.model import FlowSpec, ScenarioError
from netrig.exp.spec.scenario import loads_scenario

FIX = Path(__file__).resolve().parent.parent / "fixtures"
SUMMARY = ("throughput_bps", "sent_bps", "bytes", "seconds")


def spec(kind: str = "tcp", **kw) -> FlowSpec:
    return FlowSpec.model_validate({"kind": kind, "from": "h1", "to": "h2", **kw})


def read(tool: str, name: str, kind: str = "tcp", **kw) -> Outcome:
    o = Outcome("a", spec(kind, tool=tool, **kw), 10.0)
    if tool == "iperf2":
        o.stdout = (FIX / "iperf2" / f"{name}-client.txt").read_text()
        o.server_out = (FIX / "iperf2" / f"{name}-server.csv").read_text()
    else:
        o.stdout = (FIX / "iperf3" / f"{name}.json").read_text()
    o.parse()
    return o


def test_the_registry_has_every_kind_and_tool():
    assert set(KINDS) == {"tcp", "udp", "probe", "fetch", "ping", "web", "command"}
    assert set(TOOLS) == {"netrig-perf", "iperf3", "iperf2"}
    assert tool_of(spec()).name == "netrig-perf"
    assert tool_of(spec("probe")).name == "netrig-perf"
    assert output_ext(spec(tool="iperf2")) == "txt" and output_ext(spec(tool="iperf3")) == "json"
    assert [k for k, v in KINDS.items() if v.load] == ["tcp", "udp"]


@pytest.mark.parametrize("tool", ["iperf2", "iperf3"])
def test_a_tcp_flow_reads_as_netrig_perfs(tool):
    o = read(tool, "tcp")
    s = o.summary()
    assert o.error is None and s["status"] == "ok" and s["connected"]
    for k in SUMMARY:
        assert isinstance(s[k], (int, float)) and s[k] > 0, k
    assert isinstance(s["retransmits"], int)
    assert s["throughput_bps"] == pytest.approx(s["bytes"] * 8 / s["seconds"], rel=1e-3)
    rows = o.series()
    assert [r["t"] for r in rows] == sorted(r["t"] for r in rows) and rows[0]["t"] > 10.0
    sent = [r for r in rows if "bps" in r]
    got = [r for r in rows if "recv_bps" in r]
    assert len(sent) >= 2 and len(got) >= 2 and all("retransmits" in r for r in sent)


def test_iperf2_tcp_totals_are_the_receivers_and_the_senders():
    s = read("iperf2", "tcp").summary()
    # the server's CSV total and the client's enhanced total, exactly as printed
    assert s["bytes"] == 2549219388 and s["throughput_bps"] == 10180141399
    assert s["sent_bps"] == 10129672242 and s["retransmits"] == 17


def test_iperf2_parallel_streams_are_summed():
    o = read("iperf2", "tcp-P2", parallel=2)
    s = o.summary()
    assert s["bytes"] == 1051983932 + 1068236860
    assert s["sent_bps"] == 8452524947 and s["retransmits"] == 195  # the [SUM] line
    got = [r["recv_bps"] for r in o.series() if "recv_bps" in r]
    assert got[0] == pytest.approx((544342076 + 475922492) * 8 / 1.0, rel=1e-6)


def test_iperf2_udp_reads_the_receivers_loss_and_jitter():
    o = read("iperf2", "udp", "udp", rate="5Mbit")
    s = o.summary()
    assert s["packets"] == 854 and s["loss_pct"] == 0.0 and s["jitter_ms"] == 0.001
    assert s["throughput_bps"] == pytest.approx(1255380 * 8 / 2.0041, rel=1e-4)
    assert "retransmits" not in s and all("retransmits" not in r for r in o.series())


def test_iperf2_udp_falls_back_to_the_clients_server_report():
    o = Outcome("a", spec("udp", tool="iperf2", rate="5Mbit"), 0.0)
    o.stdout = (FIX / "iperf2" / "udp-client.txt").read_text()
    o.parse()
    s = o.summary()
    assert o.error is None and s["packets"] == 854 and s["bytes"] == 1255380


def test_iperf3_udp_has_loss_jitter_and_packets():
    s = read("iperf3", "udp", "udp", rate="5Mbit").summary()
    assert s["loss_pct"] == 0 and s["jitter_ms"] > 0 and s["packets"] > 0 and s["throughput_bps"] > 4e6


@pytest.mark.parametrize("client, server, said", [
    ("", "", "iperf2 printed no report"),
    ("[  1] 0.0000-1.0000 sec  12 KBytes  9.9 Mbits/sec\n", "", "not a report netrig can read"),
    ("[  1] 1.0000-2.0000 sec  100 Bytes  800 bits/sec  1/0  0\n", "", "has no total"),
    ((FIX / "iperf2" / "tcp-client.txt").read_text(), "garbage,1,2\n", "is not its CSV"),
    ((FIX / "iperf2" / "tcp-client.txt").read_text(),
     "20261127001031,127.0.0.1,40408,127.0.0.1,5891,1,0.0-x,12,96\n", "is not its CSV"),
    ((FIX / "iperf2" / "tcp-client.txt").read_text(), "", "server reported no total"),
])
def test_iperf2_output_that_is_not_its_report_is_the_flows_error(client, server, said):
    o = Outcome("a", spec(tool="iperf2"), 0.0, stdout=client, server_out=server, stderr="boom")
    o.parse()
    assert o.error is not None and said in o.error and "boom" in o.error
    assert o.summary()["status"] == "error"


def test_iperf2_server_output_without_totals_is_not_complete():
    text = (FIX / "iperf2" / "tcp-P2-server.csv").read_text()
    assert iperf2.complete(text, 2, 1.0)
    assert not iperf2.complete(text, 3, 1.0)
    first_lines = "\n".join(text.splitlines()[:4])  # intervals only
    assert not iperf2.complete(first_lines, 1, 1.0)


@pytest.mark.parametrize("text, said", [
    ("", "no JSON from iperf3"),
    ('{"start": {}, "end": {"sum_received": {"bytes": "x"}}}', "iperf3's JSON: end.sum_received.bytes"),
    ('{"start": {}', "iperf3's JSON output is cut short"),
])
def test_iperf3_output_that_is_not_its_document_is_the_flows_error(text, said):
    o = Outcome("a", spec(tool="iperf3"), 0.0, stdout=text)
    o.parse()
    assert o.error is not None and said in o.error and o.doc is None


def test_iperf3_error_document_names_iperf3():
    said = "unable to connect to server - server may have stopped running or use a different port, " \
        "firewall issue, etc.: Connection timed out"  # iperf3 3.12's words past its connect timeout
    o = Outcome("a", spec(tool="iperf3"), 0.0, stdout=json.dumps({"error": said}))
    o.parse()
    assert o.error == f"iperf3: {said}"
    s = o.summary()
    assert s["status"] == "timed_out" and s["error"].startswith("never connected") and s["throughput_bps"] == 0


def test_command_lines():
    f = spec("udp", tool="iperf2", rate="5Mbit", length=1200, parallel=2, window="64KB")
    c = Call(f, "10.0.0.2", 5301, 3.0, 0.5)
    assert TOOLS["iperf2"].client(c) == ["iperf", "-c", "10.0.0.2", "-p", "5301", "-e", "-f", "b", "-i", "0.5",
                                         "-t", "3", "-u", "-P", "2", "-w", "64000", "-l", "1200", "-b", "5000000"]
    assert TOOLS["iperf2"].server(c, "10.0.0.2", 5, 95) == [
        "iperf", "-s", "-p", "5301", "-B", "10.0.0.2", "-y", "C", "-i", "0.5", "-t", "95", "-u",
        "-w", "64000", "-l", "1200"]
    g = spec(tool="iperf3", reverse=True, cc="reno", omit="1s", bytes="1MB")
    argv = TOOLS["iperf3"].client(Call(g, "10.0.0.2", 5302, 3.0, 1.0))
    assert argv[:2] == ["iperf3", "-c"] and "-R" in argv and "--get-server-output" not in argv
    assert argv[argv.index("-C") + 1] == "reno" and argv[argv.index("-O") + 1] == "1" and "-n" in argv
    assert TOOLS["iperf3"].server(Call(g, "x", 5302, 3.0, 1.0), "10.0.0.2", 5, 9)[:3] == ["iperf3", "-s", "-1"]


BASE = """
topology: {nodes: {h1: host, h2: host}, links: [{a: h1, b: h2, rate: 10Mbit}]}
duration: 3s
flows:
  a: {kind: tcp, from: h1, to: h2, tool: iperf2, %s}
"""


@pytest.mark.parametrize("key, value", [("reverse", "true"), ("omit", "1s"), ("connect_timeout", "3s")])
def test_a_key_iperf2_cannot_do_is_refused_naming_the_tool_and_the_key(key, value):
    with pytest.raises(ScenarioError) as e:
        loads_scenario(BASE % f"{key}: {value}", "s.yaml")
    assert f"flows.a.{key}: iperf2 cannot do '{key}'" in str(e.value)


def test_a_tool_is_a_tcp_or_udp_flows_key_and_one_of_three():
    with pytest.raises(ScenarioError) as e:
        loads_scenario(BASE.replace("kind: tcp", "kind: ping") % "size: 64", "s.yaml")
    assert "'tool' does not apply to a ping flow" in str(e.value)
    with pytest.raises(ScenarioError) as e:
        loads_scenario(BASE.replace("iperf2", "iperf9") % "rate: 1Mbit", "s.yaml")
    assert "flows.a.tool" in str(e.value) and "iperf3" in str(e.value)


def test_a_sweep_over_the_tool_makes_a_point_per_tool():
    text = BASE.replace("tool: iperf2, %s", "window: 64KB") + "sweep: {flows.a.tool: [netrig-perf, iperf3, iperf2]}\n"
    sc = loads_scenario(text, "s.yaml")
    assert [p.spec.flows["a"].tool for p in sc.points] == ["netrig-perf", "iperf3", "iperf2"]
