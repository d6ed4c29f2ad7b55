"""`netrig link set`'s words and the link they name in a running lab.

`words(...)` splits `L1 delay=50ms` or `r2 r3 rate=10Mbit loss=1%` into the link (one
word: its name; two: its ends) and its KEY=VALUE words, refusing words in the wrong
order, too many ends, or nothing to set, each with an example. `find(net, a, b)` is
the lab's link by name or ends; one that is not there is told with the lab's links.
`direction(...)` reads `--dir` (FROM-TO, or a_to_b / b_to_a in the order the ends were
named) as the link's own direction and says it in its ends' order (`r4→r3`).
(The KEY=VALUE words themselves are read by netrig.topo.load.link_params.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from netrig import suggest
from netrig.errors import NetrigError

if TYPE_CHECKING:
    from netrig.lab.network import Network
    from netrig.topo.model import Link


def words(said: list[str]) -> tuple[str, str | None, list[str]]:
    """`netrig link set`'s words as (link name or end A, end B or None, KEY=VALUE...):
    one word before the keys is a link's name, two are its ends."""
    ends = [w for w in said if "=" not in w]
    params = [w for w in said if "=" in w]
    if ends != said[: len(ends)]:
        raise NetrigError(f"netrig link set: '{ends[-1]}' after the keys: the link comes first "
                          "(e.g. L1, or r2 r3), then KEY=VALUE (e.g. delay=50ms)")
    if not ends:
        raise NetrigError("netrig link set: which link? give its name or its two ends first "
                          "(e.g. netrig link set L1 delay=50ms, or netrig link set r2 r3 delay=50ms)")
    if len(ends) > 2:
        raise NetrigError(f"netrig link set: {' '.join(ends)}: a link is one name or two ends; "
                          "a key is KEY=VALUE (e.g. delay=50ms)")
    if not params:
        raise NetrigError("netrig link set: nothing to set: give KEY=VALUE after the link "
                          f"(e.g. netrig link set {' '.join(ends)} delay=50ms)")
    return ends[0], (ends[1] if len(ends) == 2 else None), params


def find(net: Network, a: str, b: str | None) -> Link:
    """The lab's link named `a`, or between `a` and `b`."""
    from netrig.topo.model import TopologyError

    try:
        return net.topo.link_named(a, b)
    except TopologyError:
        links = net.topo.links
        if b is None:
            raise NetrigError(f"lab '{net.prefix}' has no link named '{a}'"
                              f"{suggest.unknown(a, [x.name for x in links], 'its links')}; "
                              "or give the link's two ends (e.g. r2 r3)") from None
        raise NetrigError(f"lab '{net.prefix}' has no link between {a} and {b} (its links: "
                          f"{', '.join(f'{x.name} ({x.a} {x.b})' for x in links)})") from None


def direction(link: Link, given: str | None, a: str, b: str | None) -> tuple[str | None, str]:
    """`--dir` as the link's own direction (`a_to_b`, `b_to_a`, or None for both) and in
    words, its ends in the order it goes (`r4→r3`). `given` is FROM-TO (`r4-r3`, also
    `r4->r3` or `r4→r3`), or a_to_b / b_to_a: from the first end named on the command line
    to the second (`link set r4 r3 --dir a_to_b` is r4→r3), or, for a link named by its
    name, the file's a to its b."""
    ends = f"{link.a}→{link.b}", f"{link.b}→{link.a}"
    if given is None:
        return None, f"{ends[0]} and {ends[1]}"
    if given in ("a_to_b", "b_to_a"):
        start = a if b is not None else link.a  # the first end as the user named them
        there = (given == "a_to_b") == (start == link.a)
        return ("a_to_b" if there else "b_to_a"), ends[0 if there else 1]
    for k, (x, y) in enumerate(((link.a, link.b), (link.b, link.a))):
        if given in (f"{x}-{y}", f"{x}->{y}", f"{x}→{y}"):
            return ("a_to_b", "b_to_a")[k], ends[k]
    raise NetrigError(f"--dir {given}: link {link.name} joins {link.a} and {link.b}: give "
                      f"--dir {link.a}-{link.b} or --dir {link.b}-{link.a} (FROM-TO; or a_to_b, "
                      "b_to_a: from the first end named to the second)")
