"""The mininet> prompt over real namespaces: through a pipe, and through a terminal as
Mininet's pexpect-driven tests drive it (prompt, answers, Ctrl-C, typed input, history).

The net it runs on is a running netrig lab seen through `MiniNet` below: a few dozen
lines of Mininet's public API over `netrig.lab.network.Network` (each node a bash on a
pty in its namespace, PS1 Mininet's sentinel, as Mininet's own nodes are), so the
prompt is tested here on its own, before and apart from the compat Mininet. Run as a
program (`python test_mn_prompt.py PREFIX`), this file is the prompt on lab PREFIX.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import subprocess
import sys
import termios
from pathlib import Path

import pytest

pytestmark = pytest.mark.net

HERE = Path(__file__).resolve()
SENTINEL = "\x7f"


class Intf:
    def __init__(self, name: str) -> None:
        self.name, self.link = name, None

    def __str__(self) -> str:
        return self.name


class Node:
    """A node as Mininet's: a shell on a pty (its controlling terminal, so Ctrl-C written
    to it interrupts the command), commands sent and their output read up to PS1."""

    def __init__(self, name: str, ns: str, ip: str | None, intfs: list[str]) -> None:
        self.name, self.ip, self.intfs = name, ip, [Intf(i) for i in intfs]
        master, slave = pty.openpty()

        def take_tty() -> None:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.shell = subprocess.Popen(
            ["ip", "netns", "exec", ns, "env", f"PS1={SENTINEL}", "bash", "--norc", "--noediting", "-is"],
            stdin=slave, stdout=slave, stderr=slave, start_new_session=True, preexec_fn=take_tty)
        os.close(slave)
        self.stdout = os.fdopen(master, "rb", buffering=0)
        self.waiting = True  # until the first prompt
        self.waitOutput()
        self.sendCmd("stty -echo; set +m")
        self.waitOutput()

    def write(self, data: str) -> None:
        os.write(self.stdout.fileno(), data.encode())

    def sendCmd(self, cmd: str) -> None:
        assert not self.waiting
        self.write(cmd + "\n")
        self.waiting = True

    def sendInt(self) -> None:
        self.write("\x03")

    def monitor(self) -> str:
        data = os.read(self.stdout.fileno(), 4096).decode(errors="replace")
        if SENTINEL in data:
            self.waiting = False
        return data.replace(SENTINEL, "")

    def waitOutput(self) -> str:
        out = ""
        while self.waiting:
            if not select.select([self.stdout], [], [], 10)[0]:
                raise TimeoutError(f"{self.name}: no prompt from its shell in 10 s")
            out += self.monitor()
        return out

    def IP(self) -> str | None:
        return self.ip

    def intfList(self) -> list[Intf]:
        return self.intfs

    def intfNames(self) -> list[str]:
        return [i.name for i in self.intfs]

    def stop(self) -> None:
        self.shell.kill()
        self.shell.wait(timeout=10)
        self.stdout.close()


class MiniNet:
    """Mininet's public API, as the prompt uses it, over a running netrig lab."""

    def __init__(self, prefix: str) -> None:
        from netrig.lab.network import Network

        self.net = Network.attach(prefix)
        self.prefix = prefix
        plan = self.net.state.plan["nodes"]
        self.nodes = {n: Node(n, self.net.state.node_ns[n],
                              self.net.addr(n) if kind == "host" else None,
                              [i["name"] for i in plan[n]["ifaces"]])
                      for n, kind in self.net.topo.nodes.items()}
        self.hosts = [self.nodes[n] for n in self.net.hosts()]
        self.switches = [v for v in self.nodes.values() if v not in self.hosts]
        self.links: list = []

    def __iter__(self):
        return iter(self.nodes)

    def __contains__(self, name: str) -> bool:
        return name in self.nodes

    def __getitem__(self, name: str) -> Node:
        return self.nodes[name]

    def values(self) -> list[Node]:
        return list(self.nodes.values())

    def set_link(self, a: str, b: str, dir: str | None = None, **params) -> None:
        self.net.set_link(a, b, dir=dir, **params)

    def lab_state(self):
        from netrig.lab.state import LabState

        return LabState.load(self.prefix)

    def stop(self) -> None:
        for n in self.nodes.values():
            n.stop()


def serve(prefix: str) -> None:
    """The prompt (netrig's mininet.cli) on lab `prefix`, on this process's stdin."""
    import netrig

    sys.path.insert(0, str(Path(netrig.__file__).resolve().parent / "mnshim"))
    from mininet.cli import CLI

    net = MiniNet(prefix)
    try:
        CLI(net)
    finally:
        net.stop()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    from netlab import needs_root

    needs_root()
    from netrig.lab.network import Network

    prefix = f"mnp{os.getpid() % 100000}"
    f = tmp_path_factory.mktemp("mnp") / "lab.yaml"
    f.write_text(json.dumps({"name": "mnp", "nodes": {"h1": "host", "h2": "host", "s1": "switch"},
                             "links": [{"a": "h1", "b": "s1", "name": "L1", "delay": "5ms"},
                                       ["h2", "s1"]]}))
    net = Network(f, prefix=prefix).start()
    try:
        yield net
    finally:
        assert net.stop() == []


def prompt_argv(net) -> list[str]:
    return [sys.executable, str(HERE), net.prefix]


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SUDO_UID"}
    return {**env, "HOME": str(home), "TERM": "dumb",
            "PYTHONPATH": os.pathsep.join([str(HERE.parents[2] / "python"), env.get("PYTHONPATH", "")])}


def rtt_ms(text: str) -> float:
    """The fastest ping's RTT (the first may wait for ARP across the delayed link)."""
    return min(float(x) for x in re.findall(r"time=([\d.]+) ms", text))


def test_commands_through_a_pipe(lab, tmp_path):
    h2 = lab.addr("h2")
    script = ("nodes\nh1 ping -c2 -i0.2 -W2 h2\nh1 echo h2 h2-eth0\npy h2.IP()\nlink L1 set delay=20ms\n"
              "h1 ping -c2 -i0.2 -W2 h2\nstatus\ngraph\nnodez\nexit\nh1 echo never\n")
    p = subprocess.run(prompt_argv(lab), input=script, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=60, env=env_for(tmp_path))
    out = p.stdout  # prompts (stdout) and answers (stderr, as Mininet's) in order
    assert p.returncode == 0, out
    assert out.startswith("mininet> available nodes are: \nh1 h2 s1\n"), out
    answers = out.split("mininet> ")
    assert len(answers) == 11, out  # a prompt before each command up to exit
    first, second = answers[2], answers[6]
    assert f"PING {h2} ({h2})" in first and "2 received" in first, out
    assert answers[3] == f"{h2} h2-eth0\n", out
    assert answers[4] == f"{h2}\n", out
    assert answers[5] == "link L1 (h1 s1): set delay=20ms\n", out
    assert 10 <= rtt_ms(first) < 20, first  # 2 x 5 ms
    assert 40 <= rtt_ms(second) < 50, second  # 2 x 20 ms, changed live
    assert "delay=20ms" in answers[7] and "lab '" in answers[7], out  # netrig status
    assert "20 ms" in answers[8] and "L1" in answers[8], out  # the drawing, as it runs
    assert answers[9] == "*** Unknown command: nodez; did you mean nodes?\n", out
    assert "never" not in out


def test_a_terminal_as_mininets_pexpect_tests_use_it(lab, tmp_path):
    pexpect = pytest.importorskip("pexpect")
    p = pexpect.spawn(prompt_argv(lab)[0], prompt_argv(lab)[1:], env=env_for(tmp_path),
                      encoding="utf-8", timeout=15)
    try:
        p.expect("mininet> ")
        p.sendline("h1 ping -i 0.2 h2")
        p.expect(r"icmp_seq=3 ")
        p.sendintr()  # Ctrl-C: to the command, not the prompt
        p.expect(r"(\d+)% packet loss")
        assert p.match.group(1) == "0"
        p.expect("mininet> ")
        p.send("nod\t\n")  # completion of a command
        p.expect("available nodes are")
        p.expect("mininet> ")
        p.sendline("h1 read x; echo got=$x")  # what is typed goes to the running command
        p.expect_exact("read x")
        p.sendline("hello")
        p.expect("got=hello")
        p.expect("mininet> ")
        p.sendline("noecho h1 read x; echo got=$x")  # typed, not shown
        p.expect_exact("read x; echo got=$x")
        p.sendline("secret")
        p.expect("got=secret")
        assert "secret" not in p.before
        p.expect("mininet> ")
        p.sendline("exit")
        p.expect(pexpect.EOF)
    finally:
        p.close(force=True)
    history = (tmp_path / ".mininet_history").read_text().splitlines()
    assert history == ["h1 ping -i 0.2 h2", "nodes", "h1 read x; echo got=$x",
                       "noecho h1 read x; echo got=$x", "exit"]


def test_netrig_cli_on_a_running_lab(lab, tmp_path):
    """netrig cli: the prompt on netrig's Mininet attached to the lab (Mininet.attach);
    its shells end with it, the lab stays up."""
    script = "nodes\nlink L1 set delay=15ms\nh1 ping -c2 -i0.2 -W2 h2\npingall\ngraph\nexit\n"
    p = subprocess.run([sys.executable, "-m", "netrig", "cli", "--prefix", lab.prefix], input=script,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60,
                       env=env_for(tmp_path))
    out = p.stdout
    assert p.returncode == 0, out
    answers = out.split("mininet> ")
    assert answers[1] == "available nodes are: \nh1 h2 s1\n", out
    assert answers[2] == "link L1 (h1 s1): set delay=15ms\n", out
    assert 30 <= rtt_ms(answers[3]) < 40, out  # 2 x 15 ms
    assert "*** Results: 0% dropped (2/2 received)" in answers[4], out
    assert "L1 h1-s1  15 ms (both ways)" in answers[5], out
    for node in ("h1", "h2", "s1"):  # no shell left behind in the lab
        ns = lab.state.node_ns[node]
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=10)
        assert pids.stdout.split() == [], (ns, pids.stdout)
    assert subprocess.run([sys.executable, "-m", "netrig", "status", "--prefix", lab.prefix],
                          capture_output=True, timeout=60).returncode == 0


if __name__ == "__main__":
    # The prompt stands in for `netrig mininet`/`netrig cli`, whose entry takes SIGINT back
    # when it was started with it ignored (a background job of a script, as CI may run the
    # suite): without that, the terminal's Ctrl-C never reaches the prompt.
    from netrig.cli.console import take_back_sigint

    take_back_sigint()
    serve(sys.argv[1])
