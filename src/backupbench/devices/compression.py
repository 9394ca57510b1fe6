"""Whether the filesystem under a directory compresses what is written to it: btrfs by its
mount options (compress=, compress-force=), ZFS by the dataset's `compression` property. VDO and
dedup appliances are not detected (a dm-vdo target or a remote box shows nothing here).

btrfs stores O_DIRECT writes, and writes into preallocated extents (fio's default
fallocate), uncompressed (measured: 64 MiB of one byte pattern under compress=zstd took 64 MiB
written either way, 2 MiB written buffered into a new file), so only buffered writes may be
compressed there."""

from __future__ import annotations

from typing import Callable

from backupbench import process
from backupbench.devices.facts import DirectoryFacts
from backupbench.errors import BackupbenchError

Runner = Callable[..., process.Result]


def filesystem_compression(facts: DirectoryFacts, buffered: bool = True, run: Runner = process.run) -> str | None:
    """e.g. 'btrfs compress=zstd:3', 'zfs compression=lz4', or None (none found, or none for
    this kind of write)."""
    if facts.fs_type == "btrfs" and buffered:
        found = [o for o in facts.fs_options if o.startswith(("compress=", "compress-force="))]
        return f"btrfs {found[0]}" if found else None
    if facts.fs_type == "zfs" and facts.source:
        try:
            value = run(["zfs", "get", "-H", "-o", "value", "compression", facts.source], timeout=30).stdout.strip()
        except BackupbenchError:
            return None  # cannot tell: no warning rather than a wrong one
        return f"zfs compression={value}" if value and value != "off" else None
    return None


def content_caution(path: str, compression: str | None, content_label: str, constant: bool) -> str | None:
    """A note when constant data is written where the filesystem compresses it away."""
    if compression is None or not constant:
        return None
    return (f"{path} is on {compression} and the data is a {content_label}: the figures may measure "
            "compression, not the storage; use data = 'incompressible' (the default) for backup-shaped data")
