"""Topology files: YAML in, a checked `Topology` out, every error at its file and line.

    name: portfolio
    nodes: {h1: host, s1: {kind: switch}}
    links:
      - [h1, s1]
      - {a: h1, b: s1, rate: 30Mbit, delay: 10ms, a_to_b: {delay: 20ms}}

This module owns reading the file and saying where each problem is
(`FILE:LINE: KEY.PATH: message`); the schema and the whole-topology checks belong to
`netrig.topo.model`. The file is checked in two passes, each reporting all it finds:
the schema (`TopologyFile`, plus what YAML itself hides: repeated keys, short-form links
of the wrong length), then, on a topology built from the valid file, `Topology.problems()`
(dangling names, duplicate links, switch loops).

Input is bounded before it is trusted: a file above `MAX_BYTES` is refused unread, and
the YAML composer refuses nesting deeper than `MAX_DEPTH` and a document whose aliases
expand to more than `MAX_VALUES` values (an alias bomb), at the line of the alias. Each
node's expanded size is counted once, when it is composed, so a bomb costs what its
text costs, never what it expands to.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from os import PathLike
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.cyaml import CParser

from netrig import suggest
from netrig.errors import NetrigError, os_words
from netrig.link import spec as linkspec
from netrig.topo.model import (
    Link,
    LinkSpec,
    NodeSpec,
    Problem,
    Topology,
    TopologyError,
    TopologyFile,
    _problems_of,
)

Key = tuple[str | int, ...]
_MERGE = "tag:yaml.org,2002:merge"
MAX_BYTES = 1 << 20  # a topology or scenario file (1 MiB)
MAX_VALUES = 200_000  # values in a document once its aliases are expanded
MAX_DEPTH = 64  # mappings and lists nested in each other
_BOOL = "tag:yaml.org,2002:bool"
# What a Literal field holds, for "'x' is not <what> (expected ...)".
_CHOICES = {"backend": "a backend", "aqm": "a queue discipline",
            "type": "a queue discipline", "distribution": "a delay distribution"}
# What a `kind:` holds, by the section it is in (a file's nodes, a scenario's flows...).
_KINDS = {"nodes": "a node kind", "flows": "a flow kind", "monitors": "a monitor kind"}
class _Bounds:
    """What netrig's loaders add to PyYAML's: where every mapping key and sequence item
    starts (path -> 1-based line), every key a mapping repeats (YAML keeps the last), and
    the bounds on a document's size and depth, checked as it is composed."""

    def _start(self) -> None:
        self.lines: dict[Key, int] = {(): 1}
        self.repeats: list[tuple[int, Key, int]] = []  # (line, path, line of the first)
        self.sizes: dict[int, int] = {}  # id(node) -> values it stands for, aliases expanded
        self.aliases: list[tuple[yaml.Mark, str, int]] = []  # (where, anchor, its size)
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        """PyYAML's, counting what each node expands to as it is composed: an alias
        stands for its anchor's whole size; a document past MAX_VALUES or MAX_DEPTH is
        refused at once (a `ComposerError`, reported at its line)."""
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)
            if id(node) not in self.sizes:
                raise yaml.composer.ComposerError(
                    None, None, f"the alias *{event.anchor} is inside its own anchor "
                    f"&{event.anchor}: it would repeat forever", event.start_mark)
            self.aliases.append((event.start_mark, event.anchor, self.sizes[id(node)]))
            return node
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"nested more than {MAX_DEPTH} deep (netrig reads at most that)",
                event.start_mark)
        node = super().compose_node(parent, index)
        self.depth -= 1
        if isinstance(node, yaml.MappingNode):
            size = 1 + sum(self.sizes[id(k)] + self.sizes[id(v)] for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            size = 1 + sum(self.sizes[id(item)] for item in node.value)
        else:
            size = 1
        if size > MAX_VALUES:
            raise self._too_big(node, size)
        self.sizes[id(node)] = size
        return node

    def _too_big(self, node: yaml.Node, size: int) -> yaml.MarkedYAMLError:
        """The error for a node past MAX_VALUES: at its biggest alias, if it has one."""
        inside = [a for a in self.aliases
                  if node.start_mark.index <= a[0].index <= node.end_mark.index]
        if not inside:
            return yaml.composer.ComposerError(
                None, None, f"more than {MAX_VALUES} values in one document (netrig reads "
                "at most that)", node.start_mark)
        mark, anchor, each = max(inside, key=lambda a: a[2])  # the first of the biggest
        return yaml.composer.ComposerError(
            None, None, f"the alias *{anchor} stands for {each} values, and with it the "
            f"document holds more than {MAX_VALUES} once its aliases are expanded (an alias "
            "bomb?): netrig reads at most that", mark)

    def record(self, node: yaml.Node, path: Key = (), inside: frozenset[int] = frozenset()) -> None:
        if id(node) in inside:  # a recursive alias: its first visit records it
            return
        inside = inside | {id(node)}
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, int] = {}
            for k, v in node.value:
                if k.tag == _MERGE or not isinstance(k, yaml.ScalarNode):
                    continue  # merged keys and odd keys fall back to the mapping's line
                key = self.construct_object(k)
                line = k.start_mark.line + 1
                if key in first:
                    self.repeats.append((line, (*path, key), first[key]))
                first.setdefault(key, line)
                self.lines[(*path, key)] = line  # the value YAML keeps is the last
                self.record(v, (*path, key), inside)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self.lines[(*path, i)] = item.start_mark.line + 1
                self.record(item, (*path, i), inside)


class _Loader(_Bounds, yaml.SafeLoader):
    """PyYAML's safe loader (pure Python) with netrig's records and bounds. Only
    true/false are booleans (YAML 1.2): a node named `no` or `on` stays a name."""

    def __init__(self, text: str) -> None:
        yaml.SafeLoader.__init__(self, text)
        self._start()


class _FastLoader(_Bounds, yaml.composer.Composer, CParser, yaml.constructor.SafeConstructor,
                  yaml.resolver.Resolver):
    """_Loader on libyaml's scanner and parser (PyYAML's C parser: several times faster
    on a 2,000-node file), composing in Python with the same records and bounds. Its
    error words are libyaml's: a file it refuses is read again by _Loader, whose say more."""

    def __init__(self, text: str) -> None:
        CParser.__init__(self, text)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self._start()


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _BOOL]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                              list("tTfF"))
_FastLoader.yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers


def load(path: str | PathLike[str]) -> Topology:
    """Read and check a topology file; `TopologyError` lists every problem found."""
    return loads(read(path), source=str(path))


def read(path: str | PathLike[str], what: str = "the file") -> str:
    """A topology or scenario file's text, refused unread (past its first MAX_BYTES + 1
    bytes) when it is larger than MAX_BYTES; `what` names it in the errors."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
            if len(raw) > MAX_BYTES:
                size = os.fstat(f.fileno()).st_size
                has = f"{size} bytes" if size > MAX_BYTES else f"more than {MAX_BYTES} bytes"
                raise TopologyError([f"{path}: {what} holds {has}; netrig reads at most "
                                     f"{MAX_BYTES} (1 MiB)"])
        return raw.decode("utf-8")
    except FileNotFoundError:
        raise TopologyError([f"{path}: cannot read {what}: it does not exist"]) from None
    except OSError as e:
        e.filename = None  # (said first)
        raise TopologyError([f"{path}: cannot read {what}: {os_words(e)}"]) from None
    except UnicodeDecodeError as e:
        raise TopologyError([f"{path}: cannot read {what}: it is not UTF-8 text (byte "
                             f"{e.start} is {e.object[e.start:e.start + 1]!r})"]) from None


def loads(text: str, source: str = "<string>") -> Topology:
    """Check topology YAML given as text; `source` names it in the errors. Raises one
    `TopologyError` listing every problem, in line order."""
    data, lines, found = _parse(text, source)
    if not isinstance(data, dict):
        msg = f"the file should be a mapping with nodes: and links: (it holds {_kind(data)})"
        raise TopologyError([f"{source}:1: {msg}"])
    topo, problems = check(data, lines, source)
    found += problems
    if topo is not None and not found:
        return topo
    raise TopologyError(where(found, source))


def check(data: Any, lines: dict[Key, int], source: str,
          base: Key = ()) -> tuple[Topology | None, list[tuple[int, Key, str]]]:
    """A topology from parsed YAML `data` that sits at `base` in a file whose keys are
    at `lines` (a scenario holds one under `topology:`): the Topology, or None and its
    problems as (line, path, message)."""
    if not isinstance(data, dict):
        msg = f"the topology should be a mapping with nodes: and links: (it holds {_kind(data)})"
        return None, [(_line(lines, base), base, msg)]
    found: list[tuple[int, Key, str]] = []
    short = _short_forms(data)
    found += [(_line(lines, base + p.path), base + p.path, p.message) for p in short]
    skip = [p.path for p in short]
    try:
        spec = TopologyFile.model_validate(data)
    except ValidationError as e:
        problems = [p for p in _tidy(_problems_of(e), data, topology_keys)
                    if not any(p.path[: len(s)] == s for s in skip)]
        found += [(_line(lines, base + p.path), base + p.path, p.message) for p in problems]
        return None, found
    if found:
        return None, found
    topo = _build(spec, source)
    topo.lines = {k: lines[base + (k,)] for k in ("name", "prefix") if base + (k,) in lines}
    found = [(_line(lines, base + p.path), base + p.path, _one_line(p.message))
             for p in topo.problems()]
    return (None if found else topo), found


def where(found: list[tuple[int, Key, str]], source: str) -> list[str]:
    """Problems as `FILE:LINE: KEY.PATH: message`, in line order."""
    return [f"{source}:{line}: {_key(path)}: {msg}" for line, path, msg in sorted(found, key=lambda f: f[0])]


def _read(kind: type, text: str) -> tuple[Any, Any]:
    """(the loader, the document's data) read by a loader of this kind."""
    loader = kind(text)
    try:
        node = loader.get_single_node()
        data = None
        if node is not None:
            loader.record(node)
            data = loader.construct_document(node)
        return loader, data
    finally:
        loader.dispose()


def _parse(text: str, source: str) -> tuple[Any, dict[Key, int], list[tuple[int, Key, str]]]:
    """The file's data, where each key and item is, and its repeated keys as problems."""
    if len(text) > MAX_BYTES or len(text.encode("utf-8")) > MAX_BYTES:
        raise TopologyError([f"{source}: the text holds {len(text.encode('utf-8'))} bytes; "
                             f"netrig reads at most {MAX_BYTES} (1 MiB)"])
    try:
        loader, data = _read(_FastLoader, text)
    except yaml.YAMLError:  # read again for PyYAML's own words (libyaml's say less)
        try:
            loader, data = _read(_Loader, text)
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            line = mark.line + 1 if mark else 1
            context = f" ({e.context} on line {e.context_mark.line + 1})" if (
                e.context and e.context_mark and e.context_mark.line + 1 != line) else ""
            raise TopologyError([f"{source}:{line}: YAML: {e.problem}{context}"]) from None
        except yaml.YAMLError as e:  # a reader error: a character YAML does not allow
            line = text[: getattr(e, "position", 0)].count("\n") + 1
            raise TopologyError([f"{source}:{line}: YAML: {e}"]) from None
    if data is None:
        raise TopologyError([f"{source}:1: the file is empty (it needs at least nodes:)"])
    repeats = [(line, path, f"defined twice (first on line {first})")
               for line, path, first in loader.repeats]
    for path, line in list(loader.lines.items()):  # a short-form link's ends: its items
        if len(path) == 3 and path[0] == "links" and path[2] in (0, 1):
            loader.lines.setdefault((*path[:2], "ab"[path[2]]), line)
    return data, loader.lines, repeats


def parse_value(text: str) -> Any:
    """One YAML value given on the command line (`--set KEY=VALUE`), read with the file's
    bounds: no alias bomb, no deep nesting. Raises `yaml.YAMLError`."""
    loader = _Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def link_params(words: list[str]) -> dict[str, Any]:
    """`KEY=VALUE` words of a live link change (`netrig link set`, the prompt's `link
    ... set`) as the link's keys, each value read as the file reads it (`ecn=true` a
    boolean, `flows=64` a number, `10ms` text); `aqm.target=10ms` is one parameter of the
    link's discipline (with `aqm=pie` before or after it). Raises NetrigError for a value
    that is not YAML."""
    params: dict[str, Any] = {}
    for kv in words:
        key, _, value = kv.partition("=")
        try:
            parsed = parse_value(value) if value.strip() else ""
        except yaml.YAMLError as e:
            raise NetrigError(f"{kv}: the value is not YAML: {e}") from None
        if "." in key:  # aqm.target=10ms: one parameter of the link's discipline
            outer, _, inner = key.partition(".")
            now = params.get(outer)
            params[outer] = {**({"type": now} if isinstance(now, str) else now or {}), inner: parsed}
        elif isinstance(params.get(key), dict) and isinstance(parsed, str):
            params[key] = {**params[key], "type": parsed}  # aqm.flows=64 aqm=fq_codel
        else:
            params[key] = parsed
    return params


def _short_forms(data: dict[str, Any]) -> list[Problem]:
    """Short-form links are exactly two names; anything else is neither form. (The
    schema's `list[str]` takes any length, and its complaints about a link that is
    neither a list nor a mapping are two half-truths.)"""
    links = data.get("links")
    out: list[Problem] = []
    if not isinstance(links, list):
        return out
    for i, item in enumerate(links):
        if isinstance(item, list):
            if len(item) != 2 or not all(isinstance(n, str) for n in item):
                shown = "[" + ", ".join(_show(n) for n in item) + "]"
                out.append(Problem(("links", i), f"a short-form link is [a, b], two node names; "
                                             f"got {shown}"))
        elif not isinstance(item, dict):
            out.append(Problem(("links", i), f"a link is [a, b] or {{a: ..., b: ..., ...}}; "
                                         f"got {_show(item)}"))
    return out


def topology_keys(path: Key, data: Any) -> list[str]:
    """The keys a topology file may give in the mapping at `path` (an `aqm:` mapping
    whose type is known: that discipline's own)."""
    if path[-1:] == ("aqm",):
        aqm = _at(data, path)
        info = linkspec.DISCIPLINES.get(aqm.get("type")) if isinstance(aqm, dict) else None
        if info is not None:
            return ["type", *info.params]
    return suggest.keys_at(TopologyFile, path)


def _tidy(problems: list[Problem], data: Any,
          keys: Callable[[Key, Any], list[str]] | None = None) -> list[Problem]:
    """Keep the complaint that helps: when a value fails every branch of a union (a node
    is `host` or `{kind: host}`, an aqm is `pie` or `{type: pie, ...}`), drop the branches
    the value is plainly not, and name the value a Literal refused. An unknown key is
    told the valid keys at its place (`keys(path of its mapping, data)`) and the closest."""
    out = []
    for p in problems:
        here = [q for q in problems if q.path == p.path and q is not p]
        deeper = [q for q in problems
                  if len(q.path) > len(p.path) and q.path[: len(p.path)] == p.path]
        if p.message.startswith("Input should be a valid dictionary or instance of") and (
                here or deeper):
            continue  # the value is not a mapping, and another branch says what it is not
        if p.message.startswith("Input should be ") and deeper:
            continue  # the value is a mapping; its own keys say what is wrong
        out.append(Problem(p.path, _reword(p, data, keys)))
    return out


def _reword(p: Problem, data: Any, keys: Callable[[Key, Any], list[str]] | None = None) -> str:
    value = _at(data, p.path)
    field = str(p.path[-1]) if p.path else ""
    if p.message == "unknown key" and keys is not None and p.path:
        valid = keys(p.path[:-1], data)
        return f"unknown key{suggest.unknown(field, valid)}" if valid else p.message
    if p.message == "Field required":
        return "missing (this key is required)"
    if p.message.startswith("Input should be a valid dictionary"):
        return f"should be a mapping (key: value, ...), not {_kind(value)}"
    if p.message == "Input should be a valid list":
        return f"should be a list (- item, or [a, b, ...]), not {_kind(value)}"
    if p.message == "Input should be a valid string" and len(p.path) == 2 and p.path[0] == "nodes":
        return f"a node name is text: quote it ('{p.path[1]}')"
    said = _bounds_and_types(p.message, value, field)
    if said is not None:
        return said
    m = re.fullmatch(r"Input should be ('.*')", p.message)
    if m and p.path[-2:-1] == ("frr",):  # a key of a router's raw FRR lines
        return f"'{field}' is not an FRR daemon netrig runs (expected {m.group(1)})"
    if m is None or isinstance(value, (dict, list)):
        return p.message
    node_kind = p.path[:1] == ("nodes",) and len(p.path) <= 3 and field in ("kind", str(p.path[1]))
    what = _KINDS.get(p.path[0]) if node_kind or (field == "kind" and p.path[:1] != ("nodes",)) else None
    what = what or _CHOICES.get(field, "allowed")
    return f"{_show(value)} is not {what} (expected {m.group(1)})"


# Why a key has the bound it has (by key and "low" or "high"), said after the bound.
_WHY = {("repeat", "low"): "a scenario runs at least once",
        ("repeat", "high"): "1000 repetitions of a point is the most netrig runs",
        ("parallel", "low"): "a flow has at least one stream",
        ("count", "low"): "copies of a flow; 0 leaves it out",
        ("prefix_len", "low"): "a lab's subnets are /8 to /30",
        ("prefix_len", "high"): "a lab's subnets are /8 to /30"}
# pydantic's complaints about a number's bounds and a scalar's type, in netrig's words.
_BOUNDS = ((r"greater than or equal to (\S+)", "is below {}", "low"),
           (r"greater than (\S+)", "is not above {}", "low"),
           (r"less than or equal to (\S+)", "is above {}", "high"),
           (r"less than (\S+)", "is not below {}", "high"))
_TYPES = (("a valid integer", "is not a whole number"), ("a valid number", "is not a number"),
          ("a finite number", "is not a finite number"), ("a valid boolean", "is not true or false"),
          ("a valid string", "is not text (quote it)"))


def _bounds_and_types(message: str, value: Any, field: str) -> str | None:
    """`repeat: 0 is below 1: a scenario runs at least once` for pydantic's "Input should
    be greater than or equal to 1" (any bound: ge, gt, le, lt), `'x' is not a whole
    number` for its int, float, bool and str complaints; None for any other message."""
    rest = message.removeprefix("Input should be ")
    if rest == message or isinstance(value, (dict, list)):
        return None
    for pattern, said, end in _BOUNDS:
        if m := re.fullmatch(pattern, rest):
            why = f": {_WHY[field, end]}" if (field, end) in _WHY else ""
            return f"{_show(value)} {said.format(m.group(1))}{why}"
    for start, said in _TYPES:
        if rest.startswith(start):
            return f"{'nothing' if value is None else _show(value)} {said}"
    return None


def _one_line(message: str) -> str:
    """pydantic's multi-line report (a direction whose merged values clash) as the
    complaints it holds: "give either rate or trace, not both"."""
    found = re.findall(r"^\s+(?:Value error, )?(.*?) \[type=", message, re.MULTILINE)
    return "; ".join(found) if "validation error" in message and found else message


def _build(spec: TopologyFile, source: str) -> Topology:
    """The Topology of a file that passed the schema."""
    topo = Topology(spec.name, prefix=spec.prefix, backend=spec.backend,
                    pool=spec.addressing.pool, prefix_len=spec.addressing.prefix_len,
                    loopbacks=spec.addressing.loopbacks, routing=spec.routing,
                    defaults=spec.defaults.link.model_dump(exclude_unset=True))
    topo.source = source
    add = {"host": topo.host, "switch": topo.switch, "router": topo.router}
    for name, node in spec.nodes.items():
        add[node.kind if isinstance(node, NodeSpec) else node](name)
        if isinstance(node, NodeSpec) and node.kind == "router":
            topo.routers[name] = node.routing()
    for item in spec.links:
        link = item if isinstance(item, LinkSpec) else LinkSpec(a=item[0], b=item[1])
        topo.links.append(Link(link, topo.defaults, topo.base_dir))
    return topo


def _line(lines: dict[Key, int], path: Key) -> int:
    """The line of `path`, else of its nearest recorded ancestor."""
    while path not in lines:
        path = path[:-1]
    return lines[path]


def _at(data: Any, path: Key) -> Any:
    for p in path:
        try:
            data = data[p]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _key(path: Key) -> str:
    """("links", 3, "rate") -> "links[3].rate"."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{p}" if out else str(p)
    return out or "(top level)"


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, (dict, list)):
        return "a list" if isinstance(value, list) else "a mapping"
    return _show(value)


def _show(value: Any) -> str:
    return f"'{value}'" if isinstance(value, str) else "null" if value is None else str(value)
