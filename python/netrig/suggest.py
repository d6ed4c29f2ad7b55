"""Words close to a mistyped one: "did you mean delay?" for a key, a command or a name.

Owns the wording of a suggestion and the keys a pydantic model takes at a path of a
file (`keys_at`), so that the topology loader, the scenario checker, `netrig link set`
and the command line all say it the same way. Does not decide what is valid: each
caller passes its own list (the schema's fields, the link-spec keys, the commands).
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel


def close(word: str, valid: Iterable[str], n: int = 3) -> list[str]:
    """The valid words nearest `word`, best first: those nearly as near as the nearest
    (none when nothing is near). Case is ignored; a word cut short (`del`) is near."""
    choices = list(dict.fromkeys(str(v) for v in valid))
    w = word.lower()
    scored = []
    for c in choices:
        score = difflib.SequenceMatcher(None, w, c.lower()).ratio()
        if len(w) >= 3 and c.lower().startswith(w):
            score = max(score, 0.8)
        if score >= 0.6:
            scored.append((score, c))
    if not scored:
        return []
    best = max(s for s, _ in scored)
    return [c for s, c in sorted(scored, key=lambda x: -x[0]) if s >= best - 0.05][:n]


def did_you_mean(word: str, valid: Iterable[str]) -> str:
    """`; did you mean delay?` (or `delay or delya?`), empty when nothing is close."""
    near = close(word, valid)
    if not near:
        return ""
    return "; did you mean " + (near[0] if len(near) == 1 else ", ".join(near[:-1]) + " or " + near[-1]) + "?"


def unknown(word: str, valid: Iterable[str], what: str = "valid") -> str:
    """`; did you mean delay? (valid: rate, delay, ...)`: the suggestion and the list."""
    valid = list(dict.fromkeys(valid))
    return f"{did_you_mean(word, valid)} ({what}: {', '.join(valid)})"


def keys_at(model: type[BaseModel], path: tuple[str | int, ...]) -> list[str]:
    """The keys a file may give in the mapping at `path` (a path into `model`'s data:
    names of fields, mapping keys and list indexes), as the file writes them (a field's
    alias: `from`); empty when the path leads to no model."""
    types_here = [model]
    for step in path:
        nxt: list[Any] = []
        for t in types_here:
            for m in _models(t):
                field = _field(m, step)
                if field is not None:
                    nxt.append(field.annotation)
            for inner in _containers(t, step):
                nxt.append(inner)
        types_here = nxt
        if not types_here:
            return []
    keys = [f.alias or name for t in types_here for m in _models(t) for name, f in m.model_fields.items()]
    return list(dict.fromkeys(keys))


def _field(m: type[BaseModel], step: str | int) -> Any:
    if not isinstance(step, str):
        return None
    for name, f in m.model_fields.items():
        if step in (name, f.alias):
            return f
    return None


def _args(t: Any) -> list[Any]:
    """The branches of a union (Optional included); the type itself otherwise."""
    origin = typing.get_origin(t)
    if origin is typing.Union or origin is types.UnionType:
        return [a for x in typing.get_args(t) for a in _args(x)]
    return [t]


def _models(t: Any) -> list[type[BaseModel]]:
    return [a for a in _args(t) if isinstance(a, type) and issubclass(a, BaseModel)]


def _containers(t: Any, step: str | int) -> list[Any]:
    """What a dict's value or a list's item holds, when `step` indexes it."""
    out = []
    for a in _args(t):
        origin, args = typing.get_origin(a), typing.get_args(a)
        if origin is dict and len(args) == 2 and isinstance(step, str):
            out.append(args[1])
        elif origin is list and args and isinstance(step, int):
            out.append(args[0])
    return out
