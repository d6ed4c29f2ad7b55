"""What differs between results directories: scenario values, sweep values, host,
netrig version (`differences`), and each directory named by it (`labelled`), for
`compare` and `netrig plot` to label their lines instead of "A" and "B"."""

from __future__ import annotations

import json
from typing import Any

from netrig.exp.analysis.results import Results


def _flat(v: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(v, dict):
        out: dict[str, Any] = {}
        for k, x in v.items():
            out.update(_flat(x, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(v, list) and any(isinstance(x, dict) for x in v):
        out = {}
        for i, x in enumerate(v):
            name = x.get("name") or (f"{x.get('a')}-{x.get('b')}" if "a" in x else str(i)) \
                if isinstance(x, dict) else str(i)
            out.update(_flat(x, f"{prefix}.{name}"))
        return out
    return {prefix: json.dumps(v, sort_keys=True, default=str) if isinstance(v, (list, dict)) else v}


_IGNORED = ("description", "host.started", "host.hostname")


def _facts(r: Results) -> dict[str, Any]:
    h = r.meta.get("host") or {}
    facts = {k: v for k, v in _flat(r.scenario).items() if not k.startswith(("quick", "description"))}
    facts["sweep"] = "; ".join(f"{k}={'/'.join(map(str, r.key_values(k)))}" for k in r.keys) or None
    facts.update({"netrig": h.get("netrig"), "kernel": h.get("kernel"), "host": h.get("hostname"),
                  "--set": ", ".join(r.meta.get("sets") or []) or None,
                  "--quick": bool(r.meta.get("quick"))})
    facts.pop("sweep" if not r.keys else "", None)
    return facts


def differences(results: list[Results]) -> dict[str, list[Any]]:
    """Every fact whose value is not the same in all the directories: key -> each
    directory's value (None where it has none)."""
    facts = [_facts(r) for r in results]
    keys = list(dict.fromkeys(k for f in facts for k in f))
    return {k: [f.get(k) for f in facts] for k in keys if len({repr(f.get(k)) for f in facts}) > 1}


def labelled(results: list[Results]) -> list[tuple[str, Results]]:
    """Each directory named by what differs (`links.s0-h2.delay=5ms, netrig=0.4`); by its
    directory name when nothing does, and numbered when two would read the same."""
    diff = differences(results)
    names = []
    for i, r in enumerate(results):
        parts = [f"{k}={'none' if v[i] is None else v[i]}" for k, v in list(diff.items())[:3]]
        names.append(", ".join(parts) + (" …" if len(diff) > 3 else "") or r.out.name)
    if len(set(names)) < len(names):
        names = [f"{n} [{r.out.name}]" for n, r in zip(names, results, strict=True)]
    return list(zip(names, results, strict=True))
