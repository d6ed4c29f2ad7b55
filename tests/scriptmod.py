"""A script of the repository (a bench, scripts/corpus: no .py suffix) loaded as a module,
for tests of its functions; running it as a module runs none of its main."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load(relative: str, name: str) -> ModuleType:
    """The script at ROOT/relative, as module `name`."""
    loader = importlib.machinery.SourceFileLoader(name, str(ROOT / relative))
    spec = importlib.util.spec_from_loader(name, loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod
