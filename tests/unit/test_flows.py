"""The seam where a flow's process output becomes numbers: netrig.exp.kinds (ping's text,
netrig-perf's -J document) and the runner's reading of netrig-link's stats lines.

The fixtures in fixtures/flows were captured from the real tools, on this project's
build (2026-11-24):
- perf-{tcp,udp,probe,fetch}.json: target/release/netrig-perf -c 127.0.0.1 -J -i 0.5 -t 1
  against `netrig-perf -s` on loopback (tcp: -b 20000000 --tcp-info-interval 100;
  udp: -u -b 5000000 -l 1200; probe: --probe --probe-interval 50; fetch: --rr 20000
  --rr-interval 200); perf-refused.json: the client against a closed port (exit 1).
- ping-loopback.txt: `ping -n -D -i 0.2 -c 3 -W 3 127.0.0.1` (the flows' own options).
- ping-loss.txt, ping-all-lost.txt: the same ping (-i 0.05, -c 20 and -c 3) inside
  `netrig-link shell --delay 2ms --loss 30% --seed 3` and `--loss 100%` (this kernel has
  no netem to lose packets on loopback).
- link-stats.jsonl: `netrig-link shell --rate 10Mbit --delay 1ms --queue 50 --stats F`
  around four pings; its last line is the totals line that shell printed on stderr.
- perf-{tcp,udp}-server-output.json (2026-11-24): the client as the runner starts it,
  `-c 127.0.0.1 -J -i 0.5 -t 1 --get-server-output` (tcp: -b 20000000
  --tcp-info-interval 100; udp: -u -b 5000000 -l 1200), against the server as the
  runner starts it, `netrig-perf -s -1 -J -i 0.5`.
Duplicates are the one hand-made input: ping prints " (DUP!)" after a duplicated reply
and "+N duplicates" in its statistics; netrig-link cannot duplicate and this kernel lacks
netem, so DUP_OUTPUT below is ping-loopback.txt with those edits.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from netrig.exp.execute.runner import _LinkRecorder, queue_rows
from netrig.exp.kinds.base import KEY_ENV, flow_key, keyed_env, server_lifetime_s
from netrig.exp.kinds.perf import perf_argv, server_argv
from netrig.exp.kinds.perfjson import parse as parse_perf_json
from netrig.exp.kinds.ping import ping_argv, ping_count
from netrig.exp.kinds.registry import Outcome
from netrig.exp.spec.model import FlowSpec
from netrig.exp.spec.scenario import loads_scenario

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "flows"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def spec(kind: str, **kw) -> FlowSpec:
    doc = {"kind": kind, "from": "h1", **({} if kind == "command" else {"to": "h2"}), **kw}
    return FlowSpec.model_validate(doc)


def outcome(kind: str, stdout: str, code: int = 0, planned_s: float = 1.0, start_s: float = 5.0,
            **kw) -> Outcome:
    o = Outcome("f", spec(kind, **kw), start_s, end_s=start_s + planned_s, code=code, stdout=stdout,
                planned_s=planned_s)
    o.parse()
    return o


# --- ping ------------------------------------------------------------------------------

def test_ping_on_loopback():
    o = outcome("ping", fixture("ping-loopback.txt"), planned_s=0.6, interval="0.2s")
    s = o.summary()
    assert s["status"] == "ok" and s["error"] == ""
    assert s["loss_pct"] == 0.0
    assert (s["rtt_ms_min"], s["rtt_ms_p50"], s["rtt_ms_p99"]) == (0.013, 0.020, 0.022)
    assert s["rtt_ms_mean"] == pytest.approx((0.013 + 0.022 + 0.020) / 3)
    # -D stamps wall time; the series counts from the flow's start (5 s into the run)
    ts = [round(r["t"], 6) for r in o.series()]
    assert ts == [5.0, round(5 + 0.201043, 6), round(5 + 0.404745, 6)]


def test_ping_loss_comes_from_its_statistics_line():
    # 12 replies of 20 requests; planned for 2 s at 0.05 s (40 requests) but ping says it
    # sent 20: the loss is 40 %, not 1 - 12/40.
    o = outcome("ping", fixture("ping-loss.txt"), planned_s=2.0, interval="0.05s")
    s = o.summary()
    assert s["status"] == "ok", s
    assert s["loss_pct"] == pytest.approx(40.0)
    assert len(o.series()) == 12 and s["rtt_ms_min"] == 4.06 and s["rtt_ms_mean"] == pytest.approx(4.713, abs=0.005)  # ping says avg 4.713


def test_ping_with_every_reply_lost():
    o = outcome("ping", fixture("ping-all-lost.txt"), code=1, planned_s=0.15, interval="0.05s")
    s = o.summary()
    assert s["status"] == "ok" and s["loss_pct"] == 100.0 and s["rtt_ms_mean"] is None
    assert o.series() == []


def dup_output() -> str:
    lines = []
    for line in fixture("ping-loopback.txt").splitlines():
        lines.append(line.replace(" 3 received,", " 3 received, +3 duplicates,"))
        if "icmp_seq=" in line:
            lines.append(line.replace(" ms", " ms (DUP!)"))
    return "\n".join(lines) + "\n"


def test_a_duplicate_reply_is_not_a_reply():
    text = dup_output()
    assert text.count("(DUP!)") == 3 and "+3 duplicates" in text
    s = outcome("ping", text, planned_s=0.6, interval="0.2s").summary()
    assert s["loss_pct"] == 0.0, s  # not -100 %
    assert s["rtt_ms_mean"] == pytest.approx((0.013 + 0.022 + 0.020) / 3)


def test_a_ping_stopped_before_its_statistics_counts_what_was_planned():
    # Stopped mid-line: the partial line is left out; 3 planned at 0.2 s in 0.6 s.
    replies = [x for x in fixture("ping-loopback.txt").splitlines() if "icmp_seq=" in x]
    text = "\n".join(replies[:2]) + "\n" + replies[2][:40]
    o = outcome("ping", text, code=-15, planned_s=0.6, interval="0.2s")
    o.error = None
    o.code = 0
    o.parse()
    s = o.summary()
    assert s["status"] == "ok", s
    assert s["loss_pct"] == pytest.approx(100 / 3)


def test_the_flows_ping_count_survives_floating_point():
    assert ping_count(0.6, 0.2) == 3 and ping_count(10, 0.1) == 100 and ping_count(0.05, 1) == 1
    argv = ping_argv(spec("ping", interval="0.2s"), "10.0.0.2", 0.6)
    assert argv[argv.index("-c") + 1] == "3"


@pytest.mark.parametrize("line,what", [
    ("[1795492659.302079] 64 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=1.2.3 ms", "time=1.2.3"),
    ("[1.2.3] 64 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=0.1 ms", "[1.2.3]"),
])
def test_an_unreadable_reply_line_is_named(line, what):
    text = fixture("ping-loopback.txt").replace("\n", "\n" + line + "\n", 2)
    o = outcome("ping", text, planned_s=0.6, interval="0.2s")
    s = o.summary()
    assert s["status"] == "error"
    assert s["error"].startswith("ping output line 2 is not a reply netrig can read: "), s["error"]
    assert what in s["error"]


def test_ping_that_exits_0_without_a_reply_is_an_error():
    s = outcome("ping", "", code=0, planned_s=0.6, interval="0.2s").summary()
    assert s["status"] == "error" and s["error"] == "ping exited 0 but printed no reply: ''"
    assert s["loss_pct"] is None


def test_ping_that_fails_says_its_exit_code_and_stderr():
    o = Outcome("f", spec("ping"), 0.0, code=2, stderr="ping: connect: Network is unreachable\n",
                planned_s=1.0)
    o.parse()
    assert o.summary()["error"] == "ping exited 2: ping: connect: Network is unreachable"


# --- netrig-perf -J ------------------------------------------------------------------------

def test_tcp_document():
    o = outcome("tcp", fixture("perf-tcp.json"), rate="20Mbit")
    s = o.summary()
    assert s["status"] == "ok" and s["error"] == ""
    assert s["throughput_bps"] == 20037760.36690235 and s["bytes"] == 2621440 and s["seconds"] == 1.0466
    assert s["retransmits"] == 0 and s["retrans_pct"] == 0.0
    doc = json.loads(fixture("perf-tcp.json"))
    mean_rtts = [x["sender"]["mean_rtt"] for x in doc["end"]["streams"]]
    assert s["rtt_ms_mean"] == pytest.approx(sum(mean_rtts) / len(mean_rtts) / 1e3)
    series = o.series()
    intervals = [r for r in series if "bps" in r]
    assert [round(r["t"] - 5, 6) for r in intervals] == [x["sum"]["end"] for x in doc["intervals"]]
    assert len(series) - len(intervals) == len(doc["netrig"]["tcp_info"]) > 0
    assert [r["t"] for r in series] == sorted(r["t"] for r in series)


def test_udp_document():
    doc = json.loads(fixture("perf-udp.json"))
    s = outcome("udp", fixture("perf-udp.json"), rate="5Mbit").summary()
    rcv, snd = doc["end"]["sum_received"], doc["end"]["sum_sent"]
    assert s["status"] == "ok"
    # the rate the datagrams came out at, over the time they were sent
    assert s["throughput_bps"] == rcv["bytes"] * 8 / snd["seconds"]
    assert 4.9e6 < s["throughput_bps"] < 5.1e6
    assert (s["loss_pct"], s["packets"]) == (rcv["lost_percent"], rcv["packets"])
    assert s["sent_bps"] == snd["bits_per_second"]


def test_probe_document():
    o = outcome("probe", fixture("perf-probe.json"))
    p = json.loads(fixture("perf-probe.json"))["end"]["probe"]
    s = o.summary()
    assert s["status"] == "ok"
    assert (s["rtt_ms_mean"], s["rtt_ms_p50"], s["loss_pct"]) == (p["rtt_ms"]["mean"], p["rtt_ms"]["p50"], 0.0)
    assert len(o.series()) == len(p["samples"]) == 21


def test_fetch_document():
    o = outcome("fetch", fixture("perf-fetch.json"), size="20KB")
    s = o.summary()
    assert s["status"] == "ok"
    assert (s["fetches"], s["fetches_failed"]) == (5, 0)
    assert s["fetch_s_mean"] == pytest.approx(0.0921874e-3) and s["fetch_s_max"] == pytest.approx(0.22793e-3)
    assert [round(r["fetch_s"] * 1e3, 6) for r in o.series()] == [0.099859, 0.036104, 0.036374, 0.06067,
                                                                  0.22793, 0.4088]


def test_netrig_perfs_own_error_is_the_flows_error():
    o = Outcome("f", spec("tcp"), 0.0, code=1, stdout=fixture("perf-refused.json"),
                stderr="netrig-perf: error - unable to connect to server\n", planned_s=1.0)
    o.parse()
    s = o.summary()
    assert s["status"] == "error"
    assert s["error"] == ("netrig-perf: unable to connect to server 127.0.0.1:9: Connection refused "
                          "(os error 111)")


@pytest.mark.parametrize("name,kind", [("perf-tcp.json", "tcp"), ("perf-udp.json", "udp"),
                                       ("perf-probe.json", "probe"), ("perf-fetch.json", "fetch")])
@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9, 0.999])
def test_a_truncated_document_is_an_error_not_an_exception(name, kind, keep):
    text = fixture(name)
    cut = text[:int(len(text) * keep)]
    o = Outcome("f", spec(kind), 0.0, code=-9, stdout=cut, stderr="Killed\n", planned_s=1.0)
    o.parse()
    s = o.summary()
    assert s["status"] == "error"
    assert s["error"].startswith(f"netrig-perf's JSON output is cut short ({len(cut)} bytes; it ends "), s["error"]
    assert s["error"].endswith("; its stderr ends: Killed")
    assert o.series() == []


@pytest.mark.parametrize("text,error", [
    ("", "no JSON from netrig-perf: its output is empty"),
    ("[1, 2]", "netrig-perf's JSON: the document is an array, not an object"),
    ("null", "netrig-perf's JSON: the document is null, not an object"),
    ('{"end": []}', "netrig-perf's JSON: end is an array, not an object"),
    ('{"end": {"sum_received": "x"}}', "netrig-perf's JSON: end.sum_received is a string, not an object"),
    ('{"end": {"sum_sent": {"retransmits": "3"}}}',
     "netrig-perf's JSON: end.sum_sent.retransmits is a string, not a number"),
    ('{"end": {"streams": [1]}}', "netrig-perf's JSON: end.streams[0] is a number, not an object"),
    ('{"intervals": [{"sum": {"end": true}}]}',
     "netrig-perf's JSON: intervals[0].sum.end is a boolean, not a number"),
    ('{"netrig": {"tcp_info": [{"snd_wnd": 1}]}}', "netrig-perf's JSON: netrig.tcp_info[0] has no 't'"),
    ('{"end": {"probe": {"samples": [[1, 2]], "samples_columns": ["seq", "rtt_ms"]}}}',
     "netrig-perf's JSON: end.probe.samples_columns lacks t"),
    ('{"end": {"rr": {"samples": [["0.1", 2]]}}}',
     "netrig-perf's JSON: end.rr.samples[0][0] is a string, not a number"),
    ('{"end": {}} trailing', "netrig-perf's JSON output is not valid JSON at line 1 column 13 (Extra data)"),
])
@pytest.mark.parametrize("kind", ["tcp", "udp", "probe", "fetch"])
def test_a_malformed_document_is_named_not_raised(text, error, kind):
    o = Outcome("f", spec(kind), 0.0, code=0, stdout=text, planned_s=1.0)
    o.parse()
    s = o.summary()
    assert s["status"] == "error"
    assert s["error"].startswith(error), s["error"]
    assert o.series() == []


def test_parse_perf_json_returns_the_document():
    doc, problem = parse_perf_json(fixture("perf-tcp.json"))
    assert problem is None and doc == json.loads(fixture("perf-tcp.json"))


# --- the runner's queue monitor ----------------------------------------------------------------

def test_queue_rows_from_real_stats_lines():
    lines = fixture("link-stats.jsonl").splitlines()
    samples = [json.loads(x) for x in lines if '"dir"' in x and '"totals"' not in x]
    t0 = samples[2]["t"]
    rows = queue_rows(lines, t0, 0.1, [(0, "shell", {"a_to_b"})])
    want = [x for x in samples if x["dir"] == "a_to_b" and t0 <= x["t"] <= t0 + 0.1]
    assert len(rows) == len(want) > 3
    assert [r["t"] for r in rows] == [round(x["t"] - t0, 6) for x in want]
    assert rows[0] == {"monitor": 0, "kind": "queue", "t": 0.0, "link": "shell", "dir": "a_to_b",
                       "queue_packets": want[0]["queue_packets"], "queue_bytes": want[0]["queue_bytes"],
                       "sojourn_ms": want[0]["sojourn_mean_us"] / 1e3,
                       "sojourn_max_ms": want[0]["sojourn_max_us"] / 1e3,
                       "drops_overflow": 0, "drops_aqm": 0, "lost": 0, "ecn_marks": 0,
                       "rate_bps": want[0]["rate_bps"], "dequeued": want[0]["dequeued"]}
    both = queue_rows(lines, 0, 1e9, [(0, "shell", {"a_to_b", "b_to_a"}), (1, "other", {"a_to_b"})])
    assert len(both) == len(samples) and {r["monitor"] for r in both} == {0}


def test_queue_rows_skip_what_is_not_a_sample():
    good = fixture("link-stats.jsonl").splitlines()[2]
    t = json.loads(good)["t"]
    lines = [good[:50], "[1, 2]", "3", '{"t": "soon", "link": "shell", "dir": "a_to_b"}',
             '{"t": %s, "link": "shell", "dir": "a_to_b", "sojourn_mean_us": "x"}' % t, good]
    rows = queue_rows(lines, t, 1.0, [(0, "shell", {"a_to_b"})])
    assert [r["t"] for r in rows] == [0.0]


# --- the receiver's intervals (the server's -J document, fetched by the client) -------------

@pytest.mark.parametrize("kind", ["tcp", "udp"])
def test_the_receivers_intervals_come_from_the_server_output(kind):
    doc = json.loads(fixture(f"perf-{kind}-server-output.json"))
    o = outcome(kind, fixture(f"perf-{kind}-server-output.json"))
    assert o.summary()["status"] == "ok"
    rows = o.series()
    received = [r for r in rows if "recv_bps" in r]
    theirs = doc["server_output_json"]["intervals"]
    assert len(received) == len(theirs) == 2
    # at the flow's -i (0.5 s), from the flow's start (5 s into the run)
    assert [round(r["t"] - 5, 6) for r in received] == [x["sum"]["end"] for x in theirs]
    assert [r["recv_bps"] for r in received] == [x["sum"]["bits_per_second"] for x in theirs]
    assert all(x["sum"]["sender"] is False for x in theirs)
    # the sender's own intervals stay what they were: bps, not recv_bps
    sent = [r for r in rows if "bps" in r]
    assert [round(r["t"] - 5, 6) for r in sent] == [x["sum"]["end"] for x in doc["intervals"]]
    assert not any("recv_bps" in r for r in sent)


def test_a_server_output_of_the_wrong_shape_is_an_error_not_a_crash():
    doc = json.loads(fixture("perf-tcp-server-output.json"))
    doc["server_output_json"]["intervals"][1] = 7
    o = outcome("tcp", json.dumps(doc))
    assert o.summary()["error"] == ("netrig-perf's JSON: server_output_json.intervals[1] is a "
                                    "number, not an object")
    assert o.series() == []


def test_the_flow_asks_the_server_for_its_intervals_at_its_own_interval():
    # iperf3's client does not send its -i: the server reports at its own, so both get it
    server = server_argv(5301, 0.1, 5.0, "10.0.0.2", 95.0)
    assert server[1:] == ["-s", "-1", "-p", "5301", "-B", "10.0.0.2", "-J", "-i", "0.1", "--handshake-timeout", "5",
                          "--exit-after", "95"]
    client = perf_argv(spec("tcp", rate="10Mbit"), "10.0.0.2", 5301, 3.0, 0.1, 100)
    assert client[client.index("-i") + 1] == "0.1" and "--get-server-output" in client
    assert "--get-server-output" in perf_argv(spec("udp"), "10.0.0.2", 5301, 3.0, 0.1, None)
    # -R: the client receives, and its own intervals are the receiver's
    reverse = perf_argv(spec("tcp", reverse=True), "10.0.0.2", 5301, 3.0, 0.1, 100)
    assert "-R" in reverse and "--get-server-output" not in reverse
    for kind, kw in (("probe", {}), ("fetch", {})):
        assert "--get-server-output" not in perf_argv(spec(kind, **kw), "10.0.0.2", 5301, 3.0, 0.1, None)


# --- the runner's link recording (series/link-stats.jsonl) --------------------------------------

RECORDED = """\
name: recorded
topology:
  nodes: {h1: host, r1: router, h2: host, h3: host}
  links:
    - {a: h1, b: r1, rate: 10Mbit, delay: 5ms}
    - {a: r1, b: h2, delay: 5ms}
    - {a: r1, b: h3, b_to_a: {rate: 2Mbit}}
duration: 1s
flows:
  bulk: {kind: tcp, from: h1, to: h2}
monitors:
  - {kind: queue, link: h1-r1, dir: b_to_a}
"""


class _FakeLab:
    """What _LinkRecorder reads of a Network: its lab's state and netrig-link's stats."""

    def __init__(self, lab_dir: Path, now: float, control: str | None = "link.sock") -> None:
        self.state = type("State", (), {"dir": lab_dir, "control": control})()
        self.now = now

    def link_stats(self) -> dict:
        return {"links": [{"link": "h1-r1", "a_to_b": {"t": self.now}}], "lateness": {}}


def _stats_line(t: float, link: str, d: str, rate: float) -> str:
    v = json.loads(fixture("link-stats.jsonl").splitlines()[2])
    return json.dumps({**v, "t": t, "link": link, "dir": d, "rate_bps": rate})


def test_every_rated_direction_is_recorded_once_without_a_queue_monitor_for_it(tmp_path):
    point = loads_scenario(RECORDED).points[0]
    lines = [_stats_line(round(10 + k * 0.01, 6), link, d, 1e6 * k)
             for k in range(300) for link in ("h1-r1", "r1-h2", "r1-h3") for d in ("a_to_b", "b_to_a")]
    (tmp_path / "link-stats.jsonl").write_text("\n".join(lines) + "\n" + lines[0][:40])
    rec = _LinkRecorder(_FakeLab(tmp_path, 11.0), point, point.spec.monitors)
    rec.mark()
    queues, links = rec.collect(1.0)
    # the queue monitor keeps its direction, in its own file's rows
    assert {(r["monitor"], r["link"], r["dir"]) for r in queues} == {(0, "h1-r1", "b_to_a")}
    # link-stats: each other direction with a rate, once (r1-h2 has none; r1→h3 has one)
    assert {(r["link"], r["dir"]) for r in links} == {("h1-r1", "a_to_b"), ("r1-h3", "b_to_a")}
    assert all("monitor" not in r and r["kind"] == "queue" for r in links)
    mine = [r for r in links if r["link"] == "h1-r1"]
    assert [r["t"] for r in mine] == [round(k * 0.01, 6) for k in range(101)]  # 1 s at 100 Hz, from the start
    assert mine[0]["rate_bps"] == 1e6 * 100 and mine[-1]["rate_bps"] == 1e6 * 200
    assert set(mine[0]) == set(queues[0]) - {"monitor"}


def test_nothing_is_recorded_without_netrig_link(tmp_path):
    point = loads_scenario(RECORDED).points[0]
    (tmp_path / "link-stats.jsonl").write_text(_stats_line(11.0, "h1-r1", "a_to_b", 1.0) + "\n")
    rec = _LinkRecorder(_FakeLab(tmp_path, 11.0, control=None), point, point.spec.monitors)
    rec.mark()
    assert rec.collect(1.0) == ([], [])
    kernel = loads_scenario(RECORDED.replace("topology:\n", "topology:\n  backend: kernel\n")
                            .split("monitors:")[0]).points[0]  # no queue to watch in the kernel
    rec = _LinkRecorder(_FakeLab(tmp_path, 11.0), kernel, kernel.spec.monitors)
    assert rec.rated == []


def test_a_flows_server_gets_a_fresh_key_in_its_environment_a_bind_address_and_an_end():
    """The key never reaches a command line: not the server's, not the client's."""
    a, b = flow_key(), flow_key()
    assert a != b and len(a) == 64 and int(a, 16) >= 0
    assert keyed_env(a)[KEY_ENV] == a
    server = server_argv(5301, 1.0, 5.0, "10.0.0.2", 100.0)
    client = perf_argv(spec("tcp"), "10.0.0.2", 5301, 3.0, 1.0, None)
    assert all(a not in x for x in server + client)
    assert not any(x.startswith("--auth-key") for x in server + client)
    assert server[server.index("-B") + 1] == "10.0.0.2"
    # the flow's start, its client's limit and the grace
    late = spec("tcp", start="20s")
    assert server_lifetime_s(late, 63.0) == 20 + 63 + 60
