"""Netlink data walked with every length checked: the messages of a datagram and the
attributes of a message, each a view of the bytes it owns.

Owns only the walking: lengths that do not hold together (a header cut short, a message
or attribute longer than what holds it, or shorter than its own header) raise
`Malformed`, saying where, never an IndexError or a short read. What a message or an
attribute means is its reader's: netrig.lab.rtnl (the kernel's acks of the requests a lab
is built of) and netrig.lab.routewatch (route notifications and dumps).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

HEADER = struct.Struct("IHHII")  # nlmsghdr: length, type, flags, seq, pid
ATTR = struct.Struct("HH")  # rtattr / nlattr: length, type
NLA_TYPE_MASK = 0x3FFF  # an attribute's type without NLA_F_NESTED and NLA_F_NET_BYTEORDER


class Malformed(ValueError):
    """Netlink data whose lengths do not hold together (said where)."""


def align(n: int) -> int:
    """n rounded up to netlink's 4-byte alignment."""
    return (n + 3) & ~3


def messages(data: bytes | memoryview) -> Iterator[tuple[int, int, int, int, memoryview]]:
    """(type, flags, seq, pid, payload) of each netlink message in one datagram."""
    view = memoryview(data)
    at = 0
    while at < len(view):
        if len(view) - at < HEADER.size:
            raise Malformed(f"{len(view) - at} bytes left at {at}, less than a message header")
        length, kind, flags, seq, pid = HEADER.unpack_from(view, at)
        if length < HEADER.size or length > len(view) - at:
            raise Malformed(f"a message of {length} bytes at {at} of a {len(view)}-byte datagram")
        yield kind, flags, seq, pid, view[at + HEADER.size:at + length]
        at += align(length)


def attributes(data: bytes | memoryview) -> Iterator[tuple[int, memoryview]]:
    """(type, payload) of each attribute in data; fewer than 4 bytes left at the end
    (padding) end the walk."""
    view = memoryview(data)
    at = 0
    while at + ATTR.size <= len(view):
        length, kind = ATTR.unpack_from(view, at)
        if length < ATTR.size or length > len(view) - at:
            raise Malformed(f"an attribute of {length} bytes at {at} of {len(view)}")
        yield kind & NLA_TYPE_MASK, view[at + ATTR.size:at + length]
        at += align(length)
