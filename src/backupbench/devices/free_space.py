"""How cut up a filesystem's free space is, where the filesystem can say so while mounted: what
years of deleted restore points leave behind, and what a new file is then written into.

- XFS: `xfs_spaceman -c "freesp -s" DIR`, the free-space histogram through GETFSMAP on the
  mounted filesystem. Not `xfs_db -r -c freesp DEVICE`: xfs_db reads the device under the
  mounted filesystem, whose free-space btrees on disk lag the log until it is checkpointed
  (after writing 120 MiB and a sync it still showed the empty filesystem's free space).
- ext2/3/4: `e2freefrag DEVICE` (on a mounted filesystem it asks the kernel, GETFSMAP).
- ZFS: the pool's own `fragmentation` (`zpool list -Hp -o fragmentation POOL`): a weighted
  score of its metaslabs' free segments, in percent, not a count of extents.
- btrfs and the rest: nothing reports it while mounted (btrfs's free-space tree can be dumped
  from the device only, stale the same way as xfs_db's), so nothing is measured.

Figures: free extents, free bytes, their mean, the share of the free space in extents under 1 MiB
(where a file written now would land in pieces smaller than a restore's 1 MiB reads), and ZFS's
score.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from backupbench import process, units
from backupbench.errors import BackupbenchError
from backupbench.hostfiles import HostFiles, find_mount

SMALL = units.MiB
EXT_FILESYSTEMS = ("ext2", "ext3", "ext4")
_XFS_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+[\d.]+\s*$")
_E2_ROW = re.compile(r"^\s*(\d+)([KMGTP])\.\.\.\s*(\d+)([KMGTP])-\s*:\s*(\d+)\s+(\d+)\s+[\d.]+%\s*$")
_UNIT = {"K": units.KiB, "M": units.MiB, "G": units.GiB, "T": units.TiB, "P": 1024 * units.TiB}


@dataclass(frozen=True)
class FreeSpace:
    tool: str                               # the command that said it
    extents: int | None = None
    free_bytes: int | None = None
    small_bytes: int | None = None          # free bytes in extents under SMALL
    fragmentation_pct: float | None = None  # ZFS's score

    def figures(self) -> dict[str, float]:
        found: dict[str, float] = {}
        if self.extents is not None and self.free_bytes is not None:
            found.update({"free_extents": float(self.extents), "free_bytes": float(self.free_bytes),
                          "free_mean_extent_bytes": self.free_bytes / self.extents if self.extents else 0.0})
            if self.small_bytes is not None:
                found["free_under_1mib_pct"] = 100.0 * self.small_bytes / self.free_bytes if self.free_bytes else 0.0
        if self.fragmentation_pct is not None:
            found["free_fragmentation_pct"] = self.fragmentation_pct
        return found


UNITS = {"free_extents": "extents", "free_bytes": "B", "free_mean_extent_bytes": "B", "free_under_1mib_pct": "%",
         "free_fragmentation_pct": "%"}


def parse_xfs_freesp(text: str, block_size: int) -> FreeSpace:
    """xfs_spaceman's `freesp -s`: rows of (from, to, extents, blocks, pct) in filesystem blocks."""
    extents = blocks = small = 0
    for line in text.splitlines():
        row = _XFS_ROW.match(line)
        if row:
            _, to, count, used = (int(row.group(i)) for i in range(1, 5))
            extents, blocks = extents + count, blocks + used
            small += used if (to + 1) * block_size <= SMALL else 0
    total = re.search(r"total free extents (\d+)", text)
    return FreeSpace("xfs_spaceman -c 'freesp -s'", int(total.group(1)) if total else extents, blocks * block_size,
                     small * block_size)


def parse_e2freefrag(text: str) -> FreeSpace:
    """e2freefrag's block size, free extents and histogram (rows '64K...  128K-  :  11  176  0.18%')."""
    size = re.search(r"Blocksize:\s*(\d+)", text)
    block = int(size.group(1)) if size else 4096
    extents = re.search(r"Num\. free extent:\s*(\d+)", text)
    free = re.search(r"Free blocks:\s*(\d+)", text)
    small = 0
    for line in text.splitlines():
        row = _E2_ROW.match(line)
        if row and int(row.group(3)) * _UNIT[row.group(4)] <= SMALL:
            small += int(row.group(6)) * block
    return FreeSpace("e2freefrag", int(extents.group(1)) if extents else None,
                     int(free.group(1)) * block if free else None, small)


def parse_zpool_fragmentation(text: str) -> FreeSpace | None:
    value = text.strip().rstrip("%")
    return FreeSpace("zpool list -o fragmentation", fragmentation_pct=float(value)) if value.isdigit() else None


def measure(directory: Path, run=process.run, host: HostFiles | None = None) -> tuple[FreeSpace | None, str]:
    """The free space of the filesystem holding `directory`, and what measured it (or why nothing)."""
    mount = find_mount(os.path.realpath(directory), (host or HostFiles()).mounts())
    kind = mount.fs_type if mount is not None else ""
    try:
        if kind == "xfs":
            block = os.statvfs(directory).f_bsize
            return parse_xfs_freesp(run(["xfs_spaceman", "-c", "freesp -s", str(directory)]).stdout, block), ""
        if kind in EXT_FILESYSTEMS and mount is not None:
            return parse_e2freefrag(run(["e2freefrag", mount.source]).stdout), ""
        if kind == "zfs" and mount is not None:
            found = parse_zpool_fragmentation(run(["zpool", "list", "-Hp", "-o", "fragmentation",
                                                   mount.source.split("/")[0]]).stdout)
            return found, "" if found else "zpool reports no fragmentation for this pool"
    except BackupbenchError as exc:
        return None, f"free space not measured: {exc.one_line()}"
    return None, f"free space not measured: nothing reports it for a mounted {kind or 'filesystem of this kind'}"
