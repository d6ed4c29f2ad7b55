#!/usr/bin/env bash
# Runs every test: the Python linter (ruff), Rust unit tests (cargo test) and the pytest suite (unit tests, and
# integration tests with real traffic on loopback against netrig-perf and iperf3).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"

echo "== ruff (lint)"
.venv/bin/ruff check python tests
echo "== cargo test"
cargo test --workspace --quiet 2>&1 | grep -v '^$'
echo "== pytest"
.venv/bin/python -m pytest -q -ra --durations=15 "$@"
