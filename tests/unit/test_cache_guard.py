"""monitor/cache_guard.py over a recorded /sys and /proc: which disks a target's bytes land on
(through a loop device's backing file), when a phase is `cached` and why, and the caution
before a run whose test file fits in the RAM that can cache it."""

from __future__ import annotations

from pathlib import Path

import pytest

from backupbench import units
from backupbench.hostfiles import HostFiles
from backupbench.monitor import device_stack
from backupbench.monitor.cache_guard import (CacheCheck, LoopFacts, StorageFacts, disk_bytes, judge, moved_bytes,
                                             pre_run_caution, storage_facts)
from backupbench.monitor.stack import DeviceStack

from test_monitor_stack import host  # noqa: F401 - the recorded lab-guest /sys, a loop device on /

RAM = 24 * units.GiB


def _dio(root: Path, value: str) -> None:
    (root / "sys/devices/virtual/block/loop3/loop/dio").write_text(value + "\n")


def test_a_loop_members_bytes_land_on_the_disks_under_its_backing_file(host):  # noqa: F811
    _dio(Path(host.root), "0")
    facts = storage_facts(device_stack("/mnt/loop disk/dir", host), RAM, host)
    # /var/lib/images/disk 1.img is on / (ext4 on vda): vda's counters say what reached storage.
    assert facts.disks == ("vda",)
    assert facts.loops == (LoopFacts("loop3", "/var/lib/images/disk 1.img", False, ("vda",), "ext4"),)
    assert [loop.device for loop in facts.cached_loops] == ["loop3"]
    _dio(Path(host.root), "1")
    assert storage_facts(device_stack("/mnt/loop disk/dir", host), RAM, host).cached_loops == []


def test_other_stacks_are_their_member_disks(host):  # noqa: F811
    md = storage_facts(device_stack("/mnt/md", host), RAM, host)
    assert md.disks == device_stack("/mnt/md", host).members and md.loops == () and md.pool is None
    # An unknown dio (an old kernel without loop/dio) counts as cached: the page cache is loop's default.
    assert storage_facts(device_stack("/mnt/loop disk", host), RAM, host).cached_loops[0].direct_io is None


def test_disk_bytes_sums_read_and_written_sectors(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/diskstats").write_text(
        " 254 0 vda 10 0 2048 5 20 0 4096 9 0 10 14\n   7 3 loop3 1 0 8 0 0 0 0 0 0 0 0\n")
    host = HostFiles(tmp_path)
    assert disk_bytes(("vda",), host) == (2048 + 4096) * 512
    assert disk_bytes(("vda", "loop3", "gone"), host) == (2048 + 4096 + 8) * 512
    assert disk_bytes(("vda",), HostFiles(tmp_path / "nothing")) is None


def test_moved_bytes_from_each_workloads_figures():
    # fio: rates over the measured runtime (fio's bw_bytes = io_bytes / runtime).
    assert moved_bytes({"read_bw": 100.0, "write_bw": 50.0, "effective_bw": 75.0, "runtime": 10.0}) == 1500.0
    assert moved_bytes({"effective_bw": 2.0 * units.MiB, "runtime": 3.0, "files": 60}) == 6.0 * units.MiB
    assert moved_bytes({"bytes": 4096.0, "runtime": 1.0, "effective_bw": 1.0}) == 4096.0
    assert moved_bytes({"runtime": 1.0}) is None and moved_bytes({"read_bw": 5.0}) is None


LOOP = StorageFacts(("vda",), (LoopFacts("loop3", "/tmp/t/disk.img", False, ("vda",), "ext4"),), None, RAM)
DISKS = StorageFacts(("sdb", "sdc"), memory_bytes=RAM)


def test_a_phase_whose_disks_saw_under_half_is_cached_with_the_cause():
    # The case: 256 MiB "restored" at 5,343 MiB/s for 10 s; the disks saw 12 MiB.
    moved = 5343 * units.MiB * 10
    found = judge(moved, 12 * units.MiB, LOOP, buffered=False)
    assert found.cached and found.seen_fraction == pytest.approx(12 / 53430)
    assert found.reason == ("the disks (vda) saw under 1% of the 52.2 GiB moved: served by the host's page cache of "
                            "/tmp/t/disk.img, the file behind loop3 (no direct I/O)")
    assert judge(1000.0, 600, LOOP, False) == CacheCheck(0.6, None)
    assert judge(1000.0, 499, DISKS, buffered=True).reason == (
        "the disks (sdb, sdc) saw 50% of the 1000 B moved: served by the page cache (buffered I/O)")
    assert "page cache of the server" in judge(1000.0, 10, DISKS, buffered=None).reason
    pool = StorageFacts(("vdb",), pool="tank")
    assert judge(1000.0, 10, pool, False).reason.endswith("served by ZFS's ARC of pool tank")
    assert "dm-cache or bcache" in judge(1000.0, 10, DISKS, False).reason
    on_tmpfs = StorageFacts((), (LoopFacts("loop4", "/dev/shm/d.img", False, (), "tmpfs"),))
    assert judge(1000.0, 0, on_tmpfs, False).reason.endswith("memory: /dev/shm/d.img, the file behind loop4, is on tmpfs")


def test_nothing_is_judged_without_both_sides():
    assert judge(None, 10, DISKS, False) is None and judge(0.0, 10, DISKS, False) is None
    assert judge(1000.0, None, DISKS, False) is None
    assert judge(1000.0, 0, StorageFacts(()), False) is None     # no disk known (NFS, overlay)


def test_the_caution_before_a_run_names_the_fix():
    caution = pre_run_caution(256 * units.MiB, False, LOOP)
    assert caution == ("the test file (256 MiB) fits in the page cache that holds /tmp/t/disk.img, the file behind "
                       "loop3: reads may come from memory; use a --size of at least 48 GiB (twice the 24 GiB of RAM), "
                       "or attach it with losetup --direct-io=on")
    assert pre_run_caution(48 * units.GiB, False, LOOP) is None
    assert pre_run_caution(units.GiB, True, DISKS).startswith("the test file (1 GiB) fits in the page cache (buffered")
    assert pre_run_caution(units.GiB, False, DISKS) is None          # O_DIRECT onto real disks
    assert pre_run_caution(units.GiB, True, StorageFacts(("sdb",))) is None    # RAM unknown
    direct = StorageFacts(("vda",), (LoopFacts("loop3", "/tmp/t/disk.img", True, ("vda",), "ext4"),), None, RAM)
    assert pre_run_caution(units.GiB, False, direct) is None


def test_a_stack_without_disks_has_no_storage():
    facts = storage_facts(DeviceStack("/mnt/nfs", reason="nfs4"), RAM)
    assert facts == StorageFacts((), (), None, RAM)
