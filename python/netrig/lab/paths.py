"""The path a lab's kernels really take, beside the one theory predicts.

    kernel_path(net, src, dst, flow=None)  node names from src to dst (switches
                                           included), following each namespace's
                                           `ip -j route get` hop by hop
    flow_paths(net, plan, flows)           per scenario flow: {"predicted", "kernel",
                                           "ecmp", ...} for run.json (what the report's
                                           path flag reads: netrig.exp.analysis.why.path_differs)

At the sender, `ip route get DST from SRC`; at each router after it, `ip route get DST
from SRC iif IFACE` with IFACE the interface the packet arrived on, so the kernel
answers for a forwarded packet and picks the equal-cost leg it would hash that packet
onto (with `ipproto/sport/dport` when the flow's ports are known: Linux hashes only
addresses unless fib_multipath_hash_policy says otherwise). A next hop's address names
the next node and the interface it arrives on (the plan's addresses and loopbacks).
`follow` is the walk without the system (tests give it canned answers).
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
from collections.abc import Callable, Mapping
from typing import Any

from netrig.errors import NetrigError
from netrig.topo import routing
from netrig.topo.l3 import Plan

MAX_HOPS = 64
KINDS = ("tcp", "udp", "probe", "ping", "fetch", "web")  # the flows that cross the network

# ask(node, iif) -> `ip -j route get`'s first object, or the error it printed.
Ask = Callable[[str, str | None], dict[str, Any] | str]


class PathError(NetrigError):
    pass


def route_get_argv(ns: str, dst: str, src: str | None = None, iif: str | None = None,
                   flow: Mapping[str, Any] | None = None) -> list[str]:
    """`ip -n NS -j route get DST [from SRC] [iif IFACE] [ipproto P sport S dport D]`."""
    argv = ["ip", "-n", ns, "-j", "route", "get", dst]
    if src:
        argv += ["from", src]
    if iif:
        argv += ["iif", iif]
    if flow:
        if flow.get("proto"):
            argv += ["ipproto", str(flow["proto"])]
        for key in ("sport", "dport"):
            if flow.get(key) is not None:
                argv += [key, str(int(flow[key]))]
    return argv


def owners(plan: Plan) -> dict[ipaddress.IPv4Address, tuple[str, str]]:
    """Every address of the plan -> (its node, its interface; `lo` for a loopback)."""
    out = {i.addr.ip: (node, i.name) for node, ifs in plan.ifaces.items() for i in ifs if i.addr is not None}
    out.update({lo.ip: (node, "lo") for node, lo in plan.loopbacks.items()})
    return out


def follow(plan: Plan, src: str, dst: str, ask: Ask) -> list[str]:
    """The nodes a packet from src to dst passes, switches included, as `ask` (each
    node's kernel) routes it. Raises PathError at a node with no route, a next hop
    that is no address of the plan, a loop, or more than MAX_HOPS hops."""
    by_addr = owners(plan)
    target = plan.addr(dst)
    walked = [src]
    node, iif = src, None
    while node != dst:
        if len(walked) > MAX_HOPS:
            raise PathError(f"more than {MAX_HOPS} hops from {src} to {dst}: {' '.join(walked)}")
        answer = ask(node, iif)
        if isinstance(answer, str):
            raise PathError(f"no route at {node} toward {dst} ({target}): {answer.strip()}")
        if answer.get("type") in ("unreachable", "prohibit", "blackhole"):
            raise PathError(f"no route at {node} toward {dst} ({target}): {answer.get('type')}")
        gateway = answer.get("gateway")
        addr = ipaddress.IPv4Address(gateway) if gateway else target
        if addr not in by_addr:
            raise PathError(f"{node} sends toward {dst} by {addr}, which is no address of the lab")
        nxt, nxt_if = by_addr[addr]
        if nxt == node:
            raise PathError(f"{node} holds {target} itself (dev {answer.get('dev')}), but it is not {dst}")
        out = next((i for i in plan.ifaces[node] if i.name == answer.get("dev")), None)
        peer = next((i for i in plan.ifaces[nxt] if i.name == nxt_if), None)
        if out is not None and peer is not None and out.segment == peer.segment:
            between = [h.to for h in routing.step_hops(plan, routing.NextHop(out, peer))][:-1]
        else:
            between = []
        if nxt in walked:
            raise PathError(f"a routing loop: {' '.join([*walked, *between, nxt])}")
        walked += [*between, nxt]
        node, iif = nxt, nxt_if
    return walked


def _ask(net: Any, src_addr: str, dst_addr: str, flow: Mapping[str, Any] | None) -> Ask:
    def ask(node: str, iif: str | None) -> dict[str, Any] | str:
        argv = route_get_argv(net[node].ns, dst_addr, src_addr, iif, flow)
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        except subprocess.TimeoutExpired:
            return f"'{' '.join(argv)}' did not answer in 10 s"
        if p.returncode != 0:
            return p.stderr.strip() or f"'{' '.join(argv)}' exited {p.returncode}"
        try:
            answers = json.loads(p.stdout)
        except json.JSONDecodeError:
            return f"'{' '.join(argv)}' printed no JSON: {p.stdout[:200]!r}"
        return answers[0] if answers else "no answer"

    return ask


def kernel_path(net: Any, src: str, dst: str, flow: Mapping[str, Any] | None = None) -> list[str]:
    """The nodes from src to dst (switches included) the lab's kernels route a packet
    by; `flow` ({proto, sport, dport}) picks the equal-cost leg that flow hashes onto."""
    plan: Plan = net.plan
    return follow(plan, src, dst, _ask(net, str(plan.addr(src)), str(plan.addr(dst)), flow))


def flow_paths(net: Any, plan: Plan, flows: Mapping[str, Any],
               ports: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """For each tcp/udp/probe/ping/fetch flow (scenario `FlowSpec`s by name), the way
    its data goes: {"predicted": nodes, "kernel": nodes, "ecmp": bool, "equal": every
    equal path when ecmp, "why": how theory chose, "predicted_cost"/"kernel_cost": each
    path in its protocol's terms}; {"error": ...} for a half that failed. `ports`:
    a flow's {proto, sport, dport} when known."""
    out: dict[str, dict[str, Any]] = {}
    for name, f in flows.items():
        if getattr(f, "kind", None) not in KINDS or getattr(f, "to", None) is None:
            continue
        src, dst = (f.to, f.src) if getattr(f, "reverse", False) else (f.src, f.to)
        rec: dict[str, Any] = {}
        try:
            choice = routing.choose_path(plan, src, dst)
            rec.update(predicted=choice.nodes, ecmp=choice.ecmp, why=choice.why,
                       predicted_cost=routing.path_cost(plan, choice.nodes))
            if choice.ecmp:
                rec["equal"] = choice.node_paths()
        except NetrigError as e:
            rec["error"] = f"theory: {e}"
        try:
            kernel = kernel_path(net, src, dst, (ports or {}).get(name))
            rec.update(kernel=kernel, kernel_cost=routing.path_cost(plan, kernel))
        except NetrigError as e:
            rec["error"] = (rec.get("error", "") + "; " if "error" in rec else "") + f"kernel: {e}"
        out[name] = rec
    return out
