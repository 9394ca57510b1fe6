"""The five backup operations of Veeam KB2014, as fio access patterns.

Each operation says what a backup job does to the repository and how raw read/write
throughput becomes the speed the job sees ("effective speed"). Block size, direct I/O and
the engine are common to all and come from the suite options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from backupbench.units import KiB

# Veeam KB2014 tests with 512 KiB blocks: the size backup software typically writes.
KB2014_BLOCK_SIZE = 512 * KiB

Effective = Literal["write", "read", "mixed"]


@dataclass(frozen=True)
class Operation:
    name: str
    title: str
    rw: str
    iodepth: int
    effective: Effective
    # For a mixed pattern: I/Os the job issues for each block of backup data it processes.
    # Effective speed = (read + write) / ios_per_block.
    ios_per_block: int = 1
    rwmixwrite: int | None = None
    io_per_block_text: str = ""
    bound: Literal["", "upper", "lower"] = ""

    def effective_rate(self, read_bps: float, write_bps: float) -> float:
        if self.effective == "write":
            return write_bps
        if self.effective == "read":
            return read_bps
        return (read_bps + write_bps) / self.ios_per_block


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation(
            name="active-full", title="Active full / forward incremental",
            rw="write", iodepth=1, effective="write",
            io_per_block_text="1 write: new data is appended sequentially",
        ),
        Operation(
            name="synthetic-full", title="Synthetic full / forever-forward merge",
            rw="randrw", rwmixwrite=50, iodepth=4, effective="mixed", ios_per_block=2,
            io_per_block_text="1 read + 1 write: each block is read from the increment and written into the full",
        ),
        Operation(
            # The old block is read from the full, written to the rollback file, and the
            # new block overwrites it in the full: 2 writes for 1 read, hence 67 % writes.
            name="reverse-incremental", title="Reverse incremental",
            rw="randrw", rwmixwrite=67, iodepth=4, effective="mixed", ios_per_block=3,
            io_per_block_text="1 read + 2 writes: old block read from the full and written to the rollback, new block written into the full",
        ),
        Operation(
            name="restore-sequential", title="Restore, best case (no fragmentation)",
            rw="read", iodepth=1, effective="read", bound="upper",
            io_per_block_text="1 read, sequential",
        ),
        Operation(
            name="restore-random", title="Restore, worst case (fully fragmented)",
            rw="randread", iodepth=1, effective="read", bound="lower",
            io_per_block_text="1 read, random",
        ),
    )
}

OPERATION_NAMES = tuple(OPERATIONS)


def select(names: list[str] | tuple[str, ...]) -> list[Operation]:
    """Operations in suite order (writes before the restores that read their data)."""
    wanted = set(names)
    return [op for op in OPERATIONS.values() if op.name in wanted]
