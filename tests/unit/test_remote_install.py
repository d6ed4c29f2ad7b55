"""scripts/install.sh installs openssh-client and openssh-server (the SSH hosts'
tests run one sshd per namespace) and leaves the ssh service it installed disabled
and stopped, as FRR's and nginx's: a dry run of its system part with apt-get, dpkg and
systemctl stood in by scripts that record what they were asked."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_ssh_service_it_installs_is_disabled_and_stopped(tmp_path):
    text = (ROOT / "scripts" / "install.sh").read_text()
    system = text[: text.index("if ! command -v cargo")]  # the packages and services part
    assert "openssh-client openssh-server" in system and "openssh-server:ssh" in system
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls"
    stubs = {
        "id": "echo 0",
        "dpkg": 'case "$2" in openssh-server|openssh-client) exit 1;; esac; exit 0',  # the rest: installed
        "apt-get": f'echo "apt-get $*" >> {log}',
        "debconf-set-selections": "cat >/dev/null",
        "systemctl": f'echo "systemctl $*" >> {log}',
        "update-rc.d": f'echo "update-rc.d $*" >> {log}',
        "service": f'echo "service $*" >> {log}',
    }
    for name, body in stubs.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    script = tmp_path / "system.sh"
    script.write_text(system)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "NETRIG_POLICY_RC_D": str(tmp_path / "policy-rc.d")}
    r = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    calls = log.read_text().splitlines()
    assert any(c.startswith("apt-get install") and "openssh-client openssh-server" in c for c in calls), calls
    assert "systemctl disable ssh" in calls
    assert "systemctl stop ssh" in calls or "service ssh stop" in calls
    if Path("/etc/init.d/ssh").exists():
        assert "update-rc.d ssh disable" in calls
    assert not any(" frr" in c or " nginx" in c for c in calls if not c.startswith("apt-get"))  # installed before
    assert not (tmp_path / "policy-rc.d").exists()  # removed after the install
