"""What is wrong with a topology, and where: `TopologyError` (every problem, each at its
file and line once `netrig.topo.load` places it), `Problem` (one, at the path of the key
at fault, e.g. ("links", 3, "b")), and the two translations the models need: pydantic's
errors into Problems (`_problems_of`), netrig's unit errors into pydantic's (`_check`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from netrig import units
from netrig.errors import NetrigError


class TopologyError(NetrigError):
    """One or more problems, each naming where: `file:line: key: message`."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class Problem:
    path: tuple[str | int, ...]
    message: str

    def where(self) -> str:
        return ".".join(str(p) for p in self.path)


def _check(parse: Any, value: Any) -> Any:
    if value is None:
        return None
    try:
        parse(value)
    except units.UnitError as e:
        raise ValueError(str(e)) from None
    return value


_SHAPE_ERRORS = ("literal_error", "model_type", "dict_type", "string_type", "int_type", "float_type",
                 "list_type", "bool_type", "model_attributes_type", "int_parsing", "float_parsing",
                 "bool_parsing")


def _problems_of(e: ValidationError, base: tuple[str | int, ...] = ()) -> list[Problem]:
    """pydantic's errors as Problems: union-branch tags dropped from the path, and where
    one branch of a union gives a specific complaint, the other branches' "input should
    be a ..." noise dropped."""
    raw = []
    for err in e.errors():
        loc = tuple(x for x in err["loc"]
                    if isinstance(x, int) or not any(c in x for c in "[]-") and x not in (
                        "str", "int", "float", "bool", "LinkSpec", "NodeSpec", "Aqm", "Shaping", "GeModel",
                        "Ospf", "Bgp"))
        msg = err["msg"]
        msg = msg.removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        raw.append((base + loc, err["type"], msg))
    out = []
    for path, kind, msg in raw:
        specific = [r for r in raw if r[0][: len(path)] == path and r[1] not in _SHAPE_ERRORS]
        if kind in _SHAPE_ERRORS and specific:
            continue
        p = Problem(path, msg)
        if p not in out:
            out.append(p)
    return out
