"""`netrig cluster`: a Dask scheduler, a netrig worker, the workers' status, and the
cluster's certificates (netrig.exp.execute.cluster owns all of it; this says the outcome)."""

from __future__ import annotations

import argparse
import os

from netrig.cli.base import Adder, NeedsRoot
from netrig.cli.run import CERT_HELP
from netrig.errors import NetrigError


def cluster(args: argparse.Namespace) -> int:
    from netrig.exp.execute import cluster

    if args.action == "scheduler":
        if args.target:
            raise NetrigError("netrig cluster scheduler takes no ADDRESS (--host and --port say where it listens)")
        cluster.serve_scheduler(args.port, args.host)
        return 0
    if args.action == "cert":
        if not args.target or not args.out:
            raise NetrigError("netrig cluster cert NAME -o FILE: the machine's name (e.g. lab1) and "
                              "the bundle file to write (e.g. -o lab1.pem)")
        b = cluster.issue(args.target, args.out)
        print(f"{args.out}: a certificate for {b.name}, valid until {b.not_after:%Y-%m-%d}, with its key "
              f"and the cluster's CA ({b.source}). Copy it to that machine (it holds a private key: "
              "keep it 0600 there) and give it with --cert FILE or NETRIG_CLUSTER_CERT. Whoever holds "
              "it can run commands as root on every worker.")
        return 0
    if not args.target:
        raise NetrigError(f"netrig cluster {args.action} ADDRESS: the scheduler's (e.g. tls://10.0.0.1:8786)")
    if args.action == "status":
        rows = cluster.status(args.target, args.cert)
        print(f"{len(rows)} netrig worker(s) at {args.target}")
        for r in sorted(rows, key=lambda r: r["name"]):  # two lines each: 80 columns
            print(f"  {r['name']:<12} {'busy' if r['busy'] else 'idle':<4}  {r['hostname']}  {r['address']}\n"
                  f"  {'':<12} kernel {r['kernel']}, {r['cpus']} CPU(s), netrig {r['netrig']}")
        return 0
    if os.geteuid() != 0:
        raise NeedsRoot("netrig cluster worker needs root (its runs create network namespaces); "
                        "run it with sudo")
    cluster.serve_worker(args.target, args.name, args.host, args.cert)
    return 0


def register(cmd: Adder) -> None:
    p = cmd("cluster", cluster, "cluster scheduler | worker ADDRESS | "
            "status ADDRESS | cert NAME -o FILE",
            "run campaigns on several machines: a Dask scheduler, a netrig worker on each "
            "machine (root, one run at a time), then netrig run --cluster ADDRESS; only the "
            "cluster's own certificates get in (TLS)",
            ["netrig cluster scheduler --host 10.0.0.1",
             "sudo netrig cluster worker tls://10.0.0.1:8786 --name lab1",
             "netrig cluster cert lab2 -o lab2.pem",
             "sudo netrig cluster worker tls://10.0.0.1:8786 --cert lab2.pem   # on lab2",
             "netrig cluster status tls://10.0.0.1:8786",
             "netrig run examples/003-window.yaml --cluster tls://10.0.0.1:8786"],
            "Every machine needs the same netrig. The first scheduler makes the cluster's CA "
            "in $NETRIG_CLUSTER_DIR (~/.config/netrig/cluster); on that machine workers and "
            "heads need no --cert. A worker starts by removing the labs a crash left (as "
            "netrig clean); a run whose worker dies is run again on another.")
    p.add_argument("action", choices=["scheduler", "worker", "status", "cert"],
                   help="start a scheduler, start a worker, list the workers, or issue a "
                        "certificate (e.g. status)")
    p.add_argument("target", nargs="?", metavar="ADDRESS|NAME",
                   help="the scheduler's address, for worker and status (e.g. tls://10.0.0.1:8786); "
                        "the machine's name, for cert (e.g. lab2)")
    p.add_argument("--port", type=int, default=8786, metavar="P",
                   help="the scheduler's port (default 8786; 0: any free one; e.g. --port 9000)")
    p.add_argument("--host", metavar="H",
                   help="the address to listen on and tell others (default: the scheduler on "
                        "127.0.0.1, a worker on the address that reaches the scheduler; e.g. "
                        "--host 10.0.0.1)")
    p.add_argument("--name", metavar="N", help="the worker's name (default: its address; e.g. lab1)")
    p.add_argument("--cert", metavar="FILE", help=CERT_HELP)
    p.add_argument("-o", "--out", metavar="FILE", help="cert: the bundle file to write, new (e.g. -o lab2.pem)")
