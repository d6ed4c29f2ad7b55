"""The cluster's certificates without a network: the CA and the scheduler's bundle made
once, private; a bundle issued, written only as a new file; a bundle read only when it is
private, whole, of its CA and in date, each refusal in a sentence; where a worker or head
finds its certificate; the addresses a cluster takes."""

from __future__ import annotations

import datetime as dt
import os
import stat
from pathlib import Path

import pytest
from netrig.exp.execute import cluster
from netrig.exp.execute import cluster_tls as tls


@pytest.fixture
def ca(tmp_path) -> Path:
    d = tmp_path / "ca"
    tls.check_dir(d, create=True)
    tls.make_ca(d)
    return d


def mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def test_the_first_scheduler_makes_the_ca_and_its_own_certificate_once(tmp_path, monkeypatch):
    monkeypatch.setenv(tls.DIR_ENV, str(tmp_path / "c"))
    d = tls.cluster_dir(create=True)
    b = tls.scheduler_bundle(d)
    assert mode(d) == 0o700 and {p.name: mode(p) for p in d.iterdir()} == \
        {"ca.key": 0o600, "ca.pem": 0o600, "scheduler.pem": 0o600}
    assert tls.scheduler_bundle(d).cert == b.cert  # kept, not made again
    assert b.not_after - dt.datetime.now(dt.timezone.utc) > dt.timedelta(days=tls.CERT_DAYS - 1)
    again = tls.read_bundle(d / "scheduler.pem")
    assert (again.ca, again.key) == (b.ca, b.key) and again.name.startswith("scheduler ")


def test_a_cluster_directory_that_others_may_enter_or_replace_is_refused(tmp_path):
    d = tmp_path / "open"
    d.mkdir(mode=0o755)
    d.chmod(0o755)
    with pytest.raises(tls.CertError, match=r"open to others \(mode 0755\).*chmod 700"):
        tls.check_dir(d)
    link = tmp_path / "link"
    link.symlink_to(d)
    with pytest.raises(tls.CertError, match="a symbolic link"):
        tls.check_dir(link)
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 4321, 4321)
    with pytest.raises(tls.CertError, match=r"belongs to uid 4321.*chooses whom the cluster trusts"):
        tls.check_dir(theirs)


def test_under_sudo_root_finds_the_invoking_users_ca(tmp_path, monkeypatch):
    monkeypatch.delenv(tls.DIR_ENV, raising=False)
    alice = tmp_path / "alice" / ".config" / "netrig" / "cluster"
    alice.mkdir(parents=True, mode=0o700)
    alice.chmod(0o700)
    tls.make_ca(alice)
    for p in [alice, *alice.iterdir()]:
        os.chown(p, 4321, 4321)
    monkeypatch.setattr(tls.os, "geteuid", lambda: 0)
    monkeypatch.setattr(tls, "_home", lambda uid: tmp_path / ("alice" if uid == 4321 else "root"))
    monkeypatch.setenv("SUDO_UID", "4321")
    assert tls.cluster_dir() == alice
    assert tls.find(None, "worker lab1").name == "worker lab1"  # issued in memory by alice's CA
    monkeypatch.delenv("SUDO_UID")
    with pytest.raises(tls.CertError, match="no cluster certificate: give --cert FILE"):
        tls.find(None, "worker lab1")


def test_a_bundle_is_written_only_as_a_new_private_file(ca, tmp_path):
    b = tls.issue(ca, "lab2")
    out = tmp_path / "lab2.pem"
    tls.write_bundle(b, out)
    assert mode(out) == 0o600 and tls.read_bundle(out).name == "lab2"
    with pytest.raises(tls.CertError, match="something is there already; netrig writes a key only into a new file"):
        tls.write_bundle(b, out)
    target = tmp_path / "target"
    target.write_text("mine")
    for link in (tmp_path / "to-file", tmp_path / "dangling"):
        link.symlink_to(target if link.name == "to-file" else tmp_path / "nowhere")
        with pytest.raises(tls.CertError, match=r"\(a symbolic link\)"):
            tls.write_bundle(b, link)
    assert target.read_text() == "mine" and not (tmp_path / "nowhere").exists()


def test_a_bundle_that_is_not_private_whole_or_of_its_ca_is_refused_in_a_sentence(ca, tmp_path):
    good = tls.issue(ca, "lab3")
    other = tmp_path / "other"
    tls.check_dir(other, create=True)
    tls.make_ca(other)
    stranger = tls.issue(other, "stranger")

    def bundle(name: str, text: str, m: int = 0o600) -> Path:
        p = tmp_path / name
        p.write_text(text)
        p.chmod(m)
        return p

    cases = {
        bundle("open.pem", good.pem().decode(), 0o644): r"others may read or change it \(mode 0644\).*chmod 600",
        bundle("no-key.pem", good.cert + good.ca): "not a netrig cluster certificate bundle",
        bundle("junk.pem", "hello"): "not a netrig cluster certificate bundle",
        bundle("wrong-ca.pem", stranger.cert + good.ca + stranger.key): "was not signed by the CA in it",
        bundle("wrong-key.pem", good.cert + good.ca + stranger.key): "its private key is not its certificate's",
        tmp_path / "missing.pem": "no such file",
    }
    for path, said in cases.items():
        with pytest.raises(tls.CertError, match=said):
            tls.read_bundle(path)
    link = tmp_path / "link.pem"
    link.symlink_to(bundle("good.pem", good.pem().decode()))
    with pytest.raises(tls.CertError, match="a symbolic link; netrig reads"):
        tls.read_bundle(link)
    theirs = bundle("theirs.pem", good.pem().decode())
    os.chown(theirs, 4321, 4321)
    with pytest.raises(tls.CertError, match="belongs to uid 4321, who could swap it"):
        tls.read_bundle(theirs)


def test_an_expired_bundle_says_so_and_what_to_do(ca, tmp_path, monkeypatch):
    p = tmp_path / "lab4.pem"
    tls.write_bundle(tls.issue(ca, "lab4"), p)
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=tls.CERT_DAYS + 1)
    monkeypatch.setattr(tls, "_now", lambda: later)
    with pytest.raises(tls.CertError, match=r"its certificate \(CN=lab4\) expired on .* issue a new bundle "
                                            r"with `netrig cluster cert NAME -o FILE`"):
        tls.read_bundle(p)


def test_a_worker_or_head_takes_cert_then_the_environment_then_the_ca_here(ca, tmp_path, monkeypatch):
    a, b = tmp_path / "a.pem", tmp_path / "b.pem"
    tls.write_bundle(tls.issue(ca, "from-flag"), a)
    tls.write_bundle(tls.issue(ca, "from-env"), b)
    monkeypatch.setenv(tls.CERT_ENV, str(b))
    monkeypatch.setenv(tls.DIR_ENV, str(ca))
    assert tls.find(str(a), "x").name == "from-flag"
    assert tls.find(None, "x").name == "from-env"
    monkeypatch.delenv(tls.CERT_ENV)
    made = tls.find(None, "head alice@box")
    assert made.name == "head alice@box" and made.ca == tls.read_bundle(a).ca
    assert sorted(p.name for p in ca.iterdir()) == ["ca.key", "ca.pem"]  # nothing written for it
    sec = made.security()
    assert sec.require_encryption and sec.tls_client_cert == made.cert


def test_the_cert_command_issues_a_bundle(ca, tmp_path, monkeypatch, capsys):
    from netrig import cli

    monkeypatch.setenv(tls.DIR_ENV, str(ca))
    out = tmp_path / "lab5.pem"
    assert cli.main(["cluster", "cert", "lab5", "-o", str(out)]) == 0
    assert "a certificate for lab5, valid until" in capsys.readouterr().out
    assert tls.read_bundle(out).name == "lab5"
    assert cli.main(["cluster", "cert", "lab5"]) == 1
    assert "netrig cluster cert NAME -o FILE" in capsys.readouterr().err
    monkeypatch.setenv(tls.DIR_ENV, str(tmp_path / "none"))
    assert cli.main(["cluster", "cert", "lab6", "-o", str(tmp_path / "lab6.pem")]) == 1
    assert "no cluster CA here" in capsys.readouterr().err


@pytest.mark.parametrize("address,parsed", [
    ("tls://10.0.0.1:9000", ("tls://10.0.0.1:9000", "10.0.0.1", 9000)),
    ("10.0.0.1:9000", ("tls://10.0.0.1:9000", "10.0.0.1", 9000)),
    ("tls://lab", ("tls://lab:8786", "lab", 8786)),
    ("tls://[fd00::1]:9000", ("tls://[fd00::1]:9000", "fd00::1", 9000)),
])
def test_a_cluster_address_is_tls(address, parsed):
    assert cluster.parse_address(address) == parsed


@pytest.mark.parametrize("address,said", [
    ("tcp://10.0.0.1:8786", "plain tcp:// is Dask without TLS, where whoever reaches a port runs commands "
                            "as root on every worker"),
    ("ucx://10.0.0.1:8786", "a netrig cluster speaks only tls://"),
    ("tls://10.0.0.1:http", "the port is not a number"),
    ("tls://:8786", "no host"),
])
def test_any_other_address_is_refused_with_why(address, said):
    with pytest.raises(cluster.ClusterError, match=said.replace("(", r"\(")):
        cluster.parse_address(address)


def test_a_netrig_worker_started_without_tls_refuses_to_serve(monkeypatch):
    """(Started by other means than `netrig cluster worker`, e.g. plain `dask worker
    --preload netrig.exp.execute.worker`.)"""
    from types import SimpleNamespace

    from netrig.exp.execute import worker as wk
    monkeypatch.setattr(wk.os, "geteuid", lambda: 0)
    monkeypatch.setattr(wk, "_clean", lambda name: pytest.fail("cleaned before refusing"))
    for address, encrypted in (("tcp://0.0.0.0:4000", False), ("tls://10.0.0.2:4000", False)):
        plain = SimpleNamespace(address=address, name="w", security=SimpleNamespace(require_encryption=encrypted))
        with pytest.raises(SystemExit, match="without TLS, where whoever reaches it runs commands as root"):
            wk.dask_setup(plain)
