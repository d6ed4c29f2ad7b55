"""A lab's FRR mount namespace, its pure parts: which mounts of /proc/PID/mountinfo are
the lab's to unmount (and in what order), the tmpfs's options and bound, and which
host /var/tmp/frr netrig refuses to mount on. Mounting itself is tested for real in
tests/net/test_routing.py (test_down_leaves_nothing_of_frr)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest
from netrig.lab import frrmount

LAB = "/run/netrig/labs/dn1"
MOUNTINFO = f"""\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
43 27 254:0 {LAB}/frrns {LAB}/frrns rw,relatime - ext4 /dev/vda rw,discard
68 43 0:4 mnt:[4026533513] {LAB}/frrns/mnt rw - nsfs nsfs rw
70 27 254:0 {LAB}/frrns2 {LAB}/frrns2 rw,relatime - ext4 /dev/vda rw
71 27 0:4 net:[4026533600] /run/netns/dn1-r1 rw shared:5 - nsfs nsfs rw
72 27 254:0 /run/netrig/labs/dn12/frrns /run/netrig/labs/dn12/frrns rw - ext4 /dev/vda rw
"""


def test_the_labs_mounts_deepest_first_and_no_neighbours():
    # .../frrns2 and another lab (dn12, whose name starts as dn1's) are not the lab's.
    assert frrmount.mounts_under(MOUNTINFO, f"{LAB}/frrns") == [f"{LAB}/frrns/mnt", f"{LAB}/frrns"]
    assert frrmount.mounts_under(MOUNTINFO, f"{LAB}/frrns/") == [f"{LAB}/frrns/mnt", f"{LAB}/frrns"]
    assert frrmount.mounts_under(MOUNTINFO, "/run/netrig/labs/dn") == []
    assert frrmount.mounts_under("", f"{LAB}/frrns") == []


def test_a_stacked_mount_is_listed_once_a_mount_the_upper_first():
    text = MOUNTINFO + f"80 68 0:4 mnt:[4026533999] {LAB}/frrns/mnt rw - nsfs nsfs rw\n"
    assert frrmount.mounts_under(text, f"{LAB}/frrns") == [f"{LAB}/frrns/mnt"] * 2 + [f"{LAB}/frrns"]


def test_mountinfos_escapes_are_read_back():
    run = "/tmp/my run\\dir"  # written \040 and \134 by the kernel
    text = "90 27 254:0 /x /tmp/my\\040run\\134dir/labs/a/frrns rw - ext4 /dev/vda rw\n"
    assert frrmount.mounts_under(text, f"{run}/labs/a/frrns") == [f"{run}/labs/a/frrns"]
    assert frrmount._unescape("a\\011b\\012c\\") == "a\tb\nc\\"
    assert frrmount._unescape("\\0x1\\9999") == "\\0x1\\9999"  # not octal escapes: as they are


def test_a_cut_or_garbled_line_is_skipped():
    text = f"43 27 254:0\n\n68 43 0:4 x {LAB}/frrns/mnt rw - nsfs nsfs rw\n"
    assert frrmount.mounts_under(text, f"{LAB}/frrns") == [f"{LAB}/frrns/mnt"]


def test_the_tmpfs_is_frrs_0700_and_bounded():
    assert frrmount.tmpfs_options(105, 113, 64 << 20) == b"size=67108864,mode=0700,uid=105,gid=113"
    for bad in ((105, 113, 0), (-1, 113, 1), (105, -1, 1)):
        with pytest.raises(ValueError):
            frrmount.tmpfs_options(*bad)


def test_the_bound_grows_with_the_routers_past_64_mib():
    assert frrmount.size_for(3) == frrmount.size_for(256) == 64 << 20
    assert frrmount.size_for(1000) == 1000 * (256 << 10)
    # ~3x what they write (measured with FRR 8.4: an OSPF router 40 KiB, with BGP ~80)
    assert frrmount.size_for(500) > 500 * 3 * (80 << 10) > 64 << 20


def _st(mode: int, uid: int) -> os.stat_result:
    return os.stat_result((mode, 1, 1, 1, uid, 0, 0, 0, 0, 0))


def test_a_host_tmpdir_that_is_a_link_a_file_or_someone_elses_is_refused():
    assert frrmount._check_tmpdir(_st(stat.S_IFDIR | 0o700, 105), 105) is None
    assert frrmount._check_tmpdir(_st(stat.S_IFDIR | 0o755, 0), 105) is None
    assert frrmount._check_tmpdir(_st(stat.S_IFLNK | 0o777, 0), 105) == "a symbolic link"
    assert frrmount._check_tmpdir(_st(stat.S_IFREG | 0o600, 0), 105) == "not a directory"
    assert "uid 1000" in frrmount._check_tmpdir(_st(stat.S_IFDIR | 0o777, 1000), 105)


def test_the_namespace_is_bound_in_the_labs_own_directory():
    assert frrmount.path(Path(LAB)) == Path(f"{LAB}/frrns/mnt")


def test_release_of_a_lab_with_nothing_mounted_removes_its_directory(monkeypatch, tmp_path):
    lab = tmp_path / "labs" / "a"
    (lab / "frrns").mkdir(parents=True, mode=0o700)
    (lab / "frrns" / "mnt").write_bytes(b"")
    (lab / "frrns" / "x").symlink_to("/etc")  # removed, not followed
    monkeypatch.setattr(frrmount, "_mounted", lambda top: [])
    assert frrmount.release(lab) == []
    assert not (lab / "frrns").exists() and lab.is_dir() and Path("/etc").is_dir()
    assert frrmount.release(tmp_path / "none") == []  # a lab without one: nothing to do


def test_release_says_which_unmount_failed_and_removes_nothing(monkeypatch, tmp_path):
    lab = tmp_path / "labs" / "a"
    (lab / "frrns").mkdir(parents=True, mode=0o700)
    monkeypatch.setattr(frrmount, "_mounted", lambda top: [f"{top}/mnt"])
    calls: list[tuple[bytes, int]] = []
    monkeypatch.setattr(frrmount._libc, "umount2", lambda path, flags: (calls.append((path, flags)), -1)[1])
    monkeypatch.setattr(frrmount.ctypes, "get_errno", lambda: 1)
    assert frrmount.release(lab) == [f"umount {lab}/frrns/mnt: Operation not permitted"]
    assert calls == [(f"{lab}/frrns/mnt".encode(), frrmount.MNT_DETACH | frrmount.UMOUNT_NOFOLLOW)]
    assert (lab / "frrns").is_dir()


def test_a_refused_mount_says_what_netrig_needs(monkeypatch):
    monkeypatch.setattr(frrmount.ctypes, "get_errno", lambda: errno.EPERM)
    e = frrmount._fail("unshare")
    assert str(e) == ("FRR's mount namespace: unshare: Operation not permitted (netrig needs root with "
                      "CAP_SYS_ADMIN for it: in a container, one allowed to mount)")
    monkeypatch.setattr(frrmount.ctypes, "get_errno", lambda: errno.EINVAL)
    assert str(frrmount._fail("joining x")) == "FRR's mount namespace: joining x: Invalid argument"


def test_a_daemon_of_a_lab_without_its_namespace_is_refused(tmp_path):
    with pytest.raises(frrmount.FrrMountError, match=f"{tmp_path}/frrns/mnt: No such file.*'netrig down'"):
        frrmount.enter(tmp_path)
