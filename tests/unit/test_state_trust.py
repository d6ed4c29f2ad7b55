"""State you can trust, without building a lab: a lab's topology is used again only if
its file's bytes are the ones it was built from; `status` exits non-zero and names what
of a lab is dead; non-root use of a root command is one sentence; a closed stdout pipe
ends netrig quietly."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from netrig.lab import state
from netrig.lab.network import Network
from netrig.lab.state import LabError, LabState

ROOT = Path(__file__).resolve().parents[2]

TOPO = """\
name: trust
nodes: {h1: host, h2: host, r1: router}
links:
  - {a: h1, b: r1, rate: 30Mbit, delay: 1ms}
  - {a: h2, b: r1, rate: 20Mbit}
"""
DECOY = """\
name: decoy
nodes: {h1: host, r1: router, h9: host}
links:
  - {a: h9, b: r1}
  - {a: h1, b: r1, rate: 1Mbit}
"""


@pytest.fixture
def labs_dir(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "run" / "labs"
    monkeypatch.setattr(state, "LABS_DIR", d)
    return d


def lab_from(path: Path, prefix: str = "trust") -> LabState:
    """The state `netrig up PATH` records (without building anything)."""
    from netrig.lab.state import read_topology

    absolute, text, digest = read_topology(path)
    st = LabState(prefix, absolute, topology_sha256=digest, topology_text=text, status="up")
    st.save()
    return st


def test_a_lab_records_its_topology_absolute_and_hashed(tmp_path, labs_dir, monkeypatch):
    (tmp_path / "lab.yaml").write_text(TOPO)
    monkeypatch.chdir(tmp_path)
    from netrig.lab.state import read_topology

    absolute, text, digest = read_topology("lab.yaml")
    assert absolute == str(tmp_path / "lab.yaml")
    assert text == TOPO
    assert digest == hashlib.sha256(TOPO.encode()).hexdigest()


def test_attach_reads_the_labs_own_file_from_any_directory(tmp_path, labs_dir, monkeypatch):
    (tmp_path / "lab.yaml").write_text(TOPO)
    lab_from(tmp_path / "lab.yaml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "lab.yaml").write_text(DECOY)  # same name, another topology
    monkeypatch.chdir(elsewhere)
    net = Network.attach("trust")
    assert net.topo.name == "trust"
    assert net.topo.link_named("h1", "r1").direction(0).rate_bps == 30e6


@pytest.mark.parametrize("change", ["edited", "replaced", "removed"])
def test_attach_refuses_a_topology_file_that_changed_since_the_lab_was_built(tmp_path, labs_dir, change):
    f = tmp_path / "lab.yaml"
    f.write_text(TOPO)
    lab_from(f)
    if change == "edited":
        f.write_text(TOPO.replace("rate: 20Mbit", "rate: 2Mbit"))
    elif change == "replaced":
        f.unlink()
        shutil.copy(ROOT / "examples" / "lan.yaml", f)
    else:
        f.unlink()
    with pytest.raises(LabError) as e:
        Network.attach("trust")
    msg = str(e.value)
    assert str(f) in msg, msg
    assert "netrig down --prefix trust" in msg and f"netrig up {f} --prefix trust" in msg, msg
    if change == "edited":
        assert "line 5 was '- {a: h2, b: r1, rate: 20Mbit}', is now '- {a: h2, b: r1, rate: 2Mbit}'" in msg, msg
        assert "changed since" in msg
    elif change == "replaced":
        assert "changed since" in msg and "line 1 was 'name: trust'" in msg, msg
    else:
        assert "cannot be read now" in msg and "does not exist" in msg, msg


def test_attach_refuses_a_lab_that_recorded_no_hash(tmp_path, labs_dir):
    (tmp_path / "lab.yaml").write_text(TOPO)
    LabState("trust", str(tmp_path / "lab.yaml"), status="up").save()
    with pytest.raises(LabError, match="records no hash of its topology"):
        Network.attach("trust")


def netrig(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netrig", *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **(env or {})}, **kw)


def dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_status_exits_nonzero_and_names_each_dead_part(tmp_path):
    needs_root_for_netns()
    run = tmp_path / "run"
    labs = run / "labs"
    labs.mkdir(parents=True, mode=0o700)
    gone_ns = f"sttgone{os.getpid() % 100000}-h1"
    emu, owner = dead_pid(), dead_pid()
    doc = {"prefix": "trust", "topology": "<python>", "namespaces": [gone_ns],
           "node_ns": {"h1": gone_ns}, "pids": {"netrig-link": emu}, "status": "up",
           "owner_pid": owner, "backend": "userspace", "control": str(labs / "trust" / "link.sock"),
           "created": 0.0, "plan": {"name": "t", "nodes": {}, "links": []}, "schema": 1}
    (labs / "trust").mkdir(mode=0o700)
    (labs / "trust" / "state.json").write_text(json.dumps(doc))
    r = netrig("status", "--prefix", "trust", env={"NETRIG_RUN_DIR": str(run)})
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert f"DEAD: netrig-link (pid {emu}) is NOT RUNNING" in r.stdout, r.stdout
    assert f"DEAD: namespace {gone_ns} is gone" in r.stdout, r.stdout
    assert f"DEAD: the netrig running it (pid {owner}) is gone" in r.stdout, r.stdout
    j = netrig("status", "--prefix", "trust", "--json", env={"NETRIG_RUN_DIR": str(run)})
    assert j.returncode == 1 and len(json.loads(j.stdout)["dead"]) == 3, (j.returncode, j.stdout)


def needs_root_for_netns() -> None:
    if os.geteuid() != 0:
        pytest.skip("runs the CLI as root")


def as_nobody(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """The CLI as uid/gid 65534, keeping only the right to read and search directories
    (this venv's interpreter may live under a root-only home)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run as another user")
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            "--inh-caps=-all,+dac_read_search", "--ambient-caps=+dac_read_search",
            sys.executable, "-m", "netrig", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=cwd,
                          env={**os.environ, **env})


@pytest.mark.parametrize("cmd,why", [
    (["up", "lab.yaml"], "it creates network namespaces"),
    (["down", "--prefix", "trust"], "it deletes the lab's network namespaces"),
    (["link", "set", "--prefix", "trust", "h1", "r1", "rate=1Mbit"], "it changes a running lab"),
    (["run", "s.yaml"], "it creates network namespaces"),
    (["status", "--prefix", "trust"], "a lab's state is root's alone"),
])
def test_a_root_command_run_by_another_user_says_so_in_one_sentence(tmp_path, cmd, why):
    (tmp_path / "lab.yaml").write_text(TOPO)
    (tmp_path / "s.yaml").write_text("name: s\ntopology: lab.yaml\nflows: {p: {kind: ping, from: h1, to: h2}}\n")
    run = tmp_path / "run"
    (run / "labs" / "trust").mkdir(parents=True)
    (run / "labs" / "trust" / "state.json").write_text(json.dumps({
        "prefix": "trust", "topology": "<python>", "pids": {"netrig-link": dead_pid()},
        "status": "up", "plan": {"name": "t", "nodes": {}, "links": []}, "schema": 1}))
    os.chmod(tmp_path, 0o755)
    r = as_nobody(*cmd, cwd=tmp_path, env={"NETRIG_RUN_DIR": str(run)})
    name = "link set" if cmd[0] == "link" else cmd[0]
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.startswith(f"netrig {name} needs root ({why}"), r.stderr
    assert r.stderr.rstrip().endswith("; run it with sudo") and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("cmd", [["--help"], ["status", "--prefix", "trust"]])
def test_a_closed_stdout_pipe_ends_netrig_quietly(tmp_path, cmd):
    needs_root_for_netns()
    run = tmp_path / "run"
    (run / "labs" / "trust").mkdir(parents=True, mode=0o700)
    plan = {"name": "t", "nodes": {f"h{i}": {"kind": "host", "ns": "-", "ifaces": []} for i in range(400)},
            "links": []}
    (run / "labs" / "trust" / "state.json").write_text(json.dumps({
        "prefix": "trust", "topology": "<python>", "status": "up", "plan": plan, "schema": 1}))
    p = subprocess.Popen([sys.executable, "-m", "netrig", *cmd], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env={**os.environ, "NETRIG_RUN_DIR": str(run)})
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()  # the reader is gone before netrig writes (`netrig ... | head -0`)
    err = p.stderr.read().decode()
    code = p.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert err == "", err
    assert code in (0, 141), (code, err)
