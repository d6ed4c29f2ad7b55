"""`--set KEY=VALUE`: the words of `netrig run --set` read as (path, value) pairs.

A value is read as a scenario file reads it (netrig.topo.load.parse_value: `40ms`
text, `64` a number, `true` a boolean, `[1, 2]` a list); an empty value is the empty
string. A word without `=` or without a key, and a value that is not YAML (or is past
the loader's bounds), is a `SetError` naming the word as given after `--set`.

Owns reading the words only: where a path points in a scenario, and whether its value
fits there, is the scenario's (exp/spec/scenario.py applies them like one-point sweeps).
"""

from __future__ import annotations

from typing import Any

import yaml

from netrig.errors import NetrigError


class SetError(NetrigError):
    """A `--set` word that is not KEY=VALUE, or whose value is not YAML."""


def parse(words: list[str]) -> dict[str, Any]:
    """`["links.r2-r3.delay=40ms", "repeat=1"]` → `{"links.r2-r3.delay": "40ms", "repeat": 1}`
    (a key given twice: the last word wins)."""
    from netrig.topo.load import parse_value

    values: dict[str, Any] = {}
    for word in words:
        key, eq, raw = word.partition("=")
        if not eq or not key.strip():
            raise SetError(f"--set {word}: expected KEY=VALUE (e.g. --set links.r2-r3.delay=40ms)")
        try:
            values[key.strip()] = parse_value(raw) if raw.strip() else ""
        except yaml.composer.ComposerError as e:  # past the loader's bounds
            column = e.problem_mark.column + 1 if e.problem_mark else 1
            raise SetError(f"--set {key.strip()}: the value, at column {column}: {e.problem}") from None
        except yaml.YAMLError as e:
            raise SetError(f"--set {word}: the value is not YAML: {e}") from None
    return values
