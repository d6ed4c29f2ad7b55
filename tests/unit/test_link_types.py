"""Every common link type and tunnel, carrying real traffic: one capture of the
real-world corpus (an Ethernet capture of a phone's TCP connections, with losses,
retransmissions, SACK and timestamps) re-wrapped frame by frame in each link-layer
header and each encapsulation, then analysed by netrig-analyze and by tshark 4.0 and
compared field by field. tshark must find every TCP segment of the original in each
(so a wrapper it could not read cannot pass by both finding nothing).

The wrappers are written by hand below from the formats' definitions (libpcap's
LINKTYPE_ list; RFC 1662, 2516, 2784/2890, 2003, 4213, 7348; 3GPP TS 29.281; IEEE
802.11 and radiotap.org; the PPI specification).
"""

from __future__ import annotations

import json
import struct
import subprocess
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from netrig import binary
from test_corpus import CAPTURES, DIR, _present
from tsharkdiff import TSHARK, builder, differences

SOURCE = "ndpi-capture.pcap"
_csum = builder()._csum
MAC_A, MAC_B = b"\x02\x00\x00\x00\x00\x01", b"\x02\x00\x00\x00\x00\x02"


def _ipv4(proto: int, payload: bytes) -> bytes:
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000, 64, proto, 0,
                    bytes([192, 0, 2, 1]), bytes([192, 0, 2, 2]))
    return h[:10] + struct.pack("!H", _csum(h)) + h[12:] + payload


def _udp(dport: int, payload: bytes) -> bytes:
    return struct.pack("!HHHH", 40000, dport, 8 + len(payload), 0) + payload


def _eth(ethertype: int, payload: bytes) -> bytes:
    return MAC_B + MAC_A + struct.pack("!H", ethertype) + payload


def _et(ip: bytes) -> int:
    return 0x86DD if ip[0] >> 4 == 6 else 0x0800


def _ppp_proto(ip: bytes) -> bytes:
    return b"\x00\x57" if ip[0] >> 4 == 6 else b"\x00\x21"


def _pppoe(ip: bytes) -> bytes:
    ppp = _ppp_proto(ip) + ip
    return struct.pack("!BBHH", 0x11, 0, 0x1234, len(ppp)) + ppp


def _wlan(ip: bytes, qos: bool = False, four: bool = False) -> bytes:
    fc = bytes([0x88 if qos else 0x08, 0x03 if four else 0x01])
    h = fc + b"\0\0" + MAC_B + MAC_A + MAC_B + b"\x10\x00"
    if four:
        h += MAC_A
    if qos:
        h += b"\x00\x00"
    return h + b"\xaa\xaa\x03\x00\x00\x00" + struct.pack("!H", _et(ip)) + ip


def _radiotap(ip: bytes) -> bytes:
    # Flags (bit 1) saying the frame ends in its FCS, and the rate (bit 2).
    wlan = _wlan(ip, qos=True)
    hdr = struct.pack("<BBHIBB", 0, 0, 10, 0b110, 0x10, 12)
    return hdr + wlan + struct.pack("<I", zlib.crc32(wlan) & 0xFFFFFFFF)


def _ppi(ip: bytes) -> bytes:
    return struct.pack("<BBHI", 0, 0, 8, 105) + _wlan(ip)


def _mpls(ip: bytes) -> bytes:
    return _eth(0x8847, struct.pack("!II", (100 << 12) | 64, (200 << 12) | 0x100 | 64) + ip)


def _gre(ip: bytes, key: bool = False) -> bytes:
    gre = struct.pack("!HH", 0x2000 if key else 0, _et(ip)) + (struct.pack("!I", 7) if key else b"")
    return _eth(0x0800, _ipv4(47, gre + ip))


def _vxlan(ip: bytes) -> bytes:
    inner = _eth(_et(ip), ip)
    return _eth(0x0800, _ipv4(17, _udp(4789, struct.pack("!II", 0x08000000, 42 << 8) + inner)))


def _gtpu(ip: bytes) -> bytes:
    return _eth(0x0800, _ipv4(17, _udp(2152, struct.pack("!BBHI", 0x30, 0xFF, len(ip), 0x1234) + ip)))


def _ipip(ip: bytes) -> bytes:
    return _eth(0x0800, _ipv4(41 if ip[0] >> 4 == 6 else 4, ip))


# link type, wrapper of the IP packet (None: the packet's version decides it is skipped)
WRAPS: dict[str, tuple[int, Callable[[bytes], bytes]]] = {
    "ethernet-vlan": (1, lambda ip: _eth(0x8100, b"\x00\x05" + struct.pack("!H", _et(ip)) + ip)),
    "ethernet-qinq": (1, lambda ip: _eth(0x88A8, b"\x00\x0a\x81\x00\x00\x05" + struct.pack("!H", _et(ip)) + ip)),
    "ethernet-mpls": (1, _mpls),
    "ethernet-pppoe": (1, lambda ip: _eth(0x8864, _pppoe(ip))),
    "raw-101": (101, lambda ip: ip),
    "raw-228": (228, lambda ip: ip),
    "sll-113": (113, lambda ip: struct.pack("!HHH", 0, 1, 6) + MAC_A + b"\0\0" + struct.pack("!H", _et(ip)) + ip),
    "ipoib-242": (242, lambda ip: bytes(20) + bytes(range(20)) + struct.pack("!H", _et(ip)) + b"\0\0" + ip),
    "sll2-276": (276, lambda ip: struct.pack("!HHIHBB", _et(ip), 0, 3, 1, 0, 6) + MAC_A + b"\0\0" + ip),
    "null-0-le": (0, lambda ip: struct.pack("<I", 30 if ip[0] >> 4 == 6 else 2) + ip),
    "null-0-be": (0, lambda ip: struct.pack(">I", 28 if ip[0] >> 4 == 6 else 2) + ip),
    "loop-108": (108, lambda ip: struct.pack(">I", 24 if ip[0] >> 4 == 6 else 2) + ip),
    "ppp-9": (9, lambda ip: b"\xff\x03" + _ppp_proto(ip) + ip),
    "ppp-9-no-address": (9, lambda ip: _ppp_proto(ip) + ip),
    "ppp-hdlc-50": (50, lambda ip: b"\xff\x03" + _ppp_proto(ip) + ip),
    "cisco-hdlc-104": (104, lambda ip: b"\x0f\x00" + struct.pack("!H", _et(ip)) + ip),
    "pppoe-51": (51, _pppoe),
    "ieee802.11-105": (105, _wlan),
    "ieee802.11-105-4addr": (105, lambda ip: _wlan(ip, qos=True, four=True)),
    "radiotap-127": (127, _radiotap),
    "ppi-192": (192, _ppi),
    "gre": (1, _gre),
    "gre-key": (1, lambda ip: _gre(ip, key=True)),
    "ipip": (1, _ipip),
    "vxlan": (1, _vxlan),
    "gtp-u": (1, _gtpu),
}


def _packets(path: Path):
    data = path.read_bytes()
    magic = data[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    link = struct.unpack(endian + "I", data[20:24])[0]
    assert link == 1, f"{path.name}: the source must be an Ethernet pcap"
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack(endian + "IIII", data[off:off + 16])
        yield sec, frac, data[off + 16:off + 16 + incl], orig
        off += 16 + incl


def _rewrap(src: Path, dst: Path, link: int, wrap: Callable[[bytes], bytes]) -> int:
    """Writes `src`'s IP frames to `dst` under `link`, each wrapped; returns their number."""
    magic = src.read_bytes()[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    out = [struct.pack(endian + "IHHiIII", struct.unpack(endian + "I", magic)[0], 2, 4, 0, 0, 262144, link)]
    n = 0
    for sec, frac, frame, orig in _packets(src):
        et = frame[12:14]
        if et not in (b"\x08\x00", b"\x86\xdd") or (link == 228 and et != b"\x08\x00"):
            continue
        ip = frame[14:]
        body = wrap(ip)
        extra = len(body) - len(ip)
        out.append(struct.pack(endian + "IIII", sec, frac, len(body), orig - 14 + extra) + body)
        n += 1
    dst.write_bytes(b"".join(out))
    return n


def _tcp_frames(p: Path) -> int:
    out = subprocess.run([TSHARK, "-n", "-r", str(p), "-Y", "tcp.stream", "-T", "fields", "-e", "frame.number"],
                         capture_output=True, text=True, timeout=120).stdout
    return len(out.split())


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
@pytest.mark.parametrize("name", list(WRAPS))
def test_a_real_capture_in_every_wrapping_agrees_with_tshark(name: str, tmp_path: Path) -> None:
    c = next(c for c in CAPTURES if c["name"] == SOURCE)
    _present(c)
    link, wrap = WRAPS[name]
    p = tmp_path / f"{name}.pcap"
    _rewrap(DIR / SOURCE, p, link, wrap)
    assert _tcp_frames(p) == c["tcp_frames"], f"tshark does not read every segment wrapped as {name}"
    r = subprocess.run([str(binary("netrig-analyze")), "tcp", str(p), "--frames"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["file"]["tcp_packets"] == c["tcp_frames"], f"{name}: netrig-analyze missed segments"
    assert differences(p, doc) == []


def _truncate(src: Path, dst: Path, snaplen: int) -> None:
    """`src` as if captured with `-s snaplen` (each frame cut, its length on the wire kept)."""
    data = src.read_bytes()
    endian = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    out = [data[:16] + struct.pack(endian + "I", snaplen) + data[20:24]]
    for sec, frac, frame, orig in _packets(src):
        cut = frame[:snaplen]
        out.append(struct.pack(endian + "IIII", sec, frac, len(cut), orig) + cut)
    dst.write_bytes(b"".join(out))


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
@pytest.mark.parametrize("snaplen", [48, 54, 58, 66, 74])
def test_a_real_capture_cut_by_a_snap_length_agrees_with_tshark(snaplen: int, tmp_path: Path) -> None:
    """Cut inside the TCP header (48), after its fixed part (54) and inside its options
    (58-74): tshark analyses every segment but shows nothing of one whose captured
    header it cannot finish reading."""
    c = next(c for c in CAPTURES if c["name"] == SOURCE)
    _present(c)
    p = tmp_path / f"s{snaplen}.pcap"
    _truncate(DIR / SOURCE, p, snaplen)
    r = subprocess.run([str(binary("netrig-analyze")), "tcp", str(p), "--frames"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert differences(p, json.loads(r.stdout)) == []
