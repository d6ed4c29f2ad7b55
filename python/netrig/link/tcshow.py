"""`tc [-s] qdisc show` for a link direction netrig-link carries (pure).

Owns the lines tc(8) prints for a qdisc (iproute2 6.1: print_qdisc, print_tcstats2_attr
and each qdisc's print_qopt; sizes, times and rates as its sprint_* write them), made
from a direction's keys (the qdisc that names what it runs: its AQM, else netem, else
the fifo of its queue) and netrig-link's counters for it (`{"cmd": "stats"}`). One qdisc
a direction, not the tree a kernel would hold; pie's and codel's extra `-s` lines
(their xstats) are not printed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netrig.link.spec import resolve
from netrig.link.tcwords import AQMS


def sprint_size(n: int) -> str:
    """tc's sprint_size(): 1536 -> 1536b, 65536 -> 64Kb, 2 MiB -> 2Mb (within tc's slack)."""
    kilo, mega = 1024, 1024 * 1024
    if n >= mega and abs(mega * round(n / mega) - n) < 1024:
        return f"{round(n / mega)}Mb"
    if n >= kilo and abs(kilo * round(n / kilo) - n) < 16:
        return f"{round(n / kilo)}Kb"
    return f"{n}b"


def sprint_time(us: float) -> str:
    """tc's sprint_time() of microseconds: 20ms, 1.5s, 800us."""
    if us >= 1e6:
        return f"{us / 1e6:.3g}s"
    if us >= 1e3:
        return f"{us / 1e3:.3g}ms"
    return f"{int(us)}us"


def sprint_rate(bps: float) -> str:
    """tc's print_rate(): 10Mbit, 1500Kbit, 64bit (decimal prefixes, whole numbers)."""
    rate = int(bps) // 8 * 8
    units = ["", "K", "M", "G", "T"]
    i = 0
    while i < len(units) - 1:
        if rate < 1000 or (rate % 1000 and rate < 1000 * 1000):
            break
        rate //= 1000
        i += 1
    return f"{rate}{units[i]}bit"


def _pc(p: float) -> str:
    return f"{p * 100:g}%"


def kind_of(text: Mapping[str, Any]) -> str:
    """The qdisc that names what a direction runs: its AQM, else netem (delay, loss, ...
    or a rate), else the fifo of its queue's unit."""
    from netrig.link.spec import resolve

    d = resolve(text)
    if d.aqm.name != "droptail":
        return d.aqm.name
    if d.shaped:
        return "netem"
    return "bfifo" if d.limit[1] is not None else "pfifo"


def options(text: Mapping[str, Any]) -> str:
    """What `tc qdisc show` prints after `refcnt 2 ` for the direction, as tc does."""
    d = resolve(text)
    kind = kind_of(text)
    packets, nbytes = d.limit
    limit = f"{packets}p" if packets is not None else sprint_size(nbytes or 0)
    a = d.aqm
    ecn = "ecn " if a.name in AQMS and a.get("ecn") else ""
    if kind == "pie":
        return (f"limit {limit} target {sprint_time(a.get('target') * 1e6)} tupdate "
                f"{sprint_time(a.get('tupdate') * 1e6)} alpha {round(a.get('alpha') * 16)} "
                f"beta {round(a.get('beta') * 16)} {ecn}")
    if kind == "codel":
        return (f"limit {limit} target {sprint_time(a.get('target') * 1e6)} "
                f"interval {sprint_time(a.get('interval') * 1e6)} {ecn}")
    if kind == "fq_codel":
        return (f"limit {limit} flows {a.get('flows')} quantum {a.get('quantum')} "
                f"target {sprint_time(a.get('target') * 1e6)} interval {sprint_time(a.get('interval') * 1e6)} "
                f"{ecn}")
    if kind == "red":
        return (f"limit {sprint_size(nbytes or 0)} min {sprint_size(int(a.get('min_th')))} "
                f"max {sprint_size(int(a.get('max_th')))} {ecn}")
    if kind in ("pfifo", "bfifo"):
        return f"limit {limit}"
    out = f"limit {packets if packets is not None else nbytes}"
    if d.delay_s or d.jitter_s:
        out += f" delay {sprint_time(d.delay_s * 1e6)}"
        if d.jitter_s:
            out += f"  {sprint_time(d.jitter_s * 1e6)}"
            if d.correlation:
                out += f" {_pc(d.correlation)}"
    if d.loss:
        out += f" loss {_pc(d.loss)}" + (f" {_pc(d.loss_correlation)}" if d.loss_correlation else "")
    if d.gemodel:
        g = d.gemodel
        out += (f" loss gemodel p {_pc(g['p'])} r {_pc(g['r'])} 1-h {_pc(g['loss_bad'])} "
                f"1-k {_pc(g['loss_good'])}")
    if d.duplicate:
        out += f" duplicate {_pc(d.duplicate)}"
    if d.reorder:
        out += f" reorder {_pc(d.reorder)}"
    if d.corrupt:
        out += f" corrupt {_pc(d.corrupt)}"
    if d.rate_bps:
        out += f" rate {sprint_rate(d.rate_bps)}"
        if d.overhead_bytes:
            out += f" packetoverhead {d.overhead_bytes}"
    if d.get("ecn"):
        out += " ecn "
    if d.reorder and d.reorder_gap:
        out += f" gap {d.reorder_gap}"
    return out


SHOWN_HANDLE = "8001:"  # the handle the kernel gives the first qdisc added without one


def show(text: Mapping[str, Any], counters: Mapping[str, Any] | None, dev: str | None) -> str:
    """`tc [-s] qdisc show [dev DEV]`'s lines for one direction: `dev` is the device's
    name when tc was not given one (its lines then name it), counters netrig-link's for
    the direction (None: without -s). Sent counts what the link delivered; dropped, its
    losses, overflows, AQM drops and drops while down; overlimits, RED's marks and early
    drops (Linux's RED counts those there); backlog, the queue."""
    kind = kind_of(text)
    line = f"qdisc {kind} {SHOWN_HANDLE} " + (f"dev {dev} " if dev else "") + "root refcnt 2 " + options(text)
    if counters is None:
        return line + "\n"
    c = {k: int(counters.get(k) or 0) for k in ("delivered", "delivered_bytes", "lost", "drops_overflow",
                                                "drops_aqm", "drops_down", "ecn_marks", "queue_packets",
                                                "queue_bytes")}
    dropped = c["lost"] + c["drops_overflow"] + c["drops_aqm"] + c["drops_down"]
    over = c["drops_aqm"] + c["ecn_marks"] if kind == "red" else 0
    return (f"{line}\n Sent {c['delivered_bytes']} bytes {c['delivered']} pkt (dropped {dropped}, "
            f"overlimits {over} requeues 0) \n backlog {sprint_size(c['queue_bytes'])} "
            f"{c['queue_packets']}p requeues 0\n")
