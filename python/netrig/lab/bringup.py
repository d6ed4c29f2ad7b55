"""Bringing a lab up, and finding the one a command means: the rules `netrig up` and
every command on a running lab follow.

- `which(prefix)`: the lab a command acts on: the prefix given, else the only lab up;
  none, or several without a prefix, is an error that says what to do.
- `bring_up(file, ...)`: builds the lab a topology file describes (the file is read
  once: what is built is what is recorded) and leaves it running. A lab whose routers
  run OSPF or BGP (FRR) is up once routing has converged, within `wait` seconds
  (default `frr.default_wait_s`); a lab that did not converge in time is left up to
  look at, and `Up.failed` says what is missing.

Owns these rules, not their words on a terminal (netrig.cli.lab).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from netrig.errors import NetrigError
from netrig.lab.state import LabError, LabState, labs


def which(prefix: str | None) -> str:
    """The lab meant: `prefix` when given, else the only lab up."""
    if prefix:
        return prefix
    up = labs()
    if len(up) == 1:
        return up[0]
    if not up:
        raise LabError("no lab is up (netrig up FILE builds one)")
    raise LabError(f"several labs are up ({', '.join(up)}): say which with --prefix")


@dataclass
class Up:
    """A lab `bring_up` left running."""

    state: LabState
    nodes: int
    links: int
    took_s: float  # building and converging
    converged_s: float | None  # routing's convergence (None: no routers waited for)
    failed: LabError | None  # routing did not converge in time: the lab is up anyway
    router: str | None  # the first router running a protocol (where to look first)


def bring_up(file: str | os.PathLike[str], prefix: str | None = None, wait: float | None = None,
             no_wait: bool = False, progress: Callable[[str], None] | None = None) -> Up:
    """Builds the lab `file` describes and leaves it running (see the module's text).
    `prefix`: the lab's, instead of the file's; `progress`: each step in words."""
    from netrig.lab import frr
    from netrig.lab.network import Network
    from netrig.lab.state import read_topology
    from netrig.topo.load import loads
    from netrig.topo.model import TopologyError

    t0 = time.monotonic()
    _, text, _ = read_topology(file)  # read once: what is built is what is recorded
    topo = loads(text, source=str(file))  # errors name the file as typed; the lab, its absolute path
    problem = None if prefix else topo.lab_prefix_problem()
    if problem:  # found here, at its line, rather than by the builder
        raise TopologyError([problem])
    if wait is not None and wait <= 0:
        raise NetrigError(f"--wait {wait:g}: give seconds above 0 (or --no-wait)")
    net = Network(topo, prefix=prefix, topology_text=text, progress=progress)
    net.start()
    routed = bool(net.topo.dynamic) and not no_wait
    wait = wait if wait is not None else frr.default_wait_s(net.topo)
    took: float | None = None
    failed: LabError | None = None
    try:
        if routed:
            if progress is not None:
                progress(f"waiting up to {wait:g} s for routing to converge")
            took = net.converge(wait)
    except LabError as e:
        failed = e
    finally:
        st = net.detach()  # up, converged or not: the lab stays for a look
    return Up(st, len(net.topo.nodes), len(net.topo.links), time.monotonic() - t0, took, failed,
              net.topo.dynamic[0] if net.topo.dynamic else None)
