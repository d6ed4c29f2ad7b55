"""A link of the topology (`Link`): its spec as written, each direction resolved to
numbers once (file defaults < the link's own values < its `a_to_b`/`b_to_a` block, into
`netrig.link.spec.Direction`), what it needs of a backend (shaped, emulated, plain), and
the link after a live change (`changed`). Also whether a trace it names can be read.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from netrig import suggest, units
from netrig.link import spec as linkspec
from netrig.topo.problems import TopologyError, _problems_of
from netrig.topo.shaping import LinkSpec, Shaping

DIRS = ("a_to_b", "b_to_a")
_DIRECTIONS: dict[str, linkspec.Direction] = {}  # a direction's keys (JSON) -> its numbers


@dataclass
class Link:
    """A link of the topology: its spec as written, and each direction resolved to
    numbers once (`direction(d)`), on first use."""

    spec: LinkSpec
    defaults: Shaping
    # Where relative paths (a trace) are read from: the topology file's directory;
    # None: the current directory, when first used (the Python API).
    base: str | None = None
    _resolved: dict[int, linkspec.Direction] = field(default_factory=dict, repr=False)
    _shapings: dict[int, Shaping] = field(default_factory=dict, repr=False)

    @property
    def a(self) -> str:
        return self.spec.a

    @property
    def b(self) -> str:
        return self.spec.b

    @property
    def name(self) -> str:
        return self.spec.label

    def shaping(self, d: int) -> Shaping:
        """Direction d (0: a->b, 1: b->a): defaults < the link's own < its direction's
        (merged once)."""
        if d not in self._shapings:
            over = self.spec.a_to_b if d == 0 else self.spec.b_to_a
            self._shapings[d] = self.defaults.merged(self.spec.shaping()).merged(over)
        return self._shapings[d]

    def direction(self, d: int) -> linkspec.Direction:
        """Direction d in numbers (parsed once; raises what `shaping(d)` raises). Links
        written alike share one Direction (it is frozen): a lab of 2,000 plain links
        parses one, not 4,000."""
        if d not in self._resolved:
            text = self.shaping(d).text()
            paths = [n for n, k in linkspec.KEYS.items() if k.kind == "path" and isinstance(text.get(n), str)]
            for name in paths:
                text[name] = self.path(text[name])
            if paths:  # a file is read afresh each time (it may have changed)
                self._resolved[d] = linkspec.resolve(text)
                return self._resolved[d]
            key = json.dumps(text, sort_keys=True, default=str)
            if key not in _DIRECTIONS:
                if len(_DIRECTIONS) >= 4096:
                    _DIRECTIONS.clear()
                _DIRECTIONS[key] = linkspec.resolve(text)
            self._resolved[d] = _DIRECTIONS[key]
        return self._resolved[d]

    def path(self, p: str) -> str:
        """A path the link names, as the file means it (relative to its directory)."""
        return os.path.join(self.base or os.getcwd(), os.path.expanduser(p))

    @property
    def shaped(self) -> bool:
        """Does either direction change traffic beyond a plain wire (the user-space
        backend then emulates the link)?"""
        return any(self.direction(d).shaped for d in (0, 1))

    @property
    def emulated(self) -> bool:
        """Does the user-space backend carry it through netrig-link (shaped, or
        `emulated: true` so that it can be shaped live)?"""
        return self.shaped or bool(self.spec.emulated)

    @property
    def plain(self) -> bool:
        """Nothing set in either direction: a bare veth pair under any backend."""
        return all(self.direction(d).plain for d in (0, 1))

    def other(self, node: str) -> str:
        return self.b if node == self.a else self.a

    def changed(self, params: dict[str, Any], dir: str | None = None) -> Link:
        """This link after a live change: `params` (keys of a direction, as a file gives
        them) in both directions, where a direction's own value gives way, or in one
        (`dir`: a_to_b, b_to_a). A key that excludes another (gemodel and loss, trace and
        rate) turns the other off; `aqm` without `type` sets parameters of the discipline
        each direction runs. Raises TopologyError naming what is wrong."""
        wrong = sorted(set(params) - set(linkspec.KEYS))
        if wrong:
            near = [f"{c[0]}" + (f" for {k}" if len(wrong) > 1 else "")
                    for k in wrong if (c := suggest.close(k, linkspec.KEYS, 1))]
            raise TopologyError([f"link {self.name}: {', '.join(wrong)}: not a key of a link direction"
                                 f"{'; did you mean ' + ', '.join(near) + '?' if near else ''} "
                                 f"(a live change sets {', '.join(linkspec.KEYS)})"])
        if dir not in (None, *DIRS):
            raise TopologyError([f"link {self.name}: dir: '{dir}' is not a_to_b or b_to_a"])
        params = dict(params)
        clear = {r["other"] if r["key"] in params else r["key"] for r in linkspec.RULES
                 if r["kind"] == "excludes" and (r["key"] in params) != (r["other"] in params)}
        clear = {k: None for k in clear if "." not in k}
        new = self.spec.model_dump(exclude_unset=True)
        aqm = params.get("aqm")
        if isinstance(aqm, dict) and "type" not in aqm:  # a parameter of the discipline running
            runs = [self.shaping(d).text().get("aqm") or "droptail" for d in (0, 1)]
            runs = [{"type": r} if isinstance(r, str) else r for r in runs]
            merged = [{**r, **aqm} for r in runs]
            if dir:
                params["aqm"] = merged[DIRS.index(dir)]
            elif merged[0] == merged[1]:
                params["aqm"] = merged[0]
            else:  # two disciplines: each direction keeps its own
                del params["aqm"]
                for d, name in enumerate(DIRS):
                    new[name] = {**(new.get(name) or {}), "aqm": merged[d]}
        if dir:
            new[dir] = {**(new.get(dir) or {}), **params, **clear}
        else:
            new = {**new, **params, **clear}
            for name in DIRS:
                own = {k: v for k, v in (new.get(name) or {}).items() if k not in params and k not in clear}
                new[name] = own or None
        try:
            spec = LinkSpec.model_validate(new)
        except ValidationError as e:
            raise TopologyError([f"link {self.name}: {p.where() + ': ' if p.path else ''}{p.message}"
                                 for p in _problems_of(e)]) from None
        link = Link(spec, self.defaults, self.base)
        for d, name in enumerate(DIRS):
            try:
                link.direction(d)
            except units.UnitError as e:
                raise TopologyError([f"link {self.name}: {name}: {e}"]) from None
        return link


def _unreadable(trace: str | None, link: Link) -> str | None:
    """What keeps netrig-link from reading a trace file, if anything."""
    if trace is None:
        return None
    at = os.path.normpath(link.path(trace))
    if not os.path.exists(at):
        return f"no trace file '{trace}' (looked for {at})"
    if not os.path.isfile(at):
        return f"'{trace}' is not a file (a trace is a mahimahi file, one line per delivery)"
    if not os.access(at, os.R_OK):
        return f"cannot read the trace file '{trace}' ({at}): permission denied"
    return None
