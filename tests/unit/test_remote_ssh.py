"""The SSH transport without a network: the ssh command lines built, and each step's
error from what a fake `ssh`/`scp` (a script on PATH) prints, in OpenSSH's own words
(as measured against a real sshd: research notes, issue 17)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from netrig.remote import ssh
from netrig.remote.hosts import HostSpec
from netrig.remote.ssh import Host, HostError, classify

B = HostSpec(ssh="root@10.217.0.9", port=2222, key="/keys/ck", connect_timeout="3s")


def test_every_command_is_batch_with_a_timeout_through_the_hosts_master():
    h = Host("b", B.model_copy(update={"options": {"StrictHostKeyChecking": "accept-new"}}))
    h._dir = "/tmp/netrig-ssh-x"  # as open() makes it
    argv = h.argv("uname -m")
    opts = [argv[i + 1] for i, x in enumerate(argv) if x == "-o"]
    assert argv[0] == "ssh" and argv[-3:] == ["root@10.217.0.9", "--", "uname -m"]
    assert {"BatchMode=yes", "ConnectTimeout=3", "ControlMaster=no", "ControlPath=/tmp/netrig-ssh-x/c",
            "IdentitiesOnly=yes", "StrictHostKeyChecking=accept-new"} <= set(opts)
    assert argv[argv.index("-p") + 1] == "2222" and argv[argv.index("-i") + 1] == "/keys/ck"
    master = h.argv(None, master=True)
    assert "ControlMaster=yes" in master and master[-2:] == ["-N", "root@10.217.0.9"]
    # no key: the agent's and ssh's own (no -i, no IdentitiesOnly); no port: ssh's config
    plain = Host("a", HostSpec(ssh="alice@wifi-a")).argv("true")
    assert "-i" not in plain and "-p" not in plain and "IdentitiesOnly=yes" not in plain
    assert "ConnectTimeout=10" in plain and plain[-3:] == ["alice@wifi-a", "--", "true"]


# (what ssh printed, the step, the start of the hint)
MESSAGES = [
    ("ssh: connect to host 10.217.0.9 port 2222: No route to host", "connect", "is b up, and is 10.217.0.9 its address?"),
    ("ssh: connect to host 10.217.0.9 port 2222: Connection timed out", "connect", "is b up"),
    ("ssh: connect to host 10.217.0.9 port 2222: Connection refused", "connect",
     "is sshd running on 10.217.0.9, on port 2222?"),
    ("ssh: Could not resolve hostname wifi-b: Name or service not known", "connect", "is 10.217.0.9 b's name"),
    ("root@10.217.0.9: Permission denied (publickey).", "authenticate", "is the key /keys/ck authorised for root"),
    ("No ED25519 host key is known for [10.217.0.9]:2222 and you have requested strict checking.\n"
     "Host key verification failed.", "authenticate", "ssh does not trust 10.217.0.9's host key"),
    ("Warning: Identity file /keys/ck not accessible: No such file or directory.\n"
     "root@10.217.0.9: Permission denied (publickey).", "authenticate", "is the key /keys/ck"),
]


@pytest.mark.parametrize("said,step,hint", MESSAGES)
def test_each_message_names_the_host_the_step_and_what_to_do(said, step, hint):
    e = classify("b", B, said + "\n")
    assert e.step == step
    assert str(e).startswith(f"host b (root@10.217.0.9:2222): {step}: ")
    assert f" — {hint}" in str(e), str(e)
    assert "\n" not in str(e)


def test_a_files_permission_is_not_authentication():
    e = classify("b", B, "scp: /root/.cache/netrig/x: Permission denied\n", "copy netrig-perf")
    assert e.step == "copy netrig-perf"


def fake(bin_dir: Path, name: str, script: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    p = bin_dir / name
    p.write_text("#!/bin/sh\n" + script)
    p.chmod(0o755)


@pytest.fixture
def path(tmp_path, monkeypatch):
    d = tmp_path / "bin"
    monkeypatch.setenv("PATH", f"{d}:{os.environ['PATH']}")
    return d


def test_connect_fails_with_sshs_message(path):
    fake(path, "ssh", "echo 'ssh: connect to host 10.217.0.9 port 2222: No route to host' >&2; exit 255\n")
    h = Host("b", B)
    with pytest.raises(HostError) as e:
        h.open()
    assert str(e.value) == ("host b (root@10.217.0.9:2222): connect: ssh: connect to host 10.217.0.9 port 2222: "
                            "No route to host — is b up, and is 10.217.0.9 its address?")
    assert h.control is None  # its private directory is gone


def test_authenticate_fails_with_sshs_message(path):
    fake(path, "ssh", "echo 'root@10.217.0.9: Permission denied (publickey).' >&2; exit 255\n")
    with pytest.raises(HostError) as e:
        Host("b", B).open()
    assert e.value.step == "authenticate" and "Permission denied (publickey)" in str(e.value)


def test_a_master_that_never_answers_is_given_up_after_the_connect_timeout(path, monkeypatch):
    fake(path, "ssh", "exec sleep 30\n")
    monkeypatch.setattr(ssh, "AUTH_SLACK_S", 0.5)
    h = Host("b", B.model_copy(update={"connect_timeout": "0.5s"}))
    t = time.monotonic()
    with pytest.raises(HostError) as e:
        h.open()
    assert time.monotonic() - t < 5  # 0.5 s + 0.5 s, and the master stopped
    assert e.value.step == "connect" and "no answer within 1 s" in str(e.value)


def test_a_working_master_then_a_command_and_a_copy_that_fail(path):
    # The master makes its control socket (as ssh does once authenticated) and waits.
    fake(path, "ssh", 'for a; do case "$a" in ControlPath=*) cp=${a#ControlPath=};; esac; done\n'
                      'case " $* " in *" -N "*) echo $$ > "$cp.pid"; : > "$cp"; exec sleep 30;; esac\n'
                      'case " $* " in *" -O exit "*) kill "$(cat "$cp.pid")"; exit 0;; esac\n'
                      'echo "Connection to 10.217.0.9 closed by remote host." >&2; exit 255\n')
    fake(path, "scp", "echo 'scp: /tmp/home/.cache/netrig/p.tmp1: No space left on device' >&2; exit 1\n")
    h = Host("b", B)
    h.open()
    try:
        assert h.control is not None and os.path.exists(h.control)
        with pytest.raises(HostError) as e:
            h.run("uname -m", 5, "look at the host")
        assert str(e.value).startswith("host b (root@10.217.0.9:2222): look at the host: Connection to "
                                       "10.217.0.9 closed by remote host. — b closed the connection")
        with pytest.raises(HostError) as e:
            h.copy(Path("/bin/sh"), "/tmp/home/.cache/netrig/p.tmp1", 5)
        assert str(e.value).startswith("host b (root@10.217.0.9:2222): copy netrig-perf: scp: ")
        assert "No space left on device — install netrig-perf on b" in str(e.value)
    finally:
        h.close()
    assert h.control is None


def test_a_host_built_without_the_scenarios_checks_still_refuses_a_local_command():
    spec = B.model_copy(update={"options": {"proxyCommand": "sh -c 'touch /tmp/owned'"}})
    with pytest.raises(HostError) as e:
        Host("b", spec).argv("true")
    assert str(e.value).startswith("host b (root@10.217.0.9:2222): connect: options: proxyCommand: refused — "
                                   "proxyCommand runs a command on this machine"), str(e.value)
