"""netrig.capture.tcp and stevens on the hand-built captures of tests/fixtures/pcap.

The expected frame sets below are tshark 4.0.17's on the same files (research checked
each against Wireshark's rules); where tshark is installed each file is also compared
with it directly, field by field, through `-Y tcp.analysis.FIELD` itself."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from netrig.capture.stevens import FigureError, stevens_figure
from netrig.capture.tcp import CaptureFileError, analyze
from tsharkdiff import FIELDS, TSHARK, builder, differences, netrig_view, tshark_filter


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> dict[str, Path]:
    return builder().build_all(tmp_path_factory.mktemp("pcap"))


# tshark 4.0.17 on t.pcap (and the same packets in every other container and link type).
T_EXPECTED = {
    "retransmission": {6, 8, 22, 34, 40},
    "fast_retransmission": {22},
    "spurious_retransmission": {8},
    "duplicate_ack": {19, 20, 21},
    "out_of_order": {28, 37},
    "zero_window": {9},
    "lost_segment": {27, 33, 36, 39},
}
T_RTT_FRAMES = {2, 3, 7, 11, 12, 18, 24, 25, 30, 31}
T_VARIANTS = ("t.pcap", "t-us-be.pcap", "t-raw.pcap", "t-sll.pcap", "t-sll2.pcap", "t-vlan.pcap",
              "t-ipv6.pcap", "t-ng.pcapng", "t-6in4.pcap", "t.pcap.gz", "t-ng.pcapng.gz",
              *(f"t-{name}.pcap" for name in builder().LINKS))


@pytest.mark.parametrize("name", T_VARIANTS)
def test_every_container_and_link_type_gives_tsharks_flags(fixtures, name):
    doc = analyze(fixtures[name], frames=True)
    sets, rtt = netrig_view(doc)
    for field in FIELDS:
        assert sets[field] == T_EXPECTED.get(field, set()), (name, field)
    assert set(rtt) == T_RTT_FRAMES
    assert rtt[7] == pytest.approx(0.4)  # acks frame 5, the original, not its resend (6)
    assert doc["file"]["packets"] == 40
    assert [s["irtt_s"] for s in doc["streams"]] == [None, 0.02, 0.02, 0.02, None, None]


def test_rules_of_the_second_and_third_files(fixtures):
    sets, _ = netrig_view(analyze(fixtures["t2.pcap"], frames=True))
    assert sets["spurious_retransmission"] == {4}
    assert (sets["keep_alive"], sets["keep_alive_ack"], sets["window_update"]) == ({7}, {8}, {9})
    assert sets["zero_window"] == {10, 11, 13} and sets["duplicate_ack"] == {21, 22, 28, 29}
    assert (sets["zero_window_probe"], sets["zero_window_probe_ack"]) == ({12}, {13})
    assert sets["retransmission"] == {4, 15, 23, 30} and sets["fast_retransmission"] == {30}
    assert sets["ack_lost_segment"] == {16}
    sets, _ = netrig_view(analyze(fixtures["t3.pcap"], frames=True))
    assert sets["retransmission"] == {2} and sets["out_of_order"] == set()
    assert (sets["ack_lost_segment"], sets["window_full"]) == ({4}, {10})
    doc = analyze(fixtures["t4.pcap"], frames=True)
    sets, _ = netrig_view(doc)
    assert sets["retransmission"] == {2, 6} and sets["reused_ports"] == {10}
    assert sets["window_full"] == {14} and len(doc["streams"]) == 2


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
@pytest.mark.parametrize("name", sorted(builder().files()))
def test_each_fixture_equals_tshark(fixtures, name):
    doc = analyze(fixtures[name], frames=True)
    problems = differences(fixtures[name], doc)
    assert not problems, "\n".join(problems)


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
def test_frame_sets_equal_tsharks_display_filters(fixtures):
    # The literal form: one `tshark -Y tcp.analysis.FIELD` per field.
    for name in ("t.pcap", "t2.pcap"):
        sets, _ = netrig_view(analyze(fixtures[name], frames=True))
        for field in FIELDS:
            assert sets[field] == tshark_filter(fixtures[name], field), (name, field)


def test_pcapng_interfaces_are_named_and_selectable(fixtures):
    doc = analyze(fixtures["c.pcapng"], frames=True)
    assert [i["name"] for i in doc["file"]["interfaces"]] == ["veth-a", "veth-b"]
    assert doc["totals"]["retransmission"] == 1  # the second copy of the flow on veth-a
    one = analyze(fixtures["d.pcapng"], frames=True, interface=1)
    assert one["totals"]["packets"] == 1 and one["totals"]["retransmission"] == 0
    assert one["streams"][0]["first_frame"] == 2  # frames keep the file's numbering
    with pytest.raises(CaptureFileError, match=r"d\.pcapng: --interface 2: the file has 2 interface"):
        analyze(fixtures["d.pcapng"], interface=2)


def _pcap(link: int, records: list[bytes]) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, link)
    for r in records:
        out += struct.pack("<IIII", 1, 0, len(r), len(r)) + r
    return out


def test_a_truncated_file_names_the_file_and_offset(fixtures, tmp_path):
    data = fixtures["t.pcap"].read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:-10])
    with pytest.raises(CaptureFileError) as e:
        analyze(cut)
    last = len(data) - (16 + 154)  # the last record: 54 bytes of headers, 100 of payload
    assert str(e.value).startswith(f"{cut}: byte offset {last}: packet 40 cut short (144 of 154 bytes)")


def test_a_wrong_magic_is_refused_and_an_unknown_link_type_counted(fixtures, tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_bytes(b"hello, this is not a capture")
    with pytest.raises(CaptureFileError, match=r"notes\.txt: byte offset 0: not a pcap or pcapng file"):
        analyze(bad)
    usb = tmp_path / "usb.pcap"
    usb.write_bytes(_pcap(189, [b"\0" * 30, b"\0" * 30]))
    doc = analyze(usb)
    assert doc["file"]["undecoded_link_types"] == [{"link_type": 189, "name": "USB_LINUX", "frames": 2}]
    assert (doc["file"]["undecoded_frames"], doc["file"]["tcp_packets"], doc["streams"]) == (2, 0, [])
    # Beside an Ethernet interface: its frames are analysed, the USB ones counted.
    doc = analyze(fixtures["mixed.pcapng"], frames=True)
    assert doc["file"]["undecoded_link_types"] == [{"link_type": 189, "name": "USB_LINUX", "frames": 4}]
    assert (doc["file"]["packets"], doc["file"]["tcp_packets"], doc["file"]["link_types"]) == (44, 40, [1, 189])
    # A decodable link type's frames without TCP are not "undecoded".
    assert analyze(fixtures["t5.pcap"])["file"]["undecoded_frames"] == 0
    with pytest.raises(CaptureFileError, match="no such capture file"):
        analyze(tmp_path / "absent.pcap")


def test_gzip_captures_are_read_by_their_magic(fixtures, tmp_path):
    doc = analyze(fixtures["t.pcap.gz"])
    plain = fixtures["t.pcap"].stat().st_size
    assert (doc["file"]["compression"], doc["file"]["capture_bytes"]) == ("gzip", plain)
    assert doc["file"]["file_bytes"] == fixtures["t.pcap.gz"].stat().st_size
    assert analyze(fixtures["t.pcap"])["file"]["compression"] is None
    cut = tmp_path / "cut.pcap.gz"
    cut.write_bytes(fixtures["t.pcap.gz"].read_bytes()[:-20])
    with pytest.raises(CaptureFileError, match=r"cut\.pcap\.gz: byte offset \d+: the gzip-compressed data is damaged"):
        analyze(cut)


def test_a_tcp_header_quoted_in_an_icmp_error_is_found_but_not_analysed(fixtures):
    # tshark 4.0.17 on t5.pcap: frame 5 quotes frame 4's segment (stream 0, no tcp.len,
    # no flag: 6 is still the retransmission of 4); frame 8 quotes a SYN with a new ISN:
    # a new stream (1) that frames 9-10 then join, and tcp.analysis.reused_ports on 8;
    # frame 11 quotes 8 bytes of TCP: no stream.
    doc = analyze(fixtures["t5.pcap"], frames=True)
    sets, rtt = netrig_view(doc)
    assert (sets["retransmission"], sets["reused_ports"], sets["flags"]) == ({6}, {8}, {6, 8})
    assert set(rtt) == {2, 3, 7, 10}
    assert [s["first_frame"] for s in doc["streams"]] == [1, 8]
    assert doc["file"]["tcp_packets"] == 10


def test_series_and_the_stevens_figure(fixtures, tmp_path):
    doc = analyze(fixtures["t.pcap"], series=0.1)
    ser = doc["streams"][1]["series"]["a_to_b"]
    # Stream 1: five 100-byte segments (one resent as a fast retransmission).
    assert ser["segments"]["start"] == [1, 101, 201, 301, 401, 101]
    assert ser["segments"]["kind"][-1] == "fast_retransmission"
    assert sum(ser["throughput"]["bps"]) * 0.1 / 8 == pytest.approx(600)
    assert sum(ser["throughput"]["goodput_bps"]) * 0.1 / 8 == pytest.approx(500)
    assert ser["acks"]["ack"][-1] == 101
    png = stevens_figure(doc, 1, tmp_path / "stevens.png", title="stream 1")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(FigureError, match="no time series"):
        stevens_figure(analyze(fixtures["t.pcap"]), 1, tmp_path / "x.png")
    with pytest.raises(FigureError, match="no TCP stream 9"):
        stevens_figure(doc, 9, tmp_path / "x.png")


def test_bad_arguments_are_refused_before_running(fixtures):
    with pytest.raises(ValueError, match="series: the interval must be a positive number"):
        analyze(fixtures["t.pcap"], series=0)
    with pytest.raises(ValueError, match="interface: -1 is not an interface index"):
        analyze(fixtures["t.pcap"], interface=-1)


CRAFTED = Path(__file__).resolve().parents[2] / "crates/netrig-analyze/tests/fuzz/pcap/series-136-years.pcap"


def test_a_pcap_whose_packets_are_136_years_apart_is_refused_not_allocated():
    """Issue 24's 184-byte file: the Stevens graph's series (bins of 0.1 s) asked for
    343 GB and aborted netrig-analyze; it is a CaptureFileError that names the span and
    the bound, and the file without a series is still analysed."""
    assert CRAFTED.stat().st_size == 184
    with pytest.raises(CaptureFileError) as e:
        analyze(CRAFTED, series=0.1, timeout=60)
    msg = str(e.value)
    assert msg.startswith(f"{CRAFTED}: frame 2 is stamped 136.1 years after the file's first packet"), msg
    assert "keeps at most 4194304 per file; pass a larger --series interval" in msg
    assert analyze(CRAFTED, timeout=60)["file"]["packets"] == 2
