"""netrig's Mininet: scripts written for Mininet 2.3 run through `netrig mininet`, on
real namespaces and traffic, and leave nothing behind.

Each test runs a small script as a user would (`netrig mininet SCRIPT.py`), which prints
one JSON line of what it measured; the checks are Mininet's own claims (a TCLink's
delay is in the RTT; pingAll's text and loss; a node's shell keeps its state and stops
on ^C; links added and removed while it runs) and netrig's (the lab goes away however
the script ends)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from netlab import assert_emulated_rtt, needs_root

pytestmark = pytest.mark.net


def run_script(tmp_path: Path, body: str, timeout: float = 120) -> tuple[int, str, list[str]]:
    """netrig mininet on `body`: (exit status, output, its labs left behind). The script
    runs with NETRIG_PREFIX set, so its lab's name is known (and is no other test's)."""
    from netrig.lab.state import LabState, labs

    needs_root()
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    prefix = f"mnt{os.getpid() % 100000}"
    env = {**os.environ, "NETRIG_PREFIX": prefix}
    p = subprocess.run([sys.executable, "-m", "netrig", "mininet", str(script)], capture_output=True,
                       text=True, timeout=timeout, env=env)
    left = [x for x in labs() if x == prefix]
    left += [str(LabState(prefix, "").dir)] if LabState(prefix, "").dir.exists() else []
    left += [ns for ns in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                         text=True).stdout.split() if ns.startswith(prefix + "-")]
    return p.returncode, p.stdout + p.stderr, left


def result(out: str) -> dict:
    line = next(l for l in out.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def test_tclink_delay_is_in_the_rtt_and_changes_live(tmp_path):
    """Two TCLinks of 10 ms each way: RTT 40 ms (each end's egress is delayed, as
    Mininet's tc does), within 1 ms; intf.config(delay='30ms') on h1's end: 60 ms."""
    code, out, left = run_script(tmp_path, """
        import json, re
        from mininet.net import Mininet
        from mininet.topo import Topo
        from mininet.link import TCLink
        from mininet.log import setLogLevel

        class T(Topo):
            def build(self):
                s1 = self.addSwitch('s1')
                for h in ('h1', 'h2'):
                    self.addLink(self.addHost(h), s1, delay='10ms')

        def rtts(out):
            return sorted(float(x) for x in re.findall(r'time=([0-9.]+) ms', out))[1:-1]

        setLogLevel('warning')
        net = Mininet(topo=T(), link=TCLink)
        net.start()
        h1, h2 = net.get('h1', 'h2')
        h1.cmd('ping -c1 -W2', h2.IP())  # ARP
        before = rtts(h1.cmd('ping -c 12 -i 0.05', h2.IP()))
        h1.intf().config(delay='30ms')
        after = rtts(h1.cmd('ping -c 12 -i 0.05', h2.IP()))
        print('RESULT', json.dumps({'before': before, 'after': after}))
        net.stop()
    """)
    assert code == 0, out
    assert left == [], left
    r = result(out)
    # The fastest ping is within 1 ms of theory (a noisy host only adds delay, so the
    # median may sit further out); each link is crossed twice each way.
    assert_emulated_rtt(r["before"], 40, crossings=4)
    assert min(r["before"]) < 41, r
    assert_emulated_rtt(r["after"], 60, crossings=4)
    assert min(r["after"]) < 61, r


def test_pingall_nodes_added_and_removed_while_running(tmp_path):
    code, out, left = run_script(tmp_path, """
        import json
        from mininet.net import Mininet
        from mininet.topo import SingleSwitchTopo
        from mininet.node import LinuxBridge

        net = Mininet(topo=SingleSwitchTopo(3), switch=LinuxBridge, controller=None)
        net.start()
        first = net.pingAll()
        knob = 'cat /proc/sys/net/ipv4/igmp_link_local_mcast_reports'
        igmp = [net['s1'].cmd(knob).strip(), net['h1'].cmd(knob).strip()]
        h4 = net.addHost('h4')
        link = net.addLink(h4, net['s1'])
        h4.configDefault()
        second = net.ping([net['h1'], h4], timeout=2)
        ip = h4.IP()
        net.delLink(link)
        third = net.ping([net['h1'], h4], timeout=1)
        intfs = h4.intfNames()
        # Mininet's test_ptyleak: a host deleted, then one of the same name added, over
        # and over; its shell's pty is used and the descriptors come back, not leaked.
        h2 = net['h2']
        h2.cmd('cd /tmp')
        ptys = h2.slave, h2.master
        same = []
        for _ in range(3):
            net.delHost(h2)
            h2 = net.addHost('h2')
            same.append(h2.cmd('pwd').strip() != '/tmp' and (h2.slave, h2.master) == ptys)
        net.addLink(h2, net['s1'])
        h2.setIP('10.0.0.2/8')
        fourth = h2.cmd('ping -c1 -W2 ' + net['h1'].IP())  # h1's ARP entry for h2 is stale
        print('RESULT', json.dumps({'first': first, 'second': second, 'third': third,
                                    'ip': ip, 'intfs': intfs, 'same': same, 'fourth': fourth,
                                    'igmp': igmp}))
        net.stop()
    """)
    assert code == 0, out
    assert left == [], left
    assert "*** Results: 0% dropped (6/6 received)" in out
    assert "h1 -> h2 h3" in out
    r = result(out)
    assert r["first"] == 0 and r["second"] == 0 and r["third"] == 100, r
    assert r["ip"] == "10.0.0.4" and r["intfs"] == [], r
    assert r["same"] == [True] * 3 and " 0% packet loss" in r["fourth"], r
    assert r["igmp"] == ["0", "1"], r  # the switches' namespace reports no link-local group


def test_shell_keeps_state_streams_and_stops_on_interrupt(tmp_path):
    code, out, left = run_script(tmp_path, """
        import json, time
        from mininet.net import Mininet
        from mininet.topo import MinimalTopo

        net = Mininet(topo=MinimalTopo())
        net.start()
        h1 = net['h1']
        h1.cmd('cd /tmp; X=42')
        same = h1.cmd('echo $X $PWD').strip()
        h1.sendCmd('sleep 30; echo never')
        time.sleep(0.3)
        t = time.time()
        h1.sendInt()
        h1.waitOutput()
        stopped_s = time.time() - t
        bg = h1.cmd('sleep 60 &')
        pid = h1.lastPid
        alive = h1.cmd('kill -0 %d && echo alive' % pid).strip()
        pop = h1.popen('ip -br link').communicate()[0].decode()
        out, err, code = h1.pexec('sh', '-c', 'echo out; echo err >&2; exit 3')
        print('RESULT', json.dumps({'same': same, 'stopped_s': stopped_s, 'pid': pid,
                                    'alive': alive, 'popen': pop, 'pexec': [out, err, code]}))
        net.stop()
    """)
    assert code == 0, out
    assert left == [], left
    r = result(out)
    assert r["same"] == "42 /tmp", r
    assert r["stopped_s"] < 10, r
    assert r["pid"] > 0 and r["alive"] == "alive", r
    assert "h1-eth0" in r["popen"] and "s1-eth" not in r["popen"], r
    assert r["pexec"] == ["out\n", "err\n", 3], r


def test_a_failing_script_leaves_nothing(tmp_path):
    """An exception after start, with no net.stop(): the lab still goes, the script's
    status is Python's (1) and its traceback is shown."""
    code, out, left = run_script(tmp_path, """
        from mininet.net import Mininet
        from mininet.topo import LinearTopo
        from mininet.link import TCLink
        net = Mininet(topo=LinearTopo(2), link=TCLink)
        net.start()
        net['h1'].cmd('sleep 100 &')
        raise RuntimeError('boom')
    """)
    assert code == 1, out
    assert "RuntimeError: boom" in out
    assert left == [], left


def test_cpu_limited_hosts_stay_under_their_limit(tmp_path):
    """CPULimitedHost(cpu=.1) through the cgroup: busy loops measured at most ~the limit
    (a host without a limit would take a whole core: 50 %)."""
    code, out, left = run_script(tmp_path, """
        import json
        from functools import partial
        from mininet.net import Mininet
        from mininet.node import CPULimitedHost
        from mininet.topo import SingleSwitchTopo
        from mininet.log import setLogLevel
        setLogLevel('warning')
        net = Mininet(topo=SingleSwitchTopo(2), host=partial(CPULimitedHost, cpu=.1))
        net.start()
        got = net.runCpuLimitTest(cpu=.1, duration=3)
        print('RESULT', json.dumps(got))
        net.stop()
    """)
    assert code == 0, out
    assert left == [], left
    got = result(out)
    assert len(got) == 6, got
    assert max(got) < 16, got  # 10 % of the machine, and a stall's slack
    assert sum(got) / len(got) > 2, got  # the loops did run


def test_a_hangup_takes_the_network_down(tmp_path):
    """pexpect's close() (Mininet's tests end each example so) sends SIGHUP: the script's
    network is taken down, not left for netrig clean."""
    needs_root()
    from netrig.lab.state import labs

    script = tmp_path / "hang.py"
    script.write_text(textwrap.dedent("""
        import time
        from mininet.net import Mininet
        from mininet.topo import MinimalTopo
        net = Mininet(topo=MinimalTopo())
        net.start()
        print('UP', net.prefix, flush=True)
        time.sleep(60)
    """))
    prefix = f"mnh{os.getpid() % 100000}"
    p = subprocess.Popen([sys.executable, "-m", "netrig", "mininet", str(script)], text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env={**os.environ, "NETRIG_PREFIX": prefix})
    try:
        seen = []
        while not (seen and seen[-1].startswith("UP")):
            seen.append(p.stdout.readline())
            assert seen[-1], seen
        assert prefix in labs()
        p.send_signal(signal.SIGHUP)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 128 + signal.SIGHUP
    assert prefix not in labs()


def test_host_wide_settings_a_script_changes_are_put_back(tmp_path):
    """Mininet's linearbandwidth example sets the machine's congestion control with
    sysctl -w; netrig mininet puts it back when the script ends, and says so."""
    key = Path("/proc/sys/net/ipv4/tcp_congestion_control")
    before = key.read_text().strip()
    other = "reno" if before != "reno" else "cubic"
    code, out, left = run_script(tmp_path, f"""
        import subprocess
        subprocess.run(['sysctl', '-qw', 'net.ipv4.tcp_congestion_control={other}'], check=True)
    """)
    assert code == 0, out
    assert key.read_text().strip() == before
    assert f"net.ipv4.tcp_congestion_control on this machine ('{before}' -> '{other}'); put back" in out


def test_link_status_down_and_up_again(tmp_path):
    """configLinkStatus (the prompt's `link h1 s1 down|up`): down, nothing passes; up,
    the very next ping passes (the bridge port forwards again before it returns)."""
    code, out, left = run_script(tmp_path, """
        import json
        from mininet.net import Mininet
        from mininet.topo import SingleSwitchTopo
        net = Mininet(topo=SingleSwitchTopo(2))
        net.start()
        net.configLinkStatus('h1', 's1', 'down')
        down = net.ping([net['h1'], net['h2']], timeout=1)  # h2's echo waits 1 s, not ping's 10
        net.configLinkStatus('h1', 's1', 'up')
        up = net.pingPair()
        print('RESULT', json.dumps([down, up]))
        net.stop()
    """)
    assert code == 0, out
    assert left == [], left
    assert result(out) == [100, 0], out
