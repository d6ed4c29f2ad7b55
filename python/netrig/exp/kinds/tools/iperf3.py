"""`tool: iperf3`: Debian's iperf3 (3.12) makes a tcp or udp flow. Its client runs as
netrig-perf's does (-J, the flow's -t or -n, -u, -P, -w, -l, -b, -C, -M, -O, -R, -N,
--connect-timeout, --get-server-output: netrig-perf's options are iperf3's), against a
one-off server (`iperf3 -s -1 -J`, bound to the flow's address, ended by the runner by
its PID if no client came). Its -J document is the shape netrig-perf's is (netrig-perf
adds TCP_INFO samples and pacing, which iperf3 has not: theory then takes the window as
given, or the kernel's autotuning limit). It takes no key: its server is one-off and
bound to the flow's address only.
"""

from __future__ import annotations

from netrig.exp.kinds import perf
from netrig.exp.kinds.base import Call, FlowOutput, Tool, connect_timeout_s, whole_seconds

PROGRAM = "iperf3"


def client(c: Call) -> list[str]:
    f = c.spec
    argv = [PROGRAM, "-c", c.addr, "-p", str(c.port), "-J", "-i", f"{c.interval:g}",
            "--connect-timeout", f"{connect_timeout_s(f) * 1e3:.0f}"]
    measured = c.duration - f.seconds("omit")  # omit is the duration's first part
    argv += ["-n", str(f.nbytes("bytes"))] if f.bytes is not None else ["-t", whole_seconds(measured)]
    if f.kind == "udp":
        argv.append("-u")
    if f.parallel > 1:
        argv += ["-P", str(f.parallel)]
    for flag, v in (("-w", f.nbytes("window")), ("-l", f.nbytes("length")),
                    ("-b", None if f.rate is None else int(f.rate_bps or 0)), ("-C", f.cc), ("-M", f.mss)):
        if v is not None:
            argv += [flag, str(v)]
    if f.omit is not None:
        argv += ["-O", str(int(f.seconds("omit")))]
    argv.append("-R" if f.reverse else "--get-server-output")
    if f.nodelay:
        argv.append("-N")
    return argv


def server(c: Call, bind: str, handshake_s: float, lifetime_s: float) -> list[str]:
    """A one-off server (-1: it exits after its client), -J so that the client's
    --get-server-output carries the receiver's intervals; the runner stops it by its
    PID when no client came."""
    return [PROGRAM, "-s", "-1", "-p", str(c.port), "-B", bind, "-J", "-i", f"{c.interval:g}"]


def parse(o: FlowOutput) -> None:
    perf.parse(o, PROGRAM)


TOOL = Tool(PROGRAM, client, server, parse)
