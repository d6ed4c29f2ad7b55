#!/usr/bin/env bash
# Installs netrig from this checkout: system packages the tests and experiments use
# (when run as root on Debian/Ubuntu), then a virtualenv in .venv with netrig built
# from source (Rust binaries and Python package in one `pip install .`).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(iperf3 iputils-ping iproute2 tcpdump tshark ethtool chromium)

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    missing=()
    for p in "${APT_PACKAGES[@]}"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "== apt: installing ${missing[*]}"
        apt-get update -qq
        echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
        echo "iperf3 iperf3/start_daemon boolean false" | debconf-set-selections
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
fi

if ! command -v cargo >/dev/null; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    else
        echo "netrig needs a Rust toolchain (cargo): install it with rustup or 'apt-get install cargo'" >&2
        exit 1
    fi
fi

echo "== python: .venv"
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q "maturin>=1.5,<2"
echo "== build and install netrig (release build of the Rust binaries)"
.venv/bin/pip install -q ".[test]"
.venv/bin/netrig version
