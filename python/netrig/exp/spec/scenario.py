"""Scenario files: a topology, the flows to run on it, what to watch, what to sweep.

    name: bufferbloat
    topology: bufferbloat-topo.yaml   # a topology file (beside this one), or inline
    duration: 30s                     # each flow's, unless it says otherwise
    repeat: 3                         # runs per sweep point
    seed: 1                           # run k of the experiment uses seed + k
    flows:
      bulk: {kind: tcp, from: h1, to: h2, cc: cubic}
      rtt:  {kind: ping, from: h1, to: h2, interval: 100ms}
    monitors:
      - {kind: queue, link: s0-h2}
    sweep:                            # the cross product of these lists
      links.s0-h2.aqm: [droptail, pie]
      flows.bulk.window: [16KB, 64KB]
    quick: {duration: 8s, repeat: 1}  # what `--quick` changes
    events:                           # what happens while the flows run (exp/analysis/events.py)
      - {at: 2s, link: r2-r3, down: true}          # silently: frames stop, interfaces stay up
      - {at: 4s, link: r2-r3, up: true}
      - {at: 5s, link: r1-r2, carrier: down}       # both ends' interfaces go down (or up)
      - {at: 6s, link: r1-r2, set: {delay: 50ms}}  # a live change, as `netrig link set`
      - {at: 7s, router: r3, stop: true}           # its FRR daemons (start: true again)
      - {at: 8s, node: h1, command: "ip route", timeout: 10s}

Instead of `topology:`, a scenario can name real machines reached over SSH (`hosts:`,
with `path:` and `clocks:`, netrig/remote/hosts.py): theory reads the path the user
declares, and nothing that needs an emulated lab (monitors other than tcp_info, events,
web flows, sweeps of links.* or topology.*) is accepted.

Sweep keys and `--set KEY=VALUE` name a value by path: `links.NAME.KEY` (a link of the
topology, by its name or as `a-b`), `topology.KEY...` (anything else in the topology),
`flows.NAME.KEY` (`flows.*.KEY`: every flow that takes KEY), or a top-level key
(`duration`), or an event's (`events.K.KEY`, K counted from 0: `events.0.at`); a sweep key `A,B` moves several paths together (`[[tcp, null], [udp,
10Mbit]]`; null leaves a flow's key unset). A flow with `count: N` runs as N copies, NAME.1 ... NAME.N. Every point of the sweep is checked
before anything runs; a problem names the file, the line and the key.
"""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from netrig import suggest
from netrig.exp.spec import sets as set_words
from netrig.exp.spec.checks import _check_hosts, _cross_check, _real_sweep_problem, timing_flags
from netrig.exp.spec.model import (
    COMMON,
    MAX_POINTS,
    TAKES,
    Key,
    Point,
    Scenario,
    ScenarioError,
    ScenarioFile,
    expand_counts,
    flow_ends,
)
from netrig.exp.spec.paths import _apply, _get, data_paths
from netrig.remote import hosts as rhosts
from netrig.topo import load as tload
from netrig.topo.model import Topology, TopologyError, _problems_of


# Loading.
def load_scenario(path: str | Path, quick: bool = False, sets: list[str] | None = None) -> Scenario:
    path = Path(path)
    try:
        text = tload.read(path)
    except TopologyError as e:
        raise ScenarioError(e.problems) from None
    return loads_scenario(text, str(path), quick, sets or [], base_dir=path.parent)


def loads_scenario(text: str, source: str = "<string>", quick: bool = False,
                   sets: list[str] | None = None, base_dir: Path | None = None) -> Scenario:
    sets = sets or []
    try:
        data, lines, found = tload._parse(text, source)
    except tload.TopologyError as e:
        raise ScenarioError(e.problems) from None
    if not isinstance(data, dict):
        raise ScenarioError([f"{source}:1: a scenario is a mapping with topology: and flows: "
                             f"(it holds {tload._kind(data)})"])
    if found:
        raise ScenarioError(tload.where(found, source))
    # --quick: the quick: mapping's keys replace the file's (sweep lists whole).
    if quick:
        over = data.get("quick")
        if over is None:
            raise ScenarioError([f"{source}:1: --quick: this scenario has no quick: section"])
        if not isinstance(over, dict):
            raise ScenarioError([f"{source}:{lines.get(('quick',), 1)}: quick: should be a "
                                 f"mapping of the keys --quick changes"])
        for k, v in over.items():
            _merge_into(data, lines, (k,), v, ("quick", k))
    data.pop("quick", None) if quick else None
    # --set KEY=VALUE, applied like one-point sweeps.
    try:
        set_values = set_words.parse(sets)
    except set_words.SetError as e:
        raise ScenarioError([str(e)]) from None
    set_said = {k.strip(): f"--set {k.strip()}={raw.strip()}" for k, _, raw in (w.partition("=") for w in sets)}
    # The topology: a file beside the scenario, or inline.
    topo_src, topo_lines, topo_base = source, lines, ("topology",)
    t = data.get("topology")
    if isinstance(t, str):
        tpath = (base_dir or Path(".")) / t
        try:
            ttext = tload.read(tpath, "the topology file")
        except TopologyError as e:
            raise ScenarioError([f"{source}:{lines.get(('topology',), 1)}: topology: {p}"
                                 for p in e.problems]) from None
        try:
            tdata, topo_lines, tfound = tload._parse(ttext, str(tpath))
        except tload.TopologyError as e:
            raise ScenarioError(e.problems) from None
        if tfound:
            raise ScenarioError(tload.where(tfound, str(tpath)))
        data["topology"] = tdata
        topo_src, topo_base = str(tpath), ()
    problems: list[str] = []
    set_at: dict[Key, str] = {}  # a value --set gave -> the --set that gave it
    for key, value in set_values.items():
        msg = _apply(data, key, value)
        if msg:
            problems.append(f"{set_said[key]}: {msg}")
        for k in key.split(","):
            set_at.update(dict.fromkeys(data_paths(data, k.strip()), set_said[key]))
    if problems:
        raise ScenarioError(problems)
    # Check the file as written (all problems at once), then each point.
    base = _check_point(data, lines, source, topo_lines, topo_src, topo_base, None, set_at)
    if isinstance(base, list):
        raise ScenarioError(base)
    spec0 = base[1]
    sweep = dict(spec0.sweep)
    for key, values in sweep.items():
        if not values:
            problems.append(f"{source}:{lines.get(('sweep', key), 1)}: sweep.{key}: an empty list")
        msg = _real_sweep_problem(data, key) or _apply(data, key, values[0] if values else None, probe=True)
        if msg:
            problems.append(f"{source}:{lines.get(('sweep', key), 1)}: sweep.{key}: {msg}")
    points_n = 1
    for values in sweep.values():
        points_n *= max(len(values), 1)
    if points_n > MAX_POINTS:
        sizes = " x ".join(str(len(v)) for v in sweep.values())
        problems.append(f"{source}:{lines.get(('sweep',), 1)}: sweep: {sizes} = {points_n} points; "
                        f"a scenario sweeps at most {MAX_POINTS}")
    if problems:
        raise ScenarioError(problems)
    # Each swept value on its own, blamed on its own item; then the combinations.
    for key, values in sweep.items():
        for j, v in enumerate(values):
            d = copy.deepcopy(data)
            msg = _apply(d, key, v)
            got = [msg] if msg else _check_point(d, lines, source, topo_lines, topo_src, topo_base, None)
            if isinstance(got, list):
                line = lines.get(("sweep", key, j), lines.get(("sweep", key), 1))
                problems.append(f"{source}:{line}: sweep.{key}[{j}]: {v!r}: "
                                + "; ".join(_strip(x) for x in got))
    if problems:
        raise ScenarioError(problems)
    points: list[Point] = []
    keys = list(sweep)
    for i, combo in enumerate(itertools.product(*(sweep[k] for k in keys)) if keys else [()]):
        d = copy.deepcopy(data)
        for k, v in zip(keys, combo):
            _apply(d, k, v)
        d.pop("sweep", None)
        d.pop("quick", None)
        at = [(k, sweep[k].index(v)) for k, v in zip(keys, combo)]
        got = _check_point(d, lines, source, topo_lines, topo_src, topo_base, (source, lines, at))
        if isinstance(got, list):
            problems += [p for p in got if p not in problems]
            continue
        topo, spec = got
        points.append(Point(i, dict(zip(keys, combo)), topo, spec, d))
    if problems:
        raise ScenarioError(problems)
    name = spec0.name or Path(source).stem
    resolved = {k: v for k, v in data.items() if k != "quick"}
    resolved["name"] = name
    flags: list[str] = []
    for p in points:
        for said in timing_flags(p.spec):
            at = ", ".join(f"{k}={v}" for k, v in p.params.items())
            every = all(said in timing_flags(q.spec) for q in points)
            said = said if every or not at else f"at {at}: {said}"
            if said not in flags:
                flags.append(said)
    return Scenario(name, source, points, spec0.repeat, spec0.seed, quick, list(sets), keys,
                    resolved, lines, sweep, flags)


def _merge_into(data: dict, lines: dict, path: Key, value: Any, from_path: Key) -> None:
    """data[path] = value (mappings merged key by key, except sweep and flows' lists),
    with the lines of `from_path` recorded at `path`."""
    cur = data
    for p in path[:-1]:
        cur = cur.setdefault(p, {})
    k = path[-1]
    if isinstance(value, dict) and isinstance(cur.get(k), dict) and path != ("sweep",):
        for kk, vv in value.items():
            _merge_into(data, lines, (*path, kk), vv, (*from_path, kk))
        return
    cur[k] = copy.deepcopy(value)
    for lk, line in list(lines.items()):
        if lk[: len(from_path)] == from_path:
            lines[path + lk[len(from_path):]] = line


def _check_point(d: dict, lines: dict, source: str, topo_lines: dict, topo_src: str,
                 topo_base: Key, sweep_at, set_at: dict[Key, str] | None = None
                 ) -> tuple[Topology, ScenarioFile] | list[str]:
    """The point's topology and spec, or its problems. In a sweep point, a problem in a
    value the sweep set is reported at that sweep item; one in a value `--set` gave
    (`set_at`: its place -> the --set), at that --set."""
    found: list[tuple[int, Key, str]] = []
    topo_found: list[tuple[int, Key, str]] = []
    spec = None
    try:
        spec = ScenarioFile.model_validate(d)
    except ValidationError as e:
        for p in tload._tidy(_problems_of(e), d, scenario_keys):
            if p.path[:1] == ("topology",) and isinstance(d.get("topology"), dict):
                continue  # the topology's own check below says it better
            found.append((tload._line(lines, p.path), p.path, p.message))
    topo = None
    if isinstance(d.get("topology"), dict):
        tdata = d["topology"]
        topo, tprobs = tload.check(tdata, topo_lines, topo_src, topo_base)
        topo_found += tprobs
    if spec is not None:
        hprobs = _check_hosts(spec, d)
        found += [(tload._line(lines, p.path), p.path, p.message) for p in hprobs]
        if not hprobs and spec.hosts is not None and spec.path is not None:
            topo = rhosts.declared_topology(spec.name or "hosts", spec.hosts, spec.path)
    if spec is not None and topo is not None:
        found += [(tload._line(lines, p.path), p.path, p.message) for p in _cross_check(spec, topo)]
    said = _at_sets(found, topo_found, topo_base, set_at or {})
    out = said + tload.where(found, source) + tload.where(topo_found, topo_src)
    if not out and spec is not None:
        spec = expand_counts(spec)
    if out and sweep_at:
        src, lns, at = sweep_at
        vals = ", ".join(f"{k}={_show(d, k)}" for k, _ in at)
        return [f"{src}:{lns.get(('sweep', k), 1)}: sweep.{k}[{j}]: at the point {vals}: "
                + "; ".join(_strip(x) for x in out) for k, j in at[:1]]
    return out or (topo, spec)


def _at_sets(found: list[tuple[int, Key, str]], topo_found: list[tuple[int, Key, str]], topo_base: Key,
             set_at: dict[Key, str]) -> list[str]:
    """Takes out of `found` and `topo_found` the problems in a value a --set gave, said as
    `--set KEY=VALUE: key: message` (the file's line would blame the file)."""
    out: list[str] = []
    for problems, base in ((found, None), (topo_found, topo_base)):
        for item in list(problems):
            _, path, msg = item
            full = ("topology", *path) if base == () else path
            by = next((s for at, s in set_at.items() if full[:len(at)] == at), None)
            if by is not None:
                problems.remove(item)
                shown = path if base is None else full
                out.append(f"{by}: {tload._key(shown)}: {msg}")
    return out


def scenario_keys(path: Key, data: Any) -> list[str]:
    """The keys a scenario may give in the mapping at `path`: a flow's, those its kind
    takes (all a flow takes when its kind is unknown); the topology's, a topology's."""
    if path[:1] == ("topology",):
        return tload.topology_keys(path[1:], data.get("topology") if isinstance(data, dict) else None)
    if len(path) == 2 and path[0] == "flows":
        flow = (data.get("flows") or {}).get(path[1]) if isinstance(data, dict) else None
        kind = flow.get("kind") if isinstance(flow, dict) else None
        if kind in TAKES:
            order = suggest.keys_at(ScenarioFile, path)
            takes = {"from" if k == "src" else k for k in TAKES[kind] | COMMON}
            return [k for k in order if k in takes]
    return suggest.keys_at(ScenarioFile, path)


def _strip(problem: str) -> str:
    """`FILE:LINE: key: msg` -> `key: msg`."""
    parts = problem.split(": ", 1)
    return parts[1] if len(parts) == 2 else problem


def _show(d: dict, key: str) -> str:
    try:
        return str(_get(d, key))
    except (KeyError, IndexError, TypeError):
        return "?"


def drawable(path: str) -> tuple[Topology, dict[str, tuple[str, str]], str]:
    """A scenario file's topology at its first sweep point, its flows' ends and its
    name: what `netrig graph` draws."""
    scen = load_scenario(path)
    return scen.points[0].topology, flow_ends(scen.points[0]), scen.name
