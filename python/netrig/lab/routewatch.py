"""Route changes, subscribed to: each router's IPv4 main table kept in this process from
the kernel's own notifications, never polled.

This module owns the watch: per router namespace one NETLINK_ROUTE socket, opened by a
thread that has joined the namespace (netns; a socket keeps the namespace it was opened
in), joined to RTNLGRP_IPV4_ROUTE, then asked for a dump (subscribe first, dump second:
a change during the dump arrives as an event after the part of the dump it changes).
One selector over every socket, read by the caller's thread (`Watcher.poll`).

`Table` is the pure part (tests/unit/test_routewatch.py feeds it crafted bytes): the
router's unicast routes of the main table, destination text ("10.0.1.0/24", as
`str(IPv4Network)`) -> its routes by metric with their next hops ((gateway, ifindex)
each, RTA_MULTIPATH's included), how many of the prefixes the router should have are
present, and when its table last changed. Events are applied idempotently
(RTM_NEWROUTE replaces, RTM_DELROUTE removes; an event that changes nothing is not a
change). The kernel dropping events (ENOBUFS, an overrun) makes the table dump again;
so does a dump the kernel interrupted or refused, and data that does not parse (every
length is checked before it is used: netrig.lab.netlink walks the messages and
attributes), at most MAX_REDUMPS times in a row.
"""

from __future__ import annotations

import errno
import selectors
import socket
import struct
import time
from collections.abc import Collection
from typing import NamedTuple

from netrig.lab import netns
from netrig.lab.netlink import HEADER, NLA_TYPE_MASK, Malformed, align, attributes, messages
from netrig.lab.state import LabError

# linux/netlink.h, linux/rtnetlink.h
NLMSG_NOOP, NLMSG_ERROR, NLMSG_DONE, NLMSG_OVERRUN = 1, 2, 3, 4
NLM_F_REQUEST, NLM_F_MULTI, NLM_F_DUMP_INTR, NLM_F_DUMP = 0x1, 0x2, 0x10, 0x300
RTM_NEWROUTE, RTM_DELROUTE, RTM_GETROUTE = 24, 25, 26
RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_PRIORITY, RTA_MULTIPATH, RTA_TABLE, RTA_NH_ID = 1, 4, 5, 6, 9, 15, 30
RT_TABLE_MAIN, RTN_UNICAST = 254, 1
RTNLGRP_IPV4_ROUTE = 7
SOL_NETLINK, NETLINK_ADD_MEMBERSHIP = 270, 1
SO_RCVBUFFORCE = 33
RTMSG = struct.Struct("BBBBBBBBI")  # family, dst_len, src_len, tos, table, protocol, scope, type, flags
RTNH = struct.Struct("HBBi")  # rtnexthop: length, flags, hops, ifindex
RCVBUF = 8 << 20
READ = 1 << 18  # bytes per recv; a socket is read at most READS_PER_POLL times a poll
READS_PER_POLL = 32
MAX_REDUMPS = 5

Hops = tuple  # ((gateway bytes, ifindex), ...), sorted: one route's next hops
Routes = tuple  # ((metric, Hops), ...), sorted: every route to one destination


class WatchError(LabError):
    pass


class Route(NamedTuple):
    dst: str  # "10.0.1.0/24"
    metric: int
    hops: Hops


def _ip4(kind: str, v: memoryview) -> bytes:
    if len(v) != 4:
        raise Malformed(f"{kind} of {len(v)} bytes, not an IPv4 address")
    return bytes(v)


def _multipath(data: memoryview) -> list[tuple[bytes, int]]:
    hops = []
    at = 0
    while at + RTNH.size <= len(data):
        length, _, _, ifindex = RTNH.unpack_from(data, at)
        if length < RTNH.size or length > len(data) - at:
            raise Malformed(f"a next hop of {length} bytes at {at} of RTA_MULTIPATH's {len(data)}")
        gateway = b""
        for kind, v in attributes(data[at + RTNH.size:at + length]):
            if kind == RTA_GATEWAY:
                gateway = _ip4("a next hop's RTA_GATEWAY", v)
        hops.append((gateway, ifindex))
        at += align(length)
    return hops


_ATTR = struct.Struct("HH")
_U32 = struct.Struct("I")


def _header(kind: int) -> int:
    """An 8-byte attribute's header as one native u32 (length, then type)."""
    return _U32.unpack(_ATTR.pack(8, kind))[0]


# The kernel's own layout of an IPv4 route (fib_dump_info: table, destination, priority,
# the nexthop object's id where zebra uses one, then gateway and device, or RTA_MULTIPATH
# of rtnexthops each with its gateway) is read with a few unpacks (_fast); any other
# layout is walked attribute by attribute.
_HEAD = struct.Struct("=BBBBBBBBI II I4s II")  # rtmsg; table, destination, priority (header, value)
_HEAD_ATTRS = (_header(RTA_TABLE), _header(RTA_DST), _header(RTA_PRIORITY))
_NH_ID = _header(RTA_NH_ID)
_PAIR = struct.Struct("=I4sII")  # gateway, device (header, value each)
_PAIR_ATTRS = (_header(RTA_GATEWAY), _header(RTA_OIF))
_HOP = struct.Struct("=HBBiI4s")  # an rtnexthop (length, flags, hops, device) and its gateway
_HOP_SIZE = 16
_GATEWAY = _header(RTA_GATEWAY)


def _fast(payload: memoryview | bytes, n: int) -> Route | None | bool:
    """parse_route for the kernel's layout; False when the payload is not in it."""
    if n < _HEAD.size + _PAIR.size:
        return False
    v = _HEAD.unpack_from(payload, 0)
    if (v[9], v[11], v[13]) != _HEAD_ATTRS:
        return False
    at = _HEAD.size
    if _U32.unpack_from(payload, at)[0] == _NH_ID:
        at += 8
    rest = n - at
    if rest == _PAIR.size:
        gw_attr, gateway, oif_attr, oif = _PAIR.unpack_from(payload, at)
        if (gw_attr, oif_attr) != _PAIR_ATTRS:
            return False
        hops: Hops = ((gateway, oif),)
    else:
        head = _U32.unpack_from(payload, at)[0]
        if head & 0xFFFF != rest or head >> 16 != RTA_MULTIPATH or (rest - 4) % _HOP_SIZE:
            return False
        out = []
        for k in range(at + 4, n, _HOP_SIZE):
            length, _, _, ifindex, gw_attr, gateway = _HOP.unpack_from(payload, k)
            if length != _HOP_SIZE or gw_attr != _GATEWAY:
                return False
            out.append((gateway, ifindex))
        hops = tuple(sorted(out))
    if v[0] != socket.AF_INET or v[7] != RTN_UNICAST or v[10] != RT_TABLE_MAIN:
        return None
    if v[1] > 32:
        raise Malformed(f"an IPv4 route of prefix length {v[1]}")
    return Route(_text(v[12], v[1]), v[14], hops)


# A destination's text by its address and prefix length: a lab has a few thousand
# destinations, read a million times (bounded: past it, text is made afresh).
_TEXTS: dict[tuple[bytes, int], str] = {}
_TEXTS_MAX = 1 << 16


def _text(dst: bytes, dst_len: int) -> str:
    key = (dst, dst_len)
    text = _TEXTS.get(key)
    if text is None:
        text = f"{socket.inet_ntoa(dst)}/{dst_len}"
        if len(_TEXTS) < _TEXTS_MAX:
            _TEXTS[key] = text
    return text


def parse_route(payload: memoryview | bytes) -> Route | None:
    """The route of an RTM_NEWROUTE/RTM_DELROUTE payload, or None when it is none of
    ours to watch (not IPv4, not the main table, not unicast). The kernel's common
    layout is read at once (_fast); any other is walked attribute by attribute, every
    length checked as netlink.attributes does (a 500-router lab's watcher reads about
    750,000 routes from its first dumps: 7.2 -> 3.0 us each here, into the table)."""
    n = len(payload)
    fast = _fast(payload, n)
    if fast is not False:
        return fast  # type: ignore[return-value]
    if n < RTMSG.size:
        raise Malformed(f"a route message of {n} bytes, less than an rtmsg")
    family, dst_len, _, _, table, _, _, rtype, _ = RTMSG.unpack_from(payload, 0)
    if family != socket.AF_INET or rtype != RTN_UNICAST:
        return None
    if dst_len > 32:
        raise Malformed(f"an IPv4 route of prefix length {dst_len}")
    dst, metric, gateway, oif, nh_id = b"\0\0\0\0", 0, b"", 0, 0
    multipath: list[tuple[bytes, int]] | None = None
    at = RTMSG.size
    while at + 4 <= n:
        length, kind = _ATTR.unpack_from(payload, at)
        if length < 4 or length > n - at:
            raise Malformed(f"an attribute of {length} bytes at {at - RTMSG.size} of {n - RTMSG.size}")
        kind &= NLA_TYPE_MASK
        if kind in _ROUTE_ATTRS:
            if kind == RTA_MULTIPATH:
                multipath = _multipath(memoryview(payload)[at + 4:at + length])
            elif length != 8:
                raise Malformed(f"{_ROUTE_ATTRS[kind]} of {length - 4} bytes, not 4")
            elif kind == RTA_DST:
                dst = bytes(payload[at + 4:at + 8])
            elif kind == RTA_GATEWAY:
                gateway = bytes(payload[at + 4:at + 8])
            else:
                value = _U32.unpack_from(payload, at + 4)[0]
                if kind == RTA_TABLE:
                    table = value
                elif kind == RTA_PRIORITY:
                    metric = value
                elif kind == RTA_OIF:
                    oif = value
                else:
                    nh_id = value
        at += (length + 3) & ~3
    if table != RT_TABLE_MAIN:
        return None
    hops = multipath if multipath is not None else [(gateway, oif)]
    if nh_id and hops == [(b"", 0)]:  # a nexthop object the kernel did not spell out
        hops = [(b"nh", nh_id)]
    return Route(_text(dst, dst_len), metric, tuple(sorted(hops)))


_ROUTE_ATTRS = {RTA_DST: "RTA_DST", RTA_TABLE: "RTA_TABLE", RTA_PRIORITY: "RTA_PRIORITY",
                RTA_GATEWAY: "RTA_GATEWAY", RTA_OIF: "RTA_OIF", RTA_MULTIPATH: "RTA_MULTIPATH",
                RTA_NH_ID: "RTA_NH_ID"}


class Table:
    """One router's table, as its socket's data tells it (see the module's docstring).
    `want`: the destinations (text) it should have; `portid`: its socket's netlink
    address (a dump's replies are addressed to it)."""

    def __init__(self, name: str, want: Collection[str], portid: int = 0, interned: dict | None = None) -> None:
        self.name, self.want, self.portid = name, want, portid
        self.routes: dict[str, Routes] = {}
        self.have = 0  # how many of want are in routes
        self.last_change = time.monotonic()
        self.dump_seq: int | None = None  # a dump under way
        self._fresh: dict[str, Routes] = {}
        self._dump_seen = False  # the dump's first reply has come
        self._redo = False  # the dump under way must be done again (events lost, interrupted)
        self.failures = 0  # dumps in a row that did not complete
        self.dumps = 0  # dumps begun
        self.problem = ""  # why the table was last read again
        self._interned = {} if interned is None else interned  # shared by a watcher's tables

    @property
    def complete(self) -> bool:
        return self.dump_seq is None and self.have == len(self.want)

    def missing(self) -> list[str]:
        return [] if self.complete else [w for w in self.want if w not in self.routes]

    def begin_dump(self, seq: int) -> None:
        self.dump_seq, self._fresh, self._dump_seen, self._redo = seq, {}, False, False
        self.dumps += 1

    def overrun(self, why: str, now: float, failure: bool = False) -> bool:
        """Events were lost, or the table could not be read (`failure`: counted, at most
        MAX_REDUMPS in a row): True when a dump must be sent now (none is under way; one
        under way is done again when it ends)."""
        self.last_change = now
        self.problem = why
        if failure:
            self.failures += 1
            self._check_failures()
        if self.dump_seq is not None:
            self._redo = True
            return False
        return True

    def _check_failures(self) -> None:
        if self.failures > MAX_REDUMPS:
            raise WatchError(f"{self.name}: its routing table could not be read whole {self.failures} "
                             f"times in a row (last: {self.problem}); is the machine short of memory?")

    def feed(self, data: bytes | memoryview, now: float) -> bool:
        """Applies one datagram; True when a dump must be sent (the one under way failed)."""
        dump, portid = self.dump_seq, self.portid
        try:
            for kind, flags, seq, pid, body in messages(data):
                if kind == RTM_NEWROUTE and seq == dump and pid == portid and not flags & NLM_F_DUMP_INTR \
                        and dump is not None:  # a dump's reply (most of what is read): as _route would
                    self._dump_seen = True
                    self._dumped(kind, body)
                    continue
                ours = self.dump_seq is not None and seq == self.dump_seq and pid == self.portid
                if kind in (RTM_NEWROUTE, RTM_DELROUTE):
                    self._route(kind, flags, ours, body, now)
                elif ours and kind in (NLMSG_DONE, NLMSG_ERROR):
                    code = struct.unpack_from("i", body, 0)[0] if len(body) >= 4 else -errno.EPROTO
                    if kind == NLMSG_DONE and code == 0 and not self._redo:
                        self._end_dump(now)
                    else:
                        return self._failed_dump(kind, code, now)
                elif kind == NLMSG_OVERRUN:
                    return self.overrun("the kernel reported an overrun", now)
        except Malformed as e:
            self.dump_seq = None  # whatever was under way is not to be trusted
            return self.overrun(f"malformed netlink data: {e}", now, failure=True)
        return False

    def _route(self, kind: int, flags: int, ours: bool, body: memoryview, now: float) -> None:
        if self.dump_seq is not None:
            if ours:
                self._dump_seen = True
                if flags & NLM_F_DUMP_INTR:
                    self._redo = True
                    self.problem = "the kernel interrupted the dump"
            elif not self._dump_seen:
                return  # queued before the dump began: the dump tells the state after it
            self._dumped(kind, body)
            return
        route = parse_route(body)
        if route is None:
            return
        before = route.dst in self.routes
        if self._apply(self.routes, kind, route):
            self.last_change = now
            after = route.dst in self.routes
            if before != after and route.dst in self.want:
                self.have += 1 if after else -1

    def _dumped(self, kind: int, body: memoryview) -> None:
        """A route while a dump is under way: into the table the dump is filling."""
        route = parse_route(body)
        if route is not None:
            self._apply(self._fresh, kind, route)

    def _apply(self, table: dict[str, Routes], kind: int, route: Route) -> bool:
        """True when the table changed."""
        old = table.get(route.dst, ())
        if not old and kind == RTM_NEWROUTE:  # (most: a dump's, a new destination's)
            new = ((route.metric, self._interned.setdefault(route.hops, route.hops)),)
            table[route.dst] = self._interned.setdefault(new, new)
            return True
        others = tuple(r for r in old if r[0] != route.metric)
        if kind == RTM_NEWROUTE:
            new = tuple(sorted((*others, (route.metric, self._interned.setdefault(route.hops, route.hops)))))
        else:
            new = others
        if new == old:
            return False
        if new:
            table[route.dst] = self._interned.setdefault(new, new)
        else:
            table.pop(route.dst, None)
        return True

    def _end_dump(self, now: float) -> None:
        if self._fresh != self.routes:
            self.last_change = now
        self.routes, self._fresh = self._fresh, {}
        self.have = sum(1 for d in self.routes if d in self.want)
        self.dump_seq, self.failures, self.problem = None, 0, ""

    def _failed_dump(self, kind: int, code: int, now: float) -> bool:
        self.dump_seq = None
        if code:  # (EBUSY: a dump given up on has not ended yet; not counted)
            return self.overrun(f"the dump was refused: {errno.errorcode.get(-code, code)}", now,
                                failure=code != -errno.EBUSY)
        return self.overrun(self.problem or "the dump was interrupted", now)


def dump_request(seq: int) -> bytes:
    body = RTMSG.pack(socket.AF_INET, 0, 0, 0, 0, 0, 0, 0, 0)
    return HEADER.pack(HEADER.size + len(body), RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body


class Watcher:
    """Tables of routers' namespaces (router -> namespace name), each with the
    destinations it should have (router -> Collection of text); kept up to date by
    `poll`. Close it (or use `with`): its sockets are one per router."""

    def __init__(self, namespaces: dict[str, str], want: dict[str, Collection[str]], workers: int = 2,
                 rcvbuf: int = RCVBUF) -> None:
        self.tables: dict[str, Table] = {}
        self._socks: dict[str, socket.socket] = {}
        self._sel = selectors.DefaultSelector()
        self._seq = int(time.time()) & 0xFFFFFF
        self._retry: set[str] = set()
        interned: dict = {}
        opened: dict[str, socket.socket] = {}

        def open_one(router: str) -> None:
            try:
                netns._join(namespaces[router])
                s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC,
                                  socket.NETLINK_ROUTE)
                opened[router] = s
                s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
                s.bind((0, 0))
                s.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, RTNLGRP_IPV4_ROUTE)
            except OSError as e:
                raise WatchError(f"{router}: watching its routes (namespace {namespaces[router]}): "
                                 f"{e.strerror or e}; netrig needs root (CAP_NET_ADMIN) for this") from None

        try:
            netns._in_workers(list(namespaces), open_one, workers)
        except BaseException:
            for s in opened.values():
                s.close()
            raise
        for router, s in opened.items():
            self._socks[router] = s
            self.tables[router] = Table(router, want[router], s.getsockname()[0], interned)
            self._sel.register(s, selectors.EVENT_READ, router)
        for router in self.tables:
            self._dump(router)

    def _dump(self, router: str) -> None:
        self._seq += 1
        self.tables[router].begin_dump(self._seq)
        try:
            self._socks[router].send(dump_request(self._seq))
        except OSError as e:  # (the kernel's buffers: asked again by the next poll)
            self.tables[router].dump_seq = None
            self.tables[router].overrun(f"the dump could not be asked for: {e.strerror}", time.monotonic(),
                                        failure=True)
            self._retry.add(router)

    def poll(self, timeout: float) -> int:
        """Waits at most `timeout` s for route changes, applies what came; returns how
        many datagrams were read."""
        retry, self._retry = self._retry, set()
        for router in retry:  # a dump whose request could not be sent
            self._dump(router)
        n = 0
        for key, _ in self._sel.select(max(0.0, timeout)):
            router = key.data
            s, table = self._socks[router], self.tables[router]
            for _ in range(READS_PER_POLL):
                try:
                    data = s.recv(READ)
                except BlockingIOError:
                    break
                except OSError as e:
                    if e.errno != errno.ENOBUFS:
                        raise WatchError(f"{router}: reading its route changes: {e.strerror}") from None
                    if table.overrun("the kernel dropped route changes (ENOBUFS)", time.monotonic()):
                        self._dump(router)
                    continue
                n += 1
                if table.feed(data, time.monotonic()):
                    self._dump(router)
        return n

    def last_change(self) -> float:
        return max((t.last_change for t in self.tables.values()), default=0.0)

    def incomplete(self) -> list[str]:
        return [r for r, t in self.tables.items() if not t.complete]

    def close(self) -> None:
        self._sel.close()
        for s in self._socks.values():
            s.close()
        self._socks.clear()

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
