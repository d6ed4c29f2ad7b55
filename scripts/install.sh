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
# stays off). python3-venv: the system Python's venv, which .venv is made with (below).
APT_PACKAGES=(iperf3 iputils-ping iproute2 tcpdump tshark ethtool chromium frr nginx curl
              openssh-client openssh-server python3-venv)
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

# The venv is for every user of the machine: `netrig report`, `analyze`, `graph` and a
# cluster's head need no root. So its interpreter is one every user can run (a system
# Python, not one under root's home), and what is installed is readable by all.
umask 022

# The first directory on the way to $2 (links followed) that other users cannot enter,
# or $2 itself when they cannot use it as $1 says (r: read, x: run); nothing when they can.
blocked() {
    local need=$1 path d bit=1
    path=$(readlink -f -- "$2") || { echo "$2"; return; }
    d=$path
    while [ "$d" != / ]; do
        d=$(dirname -- "$d")
        [ $(( 8#$(stat -c %a -- "$d") & 1 )) -ne 0 ] || { echo "$d"; return; }
    done
    [ "$need" = r ] && bit=4
    [ $(( 8#$(stat -c %a -- "$path") & bit )) -ne 0 ] || echo "$path"
}

# Why the interpreter $1 does not do for the venv (nothing when it does): Python 3.11 or
# later, and it and its standard library within every user's reach.
unfit() {
    local py=$1 where
    "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
        || { echo "it is not Python 3.11 or later"; return; }
    where=$(blocked x "$py")
    [ -z "$where" ] || { echo "other users cannot reach it ($where)"; return; }
    where=$(blocked r "$("$py" -c 'import os; print(os.__file__)')")
    [ -z "$where" ] || echo "other users cannot reach its standard library ($where)"
}

echo "== python: .venv"
py=
said=()
for c in /usr/bin/python3 /usr/local/bin/python3 /usr/bin/python3.13 /usr/bin/python3.12 \
         /usr/bin/python3.11 "$(command -v python3 || true)"; do
    [ -n "$c" ] && [ -x "$c" ] || continue
    why=$(unfit "$c")
    if [ -z "$why" ] && "$c" -c 'import ensurepip, venv' 2>/dev/null; then
        py=$c
        break
    fi
    said+=("$c: ${why:-it has no venv module (Debian: apt-get install python3-venv)}")
done
copies=
if [ -z "$py" ]; then
    py=$(command -v python3) || { echo "netrig needs Python 3.11 or later (python3)" >&2; exit 1; }
    copies=--copies  # the interpreter copied into .venv/bin: no link into a closed directory
    echo "   no Python every user can reach was found:"
    printf '     %s\n' "${said[@]}"
fi
if [ -e .venv/pyvenv.cfg ]; then
    made_from=$(sed -n 's/^executable = //p' .venv/pyvenv.cfg)
    if [ "$made_from" != "$(readlink -f -- "$py")" ] || [ -n "$(blocked x .venv/bin/python3)" ]; then
        echo "   .venv was made from ${made_from:-another Python}: made again from $py"
        rm -rf .venv
    fi
fi
"$py" -m venv $copies .venv
echo "   .venv's Python is $py ($("$py" -c 'import platform; print(platform.python_version())')${copies:+, copied into .venv/bin})"
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q "maturin>=1.5,<2"
echo "== build and install netrig (release build of the Rust binaries)"
.venv/bin/pip install -q ".[test,docs]"
.venv/bin/netrig version

# Checked as a user with no rights of its own (nobody), where root can switch to it.
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null && id nobody >/dev/null 2>&1; then
    here=$PWD
    if (cd / && runuser -u nobody -- "$here/.venv/bin/python" -c 'import netrig.cli' 2>/dev/null) \
        && (cd / && runuser -u nobody -- "$here/.venv/bin/netrig" version >/dev/null 2>&1); then
        echo "   every user can run $here/.venv/bin/netrig (checked as nobody)"
    else
        where=$(blocked x "$here/.venv/bin/python3")
        echo "netrig: other users cannot run $here/.venv/bin/netrig (checked as nobody${where:+;" \
             "$where is closed to them}); root can. Put the checkout where every user can" \
             "enter (e.g. /opt/netrig) and give it a Python 3.11+ they can reach (Debian:" \
             "apt-get install python3 python3-venv), then run scripts/install.sh again" >&2
    fi
fi
