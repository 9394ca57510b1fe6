"""MinIO erasure coding's space, from the filesystems of its drives to what its admin API calls
the usable capacity and the data it takes before it refuses writes (MinIO as pinned by
scripts/install-minio.sh, 2026).

- Each drive's total is what statfs gives, less the blocks only root may use
  (internal/disk/stat_linux.go GetInfo: Total = f_frsize x (f_blocks - (f_bfree - f_bavail))),
  its free space f_bavail: sizing/capacity_fs.py works both out for a new XFS or ext4.
- The erasure sets and their parity: layout_model (MinIO's set selection, DefaultParityBlocks).
- The usable capacity the admin API reports (`/minio/admin/v3/storageinfo`, `mc admin info`):
  the total of each set's data drives (cmd/notification-summary.go, GetTotalUsableCapacity).
- The data it takes: an object goes whole to one set (hashed by name, so the sets fill evenly)
  and writes its data and parity shards to every drive of it; a write is refused once what
  would be left on the set's drives is under 1% of their total (cmd/object-api-utils.go
  hasSpaceFor, diskFillFraction 0.99), so each set holds (its free space - 1% of its total) x
  data / drives. Not counted: xl.meta and the shards' bitrot checksums (32 bytes per 1 MiB
  block and drive), and the object being written (checked at twice its size).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from backupbench.layout_model import ErasureSets
from backupbench.sizing.capacity_fs import FsSpace, ext4_space, xfs_space

FILL_FRACTION_LEFT = 100  # 1 / (1 - diskFillFraction)


@dataclass(frozen=True)
class MinioSpace:
    drive: FsSpace
    drive_total: int    # what MinIO counts as each drive's total
    reported: int       # the admin API's usable capacity
    holds: int          # data accepted before writes are refused


def drive_space(filesystem: str, size: int) -> FsSpace:
    return ext4_space(size) if filesystem == "ext4" else xfs_space(size)


def minio_space(sets: ErasureSets, sizes: Sequence[int], filesystem: str = "xfs") -> MinioSpace:
    """Equal drives are assumed: each counts as the smallest (a shard of every object lands on
    every drive of its set, so the smallest fills first)."""
    drive = drive_space(filesystem, min(sizes))
    total = drive.size - (drive.free - drive.available)
    data = sets.size - sets.parity
    set_total, set_free = sets.size * total, sets.size * drive.available
    writable = max(0, set_free - set_total // FILL_FRACTION_LEFT)
    return MinioSpace(drive, total, sets.sets * data * total, sets.sets * writable * data // sets.size)
