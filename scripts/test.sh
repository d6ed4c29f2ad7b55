#!/usr/bin/env bash
# Runs every test: the Python linter (ruff), the layer and size checks, the documentation's
# strict build, Rust unit tests (cargo test) and the pytest suite (unit tests, and
# integration tests with real traffic on loopback against netrig-perf and iperf3).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"

echo "== ruff (lint)"
.venv/bin/ruff check python tests
echo "== layers (python/LAYERS), import cycles and module sizes"
python3 scripts/import_cycles
big=$(find python -name '*.py' -exec wc -l {} + | awk '$2 != "total" && $1 > 600')
if [ -n "$big" ]; then
    echo "Python files over 600 lines (split them by what they own):"
    echo "$big"
    exit 1
fi
echo "== docs: mkdocs build --strict (the reference generated from the code; offline)"
site=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$site"
rm -rf "$site"
echo "== cargo test"
cargo test --workspace --quiet 2>&1 | grep -v '^$'
if [ $# -gt 0 ]; then  # the tests asked for, as asked
    echo "== pytest"
    exec .venv/bin/python -m pytest -q -ra --durations=15 "$@"
fi
# The unit tests are pure (no namespaces, traffic or timing: tests/netguard.py's guard
# fails one that tries): two workers. Everything else builds labs and times traffic: one at a time.
echo "== pytest: unit tests, two workers"
.venv/bin/python -m pytest -q -ra --durations=10 -n 2 tests/unit
echo "== pytest: labs, traffic and servers, one at a time"
.venv/bin/python -m pytest -q -ra --durations=25 tests --ignore=tests/unit
