"""netrig.capture.report: netrig-analyze's JSON (documents made here) laid out as the
80-column table `netrig analyze FILE` prints, line for line."""

from __future__ import annotations

from typing import Any

import pytest
from netrig.capture import report
from netrig.capture.report import duration, interval, lines, pair, percent, rate, table

NONE = {"episodes": 0, "total_s": 0.0, "longest_s": 0.0, "open": False}
LEGEND = [
    "tcp: Wireshark's tcp.stream; from > to: the direction with more data (--json has",
    "both); retr: its data frames tcp.analysis.retransmission matches, in %; goodput:",
    "bytes delivered once over its data's duration; rtt: ack_rtt; zwin: time the",
    "receiver's window was 0 (>: still at the end); losses: the shortest interval",
    "holding half its retransmitted and lost segments, from the capture's start",
]


def direction(payload: int = 0, data: int = 0, retx: int = 0, goodput: float | None = None,
              rtt: tuple[float, float] | None = None, zwin: dict[str, Any] | None = None,
              half: tuple[float, float] | None = None) -> dict[str, Any]:
    """One direction as netrig-analyze writes it (the keys the table reads)."""
    return {
        "payload_bytes": payload, "data_packets": data, "retransmitted_data_packets": retx,
        "goodput_bps": goodput, "duplicate_ack": 0, "out_of_order": 0,
        "rtt": {"n": 5, "p50_s": rtt[0], "p99_s": rtt[1]} if rtt else {"n": 0},
        "zero_window_time": zwin or NONE,
        "losses": ({"events": 4, "densest_half": {"start_s": half[0], "end_s": half[1], "events": 2}}
                   if half else {"events": 0}),
    }


def stream(i: int, a: str, b: str, a_to_b: dict[str, Any], b_to_a: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"stream": i, "a": a, "b": b, "first_frame": i + 1,
            "directions": {"a_to_b": a_to_b, "b_to_a": b_to_a or direction()}}


def doc(streams: list[dict[str, Any]], packets: int = 5000, **totals: int) -> dict[str, Any]:
    return {"file": {"packets": packets}, "totals": totals, "streams": streams}


def test_a_lab_capture_line_for_line():
    # Stream 0: 5 of 1000 data frames resent, 9.41 Mbit/s, ack_rtt 41.2/120.4 ms, the
    # receiver's window closed 300 ms in all, half its losses in 3.1-4.5 s. Stream 1: a
    # handshake only. Stream 2: the server (b) sent the data, 35 µs/1.2 ms.
    a = doc([
        stream(0, "10.0.0.1:40000", "10.0.1.2:5201",
               direction(1448000, 1000, 5, 9.41e6, (0.0412, 0.1204), half=(3.1, 4.5)),
               direction(zwin={"episodes": 2, "total_s": 0.3, "longest_s": 0.2, "open": False})),
        stream(1, "10.0.0.1:40002", "10.0.1.2:5201", direction()),
        stream(2, "10.0.1.2:80", "10.0.0.9:50000", direction(100, 1),
               direction(2000000, 2000, 0, 1.23e5, (3.5e-5, 0.0012))),
    ], data_packets=3000, retransmitted_data_packets=30, duplicate_ack=12, out_of_order=2)
    assert lines(a, ["cap.pcapng"]) == [
        "TCP analysis (as Wireshark's tcp.analysis counts it): 5000 frames, 3 TCP",
        "streams, 2 with data",
        "tcp from > to                     retr     goodput  rtt p50/p99   zwin    losses",
        "  0 10.0.0.1:40000>10.0.1.2:5201 0.5 % 9.41 Mbit/s    41/120 ms 300 ms 3.1-4.5 s",
        "  2 10.0.0.9:50000>10.0.1.2:80     0 %  123 kbit/s 35 µs/1.2 ms      -         -",
        "all: 3000 data segments, 30 retransmitted (1 %), 12 dup ACKs, 2 out of order",
        *LEGEND,
    ]


def test_the_receivers_zero_window_still_open_at_the_end_and_a_single_loss():
    a = doc([stream(7, "10.0.0.1:1", "10.0.0.2:2", direction(10, 1, 1, None, half=(12.5, 12.5)),
                    direction(zwin={"episodes": 1, "total_s": 53.3, "longest_s": 53.3, "open": True}))])
    assert lines(a)[2:4] == [
        "tcp from > to                            retr goodput rtt p50/p99    zwin losses",
        "  7 10.0.0.1:1>10.0.0.2:2               100 %       -           - >53.3 s 12.5 s",
    ]


def test_the_capture_hosts_address_is_starred_when_the_endpoints_do_not_fit():
    # safari.pcap (nDPI's tests): every stream ends at 192.168.1.178.
    a = doc([stream(i, f"192.168.1.178:{55262 + i}", "146.48.58.18:443", direction(),
                    direction(10**6, 700, 1 if i else 0, 6.27e6, (3.6e-5, 0.0012), half=(1.56, 1.56) if i else None))
             for i in range(2)])
    assert lines(a)[2:6] == [
        "tcp from > to                          retr     goodput  rtt p50/p99 zwin losses",
        "  0 146.48.58.18:443>*:55262            0 % 6.27 Mbit/s 36 µs/1.2 ms    -      -",
        "  1 146.48.58.18:443>*:55263         0.14 % 6.27 Mbit/s 36 µs/1.2 ms    - 1.56 s",
        "*: 192.168.1.178 (in 2 of the streams above)",
    ]


def test_long_ipv6_endpoints_and_extreme_numbers_stay_within_80_columns():
    def one(k: int) -> dict[str, Any]:
        zwin = {"episodes": 1, "total_s": 4.2 * 10.0 ** (k - 2), "longest_s": 0, "open": k % 2 == 0}
        return stream(100_000 + k, f"2001:db8:aaaa:bbbb:cccc:dddd:eeee:{k:04x}:{40000 + k}",
                      f"2001:db8:1111:2222:3333:4444:5555:{k + 7:04x}:443",
                      direction(1000 * (k + 1), 10, k % 3, 1.234 * 10 ** (3 * k), (7.7 * 10.0 ** -(k + 1), 3.3 * 10 ** k),
                                half=(0.1 * k, 1.5 * 10 ** k)),
                      direction(zwin=zwin))

    out = lines(doc([one(k) for k in range(9)], packets=10**12), ["a.pcap"])
    assert max(len(line) for line in out) == 80
    assert out[2:5] == [
        "   tcp from > to             retr     goodput    rtt p50/p99      zwin    losses",
        "100000 …000:40000>…:0007:443  0 %  1.23 bit/s     0.77/3.3 s  >42.0 ms 0.0-1.5 s",
        "100001 …001:40001>…:0008:443 10 % 1.23 kbit/s     77 ms/33 s    420 ms    0-15 s",
    ]
    assert out[11] == "100008 …008:40008>…:000f:443 20 % >999 Tbit/s 0.01 µs/>999 d   >48.6 d    >999 h"


def test_a_thousand_streams_show_the_40_busiest_and_say_how_to_see_the_rest():
    many = [stream(i, f"10.{i // 250}.{i % 250}.1:{40000 + i}", f"192.168.200.{i % 200}:443",
                   direction((i * 7919) % 1000 * 1000 + 1, 10, 0, 1e6, (0.02, 0.03)))
            for i in range(1000)]
    out = lines(doc(many, packets=123456, data_packets=10000), ["/a/long/path/to/the/capture/file.pcapng"])
    assert all(len(line) <= 80 for line in out)
    rows = out[3:43]
    shown = [int(r.split()[0]) for r in rows]
    busiest = sorted(range(1000), key=lambda i: -((i * 7919) % 1000))[:40]
    assert shown == sorted(busiest)
    assert out[43:45] == ["... and 960 more streams with less data (the 40 busiest are above): netrig",
                          "analyze FILE --json shows every stream"]
    short = lines(doc(many[:41]), ["cap.pcapng"])
    assert "netrig analyze cap.pcapng --json shows every stream" in " ".join(short)


def test_a_capture_without_tcp_data():
    assert lines(doc([stream(0, "10.0.0.1:1", "10.0.0.2:2", direction())])) == [
        "TCP analysis (as Wireshark's tcp.analysis counts it): 5000 frames, 1 TCP stream,",
        "0 with data",
        "  (no TCP data in the capture)",
        *LEGEND,
    ]


def test_frames_of_a_link_type_not_decoded_are_named():
    d = doc([stream(0, "10.0.0.1:1", "10.0.0.2:2", direction())])
    d["file"]["undecoded_link_types"] = [{"link_type": 178, "name": "JUNIPER_ETHERNET", "frames": 3},
                                         {"link_type": 4242, "name": None, "frames": 1}]
    assert lines(d)[2] == ("frames not decoded (not analysed): 3 of link type 178 (JUNIPER_ETHERNET), 1 of "
                           "link type 4242")[:len(lines(d)[2])]
    assert "link type 4242" in " ".join(lines(d)) and all(len(x) <= 80 for x in lines(d))


@pytest.mark.parametrize("bps, text", [
    (None, "-"), (0, "0 bit/s"), (0.4, "0.40 bit/s"), (999.4, "999 bit/s"), (999.6, "1.00 kbit/s"),
    (12345, "12.3 kbit/s"), (9.996e6, "10.0 Mbit/s"), (9.41e6, "9.41 Mbit/s"), (2e15, ">999 Tbit/s"),
])
def test_rates(bps, text):
    assert rate(bps) == text


@pytest.mark.parametrize("s, text", [
    (None, "-"), (0, "0 s"), (3.5e-5, "35.0 µs"), (0.0412, "41.2 ms"), (0.9996, "1.00 s"),
    (59.99, "1.00 min"), (3599, "1.00 h"), (3000, "50.0 min"), (108000, "1.25 d"), (1.8e8, ">999 d"),
])
def test_durations(s, text):
    assert duration(s) == text


@pytest.mark.parametrize("a, b, text", [
    (0.0412, 0.1204, "41/120 ms"), (3.5e-5, 0.0012, "35 µs/1.2 ms"), (0.21, 4.9, "0.21/4.9 s"),
    (0.001, 0.001, "1/1 ms"), (0, 0.1, "0/100 ms"), (-1, -1, "<=0 s"),
])
def test_rtt_pairs(a, b, text):
    assert pair(a, b) == text


@pytest.mark.parametrize("a, b, text", [
    (3.1, 4.5, "3.1-4.5 s"), (0, 1.2, "0.0-1.2 s"), (0.001, 70, "0-70 s"), (1000, 3500, "1000-3500 s"),
    (3500, 3700, "0.97-1.03 h"), (5, 5, "5.00 s"), (5.0, 5.002, "5.00 s"), (0, 0, "0 s"),
    (0.25, 0.5, "250-500 ms"), (10.859, 11.5648, "10.9-11.6 s"), (120, 125, "120-125 s"),
    (0, 1.5e8, ">999 h"),
])
def test_loss_intervals(a, b, text):
    assert interval(a, b) == text


@pytest.mark.parametrize("part, whole, text", [
    (0, 0, "-"), (0, 5, "0 %"), (5, 5, "100 %"), (1, 3, "33 %"), (1, 200, "0.5 %"), (1, 200000, "<0.01 %"),
    (9999, 10000, ">99 %"), (3, 1000, "0.3 %"),
])
def test_percentages(part, whole, text):
    assert percent(part, whole) == text


def test_table_is_the_lines_as_text():
    a = doc([stream(0, "10.0.0.1:1", "10.0.0.2:2", direction(10, 1))])
    assert table(a) == "\n".join(lines(a)) + "\n"
    assert report.main_direction(a["streams"][0]) == "a_to_b"
