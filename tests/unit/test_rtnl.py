"""netrig.lab.rtnl: which `ip` lines it speaks, the netlink messages they become, and
how it reads the kernel's acknowledgements (refusals named by line, the kernel's own
words from an extended ack, a malformed reply refused)."""

from __future__ import annotations

import ipaddress
import struct

import pytest
from netrig.lab import rtnl


def test_speaks_the_lines_a_lab_is_built_of():
    ops = rtnl.compile_lines([
        "link set lo up", "link set dev eth0 down", "link add s1 type bridge stp_state 0 forward_delay 0",
        "link add name s2 type bridge", "link set s1-p0 master s1", "addr add 10.0.0.1/24 dev eth0",
        "route add default via 10.0.0.254 dev eth0", "route add 10.1.0.0/16 via 10.0.0.1 dev eth0",
        "link set s1-p0 type bridge_slave state 3", ""])
    assert ops is not None
    assert [(o.kind, o.dev) for o in ops] == [
        ("up", "lo"), ("down", "eth0"), ("bridge", "s1"), ("bridge", "s2"), ("master", "s1-p0"),
        ("addr", "eth0"), ("route", "eth0"), ("route", "eth0"), ("port_state", "s1-p0")]
    assert ops[2].arg == {"stp_state": 0, "forward_delay": 0}
    assert ops[4].needs == ["s1"]
    assert ops[6].arg == (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_address("10.0.0.254"))


@pytest.mark.parametrize("line", [
    "link set eth0 mtu 1400", "link add v0 type veth peer name v1", "link add s1 type bridge vlan_filtering 1",
    "link add s1 type bridge stp_state x", "addr add 10.0.0.1 dev eth0", "addr add fe80::1/64 dev eth0",
    "addr add 10.0.0.1/24 dev eth0 brd +", "route add 10.0.0.0/24 dev eth0", "route add 10.0.0.0/33 via 1.2.3.4 dev e",
    "route replace default via 10.0.0.1 dev eth0", "link del eth0", "addr flush dev eth0"])
def test_any_other_line_is_left_to_ip(line):
    # One line it does not speak and the whole batch goes to `ip` (order is kept).
    assert rtnl.compile_lines(["link set lo up", line]) is None


def _attrs(data: bytes) -> dict[int, bytes]:
    out, at = {}, 0
    while at + 4 <= len(data):
        n, kind = struct.unpack_from("HH", data, at)
        out[kind] = data[at + 4:at + n]
        at += (n + 3) & ~3
    return out


def test_messages():
    index = {"eth0": 7, "s1": 3}
    [bridge, master, addr, route, default] = rtnl.compile_lines([
        "link add s1 type bridge stp_state 0 forward_delay 0", "link set p0 master s1",
        "addr add 10.0.0.1/24 dev eth0", "route add 10.1.0.0/16 via 10.0.0.9 dev eth0",
        "route add default via 10.0.0.9 dev eth0"])
    kind, flags, body = rtnl._request(bridge, index)
    assert kind == rtnl.RTM_NEWLINK and flags == rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL
    a = _attrs(body[16:])
    assert a[rtnl.IFLA_IFNAME] == b"s1\0"
    info = _attrs(a[rtnl.IFLA_LINKINFO])
    assert info[rtnl.IFLA_INFO_KIND] == b"bridge"
    data = _attrs(info[rtnl.IFLA_INFO_DATA])
    assert data == {rtnl.IFLA_BR_STP_STATE: struct.pack("I", 0), rtnl.IFLA_BR_FORWARD_DELAY: struct.pack("I", 0)}
    kind, flags, body = rtnl._request(master, index)
    assert kind == rtnl.RTM_NEWLINK and flags == 0  # a change, never a creation
    assert _attrs(body[16:])[rtnl.IFLA_MASTER] == struct.pack("I", 3)
    kind, flags, body = rtnl._request(addr, index)
    assert struct.unpack_from("BBBBI", body) == (2, 24, 0, 0, 7)
    assert _attrs(body[8:])[rtnl.IFA_LOCAL] == bytes([10, 0, 0, 1])
    kind, flags, body = rtnl._request(route, index)
    fam, dst_len, _, _, table, proto, scope, rtype, _ = struct.unpack_from("BBBBBBBBI", body)
    assert (fam, dst_len, table, proto, scope, rtype) == (2, 16, 254, 3, 0, 1)
    a = _attrs(body[12:])
    assert a == {rtnl.RTA_DST: bytes([10, 1, 0, 0]), rtnl.RTA_GATEWAY: bytes([10, 0, 0, 9]),
                 rtnl.RTA_OIF: struct.pack("I", 7)}
    kind, flags, body = rtnl._request(default, index)
    assert body[1] == 0 and rtnl.RTA_DST not in _attrs(body[12:])  # default: no destination


def _ack(seq: int, err: int, text: str | None = None, echo: bytes | None = None) -> bytes:
    """An ack as the kernel writes it: the request's header, or all of it (echo: its
    payload) when not capped, then extended-ack attributes."""
    tlv = b""
    if text is not None:
        raw = text.encode() + b"\0"
        tlv = struct.pack("HH", 4 + len(raw), rtnl.NLMSGERR_ATTR_MSG) + raw + b"\0" * (-len(raw) % 4)
    request = struct.pack("IHHII", 16 + len(echo or b""), 24, 5, seq, 0) + (echo or b"")
    body = struct.pack("i", err) + request + b"\0" * (-len(request) % 4) + tlv
    flags = (rtnl.NLM_F_ACK_TLVS if text is not None else 0) | (0 if echo else rtnl.NLM_F_CAPPED)
    return struct.pack("IHHII", 16 + len(body), rtnl.NLMSG_ERROR, flags, seq, 0) + body


def test_acks_name_the_refused_line():
    ops = rtnl.compile_lines(["link set a up", "addr add 10.0.0.1/24 dev a", "route add default via 10.9.9.9 dev a"])
    pending = dict(enumerate(ops, start=1))
    out: list[str] = []
    rtnl._errors(_ack(1, 0) + _ack(2, -17) + _ack(3, -101, "Nexthop has invalid gateway", echo=b"x" * 27),
                 pending, out)
    assert pending == {}
    assert out == ["addr add 10.0.0.1/24 dev a: File exists",
                   "route add default via 10.9.9.9 dev a: Nexthop has invalid gateway"]
    out = []
    rtnl._errors(_ack(4, -19, "Unknown device"), {4: ops[0]}, out)  # capped: the header only
    assert out == ["link set a up: Unknown device"]


def test_a_malformed_reply_is_refused():
    with pytest.raises(OSError, match="malformed"):
        rtnl._errors(struct.pack("IHHII", 4000, rtnl.NLMSG_ERROR, 0, 1, 0) + b"\0" * 20, {}, [])
    with pytest.raises(OSError, match="malformed"):
        rtnl._errors(struct.pack("IHHII", 3, rtnl.NLMSG_ERROR, 0, 1, 0), {}, [])
    ops = rtnl.compile_lines(["link set a up"])
    # An error without its code would have left its request pending (run waits for it).
    with pytest.raises(OSError, match="an error message of 2 bytes, without its error code"):
        rtnl._errors(struct.pack("IHHII", 18, rtnl.NLMSG_ERROR, 0, 1, 0) + b"\0\0", {1: ops[0]}, [])
    # An extended ack whose echoed request, or whose attribute, runs past it.
    ack = bytearray(_ack(1, -22, "Invalid argument", echo=b"x" * 8))
    struct.pack_into("I", ack, 20, 4000)
    with pytest.raises(OSError, match="echoing a request of 4000"):
        rtnl._errors(bytes(ack), {1: ops[0]}, [])
    ack = bytearray(_ack(1, -22, "Invalid argument"))
    struct.pack_into("H", ack, 36, 200)
    with pytest.raises(OSError, match="an attribute of 200 bytes"):
        rtnl._errors(bytes(ack), {1: ops[0]}, [])


def test_run_netns_is_made_shared_once_and_then_known():
    """netns.add runs `ip netns add` only while /run/netns is not yet the shared mount ip
    makes (its first use after boot); afterwards every namespace is made in-process."""
    from netrig.lab.netns import shared_in

    shared = ("42 27 254:0 /run/netns /run/netns rw,relatime shared:1 - ext4 /dev/vda rw\n"
              "56 42 0:4 net:[4026532669] /run/netns/a rw shared:5 - nsfs nsfs rw\n")
    private = "42 27 254:0 /run/netns /run/netns rw,relatime - tmpfs tmpfs rw\n"
    assert shared_in(shared, "/run/netns")
    assert not shared_in(private, "/run/netns")
    assert not shared_in(shared, "/run")  # only that mount point
    assert not shared_in("42 27 254:0 / /run/netns rw shared:1\n", "/run/netns")  # no '-': malformed
    assert not shared_in("", "/run/netns")
