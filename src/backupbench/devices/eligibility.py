"""Pure rules: facts -> the reasons a target may not be used, each with its fix.

Refusals stop a run before anything is written; cautions are printed next to results.
"""

from __future__ import annotations

from dataclasses import dataclass

from backupbench import units
from backupbench.devices.facts import DirectoryFacts

# A test file below both of these is likely to be served from controller or SSD-tier caches
# (Veeam KB2014 advises a file as large as a real restore point).
SMALL_FILE_BYTES = 8 * units.GiB
SMALL_FILE_FRACTION = 0.05
# Space we leave free beyond the test file, so the filesystem never fills up.
HEADROOM_BYTES = 64 * units.MiB


@dataclass(frozen=True)
class Reason:
    problem: str
    fix: str


_ELSEWHERE = "or name another directory"


def _unwritable(facts: DirectoryFacts) -> Reason | None:
    """Why nothing can be written in the directory: each cause with its own fix (a full disk
    is not fixed by another user)."""
    path, error = facts.path, facts.write_error
    if facts.kernel_interface:
        return Reason(f"{path} is on {facts.fs_type} ({facts.mount_point}), the kernel's own interface, not storage",
                      "name a directory on the storage to measure")
    if facts.read_only_mount or error == "EROFS":
        return Reason(f"{path} is on a read-only mount ({facts.mount_point})", "name a writable directory")
    if facts.free_inodes == 0:
        return Reason(f"{path} is on a filesystem with no free inodes (0 of {facts.total_inodes:,} left): "
                      "no file can be created there",
                      f"remove files there (or make the filesystem with more inodes), {_ELSEWHERE}")
    if error == "ENOSPC" or facts.free_bytes == 0:
        return _full(facts)
    if error == "EDQUOT":
        return Reason(f"{path}: the disk quota of user {facts.uid} there is used up",
                      f"remove some of the user's files, ask for a larger quota, {_ELSEWHERE}")
    if error in ("EACCES", "EPERM"):
        return Reason(f"{path} is not writable by user {facts.uid} (permission denied)",
                      f"run as a user who can write there, {_ELSEWHERE}")
    if not facts.writable:
        detail = f": {facts.direct_io_error}" if facts.direct_io_error else ""
        return Reason(f"{path} is not writable{detail}", "name another directory")
    return None


def _full(facts: DirectoryFacts) -> Reason:
    """One wording however the filesystem shows it is full: XFS refuses the probe's write
    (ENOSPC) with a few KiB still counted free, while ext4 keeps blocks for root, so a probe
    run as root still writes where statvfs gives everyone else 0 B."""
    free = f": {units.format_size(facts.free_bytes)} free of {units.format_size(facts.total_bytes or 0)}" \
        if facts.free_bytes is not None else ""
    return Reason(f"{facts.path} is on a full filesystem{free}", f"free some space there, {_ELSEWHERE}")


def directory_refusals(facts: DirectoryFacts, need_bytes: int, buffered: bool,
                       space_fix: str = "free some space or use a smaller --size") -> list[Reason]:
    path = facts.path
    if not facts.exists:
        return [Reason(f"{path} does not exist", "create it, or name an existing directory")]
    if not facts.is_dir:
        return [Reason(f"{path} is not a directory", "name the directory to put the test file in")]
    unwritable = _unwritable(facts)
    if unwritable is not None:
        return [unwritable]
    reasons = []
    if facts.free_bytes is not None and facts.free_bytes < need_bytes + HEADROOM_BYTES:
        reasons.append(Reason(
            f"not enough free space in {path}: {units.format_size(facts.free_bytes)} free, "
            f"{units.format_size(need_bytes + HEADROOM_BYTES)} needed",
            space_fix,
        ))
    if not buffered and facts.direct_io is False:
        reasons.append(Reason(
            f"{path} is on {facts.fs_type or 'a filesystem'} which refuses O_DIRECT",
            "rerun with --buffered (results are then marked buffered and include the page cache)",
        ))
    return reasons


def directory_cautions(facts: DirectoryFacts, file_size: int, buffered: bool) -> list[str]:
    notes = []
    if facts.memory_backed:
        notes.append(f"{facts.path} is on {facts.fs_type}: these figures measure memory, not storage.")
    small_for_fs = facts.total_bytes is not None and file_size < SMALL_FILE_FRACTION * facts.total_bytes
    if file_size < SMALL_FILE_BYTES and small_for_fs:
        notes.append(
            f"The test file ({units.format_size(file_size)}) is small for this storage "
            f"({units.format_size(facts.total_bytes or 0)}): caches may serve it. "
            "Use --size as large as a real restore point for figures you can plan with."
        )
    if buffered:
        # Whether the page cache can hold the file is said before the run (monitor/cache_guard.py).
        notes.append("Buffered I/O: figures include the page cache, not just the storage.")
    return notes
