"""The seed experiments' example scenarios: each sweep expands to the seed's cases, and
theory for each case is the seed's physics (no network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from netrig.exp.analysis import series, why
from netrig.exp.analysis.results import load
from netrig.exp.analysis.words import case_name, describe
from netrig.exp.grade.expect import expectations, in_flight, slow_start
from netrig.exp.grade.verdict import versus
from netrig.exp.kinds.perf import perf_argv, server_argv
from netrig.exp.kinds.registry import Outcome
from netrig.exp.record.files import read_jsonl, write_jsonl
from netrig.exp.render import figures
from netrig.exp.render.headline import Line, cells
from netrig.exp.spec.model import FlowSpec
from netrig.exp.spec.scenario import load_scenario
from netrig.theory.connect import arp_tries, connect_chance, syn_times
from test_report import make_results

ROOT = Path(__file__).resolve().parents[2]
GOODPUT = 1448 / 1514  # TCP payload per wire byte on a 1500-byte MTU link (as theory counts)


def example(name: str, quick: bool = False):
    return load_scenario(ROOT / "examples" / f"{name}.yaml", quick=quick)


def case_of(point) -> str:
    (key, value), = point.params.items()
    return case_name(key, value) or ""


def pairs(point) -> dict[str, tuple[str, str, int]]:
    """The point's TCP flows: name -> (from, to, connections), flows left out missing."""
    return {n: (f.src, f.to, f.parallel) for n, f in point.spec.flows.items()
            if f.kind == "tcp" and f.count}


def test_002_multiplex_runs_every_case_of_test_cases_4_and_5():
    s = example("002-multiplex")
    got = {case_of(p)[:2]: pairs(p) for p in s.points}
    assert got == {
        "4a": {"a": ("h1", "h4", 1), "b": ("h2", "h5", 1)},
        "4b": {"a": ("h1", "h4", 1), "b": ("h2", "h5", 1), "c": ("h3", "h6", 1)},
        "4c": {"a": ("h1", "h4", 1), "b": ("h7", "h9", 1)},
        "4d": {"a": ("h1", "h4", 1), "b": ("h8", "h9", 1)},
        "5:": {"a": ("h1", "h4", 2), "b": ("h2", "h5", 1), "c": ("h3", "h6", 1)},
    }
    for p in s.points:  # a ping beside every pair, between the pair's own hosts
        pings = {(f.src, f.to) for f in p.spec.flows.values() if f.kind == "ping" and f.count}
        assert pings == {(a, b) for a, b, _ in pairs(p).values()}
    assert len(example("002-multiplex", quick=True).points) == 5


def test_002_multiplex_theory_is_each_cases_max_min_share():
    shares = {"4a": {"a": 15, "b": 15}, "4b": {"a": 10, "b": 10, "c": 10},
              "4c": {"a": 15, "b": 15}, "4d": {"a": 30, "b": 20},
              "5:": {"a": 15, "b": 7.5, "c": 7.5}}
    for p in example("002-multiplex").points:
        e = expectations(p)
        for flow, mbit in shares[case_of(p)[:2]].items():
            assert e[flow].value == pytest.approx(mbit * 1e6 * GOODPUT, rel=1e-3), (case_of(p), flow)
        # ping: base RTT up to base + the queue where the pair's share is set
        base, top = (20, 40) if case_of(p).startswith("4d") else (60, 100)
        assert e["ping_b"].value == pytest.approx(base, abs=0.2)
        assert e["ping_b"].hi == pytest.approx(top, abs=0.6), case_of(p)


def test_a_case_named_by_a_joint_key_is_shown_by_its_name():
    key = "description,flows.b.count"
    assert describe({key: ["4a: h1-h4 & h2-h5", 0]}, [key]) == "4a: h1-h4 & h2-h5"
    assert describe({"x.kind,x.rate": ["udp", "1Mbit"]}, ["x.kind,x.rate"]) == "kind=udp, rate=1Mbit"
    assert case_name("flows.a.count", 1) is None


# 003, loss 50-100 %: time-outs are results, with theory beside them.
def perf_failed(message: str, **kw) -> Outcome:
    o = Outcome("bulk", FlowSpec.model_validate({"kind": "tcp", "from": "h1", "to": "h2", **kw}), 0.0,
                code=1, stdout=json.dumps({"start": {}, "intervals": [], "end": {}, "error": message}),
                planned_s=10.0)
    o.parse()
    return o


def test_a_flow_that_cannot_connect_is_a_time_out_not_a_failure():
    s = perf_failed("unable to connect to server 10.0.0.11:5301: Connection timed out (os error 110)",
                    connect_timeout="8s").summary()
    assert (s["status"], s["connected"], s["throughput_bps"]) == ("timed_out", False, 0)
    assert s["error"].startswith("never connected within its 8 s connect timeout (netrig-perf: unable")
    # ARP's requests lost as well: no neighbour, no route
    s = perf_failed("unable to connect to server 10.0.0.11:5301: No route to host (os error 113)").summary()
    assert (s["status"], s["connected"]) == ("timed_out", False)
    # connected, but the setup never got through
    s = perf_failed("the peer closed the control connection while waiting for the server to accept "
                    "the parameters").summary()
    assert (s["status"], s["connected"], s["throughput_bps"]) == ("timed_out", True, 0)
    assert s["error"].startswith("moved no data (netrig-perf: the peer closed")
    # a refusal is not a time-out: nothing listened
    s = perf_failed("unable to connect to server 127.0.0.1:9: Connection refused (os error 111)").summary()
    assert s["status"] == "error" and "connected" not in s


def test_the_client_and_server_wait_as_long_as_the_flows_connect_timeout():
    f = FlowSpec.model_validate({"kind": "tcp", "from": "h1", "to": "h2", "connect_timeout": "30s"})
    argv = perf_argv(f, "10.0.0.2", 5301, 20.0, 0.5, None)
    assert argv[argv.index("--connect-timeout") + 1] == "30000"
    server = server_argv(5301, 0.5, 30.0, "10.0.0.2", 95.0)
    assert server[server.index("--handshake-timeout") + 1] == "30"
    plain = perf_argv(FlowSpec.model_validate({"kind": "udp", "from": "h1", "to": "h2"}), "x", 1, 5, 1, None)
    assert plain[plain.index("--connect-timeout") + 1] == "5000"


def test_connect_chance_counts_arp_and_syn_tries_within_the_timeout():
    assert syn_times(0.04, 5.0) == [0.0, 1.0, 3.0]  # the answer to 7 s's comes after 5 s
    assert syn_times(10.0, 5.0) == [] and syn_times(10.0, 30.0) == [0.0, 1.0, 3.0, 7.0, 15.0]
    assert connect_chance(0.0, 0.0, 0.04, 5.0).chance == 1.0
    assert connect_chance(1.0, 0.0, 0.04, 5.0).chance == 0.0
    c = connect_chance(0.5, 0.0, 0.04, 5.0)
    # ARP answered at 0, 1 or 2 s, then 3, 3 or 2 SYN tries
    assert c.connected == pytest.approx(0.5 * (1 - 0.5**3) + 0.25 * (1 - 0.5**3) + 0.125 * (1 - 0.5**2))
    assert c.tries_mean == pytest.approx(2.0)
    falling = [connect_chance(p, 0.0, 0.04, 5.0).chance for p in (0.2, 0.5, 0.65, 0.8, 1.0)]
    assert falling == sorted(falling, reverse=True) and falling[2] < 0.5 < falling[1]
    assert connect_chance(0.0, 0.0, 10.0, 5.0).chance == 0.0  # the SYN-ACK comes after the timeout


def test_003_loss_high_theory_expects_time_outs_from_65_percent():
    by_loss = {p.params["links.h1-h2.a_to_b.loss"]: expectations(p)["bulk"] for p in example("003-loss-high").points}
    assert list(by_loss) == ["50%", "65%", "80%", "100%"]
    assert all(e.value == 0 for e in by_loss.values())  # every range starts at a time-out
    assert by_loss["50%"].limit == "loss (Mathis/Padhye)" and by_loss["50%"].hi > 0
    assert by_loss["65%"].limit == by_loss["80%"].limit == "time-out"
    assert by_loss["100%"].limit == "time-out" and by_loss["100%"].hi is None
    assert "a time-out (no data) is certain" in by_loss["100%"].detail
    assert by_loss["80%"].extra["connect_chance"] < by_loss["65%"].extra["connect_chance"] < 0.5
    # a time-out is within such theory; data beyond its top is not
    assert versus(0, 0.0, by_loss["65%"].hi).verdict == "within"
    assert versus(0, 0.0, None).verdict == "within" and versus(5.0, 0.0, None).verdict == ""
    assert versus(2 * by_loss["65%"].hi, 0.0, by_loss["65%"].hi).verdict == "above"


def test_the_headline_says_timed_out():
    line = Line("loss=80%", "bulk", "throughput_bps", [0.0, 0.0], 0.0, 395e3, 2, 0, timed_out=2)
    assert cells(line)[2:4] == ["timed out (2/2)", "0–395 kbit/s"]
    some = Line("loss=50%", "bulk", "throughput_bps", [0.0, 40e3], 0.0, 500e3, 2, 0, timed_out=1)
    assert cells(some)[2].endswith("kbit/s (1 timed out)")


# 003, RTT 5 and 10 s: a connect timeout long enough, ARP patient enough, slow start.
def test_slow_start_rounds_of_a_long_rtt():
    # 10 s RTT, a 155.6 KB window (Linux's of -w 125KB): rounds of 14.5, 29, 58, 116 KB,
    # then 155.6 KB per RTT from 40 s; the receiver counts over 70 s (its clock runs an
    # RTT longer than the sender's 60 s); the last round (sent at 50 s) may come in after
    # the end message: two runs got 528 496 B (all six rounds) and 372 848 B (five)
    lo, hi, open_at = slow_start(155648 * 8 / 10, 10.0, 1448, 0.0, 60.0)
    assert open_at == 40.0
    assert hi == pytest.approx(528496 * 8 / 70) and lo == pytest.approx(372848 * 8 / 70)
    # a short RTT: slow start is over in a few rounds, before omit's end, and the receiver
    # counts the data of 8.04 s over 8.04 s: the rate (the last RTT's data, 0.5 %, aside)
    lo, hi, open_at = slow_start(25e6, 0.04, 1448, 2.0, 10.0)
    assert open_at < 0.3 and hi == pytest.approx(25e6) and lo == pytest.approx(25e6, rel=0.01)
    # RTT 1 s, 7 s measured after 5 s omitted (003-delay's 500 ms point): the rate, as a
    # run measured (1.087 MB sent in 7 s, 1.243 MB received over 8 s); no omit: 7/8 of it
    assert slow_start(1.239e6, 1.0, 1448, 5.0, 12.0)[1] == pytest.approx(1.239e6)
    assert slow_start(1.239e6, 1.0, 1448, 0.0, 7.0)[1] < 7 / 8 * 1.239e6


def test_003_delay_long_theory_and_its_time_out():
    pts = {p.spec.flows["bulk"].connect_timeout + "/" + str(p.topology.links[0].direction(0).delay_s): p
           for p in example("003-delay-long").points}
    assert list(pts) == ["30s/2.5", "30s/5.0", "5s/5.0"]
    assert [case_of(p) for p in pts.values()] == ["RTT 5 s", "RTT 10 s", "RTT 10 s with a 5 s connect timeout"]
    pts = dict(zip(["2500ms/30s", "5s/30s", "5s/5s"], pts.values()))
    five, ten = (expectations(pts[k], windows={"bulk": 155648})["bulk"] for k in ("2500ms/30s", "5s/30s"))
    assert five.limit == ten.limit == "slow start"
    assert five.value < 155648 * 8 / 5 and ten.value < 155648 * 8 / 10  # below W/RTT: slow start's rounds
    # what a run moved: 1.46 MB, counted over 60 + 5 s, in theory's range
    assert five.value < 1.46e6 * 8 / 65 <= five.hi * 1.01
    assert ten.value == pytest.approx(372848 * 8 / 70, rel=0.01) and ten.hi == pytest.approx(528496 * 8 / 70, rel=0.01)
    late = expectations(pts["5s/5s"])["bulk"]
    assert (late.value, late.hi, late.limit) == (0.0, None, "time-out")
    # ARP asks long enough for a 10 s link (the runner sets it), and the connection is
    # made after ARP's round trip and the SYN's: 20 s, within 30 s
    assert arp_tries(0.04) == 3 and arp_tries(10.0) == 13
    assert connect_chance(0, 0, 10.0, 30.0, arp_rtt_s=10.0, arp_asks=13).chance == 1.0
    assert connect_chance(0, 0, 10.0, 15.0, arp_rtt_s=10.0, arp_asks=13).chance == 0.0
    assert connect_chance(0, 0, 10.0, 30.0, arp_rtt_s=10.0, arp_asks=3).chance == 0.0  # Linux's own 3


# 004: every connection's cwnd, and the bottleneck queue swept.
def test_every_connection_of_a_parallel_flow_has_its_own_cwnd_line(tmp_path):
    out = make_results(tmp_path / "r")
    runs = sorted((out / "runs").glob("p000-r0*"))
    for run in runs:  # a second connection, socket 5, beside socket 4
        rows = read_jsonl(run / "series" / "bulk.jsonl")
        rows += [{"t": 0.1 * k, "cwnd_bytes": 9000 + 100 * k, "rtt_ms": 25.0, "socket": 5} for k in range(1, 50)]
        write_jsonl(run / "series" / "bulk.jsonl", sorted(rows, key=lambda r: r["t"]))
    res = load(out)
    run = res.first_run(0)
    got = {tr.label: tr for tr in series.traces(res, run, "cwnd")}
    assert sorted(got) == ["bulk #1", "bulk #2"]
    assert got["bulk #2"].y[0] == pytest.approx(9.1) and got["bulk #1"].y[0] == pytest.approx(20.5)
    refs = {r.label: r.value for r in series.refs(res, run, "cwnd")}
    full = next(v for k, v in refs.items() if k.startswith("BDP + queue"))
    share = next(v for k, v in refs.items() if k.startswith("bulk's share per connection, 1/2"))
    assert share == pytest.approx(full / 2)
    # one connection: one line, named by the flow, as before
    assert [tr.label for tr in series.traces(res, res.first_run(1), "cwnd")] == ["bulk"]
    # two points share a cwnd figure (one per flow, not per connection); the point with
    # two connections has a figure of its own, a line each
    figures.make_figures(out, ["png"])
    drawn = {p.name for p in (out / "figures").glob("*.png")}
    assert "ts-cwnd-bulk-p000.png" in drawn and "ts-cwnd-bulk-connections-p000.png" in drawn
    assert not any(n.startswith("ts-cwnd-bulk-connections-p001") or "bulk_2" in n for n in drawn)


def test_004_bufferbloat_sweeps_the_queue_and_variants_watch_every_cwnd():
    s = example("004-bufferbloat")
    cases = [(p.params["links.s0-h2.aqm"], p.params["links.s0-h2.queue"]) for p in s.points]
    assert [q for _, q in cases] == [100, 20, 100, 20] and cases[0][0] == "droptail"
    hi = {q: expectations(p)["rtt"].hi for p in s.points for a, q in [cases[p.index]] if a == "droptail"}
    # a full drop-tail queue: 100 or 20 packets of 1514 bytes at 1.5 Mbit/s on top of the RTT
    assert hi[100] - hi[20] == pytest.approx(80 * 1514 * 8 / 1.5e6 * 1e3, rel=0.01)
    v = example("004-variants")
    assert [m.flow for m in v.points[0].spec.monitors if m.kind == "tcp_info"] == ["bulk"]
    assert {p.spec.flows["bulk"].parallel for p in v.points} == {1, 10}


def test_a_time_out_where_theory_expected_data_is_explained():
    ev = why.Evidence("bulk", "tcp", "throughput_bps", versus(0.0, 1e5), "loss (Mathis/Padhye)",
                      timed_out=["never connected within its 5 s connect timeout (...)"], runs=2,
                      connect_chance=0.7)
    said = why.time_outs(ev)
    assert said.startswith("It timed out in 1 of 2 runs (never connected within its 5 s")
    assert "a 70 % chance" in said
    assert why.time_outs(why.Evidence("bulk", "tcp", "throughput_bps", versus(0.0, 0.0, 1e5))) is None


# 003, window at the LAN's RTT: the window the kernel really had.
def test_003_window_lan_theory_uses_the_window_the_kernel_gave():
    pts = {p.params["flows.bulk.window"]: p for p in example("003-window-lan").points}
    assert list(pts)[:2] == ["0.124KB", "0.75KB"] and list(pts)[-1] == "1000KB"
    rtt = expectations(pts["1000KB"])["bulk"].extra["base_rtt_ms"]
    assert 0.6 < rtt < 0.7  # the seed's 0.637 ms
    assert expectations(pts["1000KB"])["bulk"].limit == "link"
    # -w 124 B: Linux made SO_RCVBUF 2304 B (its minimum) and the receiver advertised 2048 B,
    # one whole 1448-byte segment in flight per RTT
    e = expectations(pts["0.124KB"], windows={"bulk": 2048}, buffers={"bulk": (4608, 2304)})["bulk"]
    data_rtt = 1448 * 8 / e.value
    assert e.limit == "window (W/RTT)" and 0.7e-3 < data_rtt < 0.75e-3
    assert "for -w 124 B Linux gave SO_RCVBUF 2304 B, SO_SNDBUF 4608 B (doubled, and never below" in e.detail
    assert "of which 1448 B in whole segments in flight (Nagle)" in e.detail
    # Minshall's Nagle lets the 600-byte rest go once the last partial one is acknowledged:
    # up to the whole 2048 B per RTT (two runs: 14.9 and 18.2 Mbit/s)
    assert e.hi == pytest.approx(e.value * 2048 / 1448) and e.value < 14.9e6 * 1.1 and 18.2e6 < e.hi
    assert in_flight(1000, 1448) == 1000 and in_flight(6144, 1448) == 4 * 1448


def test_the_kernels_buffers_are_read_back_into_the_summary():
    doc = {"start": {"sock_bufsize": 124, "sndbuf_actual": 4608, "rcvbuf_actual": 2304},
           "intervals": [], "end": {"sum_received": {"bytes": 10, "bits_per_second": 8.0, "seconds": 10}}}
    o = Outcome("bulk", FlowSpec.model_validate({"kind": "tcp", "from": "h1", "to": "h2", "window": 124}),
                0.0, code=0, stdout=json.dumps(doc), planned_s=10.0)
    o.parse()
    s = o.summary()
    assert (s["sndbuf_bytes"], s["rcvbuf_bytes"]) == (4608, 2304)
    bad = Outcome("bulk", o.spec, 0.0, code=0, stdout=json.dumps({**doc, "start": [1]}), planned_s=1.0)
    bad.parse()
    assert "start is an array, not an object" in bad.error


# 000, real-time: datagram sizes and the web window, each against 3-12 bulk connections.
def test_000_realtime_sweeps_sizes_and_the_web_window_against_parallel_bulk():
    size = example("000-realtime-size")
    got = sorted({(p.spec.flows["video"].nbytes("length"), p.spec.flows["voice"].nbytes("length"),
                   p.spec.flows["bulk"].parallel) for p in size.points})
    assert got == sorted((v, a, n) for v, a in ((576, 80), (1000, 160), (1470, 320)) for n in (3, 6, 9, 12))
    for p in size.points:  # far below any share: each receives its whole rate
        e = expectations(p)
        assert e["video"].value == pytest.approx(128e3) and e["voice"].value == pytest.approx(8e3)
    web = {(p.params["flows.web.window"], p.params["flows.bulk.parallel"]): p for p in example("000-realtime-web").points}
    assert sorted({w for w, _ in web}) == ["128KB", "16KB", "32KB", "64KB"] and len(web) == 16
    assert all(p.spec.flows["bulk"].window == "85KB" for p in web.values())
    small, crowded = expectations(web["16KB", 3])["web"], expectations(web["128KB", 12])["web"]
    # -w 16KB (16000 B, 11 whole segments) at 120 ms: W/RTT ~1 Mbit/s, down to W/(RTT + a full queue)
    assert small.limit == "window (W/RTT)" and small.hi == pytest.approx(11 * 1448 * 8 / 0.1213, rel=0.01)
    assert small.value == pytest.approx(small.hi * 0.1213 / (0.1213 + 50 * 1514 * 8 / 10e6), rel=0.01)
    # 128 KB beside 12 connections: one 13th of the link
    assert crowded.limit == "fair share" and crowded.value == pytest.approx(10e6 / 13 * GOODPUT, rel=0.01)


def test_after_omit_intervals_and_tcp_info_keep_the_runs_clock():
    # netrig-perf's clock starts again after -O 2 (as iperf3's): its intervals after
    # the omitted ones, and its TCP_INFO samples, go on from 2 s, not back to 0
    iv = [{"sum": {"start": a, "end": a + 1.0, "bits_per_second": 1e6, "omitted": a < 2}} for a in (0.0, 1.0)]
    iv += [{"sum": {"start": a, "end": a + 1.0, "bits_per_second": 2e6, "omitted": False}} for a in (0.0, 1.0)]
    info = [{"t": t, "snd_cwnd_bytes": 1000 * k, "rtt_us": 20000, "socket": 4, "sender": True}
            for k, t in enumerate((0.5, 1.0, 1.5, 0.5, 1.0, 1.5))]
    doc = {"start": {}, "intervals": iv, "end": {"sum_received": {"bytes": 1, "seconds": 2}},
           "netrig": {"tcp_info": info}}
    o = Outcome("bulk", FlowSpec.model_validate({"kind": "tcp", "from": "h1", "to": "h2", "omit": "2s"}),
                10.0, code=0, stdout=json.dumps(doc), planned_s=4.0)
    o.parse()
    rows = o.series()
    assert [r["t"] for r in rows if "bps" in r] == [13.0, 14.0]
    cwnd = [(r["t"], r["cwnd_bytes"]) for r in rows if "cwnd_bytes" in r]
    assert cwnd == [(10.5, 0), (11.0, 1000), (11.5, 2000), (12.5, 3000), (13.0, 4000), (13.5, 5000)]
