"""Waiting for a routed lab to converge (`Network.converge`), by watching, not polling.

This module owns the wait and its verdict. Every FRR router's main table is watched
through route notifications (netrig.lab.routewatch: one netlink socket per router, one
selector, this thread), so nothing asks a router for its table. Converged is:

1. every router has a route to every prefix it should (`frr.expected_routes`);
2. then each router's daemons are asked, in-process through their vty sockets
   (netrig.lab.frrvty, no vtysh): its OSPF neighbours Full on every interface
   (`frr.expected_adjacencies`) for longer than the settle window, no SPF run due, and
   with BGP every session Established for longer than bgpd holds a new session's first
   UPDATEs. A router whose table changes after that is asked again, as is one whose
   answer was not yet right (every `poll_s`; one that said an SPF run is due, once that
   run is past);
3. no route changed, in any router, for the settle window (0.5 s plus OSPF's SPF delay
   and hold) after the last change and the last answer; then every router is asked once
   more: all must still be up, no SPF due, its link-state database and BGP table version
   as they were;
4. every host reaches every host (one ping a pair, the failing pairs again every poll_s).

The deadline bounds it all; the failure names which router lacks which prefixes, whose
protocols are not up, and which hosts do not reach each other.
"""

from __future__ import annotations

import ipaddress
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from netrig.lab import frr, frrvty, routewatch
from netrig.lab.frrconf import Expected
from netrig.lab.state import LabError


def converge(net: Any, timeout: float | None, poll_s: float) -> float:
    """See the module's docstring (`net`: a Network, whose module imports this one);
    returns the seconds it took, LabError after timeout."""
    st = net._lab()
    t0 = time.monotonic()
    net.routes_in_s = None
    if not net.topo.dynamic:
        return 0.0
    timeout = frr.default_wait_s(net.topo) if timeout is None else timeout
    deadline = t0 + timeout
    poll_s = max(poll_s, 0.01)
    want = frr.expected_routes(net.plan)
    adjacent = frr.expected_adjacencies(net.plan)
    sessions = frr.expected_bgp_peers(net.plan)
    # A session's first UPDATEs leave after the coalesce time (both ends', in turn)
    hold_s = 2 * frr.bgp_coalesce_s(max((len(v) for v in sessions.values()), default=0)) + 0.5
    settle_s = 0.5 + (net.topo.ospf_ms("spf_delay") + net.topo.ospf_ms("spf_hold")) / 1000
    dirs = {r: frr.router_dir(st.dir, r) for r in want}
    short: dict[str, list[str]] = {}  # router -> what of its protocols is not up
    seen: dict[str, tuple] = {}  # router -> (its OSPF databases, BGP table version) when asked

    due: dict[str, float] = {}  # router -> when the SPF run it said was due will have run

    def protocols(r: str) -> tuple[str, list[str], tuple]:
        """What of r's protocols is not up (nothing: all is), and what it answered."""
        out: list[str] = []
        lsdb: dict[str, tuple] = {}
        version = None
        due.pop(r, None)
        try:
            if adjacent.get(r):
                doc = frrvty.ask(dirs[r], "ospfd", "show ip ospf neighbor json")
                full = frr.full_by_iface(frr.ospf_neighbours(doc))
                out += [f"OSPF on {i}: {full.get(i, 0)} of {k} neighbours Full"
                        for i, k in adjacent[r].items() if full.get(i, 0) < k]
                out += [f"OSPF: {n} Full for {ms} ms only" for n, ms in _young(doc, settle_s * 1000)]
                doc = frrvty.ask(dirs[r], "ospfd", "show ip ospf json")
                lsdb = _databases(doc)
                if isinstance(doc, dict) and doc.get("spfTimerDueInMsecs") is not None:
                    out.append(f"OSPF: an SPF run is due in {doc['spfTimerDueInMsecs']} ms")
                    if isinstance(doc["spfTimerDueInMsecs"], int):
                        due[r] = time.monotonic() + doc["spfTimerDueInMsecs"] / 1000
            if sessions.get(r):
                doc = frrvty.ask(dirs[r], "bgpd", "show bgp summary json")
                bgp = frr.bgp_peers(doc)
                out += [f"BGP session to {p}" for p in frr.not_established(sessions[r], bgp)]
                out += [f"BGP session to {p}: just up" for p in frr.too_new(sessions[r], bgp, hold_s)]
                version = frr.bgp_table_version(doc)
        except LabError as e:
            out.append(str(e))
        return r, out, (lsdb, version)

    confirmed: dict[str, float] = {}  # router -> when its protocols were seen up
    done = False
    namespaces = {r: st.node_ns[r] for r in want}
    with routewatch.Watcher(namespaces, {r: e.as_texts() for r, e in want.items()}) as w, \
            ThreadPoolExecutor(max_workers=4) as pool:
        next_ask = 0.0
        wait = 0.0
        while True:
            w.poll(wait)
            now = time.monotonic()
            if now > deadline:
                break
            for r, at in list(confirmed.items()):
                if w.tables[r].last_change > at:  # changed since: asked again
                    del confirmed[r]
            if w.incomplete():
                wait = min(1.0, deadline - now)
                continue
            if net.routes_in_s is None:
                net.routes_in_s = now - t0
            unconfirmed = [r for r in want if r not in confirmed]
            if unconfirmed:
                # A router whose SPF run is due is asked again once it has run (at 500
                # routers, asking each every poll took CPU the daemons needed).
                ask = [r for r in unconfirmed if due.get(r, 0.0) <= now]
                if now < next_ask or not ask:
                    wait = max(next_ask, min(due.get(r, 0.0) for r in unconfirmed)) - now
                    continue
                for r, down, answer in pool.map(protocols, ask):
                    seen[r] = answer
                    if down:
                        short[r] = down
                    else:
                        short.pop(r, None)
                        confirmed[r] = now
                next_ask = time.monotonic() + poll_s
                wait = 0.0
                continue
            quiet_at = max(w.last_change(), *confirmed.values()) + settle_s
            if now < quiet_at:
                wait = quiet_at - now
                continue
            again = list(pool.map(protocols, list(want)))
            moved = [r for r, down, answer in again if down or answer != seen[r]]
            for r, down, answer in again:
                if r in moved:
                    seen[r] = answer
                    short[r] = down or ["its answers moved while the tables settled"]
                    del confirmed[r]
            if not moved:
                done = True
                break
        missing = {r: [n for text, n in want[r].texts() if text not in w.tables[r].routes]
                   for r in w.incomplete()}
        last = max(w.tables.values(), key=lambda x: x.last_change)
        restless = "" if done or missing or short else (
            f"the routing tables never stayed still for {settle_s:g} s (the last change: {last.name}'s "
            f"table, {time.monotonic() - last.last_change:.1f} s before the deadline)")
    failing: list[tuple[str, str]] = []
    if done:
        failing = _pings(net, deadline, poll_s)
    else:
        for r in [r for r, nets in missing.items() if not nets]:
            del missing[r]
            short[r] = [f"its routing table was being read again ({w.tables[r].problem or 'first read'})"]
        if missing and not short:  # worded once: the first few routers' protocols
            with ThreadPoolExecutor(max_workers=4) as pool:
                short.update((r, d) for r, d, _ in pool.map(protocols, list(missing)[:5]) if d)
    if not done or failing:
        raise LabError(not_converged(timeout, missing, want, short, failing, restless))
    return time.monotonic() - t0


def _young(doc: object, ms: float) -> list[tuple[str, int]]:
    """(neighbour, ms) of `show ip ospf neighbor json`'s adjacencies Full for less than
    ms: ospfd may not yet have originated the LSA that says so, nor scheduled the SPF run
    that routes over it (seen on a loaded machine: Full, no SPF due, routes unchanged)."""
    out = []
    for rid, entries in ((doc or {}).get("neighbors") or {}).items() if isinstance(doc, dict) else ():
        for e in entries if isinstance(entries, list) else [entries]:
            if not isinstance(e, dict):
                continue
            up = e.get("upTimeInMsec")
            if str(e.get("nbrState", "")).startswith("Full") and isinstance(up, int) and up < ms:
                out.append((rid, up))
    return out


def _databases(doc: object) -> dict[str, tuple]:
    """`show ip ospf json` as area -> its link-state database's counts and checksums
    (and "AS" -> the AS-wide ones): what changes when an LSA does."""
    if not isinstance(doc, dict):
        return {}
    out = {"AS": tuple(sorted((k, v) for k, v in doc.items() if k.startswith(("lsaAs", "lsaExternal"))))}
    for area, a in (doc.get("areas") or {}).items():
        if isinstance(a, dict):
            out[area] = tuple(sorted((k, v) for k, v in a.items() if k.startswith("lsa")))
    return out


def _pings(net: Any, deadline: float, poll_s: float) -> list[tuple[str, str]]:
    """The host pairs that still do not reach each other at the deadline ([]: none)."""
    hosts = net.hosts()
    failing = [(a, b) for a in hosts for b in hosts if a != b]
    with ThreadPoolExecutor(max_workers=8) as pool:
        while failing:
            got = list(pool.map(lambda p: net.ping(p[0], p[1], count=1, timeout=1), failing))
            failing = [p for p, r in zip(failing, got) if r.received == 0]
            if not failing or time.monotonic() > deadline:
                break
            time.sleep(poll_s)
    return failing


def not_converged(timeout: float, missing: dict[str, list[ipaddress.IPv4Network]],
                  want: dict[str, Expected], short: dict[str, list[str]],
                  failing: list[tuple[str, str]], restless: str = "") -> str:
    parts = [f"routing did not converge in {timeout:g} s"]
    if restless:
        parts.append(restless)
    for r, nets in list(missing.items())[:5]:
        shown = ", ".join(f"{n} ({want[r][n]})" for n in nets[:4])
        more = f" and {len(nets) - 4} more" if len(nets) > 4 else ""
        parts.append(f"{r} has no route to {shown}{more}")
    if len(missing) > 5:
        parts.append(f"and {len(missing) - 5} more routers lack routes")
    for r, ifaces in list(short.items())[:5]:
        parts.append(f"{r}'s protocols are not all up: {', '.join(ifaces[:4])}")
    if failing:
        parts.append("hosts that do not reach each other: "
                     + ", ".join(f"{a}->{b}" for a, b in failing[:8])
                     + (f" and {len(failing) - 8} more pairs" if len(failing) > 8 else ""))
    return "; ".join(parts)
