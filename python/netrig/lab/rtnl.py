"""Route netlink in-process: the `ip` lines a lab is built of, sent as netlink messages
from the calling thread's network namespace, without an `ip` process per namespace.

`compile_lines` understands the few line shapes netrig itself writes (`link set DEV
up|down`, `link set DEV master BR`, `link set DEV type bridge_slave state N`, `link add
BR type bridge [stp_state N]
[forward_delay N]`, `addr add A/P dev DEV`, `route add DEST|default via GW dev DEV`);
anything else returns None and the caller runs `ip` as before. `Batch.run` sends the
requests in large writes, each acknowledged (NLM_F_ACK), and names the line of every
request the kernel refused, with the kernel's own words (extended acks) where it gives
them: what `ip -force -batch` does, minus the process. The acks are walked by
netrig.lab.netlink, every length checked; a malformed one is an OSError.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from dataclasses import dataclass, field

from netrig.lab.netlink import HEADER, Malformed, align, attributes, messages

# linux/netlink.h, linux/rtnetlink.h, linux/if_link.h, linux/if_addr.h
NLMSG_ERROR = 2
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 0x1, 0x4, 0x200, 0x400
RTM_NEWLINK, RTM_NEWADDR, RTM_NEWROUTE = 16, 20, 24
IFLA_IFNAME, IFLA_MASTER, IFLA_LINKINFO = 3, 10, 18
IFLA_INFO_KIND, IFLA_INFO_DATA, IFLA_INFO_SLAVE_KIND, IFLA_INFO_SLAVE_DATA = 1, 2, 4, 5
IFLA_BRPORT_STATE = 1
IFLA_BR_FORWARD_DELAY, IFLA_BR_STP_STATE = 1, 5
IFA_ADDRESS, IFA_LOCAL = 1, 2
RTA_DST, RTA_OIF, RTA_GATEWAY = 1, 4, 5
IFF_UP = 1
RT_TABLE_MAIN, RTPROT_BOOT, RT_SCOPE_UNIVERSE, RTN_UNICAST = 254, 3, 0, 1
SOL_NETLINK, NETLINK_EXT_ACK, NLMSGERR_ATTR_MSG = 270, 11, 1
NLM_F_CAPPED, NLM_F_ACK_TLVS = 0x100, 0x200  # in an ack's flags: request not echoed; attributes follow
NETLINK_CAP_ACK = 10
SO_RCVBUFFORCE = 33
CHUNK = 256  # requests per write: their acks (36 B each, more with a message) fit the buffer


@dataclass
class Op:
    """One line: the request it becomes, and the device names it needs resolved."""
    line: str
    kind: str  # up, down, master, port_state, bridge, addr, route
    dev: str
    arg: object = None
    needs: list[str] = field(default_factory=list)


def _attr(kind: int, payload: bytes) -> bytes:
    n = 4 + len(payload)
    return struct.pack("HH", n, kind) + payload + b"\0" * (-n % 4)


def _u32(v: int) -> bytes:
    return struct.pack("I", v)


def _parse(line: str) -> Op | None:
    w = line.split()
    if len(w) >= 4 and w[:2] == ["link", "set"]:
        rest = w[2:]
        if rest[0] == "dev":
            rest = rest[1:]
        if len(rest) == 2 and rest[1] in ("up", "down"):
            return Op(line, rest[1], rest[0])
        if len(rest) == 3 and rest[1] == "master":
            return Op(line, "master", rest[0], rest[2], needs=[rest[2]])
        if len(rest) == 5 and rest[1:4] == ["type", "bridge_slave", "state"] and rest[4] in "01234":
            return Op(line, "port_state", rest[0], int(rest[4]))
        return None
    if len(w) >= 5 and w[:2] == ["link", "add"] and "type" in w:
        head, _, tail = line.split(None, 2)[2].partition(" type ")
        name = head.split()
        if name and name[0] == "name":
            name = name[1:]
        opts = tail.split()
        if len(name) != 1 or not opts or opts[0] != "bridge" or len(opts) % 2 != 1:
            return None
        settings = dict(zip(opts[1::2], opts[2::2]))
        if not set(settings) <= {"stp_state", "forward_delay"}:
            return None
        try:
            values = {k: int(v) for k, v in settings.items()}
        except ValueError:
            return None
        return Op(line, "bridge", name[0], values)
    if len(w) == 5 and w[:2] == ["addr", "add"] and w[3] == "dev":
        try:
            iface = ipaddress.ip_interface(w[2])
        except ValueError:
            return None
        if iface.version != 4 or "/" not in w[2]:
            return None
        return Op(line, "addr", w[4], iface, needs=[w[4]])
    if len(w) == 7 and w[:2] == ["route", "add"] and w[3] == "via" and w[5] == "dev":
        try:
            dest = ipaddress.ip_network("0.0.0.0/0" if w[2] == "default" else w[2])
            via = ipaddress.ip_address(w[4])
        except ValueError:
            return None
        if dest.version != 4 or via.version != 4:
            return None
        return Op(line, "route", w[6], (dest, via), needs=[w[6]])
    return None


def compile_lines(lines: list[str]) -> list[Op] | None:
    """The lines as requests, or None when any line is one this module does not speak."""
    ops = []
    for line in lines:
        if not line.strip():
            continue
        op = _parse(line)
        if op is None:
            return None
        ops.append(op)
    return ops


def _request(op: Op, index: dict[str, int]) -> tuple[int, int, bytes]:
    """(type, extra flags, body) of op's message."""
    if op.kind in ("up", "down", "master"):
        flags = IFF_UP if op.kind == "up" else 0
        change = 0 if op.kind == "master" else IFF_UP
        body = struct.pack("BxHiII", socket.AF_UNSPEC, 0, 0, flags, change)
        body += _attr(IFLA_IFNAME, op.dev.encode() + b"\0")
        if op.kind == "master":
            body += _attr(IFLA_MASTER, _u32(index[str(op.arg)]))
        return RTM_NEWLINK, 0, body
    if op.kind == "port_state":  # a bridge port's STP state (STP off: set, not learned)
        info = _attr(IFLA_INFO_SLAVE_KIND, b"bridge") + _attr(
            IFLA_INFO_SLAVE_DATA, _attr(IFLA_BRPORT_STATE, struct.pack("B", op.arg)))  # type: ignore[arg-type]
        body = struct.pack("BxHiII", socket.AF_UNSPEC, 0, 0, 0, 0)
        body += _attr(IFLA_IFNAME, op.dev.encode() + b"\0") + _attr(IFLA_LINKINFO, info)
        return RTM_NEWLINK, 0, body
    if op.kind == "bridge":
        data = b"".join(_attr({"stp_state": IFLA_BR_STP_STATE, "forward_delay": IFLA_BR_FORWARD_DELAY}[k],
                              _u32(v)) for k, v in op.arg.items())  # type: ignore[union-attr]
        info = _attr(IFLA_INFO_KIND, b"bridge") + (_attr(IFLA_INFO_DATA, data) if data else b"")
        body = struct.pack("BxHiII", socket.AF_UNSPEC, 0, 0, 0, 0)
        body += _attr(IFLA_IFNAME, op.dev.encode() + b"\0") + _attr(IFLA_LINKINFO, info)
        return RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, body
    if op.kind == "addr":
        iface = op.arg
        packed = iface.ip.packed  # type: ignore[union-attr]
        body = struct.pack("BBBBI", socket.AF_INET, iface.network.prefixlen, 0, 0,  # type: ignore[union-attr]
                           index[op.dev])
        body += _attr(IFA_LOCAL, packed) + _attr(IFA_ADDRESS, packed)
        return RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, body
    dest, via = op.arg  # type: ignore[misc]
    body = struct.pack("BBBBBBBBI", socket.AF_INET, dest.prefixlen, 0, 0, RT_TABLE_MAIN, RTPROT_BOOT,
                       RT_SCOPE_UNIVERSE, RTN_UNICAST, 0)
    if dest.prefixlen:
        body += _attr(RTA_DST, dest.network_address.packed)
    body += _attr(RTA_GATEWAY, via.packed) + _attr(RTA_OIF, _u32(index[op.dev]))
    return RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, body


def _errors(data: bytes | memoryview, pending: dict[int, Op], out: list[str]) -> None:
    """Reads the acks in data: each removes its request from pending; a refusal adds
    a sentence to out. A reply whose lengths do not hold together is an OSError."""
    try:
        for kind, flags, seq, _, body in messages(data):
            if kind != NLMSG_ERROR:
                continue
            if len(body) < 4:
                raise Malformed(f"an error message of {len(body)} bytes, without its error code")
            (err,) = struct.unpack_from("i", body)
            op = pending.pop(seq, None)
            if err and op is not None:
                out.append(f"{op.line}: {_ext_msg(body, flags) or os.strerror(-err)}")
    except Malformed as e:
        raise OSError(f"netlink: a malformed reply: {e}") from None


def _ext_msg(body: memoryview, flags: int) -> str | None:
    """The kernel's own words in an error message's extended ack, if it has one."""
    if not flags & NLM_F_ACK_TLVS:
        return None
    # After the error code, the request echoed back: its header only when capped.
    if len(body) < 4 + HEADER.size:
        raise Malformed(f"an extended ack of {len(body)} bytes, without the request's header")
    echoed = HEADER.size if flags & NLM_F_CAPPED else struct.unpack_from("I", body, 4)[0]
    if echoed < HEADER.size or 4 + align(echoed) > len(body):
        raise Malformed(f"an extended ack of {len(body)} bytes echoing a request of {echoed}")
    for kind, value in attributes(body[4 + align(echoed):]):
        if kind == NLMSGERR_ATTR_MSG:
            return bytes(value).split(b"\0")[0].decode(errors="replace")
    return None


def run(ops: list[Op]) -> list[str]:
    """Sends ops from this thread's namespace; returns the refused lines, each with why
    (an empty list: all done). A device a later line needs is looked up when reached,
    so a bridge made by the batch can be a master further down."""
    errors: list[str] = []
    index: dict[str, int] = {}
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as s:
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 1 << 22)
        s.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
        s.setsockopt(SOL_NETLINK, NETLINK_CAP_ACK, 1)  # a refusal need not echo the request
        s.bind((0, 0))
        pending: dict[int, Op] = {}
        out: list[bytes] = []
        seq = 0
        buf = bytearray(1 << 20)  # every read into the same buffer, not a fresh 1 MiB object each
        view = memoryview(buf)

        def flush() -> None:
            if out:
                s.sendall(b"".join(out))
                out.clear()
            while pending:
                n = s.recv_into(buf)
                _errors(view[:n], pending, errors)

        for op in ops:
            missing = [n for n in op.needs if n not in index]
            if missing:
                flush()
                for name in missing:
                    try:
                        index[name] = socket.if_nametoindex(name)
                    except OSError:
                        errors.append(f"{op.line}: no device {name}")
                        break
                else:
                    missing = []
                if missing:
                    continue
            kind, extra, body = _request(op, index)
            seq += 1
            pending[seq] = op
            out.append(HEADER.pack(HEADER.size + len(body), kind, NLM_F_REQUEST | NLM_F_ACK | extra, seq, 0) + body)
            if len(out) >= CHUNK:
                flush()
        flush()
    return errors
