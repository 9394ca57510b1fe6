"""Where an existing file's bytes lie on its disk: the extent map a restore of it meets.

A restore reads a backup file in order (sequential, the upper bound) or block by block wherever
the job asks (random, the lower bound, KB2014). On a spinning disk every place where the next
bytes are not right after the last ones costs a seek: the file's *jumps*. A fresh, contiguous
file has none; a synthetic full built by block clone, or a file written while its filesystem was
full of holes, has thousands. This module reads the map with FIEMAP (engines/clone.py's parser)
and turns it into those figures:
- extents: physically contiguous runs (records that continue each other are one), mapped bytes;
- shared: records the filesystem flags shared with other files (reflink, block clone);
- jumps: going through the file in logical order, every run that does not start where the last
  one ended on disk, with the distance between them (bytes, signed: forwards or back);
- holes: logical gaps (a sparse file), read as zeros without touching the disk.

Read-only: the file is opened O_RDONLY, and FIEMAP is asked *without* FIEMAP_FLAG_SYNC, which
would write the file's dirty pages out: a user's backup file is never written, not even
flushed, by backupbench. Dirty data (a file still being written) has no physical place yet;
such extents are counted `unplaced` and make the map unreliable, which the caller refuses.
"""

from __future__ import annotations

import fcntl
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from backupbench.engines.clone import (FIEMAP_EXTENT_DELALLOC, FIEMAP_EXTENT_UNKNOWN, FS_IOC_FIEMAP, Extent,
                                       fiemap_request, parse_fiemap)

# How many runs the stored map keeps for drawing (the figures count every one): a picture of a
# file shows no more than a few thousand segments anyway.
DRAWN_RUNS = 4000


@dataclass(frozen=True)
class Run:
    """A physically contiguous stretch of the file: logical offset, disk offset, length, shared."""

    logical: int
    physical: int
    length: int
    shared: bool = False


@dataclass(frozen=True)
class FileMap:
    path: str
    size: int
    runs: tuple[Run, ...]
    unplaced: int = 0                  # extents with no place on disk yet (delayed allocation)
    jumps: tuple[int, ...] = field(default=())   # signed distances, in logical order

    @property
    def extents(self) -> int:
        """Physically contiguous stretches, as filefrag counts them (a run split only where its
        shared state changes is one extent)."""
        return sum(1 for index, run in enumerate(self.runs)
                   if index == 0 or not _continues(self.runs[index - 1], run))

    @property
    def mapped_bytes(self) -> int:
        return sum(run.length for run in self.runs)

    @property
    def shared_bytes(self) -> int:
        return sum(run.length for run in self.runs if run.shared)

    @property
    def shared_extents(self) -> int:
        return sum(1 for run in self.runs if run.shared)

    @property
    def holes(self) -> int:
        """Logical gaps between runs (and before the first): parts of the file with no disk."""
        gaps, end = 0, 0
        for run in self.runs:
            gaps += run.logical > end
            end = run.logical + run.length
        return gaps

    @property
    def mean_extent_bytes(self) -> float:
        return self.mapped_bytes / self.extents if self.extents else 0.0

    @property
    def median_jump_bytes(self) -> float:
        return float(statistics.median(abs(j) for j in self.jumps)) if self.jumps else 0.0

    def figures(self) -> dict[str, float]:
        """The map in the store's figures (names in results/model.FIGURE_UNITS)."""
        return {"file_bytes": float(self.size), "file_extents": float(self.extents),
                "file_mean_extent_bytes": self.mean_extent_bytes, "file_shared_bytes": float(self.shared_bytes),
                "file_shared_extents": float(self.shared_extents), "file_jumps": float(len(self.jumps)),
                "file_median_jump_bytes": self.median_jump_bytes, "file_holes": float(self.holes)}


def _continues(before: Run, after: Run) -> bool:
    return (before.logical + before.length == after.logical
            and before.physical + before.length == after.physical)


def runs_of(extents: list[Extent]) -> tuple[tuple[Run, ...], int]:
    """FIEMAP's records joined into runs (a record that continues the last one logically and on
    disk, with the same shared state, is the same run); and how many have no place yet."""
    runs: list[Run] = []
    unplaced = 0
    for extent in sorted(extents, key=lambda e: e.logical):
        if extent.flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC):
            unplaced += 1
            continue
        last = runs[-1] if runs else None
        if (last is not None and last.shared == extent.shared and last.logical + last.length == extent.logical
                and last.physical + last.length == extent.physical):
            runs[-1] = Run(last.logical, last.physical, last.length + extent.length, last.shared)
        else:
            runs.append(Run(extent.logical, extent.physical, extent.length, extent.shared))
    return tuple(runs), unplaced


def jumps_of(runs: tuple[Run, ...]) -> tuple[int, ...]:
    """Where a sequential read moves the head: from each run's end on disk to the next run's
    start, in the file's order, when they are not the same place (shared-state splits that stay
    in place are no jump)."""
    found = []
    for before, after in zip(runs, runs[1:]):
        distance = after.physical - (before.physical + before.length)
        if distance:
            found.append(distance)
    return tuple(found)


def read_extents(path: Path) -> list[Extent]:
    """Every extent of the file, without syncing it (see the module doc)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        found: list[Extent] = []
        start = 0
        while True:
            request = fiemap_request(start, flags=0)
            fcntl.ioctl(fd, FS_IOC_FIEMAP, request, True)
            answer = parse_fiemap(bytes(request))
            found += answer
            if not answer or answer[-1].last:
                return found
            start = answer[-1].logical + answer[-1].length
    finally:
        os.close(fd)


def file_map(path: Path) -> FileMap:
    """The file's map; OSError when the filesystem has no FIEMAP (tmpfs, NFS, ...)."""
    runs, unplaced = runs_of(read_extents(path))
    return FileMap(str(path), os.stat(path).st_size, runs, unplaced, jumps_of(runs))


def drawn_runs(found: FileMap, limit: int = DRAWN_RUNS) -> tuple[Run, ...]:
    """At most `limit` runs for a picture: every one when fewer, else an even pick across the file
    (the first and last kept), so its shape survives."""
    runs = found.runs
    if len(runs) <= limit:
        return runs
    step = (len(runs) - 1) / (limit - 1)
    return tuple(runs[round(i * step)] for i in range(limit))
