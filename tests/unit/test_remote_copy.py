"""netrig-perf copied to a host is used only while its SHA-256 is this build's: a fake
`ssh` runs each remote command in a local shell with a home of its own, a fake `scp`
copies locally, and a fake netrig-perf stands for this build. A tampered copy is
neither run (not even for --version) nor used: it is copied again; a copy that arrives
altered never takes the binary's name, and the run fails saying so."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from netrig.exp.execute import remote
from netrig.remote.hosts import HostSpec
from netrig.remote.ssh import Host, HostError

BUILD = "#!/bin/sh\necho 'netrig-perf 0.1.0 (this build)'\n"
TAMPERED = '#!/bin/sh\ntouch "$HOME/ran-the-tampered-copy"\necho "netrig-perf 0.1.0"\n'


def fake(bin_dir: Path, name: str, script: str) -> None:
    p = bin_dir / name
    p.write_text("#!/bin/sh\n" + script)
    p.chmod(0o755)


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A Host whose commands run here, in $HOME = tmp/home, with this build's stand-in."""
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    bin_dir.mkdir()
    home.mkdir()
    build = tmp_path / "netrig-perf"
    build.write_text(BUILD)
    build.chmod(0o755)
    monkeypatch.setattr(remote, "binary", lambda name: build)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    # ssh HOST -- COMMAND: the last argument is the remote shell's line.
    fake(bin_dir, "ssh", f'for a; do last=$a; done\nHOME={home} PATH=/usr/bin:/bin exec sh -c "$last"\n')
    # scp [options] SRC HOST:DEST; FAKE_SCP_ALTER=1 alters the copy on its way.
    fake(bin_dir, "scp", 'for a; do src=$dst; dst=$a; done\ncp "$src" "${dst#*:}"\n'
                         '[ -z "$FAKE_SCP_ALTER" ] || echo "# altered" >> "${dst#*:}"\n')
    return Host("b", HostSpec(ssh="root@10.217.0.9")), home, build


def use(h: Host) -> dict:
    facts = remote._look(h)
    facts["perf"] = remote._perf(h, facts)
    return facts


def test_a_copy_is_checked_at_each_run_and_a_tampered_one_copied_again(host):
    h, home, build = host
    digest = hashlib.sha256(build.read_bytes()).hexdigest()
    first = use(h)
    copied = Path(first["perf"])
    assert copied.parent == home / ".cache" / "netrig" and copied.name == f"netrig-perf-{digest[:12]}"
    assert first["perf_copied"] == "yes" and first["perf_version"] == "netrig-perf 0.1.0 (this build)"
    # The next run finds it, checks it and uses it as it is.
    again = use(h)
    assert again["perf"] == str(copied) and again["perf_sha256"] == digest and "perf_recopied" not in again
    # Someone changes it on the host: the next run neither runs it nor uses it.
    copied.write_text(TAMPERED)
    third = use(h)
    assert not (home / "ran-the-tampered-copy").exists()
    assert third["perf"] == str(copied) and copied.read_text() == BUILD
    assert third["perf_recopied"].startswith(f"{copied}'s SHA-256 was ")
    assert third["perf_recopied"].endswith(f"not this build's {digest[:16]}: copied again")
    assert third["perf_version"] == "netrig-perf 0.1.0 (this build)"


def test_a_copy_altered_on_its_way_never_takes_the_name_and_the_run_says_so(host, monkeypatch):
    h, home, build = host
    monkeypatch.setenv("FAKE_SCP_ALTER", "1")
    with pytest.raises(HostError) as e:
        use(h)
    digest = hashlib.sha256(build.read_bytes()).hexdigest()
    assert str(e.value).startswith("host b (root@10.217.0.9:22): copy netrig-perf: the copy's SHA-256 there is ")
    assert f"not this build's {digest} — " in str(e.value), str(e.value)
    assert list((home / ".cache" / "netrig").iterdir()) == []  # neither the copy nor its temporary file
