"""What each kind of layout is, said once: how many members may fail without losing data, the
fewest members it is built on, and the defaults its software picks when the recipe or the
flags leave them out (MinIO's erasure set and parity, mkfs.btrfs's metadata profile).

Three stages read it and none keeps a copy: a recipe's layout specs (layouts/: the member
checks, `redundancy()`), the fault rules through the `LayoutFacts` a spec declares (faults/)
and the sizing answers (sizing/capacity*.py: `size capacity`, the repository plan). When they
disagreed, a layout could be planned as a candidate that survives two failures while its fault
was refused for surviving one (issue 41).
"""

from __future__ import annotations

from dataclasses import dataclass

# md RAID levels and the fewest members backupbench builds each on. mdadm itself accepts a
# 2-member RAID 5 (a mirror with parity arithmetic); 3 is the smallest that stripes.
MD_MIN_MEMBERS = {0: 2, 1: 2, 5: 3, 6: 4, 10: 2}

# zpool's fewest devices per vdev type: a raidz needs parity + 1 (zpool-create(8)).
ZFS_MIN_MEMBERS = {"stripe": 1, "mirror": 2, "raidz1": 2, "raidz2": 3, "raidz3": 4}


@dataclass(frozen=True)
class BtrfsProfile:
    """One btrfs block-group profile as the kernel's btrfs_raid_array has it
    (fs/btrfs/volumes.c, Linux >= 5.15): copies of each block, parity stripes, the fewest
    devices, and the device failures it tolerates (tolerated_failures)."""

    copies: int
    parity: int
    min_devices: int
    tolerates: int
    one_device: bool = False  # dup: both copies on the same device


BTRFS_PROFILES = {
    "single": BtrfsProfile(1, 0, 1, 0),
    "dup": BtrfsProfile(2, 0, 1, 0, one_device=True),
    "raid0": BtrfsProfile(1, 0, 1, 0),
    "raid1": BtrfsProfile(2, 0, 2, 1),
    "raid1c3": BtrfsProfile(3, 0, 3, 2),
    "raid1c4": BtrfsProfile(4, 0, 4, 3),
    "raid10": BtrfsProfile(2, 0, 2, 1),
    "raid5": BtrfsProfile(1, 1, 2, 1),
    "raid6": BtrfsProfile(1, 2, 3, 2),
}

# MinIO erasure sets hold 2 to 16 drives (cmd/endpoint-ellipses.go, setSizes); backupbench
# builds minio-ec on 4 to 32 drives, each a filesystem of its own.
MINIO_SET_SIZES = range(2, 17)
MINIO_EC_MIN_DRIVES = 4


def md_survives(level: int, members: int) -> int:
    """Members of an md array that may fail, whichever they are, without losing data
    (RAID 10 is md's near=2: a second failure is survived only off the first one's pair)."""
    return {0: 0, 1: members - 1, 5: 1, 6: 2, 10: 1}[level]


def md_survives_at_best(level: int, members: int) -> int:
    """The same when the failures fall on the luckiest members (one per RAID 10 pair)."""
    return members // 2 if level == 10 else md_survives(level, members)


def zfs_survives(vdev: str, members: int) -> int:
    """Devices of one ZFS data vdev that may fail: none of a stripe, all but one of a mirror,
    the parity of a raidz or dRAID ('raidz2', 'draid2')."""
    if vdev == "stripe":
        return 0
    if vdev == "mirror":
        return members - 1
    return int(vdev[-1])


def draid_min_children(parity: int, data: int, spares: int) -> int:
    """zpool: a dRAID vdev needs data + parity + spares children at the least."""
    return data + parity + spares


def btrfs_default_metadata(devices: int) -> str:
    """mkfs.btrfs's metadata profile when none is given (btrfs-progs >= 5.15: DUP on one
    device, RAID1 on more)."""
    return "dup" if devices == 1 else "raid1"


def btrfs_survives(data: str, metadata: str) -> int:
    """Devices a btrfs may lose: the lesser of its data and metadata profiles' tolerance
    (metadata lost on the failed device loses the filesystem, whatever the data's copies)."""
    return min(BTRFS_PROFILES[data].tolerates, BTRFS_PROFILES[metadata].tolerates)


def btrfs_min_devices(data: str, metadata: str) -> int:
    return max(BTRFS_PROFILES[data].min_devices, BTRFS_PROFILES[metadata].min_devices)


def minio_set_size(drives: int) -> int | None:
    """The erasure-set size MinIO picks for one pool of `drives` given without ellipses: all
    of them up to 16, else the largest size from 2 to 16 that divides the count
    (cmd/endpoint-ellipses.go, getSetIndexes and commonSetDriveCount); None: no size divides it."""
    if drives <= MINIO_SET_SIZES.stop - 1:
        return drives
    fitting = [size for size in MINIO_SET_SIZES if drives % size == 0]
    return max(fitting) if fitting else None


def minio_default_parity(set_size: int) -> int:
    """MinIO's STANDARD storage class parity without MINIO_STORAGE_CLASS_STANDARD
    (internal/config/storageclass/storage-class.go, DefaultParityBlocks): EC:1 for 2-3 drives,
    EC:2 for 4-5, EC:3 for 6-7, EC:4 for 8 and more."""
    if set_size <= 1:
        return 0
    if set_size <= 3:
        return 1
    if set_size <= 5:
        return 2
    if set_size <= 7:
        return 3
    return 4


@dataclass(frozen=True)
class ErasureSets:
    """MinIO's erasure sets over some drives: equal sets of `size` drives, `parity` of each."""

    drives: int
    size: int
    parity: int

    @property
    def sets(self) -> int:
        return self.drives // self.size

    @property
    def survives(self) -> int:
        """Drives that may fail, whichever they are, before a set loses read quorum."""
        return self.parity

    @property
    def write_quorum(self) -> int:
        """Drives of a set that must answer a write: its data shards, one more when parity is
        half the set (cmd/erasure-object.go: writeQuorum = dataDrives, +1 if data == parity)."""
        data = self.size - self.parity
        return data + 1 if data == self.parity else data


def minio_sets(drives: int, parity: int | None = None, set_size: int | None = None) -> ErasureSets | None:
    """The sets MinIO forms, with its defaults for what is not given; None when it cannot
    split the drives evenly. Bounds of a given size or parity are the caller's to check."""
    size = set_size if set_size is not None else minio_set_size(drives)
    if size is None:
        return None
    return ErasureSets(drives, size, parity if parity is not None else minio_default_parity(size))
