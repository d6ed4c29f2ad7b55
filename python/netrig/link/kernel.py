"""The kernel backend: tc qdiscs on the egress of each direction's veth end.

The layout, for one direction (`plan`):

    root: htb, one class 1:1 at the rate        (when there is a rate)
      leaf 10: netem                            (delay/jitter/loss/duplicate/corrupt/reorder)
            or the AQM's qdisc (pie, codel, fq_codel, red)
            or bfifo/pfifo                      (drop-tail, by the queue's unit)

Under htb the leaf is the queue that waits for the rate, so netem, when there, is the
queue too: its limit (packets) counts the packets on its delay line as well as those
waiting for the rate, and neither an AQM nor a byte limit can be put with it (a qdisc
grafted under netem sees packets only once their delay is over).

Each qdisc's options come from its translator in `netrig.link.tc`. Before a layout is
made, every key the direction sets must be owned by some translator (`tc.OWNS`), and
each translator refuses what its qdisc cannot express, naming the link, the direction
and the key: nothing is left out silently. `netrig.lab.qdiscs.check()` then runs these
same lines on a scratch namespace, so what the probe tried is what build writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from netrig.link import tc
from netrig.link.spec import Direction
from netrig.link.tc import KernelBackendError, refuse

__all__ = ["DIRS", "KernelBackendError", "Qdisc", "needs", "plan", "tc_lines"]

DIRS = ("a_to_b", "b_to_a")
# The keys that put netem on a direction (its other keys only modify these).
NETEM_STAGES = ("delay", "jitter", "loss", "gemodel", "duplicate", "corrupt", "reorder")
_OWNED = set().union(*tc.OWNS.values())


@dataclass(frozen=True)
class Qdisc:
    """One qdisc of a direction's layout: tc's `kind`, where it hangs, its options;
    `klass` the options of htb's class; `why` what in the direction asked for it."""

    kind: str
    why: str
    parent: str
    handle: str
    words: tuple[str, ...]
    klass: tuple[str, ...] = ()


def _owned(d: Direction, at: str) -> None:
    """Refuses a key (or discipline parameter) that no translator reads."""
    for key in d.values:
        if key not in _OWNED:
            raise refuse(at, key, "the kernel backend has no translator for this key")
    name = d.aqm.name
    if name == "droptail":
        return
    if name not in tc.AQM:
        raise refuse(at, "aqm", f"the kernel backend has no translator for the {name} discipline")
    owns = tc.OWNS[tc.AQM[name][0]]
    for param in d.aqm.given:
        if f"aqm.{param}" not in owns:
            raise refuse(at, f"aqm.{param}", f"the kernel backend's {name} has no translator for it")


def plan(d: Direction, at: str) -> list[Qdisc]:
    """The qdiscs for direction d (`at`: `link r1-r2 a_to_b`, for errors), root first;
    none for a plain direction. Raises KernelBackendError naming what cannot be done."""
    _owned(d, at)
    if d.plain:
        return []
    if d.trace:
        raise refuse(at, "trace", "no kernel qdisc replays a delivery trace")
    out = []
    parent = "root"
    if d.rate_bps:
        out.append(Qdisc("htb", "the rate", "root", "1:", ("default", "1"), tuple(tc.htb_class(d, at))))
        parent = "parent 1:1"
    stages = [k for k in NETEM_STAGES if k in d.values]
    if stages:
        out.append(Qdisc("netem", "/".join(stages), parent, "10:", tuple(tc.netem(d, at))))
    elif d.aqm.name != "droptail":
        kind, translate = tc.AQM[d.aqm.name]
        out.append(Qdisc(kind, f"the {d.aqm.name} AQM", parent, "10:", tuple(translate(d, at))))
    elif d.limit[1] is not None:
        out.append(Qdisc("bfifo", "the queue", parent, "10:", tuple(tc.bfifo(d, at))))
    else:
        out.append(Qdisc("pfifo", "the queue", parent, "10:", tuple(tc.pfifo(d, at))))
    return out


def lines(dev: str, qdiscs: list[Qdisc]) -> list[str]:
    """`tc -batch` lines putting qdiscs on dev's egress."""
    out = []
    for q in qdiscs:
        out.append(" ".join(["qdisc", "add", "dev", dev, q.parent, "handle", q.handle, q.kind, *q.words]))
        if q.klass:
            out.append(" ".join(["class", "add", "dev", dev, "parent", q.handle, "classid", "1:1", q.kind,
                                 *q.klass]))
    return out


def tc_lines(dev: str, d: Direction, at: str) -> list[str]:
    """`tc -batch` lines shaping dev's egress as direction d says."""
    return lines(dev, plan(d, at))


def needs(d: Direction, at: str) -> list[tuple[str, str]]:
    """(qdisc kind, why) for one direction."""
    return [(q.kind, q.why) for q in plan(d, at)]
