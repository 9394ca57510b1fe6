"""The lab's virtual disks: `--disks` specs, throttling, and the sparse image files.

Pure parts (parse_disks, parse_throttle, Throttle.options) are what the CLI and the QEMU
argv builder use; `create_images` is the only part that touches the host.

Throttling happens in QEMU's block layer, per disk, in plain bytes/s and I/O/s: QEMU rejects
`50M`, so 50 MiB/s is `throttling.bps-total=52428800`. A total limit and a read/write limit
of the same kind cannot be combined (QEMU refuses), so neither can they here.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Sequence

from backupbench import process
from backupbench.errors import InputError, ProcessError, RefusedError
from backupbench.units import MiB, format_size, parse_rate, parse_size

FILESYSTEMS = {
    # fs -> mkfs argv before the image path; the label is the disk's serial (lab-dN)
    # Lazy initialisation off: the guest would otherwise zero inode tables under the first phase.
    "ext4": ["mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", "-L"],
    "xfs": ["mkfs.xfs", "-f", "-q", "-L"],
    "btrfs": ["mkfs.btrfs", "-f", "-q", "-L"],
}
MAX_DISKS = 26  # /dev/vda .. /dev/vdz
SECTOR = 512
MIN_DISK = 16 * MiB  # XFS and LVM need a little room; smaller is surely a typo
FREE_MARGIN = 256 * MiB  # left free on the host beyond the images' full size

_SPEC_RE = re.compile(r"^\s*(?:(\d+)\s*[xX*]\s*)?([^:]+?)\s*(?::\s*(\w+))?\s*$")


@dataclass(frozen=True)
class DiskSpec:
    size: int  # bytes
    filesystem: str | None = None  # made on the host image before boot (so blkid sees it)


def parse_disks(text: str) -> list[DiskSpec]:
    """'4x4GiB,4x1GiB' -> eight disks; '2x1GiB:xfs' -> two disks holding an XFS each.

    Each comma-separated group is `[COUNTx]SIZE[:FILESYSTEM]`. Sizes use units.parse_size
    (a bare letter is binary) and must be whole 512-byte sectors.
    """
    disks: list[DiskSpec] = []
    if not text or not text.strip():
        raise InputError("--disks is empty", "give e.g. 4x4GiB or 4x4GiB,2x1GiB:xfs")
    for group in text.split(","):
        match = _SPEC_RE.match(group)
        if not match:
            raise InputError(f"--disks: cannot read {group.strip()!r}", "use COUNTxSIZE[:FS], e.g. 4x4GiB or 1x1GiB:xfs")
        count_text, size_text, filesystem = match.groups()
        count = int(count_text) if count_text else 1
        if count < 1:
            raise InputError(f"--disks: {group.strip()!r} asks for no disk", "the count must be 1 or more")
        try:
            size = parse_size(size_text)
        except ValueError as exc:
            raise InputError(f"--disks: {exc}") from exc
        if size < MIN_DISK or size % SECTOR:
            raise InputError(f"--disks: {size_text.strip()} is not a whole number of 512-byte sectors of at "
                             f"least {format_size(MIN_DISK)}", "use e.g. 1GiB or 512MiB")
        if filesystem is not None:
            filesystem = filesystem.lower()
            if filesystem not in FILESYSTEMS:
                raise InputError(f"--disks: unknown filesystem {filesystem!r}",
                                 f"use one of {', '.join(sorted(FILESYSTEMS))}")
        disks.extend(DiskSpec(size, filesystem) for _ in range(count))
    if len(disks) > MAX_DISKS:
        raise InputError(f"--disks: {len(disks)} disks asked for, the lab supports at most {MAX_DISKS}")
    return disks


def format_disks(disks: Sequence[DiskSpec]) -> str:
    """The inverse of parse_disks, grouping neighbours: [4 x 4 GiB] -> '4x4GiB'."""
    groups: list[list] = []
    for disk in disks:
        if groups and groups[-1][1] == disk:
            groups[-1][0] += 1
        else:
            groups.append([1, disk])
    parts = []
    for count, disk in groups:
        size = format_size(disk.size).replace(" ", "")
        parts.append(f"{count}x{size}" + (f":{disk.filesystem}" if disk.filesystem else ""))
    return ",".join(parts)


@dataclass(frozen=True)
class Throttle:
    """Per-disk limits in bytes/s and I/O/s; None = unlimited."""

    bps_total: int | None = None
    bps_read: int | None = None
    bps_write: int | None = None
    iops_total: int | None = None
    iops_read: int | None = None
    iops_write: int | None = None

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
                raise InputError(f"disk limit {item.name.replace('_', '-')} must be a positive whole number, not {value!r}")
        for kind in ("bps", "iops"):
            if getattr(self, f"{kind}_total") and (getattr(self, f"{kind}_read") or getattr(self, f"{kind}_write")):
                raise InputError(f"a total {kind} limit cannot be combined with read/write {kind} limits (QEMU refuses it)",
                                 "give either the total or the read and write limits")

    @property
    def unlimited(self) -> bool:
        return all(getattr(self, item.name) is None for item in fields(self))

    def options(self) -> list[str]:
        """`throttling.*` options for QEMU's -drive, in plain bytes/s and I/O/s."""
        return [f"throttling.{item.name.replace('_', '-')}={getattr(self, item.name)}"
                for item in fields(self) if getattr(self, item.name) is not None]

    def describe(self) -> str:
        parts = []
        for item in fields(self):
            value = getattr(self, item.name)
            if value is None:
                continue
            kind, direction = item.name.split("_")
            text = format_bytes_rate(value) if kind == "bps" else f"{value} IOPS"
            parts.append(text if direction == "total" else f"{direction} {text}")
        return ", ".join(parts) if parts else "unthrottled"


def format_bytes_rate(value: int) -> str:
    """Exact and short: 52428800 -> '50 MiB/s', 50000000 -> '50 MB/s', else bytes/s."""
    for unit, factor in (("GiB", 1024**3), ("MiB", MiB), ("KiB", 1024), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if value % factor == 0:
            return f"{value // factor} {unit}/s"
    return f"{value} B/s"


def _rate(option: str, text: str | None) -> int | None:
    if text is None or str(text).strip().lower() in ("", "none", "off", "0"):
        return None
    try:
        return parse_rate(text)
    except ValueError as exc:
        raise InputError(f"{option}: {exc}", "use e.g. 50MiB/s or 50MB/s, or none") from exc


def _count(option: str, text: str | int | None) -> int | None:
    if text is None or str(text).strip().lower() in ("", "none", "off", "0"):
        return None
    try:
        value = int(str(text).strip())
    except ValueError as exc:
        raise InputError(f"{option}: {text!r} is not a whole number of I/O per second", "use e.g. 400, or none") from exc
    if value < 0:
        raise InputError(f"{option}: {value} is negative")
    return value


def parse_throttle(rate: str | None = None, iops: str | int | None = None, *, read_rate: str | None = None,
                   write_rate: str | None = None, read_iops: str | int | None = None,
                   write_iops: str | int | None = None) -> Throttle:
    """CLI texts -> Throttle. 'none' (or nothing) means no limit of that kind."""
    return Throttle(
        bps_total=_rate("--disk-rate", rate), bps_read=_rate("--disk-read-rate", read_rate),
        bps_write=_rate("--disk-write-rate", write_rate), iops_total=_count("--disk-iops", iops),
        iops_read=_count("--disk-read-iops", read_iops), iops_write=_count("--disk-write-iops", write_iops),
    )


def check_space(directory: Path, disks: Sequence[DiskSpec]) -> None:
    """Refuse unless `directory` has room for every image at its full size.

    The images are sparse, but a workload may fill them, and a host filesystem that runs
    full under QEMU pauses or corrupts the guest's I/O: better to refuse now.
    """
    need = sum(d.size for d in disks) + FREE_MARGIN
    free = shutil.disk_usage(directory).free
    if free < need:
        raise RefusedError(
            f"the lab's disk images need {format_size(need)} in {directory} (sparse, but workloads may fill "
            f"them) and it has {format_size(free)} free",
            "use fewer or smaller --disks, or --work-dir on a filesystem with more room")


def supports_direct_io(directory: Path) -> bool:
    """Whether files in `directory` can be opened with O_DIRECT (tmpfs cannot)."""
    probe = directory / ".odirect-probe"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_RDWR | getattr(os, "O_DIRECT", 0), 0o600)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.EOPNOTSUPP):
            return False
        raise
    else:
        os.close(fd)
        return True
    finally:
        probe.unlink(missing_ok=True)


def image_name(index: int) -> str:
    return f"d{index}.img"


def serial(index: int) -> str:
    return f"lab-d{index}"


def create_images(directory: Path, disks: Sequence[DiskSpec]) -> list[Path]:
    """Sparse raw images d0.img, d1.img, ... in `directory`; a filesystem where asked."""
    paths = []
    for index, disk in enumerate(disks):
        path = directory / image_name(index)
        with open(path, "xb") as handle:
            handle.truncate(disk.size)
        if disk.filesystem:
            try:
                process.run([*FILESYSTEMS[disk.filesystem.lower()], serial(index), str(path)], timeout=300)
            except ProcessError as exc:
                said = next((line.strip() for line in exc.stderr.splitlines() if line.strip()), exc.message)
                raise InputError(f"--disks: cannot make {disk.filesystem} on a {format_size(disk.size)} disk: {said}",
                                 "make that disk larger") from exc
        paths.append(path)
    return paths
