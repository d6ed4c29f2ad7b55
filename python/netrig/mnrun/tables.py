"""What `netrig mn`'s options name: the tables of names (mn's own and what `--custom`
files add: `Tables`, running a custom file as mn does), every name and argument checked
before anything is built (`check`, with a did-you-mean naming the option), the
topology built as a pure description with its size bounded (`topology`), and the
compat package's classes the options resolve to (`_classes`).
"""

from __future__ import annotations

import argparse
import inspect
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netrig import suggest
from netrig.errors import NetrigError
from netrig.mnrun.options import (
    ALTSPELLING,
    CONTROLLERS,
    HOSTS,
    LINKS,
    MAX_CUSTOM_BYTES,
    MAX_NODES,
    SWITCHES,
    TC_KEYS,
    TESTS,
    TOPOS,
    MnError,
    MnUsage,
)


def _tree_size(depth: int = 1, fanout: int = 2) -> int:
    """Nodes of TreeTopo(depth, fanout), counted until past MAX_NODES."""
    if fanout <= 1:
        return depth + 1 if fanout else 1
    total, level = 0, 1
    for _ in range(depth + 1):
        total += level
        if total > MAX_NODES:
            break
        level *= fanout
    return total


# The nodes each builtin topology makes, from its arguments.
_SIZES = {
    "minimal": lambda: 3,
    "single": lambda k=2: k + 1,
    "reversed": lambda k=2: k + 1,
    "linear": lambda k=2, n=1: k * (n + 1),
    "tree": _tree_size,
    "torus": lambda x, y, n=1: x * y * (n + 1),
}

def _split(text: str) -> tuple[str, list, dict]:
    """mn's NAME,arg,...,key=value (numbers become int or float): mininet.util's."""
    from mininet.util import splitArgs

    return splitArgs(text)


@dataclass
class Tables:
    """The names mn's options take: mn's own, plus what --custom files add (a name
    maps to a spec of the compat package, or to the custom file's own object)."""

    topos: dict[str, Any] = field(default_factory=lambda: dict(TOPOS))
    switches: dict[str, Any] = field(default_factory=lambda: dict(SWITCHES))
    hosts: dict[str, Any] = field(default_factory=lambda: dict(HOSTS))
    links: dict[str, Any] = field(default_factory=lambda: dict(LINKS))
    controllers: dict[str, Any] = field(default_factory=lambda: dict(CONTROLLERS))
    tests: dict[str, Any] = field(default_factory=lambda: dict.fromkeys(TESTS))
    validate: Any = None
    cli: Any = None

    def load(self, value: str) -> None:
        """Runs a --custom file (or comma-separated files) as mn does, and takes the
        names it defines: topos, switches, hosts, links, controllers, tests (dicts),
        validate (called with the options), CLI (the prompt's class)."""
        files = [value] if os.path.isfile(value) else value.split(",")
        for name in files:
            self._load_one(Path(name))

    def _load_one(self, path: Path) -> None:
        if not path.is_file():
            raise MnUsage(f"--custom {path}: no such file (a Python file defining topos = "
                          "{'name': MyTopo}, e.g. Mininet's custom/topo-2sw-2host.py)")
        with open(path, "rb") as f:
            text = f.read(MAX_CUSTOM_BYTES + 1)
        if len(text) > MAX_CUSTOM_BYTES:
            raise MnUsage(f"--custom {path}: larger than {MAX_CUSTOM_BYTES} bytes")
        space: dict[str, Any] = {"__name__": "__mn_custom__", "__file__": str(path)}
        try:
            exec(compile(text, str(path), "exec"), space)  # mn runs custom files: trusted code
        except Exception as e:
            raise MnError(f"--custom {path}{_where(e, str(path))}: {type(e).__name__}: {e}") from None
        for key in ("topos", "switches", "hosts", "links", "controllers", "tests"):
            if key in space:
                if not isinstance(space[key], dict):
                    raise MnUsage(f"--custom {path}: '{key}' must be a dict of names "
                                  f"(e.g. {key} = {{'mine': ...}}), not {type(space[key]).__name__}")
                getattr(self, key).update(space[key])
        if callable(space.get("validate")):
            self.validate = space["validate"]
        if space.get("CLI") is not None:
            self.cli = space["CLI"]


def _where(e: BaseException, filename: str) -> str:
    """':LINE' of the last frame of `filename` in the exception (its own line for a
    syntax error); empty when none is in that file."""
    if isinstance(e, SyntaxError) and e.lineno:
        return f":{e.lineno}"
    line, tb = None, e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f":{line}" if line else ""


def _pick(table: dict, value: str, option: str, what: str, plural: str) -> tuple[str, list, dict]:
    name, args, kwargs = _split(value)
    if name not in table:
        raise MnUsage(f"{option} {value}: unknown {what} '{name}'{suggest.unknown(name, table, plural)}")
    return name, args, kwargs

def check(opts: argparse.Namespace, tables: Tables):
    """Every name and argument of the options, before anything is built: raises MnUsage
    naming the option, with a did-you-mean. Returns the topology (a pure Topo)."""
    _pick(tables.switches, opts.switch, "--switch", "switch", "switches")
    _pick(tables.hosts, opts.host, "--host", "host", "hosts")
    for c in opts.controller:
        _pick(tables.controllers, c, "--controller", "controller", "controllers")
    name, args, kwargs = _pick(tables.links, opts.link, "--link", "link", "links")
    if name in ("tc", "tcu") and tables.links[name] == LINKS[name]:
        if args:
            raise MnUsage(f"--link {opts.link}: tc takes key=value only (e.g. tc,bw=10,delay=5ms)")
        for key in kwargs:
            if key not in TC_KEYS:
                raise MnUsage(f"--link {opts.link}: unknown key '{key}'{suggest.unknown(key, TC_KEYS, 'keys')}")
    elif name == "default" and tables.links[name] == LINKS[name] and (args or kwargs):
        raise MnUsage(f"--link {opts.link}: a default link takes no parameters; a shaped "
                      f"one is --link tc,{opts.link.split(',', 1)[1]}")
    methods = _net_methods()
    for test in opts.test:
        for one in test.split("+"):
            tname = _split(one)[0]
            if (tname.lower() not in tables.tests and tname not in tables.tests
                    and ALTSPELLING.get(tname.lower(), tname) not in methods):
                near = [*tables.tests, *sorted(m for m in methods if m.lower() not in tables.tests)]
                raise MnUsage(f"--test {one}: unknown test '{tname}'"
                              f"{suggest.did_you_mean(tname, near)} (tests: "
                              f"{', '.join(tables.tests)}, or a method of Mininet: pingFull, ...)")
    from mininet.util import netParse

    try:
        _, plen = netParse(opts.ipbase)
    except NetrigError as e:
        raise MnUsage(f"--ipbase {opts.ipbase}: {e}") from None
    if not 0 < plen < 31:
        raise MnUsage(f"--ipbase {opts.ipbase}: a prefix of /1 to /30 leaves room for hosts "
                      "(e.g. 10.0.0.0/8)")
    for option in ("pre", "post"):
        path = getattr(opts, option)
        if path and not os.path.isfile(path):
            raise MnUsage(f"--{option} {path}: no such file (a file of prompt commands, one a line)")
        if path and os.path.getsize(path) > MAX_CUSTOM_BYTES:
            raise MnUsage(f"--{option} {path}: larger than {MAX_CUSTOM_BYTES} bytes")
    return topology(opts.topo, tables)  # a pure description: building it checks its arguments


def _net_methods() -> set[str]:
    """The public methods of mininet.net.Mininet, which --test may name (none while the
    compat package has no mininet.net)."""
    try:
        from mininet.net import Mininet
    except ImportError:
        return set()
    return {m for m in dir(Mininet) if not m.startswith("_") and callable(getattr(Mininet, m))}

def topology(value: str, tables: Tables):
    """The Topo --topo names, built (pure: a description, no network). A builtin one's
    arguments are checked, and its size, before it is built."""
    name, args, kwargs = _pick(tables.topos, value, "--topo", "topology", "topologies")
    spec = tables.topos[name]
    builtin = spec == TOPOS.get(name)
    maker = _resolve(*spec) if builtin else spec
    _check_call(maker, args, kwargs, f"--topo {value}: {name}")
    if builtin:
        if any(not isinstance(a, int) or a < 0 for a in [*args, *kwargs.values()]):
            raise MnUsage(f"--topo {value}: {name}'s arguments are whole numbers (e.g. "
                          f"{_EXAMPLES[name]})")
        size = _SIZES[name](*args, **kwargs)
        if size > MAX_NODES:
            raise MnUsage(f"--topo {value} makes more than {MAX_NODES} nodes, the most netrig "
                          "mn builds in one network")
    try:
        return maker(*args, **kwargs)
    except NetrigError as e:
        raise MnUsage(f"--topo {value}: {e}") from None
    except Exception as e:
        raise MnError(f"--topo {value}: {type(e).__name__}: {e}") from e


def _check_call(maker, args: list, kwargs: dict, what: str) -> None:
    """MnUsage when `maker(*args, **kwargs)` does not fit its parameters: those of its
    build() for a Topo subclass that keeps Topo's constructor, else its own."""
    from mininet.topo import Topo

    bound: tuple = tuple(args)
    target = maker
    if isinstance(maker, type) and issubclass(maker, Topo) and maker.__init__ is Topo.__init__:
        target, bound = maker.build, (None, *args)
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return  # a callable without a signature: it says itself what it takes
    try:
        sig.bind(*bound, **kwargs)
    except TypeError as e:
        params = [p for p in sig.parameters if p not in ("self", "_opts", "opts", "params")]
        raise MnUsage(f"{what} takes {','.join(params) or 'no arguments'} ({e})") from None


_EXAMPLES = {"minimal": "minimal", "single": "single,3", "reversed": "reversed,3",
             "linear": "linear,4 or linear,3,2", "tree": "tree,2,3", "torus": "torus,3,3"}


def _resolve(module: str, name: str):
    """A class of the compat package, by module and name (LinuxBridge may be in
    mininet.nodelib, as in Mininet)."""
    import importlib

    for mod in (module, "mininet.nodelib") if name == "LinuxBridge" else (module,):
        try:
            found = getattr(importlib.import_module(mod), name, None)
        except ImportError:
            continue
        if found is not None:
            return found
    raise MnError(f"netrig's Mininet has no {module}.{name}")


def _classes(opts: argparse.Namespace, tables: Tables) -> dict[str, Any]:
    """Mininet()'s switch, host and link arguments from the options: each a class of
    the compat package (or of a --custom file), specialised with the option's params."""
    from mininet.util import specialClass

    def made(table: dict, value: str, kind: str, option: str):
        name, args, kwargs = _split(value)
        spec = table[name]
        defaults: dict = {}
        if isinstance(spec, tuple):  # (class name, defaults) for hosts
            spec, defaults = spec
        cls = _resolve(f"mininet.{kind}", spec) if isinstance(spec, str) else spec
        if not args and not kwargs and not defaults:
            return cls
        if not isinstance(cls, type):
            raise MnUsage(f"{option} {value}: '{name}' of the --custom file is not a class, "
                          "so it takes no parameters")
        return specialClass(cls, append=args, defaults={**defaults, **kwargs})

    controllers = [made(tables.controllers, c, "node", "--controller")
                   for c in opts.controller or ["default"]
                   if tables.controllers[_split(c)[0]] is not None]
    return {"switch": made(tables.switches, opts.switch, "node", "--switch"),
            "host": made(tables.hosts, opts.host, "node", "--host"),
            "link": made(tables.links, opts.link, "link", "--link"),
            "controller": controllers or None}
