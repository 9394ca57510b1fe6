"""Usable capacity and fault tolerance; every expected value is worked out by hand here.

`data_area` is the disks less their redundancy alone (these tests' hand arithmetic);
`usable`, what the layout's software lets it hold, is checked family by family in
test_sizing_capacity_accounting.py and against the real storage in test_capacity_real.py and
test_lab_capacity.py."""

import pytest

from backupbench.cli import options as cli_options
from backupbench.errors import InputError, RecipeError
from backupbench.layout_model import minio_default_parity
from backupbench.layout_model import minio_set_size as minio_default_set_size
from backupbench.sizing.capacity import LayoutSpec, parse_draid, usable_capacity
from backupbench.sizing.options import CapacityOptions

TB = 10**12
GiB = 2**30


def cap(layout, sizes, **params):
    return usable_capacity(LayoutSpec(layout, tuple(sizes), **params))


def test_raid6_sixteen_6tb_disks():
    result = cap("raid6", [6 * TB] * 16)
    assert result.raw == 96 * TB
    assert result.data_area == 84 * TB  # (16 - 2) x 6 TB
    assert result.failures_tolerated == 2 and result.failures_best_case == 2
    # Efficiency is of what it holds: XFS on the array, 86.9% here (test_sizing_capacity_accounting).
    assert result.efficiency == pytest.approx(100.0 * result.usable / result.raw) and 86 < result.efficiency < 87.5


@pytest.mark.parametrize("layout,disks,usable,tolerated,best", [
    ("raid0", 4, 24 * TB, 0, 0),
    ("raid1", 2, 6 * TB, 1, 1),
    ("raid1", 3, 6 * TB, 2, 2),
    ("raid5", 4, 18 * TB, 1, 1),
    ("raid10", 4, 12 * TB, 1, 2),
    ("raid10", 3, 9 * TB, 1, 1),  # md near=2 on an odd count: 3 x 6 / 2
])
def test_md_levels(layout, disks, usable, tolerated, best):
    result = cap(layout, [6 * TB] * disks)
    assert (result.data_area, result.failures_tolerated, result.failures_best_case) == (usable, tolerated, best)


def test_md_unequal_members_use_the_smallest_but_raid0_uses_all():
    raid5 = cap("raid5", [4 * TB, 4 * TB, 6 * TB])
    assert raid5.data_area == 8 * TB  # (3 - 1) x 4 TB
    assert any("2,000,000,000,000 bytes unused" in note for note in raid5.notes)
    assert cap("raid0", [1 * TB, 2 * TB]).data_area == 3 * TB


def test_md_needs_enough_disks():
    with pytest.raises(InputError, match="raid6 needs at least 4 disks"):
        cap("raid6", [6 * TB] * 3)


def test_lvm_linear_sums_unequal_pvs():
    result = cap("lvm-linear", [100 * GiB, 200 * GiB, 50 * GiB])
    assert result.data_area == result.raw == 350 * GiB and result.failures_tolerated == 0


def test_lvm_striped_is_stripes_times_the_smallest_pv():
    sizes = [100 * GiB, 100 * GiB, 100 * GiB, 80 * GiB]
    assert cap("lvm-striped", sizes).data_area == 4 * 80 * GiB
    two = cap("lvm-striped", sizes, stripes=2)
    assert two.data_area == 2 * 80 * GiB and two.layout == "lvm-striped (-i 2)"
    with pytest.raises(InputError, match="--stripes must be from 2 to the number of disks"):
        cap("lvm-striped", sizes, stripes=5)


def test_raidz_one_and_two_vdevs():
    one = cap("raidz2", [6 * TB] * 16)
    assert one.data_area == 14 * 6 * TB and one.failures_tolerated == 2
    # 16-wide: a 128 KiB block is 32 data sectors + 2 x ceil(32 / 14) parity, padded to 39: 2^17 / (39 x 8).
    assert any("counted as 420/512 of its space" in note for note in one.notes)
    two = cap("raidz2", [6 * TB] * 16, vdevs=2)
    assert two.data_area == 2 * (8 - 2) * 6 * TB  # 72 TB
    assert (two.failures_tolerated, two.failures_best_case) == (2, 4)
    assert cap("raidz3", [6 * TB] * 11).data_area == 8 * 6 * TB
    with pytest.raises(InputError, match="do not split evenly"):
        cap("raidz1", [6 * TB] * 10, vdevs=3)


def test_draid_field_note_d():
    # draid2, 3 data disks per group, 45 children, 2 distributed spares:
    # (45 - 2) x 3 / (3 + 2) x 6 TB = 43 x 3.6 TB = 154.8 TB.
    result = cap("draid2", [6 * TB] * 45, draid_data=3, draid_spares=2)
    assert result.data_area == 154_800_000_000_000
    assert result.layout == "draid2:3d:45c:2s"
    assert result.failures_tolerated == 2
    assert cap("draid2:3d:45c:2s", [6 * TB] * 45).data_area == 154_800_000_000_000


def test_draid_defaults_follow_zpool():
    # d defaults to 8 (16 - 0 spares - 2 parity = 14 >= 8): 16 x 8 / 10 x 6 TB.
    result = cap("draid2", [6 * TB] * 16)
    assert result.layout == "draid2:8d:16c:0s" and result.data_area == 76_800_000_000_000
    # With 6 disks and 1 spare, d = 6 - 1 - 2 = 3: 5 x 3 / 5 x 6 TB.
    assert cap("draid2", [6 * TB] * 6, draid_spares=1).data_area == 18 * TB
    assert parse_draid("draid") == (1, {})


@pytest.mark.parametrize("layout,params,message", [
    ("draid2:3d:45c:2s", {"draid_data": 4}, "contradicts"),
    ("draid2:3d:40c", {}, "has 40 children but 45 disks"),
    ("draid2", {"draid_data": 42, "draid_spares": 2}, "does not fit"),
    ("draid2:3d:3d", {}, "gives 'd' twice"),
])
def test_draid_errors(layout, params, message):
    with pytest.raises(InputError, match=message):
        cap(layout, [6 * TB] * 45, **params)


@pytest.mark.parametrize("set_size,parity", [(1, 0), (2, 1), (3, 1), (4, 2), (5, 2), (6, 3), (7, 3), (8, 4), (16, 4)])
def test_minio_default_parity_table(set_size, parity):
    assert minio_default_parity(set_size) == parity


@pytest.mark.parametrize("drives,set_size", [(4, 4), (16, 16), (32, 16), (45, 15), (20, 10), (17, None)])
def test_minio_default_set_size(drives, set_size):
    assert minio_default_set_size(drives) == set_size


def test_minio_erasure_sets():
    sixteen = cap("minio-ec", [6 * TB] * 16)
    assert sixteen.data_area == 12 * 6 * TB and sixteen.failures_tolerated == 4  # EC:4 of 16
    assert cap("minio-ec", [6 * TB] * 16, parity=2).data_area == 14 * 6 * TB  # field note D's parity 2
    forty_five = cap("minio-ec", [6 * TB] * 45)
    assert forty_five.layout == "minio-ec EC:4, 3 sets of 15"
    assert forty_five.data_area == 3 * 11 * 6 * TB
    assert (forty_five.failures_tolerated, forty_five.failures_best_case) == (4, 12)
    four = cap("minio-ec", [6 * TB] * 4)
    assert four.data_area == 12 * TB and any("writes 1" in note for note in four.notes)


def test_minio_errors():
    with pytest.raises(InputError, match="cannot split 17 drives"):
        cap("minio-ec", [6 * TB] * 17)
    with pytest.raises(InputError, match="more than half"):
        cap("minio-ec", [6 * TB] * 16, parity=9)
    with pytest.raises(InputError, match="must divide"):
        cap("minio-ec", [6 * TB] * 16, set_size=6)


@pytest.mark.parametrize("profile,sizes,usable,tolerated", [
    ("btrfs-single", [1, 2, 3], 6, 0),
    ("btrfs-raid0", [1, 2], 3, 0),  # 2 x 1 striped, then 1 on the larger device alone
    ("btrfs-raid1", [6, 6, 6, 6], 12, 1),
    ("btrfs-raid1", [1, 1, 4], 2, 1),  # the 4 TB device can only mirror the two small ones
    ("btrfs-raid1c3", [6, 6, 6], 6, 2),
    ("btrfs-raid1c3", [1, 1, 1, 3], 1.5, 2),  # each copy set takes the 3 TB plus two of the 1 TB
    ("btrfs-raid1c4", [6, 6, 6, 6], 6, 3),
    ("btrfs-raid10", [6, 6, 6, 6], 12, 1),
    ("btrfs-raid5", [2, 2, 4], 4, 1),  # (3 - 1) x 2; the 2 TB left on one device cannot hold parity
    ("btrfs-raid6", [6, 6, 6, 6], 12, 2),
])
def test_btrfs_profiles(profile, sizes, usable, tolerated):
    # Metadata as redundant as the data: the layout survives what the data profile does.
    metadata = {"btrfs-raid1c3": "raid1c3", "btrfs-raid1c4": "raid1c4", "btrfs-raid6": "raid1c3"}.get(profile)
    result = cap(profile, [int(size * TB) for size in sizes], btrfs_metadata=metadata)
    assert result.data_area == int(usable * TB) and result.failures_tolerated == tolerated


def test_btrfs_survives_what_its_metadata_profile_survives():
    """mkfs.btrfs's metadata is raid1 whatever the data's profile (layout_model): raid1c3 data
    with it survives one failed device, as the recipe's fault rules have it."""
    default = cap("btrfs-raid1c3", [6 * TB] * 3)
    assert default.failures_tolerated == 1 and default.layout == "btrfs-raid1c3"
    assert any("metadata raid1 survives fewer failed devices than data raid1c3" in note for note in default.notes)
    single = cap("btrfs-raid1", [6 * TB] * 3, btrfs_metadata="single")
    assert single.failures_tolerated == 0 and single.layout == "btrfs-raid1 (metadata single)"


def test_option_of_another_layout_is_an_error():
    with pytest.raises(InputError, match="--vdevs does not apply to layout raid6"):
        cap("raid6", [6 * TB] * 16, vdevs=2)


def build(**values):
    return cli_options.build(CapacityOptions, values)


def test_options_disk_count_and_sizes():
    assert build(layout="raid6", disks="16", disk_size="6TB").specs()[0].disk_sizes == (6 * TB,) * 16
    listed = build(layout="lvm-linear", disk_size="1TiB,2TiB").specs()[0]
    assert listed.disk_sizes == (2**40, 2 * 2**40)
    # A dRAID spec gives the disk count itself.
    assert build(layout="draid2:3d:45c:2s", disk_size="6TB").specs()[0].disks == 45
    with pytest.raises(InputError, match="--disks: how many disks"):
        build(layout="raid6", disk_size="6TB").specs()
    with pytest.raises(InputError, match="--disks 3 but --disk-size lists 2"):
        build(layout="raid1", disks="3", disk_size="1TB,1TB").specs()


def test_options_compare_several_layouts():
    specs = build(layout="raid6,minio-ec", disks="16", disk_size="6TB", parity="2").specs()
    assert specs[0].parity is None and specs[1].parity == 2  # --parity goes to minio-ec only
    with pytest.raises(InputError, match="--vdevs does not apply to raid6, minio-ec"):
        build(layout="raid6,minio-ec", disks="16", disk_size="6TB", vdevs="2").specs()


@pytest.mark.parametrize("values,flag", [
    ({"layout": "raid7", "disks": "4", "disk_size": "6TB"}, "--layout"),
    ({"layout": "draid2:3g:2s", "disks": "45", "disk_size": "6TB"}, "--layout"),
    ({"layout": "raid6", "disks": "4", "disk_size": "6XB"}, "--disk-size"),
    ({"layout": "raid6", "disks": "0", "disk_size": "6TB"}, "--disks"),
    ({"disks": "4", "disk_size": "6TB"}, "--layout"),
])
def test_options_errors_name_the_flag(values, flag):
    with pytest.raises(RecipeError) as caught:
        build(**values)
    assert caught.value.message.startswith(flag + ":")
