"""Max-min fair shares of concurrent flows over shared links, and Jain's index.

Pure numbers: links are names with capacities, flows are the link names they cross
(plus an optional demand). Which links a flow crosses comes from the topology
(`netrig.theory.path`); here it is given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from netrig.theory.formulas import TheoryError

_EPS = 1e-12  # relative: levels this close count as the same level


@dataclass(frozen=True)
class Flow:
    """A flow over `links` (names in the capacity map; links not in it are unlimited).
    `demand` caps its rate (a UDP sender at a fixed rate); None means elastic (TCP
    takes what it is given)."""

    name: str
    links: tuple[str, ...]
    demand: float | None = None


@dataclass(frozen=True)
class Share:
    """A flow's max-min fair rate and what stopped it growing: the name of its
    bottleneck link, "demand", or "none" (nothing limits it: rate is inf)."""

    rate: float
    limit: str


def max_min_fair(flows: Sequence[Flow], capacity: Mapping[str, float]) -> dict[str, Share]:
    """Max-min fair rates by progressive filling (Bertsekas & Gallager, Data Networks,
    §6.5.2): every unfrozen flow's rate rises together; a link whose capacity is used
    up freezes the flows that cross it, a flow that reaches its demand freezes alone.

    Each round, with F_l the rates already frozen on link l and n_l its unfrozen
    flows, the level rises to min(min_l (C_l − F_l)/n_l, smallest unmet demand).
    Each connection of a parallel (-P N) transfer is its own flow.
    Two flows over a 30 Mbit/s link: 15 each; a 5 Mbit/s UDP flow and two TCP flows
    over 100 Mbit/s: 5, 47.5, 47.5.
    """
    names = [f.name for f in flows]
    if len(set(names)) != len(names):
        raise TheoryError("max_min_fair: two flows share a name")
    for link, c in capacity.items():
        if not c > 0:
            raise TheoryError(f"max_min_fair: link {link} has capacity {c} (must be above 0)")
    for f in flows:
        if f.demand is not None and f.demand < 0:
            raise TheoryError(f"max_min_fair: flow {f.name} has a negative demand")
    crossing = {f.name: [l for l in dict.fromkeys(f.links) if l in capacity] for f in flows}
    active = {f.name: f for f in flows}
    shares: dict[str, Share] = {}
    while active:
        level = math.inf
        limit = "none"
        for link, c in capacity.items():
            on = [n for n in active if link in crossing[n]]
            if not on:
                continue
            frozen = sum(s.rate for n, s in shares.items() if link in crossing[n])
            here = max(0.0, c - frozen) / len(on)
            if here < level:
                level, limit = here, link
        demands = [f.demand for f in active.values() if f.demand is not None]
        if demands and min(demands) <= level:
            level, limit = min(demands), "demand"
        if math.isinf(level):
            for n in active:
                shares[n] = Share(math.inf, "none")
            break
        tol = _EPS * max(level, 1.0)
        done = []
        for n, f in active.items():
            if f.demand is not None and f.demand <= level + tol:
                shares[n] = Share(f.demand, "demand")
                done.append(n)
        for link, c in capacity.items():
            on = [n for n in active if link in crossing[n] and n not in done]
            if not on:
                continue
            frozen = sum(s.rate for n, s in shares.items() if link in crossing[n])
            if max(0.0, c - frozen) / len(on) <= level + tol:
                for n in on:
                    shares[n] = Share(level, link)
                    done.append(n)
        if not done:  # cannot happen: the level came from a link or a demand
            raise TheoryError(f"max_min_fair: no flow froze at level {level} ({limit})")
        for n in done:
            active.pop(n, None)
    return {n: shares[n] for n in names}


def jain(rates: Sequence[float]) -> float:
    """Jain's fairness index (Jain, Chiu & Hawe, DEC-TR-301, 1984):
    (Σx)² / (n·Σx²), from 1/n (one flow takes all) to 1 (all equal)."""
    if not rates:
        raise TheoryError("Jain's index needs at least one rate")
    if any(x < 0 or math.isinf(x) for x in rates):
        raise TheoryError("Jain's index needs finite rates of 0 or more")
    squares = sum(x * x for x in rates)
    if squares == 0:
        return 1.0
    return sum(rates) ** 2 / (len(rates) * squares)
