"""Counters -> rates: two recorded /proc/diskstats snapshots of the lab guest (before and
after a 50 MiB direct write to /mnt/lin on dm-0), checked against figures worked out here
by hand from the raw fields, the way iostat -x -m defines them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from backupbench.monitor.procfs import CpuTimes, DiskCounters, Snapshot, parse_diskstats
from backupbench.monitor.rates import compute_sample, counter_delta, cpu_percent, disk_rates

LAB = Path(__file__).parents[1] / "fixtures" / "lab-guest"
INTERVAL = 4.0   # the fixture does not say how far apart it was taken; any interval will do


@pytest.fixture
def before():
    return parse_diskstats((LAB / "diskstats-1.txt").read_text())


@pytest.fixture
def after():
    return parse_diskstats((LAB / "diskstats-2.txt").read_text())


def test_dm0_rates_equal_hand_computed_figures(before, after):
    # dm-0 before: 172 0 4421 16 | 5193 0 176987 232532 | 0 2240 232548
    # dm-0 after:  172 0 4421 16 | 17993 0 279387 801236 | 0 5008 801252
    r = disk_rates(before["dm-0"], after["dm-0"], INTERVAL)
    assert r.r_s == 0 and r.rMB_s == 0 and r.r_await == 0
    assert r.w_s == pytest.approx((17993 - 5193) / 4.0)                          # 3200 writes/s
    assert r.wMB_s == pytest.approx((279387 - 176987) * 512 / 1048576 / 4.0)     # 12.5 MiB/s
    assert r.wMB_s * INTERVAL == pytest.approx(50.0)                              # the 50 MiB written
    assert r.w_await == pytest.approx((801236 - 232532) / (17993 - 5193))        # 44.43 ms
    assert r.aqu_sz == pytest.approx((801252 - 232548) / 4000.0)                 # 142.18
    assert r.util == pytest.approx((5008 - 2240) / 4000.0 * 100)                 # 69.2 %
    # a 4 KiB page per write, nothing merged: iostat's wareq-sz is sectors / 2 / writes
    assert r.wareq_sz == pytest.approx((279387 - 176987) / 2 / (17993 - 5193)) == pytest.approx(4.0)
    assert r.rareq_sz == 0 and r.rrqm_s == 0 and r.wrqm_s == 0


def test_vda_rates_equal_hand_computed_figures(before, after):
    # vda before: 969 4790 60853 1278 | 278 10147 229520 2182 | 0 2136 3474
    # vda after:  1247 17312 163253 3627 | 697 35478 435120 4811 | 0 4616 8478
    r = disk_rates(before["vda"], after["vda"], INTERVAL)
    assert r.r_s == pytest.approx(278 / 4.0)
    assert r.w_s == pytest.approx(419 / 4.0)
    assert r.rMB_s == pytest.approx(102400 / 2048 / 4.0)     # iostat -m: sectors / 2048
    assert r.wMB_s == pytest.approx(205600 / 2048 / 4.0)
    assert r.r_await == pytest.approx(2349 / 278)
    assert r.w_await == pytest.approx(2629 / 419)
    assert r.aqu_sz == pytest.approx(5004 / 4000.0)
    assert r.util == pytest.approx(2480 / 4000.0 * 100)
    # the snapshot's 4 KiB copy-on-write I/O reaches vda merged into large requests
    assert r.rrqm_s == pytest.approx((17312 - 4790) / 4.0)                 # 3130.5 merges/s
    assert r.wrqm_s == pytest.approx((35478 - 10147) / 4.0)                # 6332.75 merges/s
    assert r.rareq_sz == pytest.approx(102400 / 2 / 278)                   # 184.17 KiB per read
    assert r.wareq_sz == pytest.approx(205600 / 2 / 419)                   # 245.35 KiB per write


def test_idle_devices_show_zero_everywhere(before, after):
    for name in ("vdb", "md0", "dm-9"):
        r = disk_rates(before[name], after[name], INTERVAL)
        assert dataclasses.astuple(r) == (0.0,) * len(dataclasses.fields(r)) == (0.0,) * 12


LOOP = Path(__file__).parents[1] / "fixtures" / "diskstats-loop"


def test_a_512k_write_cut_at_64k_is_seen_as_eight_64k_requests():
    """Recorded: 16 writes and 8 reads of 512 KiB on a loop device whose max_sectors_kb is 64."""
    before = parse_diskstats((LOOP / "before.txt").read_text())["loop0"]
    after = parse_diskstats((LOOP / "after-split.txt").read_text())["loop0"]
    # loop0 before: 1582375 16187 1661604813 277319 | 412873 65977 431972790 433407
    # loop0 after:  1582439 16187 1661613005 277327 | 413001 65977 431989174 433426
    r = disk_rates(before, after, 2.0)
    assert r.w_s == pytest.approx((413001 - 412873) / 2.0) == 64          # 128 requests = 16 x 8
    assert r.r_s == pytest.approx((1582439 - 1582375) / 2.0) == 32        # 64 requests = 8 x 8
    assert r.wareq_sz == pytest.approx((431989174 - 431972790) / 2 / 128) == 64
    assert r.rareq_sz == pytest.approx((1661613005 - 1661604813) / 2 / 64) == 64
    assert r.wrqm_s == 0 and r.rrqm_s == 0


def test_small_writes_merged_into_64k_requests_show_as_merges():
    """Recorded: 1024 direct writes of 4 KiB submitted 32 at a time on the same loop device."""
    before = parse_diskstats((LOOP / "after-split.txt").read_text())["loop0"]
    after = parse_diskstats((LOOP / "after-merge.txt").read_text())["loop0"]
    # loop0 writes before: 413001 65977 431989174; after: 413065 66937 431997366
    r = disk_rates(before, after, 4.0)
    assert r.w_s == pytest.approx((413065 - 413001) / 4.0) == 16                   # 64 requests
    assert r.wrqm_s == pytest.approx((66937 - 65977) / 4.0) == 240                 # 960 merges
    assert r.wareq_sz == pytest.approx((431997366 - 431989174) / 2 / 64) == 64     # 16 pages each
    # every 4 KiB write either became a request or was merged into one
    assert (r.w_s + r.wrqm_s) * 4.0 == 1024
    assert r.r_s == 0 and r.rareq_sz == 0 and r.rrqm_s == 0


def test_merge_counters_wrap_and_reset_like_the_others(before):
    prev = dataclasses.replace(before["vda"], wr_merges=2**32 - 10)
    cur = dataclasses.replace(prev, wr_merges=30)
    assert disk_rates(prev, cur, 1.0).wrqm_s == 40
    assert disk_rates(prev, dataclasses.replace(prev, rd_merges=0), 1.0) is None   # re-created: from 0 again


def _snap(t, disks, cpu=None):
    return Snapshot(t=t, wall=1.7e9 + t, disks=disks, cpu=cpu, memory=None, load=None)


def test_compute_sample_covers_named_devices_only(before, after):
    s = compute_sample(_snap(10.0, before), _snap(14.0, after), ["dm-0", "vda"], origin_t=9.0)
    assert set(s.disks) == {"dm-0", "vda"}
    assert s.interval_s == 4.0 and s.elapsed_s == 5.0
    assert s.disks["dm-0"].wMB_s == pytest.approx(12.5)


def test_a_device_that_vanished_is_skipped_without_error(before, after):
    del after["vdb"]
    s = compute_sample(_snap(0.0, before), _snap(4.0, after), ["vda", "vdb"], origin_t=0.0)
    assert set(s.disks) == {"vda"} and s.reset == ()


def test_a_device_that_appeared_has_no_rates_until_its_second_reading(before, after):
    after["loop9"] = DiskCounters(7, 9, "loop9", *([5] * 11))
    s = compute_sample(_snap(0.0, before), _snap(4.0, after), ["vda", "loop9"], origin_t=0.0)
    assert set(s.disks) == {"vda"}


def test_32bit_wrap_of_tick_counters_is_unwrapped(before):
    prev = dataclasses.replace(before["vda"], wr_ios=1000, wr_ticks=2**32 - 300, io_ticks=2**32 - 100,
                               time_in_queue=2**32 - 1000)
    cur = dataclasses.replace(prev, wr_ios=1100, wr_ticks=200, io_ticks=400, time_in_queue=1500)
    r = disk_rates(prev, cur, 1.0)
    assert r.w_s == 100
    assert r.w_await == pytest.approx(500 / 100)          # (200 + 2**32 - (2**32 - 300)) / 100
    assert r.util == pytest.approx(500 / 1000 * 100)
    assert r.aqu_sz == pytest.approx(2500 / 1000)


def test_32bit_wrap_of_sector_counter_on_a_32bit_kernel(before):
    prev = dataclasses.replace(before["vda"], wr_sectors=2**32 - 2048)
    cur = dataclasses.replace(prev, wr_sectors=2048, wr_ios=prev.wr_ios + 4)
    assert disk_rates(prev, cur, 1.0).wMB_s == pytest.approx(2.0)     # 4096 sectors = 2 MiB


def test_a_counter_that_went_down_implausibly_is_a_reset_and_the_interval_is_dropped(before, after):
    # loop re-attached / dm re-created under the same name: counters start again from 0
    after["vda"] = dataclasses.replace(after["vda"], rd_ios=3, rd_sectors=24, rd_ticks=1, wr_ios=0)
    s = compute_sample(_snap(0.0, before), _snap(4.0, after), ["vda", "dm-0"], origin_t=0.0)
    assert "vda" not in s.disks and s.reset == ("vda",)
    assert "dm-0" in s.disks


def test_same_name_new_device_number_is_a_reset(before, after):
    after["dm-0"] = dataclasses.replace(after["dm-0"], minor=42)
    assert disk_rates(before["dm-0"], after["dm-0"], INTERVAL) is None


@pytest.mark.parametrize("prev,cur,expected", [
    (10, 15, 5), (2**32 - 1, 4, 5), (2**40, 2**40 + 7, 7),
    (5000, 10, None),            # wrap would mean ~4.3e9 events: a reset
    (2**33, 5, None),            # did not fit in 32 bits, so it cannot have wrapped there
])
def test_counter_delta(prev, cur, expected):
    assert counter_delta(prev, cur) == expected


def test_util_is_capped_at_100(before):
    prev = before["vda"]
    cur = dataclasses.replace(prev, io_ticks=prev.io_ticks + 1010)   # jiffy rounding: 1010 ms in 1 s
    assert disk_rates(prev, cur, 1.0).util == 100.0


def test_cpu_percent_from_two_proc_stat_readings():
    prev = CpuTimes(user=1000, nice=50, system=300, idle=5000, iowait=100, irq=10, softirq=20, steal=0, guest=30)
    cur = CpuTimes(user=1060, nice=60, system=320, idle=5080, iowait=120, irq=12, softirq=28, steal=10, guest=40)
    c = cpu_percent(prev, cur)
    total = (60 + 10) + (20 + 2 + 8) + 20 + 10 + 80     # guest is inside user already: not added again
    assert c.user == pytest.approx(70 / total * 100)
    assert c.system == pytest.approx(30 / total * 100)
    assert c.iowait == pytest.approx(20 / total * 100)
    assert c.steal == pytest.approx(10 / total * 100)
    assert c.idle == pytest.approx(80 / total * 100)
    assert c.user + c.system + c.iowait + c.steal + c.idle == pytest.approx(100)


def test_iowait_going_backwards_counts_as_zero():
    prev = CpuTimes(user=100, idle=1000, iowait=50)
    cur = CpuTimes(user=150, idle=1050, iowait=49)
    c = cpu_percent(prev, cur)
    assert c.iowait == 0 and c.user == pytest.approx(50.0) and c.idle == pytest.approx(50.0)
    assert cpu_percent(prev, prev) is None
