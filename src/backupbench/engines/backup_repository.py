"""A backup repository on a real filesystem: which file holds each block's versions, and the
jobs backup software runs on them (engines/backup_files.py does the I/O).

The protected data is `blocks` blocks of the backup's block size; each version of a block is
stored compressed, its size drawn around the block size over the data reduction (`BlockShape`).
Each day changes a seeded share of the blocks (`Changes`: the same seed changes the same
blocks), optionally skewed: a hot share of the blocks takes most of the changes. The jobs:
- write: a new file of the given blocks, in block order (a full, an increment);
- synthetic full: a new file holding every block's newest version, each run of blocks that lie
  one after the other in the file holding them cloned (FICLONERANGE) or copied in one call;
- merge: an increment's blocks into the full, in place (forever-forward);
- rollback: the old versions of today's changed blocks copied out of the full into a new file,
  then the new versions written into the full, in place (reverse incremental);
- delete.
Which job runs when, and what is deleted, is the retention calendar's (retention.py), told by
the workload (workloads/aging.py).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from backupbench.engines.backup_files import MAX_STORED, BackupFile, Buffers, Tally, align_up


@dataclass(frozen=True)
class BlockShape:
    """The protected data's blocks and how each version is stored."""

    blocks: int
    mean: int           # a stored block's mean size before alignment: block size / reduction
    spread: float       # each stored size drawn evenly within mean x (1 -/+ spread)
    align: int
    cap: int            # a block never stores bigger than it reads: the block size, aligned up

    def length(self, rng: random.Random) -> int:
        return self._stored(self.mean * rng.uniform(1.0 - self.spread, 1.0 + self.spread))

    def _stored(self, drawn: float) -> int:
        return min(self.cap, MAX_STORED, max(self.align, align_up(round(drawn), self.align)))

    def mean_length(self) -> float:
        """A stored block's mean size: its even draw aligned up (and capped), averaged; what the
        repository plan's full and increment are at this scale (alignment costs space too)."""
        low, high = self.mean * (1.0 - self.spread), self.mean * (1.0 + self.spread)
        if high - low < 1:
            return float(self._stored(low))
        total, at = 0.0, low
        while at < high:
            # The stored size is one value over each alignment step: its middle says which.
            end = min(high, (at // self.align + 1) * self.align)
            total += (end - at) * self._stored((at + end) / 2)
            at = end
        return total / (high - low)

    @property
    def length_bounds(self) -> tuple[int, int]:
        """The smallest and the largest size a stored block can take."""
        return self._stored(self.mean * (1.0 - self.spread)), self._stored(self.mean * (1.0 + self.spread))


@dataclass
class Changes:
    """Each day's changed blocks and their new stored sizes, from a seed: a hot share of the
    blocks (seeded too) takes `hot_changes` of each day's changes when `hot_share` is given.
    `per_day` blocks change on average: a day changes its whole part, and one more block with
    the chance of its fraction (rounding each day would change 26 blocks for 25.6 every day)."""

    shape: BlockShape
    per_day: float
    seed: int
    hot_share: float = 0.0    # of the blocks, 0 to 1
    hot_changes: float = 0.0  # of each day's changes, 0 to 1
    _hot: list[int] = field(default_factory=list, init=False)
    _cold: list[int] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        blocks = self.shape.blocks
        hot = set(random.Random(self.seed * 7919 + 1).sample(range(blocks), round(blocks * self.hot_share)))
        self._hot = sorted(hot)
        self._cold = [block for block in range(blocks) if block not in hot] if hot else list(range(blocks))

    def first_full(self) -> list[int]:
        rng = random.Random(self.seed * 7919)
        return [self.shape.length(rng) for _ in range(self.shape.blocks)]

    def of_day(self, day: int) -> list[tuple[int, int]]:
        """(block, stored size) of the blocks day `day` changes, in block order."""
        rng = random.Random(self.seed * 7919 + 2 + day)
        whole = int(self.per_day)
        count = whole + (rng.random() < self.per_day - whole)
        hot = min(len(self._hot), round(count * self.hot_changes)) if self._hot else 0
        cold = min(len(self._cold), count - hot)
        chosen = rng.sample(self._hot, hot) + rng.sample(self._cold, cold)
        return [(block, self.shape.length(rng)) for block in sorted(chosen)]


@dataclass(frozen=True)
class Stored:
    """Where one version of a block lies."""

    file: str
    offset: int
    length: int


def _runs(sources: list[Stored]) -> list[tuple[int, int, Stored, int]]:
    """Blocks whose versions continue each other in one file, joined: (first block, end block,
    the first's version, bytes)."""
    runs: list[tuple[int, int, Stored, int]] = []
    for block, source in enumerate(sources):
        if runs:
            start, _, first, length = runs[-1]
            if first.file == source.file and first.offset + length == source.offset:
                runs[-1] = (start, block + 1, first, length + source.length)
                continue
        runs.append((block, block + 1, source, source.length))
    return runs


class Repository:
    """The files of one repository folder and where each block's newest version lies."""

    def __init__(self, folder: Path, shape: BlockShape, block_clone: bool, buffers: Buffers,
                 between: Callable[[], None] = lambda: None):
        self.folder = folder
        self.shape = shape
        self.block_clone = block_clone
        self.buffers = buffers
        self.between = between          # runs between blocks: a stop check
        self.tally = Tally()
        self.files: dict[str, BackupFile] = {}
        self.current: list[Stored] = []   # each block's newest version
        self.full: dict[str, list[Stored]] = {}   # a full rewritten in place: its own version of each block
        self.held: dict[str, list[tuple[int, Stored]]] = {}   # an increment's blocks, for its merge

    def _new(self, name: str) -> BackupFile:
        opened = BackupFile(self.folder / name, self.tally)
        self.files[name] = opened
        return opened

    def write(self, name: str, blocks: list[tuple[int, int]]) -> dict[int, Stored]:
        """A new file of `blocks` (block, stored size) in order, fresh data; they become the
        blocks' newest versions."""
        target = self._new(name)
        made = {}
        for index, (block, length) in enumerate(blocks):
            if index % 64 == 0:
                self.between()
            offset = target.append(length)
            target.write(offset, self.buffers.piece(length))
            made[block] = Stored(name, offset, length)
        target.sync()
        self.held[name] = sorted(made.items())
        if not self.current:
            self.current = [made[block] for block in range(self.shape.blocks)]
        for block, stored in made.items():
            self.current[block] = stored
        return made

    def active_full(self, name: str, changes: list[tuple[int, int]]) -> None:
        """Today's changes, then every block written anew: a full that shares nothing."""
        lengths = [stored.length for stored in self.current]
        for block, length in changes:
            lengths[block] = length
        self.write(name, list(enumerate(lengths)))

    def synthetic_full(self, name: str) -> None:
        """A new file of every block's newest version, cloned or copied from where it lies."""
        target = self._new(name)
        for index, (start, end, first, length) in enumerate(_runs(self.current)):
            if index % 64 == 0:
                self.between()
            at = target.append(length)
            self._move(self.files[first.file], first.offset, length, target, at)
            for block in range(start, end):
                stored = self.current[block]
                self.current[block] = Stored(name, stored.offset - first.offset + at, stored.length)
        target.sync()

    def _move(self, source: BackupFile, offset: int, length: int, target: BackupFile, at: int) -> None:
        if self.block_clone:
            target.clone_from(source, offset, length, at)
        else:
            target.copy_from(source, offset, length, at, self.buffers)

    def keep_in_place(self, name: str) -> None:
        """The full `name` is rewritten in place from now on (merge, rollback)."""
        self.full[name] = [Stored(name, s.offset, s.length) for s in self.current]

    def merge(self, full: str, increment: str) -> None:
        """The increment's blocks moved into the full (cloned or copied), each over its old
        version when it fits; the blocks whose newest version it held now lie in the full."""
        target, source, versions = self.files[full], self.files[increment], self.full[full]
        for index, (block, stored) in enumerate(self.held[increment]):
            if index % 64 == 0:
                self.between()
            old = versions[block]
            at = target.place((old.offset, old.length), stored.length)
            self._move(source, stored.offset, stored.length, target, at)
            versions[block] = Stored(full, at, stored.length)
            if self.current[block] == stored:
                self.current[block] = versions[block]
        target.sync()

    def rollback(self, full: str, name: str, changes: list[tuple[int, int]]) -> None:
        """Each changed block's old version copied out of the full into the rollback `name`,
        then its new version written into the full (over the old one when it fits)."""
        target, rollback, versions = self.files[full], self._new(name), self.full[full]
        for index, (block, length) in enumerate(changes):
            if index % 64 == 0:
                self.between()
            old = versions[block]
            rollback.copy_from(target, old.offset, old.length, rollback.append(old.length), self.buffers)
            at = target.place((old.offset, old.length), length)
            target.write(at, self.buffers.piece(length))
            versions[block] = self.current[block] = Stored(full, at, length)
        rollback.sync()
        target.sync()

    def delete(self, name: str) -> None:
        opened = self.files.pop(name)
        opened.close()
        os.unlink(opened.path)
        self.held.pop(name, None)

    def close(self) -> None:
        for opened in self.files.values():
            opened.close()


def _continues(before: Stored, after: Stored) -> bool:
    return before.file == after.file and before.offset + before.length == after.offset
