"""netrig.lab.routewatch's pure part, fed crafted netlink bytes: routes parsed (main
table, unicast, multipath, metrics), events applied idempotently, a dump into a fresh
table (events queued before it ignored, later ones applied), the re-dump after lost
events, and every length checked (a truncated or oversized message or attribute makes
the table read again, never a wrong table nor a traceback). Also what
netrig.lab.converge reads of FRR's answers (a vty answer's end, bounded; young
adjacencies; the link-state database's sums) and how a failure is worded. Pure: no
sockets."""

from __future__ import annotations

import struct
import time

import pytest
from netrig.lab import converge, frrvty
from netrig.lab import routewatch as rw
from netrig.lab.converge import not_converged
from netrig.lab.state import LabError

ZEBRA = 4242  # a notification's sender (zebra's port id); the table's own is PORT
PORT = 99


def attr(kind: int, payload: bytes) -> bytes:
    n = 4 + len(payload)
    return struct.pack("HH", n, kind) + payload + b"\0" * (-n % 4)


def ip(text: str) -> bytes:
    return bytes(int(x) for x in text.split("."))


def route(dst: str, via: str | None = None, oif: int = 2, *, metric: int = 20, table: int = 254,
          rtype: int = 1, family: int = 2, multipath: list[tuple[str, int]] | None = None) -> bytes:
    net, plen = dst.split("/")
    body = struct.pack("BBBBBBBBI", family, int(plen), 0, 0, min(table, 255), 11, 0, rtype, 0)
    if int(plen):
        body += attr(rw.RTA_DST, ip(net))
    body += attr(rw.RTA_TABLE, struct.pack("I", table)) + attr(rw.RTA_PRIORITY, struct.pack("I", metric))
    if multipath is not None:
        hops = b""
        for gw, idx in multipath:
            inner = attr(rw.RTA_GATEWAY, ip(gw))
            hops += struct.pack("HBBi", 8 + len(inner), 0, 0, idx) + inner
        body += attr(rw.RTA_MULTIPATH, hops)
    else:
        if via:
            body += attr(rw.RTA_GATEWAY, ip(via))
        body += attr(rw.RTA_OIF, struct.pack("I", oif))
    return body


def msg(kind: int, body: bytes, *, seq: int = 0, pid: int = ZEBRA, flags: int = 0) -> bytes:
    data = struct.pack("IHHII", 16 + len(body), kind, flags, seq, pid) + body
    return data + b"\0" * (-len(data) % 4)


def new(*a, **kw) -> bytes:
    seq, pid = kw.pop("seq", 0), kw.pop("pid", ZEBRA)
    return msg(rw.RTM_NEWROUTE, route(*a, **kw), seq=seq, pid=pid)


def delete(*a, **kw) -> bytes:
    return msg(rw.RTM_DELROUTE, route(*a, **kw))


def done(seq: int, code: int = 0) -> bytes:
    return msg(rw.NLMSG_DONE, struct.pack("i", code), seq=seq, pid=PORT, flags=rw.NLM_F_MULTI)


def dumped(table: rw.Table, seq: int, *routes: bytes, before: bytes = b"") -> bool:
    """A dump of routes (as the kernel answers one, its replies addressed to the table);
    `before`: events queued ahead of it."""
    table.begin_dump(seq)
    replies = b"".join(msg(rw.RTM_NEWROUTE, r, seq=seq, pid=PORT, flags=rw.NLM_F_MULTI) for r in routes)
    return table.feed(before + replies + done(seq), 1.0)


WANT = {"10.0.1.0/24", "10.0.2.0/24", "10.255.0.3/32"}


def fresh(want=WANT) -> rw.Table:
    t = rw.Table("r1", want, PORT)
    assert not dumped(t, 1)
    return t


def test_a_route_parsed_with_its_next_hops():
    r = rw.parse_route(memoryview(route("10.0.1.0/24", "10.0.0.2", 3)))
    assert r == rw.Route("10.0.1.0/24", 20, ((ip("10.0.0.2"), 3),))
    r = rw.parse_route(memoryview(route("0.0.0.0/0", "10.0.0.1")))
    assert r is not None and r.dst == "0.0.0.0/0"
    ecmp = rw.parse_route(memoryview(route("10.0.1.0/24", multipath=[("10.0.9.2", 4), ("10.0.0.2", 3)])))
    assert ecmp is not None and ecmp.hops == ((ip("10.0.0.2"), 3), (ip("10.0.9.2"), 4))


def kernel(dst: str, via: str, oif: int, *, nh: int | None = None, metric: int = 20, table: int = 254,
           rtype: int = 1, family: int = 2, plen: int | None = None, extra: tuple[int, int] | None = None,
           multipath: list[tuple[str, int]] | None = None) -> bytes:
    """A route as the kernel writes one (fib_dump_info's order: table, destination,
    priority, the nexthop object's id, gateway, device), which parse_route reads at once."""
    net, bits = dst.split("/")
    body = struct.pack("BBBBBBBBI", family, int(bits) if plen is None else plen, 0, 0, min(table, 255), 188, 0,
                       rtype, 0)
    body += attr(rw.RTA_TABLE, struct.pack("I", table)) + attr(rw.RTA_DST, ip(net))
    body += attr(rw.RTA_PRIORITY, struct.pack("I", metric))
    if nh is not None:
        body += attr(rw.RTA_NH_ID, struct.pack("I", nh))
    if extra is not None:  # another 4-byte attribute in its place (RTA_FLOW, say)
        body += attr(extra[0], struct.pack("I", extra[1]))
    if multipath is not None:
        hops = b"".join(struct.pack("HBBi", 16, 0, 0, idx) + attr(rw.RTA_GATEWAY, ip(gw)) for gw, idx in multipath)
        return body + attr(rw.RTA_MULTIPATH, hops)
    return body + attr(rw.RTA_GATEWAY, ip(via)) + attr(rw.RTA_OIF, struct.pack("I", oif))


@pytest.mark.parametrize("nh", [None, 17])
def test_the_kernels_own_layout_reads_as_the_attribute_walk_does(nh):
    for dst, via, oif, metric in [("10.0.1.0/24", "10.0.0.2", 3, 20), ("10.255.0.9/32", "10.1.2.1", 7, 110),
                                  ("0.0.0.0/0", "10.0.0.1", 1, 0)]:
        fast = kernel(dst, via, oif, nh=nh, metric=metric)
        assert rw._fast(fast, len(fast)) is not False
        if dst == "0.0.0.0/0":  # (the kernel writes no RTA_DST for it: the walk's case)
            continue
        assert rw.parse_route(memoryview(fast)) == rw.parse_route(route(dst, via, oif, metric=metric)) \
            == rw.Route(dst, metric, ((ip(via), oif),))
    hops = [("10.0.9.2", 4), ("10.0.0.2", 3), ("10.0.5.1", 9)]
    for k in (1, 2, 3):
        fast = kernel("10.0.1.0/24", "", 0, nh=nh, multipath=hops[:k])
        assert rw._fast(fast, len(fast)) is not False
        assert rw.parse_route(fast) == rw.parse_route(route("10.0.1.0/24", multipath=hops[:k])) \
            == rw.Route("10.0.1.0/24", 20, tuple(sorted((ip(g), i) for g, i in hops[:k])))
    # another attribute where the nexthop id was, or in a next hop: walked, not misread
    other = kernel("10.0.1.0/24", "10.0.0.2", 3, extra=(11, 5))  # RTA_FLOW
    assert rw._fast(other, len(other)) is False
    assert rw.parse_route(other) == rw.Route("10.0.1.0/24", 20, ((ip("10.0.0.2"), 3),))
    flow = struct.pack("HBBi", 24, 0, 0, 4) + attr(rw.RTA_GATEWAY, ip("10.0.9.2")) + attr(11, b"\0" * 4)
    odd = kernel("10.0.1.0/24", "", 0, nh=nh, multipath=[])[:-4] + attr(rw.RTA_MULTIPATH, flow)
    assert rw._fast(odd, len(odd)) is False
    assert rw.parse_route(odd) == rw.Route("10.0.1.0/24", 20, ((ip("10.0.9.2"), 4),))


@pytest.mark.parametrize("kw", [dict(table=255), dict(table=1000), dict(rtype=2), dict(family=10)])
def test_routes_not_watched_are_none_in_the_kernels_layout_too(kw):
    assert rw.parse_route(kernel("10.0.1.0/24", "10.0.0.2", 3, nh=4, **kw)) is None


def test_a_prefix_longer_than_32_is_malformed_in_the_kernels_layout_too():
    with pytest.raises(rw.Malformed, match="prefix length 33"):
        rw.parse_route(kernel("10.0.1.0/24", "10.0.0.2", 3, plen=33))


@pytest.mark.parametrize("kw", [dict(table=255), dict(table=1000), dict(rtype=2), dict(rtype=6), dict(family=10)])
def test_routes_not_watched_are_none(kw):
    # local table, a table id only in RTA_TABLE, local and blackhole types, IPv6
    assert rw.parse_route(memoryview(route("10.0.1.0/24", "10.0.0.2", **kw))) is None


def test_events_apply_idempotently_and_count_the_expected_prefixes():
    t = fresh()
    assert t.have == 0 and not t.complete and set(t.missing()) == WANT
    t.feed(new("10.0.1.0/24", "10.0.0.2") + new("10.0.2.0/24", "10.0.0.2") + new("10.9.0.0/16", "10.0.0.2"), 2.0)
    assert t.have == 2 and t.last_change == 2.0
    t.feed(new("10.0.1.0/24", "10.0.0.2"), 3.0)  # the same again: no change
    assert t.have == 2 and t.last_change == 2.0
    t.feed(new("10.0.1.0/24", "10.0.5.2"), 4.0)  # another next hop: a change, not a new prefix
    assert t.have == 2 and t.last_change == 4.0
    t.feed(new("10.255.0.3/32", multipath=[("10.0.0.2", 2), ("10.0.5.2", 5)]), 5.0)
    assert t.complete and t.missing() == []
    t.feed(delete("10.0.2.0/24", "10.0.0.2"), 6.0)
    assert t.have == 2 and t.missing() == ["10.0.2.0/24"]
    t.feed(delete("10.0.2.0/24", "10.0.0.2"), 7.0)  # gone already: nothing changes
    assert t.have == 2 and t.last_change == 6.0


def test_routes_to_one_destination_are_kept_by_metric():
    t = fresh()
    t.feed(new("10.0.1.0/24", "10.0.0.2", metric=20) + new("10.0.1.0/24", "10.0.5.2", metric=100), 2.0)
    assert len(t.routes["10.0.1.0/24"]) == 2 and t.have == 1
    t.feed(delete("10.0.1.0/24", "10.0.0.2", metric=20), 3.0)
    assert t.routes["10.0.1.0/24"] == ((100, ((ip("10.0.5.2"), 2),)),) and t.have == 1
    t.feed(delete("10.0.1.0/24", "10.0.5.2", metric=100), 4.0)
    assert "10.0.1.0/24" not in t.routes and t.have == 0


def test_a_dump_is_read_into_a_fresh_table_and_events_queued_before_it_are_ignored():
    t = fresh()
    t.feed(new("10.0.1.0/24", "10.0.0.2") + new("10.0.2.0/24", "10.0.0.2"), 2.0)
    t.begin_dump(7)
    assert not t.complete  # not until the dump ends
    # Queued before the dump: a route the dump no longer has (its delete was lost).
    stale = new("10.255.0.3/32", "10.0.0.2")
    part1 = msg(rw.RTM_NEWROUTE, route("10.0.1.0/24", "10.0.0.2"), seq=7, pid=PORT, flags=rw.NLM_F_MULTI)
    # After the dump's first part: a real change, applied on top of it.
    later = new("10.0.2.0/24", "10.0.3.2") + delete("10.0.1.0/24", "10.0.0.2")
    part2 = msg(rw.RTM_NEWROUTE, route("10.0.2.0/24", "10.0.0.2"), seq=7, pid=PORT, flags=rw.NLM_F_MULTI)
    assert not t.feed(stale + part1 + later, 3.0)
    # A notification that happens to carry the dump's seq, from another port, is an event.
    assert not t.feed(part2 + new("10.0.9.0/24", "10.0.0.2", seq=7) + done(7), 4.0)
    assert t.dump_seq is None and set(t.routes) == {"10.0.2.0/24", "10.0.9.0/24"} and t.have == 1
    assert t.last_change == 4.0


def test_an_unchanged_redump_is_no_change():
    t = fresh()
    t.feed(new("10.0.1.0/24", "10.0.0.2"), 2.0)
    assert not dumped(t, 8, route("10.0.1.0/24", "10.0.0.2"))
    assert t.last_change == 2.0 and t.have == 1


def test_lost_events_make_the_table_dump_again_once_the_one_under_way_ends():
    t = fresh()
    assert t.overrun("ENOBUFS", 5.0)  # no dump under way: send one now
    assert t.last_change == 5.0 and t.failures == 0
    t.begin_dump(9)
    assert not t.overrun("ENOBUFS", 6.0)  # under way: done again when it ends
    assert t.feed(done(9), 7.0)  # it ends: send another
    assert t.dump_seq is None and not t.complete
    assert not dumped(t, 10, route("10.0.1.0/24", "10.0.0.2"))
    assert t.have == 1 and t.failures == 0
    assert t.feed(msg(rw.NLMSG_OVERRUN, b""), 8.0)


def test_a_refused_dump_is_asked_again_and_given_up_after_a_few():
    t = rw.Table("r7", WANT, PORT)
    for k in range(rw.MAX_REDUMPS):
        t.begin_dump(20 + k)
        assert t.feed(msg(rw.NLMSG_ERROR, struct.pack("i", -12) + b"\0" * 16, seq=20 + k, pid=PORT), 1.0)
    t.begin_dump(30)
    with pytest.raises(rw.WatchError, match=r"r7: its routing table could not be read whole 6 times in a row "
                                            r"\(last: the dump was refused: ENOMEM\)"):
        t.feed(msg(rw.NLMSG_ERROR, struct.pack("i", -12), seq=30, pid=PORT), 1.0)


def test_an_interrupted_dump_is_done_again():
    t = fresh()
    t.begin_dump(11)
    part = msg(rw.RTM_NEWROUTE, route("10.0.1.0/24", "10.0.0.2"), seq=11, pid=PORT,
               flags=rw.NLM_F_MULTI | rw.NLM_F_DUMP_INTR)
    assert t.feed(part + done(11), 2.0)


GOOD = route("10.0.1.0/24", "10.0.0.2")


@pytest.mark.parametrize("data", [
    struct.pack("IHHII", 200, rw.RTM_NEWROUTE, 0, 0, 1) + GOOD,  # longer than the datagram
    struct.pack("IHHII", 8, rw.RTM_NEWROUTE, 0, 0, 1) + GOOD,  # shorter than its header
    msg(rw.RTM_NEWROUTE, GOOD)[:10],  # a header cut short
    msg(rw.RTM_NEWROUTE, GOOD[:8]),  # an rtmsg cut short
    msg(rw.RTM_NEWROUTE, GOOD[:12] + struct.pack("HH", 64, rw.RTA_DST) + ip("10.0.1.0")),  # attribute overruns
    msg(rw.RTM_NEWROUTE, GOOD[:12] + struct.pack("HH", 2, rw.RTA_DST) + ip("10.0.1.0")),  # attribute < 4
    msg(rw.RTM_NEWROUTE, GOOD[:12] + attr(rw.RTA_DST, b"\1\2\3")),  # an address of 3 bytes
    msg(rw.RTM_NEWROUTE, GOOD[:12] + attr(rw.RTA_OIF, b"\1\2")),
    msg(rw.RTM_NEWROUTE, struct.pack("BBBBBBBBI", 2, 40, 0, 0, 254, 11, 0, 1, 0)),  # /40
    msg(rw.RTM_NEWROUTE, GOOD[:12] + attr(rw.RTA_MULTIPATH, struct.pack("HBBi", 40, 0, 0, 3))),  # hop overruns
    msg(rw.RTM_NEWROUTE, GOOD[:12] + attr(rw.RTA_MULTIPATH, struct.pack("HBBi", 4, 0, 0, 3))),  # hop < rtnexthop
    msg(rw.RTM_NEWROUTE, GOOD[:12] + attr(rw.RTA_MULTIPATH, struct.pack("HBBi", 16, 0, 0, 3)
                                           + attr(rw.RTA_GATEWAY, b"\1\2\3\4\5"))),
])
def test_malformed_data_makes_the_table_read_again(data):
    t = fresh()
    t.feed(new("10.0.1.0/24", "10.0.0.2"), 2.0)
    assert t.feed(data, 3.0)  # read again, this table as it was until then
    assert t.problem.startswith("malformed netlink data: ") and t.failures == 1 and t.last_change == 3.0
    assert t.routes == {"10.0.1.0/24": ((20, ((ip("10.0.0.2"), 2),)),)}


def test_a_good_message_after_an_unknown_attribute_and_padding():
    body = GOOD + attr(200, b"x")  # attributes netrig does not know are skipped
    t = fresh()
    assert not t.feed(msg(rw.RTM_NEWROUTE, body) + msg(rw.NLMSG_NOOP, b""), 2.0)
    assert t.have == 1


def test_the_dump_request_asks_for_ipv4_routes():
    data = rw.dump_request(5)
    (length, kind, flags, seq, _), = [struct.unpack_from("IHHII", data)]
    assert (length, kind, flags, seq) == (len(data), rw.RTM_GETROUTE, rw.NLM_F_REQUEST | rw.NLM_F_DUMP, 5)
    assert data[16] == 2


def test_the_failure_names_routers_prefixes_and_the_restless_tables():
    import ipaddress

    n = ipaddress.IPv4Network("10.0.1.0/24")
    text = not_converged(12, {"r2": [n]}, {"r2": {n: "r1-r3"}}, {"r4": ["OSPF on eth0: 0 of 1 neighbours Full"]},
                         [("h1", "h2")], "the routing tables never stayed still")
    assert text == ("routing did not converge in 12 s; the routing tables never stayed still; r2 has no route "
                    "to 10.0.1.0/24 (r1-r3); r4's protocols are not all up: OSPF on eth0: 0 of 1 neighbours "
                    "Full; hosts that do not reach each other: h1->h2")


def test_a_vty_answer_is_read_to_its_end_and_bounded():
    chunks = [b'{"a":', b' 1}\n\0\0', b"\0\0"]
    assert frrvty.reply(lambda n: chunks.pop(0), time.monotonic() + 5) == ('{"a": 1}\n', 0)
    chunks = [b"% Unknown command\n\0\0\0\1"]
    assert frrvty.reply(lambda n: chunks.pop(0), time.monotonic() + 5) == ("% Unknown command\n", 1)
    with pytest.raises(LabError, match="closed its vty after 3 bytes"):
        chunks = [b"abc", b""]
        frrvty.reply(lambda n: chunks.pop(0), time.monotonic() + 5)
    with pytest.raises(LabError, match="more than 16 MiB"):
        frrvty.reply(lambda n: b"x" * n, time.monotonic() + 5)


def test_young_adjacencies_and_the_databases_ospfd_tells():
    doc = {"neighbors": {"10.255.0.2": [{"nbrState": "Full/-", "upTimeInMsec": 300}],
                         "10.255.0.3": [{"nbrState": "Full/DR", "upTimeInMsec": 9000}],
                         "10.255.0.4": [{"nbrState": "2-Way/DROther", "upTimeInMsec": 10}]}}
    assert converge._young(doc, 550) == [("10.255.0.2", 300)]
    assert converge._young({"neighbors": {"x": "not a list of dicts"}}, 550) == []
    ospf = {"routerId": "10.255.0.1", "spfLastExecutedMsecs": 5, "lsaExternalCounter": 0,
            "areas": {"0.0.0.0": {"spfExecutedCounter": 4, "lsaNumber": 3, "lsaRouterChecksum": 82599}}}
    assert converge._databases(ospf) == {"AS": (("lsaExternalCounter", 0),),
                                         "0.0.0.0": (("lsaNumber", 3), ("lsaRouterChecksum", 82599))}
