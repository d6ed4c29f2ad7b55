"""Two "real machines" for the SSH tests: namespaces A and B, each running its own
OpenSSH server (Debian's openssh-server, started here and stopped by its PID), joined
to the head (the root namespace) through a bridge; key authentication with keys made
in a temporary directory. Each sshd's sessions get their own HOME (a temporary
directory: a copied netrig-perf lands there) and the PATH the test chooses.

(A plain module, not a conftest.py: two conftest modules would shadow each other.)
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"
PORT = 2222


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, check=check, timeout=30)


@dataclass
class SshLab:
    tag: str
    dir: Path
    subnet: str  # "10.231.N": the head is .1, A .2, B .3; .9 answers nobody
    bridge: str
    ns: dict[str, str] = field(default_factory=dict)  # host name -> namespace
    veths: list[str] = field(default_factory=list)
    sshd: dict[str, subprocess.Popen] = field(default_factory=dict)
    key: Path = Path()
    wrong_key: Path = Path()

    def addr(self, name: str) -> str:
        return f"{self.subnet}.{ {'a': 2, 'b': 3}[name] }"

    @property
    def down_addr(self) -> str:
        return f"{self.subnet}.9"

    def home(self, name: str) -> Path:
        return self.dir / f"home-{name}"

    def host_yaml(self, name: str, key: Path | None = None, addr: str | None = None, extra: str = "") -> str:
        return (f"{{ssh: root@{addr or self.addr(name)}, port: {PORT}, key: {key or self.key}, "
                "connect_timeout: 2s, options: {StrictHostKeyChecking: 'no', UserKnownHostsFile: /dev/null, "
                f"LogLevel: ERROR}}{extra}}}")

    def start_sshd(self, name: str, path: str) -> None:
        """(Re)starts host `name`'s sshd, its sessions' PATH `path`."""
        old = self.sshd.pop(name, None)
        if old is not None:
            old.terminate()
            old.wait(timeout=5)
        home = self.home(name)
        home.mkdir(exist_ok=True)
        conf = self.dir / f"sshd-{name}.conf"
        conf.write_text("\n".join([
            f"Port {PORT}", f"ListenAddress {self.addr(name)}", f"HostKey {self.dir / 'hostkey'}",
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}", "PermitRootLogin prohibit-password",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
            f"PidFile {self.dir / f'sshd-{name}.pid'}", "Subsystem sftp internal-sftp",
            f"SetEnv HOME={home} PATH={path}", "MaxSessions 50", "MaxStartups 50", ""]))
        sh(SSHD, "-t", "-f", str(conf))
        p = subprocess.Popen(["ip", "netns", "exec", self.ns[name], SSHD, "-D", "-f", str(conf),
                              "-E", str(self.dir / f"sshd-{name}.log")])
        self.sshd[name] = p  # `ip netns exec` execs sshd: this PID is sshd's
        deadline = time.monotonic() + 10
        while sh("ip", "netns", "exec", self.ns[name], "ss", "-Hltn", f"sport = :{PORT}").stdout.strip() == "":
            assert p.poll() is None, (self.dir / f"sshd-{name}.log").read_text()
            assert time.monotonic() < deadline, "sshd did not listen"
            time.sleep(0.02)

    def shape(self, name: str, rate: str) -> None:
        """Host `name`'s sending rate (tbf on its interface, in its namespace)."""
        sh("ip", "netns", "exec", self.ns[name], "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf",
           "rate", rate, "burst", "20kb", "latency", "50ms")

    def close(self) -> None:
        for p in self.sshd.values():
            if p.poll() is None:
                p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        for v in self.veths:
            sh("ip", "link", "del", v, check=False)
        sh("ip", "link", "del", self.bridge, check=False)
        for ns in self.ns.values():
            sh("ip", "netns", "del", ns, check=False)


def listening(pid: int, port: int) -> bool:
    """Whether process `pid` (in whichever namespace) has a TCP socket listening on
    `port` in its namespace."""
    want = f":{port:04X} "
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            return False
        if any(want in x.split(None, 2)[1] + " " and x.split()[3] == "0A" for x in lines):
            return True
    return False


def make(tmp: Path, path: str = "/usr/bin:/bin") -> SshLab:
    """The lab: both hosts up, sshd running with sessions' PATH `path`."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    if not Path(SSHD).exists():
        pytest.fail("openssh-server is not installed: bash scripts/install.sh installs it")
    n = os.getpid() % 100000
    lab = SshLab(tag=f"rs{n}", dir=tmp, subnet=f"10.231.{n % 250}", bridge=f"rsbr{n}")
    try:
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / "hostkey"))
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / "client"))
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / "stranger"))
        (tmp / "authorized_keys").write_text((tmp / "client.pub").read_text())
        lab.key, lab.wrong_key = tmp / "client", tmp / "stranger"
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
        sh("ip", "link", "add", lab.bridge, "type", "bridge")
        sh("ip", "addr", "add", f"{lab.subnet}.1/24", "dev", lab.bridge)
        sh("ip", "link", "set", lab.bridge, "up")
        for name in ("a", "b"):
            ns, veth = f"{lab.tag}{name}", f"{lab.tag}{name}h"
            sh("ip", "netns", "add", ns)
            lab.ns[name] = ns
            sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            lab.veths.append(veth)
            sh("ip", "link", "set", veth, "master", lab.bridge, "up")
            sh("ip", "-n", ns, "addr", "add", f"{lab.addr(name)}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            lab.start_sshd(name, path)
    except BaseException:
        lab.close()
        raise
    return lab
