"""Paths into a scenario, as sweep keys and `--set KEY=VALUE` name them: `links.NAME.KEY`,
`topology.KEY...`, `flows.NAME.KEY` (`flows.*.KEY`), `events.K.KEY`, a top-level key; a
sweep key `A,B` moves several paths together. Pure.
"""

from __future__ import annotations

import copy
from typing import Any

from netrig.exp.spec.model import COMMON, TAKES


# Paths: sweep keys and --set.
def _resolve(d: dict, key: str) -> tuple[Any, str | int]:
    """The container and the final key a path names (creating mappings on the way)."""
    parts = key.split(".")
    if parts[0] in ("links", "topology") and d.get("hosts") is not None:
        raise KeyError(f"{parts[0]}.* changes an emulated lab; this scenario runs on real hosts "
                       "(hosts:), whose network netrig does not change (sweep flows.* instead)")
    if parts[0] == "links":
        if len(parts) < 3:
            raise KeyError("links.NAME.KEY names a value of a link")
        topo = d.get("topology")
        if not isinstance(topo, dict):
            raise KeyError("the topology is not loaded")
        links = topo.get("links") or []
        i = _link_index(links, parts[1])
        if isinstance(links[i], list):
            links[i] = {"a": links[i][0], "b": links[i][1]}
        cur: Any = links[i]
        rest = parts[2:]
    elif parts[0] == "topology":
        cur, rest = d.get("topology"), parts[1:]
        if not isinstance(cur, dict) or not rest:
            raise KeyError("topology.KEY names a value in the topology")
    elif parts[0] == "events":
        events = d.get("events")
        if len(parts) < 3 or not parts[1].isdigit():
            raise KeyError("events.K.KEY names a value of the scenario's event K (from 0)")
        if not isinstance(events, list) or int(parts[1]) >= len(events) \
                or not isinstance(events[int(parts[1])], dict):
            n = len(events) if isinstance(events, list) else 0
            raise KeyError(f"no event {parts[1]} (the scenario has {n}: events.0"
                           f"{'' if n < 2 else f' to events.{n - 1}'})" if n else
                           f"no event {parts[1]} (the scenario has no events:)")
        cur, rest = events[int(parts[1])], parts[2:]
    elif parts[0] == "flows":
        if len(parts) < 3:
            raise KeyError("flows.NAME.KEY names a value of a flow")
        flows = d.get("flows") or {}
        if parts[1] not in flows:
            raise KeyError(f"no flow named '{parts[1]}' (flows: {', '.join(flows) or 'none'})")
        cur, rest = flows[parts[1]], parts[2:]
    else:
        cur, rest = d, parts
        if parts[0] in ("sweep", "quick", "flows", "monitors"):
            raise KeyError(f"'{parts[0]}' cannot be swept or set")
    for p in rest[:-1]:
        if not isinstance(cur, dict):
            raise KeyError(f"'{p}' is not inside a mapping")
        cur = cur.setdefault(p, {})
    if not isinstance(cur, dict):
        raise KeyError(f"'{rest[-1]}' is not inside a mapping")
    return cur, rest[-1]


def _link_index(links: list, name: str) -> int:
    for i, l in enumerate(links):
        if isinstance(l, dict):
            if l.get("name") == name:
                return i
    for i, l in enumerate(links):
        a, b = (l[0], l[1]) if isinstance(l, list) and len(l) == 2 else (
            (l.get("a"), l.get("b")) if isinstance(l, dict) else (None, None))
        if name in (f"{a}-{b}", f"{b}-{a}"):
            return i
    raise KeyError(f"no link '{name}' in the topology (a link's name, or its ends as a-b)")


def _expand_star(d: dict, key: str) -> list[str]:
    """`flows.*.KEY`: the path in every flow whose kind takes KEY (others as given)."""
    parts = key.split(".")
    if len(parts) < 3 or parts[0] != "flows" or parts[1] != "*":
        return [key]
    flows = d.get("flows") or {}
    out = [f"flows.{n}.{'.'.join(parts[2:])}" for n, f in flows.items()
           if isinstance(f, dict) and parts[2] in TAKES.get(f.get("kind"), set()) | COMMON]
    if not out:
        raise KeyError(f"no flow takes '{parts[2]}' (flows.*.{parts[2]} sets it in every flow "
                       "whose kind takes it)")
    return out


def _zipped(key: str, value: Any) -> list[tuple[str, Any]] | str:
    """A sweep key naming several paths, `a,b`, takes a list of as many values per item
    (the paths move together); a plain key, one value. Returns the (path, value) pairs,
    or what is wrong."""
    paths = [k.strip() for k in key.split(",")]
    if len(paths) == 1:
        return [(key, value)]
    if not isinstance(value, list) or len(value) != len(paths):
        return (f"{key} names {len(paths)} paths: each value is a list of {len(paths)} "
                f"(got {value!r})")
    return list(zip(paths, value))


def _get(d: dict, key: str) -> Any:
    if "," in key:
        return [_get(d, k.strip()) for k in key.split(",")]
    cur, k = _resolve(copy.deepcopy(d), _expand_star(d, key)[0])
    return cur.get(k)


def _apply(d: dict, key: str, value: Any, probe: bool = False) -> str | None:
    """Sets the value a path names (`flows.*.KEY`: in every flow that takes it);
    returns what is wrong with the path, if anything. With probe, only checks (on a copy)."""
    pairs = _zipped(key, value)
    if isinstance(pairs, str):
        return pairs
    try:
        target = copy.deepcopy(d) if probe else d
        for one, v in pairs:
            for path in _expand_star(target, one):
                cur, k = _resolve(target, path)
                if v is None and path.startswith("flows."):
                    cur.pop(k, None)  # null unsets a flow's key
                else:
                    cur[k] = copy.deepcopy(v)
    except (KeyError, IndexError) as e:
        return str(e.args[0]) if e.args else "no such key"
    return None




def data_paths(d: dict, key: str) -> list[tuple[str | int, ...]]:
    """The places in the scenario's data a path names (`links.NAME.KEY` is a link of the
    inline topology; `flows.*.KEY`, every flow that takes KEY), for saying that a value
    there came from `--set`; [] when the path names nothing."""
    out: list[tuple[str | int, ...]] = []
    try:
        for one in _expand_star(d, key):
            parts = one.split(".")
            if parts[0] == "links":
                links = (d.get("topology") or {}).get("links") or []
                out.append(("topology", "links", _link_index(links, parts[1]), *parts[2:]))
            elif parts[0] == "events" and len(parts) > 1 and parts[1].isdigit():
                out.append(("events", int(parts[1]), *parts[2:]))
            else:
                out.append(tuple(parts))
    except (KeyError, IndexError, AttributeError):
        return []
    return out
