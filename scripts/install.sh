#!/usr/bin/env bash
# Installs netrig from this checkout: system packages the tests and experiments use
# (when run as root on Debian/Ubuntu), then a virtualenv in .venv with netrig built
# from source (Rust binaries and Python package in one `pip install .`).
set -euo pipefail
cd "$(dirname "$0")/.."

# frr: OSPF and BGP on routed labs' routers. netrig runs its daemons itself, one set per
# router namespace; the package's own service (zebra and friends in the host's namespace)
# must never run, so it is installed with services blocked and stopped if it started.
APT_PACKAGES=(iperf3 iputils-ping iproute2 tcpdump tshark ethtool chromium frr)
POLICY=${NETRIG_POLICY_RC_D:-/usr/sbin/policy-rc.d}  # (overridden only by a dry run)

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
        # No service may start during the install (invoke-rc.d asks policy-rc.d; 101:
        # action forbidden). A policy-rc.d that was already there is left as it is.
        made_policy=
        if [ ! -e "$POLICY" ]; then
            printf '#!/bin/sh\n# netrig install.sh: no service starts during the install\nexit 101\n' >"$POLICY"
            chmod 755 "$POLICY"
            made_policy=1
        fi
        trap '[ -n "$made_policy" ] && rm -f "$POLICY"' EXIT
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
        if [ -n "$made_policy" ]; then
            rm -f "$POLICY"
            made_policy=
        fi
        trap - EXIT
    fi
    if [[ " ${missing[*]} " == *" frr "* ]]; then
        # Installed just now: the host-wide service the package enables stays off (netrig
        # starts FRR per router). An FRR that was installed before is the host's own,
        # left alone: netrig's daemons share no file, socket or namespace with it.
        if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
            systemctl disable --now frr >/dev/null 2>&1 || true
        elif command -v service >/dev/null; then
            service frr stop >/dev/null 2>&1 || true
        fi
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
