"""Commands on packets: `capture` (a link or a node's interface of a running lab, to
pcapng, until -t seconds or Ctrl-C) and `analyze` (Wireshark's TCP analysis of
capture files, as a table, JSON or a Stevens graph).

Where to capture is netrig.capture.lab's to resolve; the analysis is netrig.capture's.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from netrig.cli.base import Adder, prefix_arg, the_lab
from netrig.errors import NetrigError


def capture(args: argparse.Namespace) -> int:
    import signal

    from netrig import safefs, units
    from netrig.capture import lab as cap
    from netrig.lab.network import Network

    net = Network.attach(the_lab(args))
    where = cap.resolve_word(net, args.what, args.dir)
    out = Path(args.write or f"{where.label}.pcapng")
    base = out.with_suffix("") if out.suffix == ".pcapng" else out
    options = cap.Options(filter=args.filter, snaplen=args.snaplen, size=units.size_bytes(args.size),
                          files=args.files, drops=not args.no_drops)
    into = safefs.Held(base.resolve().parent)
    c = cap.Capture(net, where, into, base.name, options, keep_log=False)
    stop = False

    def interrupted(*_: object) -> None:
        nonlocal stop
        stop = True

    old = signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    try:
        c.start()
        by = "netrig-link, with the frames it drops" if where.emulated else "dumpcap"
        print(f"capturing {where.describe} ({by}) into {base}.pcapng; "
              + (f"for {args.seconds:g} s" if args.seconds else "Ctrl-C stops"), flush=True)
        t0 = time.monotonic()
        while not stop and (args.seconds is None or time.monotonic() - t0 < args.seconds):
            time.sleep(0.1)
    finally:
        summary = c.stop()
        into.close()
        signal.signal(signal.SIGINT, old)
    files = summary["files"]
    said = [f"{len(files)} file{'s' if len(files) != 1 else ''}", f"{summary['bytes'] / 1e6:.1f} MB"]
    if summary.get("frames") is not None:
        said.append(f"{summary['frames']} frames")
    if summary.get("drops_written"):
        said.append(f"{summary['drops_written']} the link dropped (commented)")
    if summary.get("superframes"):
        said.append(f"{summary['superframes']} offload superframes written as their wire segments")
    if summary.get("unsegmented"):
        said.append(f"{summary['unsegmented']} written whole, as they came (their comments say why)")
    print(f"captured {where.describe}: {', '.join(said)}: {' '.join(files)}")
    if summary.get("error"):
        raise NetrigError(summary["error"])
    if args.analyze and files:
        from netrig.capture import report as capreport

        print(capreport.tcp_table(files), end="")
    return 0


def analyze(args: argparse.Namespace) -> int:
    from netrig.capture import flows as capflows
    from netrig.capture import report as capreport
    from netrig.capture import stevens

    if args.stevens is not None:
        a = capflows.analyze_files([Path(f) for f in args.files])
        out = Path(args.output or f"stream{args.stevens}-stevens.png")
        if args.stevens not in {s["stream"] for s in a.get("streams", [])}:
            raise NetrigError(f"no TCP stream {args.stevens} in {' '.join(args.files)} (it has "
                              f"{len(a.get('streams', []))}, numbered from 0 as Wireshark's tcp.stream)")
        print(stevens.stevens_figure(a, args.stevens, out))
    elif args.json:
        a = capflows.analyze_files([Path(f) for f in args.files], series=None)
        print(json.dumps(a, indent=1))
    else:
        print(capreport.tcp_table(args.files), end="")
    return 0


def register(cmd: Adder) -> None:
    p = cmd("capture", capture, "capture LINK|NODE[:IFACE] [--dir D] [-f FILTER] [-w FILE] "
            "[-t S] [--analyze]", "capture a link or a node's interface of a running lab to "
            "pcapng", ["netrig capture s0-h2 --dir a_to_b -t 10 -w bloat.pcapng",
                       "netrig capture h1:eth0 -f 'tcp port 5201' --analyze",
                       "netrig capture L2 --size 200MB --files 4"],
            "A link netrig-link emulates is captured by netrig-link: each frame as the link "
            "delivers it, and each frame it drops, commented with the cause (Wireshark shows "
            "the comment; the filter frame.comment finds them). Any other link, and a node's "
            "interface, is captured by dumpcap in the node's namespace. --analyze prints "
            "Wireshark's TCP analysis of each connection captured.")
    prefix_arg(p)
    p.add_argument("what", metavar="LINK|NODE[:IFACE]",
                   help="a link by its name or ends (e.g. L2, s0-h2), or a node's interface "
                        "(e.g. h1:eth0; h1 alone if it has one)")
    p.add_argument("--dir", choices=["a_to_b", "b_to_a", "both"], default="both",
                   help="a link's direction (default both; e.g. --dir a_to_b)")
    p.add_argument("-f", "--filter", metavar="EXPR",
                   help="a BPF filter, in tcpdump's syntax (e.g. -f 'tcp port 5201')")
    p.add_argument("-s", "--snaplen", type=int, default=262_144, metavar="BYTES",
                   help="bytes kept of each frame (default 262144; e.g. -s 128)")
    p.add_argument("-w", "--write", metavar="FILE",
                   help="the capture file (default LINK.pcapng here; e.g. -w run1.pcapng)")
    p.add_argument("-t", "--seconds", type=float, metavar="S",
                   help="stop after S seconds (default: at Ctrl-C; e.g. -t 10)")
    p.add_argument("--size", default="1GB", metavar="SIZE",
                   help="the bound on all the files together (default 1GB; e.g. 200MB)")
    p.add_argument("--files", type=int, default=1, metavar="N",
                   help="1: stop writing at --size; N: a ring of N files, the oldest "
                        "overwritten (default 1; e.g. --files 4)")
    p.add_argument("--no-drops", action="store_true",
                   help="leave out the frames an emulated link dropped (e.g. --no-drops)")
    p.add_argument("--analyze", action="store_true",
                   help="then print each TCP connection's analysis: retransmission %%, "
                        "goodput, RTT, zero-window time, losses (e.g. --analyze)")
    p = cmd("analyze", analyze, "analyze FILE... [--json] [--stevens N [-o PNG]]",
            "Wireshark's TCP analysis of a capture: per stream its retransmission %, goodput, "
            "RTT p50/p99, zero-window time and where its losses cluster",
            ["netrig analyze bloat.pcapng",
                                  "netrig analyze run.pcap --json | jq .totals",
                                  "netrig analyze bloat.pcapng --stevens 1 -o s1.png"],
            "Counts agree with tshark -Y tcp.analysis.* (Wireshark 4.0) frame for frame; "
            "netrig-analyze does it some 50 times faster. One line per stream, in 80 columns "
            "(the 40 busiest when there are more); --json has every stream and direction. "
            "Several files are one capture (a ring's files, oldest first). pcap or pcapng, "
            "gzip-compressed or not; every common link type and tunnel (Ethernet, VLAN, MPLS, "
            "PPP, 802.11, GRE, VXLAN...).")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="a pcap or pcapng file, or a ring's files in order (e.g. cap.pcapng)")
    p.add_argument("--json", action="store_true",
                   help="the whole analysis as JSON, every stream and direction: flag counts, "
                        "retransmission ratios, goodput, RTT distribution, zero-window time, "
                        "losses (e.g. --json)")
    p.add_argument("--stevens", type=int, metavar="N",
                   help="draw TCP stream N's time-sequence (Stevens) graph and throughput "
                        "(e.g. --stevens 1)")
    p.add_argument("-o", "--output", metavar="PNG",
                   help="where the graph goes (default streamN-stevens.png; e.g. -o s1.png)")
