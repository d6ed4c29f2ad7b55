"""Capture monitors and captures: the scenario's checks (file:line: key), the options'
bounds, and what a capture asks dumpcap for (no network)."""

from __future__ import annotations

import pytest
from netrig.capture import lab as cap
from netrig.exp.preflight.checks import preflight
from netrig.exp.spec.model import ScenarioError
from netrig.exp.spec.scenario import loads_scenario

BASE = """\
name: demo
topology:
  nodes: {h1: host, s0: switch, h2: host}
  links:
    - [h1, s0]
    - {a: s0, b: h2, rate: 1.5Mbit, delay: 10ms, queue: 100}
duration: 10s
flows:
  bulk: {kind: tcp, from: h1, to: h2, cc: cubic}
monitors:
  - {kind: capture, link: s0-h2, dir: a_to_b, filter: tcp, snaplen: 128, size: 100MB, files: 4}
"""


def problems(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as e:
        loads_scenario(text, "s.yaml")
    return e.value.problems


def test_a_capture_monitor_takes_its_keys():
    s = loads_scenario(BASE, "s.yaml")
    (m,) = s.points[0].spec.monitors
    assert (m.kind, m.link, m.dir, m.filter, m.snaplen, m.files) == ("capture", "s0-h2", "a_to_b", "tcp", 128, 4)
    s = loads_scenario(BASE.replace("link: s0-h2, dir: a_to_b", "node: h1"), "s.yaml")
    assert s.points[0].spec.monitors[0].node == "h1"


@pytest.mark.parametrize("change, said", [
    ("link: s0-h9", "s.yaml:11: monitors[0].link: no link 's0-h9' in the topology"),
    ("link: s0-h2, node: h1", "s.yaml:11: monitors[0]: a capture needs link: (a link's name, or a-b), "
                              "or node: (and iface: if it has several)"),
    ("node: h1, dir: b_to_a", "s.yaml:11: monitors[0].dir: a node's interface is captured both ways "
                 "(name a link to capture one direction)"),
    ("node: h7, dir: both", "s.yaml:11: monitors[0].node: no node named 'h7'"),
])
def test_a_capture_of_something_the_topology_lacks_is_named(change, said):
    text = BASE.replace("link: s0-h2, dir: a_to_b", change)
    assert said in problems(text)


def test_a_filter_tcpdump_cannot_compile_is_refused_with_tcpdumps_words():
    with pytest.raises(ScenarioError) as e:  # (asked of this machine's tcpdump by `netrig run`)
        preflight(loads_scenario(BASE.replace("filter: tcp", "filter: 'tcp prot 80'"), "s.yaml"))
    (said,) = e.value.problems
    assert said.startswith("s.yaml:11: monitors[0].filter: ") and "tcp prot 80" in said


def test_capture_keys_belong_to_captures_and_files_must_hold_something():
    text = BASE.replace("monitors:\n", "monitors:\n  - {kind: queue, link: s0-h2, filter: udp}\n")
    assert "s.yaml:11: monitors[0].filter: filter: is a capture's key, not a queue monitor's" in problems(text)
    (said,) = problems(BASE.replace("size: 100MB", "size: 20KB"))
    assert said == "s.yaml:11: monitors[0].size: 20KB over 4 files leaves under 10 kB a file"
    (said,) = problems(BASE.replace("snaplen: 128", "snaplen: 0"))
    assert said.startswith("s.yaml:11: monitors[0].snaplen:")


def test_options_are_bounded():
    with pytest.raises(cap.CaptureError, match="snaplen: 0"):
        cap.Options(snaplen=0)
    with pytest.raises(cap.CaptureError, match="files: 0"):
        cap.Options(files=0)
    with pytest.raises(cap.CaptureError, match="leaves under 10 kB"):
        cap.Options(size=30_000, files=4)


def where(dir: str = "both", emulated: bool = False) -> cap.Where:
    way = {"a_to_b": "ether src 02:00:00:00:00:01", "b_to_a": "inbound"}.get(dir)
    return cap.Where("h1-s0", "link h1-s0", "h1-s0", dir, None, "nsx-h1", "eth0", emulated, way)


def argv(w: cap.Where, opt: cap.Options) -> list[str]:
    return cap.Capture(None, w, None, "0-h1-s0", opt)._dumpcap_argv("/r/0-h1-s0.pcapng")


def test_dumpcap_captures_one_direction_at_the_a_end_with_the_users_filter():
    a = argv(where("a_to_b"), cap.Options(filter="tcp port 5201", snaplen=96))
    assert a[:5] == ["ip", "netns", "exec", "nsx-h1", "dumpcap"]
    assert a[a.index("-i") + 1] == "eth0" and a[a.index("-s") + 1] == "96"
    assert a[a.index("-f") + 1] == "ether src 02:00:00:00:00:01 and (tcp port 5201)"
    assert a[a.index("-w") + 1] == "/r/0-h1-s0.pcapng"
    b = argv(where("b_to_a"), cap.Options())
    assert b[b.index("-f") + 1] == "inbound" and "-b" not in b
    assert b[b.index("-a") + 1] == "filesize:1000000"  # one file: stop at the bound (kB)
    both = argv(where("both"), cap.Options(size=200_000_000, files=4))
    assert "-f" not in both and "-a" not in both
    assert [both[i + 1] for i, x in enumerate(both) if x == "-b"] == ["filesize:50000", "files:4"]


def test_a_rings_files_are_found_in_order_and_nothing_else():
    present = ["0-l_00001_20261124101500.pcapng", "0-l_00002_20261124101501.pcapng", "0-l.pcapng.bak",
               "0-lx.pcapng", "1-l.pcapng", "0-l.dumpcap.log"]
    assert cap.capture_files("0-l", present) == present[:2]
    assert cap.capture_files("0-l", ["0-l.1.pcapng", "0-l.pcapng"]) == ["0-l.1.pcapng", "0-l.pcapng"]


def _dir(data=0, retr=0, dup=0, rtt_n=0, rtt_sum=0.0):
    return {"data_packets": data, "retransmission": retr, "fast_retransmission": retr,
            "spurious_retransmission": 0, "out_of_order": 0, "lost_segment": 0,
            "duplicate_ack": dup, "zero_window": 0, "rtt": {"n": rtt_n, "sum_s": rtt_sum}}


def _stream(n, client, server, first, fwd, back):
    return {"stream": n, "a": client, "b": server, "first_frame": first,
            "directions": {"a_to_b": fwd, "b_to_a": back}}


def test_a_flows_data_streams_leave_out_its_control_connection_and_other_flows():
    from types import SimpleNamespace

    from netrig.capture import flows as capflows

    srv = "10.0.0.2:5201"
    a = {"streams": [
        _stream(1, "10.0.0.1:40002", srv, 9, _dir(1000, 10, 0, 4, 0.08), _dir(0, 0, 30)),
        _stream(0, "10.0.0.1:40001", srv, 1, _dir(3, 1), _dir(2)),  # control: first, left out
        _stream(2, "10.0.0.1:40003", srv, 12, _dir(500, 5, 0, 1, 0.02), _dir(0, 0, 7)),
        _stream(3, "10.0.0.1:40009", "10.0.0.2:5202", 2, _dir(700, 70), _dir()),  # another flow
    ]}
    got = capflows.flow_figures(a, srv, reverse=False)
    assert (got["capture_segments"], got["capture_retransmissions"], got["capture_dup_acks"]) == (1500, 15, 37)
    assert got["retrans_pct_capture"] == pytest.approx(1.0) and got["capture_streams"] == [1, 2]
    assert got["capture_rtt_ms_mean"] == pytest.approx(20.0)
    # --reverse: the server sends, the client ACKs
    back = capflows.flow_figures(a, srv, reverse=True)
    assert (back["capture_segments"], back["capture_dup_acks"]) == (0, 0)
    assert capflows.flow_figures(a, "10.0.0.9:5201", reverse=False) is None
    flows = {"bulk": SimpleNamespace(kind="tcp", to="h2", src="h1", reverse=False),
             "rtt": SimpleNamespace(kind="ping", to="h2", src="h1", reverse=False)}
    none = {"streams": []}
    found = capflows.per_flow([(0, None, none), (1, "h2", a), (2, "h1", a)], flows, {"bulk": 5201},
                              lambda n: "10.0.0.2")
    assert set(found) == {"bulk"} and found["bulk"]["capture_monitor"] == 2  # the sender's view


def test_a_flows_goodput_and_zero_window_time_add_up_over_its_data_streams():
    from netrig.capture import flows as capflows

    srv = "10.0.0.2:5201"

    def data(goodput):
        return {**_dir(100, 1), "goodput_bps": goodput}

    def acks(closed_s):
        return {**_dir(), "zero_window_time": {"episodes": 1, "total_s": closed_s, "longest_s": closed_s,
                                               "open": False}}

    a = {"streams": [_stream(0, "10.0.0.1:40001", srv, 1, _dir(3, 1), _dir(2)),
                     _stream(1, "10.0.0.1:40002", srv, 9, data(4e6), acks(0.25)),
                     _stream(2, "10.0.0.1:40003", srv, 12, data(5e6), acks(0.5))]}
    got = capflows.flow_figures(a, srv, reverse=False)
    assert (got["capture_goodput_bps"], got["capture_zero_window_s"]) == (9e6, 0.75)
    back = capflows.flow_figures(a, srv, reverse=True)  # the server sent no data
    assert (back["capture_goodput_bps"], back["capture_zero_window_s"]) == (None, 0.0)
