"""Each family's own space accounting (sizing/capacity_*.py), pure: worked by hand from the rules
the docstrings cite, and held against figures recorded from the real tools (mkfs.xfs 6.1,
mke2fs 1.47.0 and btrfs-progs 6.2 on loop devices of this project's host, Linux 6.18: the
352 TB ones on a sparse file in an XFS, since the host's ext4 holds no file past 16 TiB).
tests/integration/test_capacity_real.py and test_lab_capacity.py measure them again."""

from __future__ import annotations

import pytest

from backupbench.layout_model import ErasureSets
from backupbench.sizing import capacity_zfs as zfs
from backupbench.sizing.capacity import LayoutSpec, usable_capacity
from backupbench.sizing.capacity_blockdev import lvm_lv_bytes, md_array_bytes, md_data_offset
from backupbench.sizing.capacity_btrfs import btrfs_space
from backupbench.sizing.capacity_fs import ext4_space, xfs_space
from backupbench.sizing.capacity_minio import minio_space

TB, GiB, MiB, KiB = 10**12, 2**30, 2**20, 2**10


def test_zfs_field_plan_raidz2_by_hand():
    """24 x 16 TB as one raidz2 at ashift 12, each step as OpenZFS 2.3 takes it."""
    # GPT: 31,250,000,000 sectors; the last usable LBA leaves the 33-sector backup table; part1
    # from 2048 to 16,384 sectors before that, rounded down to 2048 sectors.
    lbas = 16 * TB // 512
    part1 = (lbas - 1 - 33 + 1 - 16384 - 2048) // 2048 * 2048 * 512
    assert zfs.partition_bytes(16 * TB) == part1 == 15_999_990_497_280
    # A whole number of 256 KiB labels already; less 4 MiB at the start and 512 KiB at the end.
    child = part1 - 4 * MiB - 512 * KiB
    assert zfs.leaf_asize(part1) == child
    # 24 children; asize / 200 is about 2^40.8, so the shift is capped at 34: 16 GiB metaslabs.
    asize = 24 * child
    assert zfs.metaslab_shift(asize) == 34 and asize >> 34 == 22_351
    # A 128 KiB block: 32 sectors + 2 x ceil(32 / 22) parity = 36, a multiple of 3 already.
    assert zfs.block_asize(zfs.Vdev(24, 2), 128 * KiB, 12) == 36 * 4096
    assert zfs.deflate_ratio(zfs.Vdev(24, 2), 12) == 2**17 // 288 == 455
    # One metaslab goes to the embedded log; the rest, deflated, is the pool's space.
    normal = ((22_351 - 1) << 34 >> 9) * 455
    log = (1 << 34 >> 9) * 455
    # Slop: 1/32 capped at 128 GiB, less the embedded log (at most half of it).
    slop = 128 * GiB - log
    space = zfs.pool_space(zfs.Vdev(24, 2), 1, 16 * TB)
    assert (space.normal, space.embedded_log, space.slop) == (normal, log, slop)
    assert space.reported == normal - slop == 341_101_235_929_088  # 3.1% under 22 x 16 TB
    # 128 KiB records are charged 36 x 8 x 455 = 131,040 bytes each: a hair more than reported.
    assert space.holds == space.reported * 131_072 // 131_040
    # 1 MiB records: 256 + 2 x 12 = 280 sectors, padded to 282, charged 282 x 8 x 455 bytes.
    big = zfs.pool_space(zfs.Vdev(24, 2), 1, 16 * TB, recordsize=MiB)
    assert big.holds == space.reported * MiB // (282 * 8 * 455)


def test_zfs_field_plan_draid2_by_hand():
    """draid2:8d:24c:1s: 32 MiB per child kept for expansion, 16 MiB rows, 10-wide groups."""
    child = zfs.leaf_asize(zfs.partition_bytes(16 * TB))
    rows = (child - 32 * MiB) // (16 * MiB) * (16 * MiB)
    group = 10 * 16 * MiB
    vdev = zfs.Vdev(24, 2, 8, 1)
    assert zfs.vdev_asize(vdev, child) == rows * 23 // group * group
    # A 128 KiB block is 4 rows of 8 data + 2 parity sectors: 160 KiB; 2^17 / 320 = 409.6 -> 409.
    assert zfs.block_asize(vdev, 128 * KiB, 12) == 160 * KiB and zfs.deflate_ratio(vdev, 12) == 409
    space = zfs.pool_space(vdev, 1, 16 * TB)
    assert space.reported == 293_824_997_133_568  # the data area, 294.4 TB, less 0.2%
    # Small records pay dRAID's padding: a 16 KiB record still takes a whole 40 KiB row.
    small = zfs.pool_space(vdev, 1, 16 * TB, recordsize=16 * KiB)
    assert small.holds == space.reported * 16 * KiB // (80 * 409)


def test_zfs_small_pools_keep_at_least_128_mib_of_slop_and_no_embedded_log():
    # 6 x 1 GiB raidz2: 11 metaslabs of 512 MiB (16 would be fewer than 512 MiB each), none
    # for the log (64 or fewer), slop at its 128 MiB floor.
    space = zfs.pool_space(zfs.Vdev(6, 2), 1, GiB)
    assert (space.ms_shift, space.metaslabs, space.embedded_log, space.slop) == (29, 11, 0, 128 * MiB)
    # 32 sectors + 2 x ceil(32 / 4) = 48, padded to 48: 2^17 / 384 = 341.
    assert space.deflate_ratio == 341 and space.reported == 11 * (512 * MiB >> 9) * 341 - 128 * MiB


# (device bytes, stripe unit, stripe width, df size, df available), from mkfs.xfs 6.1 on Linux 6.18.
XFS_RECORDED = [
    (512 * MiB, 0, 0, 469_762_048, 439_373_824),
    (GiB, 0, 0, 1_006_632_960, 965_767_168),
    (16 * GiB, 0, 0, 17_112_760_320, 16_959_598_592),
    (4000 * GiB, 0, 0, 4_292_870_144_000, 4_262_905_925_632),
    (15000 * GiB, 0, 0, 16_103_990_362_112, 15_991_676_850_176),
    (16 * TB, 0, 0, 15_997_863_002_112, 15_886_289_428_480),
    (GiB, 512 * KiB, 2 * MiB, 1_002_438_656, 961_388_544),
    (100 * GiB, 512 * KiB, 2 * MiB, 107_298_684_928, 106_515_959_808),
    (300 * GiB, 512 * KiB, 11 * MiB, 321_965_260_800, 319_685_804_032),
    (100 * GiB, 64 * KiB, 192 * KiB, 107_307_073_536, 106_524_286_976),
    # md RAID 6 of 24 x 16 TB (its size from md_array_bytes), su 512 KiB x 22.
    (351_997_022_699_520, 512 * KiB, 11 * MiB, 351_994_885_701_632, 349_540_682_223_616),
]
# (device bytes, df size, df available), from mke2fs 1.47.0 (Debian's mke2fs.conf) on Linux 6.18.
EXT4_RECORDED = [
    (int(0.3 * GiB), 291_394_560, 271_080_448),  # 1 KiB blocks below 512 MiB
    (GiB, 1_020_702_720, 950_214_656),
    (100 * GiB, 105_089_261_568, 99_703_750_656),
    (15000 * GiB, 15_978_031_640_576, 15_172_708_466_688),
    (20 * TB, 19_919_341_756_416, 18_919_324_954_624),  # past 2^32 blocks: no resize inode
    (351_997_022_699_520, 350_878_266_900_480, 333_278_398_963_712),  # meta_bg
]


@pytest.mark.parametrize("device,sunit,swidth,size,available", XFS_RECORDED)
def test_xfs_as_df_shows_it(device, sunit, swidth, size, available):
    space = xfs_space(device, sunit, swidth)
    assert (space.size, space.available) == (size, available)


@pytest.mark.parametrize("device,size,available", EXT4_RECORDED)
def test_ext4_as_df_shows_it(device, size, available):
    space = ext4_space(device)
    assert (space.size, space.available) == (size, available)


def test_xfs_by_hand_on_one_gib():
    # 262,144 blocks in 4 AGs of 65,536; a 64 MiB log (16,384 blocks) in AG 2.
    # Per AG the refcount btree could need ceil(65,536 / 168) + ceil(391 / 252) + 1 = 394 blocks and
    # the free-inode btree ceil(8,192 / 126) + 1 = 67 (AG 2: 296 and 50, its log left out),
    # less the 2 roots already there.
    reserved = 3 * (394 + 67 - 2) + (296 + 50 - 2)
    fdblocks = 262_144 - 16_384 - 4 * 6 - 8
    available = fdblocks - reserved - 4 * 8 - 8192  # set aside per AG, the reserve pool
    assert xfs_space(GiB).available == available * 4096


def test_md_data_offset_and_array_size_by_hand():
    # 16 TB: 128 MiB of headroom (0.1% of the member is more), a 128 KiB bitmap area, 12 KiB of
    # superblock: 262,424 sectors, rounded up to 1 MiB: 129 MiB.
    assert md_data_offset(16 * TB) == 129 * MiB
    member = (16 * TB - 129 * MiB) // (512 * KiB) * (512 * KiB)
    assert md_array_bytes(6, [16 * TB] * 24) == 22 * member == 351_997_022_699_520
    # 1 GiB: headroom halved to 1 MiB (two chunks), a 4 KiB bitmap area: 2 MiB in all.
    assert md_data_offset(GiB) == 2 * MiB
    assert md_array_bytes(6, [GiB] * 6) == 4 * (GiB - 2 * MiB)
    assert md_array_bytes(1, [GiB, 2 * GiB]) == GiB - 2 * MiB  # no chunk: 64 KiB rounding
    assert md_array_bytes(10, [GiB] * 3) == 3 * (GiB - 2 * MiB) // 2 // (512 * KiB) * (512 * KiB)


def test_lvm_extents():
    # The first extent at 1 MiB, then whole 4 MiB extents: a 1 GiB PV holds 255.
    assert lvm_lv_bytes([GiB] * 6) == 6 * 255 * 4 * MiB
    assert lvm_lv_bytes([GiB, 2 * GiB, GiB], stripes=3) == 3 * 255 * 4 * MiB


# (data, metadata, devices, device bytes, Free (estimated), data written until ENOSPC) as
# btrfs-progs 6.2 and Linux 6.18 did it; the data is 64 MiB, 8 MiB and 1 MiB files written until
# each size fails, so the last chunk's few 64 KiB stripes may stay unwritten.
BTRFS_RECORDED = [
    ("raid1", "raid1", 2, GiB, 958_005_248, 956_956_742),
    ("raid1", "raid1", 3, GiB, 1_333_788_672, 1_233_649_770),
    ("raid1", "raid1", 3, 2 * GiB, 2_944_401_408, 2_762_735_860),
    ("raid1", "single", 3, GiB, 1_604_321_280, 1_556_545_660),
    ("raid10", "raid1", 4, GiB, 1_870_659_584, 1_868_431_520),
    ("raid6", "raid1c3", 4, GiB, 1_732_247_552, 1_591_607_432),
    ("raid1c3", "raid1c3", 4, GiB, 1_154_831_701, 1_012_334_680),
    ("single", "dup", 1, GiB, 949_616_640, 948_568_146),
]


@pytest.mark.parametrize("data,metadata,devices,size,estimated,written", BTRFS_RECORDED)
def test_btrfs_as_it_estimates_and_fills(data, metadata, devices, size, estimated, written):
    space = btrfs_space(data, metadata, [size] * devices)
    assert space.estimated_free == estimated
    assert space.holds == pytest.approx(written, rel=2e-4)


def test_btrfs_checksums_grow_the_metadata_at_scale():
    """24 x 16 TB raid1: 192 TB of data needs its checksums (4 bytes a 4 KiB block, about 0.1%)
    in raid1 metadata, which the data gives up half of."""
    space = btrfs_space("raid1", "raid1", [16 * TB] * 24)
    data_chunks = 192 * TB - space.holds
    assert 0.0009 < data_chunks / (192 * TB) < 0.0011
    assert space.metadata_raw > 2 * (space.holds // 1024)


def test_minio_by_hand():
    """4 drives of 1 GiB, XFS, EC:2: MinIO counts each drive's total as statfs gives it and
    refuses writes with 1% of the set's total left."""
    drive = xfs_space(GiB)
    space = minio_space(ErasureSets(4, 4, 2), [GiB] * 4)
    assert space.drive_total == drive.size and space.reported == 2 * drive.size
    assert space.holds == (4 * drive.available - 4 * drive.size // 100) * 2 // 4
    # ext4: root's reserved blocks are not MinIO's.
    ext4 = ext4_space(GiB)
    assert minio_space(ErasureSets(4, 4, 2), [GiB] * 4, "ext4").drive_total == \
        ext4.size - (ext4.free - ext4.available)


def test_capacity_names_what_reports_it():
    def of(layout, disks, **params):
        return usable_capacity(LayoutSpec(layout, (16 * TB,) * disks, **params))

    assert of("raid6", 24).reported_by == "df -B1 (available) of the xfs on the md RAID 6 array"
    assert of("raid6", 24, filesystem="none").usable == md_array_bytes(6, [16 * TB] * 24)
    assert of("raidz2", 24).reported == 341_101_235_929_088
    assert of("btrfs-raid1", 24).reported_by.startswith("btrfs filesystem usage -b")
    minio = of("minio-ec", 24)
    assert minio.layout == "minio-ec EC:4, 2 sets of 12" and minio.reported == 16 * xfs_space(16 * TB).size
    assert minio.usable < minio.reported < minio.data_area
