"""Rebuild time, one replacement disk vs dRAID distributed spares, worked out by hand."""

import pytest

from backupbench.cli import options as cli_options
from backupbench.errors import InputError
from backupbench.sizing.capacity import LayoutSpec
from backupbench.sizing.options import RebuildOptions
from backupbench.sizing.rebuild import rebuild_time

TB = 10**12
MB_S = 10**6


def rebuild(layout, disks, rate=100 * MB_S, used=100.0, size=6 * TB, **params):
    return rebuild_time(LayoutSpec(layout, (size,) * disks, **params), rate, used)


def test_raid6_classic_and_the_draid_comparison():
    result = rebuild("raid6", 16)
    # One replacement disk writes 6 TB at 100 MB/s: 60,000 s = 16.67 h.
    assert result.failed_disk_data == 6 * TB
    assert result.classic.seconds == pytest.approx(60_000)
    assert result.failures_while_rebuilding == 1
    # Compared with draid2 over the same 16 disks, 1 spare, d = min(8, 16 - 1 - 2) = 8:
    # each disk holds 15/16 x 6 TB = 5.625 TB; 5.625 TB x (8 + 1) / (15 x 100 MB/s) = 33,750 s.
    assert result.draid == "draid2:8d:16c:1s"
    assert result.distributed.seconds == pytest.approx(33_750)
    assert result.speedup == pytest.approx(60_000 / 33_750)


def test_draid_field_note_d_rebuilds_eleven_times_faster():
    result = rebuild("draid2:3d:45c:2s", 45)
    # A child holds (45 - 2) / 45 of 6 TB: 5,733,333,333,333.3 -> rounded up to a byte.
    assert result.failed_disk_data == 5_733_333_333_334
    assert result.distributed.seconds == pytest.approx(5_733_333_333_334 * 4 / (44 * 100 * MB_S))
    assert result.classic.seconds == pytest.approx(5_733_333_333_334 / (100 * MB_S))
    assert result.speedup == pytest.approx(44 / 4)  # (c - 1) / (d + 1)
    assert result.draid == "draid2:3d:45c:2s" and "afterwards" in result.classic.label


def test_draid_without_spares_has_no_distributed_rebuild():
    result = rebuild("draid2", 16, draid_spares=0)
    assert result.distributed is None and result.speedup is None
    assert any("no distributed spares" in note for note in result.notes)


def test_comparison_can_be_shaped_or_switched_off():
    assert rebuild("raid6", 16, draid_data=4, draid_spares=2).draid == "draid2:4d:16c:2s"
    assert rebuild("raid6", 16, draid_spares=0).distributed is None
    with pytest.raises(InputError, match="does not fit"):
        rebuild("raid6", 16, draid_data=14)
    # Too few disks for a default dRAID comparison: no comparison, no error.
    assert rebuild("raid1", 2).distributed is None


def test_used_share_applies_to_zfs_but_not_md():
    assert rebuild("raidz2", 16, used=50).failed_disk_data == 3 * TB
    md = rebuild("raid6", 16, used=50)
    assert md.failed_disk_data == 6 * TB and any("--used is ignored" in note for note in md.notes)


def test_md_speed_limit_note():
    assert any("speed_limit_max" in note for note in rebuild("raid6", 16, rate=300 * MB_S).notes)
    assert not rebuild("raid6", 16, rate=200 * 1024 * 1000).notes  # exactly 200,000 KiB/s


def test_layouts_without_redundancy_have_nothing_to_rebuild():
    with pytest.raises(InputError, match="no redundancy"):
        rebuild("raid0", 4)
    with pytest.raises(InputError, match="no redundancy"):
        rebuild("lvm-striped", 4)


def test_bad_rate_and_used():
    with pytest.raises(InputError, match="--rebuild-rate"):
        rebuild("raid6", 16, rate=0)
    with pytest.raises(InputError, match="--used"):
        rebuild("raidz2", 16, used=0)


def test_options_accept_draid_shape_for_any_layout():
    options = cli_options.build(RebuildOptions, {"layout": "raid6", "disks": "16", "disk_size": "6TB",
                                                 "rebuild_rate": "100MB/s", "draid_spares": "2"})
    assert options.rebuild_rate == 100 * MB_S
    (spec,) = options.specs()
    assert spec.draid_spares == 2
    assert rebuild_time(spec, options.rebuild_rate).draid == "draid2:8d:16c:2s"
