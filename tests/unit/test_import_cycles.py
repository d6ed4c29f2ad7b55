"""scripts/import_cycles on small made-up trees: the circles it must find, and none more."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "import_cycles"


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))


def run(root: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root), *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )


def findings(out: str) -> list[str]:
    """The cycle lines (every line but the summary)."""
    return [line for line in out.splitlines() if not line.startswith("import_cycles:")]


CLEAN_PY = {
    "python/pkg/__init__.py": '"""A package whose __init__ imports its own modules."""\n'
    "from pkg.base import VALUE\n",
    "python/pkg/base.py": "import os\nVALUE = os.sep\n",
    "python/pkg/sub/__init__.py": "from . import leaf\nfrom .leaf import f\n",
    "python/pkg/sub/leaf.py": """
        import json

        from .. import base
        from ..base import VALUE


        def f():
            from pkg import base as again  # an ancestor's module: no circle

            return json.dumps([VALUE, base.VALUE, again.VALUE])
        """,
    "python/pkg/top.py": "import pkg.sub.leaf\nfrom pkg.sub import f\n",
}

CLEAN_RUST = {
    "crates/tidy/src/lib.rs": "pub mod low;\npub mod high;\npub use high::H;\n",
    "crates/tidy/src/low.rs": "pub struct L;\n",
    "crates/tidy/src/high.rs": """
        use crate::low::L;

        pub struct H(pub L);

        #[cfg(test)]
        mod tests {
            use super::*;
            use super::super::low;
        }
        """,
}


def test_a_clean_package_and_crate_have_no_cycle(tmp_path: Path) -> None:
    write(tmp_path, CLEAN_PY | CLEAN_RUST)
    r = run(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert findings(r.stdout) == []
    assert "no import cycle" in r.stdout
    # Each edge of the clean tree was seen, so "no cycle" is not "nothing read".
    assert "python: 5 modules, 5 imports between them: 0 cycles" in r.stdout
    assert "tidy 0 (2 modules)" in r.stdout
    edges = findings(run(tmp_path, "--edges").stdout)
    assert "python package edge pkg.top -> pkg.sub: pkg/top.py:1 imports pkg.sub.leaf" in edges
    assert "python module edge pkg.sub.leaf -> pkg.base: pkg/sub/leaf.py:3 imports pkg.base" in edges
    assert "rust tidy edge high -> low: tidy/src/high.rs:1 uses crate::low::L" in edges
    assert len(edges) == 3 + 5 + 1  # package edges, module edges, crate edges


def test_a_function_level_import_does_not_hide_a_python_circle(tmp_path: Path) -> None:
    write(
        tmp_path,
        CLEAN_RUST
        | {
            "python/pkg/__init__.py": "",
            "python/pkg/a/__init__.py": "",
            "python/pkg/a/x.py": "from pkg.b.y import helper\n",
            "python/pkg/b/__init__.py": "",
            "python/pkg/b/y.py": """
                def helper():
                    if True:
                        from ..a import x  # hidden in a function: still a circle
                    return x
                """,
        },
    )
    r = run(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert findings(r.stdout) == [
        "python package pkg.a <-> pkg.b: pkg/a/x.py:1 imports pkg.b.y; pkg/b/y.py:3 imports pkg.a.x",
        "python module pkg.a.x <-> pkg.b.y: pkg/a/x.py:1 imports pkg.b.y; pkg/b/y.py:3 imports pkg.a.x",
    ]
    assert r.stdout.splitlines()[-1].startswith("import_cycles: 2 import cycles;")


def test_submodules_named_by_from_imports_inits_and_self_imports(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            # `from pkg import d` names the module pkg.d; `import pkg.c` the module pkg.c.
            "python/pkg/__init__.py": "from pkg.e import thing\n",
            "python/pkg/c.py": "from pkg import d\n",
            "python/pkg/d.py": "import os\n\nimport pkg.c as c\n",
            # The package's __init__ imports e, and e imports a name from the __init__.
            "python/pkg/e.py": "def thing():\n    from pkg import VERSION\n    return VERSION\n",
            # Importing pkg.f.h runs pkg/f/__init__.py, which imports g back.
            "python/pkg/f/__init__.py": "import pkg.g\n",
            "python/pkg/f/h.py": "",
            "python/pkg/g.py": "from pkg.f.h import *\n",
            "python/pkg/selfish.py": "from . import selfish\n",
        },
    )
    r = run(tmp_path, "--python-only")
    assert r.returncode == 1, r.stdout + r.stderr
    assert findings(r.stdout) == [
        "python package pkg <-> pkg.e: pkg/__init__.py:1 imports pkg.e; pkg/e.py:2 imports pkg",
        "python package pkg.c <-> pkg.d: pkg/c.py:1 imports pkg.d; pkg/d.py:3 imports pkg.c",
        "python package pkg.f <-> pkg.g: pkg/f/__init__.py:1 imports pkg.g; "
        "pkg/g.py:1 imports pkg.f.h",
        "python module pkg <-> pkg.e: pkg/__init__.py:1 imports pkg.e; pkg/e.py:2 imports pkg",
        "python module pkg.c <-> pkg.d: pkg/c.py:1 imports pkg.d; pkg/d.py:3 imports pkg.c",
        "python module pkg.f <-> pkg.g: pkg/f/__init__.py:1 imports pkg.g; "
        "pkg/g.py:1 imports pkg.f.h, which runs pkg/f/__init__.py",
        "python module pkg.selfish -> itself: pkg/selfish.py:1 imports pkg.selfish",
    ]
    assert "rust" not in r.stdout


RUST_CIRCLES = {
    "crates/demo/src/lib.rs": "pub mod a;\npub mod b;\npub mod c;\npub mod d;\npub mod e;\n",
    "crates/demo/src/a/mod.rs": "pub mod inner;\npub fn g() {}\n",
    # super::super from a/inner.rs climbs to the crate root: b is another module.
    "crates/demo/src/a/inner.rs": "use super::super::b::B;\nuse super::g;\n",
    "crates/demo/src/b.rs": "pub struct B;\npub fn f() {\n    crate::a::g()\n}\n",
    "crates/demo/src/c.rs": """
        use crate::{
            d::D,
            e::{self, E},
        };
        pub struct C;
        """,
    # Paths in comments, strings and char literals are not imports.
    "crates/demo/src/d.rs": """
        //! Not an import: [`crate::c::C`].
        /* crate::c /* nested */ crate::c */
        pub struct D;
        pub fn text() -> (&'static str, &'static str, char) {
            ("crate::c \\" crate::c", r#"crate::c " crate::c"#, '"')
        }
        """,
    "crates/demo/src/e.rs": """
        pub struct E;
        #[cfg(test)]
        mod tests {
            mod deeper {
                use super::super::super::c::C;
            }
        }
        """,
}


def test_rust_circles_through_crate_super_and_groups(tmp_path: Path) -> None:
    write(tmp_path, CLEAN_PY | RUST_CIRCLES | CLEAN_RUST)
    r = run(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert findings(r.stdout) == [
        "rust demo: a <-> b: demo/src/a/inner.rs:1 uses super::super::b::B; "
        "demo/src/b.rs:3 uses crate::a::g",
        "rust demo: c <-> e: demo/src/c.rs:3 uses crate::e; "
        "demo/src/e.rs:5 uses super::super::super::c::C",
    ]
    assert "demo 2 (5 modules), tidy 0 (2 modules)" in r.stdout
    # Python is clean and --rust-only says the same; --python-only sees no circle.
    assert findings(run(tmp_path, "--rust-only").stdout) == findings(r.stdout)
    assert run(tmp_path, "--python-only").returncode == 0


def test_an_unreadable_file_is_named_with_its_line(tmp_path: Path) -> None:
    write(tmp_path, CLEAN_RUST | {"python/pkg/__init__.py": "", "python/pkg/bad.py": "x = 1\ndef (:\n"})
    r = run(tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith("import_cycles: pkg/bad.py:2: cannot parse")


def test_netrig_itself_has_no_import_cycle() -> None:
    """Issue 13: no circle in python/netrig (modules or packages) nor among any crate's
    modules; `scripts/import_cycles` shows any that comes back, with one import per edge."""
    root = Path(__file__).resolve().parents[2]
    p = subprocess.run([sys.executable, str(root / "scripts" / "import_cycles"), "--root", str(root)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no import cycle" in p.stdout
