#!/usr/bin/env bash
# Installs netrig from this checkout: system packages the tests and experiments use
# (when run as root on Debian/Ubuntu), then a virtualenv in .venv with netrig built
# from source (Rust binaries and Python package in one `pip install .`).
set -euo pipefail
cd "$(dirname "$0")/.."

# frr: OSPF and BGP on routed labs' routers; nginx: the web server of `web` flows (curl
# their client). netrig runs these daemons itself, in the lab's namespaces with configs
# of its own; the packages' own services (in the host's namespace) must never run, so
# they are installed with services blocked, and disabled and stopped if they started.
# openssh-client: how a scenario reaches real hosts (hosts:); openssh-server: the tests'
# stand-in hosts, one sshd per namespace started by the test (the host's own ssh service
# stays off).
APT_PACKAGES=(iperf3 iputils-ping iproute2 tcpdump tshark ethtool chromium frr nginx curl
              openssh-client openssh-server)
# Mininet 2.3 (and, by its Depends, iperf 2, net-tools, telnet): its examples and their
# tests run on netrig's Mininet in the test suite. Without its recommended Open vSwitch:
# netrig's switches are Linux bridges.
APT_NO_RECOMMENDS=(mininet vlan graphviz)  # vlan: vconfig, which Mininet's vlanhost example runs
# graphviz: dot lays out the topology drawings (netrig graph, the report's topology).
# Packages whose service netrig never wants running: PACKAGE or PACKAGE:SERVICE.
SERVICES=(frr nginx openssh-server:ssh)
POLICY=${NETRIG_POLICY_RC_D:-/usr/sbin/policy-rc.d}  # (overridden only by a dry run)

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    missing=()
    for p in "${APT_PACKAGES[@]}"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    bare=()
    for p in "${APT_NO_RECOMMENDS[@]}"; do
        dpkg -s "$p" >/dev/null 2>&1 || bare+=("$p")
    done
    if [ ${#bare[@]} -gt 0 ]; then
        echo "== apt: installing ${bare[*]} (without recommends)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${bare[@]}" >/dev/null
    fi
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
    for entry in "${SERVICES[@]}"; do
        pkg=${entry%%:*}
        svc=${entry#*:}
        [[ " ${missing[*]} " == *" $pkg "* ]] || continue
        # Installed just now: the host-wide service the package enables stays off (netrig
        # starts FRR per router, nginx per web flow's node). One that was installed
        # before is the host's own, left alone: netrig's daemons share no file, socket,
        # port or namespace with it.
        if command -v systemctl >/dev/null; then
            # (without a running systemd too: it removes the links that enable it at boot)
            systemctl disable "$svc" >/dev/null 2>&1 || true
        fi
        if command -v update-rc.d >/dev/null && [ -e "/etc/init.d/$svc" ]; then
            update-rc.d "$svc" disable >/dev/null 2>&1 || true  # its SysV links too (ssh has them)
        fi
        if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
            systemctl stop "$svc" >/dev/null 2>&1 || true
        elif command -v service >/dev/null; then
            service "$svc" stop >/dev/null 2>&1 || true
        fi
    done
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
