"""netrig.lab.netlink: walking netlink messages and attributes, every length checked;
malformed bytes raise Malformed (saying where), never anything else."""

from __future__ import annotations

import random
import struct

import pytest
from netrig.lab.netlink import HEADER, Malformed, attributes, messages


def msg(kind: int, body: bytes, seq: int = 1) -> bytes:
    return HEADER.pack(HEADER.size + len(body), kind, 2, seq, 7) + body + b"\0" * (-len(body) % 4)


def attr(kind: int, payload: bytes) -> bytes:
    return struct.pack("HH", 4 + len(payload), kind) + payload + b"\0" * (-len(payload) % 4)


def test_messages_and_attributes_are_walked_past_their_padding():
    data = msg(24, attr(1, b"\x0a\0\0\0") + attr(0x8000 | 9, attr(5, b"abc"))) + msg(3, b"", seq=2)
    got = [(k, f, s, p, bytes(b)) for k, f, s, p, b in messages(data)]
    assert [g[:4] for g in got] == [(24, 2, 1, 7), (3, 2, 2, 7)]
    [(a, v), (n, nested)] = list(attributes(got[0][4]))
    assert (a, bytes(v)) == (1, b"\x0a\0\0\0")
    assert n == 9, "NLA_F_NESTED is not part of the type"
    assert [(k, bytes(x)) for k, x in attributes(nested)] == [(5, b"abc")]
    tail = [(k, bytes(v)) for k, v in attributes(attr(2, b"") + b"\0\0")]
    assert tail == [(2, b"")], "fewer than 4 bytes left (padding) end the walk"


@pytest.mark.parametrize(("data", "says"), [
    (b"\0" * 10, "10 bytes left at 0, less than a message header"),
    (msg(3, b"") + b"\0" * 4, "4 bytes left at 16"),
    (HEADER.pack(8, 3, 0, 1, 0) + b"\0" * 8, "a message of 8 bytes at 0 of a 24-byte datagram"),
    (HEADER.pack(100, 3, 0, 1, 0), "a message of 100 bytes at 0 of a 16-byte datagram"),
])
def test_malformed_messages_are_refused_where_they_break(data, says):
    with pytest.raises(Malformed, match=says):
        list(messages(data))


@pytest.mark.parametrize(("data", "says"), [
    (struct.pack("HH", 3, 1), "an attribute of 3 bytes at 0 of 4"),
    (struct.pack("HH", 0, 1) + b"\0" * 4, "an attribute of 0 bytes at 0"),
    (attr(1, b"abcd") + struct.pack("HH", 40, 2), "an attribute of 40 bytes at 8 of 12"),
])
def test_malformed_attributes_are_refused_where_they_break(data, says):
    with pytest.raises(Malformed, match=says):
        list(attributes(data))


def test_random_bytes_raise_nothing_but_malformed():
    rnd = random.Random(29)
    good = msg(24, attr(1, b"\x0a\0\0\0") + attr(9, attr(5, b"abcdefg"))) * 2
    for _ in range(5_000):
        data = bytearray(good[:rnd.randrange(len(good) + 1)])
        for _ in range(rnd.randrange(4)):
            if data:
                data[rnd.randrange(len(data))] = rnd.randrange(256)
        try:
            for *_, body in messages(bytes(data)):
                for _, v in attributes(body[4:] if len(body) > 4 else body):
                    list(attributes(v))
        except Malformed:
            pass
