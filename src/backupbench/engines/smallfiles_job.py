"""What the small-file engine is asked to do, as plain data, and what that needs on disk.

The workload (workloads/smallfiles.py) turns its options into a SmallFilesJob; the engine
knows nothing of options, presets or recipes.
"""

from __future__ import annotations

from dataclasses import dataclass

from backupbench.engines.content import DataContent

from backupbench import units

FLUSH_POLICIES: tuple[str, ...] = ("none", "fsync", "sync-end")
CREATE_PHASE = "create"
VERIFY_PHASE = "verify"
# Filesystem blocks are assumed to be 4 KiB when estimating the space a run occupies.
BLOCK = 4 * units.KiB
# Free space and inodes required on top of what the run occupies: metadata the estimate
# does not see (journal, extent trees, xattrs) and other writers on the filesystem.
HEADROOM_FRACTION = 0.05
HEADROOM_MIN_BYTES = 1 * units.MiB
HEADROOM_MIN_INODES = 16


def update_phase(number: int) -> str:
    """Name of update pass `number` (1-based): 'update-1', 'update-2', ..."""
    return f"update-{number}"


def phase_names(update_passes: int, verify: bool) -> tuple[str, ...]:
    return (CREATE_PHASE, *(update_phase(n) for n in range(1, update_passes + 1)),
            *((VERIFY_PHASE,) if verify else ()))


@dataclass(frozen=True)
class SmallFilesJob:
    """N files of S bytes in D folders: created, then rewritten in place once per further
    pattern, optionally read back and compared with the last pass. With content.kind ==
    "pattern" each pass writes its byte of `patterns`; otherwise fresh data with the content's
    ratios, different in every pass and file."""

    files: int
    file_size: int
    folders: int
    patterns: tuple[int, ...]
    threads: int
    flush: str  # one of FLUSH_POLICIES
    verify: bool = False
    content: DataContent = DataContent("pattern")

    @property
    def phases(self) -> tuple[str, ...]:
        return phase_names(len(self.patterns) - 1, self.verify)

    def bytes_needed(self) -> int:
        """Space the run occupies at its peak: every file rounded up to 4 KiB blocks, plus one
        block per folder and the root folder."""
        blocks_per_file = -(-self.file_size // BLOCK)
        return self.files * blocks_per_file * BLOCK + (self.folders + 1) * BLOCK

    def inodes_needed(self) -> int:
        """One inode per file and folder, and the run's root folder."""
        return self.files + self.folders + 1

    def required_free_bytes(self) -> int:
        """Free space required before the run starts: bytes_needed plus headroom."""
        need = self.bytes_needed()
        return need + max(HEADROOM_MIN_BYTES, int(need * HEADROOM_FRACTION))

    def required_free_inodes(self) -> int:
        need = self.inodes_needed()
        return need + max(HEADROOM_MIN_INODES, int(need * HEADROOM_FRACTION))
