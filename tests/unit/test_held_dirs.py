"""Files children write (captures, logs) and trees shared with a daemon's user
(netrig.safefs's Held, Staging, shared_dir): a directory held open keeps receiving what
is created in it after its path is swapped for a link; a private directory's files are
renamed in over a planted link, never through it; a shared tree is root's with the
daemon's group, and a component another user owns is refused. The attacker is played
by uid 65534 (nobody); the tests that need chown skip without root."""

from __future__ import annotations

import os
import stat

import pytest
from netrig import safefs

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="plays the attacker with chown")


def test_a_held_directory_swapped_for_a_link_still_gets_what_is_created_in_it(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with safefs.Held(tmp_path / "out", "runs/r/capture") as held:
        (tmp_path / "out" / "runs").rename(tmp_path / "out" / "moved")
        (tmp_path / "out" / "runs").symlink_to(elsewhere)
        with held.open_new("a.log") as f:
            f.write(b"said\n")
        stage = safefs.Staging(held, "capture")
        with open(f"{stage.proc_path()}/x.pcapng", "wb") as child:  # as netrig-link opens it
            child.write(b"frames")
        stage.move_in(stage.names())
        stage.remove()
        assert held.read_tail("a.log") == "said\n"
    assert os.listdir(elsewhere) == []
    got = tmp_path / "out" / "moved" / "r" / "capture"
    assert sorted(os.listdir(got)) == ["a.log", "x.pcapng"]
    assert stat.S_IMODE((got / "x.pcapng").stat().st_mode) == 0o644


def test_a_staging_directory_is_private_and_its_files_replace_a_planted_link(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("root's\n")
    with safefs.Held(tmp_path / "out") as held:
        stage = safefs.Staging(held, "capture")
        st = os.stat(stage.path)
        assert st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700
        assert stage.name.startswith(".netrig-capture-") and len(stage.name) > len(".netrig-capture-") + 8
        (tmp_path / "out" / "cap.pcapng").symlink_to(secret)
        fd = os.open("cap.pcapng", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=stage.fd)
        os.write(fd, b"frames")
        os.close(fd)
        assert stage.names() == ["cap.pcapng"] and stage.size("cap.pcapng") == 6
        stage.move_in(["cap.pcapng"])
        stage.remove()
    assert secret.read_text() == "root's\n"
    assert not (tmp_path / "out" / "cap.pcapng").is_symlink()
    assert (tmp_path / "out" / "cap.pcapng").read_bytes() == b"frames"
    assert os.listdir(tmp_path / "out") == ["cap.pcapng"]


def test_read_tail_never_follows_a_link(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("root's\n")
    (tmp_path / "zebra.log").symlink_to(secret)
    assert safefs.read_tail(tmp_path / "zebra.log") == ""
    (tmp_path / "real.log").write_text("x" * 10 + "end\n")
    assert safefs.read_tail(tmp_path / "real.log", 4) == "end\n"


@needs_root
def test_a_shared_tree_is_roots_with_the_daemons_group_and_refuses_a_foreign_component(tmp_path):
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    share = safefs.Shared(gid=NOBODY, leaf=0o1770)
    d = safefs.shared_dir(run, "frr/lab/r1", share)
    assert stat.S_IMODE(run.stat().st_mode) == 0o711  # searchable, not listable
    for p, mode in ((run / "frr", 0o710), (run / "frr" / "lab", 0o710), (d, 0o1770)):
        st = p.stat()
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, NOBODY, mode), p
    safefs.write_shared(run, "frr/lab/r1/zebra.conf", "hostname r1\n", share)
    st = (d / "zebra.conf").stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, NOBODY, 0o640)
    theirs = run / "frr" / "other"
    theirs.mkdir()
    os.chown(theirs, NOBODY, NOBODY)
    with pytest.raises(safefs.UnsafePath, match="owned by .*uid 65534"):
        safefs.shared_dir(run, "frr/other/r1", share)
    (run / "frr" / "link").symlink_to(tmp_path)
    with pytest.raises(safefs.UnsafePath, match="a symbolic link"):
        safefs.shared_dir(run, "frr/link/r1", share)


def test_unreachable_by_names_the_first_directory_a_user_may_not_search(tmp_path):
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    me = os.geteuid()  # the owner of every directory on the way: its owner bits count
    (tmp_path / "a").chmod(0o600)
    assert safefs.unreachable_by(tmp_path / "a" / "b" / "c", me, {me}) == tmp_path / "a"
    (tmp_path / "a").chmod(0o700)
    assert safefs.unreachable_by(tmp_path / "a" / "b" / "c", me, {me}) is None
    (tmp_path / "a" / "b").chmod(0o070)  # the group's bits do not count for the owner
    assert safefs.unreachable_by(tmp_path / "a" / "b" / "c", me, {me}) == tmp_path / "a" / "b"
