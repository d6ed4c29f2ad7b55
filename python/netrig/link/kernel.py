"""The kernel backend: tc qdiscs on the egress of each shaped direction's veth end.

Rate: htb (one class at the rate) with the queue as its leaf: pfifo/bfifo for
drop-tail, or the AQM's qdisc. Delay, jitter, loss, duplicate, corrupt and reorder:
netem (as htb's leaf, carrying the queue limit). A trace has no kernel equivalent.
What each direction needs is `needs()`; before anything is built,
`netrig.lab.qdiscs.check()` asks the kernel for each of those qdisc kinds and refuses,
naming the missing qdisc and the link that wants it; nothing is left out silently.
"""

from __future__ import annotations

from netrig.errors import NetrigError
from netrig.link.spec import Direction

DIRS = ("a_to_b", "b_to_a")
_AQM_QDISC = {"red": "red", "codel": "codel", "pie": "pie", "fq_codel": "fq_codel"}


class KernelBackendError(NetrigError):
    pass


def needs(d: Direction) -> list[tuple[str, str]]:
    """(qdisc kind, why) for one direction."""
    out = []
    if d.trace:
        out.append(("trace", "a delivery trace (only the user-space backend replays traces)"))
    if d.rate_bps:
        out.append(("htb", "the rate"))
    why = [w for w, v in (("delay", d.delay_s), ("jitter", d.jitter_s), ("loss", d.loss or d.gemodel),
                          ("duplicate", d.duplicate), ("corrupt", d.corrupt), ("reorder", d.reorder)) if v]
    if why:
        out.append(("netem", "/".join(why)))
    aqm = d.aqm.name
    if aqm != "droptail":
        if why:
            out.append((aqm, f"the {aqm} AQM together with netem (netem is a leaf: use backend: userspace)"))
        else:
            out.append((_AQM_QDISC[aqm], f"the {aqm} AQM"))
    elif not why:
        out.append(("bfifo" if d.queue_bytes else "pfifo", "the queue"))
    return out


def tc_lines(dev: str, d: Direction) -> list[str]:
    """`tc -batch` lines shaping dev's egress as direction d says."""
    lines = []
    parent = "root"
    if d.rate_bps:
        rate = int(d.rate_bps)
        # A burst of at least one MTU frame and 1 ms of rate, as tc's own default does.
        burst = max(1600, rate // 8 // 1000)
        lines += [f"qdisc add dev {dev} root handle 1: htb default 1",
                  f"class add dev {dev} parent 1: classid 1:1 htb rate {rate}bit ceil {rate}bit "
                  f"burst {burst} cburst {burst}"]
        parent = "parent 1:1"
    limit = d.queue_packets if d.queue_packets is not None else 1000
    netem = []
    if d.delay_s or d.jitter_s:
        netem += ["delay", f"{d.delay_s * 1e6:.0f}us"]
        if d.jitter_s:
            netem += [f"{d.jitter_s * 1e6:.0f}us"]
            if d.correlation:
                netem += [f"{d.correlation * 100:g}%"]
            if d.distribution:
                netem += ["distribution", d.distribution]
    if d.gemodel:
        g = d.gemodel
        netem += ["loss", "gemodel", *(f"{g[k] * 100:g}%" for k in ("p", "r"))]
        netem += [f"{g['loss_bad'] * 100:g}%", f"{g['loss_good'] * 100:g}%"]  # 1-h, 1-k
    elif d.loss:
        netem += ["loss", f"{d.loss * 100:g}%"] + ([f"{d.loss_correlation * 100:g}%"] if d.loss_correlation else [])
    for key in ("duplicate", "corrupt"):
        if getattr(d, key):
            netem += [key, f"{getattr(d, key) * 100:g}%"]
    if d.reorder:
        netem += ["reorder", f"{d.reorder * 100:g}%", "gap", str(d.reorder_gap)]
    if netem:
        lines.append(f"qdisc add dev {dev} {parent} handle 10: netem limit {limit} {' '.join(netem)}")
    elif d.aqm.name != "droptail":
        params = []
        p = d.aqm.given
        if d.queue_packets is not None:
            params += ["limit", str(d.queue_packets)]
        for key in ("target", "interval", "tupdate"):
            if key in p:
                params += [key, str(p[key])]
        if p.get("ecn"):
            params.append("ecn")
        lines.append(f"qdisc add dev {dev} {parent} handle 10: {_AQM_QDISC[d.aqm.name]} {' '.join(params)}")
    elif d.queue_bytes:
        lines.append(f"qdisc add dev {dev} {parent} handle 10: bfifo limit {d.queue_bytes}")
    else:
        lines.append(f"qdisc add dev {dev} {parent} handle 10: pfifo limit {limit}")
    return lines
