"""Mounts of a device left in other mount namespaces, read from a /proc made here."""

from __future__ import annotations

import os
from pathlib import Path

from backupbench.devices.holders import ForeignMount, foreign_mounts, mounts_in_other_namespaces

LOOP0 = "7:0"


def _process(proc: Path, pid: str, namespace: str, mountinfo: str = "", command: str = "sleep") -> None:
    folder = proc / pid
    (folder / "ns").mkdir(parents=True)
    os.symlink(f"mnt:[{namespace}]", folder / "ns" / "mnt")
    (folder / "mountinfo").write_text(mountinfo)
    (folder / "comm").write_text(f"{command}\n")


def _mountinfo(number: str, point: str) -> str:
    return (f"22 27 0:21 / /proc rw,relatime - proc proc rw\n"
            f"310 27 {number} / {point} rw,relatime - ext4 /dev/loop0 rw\n")


def test_the_lowest_process_of_each_other_namespace_is_named(tmp_path):
    proc = tmp_path / "proc"
    _process(proc, "self", "1")
    _process(proc, "10", "1", _mountinfo(LOOP0, "/mnt/ours"))          # our namespace: our own mount
    _process(proc, "40", "2", _mountinfo(LOOP0, "/run/bb/x\\040y"), "ip")
    _process(proc, "41", "2", _mountinfo(LOOP0, "/run/bb/x\\040y"))    # the same namespace again
    _process(proc, "50", "3", _mountinfo("7:1", "/mnt/other"))         # another device
    found = mounts_in_other_namespaces({LOOP0: "/dev/loop0"}, proc)
    assert found == [ForeignMount(40, "ip", "/run/bb/x y", "/dev/loop0")]
    sentence = found[0].sentence()
    assert "process 40 (ip)" in sentence and "nsenter -t 40 -m umount '/run/bb/x y'" in sentence
    assert "backupbench cleanup" in sentence


def test_nothing_is_named_when_no_other_namespace_mounts_it(tmp_path):
    proc = tmp_path / "proc"
    _process(proc, "self", "1")
    _process(proc, "10", "1", _mountinfo(LOOP0, "/mnt/ours"))
    _process(proc, "60", "4", _mountinfo("8:0", "/"))
    assert mounts_in_other_namespaces({LOOP0: "/dev/loop0"}, proc) == []


def test_paths_that_are_no_block_device_are_not_looked_for(tmp_path):
    (tmp_path / "file").write_text("")
    assert foreign_mounts([str(tmp_path / "file"), str(tmp_path / "missing")]) == []
