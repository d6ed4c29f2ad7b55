"""The documentation's reference pages, generated from the code when the site is built,
so they cannot drift from it: a MkDocs hook (mkdocs.yml `hooks:`) that adds
`reference/*.md` to the site, none of them committed.

- cli.md: every `netrig` command and option, from the argparse parser
  (netrig.cli.parser.build), with each command's examples and whether it needs root.
- topology.md, scenario.md: every key of a topology and a scenario file, from their
  pydantic models (netrig.topo.model, netrig.exp.spec.model, netrig.remote.hosts): type,
  unit and range (from the fields' constraints and the unit each validator reads the
  value with), default, and a line saying what it is (DOCS: a key without one,
  or a line for a key that is gone, fails tests/unit/test_docs.py; the lines are in
  scripts/docs_keys.py).
- link.md: every link key and queue discipline, from netrig-link's schema
  (python/netrig/link/schema.json, the printed copy of netrig_core::link::schema).
- perf.md: netrig-perf's options, from `netrig-perf --help` (clap's table).

Pure functions of the checkout (and the netrig-perf binary): `pages()` returns every
page's Markdown; `on_files` is the hook. The code read is this checkout's python/, not
an installed netrig.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args, get_origin

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))

from pydantic import BaseModel  # noqa: E402
from pydantic_core import PydanticUndefined  # noqa: E402

GENERATED = ("<!-- Generated from the code when the site is built (scripts/docs_reference.py): "
             "do not edit; it is not in the repository. -->\n")


class ReferenceError(Exception):
    """The reference cannot be generated (a binary missing, a key undocumented)."""


def md(text: Any) -> str:
    """Text for a Markdown table cell: one line, nothing read as markup but `code`."""
    parts = " ".join(str(text).split()).split("`")
    for i in range(0, len(parts), 2):  # outside code spans
        for c in "\\*_|[]":
            parts[i] = parts[i].replace(c, "\\" + c)
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    for i in range(1, len(parts), 2):
        parts[i] = parts[i].replace("|", "\\|")
    return "`".join(parts)


def code(text: str) -> str:
    """Inline code, safe inside a table cell."""
    return "`" + text.replace("|", "\\|") + "`" if text else ""


def table(head: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------- the CLI

def _option(a: argparse.Action) -> str:
    if not a.option_strings:
        return a.metavar if isinstance(a.metavar, str) else a.dest.upper()
    names = ", ".join(a.option_strings)
    if a.nargs == 0:
        return names
    meta = a.metavar if isinstance(a.metavar, str) else a.dest.upper()
    return f"{names} {meta}"


def _default(a: argparse.Action) -> str:
    if a.nargs == 0 or a.default in (None, argparse.SUPPRESS, [], ""):
        return ""
    return code(str(a.default))


def _about(p: argparse.ArgumentParser) -> str:
    """The description after its first paragraph (the summary), unwrapped."""
    paras = (p.description or "").split("\n\n")[1:]
    return "\n\n".join(" ".join(x.split()) for x in paras)


def cli_page() -> str:
    from netrig.cli import NEEDS_ROOT
    from netrig.cli.parser import build

    _, commands = build()
    out = [GENERATED, "# `netrig` commands\n",
           "Every command of `netrig`, as its parser defines it. `netrig help COMMAND` "
           "(or `netrig COMMAND --help`) prints the same on the terminal. "
           "`netrig --version` is `netrig version`; `python -m netrig` is `netrig`.\n",
           table(["command", "what it does"],
                 [[f"[`{c.name}`](#{c.name})", md(c.summary)] for c in commands.values()])]
    for c in commands.values():
        p = c.parser
        out.append(f"## {c.name}\n")
        out.append(f"```\nnetrig {c.synopsis}\n```\n")
        out.append(md(c.summary[0].upper() + c.summary[1:]) + ".\n")
        if _about(p):
            out.append(md(_about(p)) + "\n")
        if c.name in NEEDS_ROOT:
            out.append(f"Needs root: {md(NEEDS_ROOT[c.name])}.\n")
        fmt = p._get_formatter()
        rows = []
        for a in p._actions:
            if isinstance(a, argparse._HelpAction) or a.help == argparse.SUPPRESS:
                continue
            helptext = fmt._expand_help(a) if a.help else ""
            choices = ", ".join(code(str(x)) for x in a.choices) if a.choices else ""
            rows.append([code(_option(a)), md(helptext), _default(a), choices])
        if rows:
            out.append(table(["argument", "meaning", "default", "choices"], rows))
        if p.examples:
            out.append("Examples:\n\n```sh\n" + "\n".join(p.examples) + "\n```\n")
    return "\n".join(out)


# ------------------------------------------------------------- the files' pydantic models

def _sibling(name: str) -> Any:
    """A module beside this one (MkDocs loads a hook by its path, not as a package)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# What each key is, one line (scripts/docs_keys.py); units, ranges and defaults come from
# the code.
DOCS: dict[str, str] = _sibling("docs_keys").DOCS

# What a validator's reading of a value means, by the units function it calls.
_UNITS = {
    "seconds_above_zero": ("duration (10ms, 1.5s)", "> 0"),
    "seconds_not_negative": ("duration (10ms, 1.5s)", ">= 0"),
    "size_bytes": ("bytes (1500, 64KB = 64 000, 64KiB = 65 536)", ""),
    "rate_bps": ("bit/s (30Mbit, 1.5Mbit/s)", ""),
    "fraction": ("percent (1%)", ""),
    "_loss_fraction": ("percent (1%)", "0% .. < 100%"),
    "area_id": ("OSPF area (0, or 0.0.0.1)", ""),
    "_option_key": ("", ""),
}


def _validated(model: type[BaseModel]) -> dict[str, tuple[str, str]]:
    """Each field's (unit, range) as its validators read it."""
    out: dict[str, tuple[str, str]] = {}
    for d in model.__pydantic_decorators__.field_validators.values():
        f = getattr(d.func, "__func__", d.func)
        names = f.__code__.co_names
        cells = dict(zip(f.__code__.co_freevars, (c.cell_contents for c in f.__closure__ or ())))
        unit = rng = ""
        if "seconds" in names and "lo" in cells:
            unit, rng = "whole seconds (10s)", f"{cells['lo']} .. {cells['hi']} s"
        elif "seconds_not_negative" in names and "hi" in cells:
            unit, rng = "whole milliseconds (50ms)", f"0 .. {cells['hi']} ms"
        elif "KEYS" in names:  # read as a link key reads it (GeModel: as `loss`)
            from netrig.link import spec
            key = next(c for c in f.__code__.co_consts if isinstance(c, str) and c in spec.KEYS)
            unit = f"as the link key `{key}`: " + ("percent (1%)" if spec.KEYS[key].kind == "fraction"
                                                  else spec.KEYS[key].unit)
        else:
            for fn, (u, r) in _UNITS.items():
                if fn in names:
                    unit, rng = u, r
                    break
            else:
                doc = (f.__doc__ or "").strip().split("\n")[0]
                unit = doc
        for field in d.info.fields:
            out[field] = (unit, rng)
    return out


def _type(t: Any) -> str:
    """A field's type in the file's words."""
    if t is type(None):
        return ""
    if isinstance(t, type) and issubclass(t, BaseModel):
        return "mapping"
    origin = get_origin(t)
    if origin is None:
        return {str: "text", int: "integer", float: "number", bool: "true/false",
                Any: "any"}.get(t, getattr(t, "__name__", str(t)))
    if str(origin) == "typing.Literal":
        return " \\| ".join(code(str(x)) for x in get_args(t))
    if origin is dict:
        return "mapping"
    if origin is list:
        return "list"
    if str(origin) == "typing.Annotated":
        return _type(get_args(t)[0])
    parts = [_type(x) for x in get_args(t)]  # a union
    seen: list[str] = []
    for p in parts:
        if p and p not in seen:
            seen.append(p)
    return " or ".join(seen)


def _field_default(info: Any) -> str:
    if info.default_factory is not None:
        v = info.default_factory()
        return "" if isinstance(v, BaseModel) or v in ({}, []) else code(str(v))
    if info.default is PydanticUndefined:
        return "**required**"
    if info.default is None:
        return ""
    if isinstance(info.default, bool):
        return code(str(info.default).lower())
    return code(str(info.default))


def fields(model: type[BaseModel]) -> dict[str, Any]:
    """The model's keys as a file writes them (aliases: `from`, `as`, `set`)."""
    return {(f.alias or name): f for name, f in model.model_fields.items()}


def keys_table(model: type[BaseModel], skip: set[str] = frozenset(),
               extra: Callable[[str], str] | None = None, extra_head: str = "") -> str:
    validated = _validated(model)
    rows = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        if key in skip:
            continue
        unit, rng = validated.get(name, ("", ""))
        lo = next((m.ge for m in info.metadata if hasattr(m, "ge")), None)
        hi = next((m.le for m in info.metadata if hasattr(m, "le")), None)
        if not rng and (lo is not None or hi is not None):
            rng = f"{lo} .. {hi}" if lo is not None and hi is not None else (
                f">= {lo}" if lo is not None else f"<= {hi}")
        doc = DOCS.get(f"{model.__name__}.{key}")
        if doc is None:
            raise ReferenceError(f"{model.__name__}.{key}: no line in scripts/docs_keys.py DOCS (what the key is)")
        row = [md(unit) or _type(info.annotation), md(rng), _field_default(info), md(doc)]
        row.insert(0, code(key))
        if extra:
            row.append(extra(key))
        rows.append(row)
    head = ["key", "value", "range", "default", "what"] + ([extra_head] if extra else [])
    return table(head, rows)


def documented_models() -> list[type[BaseModel]]:
    """Every model whose keys the reference lists (the test checks DOCS against them)."""
    from netrig.exp.spec.model import EventSpec, FlowSpec, MonitorSpec, ScenarioFile
    from netrig.remote.hosts import HostSpec, PathSpec
    from netrig.topo.model import (
        Addressing,
        Bgp,
        BgpTimers,
        Defaults,
        GeModel,
        NodeSpec,
        Ospf,
        OspfTimers,
        Routing,
        TopologyFile,
    )
    return [TopologyFile, Addressing, Defaults, NodeSpec, Ospf, Bgp, Routing, OspfTimers,
            BgpTimers, _link_model(), GeModel, ScenarioFile, FlowSpec, MonitorSpec, EventSpec,
            HostSpec, PathSpec]


def _link_model() -> type[BaseModel]:
    from netrig.topo.model import LinkSpec
    return LinkSpec


def link_only_keys() -> list[str]:
    """A link's own keys (its ends, name, addresses, ...), beside the shaping keys."""
    from netrig.link import spec
    return [k for k in fields(_link_model()) if k not in spec.KEYS]


def topology_page() -> str:
    from netrig.link import spec
    from netrig.topo.model import (
        Addressing,
        Bgp,
        BgpTimers,
        Defaults,
        GeModel,
        NodeSpec,
        Ospf,
        OspfTimers,
        Routing,
        TopologyFile,
    )
    shaping = set(spec.KEYS)
    return "\n".join([
        GENERATED, "# Topology file keys\n",
        "Every key a topology file (or a scenario's inline `topology:`) takes, from the models "
        "in `python/netrig/topo/`. Unknown keys are refused naming the file, line and key. "
        "Units are explicit strings: rates are decimal bits (`30Mbit`), sizes take both "
        "prefixes (`64KB` = 64 000, `64KiB` = 65 536), durations need a unit (`10ms`). "
        "The [guide to labs](../guides/labs.md) shows them at work.\n",
        "## Top level\n", keys_table(TopologyFile),
        "## `addressing:`\n", keys_table(Addressing),
        "## `defaults:`\n", keys_table(Defaults),
        "## A node: `nodes: {NAME: ...}`\n",
        "A node is `NAME: host`, `NAME: switch`, `NAME: router`, or a mapping:\n",
        keys_table(NodeSpec),
        "### `ospf:`\n", keys_table(Ospf), "### `bgp:`\n", keys_table(Bgp),
        "## `routing:`\n", keys_table(Routing),
        "### `routing.ospf:`\n", keys_table(OspfTimers),
        "### `routing.bgp:`\n", keys_table(BgpTimers),
        "## A link: `links: [...]`\n",
        "A link is `[a, b]` (a plain veth pair) or a mapping of these keys and the "
        "[link keys](link.md) (rate, delay, queue, aqm, ...), which hold for both directions "
        "unless given under `a_to_b` / `b_to_a`. A direction's own value wins over the "
        "link's, the link's over `defaults`.\n",
        keys_table(_link_model(), skip=shaping),
        "### `gemodel:`\n", keys_table(GeModel),
    ])


def scenario_page() -> str:
    from netrig.exp.spec.model import (
        COMMON,
        EVENT_ACTIONS,
        MAX_POINTS,
        TAKES,
        TOOL_LACKS,
        EventSpec,
        FlowSpec,
        MonitorSpec,
        ScenarioFile,
    )
    from netrig.remote.hosts import HostSpec, PathSpec

    def kinds(key: str) -> str:
        name = "src" if key == "from" else key
        if name in COMMON:
            return "every kind"
        return ", ".join(k for k, takes in TAKES.items() if name in takes)

    lacks = [[code(tool), code(key), md(why)] for tool, keys in TOOL_LACKS.items()
             for key, why in keys.items()]
    return "\n".join([
        GENERATED, "# Scenario file keys\n",
        "Every key a scenario file takes, from the models in `python/netrig/exp/spec/model.py` "
        "and `python/netrig/remote/hosts.py`. Errors say `FILE:LINE: key: what` before "
        f"anything runs; a sweep has at most {MAX_POINTS} points. The "
        "[experiments guide](../guides/experiments.md) shows them at work; the topology's "
        "keys are in [topology](topology.md), a link's in [link keys](link.md).\n",
        "## Top level\n", keys_table(ScenarioFile),
        "## A flow: `flows: {NAME: ...}`\n",
        "Which keys a flow takes depends on its `kind` (last column); any other is refused "
        "at its line.\n",
        keys_table(FlowSpec, extra=kinds, extra_head="kinds"),
        "Keys a tool cannot do, refused when the scenario is read:\n",
        table(["tool", "key", "why"], lacks),
        "## A monitor: `monitors: [...]`\n", keys_table(MonitorSpec),
        "## An event: `events: [...]`\n",
        "Exactly one action per event: "
        + ", ".join(f"{code(a)} (on a {t})" for a, t in EVENT_ACTIONS.items()) + ".\n",
        keys_table(EventSpec),
        "## Real hosts: `hosts: {NAME: ...}`\n", keys_table(HostSpec),
        "## `path:`\n", keys_table(PathSpec),
    ])


# --------------------------------------------------------------------- netrig-link keys

def _si(value: Any, unit: str) -> str:
    """A schema number in the file's words (ns -> ms, bit/s -> Mbit)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if value == 0:
        return "0"
    if isinstance(value, bool):
        return str(value).lower()
    if unit == "ns" and isinstance(value, (int, float)):
        for name, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
            if value >= scale:
                return f"{value / scale:g}{name}"
        return f"{value:g}ns"
    if unit == "bit/s" and isinstance(value, (int, float)):
        for name, scale in (("Gbit", 1e9), ("Mbit", 1e6), ("kbit", 1e3)):
            if value >= scale:
                return f"{value / scale:g}{name}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _link_row(k: dict[str, Any]) -> list[str]:
    unit = {"ns": "duration (10ms)", "bit/s": "bit/s (30Mbit)", "bytes": "packets (100p) or bytes (64KB)"
            }.get(k["unit"], "") or {"fraction": "percent (1%)", "bool": "true/false",
                                     "choice": ", ".join(f"`{c}`" for c in k.get("choices", ()))
                                     }.get(k["kind"], k["unit"] or k["kind"])
    rng = ""
    if k.get("min") is not None and k.get("max") is not None:
        if k["kind"] == "fraction":
            rng = f"{k['min'] * 100:g}% .. {k['max'] * 100:g}%"
        else:
            rng = f"{_si(k['min'], k['unit'])} .. {_si(k['max'], k['unit'])}"
    return [code(k["name"]), md(unit), md(rng), code(_si(k.get("default"), k["unit"])), md(k["doc"])]


def link_page() -> str:
    schema = json.loads((ROOT / "python/netrig/link/schema.json").read_text())
    q = schema["queue"]
    out = [GENERATED, "# Link keys\n",
           "What one direction of a link may hold: netrig-link's schema "
           f"(`netrig-link schema`, version {schema['version']}; its copy is "
           "`python/netrig/link/schema.json`). Topology files take these keys on a link (both "
           "directions), under `a_to_b` / `b_to_a`, under `defaults: {link: ...}`, and "
           "`netrig link set` and a scenario's `links.NAME.KEY` take them too. A key at its "
           "neutral value (`loss: 0%`, `delay: 0ms`, `aqm: droptail`) turns its stage off.\n",
           table(["key", "unit", "range", "default", "what"], [_link_row(k) for k in schema["keys"]]),
           f"A queue limit is {q['packets']['min']:,.0f} .. {q['packets']['max']:,.0f} packets or "
           f"{q['bytes']['min']:,.0f} .. {q['bytes']['max']:,.0f} bytes.\n",
           "## Rules between keys\n",
           table(["key", "rule", "other", "why"],
                 [[code(r["key"]), r["kind"], code(r["other"]), md(r["why"])] for r in schema["rules"]]),
           "## Queue disciplines (`aqm:`)\n",
           "`aqm: pie`, or `aqm: {type: pie, target: 20ms, ...}` with the discipline's "
           "parameters; the ones not given take the defaults below.\n"]
    for d in schema["disciplines"]:
        limit = d["limit"]
        lim = (f"{limit['packets']} packets" if limit["packets"] else f"{limit['bytes']} bytes"
               if limit["bytes"] else "none")
        out.append(f"### `{d['name']}`\n")
        out.append(f"{md(d['doc'])}. Default queue limit: {lim}.\n")
        if d["params"]:
            out.append(table(["parameter", "unit", "range", "default", "what"],
                             [_link_row(p) for p in d["params"]]))
    late = schema["lateness"]
    out.append(f"A run is said to be late when more than {late['late_share'] * 100:g} % of its "
               f"packets leave more than {_si(late['budget_ns'], 'ns')} after their due time.\n")
    return "\n".join(out)


# ---------------------------------------------------------------------- netrig-perf

_FLAG = re.compile(r"^  (?:(-\w), )?\s*(--[\w-]+)?(?: <([^>]+)>)?\s*$")


def perf_help() -> str:
    """`netrig-perf --help`, from the binary netrig would run."""
    from netrig import binary

    try:
        path = binary("netrig-perf")
        return subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=30,
                              check=True).stdout
    except Exception as e:  # noqa: BLE001 (said whole: the build cannot go on without it)
        raise ReferenceError(f"netrig-perf --help failed ({e}): build netrig-perf (scripts/install.sh) "
                             "or set NETRIG_BIN_DIR to where it is") from None


def perf_options(text: str) -> list[tuple[str, str]]:
    """(flags, meaning) for each option of clap's long help."""
    out: list[tuple[str, str]] = []
    for line in text.splitlines():
        m = _FLAG.match(line)
        if m and (m.group(1) or m.group(2)):
            flags = ", ".join(x for x in (m.group(1), m.group(2)) if x)
            out.append((flags + (f" {m.group(3)}" if m.group(3) else ""), ""))
        elif out and line.startswith("          "):
            f, doc = out[-1]
            out[-1] = (f, (doc + " " + line.strip()).strip())
    if not out:
        raise ReferenceError("netrig-perf --help listed no options")
    return out


def perf_page(text: str | None = None) -> str:
    text = perf_help() if text is None else text
    first = text.strip().splitlines()[0]
    rows = [[code(f), md(doc)] for f, doc in perf_options(text)]
    return "\n".join([
        GENERATED, "# `netrig-perf` options\n",
        f"netrig-perf: {md(first)}. `netrig perf ARGS` runs it with the same arguments. "
        "Its command line is iperf3's, with netrig's extras; the "
        "[iperf3 guide](../guides/from-iperf3.md) says where they differ. Sizes (`-n`, `-l`, "
        "`-w`) take K/M/G in 1024s, rates (`-b`) in 1000s, as iperf3's do.\n",
        table(["option", "meaning"], rows)])


# ---------------------------------------------------------------------- the hook

PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli_page,
    "reference/topology.md": topology_page,
    "reference/scenario.md": scenario_page,
    "reference/link.md": link_page,
    "reference/perf.md": perf_page,
}


def pages() -> dict[str, str]:
    return {uri: make() for uri, make in PAGES.items()}


def on_files(files: Any, config: Any) -> Any:
    """MkDocs: add the generated pages to the site's files."""
    from mkdocs.structure.files import File

    for uri, content in pages().items():
        files.append(File.generated(config, uri, content=content))
    return files
