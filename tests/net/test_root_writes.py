"""What root writes during a run goes where netrig meant, and the daemons that read
other people's words do not run as root (netrig issue 24).

- A run's `capture` and `web-NODE` directories swapped for links to a root-only
  directory after netrig made them (before dumpcap, netrig-link and nginx start): the
  captures (rings, so files are opened again mid-run) and nginx's logs land in the
  directories netrig made, and nothing in the root-only one.
- FRR's daemons run as frr (uid, gid, capabilities no wider than FRR's own), so a raw
  `frr:` line `log file` naming a root-only directory writes nothing there, and the
  routers still converge.
- nginx's worker runs as www-data (its master as root), and still serves the objects.
"""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

import pytest
from netlab import needs_root
from netrig.capture import lab as capture
from netrig.errors import NetrigError
from netrig.exp.execute import webserver
from netrig.exp.execute.runner import run_one
from netrig.exp.kinds import web
from netrig.exp.spec.scenario import loads_scenario
from netrig.lab import frr
from netrig.lab.network import Network
from netrig.topo.load import loads

pytestmark = pytest.mark.net

SWAPPED = """\
name: swapped
topology:
  nodes: {h1: host, h2: host}
  links:
    - {a: h1, b: h2, rate: 20Mbit, delay: 2ms}
duration: 3s
settle: 0s
flows:
  bulk: {kind: tcp, from: h1, to: h2, cc: cubic}
  page: {kind: web, from: h1, to: h2, size: 10KB, interval: 500ms}
monitors:
  - {kind: capture, link: h1-h2, size: 300KB, files: 3, snaplen: 1600}
  - {kind: capture, node: h2, size: 300KB, files: 3, snaplen: 1600}
"""

ROUTED = """
name: frrlog
routing: {ospf: {hello: 1s, dead: 4s}}
nodes:
  h1: host
  h2: host
  r1: {kind: router, ospf: true, frr: {zebra: "log file SECRET/zebra-as-root", ospfd: "log file SECRET/ospfd"}}
  r2: {kind: router, ospf: true}
links: [[h1, r1], [r1, r2], [r2, h2]]
"""

# What FRR's own packaging lets its daemons keep (capability numbers): NET_BIND_SERVICE,
# NET_ADMIN, NET_RAW, SYS_ADMIN. Nothing that bypasses file permissions (DAC_OVERRIDE 1,
# DAC_READ_SEARCH 2, FOWNER 3) or changes identity (SETUID 7).
FRR_CAPS = (1 << 10) | (1 << 12) | (1 << 13) | (1 << 21)


def status(pid: int) -> dict[str, list[str]]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.split() for k, _, v in (x.partition(":") for x in lines)}


def root_only(tmp_path: Path) -> Path:
    d = tmp_path / "root-only"
    d.mkdir(mode=0o700)
    return d


def test_swapping_a_runs_directories_for_links_mid_run_writes_nothing_through_them(tmp_path, monkeypatch):
    needs_root()
    secret = root_only(tmp_path)
    out = tmp_path / "results"
    rdir = out / "runs" / "r"

    def swap(d: Path) -> None:
        """What the directory's owner could do once netrig made it: put a link in its place."""
        if not d.is_symlink():
            d.rename(d.with_name(d.name + ".moved"))
            d.symlink_to(secret)

    real_capture, real_web = capture.Capture.start, webserver.WebServer.start

    def capture_start(self, *args, **kw):
        swap(rdir / "capture")
        return real_capture(self, *args, **kw)

    def web_start(self, *args, **kw):
        swap(rdir / "web-h2")
        return real_web(self, *args, **kw)

    monkeypatch.setattr(capture.Capture, "start", capture_start)
    monkeypatch.setattr(webserver.WebServer, "start", web_start)
    scen = loads_scenario(SWAPPED, str(tmp_path / "s.yaml"))
    try:
        run_one(scen.points[0], 0, 1, out, "r")
    except NetrigError as e:  # a later write refused to go through the link: fine
        print(f"the run: {e}")
    assert (rdir / "capture").is_symlink() and (rdir / "web-h2").is_symlink()  # the swaps happened
    assert sorted(os.listdir(secret)) == []
    caps = sorted(os.listdir(rdir / "capture.moved"))
    # both rings (netrig-link's of the link, dumpcap's of h2's interface) went round
    assert any(n.startswith("0-h1-h2.") and n != "0-h1-h2.pcapng" for n in caps), caps
    assert sum(n.startswith("1-h2-eth0_") for n in caps) >= 2, caps
    assert not any(n.startswith(".netrig-") for n in caps), caps  # the private directories are gone
    logs = rdir / "web-h2.moved"
    assert sorted(os.listdir(logs)) == ["access.log", "error.log", "nginx.out"]
    assert " 200 10000 " in (logs / "access.log").read_text()


def test_frr_runs_as_frr_so_a_raw_log_file_line_writes_nothing_as_root(tmp_path):
    needs_root()
    if not (frr.frr_dir() / "zebra").exists():
        pytest.skip("FRR is not installed")
    secret = root_only(tmp_path)
    topo = loads(ROUTED.replace("SECRET", str(secret)), "<frrlog>")
    user = pwd.getpwnam("frr")
    with Network(topo, prefix=f"fw{os.getpid() % 100000}") as net:
        net.converge(30)
        assert net.ping("h1", "h2", count=3).received == 3
        st = net.state
        assert st is not None and sorted(st.frr) == ["r1", "r2"]
        for router, daemons in st.frr.items():
            for daemon, (pid, _) in daemons.items():
                s = status(pid)
                who = f"{daemon} of {router}"
                assert s["Uid"] == [str(user.pw_uid)] * 4 and s["Gid"] == [str(user.pw_gid)] * 4, (who, s)
                assert int(s["CapPrm"][0], 16) & ~FRR_CAPS == 0, (who, s["CapPrm"])
        shown = net["r1"].run(["vtysh", *frr.vtysh_args(frr.router_dir(st.dir, "r1")), "-c",
                               "show running-config"])
        assert f"log file {secret}/zebra-as-root" in shown.stdout  # the line was read ...
    assert os.listdir(secret) == []  # ... and could not write as root


def test_nginx_worker_runs_as_www_data_and_serves_the_objects(tmp_path):
    needs_root()
    if webserver.webtools.nginx_path() is None:
        pytest.skip("nginx is not installed")
    topo = loads("name: w\nnodes: {h1: host, h2: host}\nlinks: [[h1, h2]]\n", "<w>")
    www = pwd.getpwnam("www-data")
    with Network(topo, prefix=f"ww{os.getpid() % 100000}") as net:
        assert net.state is not None
        servers = webserver.WebServers(net.state.dir, tmp_path, "runs/r")
        try:
            w = servers.start("h2", net["h2"].ns, {5000}, False)
            url = f"http://{net.addr('h2')}:{web.PORT_HTTP1}/{web.object_name(5000)}"
            got = net["h1"].run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", url])
            assert got.stdout == "200 5000", got
            assert w.proc is not None and status(w.proc.pid)["Uid"][1] == "0"  # the master
            workers = [p for p in w.pids() if p != w.proc.pid]
            assert workers and all(status(p)["Uid"] == [str(www.pw_uid)] * 4 for p in workers)
        finally:
            servers.stop()
    log = (tmp_path / "runs" / "r" / "web-h2" / "access.log").read_text()
    assert '"GET /obj-5000.bin HTTP/1.1" 200 5000' in log
    assert json.dumps(sorted(os.listdir(tmp_path / "runs" / "r" / "web-h2"))) == \
        '["access.log", "error.log", "nginx.out"]'
