"""First write vs overwrite (field note B): the allocation cost of thin LVs, sparse files
and copy-on-write filesystems shows as first-write slower than overwrite.

The same region is written sequentially three ways, each reported on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from backupbench.units import MiB

FIRST_WRITE_BLOCK_SIZE = 1 * MiB


@dataclass(frozen=True)
class Phase:
    name: str
    title: str
    rw: Literal["write", "read"]


PHASES = (
    Phase("first-write", "First write (blocks never written: allocation on thin LVs, sparse files, CoW)", "write"),
    Phase("overwrite", "Overwrite (the same blocks again: no allocation)", "write"),
    Phase("read", "Read back", "read"),
)
PHASE_NAMES = tuple(p.name for p in PHASES)

