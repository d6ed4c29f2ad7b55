"""Scenario events (no network): the schema's errors at FILE:LINE, sweeping an event's
time, the timeline theory sees, outages measured on synthetic series, the events in
results.csv and the headline, route-monitor lines, and the marks figures draw."""

from __future__ import annotations

import json
import math
import types

import pytest
from netrig.exp.analysis import events as evs
from netrig.exp.execute import runner
from netrig.exp.spec.model import ScenarioError
from netrig.exp.spec.scenario import loads_scenario

BASE = """\
name: ev
topology:
  nodes: {h1: host, r1: router, r2: router, h2: host}
  links:
    - [h1, r1]
    - {a: r1, b: r2, delay: 5ms}
    - [r2, h2]
duration: 6s
flows:
  p: {kind: probe, from: h1, to: h2, interval: 10ms}
  bulk: {kind: tcp, from: h1, to: h2}
events:
  - {at: 2s, link: r1-r2, down: true}
  - {at: 4s, link: r1-r2, up: true}
"""


def problems(text: str, **kw) -> list[str]:
    with pytest.raises(ScenarioError) as e:
        loads_scenario(text, "s.yaml", **kw)
    return e.value.problems


# Schema.
def test_events_load_in_time_order_with_their_labels():
    s = loads_scenario(BASE + "  - {at: 1s, link: r1-r2, set: {delay: 20ms}}\n"
                       "  - {at: 3s, node: h1, command: 'ip route', timeout: 2s}\n", "s.yaml")
    p = s.points[0]
    tl = evs.timeline(p.spec, p.topology, p.length_s)
    assert [(x.spec.at_s, x.label) for x in tl] == [
        (1.0, "r1-r2 delay=20ms"), (2.0, "r1-r2 down"), (3.0, "h1: ip route"), (4.0, "r1-r2 up")]
    down = tl[1].event
    assert (down.action, down.link, down.back_s) == ("down", "r1-r2", 4.0)


@pytest.mark.parametrize("event, line, message", [
    ("{at: 7s, link: r1-r2, down: true}", 15,
     "s.yaml:15: events[2].at: 7s is not before the scenario's end (6 s, when the last flow ends)"),
    ("{at: 1s, link: h1-r1, down: true}", 15,
     "s.yaml:15: events[2].link: link h1-r1 is not emulated by netrig-link, so it cannot be taken "
     "down: give the link a delay, rate or loss, or emulated: true"),
    ("{at: 1s, router: r1, stop: true}", 15,
     "s.yaml:15: events[2].router: router r1 runs no FRR (static routes)"),
    ("{at: 1s, router: h1, stop: true}", 15,
     "s.yaml:15: events[2].router: 'h1' is a host, not a router: only a router's daemons stop"),
    ("{at: 1s, router: r9, stop: true}", 15, "s.yaml:15: events[2].router: no router named 'r9'"),
    ("{at: 1s, link: r1-r2, down: true, up: true}", 15,
     "s.yaml:15: events[2]: 2 actions (down, up): give one of down: true"),
    ("{at: 1s, link: r1-r2}", 15, "s.yaml:15: events[2]: no action: give one of"),
    ("{at: 1s, link: r1-r2, down: false}", 15, "s.yaml:15: events[2].down: write down: true"),
    ("{at: 1s, link: r1-r9, carrier: down}", 15,
     "s.yaml:15: events[2].link: no link 'r1-r9' in the topology; did you mean r1-r2?"),
    ("{at: 1s, link: r1-r2, set: {delya: 2ms}}", 15,
     "s.yaml:15: events[2].set: link r1-r2: delya: not a key of a link direction; did you mean delay?"),
    ("{at: 1s, node: s9, command: x}", 15, "s.yaml:15: events[2].node: no node named 's9'"),
    ("{at: 1s, link: r1-r2, dwn: true}", 15, "s.yaml:15: events[2].dwn: unknown key; did you mean down?"),
    ("{at: 1s, link: r1-r2, carrier: sideways}", 15, "s.yaml:15: events[2].carrier:"),
    ("{at: 1s, link: r1-r2, up: true, timeout: 2s}", 15,
     "s.yaml:15: events[2].timeout: only a command event takes timeout"),
    ("{at: 1s, router: r1, down: true}", 15,
     "s.yaml:15: events[2].router: a down event acts on a link, not a router"),
])
def test_event_problems_name_file_line_and_key(event, line, message):
    got = problems(BASE + f"  - {event}\n")
    assert any(p.startswith(message) for p in got), got


def test_an_events_time_can_be_swept_and_set_and_a_wrong_one_is_blamed_on_its_item():
    s = loads_scenario(BASE + "sweep:\n  events.0.at: [1s, 3s]\n", "s.yaml")
    assert [p.spec.events[0].at_s for p in s.points] == [1.0, 3.0]
    assert loads_scenario(BASE, "s.yaml", sets=["events.1.at=5s"]).points[0].spec.events[1].at_s == 5.0
    got = problems(BASE + "sweep:\n  events.0.at: [1s, 9s]\n")
    assert got[0].startswith("s.yaml:16: sweep.events.0.at[1]: '9s': events[0].at: 9s is not before")
    assert problems(BASE, sets=["events.5.at=1s"]) == [
        "--set events.5.at=1s: no event 5 (the scenario has 2: events.0 to events.1)"]


# Measuring an outage.
def probes(hole_from: float | None, hole_to: float | None, end: float = 6.0, every: float = 0.01):
    out, t = [], 0.0
    while t < end:
        lost = hole_from is not None and hole_from <= t < hole_to
        out.append((round(t, 4), None if lost else 20.0))
        t += every
    return out


def test_a_probe_with_a_hole_after_the_event_measures_the_hole():
    got, ok = evs.probe_outage(probes(2.0, 5.5), 2.0)
    assert ok and got == pytest.approx(3.5, abs=0.011)
    # Packets on the wire when the link went silent (sent up to an RTT before) are its.
    got, _ = evs.probe_outage(probes(1.985, 5.5), 2.0)
    assert got == pytest.approx(3.5, abs=0.011)


def test_no_hole_is_no_outage_and_an_earlier_hole_is_not_the_events():
    assert evs.probe_outage(probes(None, None), 2.0) == (0.0, True)
    assert evs.probe_outage(probes(1.5, 2.5), 2.0) == (0.0, True)  # began 0.5 s before
    # A hole starting after the next event is the next event's, not this one's.
    assert evs.probe_outage(probes(2.0, 3.0), 1.5, until=2.0) == (0.0, True)
    # Not back by the end: the outage so far, and said so.
    got, ok = evs.probe_outage(probes(2.0, 99.0), 2.0)
    assert not ok and got == pytest.approx(4.0, abs=0.011)


def test_a_bulk_flow_outage_runs_to_its_first_non_empty_interval():
    t = [0.5 * k for k in range(1, 13)]
    bps = [10e6 if not 2.0 < x <= 5.0 else 0.0 for x in t]
    got, ok = evs.bulk_outage(t, bps, 2.0)
    assert ok and got == pytest.approx(3.0)
    # A gap in the report intervals counts as empty.
    kept = [(x, y) for x, y in zip(t, bps) if not 2.0 < x <= 5.0]
    got, _ = evs.bulk_outage([x for x, _ in kept], [y for _, y in kept], 2.0)
    assert got == pytest.approx(3.0)
    assert evs.bulk_outage(t, [10e6] * len(t), 2.0) == (0.0, True)


def test_routing_stable_is_the_last_change_before_the_next_event():
    changes = [{"t": 1.0}, {"t": 5.2}, {"t": 6.1}, {"t": 9.0}]
    assert evs.routing_stable(changes, 2.0, 8.0) == pytest.approx(4.1)
    assert evs.routing_stable(changes, 9.5) is None


def test_measure_puts_theory_beside_each_flow_and_judges_it():
    s = loads_scenario(BASE, "s.yaml")
    p = s.points[0]
    tl = evs.timeline(p.spec, p.topology, p.length_s)
    fired = [{"index": 0, "what": "r1-r2 down", "planned_s": 2.0, "actual_s": 2.0, "ok": True},
             {"index": 1, "what": "r1-r2 up", "planned_s": 4.0, "actual_s": 4.0, "ok": True}]
    flows = {"p": evs.FlowSeries("probe", "h1", "h2", probes(2.0, 4.0), resolution_s=0.01)}
    from netrig.theory import outage
    from netrig.topo.plan import make_plan

    plan = make_plan(p.topology)
    got = evs.measure(tl, fired, flows, [],
                      lambda ev, a, b, both: outage.expect(plan, ev, a, b, both))
    down = got[0]["outage"]["p"]
    assert down["outage_s"] == pytest.approx(2.0, abs=0.011)
    assert (down["theory_low_s"], down["theory_high_s"], down["verdict"]) == (2.0, 2.0, "within")
    assert "static" in down["theory"] or "no other way" in down["theory"]
    assert got[0]["routing_stable_s"] is None
    assert got[1]["outage"]["p"]["outage_s"] == 0.0
    assert "s; theory 2 s (no other way" in evs.sentence("p", down)


def test_a_failed_event_is_noted():
    run = {"run": "p000-r00", "events": [{"what": "r3 stopped", "planned_s": 2.0, "ok": False,
                                          "error": "no such router"}]}
    assert evs.note(run) == ("run p000-r00: event(s) failed (the run went on): r3 stopped at 2 s: "
                             "no such router")
    assert evs.note({"events": [{"ok": True}]}) == ""


# The runner's pieces that need no network.
def test_route_monitor_lines_become_changes_on_the_flows_clock():
    import datetime as dt

    t0 = dt.datetime(2026, 11, 24, 7, 4, 47).timestamp()
    text = ("[2026-11-24T07:04:47.739094] local 10.9.0.1 dev lo table local proto kernel scope host\n"
            "[2026-11-24T07:04:48.500000] 10.8.0.0/24 nhid 20 proto ospf metric 20\n"
            "\tnexthop via 10.0.0.2 dev eth0 weight 1\n"
            "[2026-11-24T07:04:49.250000] Deleted 10.8.0.0/24 via 10.9.0.2 dev eth1 proto ospf\n")
    got = runner.route_changes(text, "r1", t0)
    assert [(c["t"], c["change"]) for c in got] == [(1.5, "add"), (2.25, "delete")]
    assert got[0]["route"].endswith("nexthop via 10.0.0.2 dev eth0 weight 1")


class FakeNet:
    """What fire() calls on a Network: links by name, carrier, routing, set, run."""

    def __init__(self, topo):
        self.topo = topo
        self.calls = []
        self.state = types.SimpleNamespace(control="/nonexistent/control")

    def link_carrier(self, name, up):
        self.calls.append(("carrier", name, up))

    def stop_routing(self, r):
        self.calls.append(("stop", r))

    def start_routing(self, r):
        self.calls.append(("start", r))

    def set_link(self, name, dir=None, **params):
        self.calls.append(("set", name, dir, params))

    def __getitem__(self, node):
        def run(cmd, timeout):
            self.calls.append(("run", node, cmd, timeout))
            return types.SimpleNamespace(code=3, stdout="x" * 600, stderr="boom")
        return types.SimpleNamespace(run=run)


ROUTED = BASE.replace("r1: router, r2: router", "r1: {kind: router, ospf: true}, r2: {kind: router, ospf: true}")


def test_fire_calls_what_each_event_names(monkeypatch):
    s = loads_scenario(ROUTED.replace("events:\n", "events:\n"
                                      "  - {at: 1s, link: r1-r2, carrier: down}\n"
                                      "  - {at: 1s, router: r2, stop: true}\n"
                                      "  - {at: 1s, router: r2, start: true}\n"
                                      "  - {at: 1s, link: r1-r2, set: {delay: 9ms}, dir: a_to_b}\n"
                                      "  - {at: 1s, node: h1, command: 'exit 3', timeout: 2s}\n"),
                       "s.yaml")
    p = s.points[0]
    net = FakeNet(p.topology)
    sent = []
    monkeypatch.setattr(runner.userspace, "request", lambda ctl, req: sent.append(req) or {})
    out = [runner.fire(net, ev) for ev in p.spec.events]
    assert net.calls[:4] == [("carrier", "r1-r2", False), ("stop", "r2"), ("start", "r2"),
                             ("set", "r1-r2", "a_to_b", {"delay": "9ms"})]
    assert net.calls[4] == ("run", "h1", "exit 3", 2.0)
    assert out[4]["ok"] is False and out[4]["exit_code"] == 3 and out[4]["error"].startswith("exit code 3")
    assert len(out[4]["output_tail"]) == 500
    assert sent == [{"cmd": "down", "link": "r1-r2"}, {"cmd": "up", "link": "r1-r2"}]


def test_the_firer_records_times_and_a_failure_without_stopping(monkeypatch):
    import threading
    import time

    s = loads_scenario(BASE, "s.yaml")
    p = s.points[0]

    def boom(ctl, req):
        if req["cmd"] == "down":
            raise runner.userspace.LinkDaemonError("netrig-link: no link")
        return {}

    monkeypatch.setattr(runner.userspace, "request", boom)
    spec = p.spec.model_copy(update={"events": [e.model_copy(update={"at": f"{0.05 * (i + 1)}s"})
                                                for i, e in enumerate(p.spec.events)]})
    f = runner._EventFirer(FakeNet(p.topology), evs.timeline(spec, p.topology, 6.0),
                           time.monotonic(), threading.Event())
    f.start()
    f.join()
    recs = sorted(f.records, key=lambda r: r["planned_s"])
    assert [(r["what"], r["ok"]) for r in recs] == [("r1-r2 down", False), ("r1-r2 up", True)]
    assert recs[0]["error"] == "netrig-link: no link"
    for r in recs:
        assert r["actual_s"] >= r["planned_s"] - 1e-3 and r["took_s"] >= 0


def test_converge_is_called_when_the_lab_has_it():
    s = loads_scenario(ROUTED, "s.yaml")
    asked = []
    net = types.SimpleNamespace(converge=lambda timeout: asked.append(timeout) or 1.234)
    assert runner.converge(net, s.points[0]) == {"converge_s": 1.234}
    assert asked == [3 * 40 + 30]  # 3 × OSPF's dead (40 s by default) + 30 s
    assert "not waited" in runner.converge(types.SimpleNamespace(), s.points[0])["converge"]


# Results: CSV, headline, figure marks.
def _results_dir(tmp_path):
    from netrig.exp.record import files as rec
    out = tmp_path / "r"
    (out / "runs" / "p000-r00" / "series").mkdir(parents=True)
    (out / "scenario.yaml").write_text(BASE)
    (out / "meta.json").write_text(json.dumps({"scenario": "ev", "sweep_keys": [],
                                               "points": [{"index": 0, "params": {}}]}))
    rows = [{"t": round(0.01 * k, 3), "rtt_ms": 20.0} for k in range(600) if not 200 <= k < 400]
    rec.write_jsonl(out / "runs" / "p000-r00" / "series" / "p.jsonl", rows)
    run = {"run": "p000-r00", "point": 0, "rep": 0, "seed": 1, "params": {}, "status": "ok",
           "flows": {"p": {"kind": "probe", "from": "h1", "to": "h2", "start_s": 0.0, "end_s": 6.0,
                           "summary": {"status": "ok", "rtt_ms_p50": 20.0}}},
           "events": [{"index": 0, "what": "r1-r2 down", "planned_s": 2.0, "actual_s": 2.001, "ok": True,
                       "took_s": 0.001, "outage": {"p": {"outage_s": 2.0, "recovered": True,
                                                         "resolution_s": 0.01, "theory_low_s": 2.0,
                                                         "theory_high_s": 2.0, "verdict": "within",
                                                         "theory": "static routes"}}},
                      {"index": 1, "what": "r1-r2 up", "planned_s": 4.0, "actual_s": 4.0, "ok": False,
                       "error": "boom", "outage": {}}]}
    rec.write_json(out / "runs" / "p000-r00" / "run.json", run)
    return out


def test_events_in_results_csv_and_the_headline(tmp_path):
    import csv

    from netrig.exp.analysis import results as res
    from netrig.exp.render import headline, table_csv
    out = _results_dir(tmp_path)
    table_csv.write_csv(out)
    rows = list(csv.DictReader((out / "results.csv").open()))
    ev = [r for r in rows if r["event"]]
    assert [(r["event"], r["flow"], r["metric"], r["measured"], r["expected"], r["verdict"])
            for r in ev] == [("r1-r2 down", "p", "outage_s", "2", "2", "within"),
                             ("r1-r2 up", "", "", "", "", "")]
    assert ev[1]["event_ok"] == "False" and ev[1]["event_error"] == "boom"
    text = headline.events_table(res.load(out))
    assert "2.00 s  r1-r2 down" in text and "within" in text and "r1-r2 up FAILED" in text
    assert max(len(x) for x in text.splitlines()) <= 80


def test_every_time_series_figure_marks_the_events(tmp_path):
    from netrig.exp.render.figures import make_figures

    out = _results_dir(tmp_path)
    drawn = [f for f in make_figures(out, ["png"]) if f.kind == "timeseries"]
    assert drawn
    for f in drawn:
        assert [(m.t, m.label, m.outage_s, m.failed) for m in f.marks] == [
            (2.001, "r1-r2 down", 2.0, False), (4.0, "r1-r2 up", 0.0, True)]
        assert "vertical line" in f.caption
    assert not math.isnan(drawn[0].marks[0].t)


def test_a_figure_marks_each_event_with_its_outage_and_theorys_window():
    from netrig.exp.analysis import series
    run = {"events": [
        {"what": "r21-r22 down", "planned_s": 5.0, "actual_s": 5.001, "ok": True, "outage": {
            "bulk": {"outage_s": 5.0, "theory_low_s": 3.0, "theory_high_s": 4.05},
            "probe": {"outage_s": 3.5, "theory_low_s": 3.0, "theory_high_s": 4.05}}},
        {"what": "h1: date", "planned_s": 1.0, "ok": False}]}
    early, down = series.marks(run, ["probe"])
    assert (early.t, early.failed, early.outage_s, early.theory_s) == (1.0, True, 0.0, None)
    assert (down.t, down.label, down.outage_s, down.theory_s) == (5.001, "r21-r22 down", 3.5, (3.0, 4.05))
    assert series.marks(run)[1].outage_s == 5.0  # a figure of no flow of its own: the longest


def test_a_joint_sweep_key_is_said_by_the_paths_it_sets():
    from netrig.exp.analysis.words import describe
    from netrig.exp.execute import progress

    params = {"topology.routing.ospf.hello": "1s", "events.0.down,events.0.carrier": [None, "down"]}
    assert progress.words(params) == "topology routing ospf hello 1s, event 0's carrier down"
    assert describe(params, list(params)) == "hello=1s, carrier=down"
    assert describe({**params, "events.0.down,events.0.carrier": [True, None]}, list(params)) == "hello=1s, down=True"


def test_a_tcp_flows_window_is_stretched_by_its_retransmission_backoff():
    from netrig.theory import outage

    w = outage.Window(3.0, 4.05, "OSPF dead 4 s, hello 1 s, SPF 0 ms")
    tcp = outage.after_backoff(w)
    assert (tcp.low_s, tcp.high_s) == (3.0, 2 * 4.05 + outage.RTO_S)
    assert tcp.why.startswith(w.why) and "backoff" in tcp.why
    # Nothing cut, or cut until the end: nothing to stretch.
    assert outage.after_backoff(outage.Window(0.0, 0.0, "off the path")).high_s == 0.0
    assert math.isinf(outage.after_backoff(outage.Window(2.0, math.inf, "static")).high_s)
    # measure() gives a tcp flow the stretched window and a probe the path's.
    s = loads_scenario(BASE, "s.yaml")
    p = s.points[0]
    tl = evs.timeline(p.spec, p.topology, p.length_s)
    fired = [{"index": 0, "what": "r1-r2 down", "planned_s": 2.0, "actual_s": 2.0, "ok": True}]
    flows = {"p": evs.FlowSeries("probe", "h1", "h2", probes(2.0, 5.5), resolution_s=0.01),
             "t": evs.FlowSeries("tcp", "h1", "h2", intervals=([1.0, 2.0, 7.0, 8.0], [1e6, 1e6, 1e6, 1e6]),
                                 resolution_s=0.5)}
    got = evs.measure(tl[:1], fired, flows, [], lambda ev, a, b, both: w)[0]["outage"]
    assert (got["p"]["theory_high_s"], got["t"]["theory_high_s"]) == (4.05, 2 * 4.05 + outage.RTO_S)
