"""Writes the seed corpora of the fuzz targets from the repository's own fixtures.

    python3 fuzz/seeds.py [DIR]     (default: fuzz/corpus; one subdirectory per target)

pcap: every capture tests/fixtures/pcap/build.py builds (pcap in both byte orders and
resolutions, pcapng, each link type) and the 184-byte file whose timestamps are 136
years apart. ethernet: their frames. iperf3_control: parameters and results as netrig
and iperf3 send them, the challenge and proof documents, a cookie. datagrams: iperf3
UDP headers, probe requests and replies, a request/response header. link_control: a
request of each command, `set` with every spec of tests/fixtures/link-spec.
Generated rather than kept: the fixtures are the source, and a corpus grows as it runs.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "pcap"))
import build  # noqa: E402  (tests/fixtures/pcap/build.py)


def pcap_frames(data: bytes) -> list[bytes]:
    """The frames of a little- or big-endian classic pcap."""
    magic = data[:4]
    e = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    out, at = [], 24
    while at + 16 <= len(data):
        caplen = struct.unpack(e + "I", data[at + 8:at + 12])[0]
        out.append(data[at + 16:at + 16 + caplen])
        at += 16 + caplen
    return out


def seeds() -> dict[str, dict[str, bytes]]:
    caps = build.files()
    crafted = ROOT / "crates" / "netrig-analyze" / "tests" / "fuzz" / "pcap"
    pcap = dict(caps)
    pcap.update({p.name: p.read_bytes() for p in sorted(crafted.iterdir())})
    frames = [f for name, b in caps.items() if name.endswith(".pcap") for f in pcap_frames(b)]
    ethernet = {f"frame-{i}": f for i, f in enumerate(frames[::7])}
    # A BPF program at the end ("tcp": ldh [12]; jeq #0x800; ldb [23]; jeq #6; ret).
    bpf = [(0x28, 0, 0, 12), (0x15, 0, 3, 0x800), (0x30, 0, 0, 23), (0x15, 0, 1, 6),
           (0x6, 0, 0, 262144), (0x6, 0, 0, 0)]
    prog = b"".join(struct.pack("<HBBI", *i) for i in bpf)
    ethernet["frame-bpf"] = bytes([len(bpf)]) + frames[0][1:] + prog

    docs = {
        "params-tcp": {"tcp": True, "omit": 0, "time": 10, "parallel": 4, "len": 131072,
                       "client_version": "3.12"},
        "params-udp": {"udp": True, "bandwidth": 1048576, "len": 1460, "time": 5,
                       "udp_counters_64bit": 1, "reverse": True},
        "params-probe": {"udp": True, "len": 64, "netrig": {"mode": "probe", "version": 1}},
        "params-rr": {"tcp": True, "netrig": {"mode": "rr", "version": 1, "response": 1024}},
        "results": {"cpu_util_total": 1.5, "cpu_util_user": 1, "cpu_util_system": 0.5,
                    "sender_has_retransmits": 1,
                    "streams": [{"id": 1, "bytes": 5, "retransmits": 0, "jitter": 0, "errors": 0,
                                 "packets": 0, "start_time": 0, "end_time": 10}]},
        "challenge": {"netrig_challenge": {"version": 1, "nonce": "ab" * 32}},
        "proof": {"netrig_proof": "cd" * 32},
    }
    iperf3 = {k: json.dumps(v).encode() for k, v in docs.items()}
    iperf3["cookie"] = b"abcdefghijklmnopqrstuvwxyz2345672345\0"
    iperf3["frame-len"] = struct.pack("!I", 62) + iperf3["params-tcp"]

    start = 1_700_000_000_000_000_000

    def probe(kind: int, seq: int, sent: int, recv: int = 0, back: int = 0) -> bytes:
        return b"NRPB" + bytes([1, kind, 0, 0]) + struct.pack("!QQQQ", seq, sent, recv, back)

    def udp(seq: int, wide: bool) -> bytes:
        h = struct.pack("!II", 1_700_000_000, seq % 1_000_000)
        h += struct.pack("!Q", seq) if wide else struct.pack("!I", seq)
        return h + b"\0" * 20

    def train(flags: int, ds: list[bytes]) -> bytes:
        return bytes([flags]) + b"".join(bytes([len(d)]) + d for d in ds)

    datagrams = {
        "udp32": train(0, [udp(s, False) for s in (1, 2, 4, 3, 3, 0x7FFFFFFF, 5)]),
        "udp64": train(1, [udp(s, True) for s in (1, 2, 3, 1 << 40, (1 << 40) + 1)]),
        "probe": train(0, [probe(2, s, start + s * 1_000_000, start + s * 1_000_000 + 500,
                                 start + s * 1_000_000 + 600) for s in (1, 2, 2, 9)]),
        "rr": train(0, [b"NRRQ\x01\0\0\0" + struct.pack("!Q", 1024)]),
    }

    specs = [c["spec"] for c in json.load(open(ROOT / "tests/fixtures/link-spec/directions.json"))["cases"]]
    reqs = [{"cmd": "stats"}, {"cmd": "subscribe"}, {"cmd": "down", "link": "l1"},
            {"cmd": "up", "link": "l1"}, {"cmd": "pcap", "link": "l1", "dir": "a_to_b", "path": "/tmp/x"},
            {"cmd": "capture_start", "link": "l1", "dir": "both", "path": "/tmp/c.pcapng",
             "snaplen": 128, "bpf": [list(i) for i in bpf], "file_size": 1 << 20, "files": 3},
            {"cmd": "capture_stop", "link": "l1"}, {"cmd": "shutdown"},
            {"cmd": "set", "link": "l1", "specs": {"a_to_b": specs[1], "b_to_a": specs[-1]}, "version": 1}]
    reqs += [{"cmd": "set", "link": "l1", "dir": "both", "spec": s} for s in specs]
    link = {f"req-{i}": (json.dumps(r) + "\n").encode() for i, r in enumerate(reqs)}
    link["trace"] = (json.dumps({"cmd": "set", "link": "l1", "dir": "a_to_b",
                                 "spec": {"trace": {"text": "1\n2\n2\n5\n", "repeat": True}}}) + "\n").encode()
    return {"pcap": pcap, "ethernet": ethernet, "iperf3_control": iperf3,
            "datagrams": datagrams, "link_control": link}


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "corpus"
    for target, files in seeds().items():
        d = out / target
        d.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (d / name).write_bytes(data)
        print(f"{d}: {len(files)} seeds")


if __name__ == "__main__":
    main()
