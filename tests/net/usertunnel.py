"""One end of GRE, GRE-tap and IPIP tunnels made in user space, for tests whose kernel has
no ip_gre or ipip module (this machine's has vxlan only). Packets read from TUN/TAP
devices go to the other end through raw IP sockets (protocol 47 or 4), encapsulated as
the kernel's tunnels put them on the wire: GRE without options (0x0800), GRE-tap with a
key (0x6558, an Ethernet frame inside), IPIP (the inner packet as the payload). What
arrives from the other end's address is written back to the device.

    python3 usertunnel.py LOCAL REMOTE SECONDS [--drop N] KIND=DEV...

KIND is gre, gretap or ipip; each DEV a TUN (gre, ipip) or TAP (gretap) device already
made in this namespace (`ip tuntap add`). Runs until SECONDS have passed or SIGTERM.
--drop N drops every Nth packet it would send on each tunnel: a loss the capture on the
underlay shows as a gap, so the TCP analysis has something to find.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import socket
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_TAP, IFF_NO_PI = 0x0001, 0x0002, 0x1000
GRE_KEY = 7


def open_dev(name: str, tap: bool) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), (IFF_TAP if tap else IFF_TUN) | IFF_NO_PI))
    return fd


def main(argv: list[str]) -> int:
    local, remote, seconds = argv[0], argv[1], float(argv[2])
    rest = argv[3:]
    drop = 0
    if rest[:1] == ["--drop"]:
        drop, rest = int(rest[1]), rest[2:]
    devs = dict(a.split("=", 1) for a in rest)
    unknown = set(devs) - {"gre", "gretap", "ipip"}
    if unknown or not devs:
        print(f"usertunnel: unknown or no tunnel kinds {sorted(unknown)}; use gre=DEV gretap=DEV ipip=DEV",
              file=sys.stderr)
        return 2
    fds = {kind: open_dev(dev, kind == "gretap") for kind, dev in devs.items()}
    gre = socket.socket(socket.AF_INET, socket.SOCK_RAW, 47)
    ipip = socket.socket(socket.AF_INET, socket.SOCK_RAW, 4)
    for s in (gre, ipip):
        s.bind((local, 0))
    stop = time.monotonic() + seconds
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sent = dict.fromkeys(fds, 0)
    by_fd = {fd: kind for kind, fd in fds.items()}
    print("ready", flush=True)
    while time.monotonic() < stop:
        ready, _, _ = select.select([*by_fd, gre, ipip], [], [], 0.2)
        for r in ready:
            if r in (gre, ipip):
                data, (src, _) = r.recvfrom(65535)
                if src != remote:
                    continue
                inner = data[(data[0] & 0x0F) * 4:]
                if r is ipip:
                    if "ipip" in fds:
                        os.write(fds["ipip"], inner)
                    continue
                flags, proto = struct.unpack("!HH", inner[:4])
                payload = inner[8:] if flags & 0x2000 else inner[4:]
                kind = "gretap" if proto == 0x6558 else "gre"
                if kind in fds:
                    os.write(fds[kind], payload)
                continue
            kind = by_fd[r]
            pkt = os.read(r, 65535)
            sent[kind] += 1
            if drop and sent[kind] % drop == 0:
                continue
            if kind == "ipip":
                ipip.sendto(pkt, (remote, 0))
            elif kind == "gretap":
                gre.sendto(struct.pack("!HHI", 0x2000, 0x6558, GRE_KEY) + pkt, (remote, 0))
            else:
                proto = 0x86DD if pkt[0] >> 4 == 6 else 0x0800
                gre.sendto(struct.pack("!HH", 0, proto) + pkt, (remote, 0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
