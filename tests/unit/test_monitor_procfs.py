"""Pure parsers over recorded /proc text."""

from __future__ import annotations

from pathlib import Path

import pytest

from backupbench.hostfiles import HostFiles, find_mount, parse_mountinfo
from backupbench.monitor.procfs import (
    CpuTimes, parse_diskstats, parse_loadavg, parse_meminfo, parse_proc_stat, read_snapshot,
)

LAB = Path(__file__).parents[1] / "fixtures" / "lab-guest"

PROC_STAT = """\
cpu  10132153 290696 3084719 46828483 16683 0 25195 0 175628 0
cpu0 1393280 32966 572056 13343292 6130 0 17875 0 23933 0
intr 1462898 0 0
ctxt 16541474
btime 1700000000
"""

MEMINFO = """\
MemTotal:       16336880 kB
MemFree:         1217524 kB
MemAvailable:    9624948 kB
Buffers:          611704 kB
Cached:          7464788 kB
SwapCached:        12004 kB
SwapTotal:       2097148 kB
SwapFree:        1572860 kB
HugePages_Total:       0
"""


def test_diskstats_fixture_fields_land_in_the_right_place():
    disks = parse_diskstats((LAB / "diskstats-1.txt").read_text())
    assert len(disks) == 19
    vda = disks["vda"]
    # 254 0 vda 969 4790 60853 1278 278 10147 229520 2182 0 2136 3474 ...
    assert (vda.major, vda.minor) == (254, 0)
    assert (vda.rd_ios, vda.rd_merges, vda.rd_sectors, vda.rd_ticks) == (969, 4790, 60853, 1278)
    assert (vda.wr_ios, vda.wr_merges, vda.wr_sectors, vda.wr_ticks) == (278, 10147, 229520, 2182)
    assert (vda.in_flight, vda.io_ticks, vda.time_in_queue) == (0, 2136, 3474)
    assert disks["md0"].major == 9 and disks["dm-9"].rd_sectors == 2088


def test_diskstats_skips_short_and_broken_lines():
    text = "   8  1 sda1 35713 1122730 106304 850432\n 8 0 sda 1 2 3 4 5 6 7 8 0 9 10\n 8 2 sdb x 2 3 4 5 6 7 8 0 9 10\n"
    disks = parse_diskstats(text)
    assert list(disks) == ["sda"]
    assert disks["sda"].time_in_queue == 10


def test_proc_stat_reads_the_aggregate_line():
    cpu = parse_proc_stat(PROC_STAT)
    assert cpu == CpuTimes(10132153, 290696, 3084719, 46828483, 16683, 0, 25195, 0, 175628, 0)


def test_proc_stat_of_an_old_kernel_has_zeros_for_missing_columns():
    assert parse_proc_stat("cpu  1 2 3 4\n") == CpuTimes(1, 2, 3, 4)
    with pytest.raises(ValueError):
        parse_proc_stat("cpu0 1 2 3 4\n")


def test_meminfo_used_is_total_minus_available():
    mem = parse_meminfo(MEMINFO)
    assert mem.used_mib == pytest.approx((16336880 - 9624948) / 1024)
    assert mem.used_pct == pytest.approx((16336880 - 9624948) / 16336880 * 100)
    assert mem.swap_used_mib == pytest.approx((2097148 - 1572860) / 1024)


def test_meminfo_without_memavailable_falls_back_to_free_buffers_cached():
    text = "\n".join(row for row in MEMINFO.splitlines() if not row.startswith("MemAvailable"))
    mem = parse_meminfo(text)
    assert mem.available_kib == 1217524 + 611704 + 7464788


def test_loadavg():
    load = parse_loadavg("0.52 0.58 1.59 1/467 12345\n")
    assert (load.load1, load.load5, load.load15) == (0.52, 0.58, 1.59)
    with pytest.raises(ValueError):
        parse_loadavg("")


def test_mountinfo_with_escaped_space_and_optional_fields():
    text = (
        "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
        "35 22 7:3 / /mnt/back\\040up rw,relatime shared:7 master:2 - ext4 /dev/loop3 rw\n"
        "36 22 0:40 / /dev/shm rw - tmpfs tmpfs rw\n"
        "garbage line\n"
    )
    entries = parse_mountinfo(text)
    assert [e.mount_point for e in entries] == ["/", "/mnt/back up", "/dev/shm"]
    assert (entries[1].major, entries[1].minor, entries[1].fs_type, entries[1].source) == (7, 3, "ext4", "/dev/loop3")


def test_one_mountinfo_parser_keeps_unicode_and_escapes_apart(tmp_path):
    # The parser devices/ had decoded with unicode_escape: 'déjà' came back as mojibake.
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "mountinfo").write_text(
        "22 1 254:0 / / rw - ext4 /dev/vda rw\n"
        "41 22 7:3 / /mnt/déjà\\040vu rw,relatime - xfs /dev/loop3 ro\n"
        "42 22 7:4 / /mnt/back\\134slash rw - xfs /dev/loop4 rw\n", encoding="utf-8")
    mounts = HostFiles(tmp_path).mounts()
    assert [m.mount_point for m in mounts] == ["/", "/mnt/déjà vu", "/mnt/back\\slash"]
    assert find_mount("/mnt/déjà vu/repo", mounts).major_minor == "7:3"


def test_read_snapshot_names_unreadable_files_instead_of_raising(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "diskstats").write_text((LAB / "diskstats-1.txt").read_text())
    (tmp_path / "proc" / "stat").write_text(PROC_STAT)
    snap = read_snapshot(HostFiles(tmp_path), clock=lambda: 5.0, wallclock=lambda: 1.7e9)
    assert snap.t == 5.0 and snap.disks is not None and snap.cpu is not None
    assert snap.memory is None and snap.load is None
    assert any("/proc/meminfo" in e for e in snap.errors) and any("/proc/loadavg" in e for e in snap.errors)
