"""Backup files as backup software writes them, on a real filesystem: containers of compressed
blocks, written, block-cloned or copied, and rewritten in place.

A backup file holds blocks of backup data, each compressed to its own size and stored from an
`align` boundary (Veeam's "align backup file data blocks", which block clone needs: FICLONERANGE
takes only ranges on the filesystem's block boundaries, a ZFS file's on its recordsize), so the
blocks are of varying size and a file's extents stop lining up with a restore's reads. A file is
written once, block after block (an increment, a rollback, an active full), or made of other
files' blocks (a synthetic full: cloned with FICLONERANGE, or read and written: copied, one call
per run of blocks that lie one after the other in their source). A full that a merge or a
reverse incremental rewrites in place puts a block's new version where the old one was when it
fits, else into the first gap big enough (what earlier versions left), else at its end: a
VBK container allocates so, and compacts to win its gaps back (not done here).

Every read and write is O_DIRECT (the disks' speed, not the page cache's) from page-aligned
buffers; the bytes written are slices of one buffer of random bytes made once, at random
places: incompressible, though the same bytes recur across blocks (no inline deduplication
here looks for them). Files are fsynced when the job is done with them. Knows nothing of
retention: engines/backup_repository.py says what to make.
"""

from __future__ import annotations

import bisect
import errno
import mmap
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

from backupbench import units
from backupbench.engines.clone import CLONE_RANGE, FICLONERANGE, clone_ioctl, used_bytes

O_DIRECT = getattr(os, "O_DIRECT", 0)
POOL_BYTES = 32 * units.MiB      # random bytes every write takes its slice of
COPY_CHUNK = 8 * units.MiB       # the most one read or write of a copy moves
MAX_STORED = 16 * units.MiB      # a stored block's most (the pool must hold it at any offset)
SETTLE_S = 0.05                  # between two readings of the space used that must agree
SETTLE_LIMIT_S = 10.0


def align_up(value: int, align: int) -> int:
    return -(-value // align) * align


@dataclass
class Tally:
    """What a job did on the disks: bytes written, read and cloned, and the time in each."""

    written: int = 0
    write_s: float = 0.0
    read: int = 0
    read_s: float = 0.0
    cloned: int = 0
    clone_calls: int = 0
    clone_s: float = 0.0


class Buffers:
    """The random bytes writes take (made once) and the buffer copies go through, both
    page-aligned as O_DIRECT needs."""

    def __init__(self, seed: int, pool_bytes: int = POOL_BYTES):
        self._pool = mmap.mmap(-1, pool_bytes)
        self._pool.write(random.Random(seed).randbytes(pool_bytes))
        self._copy = mmap.mmap(-1, COPY_CHUNK)
        self._rng = random.Random(seed + 1)
        self.pool = memoryview(self._pool)
        self.copy = memoryview(self._copy)

    def piece(self, length: int) -> memoryview:
        """`length` random bytes, from a page boundary of the pool."""
        start = self._rng.randrange(0, (len(self.pool) - length) // mmap.PAGESIZE + 1) * mmap.PAGESIZE
        return self.pool[start:start + length]

    def close(self) -> None:
        try:
            self.pool.release()
            self.copy.release()
            self._pool.close()
            self._copy.close()
        except BufferError:
            pass  # a failed write's traceback still holds a slice: the maps go with it, not over its error


class BackupFile:
    """One open file of the repository: its end, and the gaps inside it that earlier versions of
    its blocks left (for a full rewritten in place)."""

    def __init__(self, path: Path, tally: Tally):
        self.path = path
        self.tally = tally
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | O_DIRECT, 0o600)
        self.end = 0
        self.gaps: list[tuple[int, int]] = []   # (offset, length), by offset, none touching

    def append(self, length: int) -> int:
        offset, self.end = self.end, self.end + length
        return offset

    def place(self, old: tuple[int, int] | None, length: int) -> int:
        """Where a block's new version of `length` bytes goes: over `old` when it fits (its tail
        a gap), else into the first gap that holds it (`old` a gap now), else at the end."""
        if old is not None and length <= old[1]:
            self._free(old[0] + length, old[1] - length)
            return old[0]
        if old is not None:
            self._free(*old)
        for index, (offset, size) in enumerate(self.gaps):
            if size >= length:
                self.gaps[index:index + 1] = [(offset + length, size - length)] if size > length else []
                return offset
        return self.append(length)

    def _free(self, offset: int, length: int) -> None:
        if length <= 0:
            return
        index = bisect.bisect(self.gaps, (offset, length))
        if index < len(self.gaps) and self.gaps[index][0] == offset + length:
            length += self.gaps.pop(index)[1]
        if index and sum(self.gaps[index - 1]) == offset:
            offset, length = self.gaps[index - 1][0], self.gaps[index - 1][1] + length
            index -= 1
            self.gaps.pop(index)
        self.gaps.insert(index, (offset, length))

    @property
    def gap_bytes(self) -> int:
        return sum(size for _, size in self.gaps)

    def write(self, offset: int, data: memoryview) -> None:
        started = time.perf_counter()
        done = 0
        while done < len(data):
            done += os.pwrite(self.fd, data[done:], offset + done)
        self.tally.write_s += time.perf_counter() - started
        self.tally.written += len(data)

    def clone_from(self, source: "BackupFile", offset: int, length: int, at: int) -> None:
        """FICLONERANGE: `length` bytes of `source` from `offset` shared into this file at `at`."""
        started = time.perf_counter()
        clone_ioctl(self.fd, FICLONERANGE, CLONE_RANGE.pack(source.fd, offset, length, at), source.fd)
        self.tally.clone_s += time.perf_counter() - started
        self.tally.cloned += length
        self.tally.clone_calls += 1

    def copy_from(self, source: "BackupFile", offset: int, length: int, at: int, buffers: Buffers) -> None:
        """The same bytes read from `source` and written here: a copy, through the copy buffer."""
        for start in range(0, length, COPY_CHUNK):
            size = min(COPY_CHUNK, length - start)
            view = buffers.copy[:size]
            started = time.perf_counter()
            got = os.preadv(source.fd, [view], offset + start)
            self.tally.read_s += time.perf_counter() - started
            if got != size:
                raise OSError(errno.EIO, f"{source.path} ended at {offset + start + got:,} bytes, "
                                         f"{size - got:,} short of the block being copied")
            self.tally.read += size
            self.write(at + start, view)

    def sync(self) -> None:
        os.fsync(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def range_clone_refusal(directory: Path, align: int) -> str | None:
    """Why FICLONERANGE refuses ranges on `align` boundaries in `directory` (a ZFS file clones only
    on its recordsize), or None. Two anonymous O_TMPFILE files: nothing is left behind."""
    fds: list[int] = []
    try:
        for _ in range(2):
            fds.append(os.open(directory, os.O_TMPFILE | os.O_RDWR, 0o600))
        with mmap.mmap(-1, 3 * align) as block:
            block.write(random.Random(0).randbytes(3 * align))
            os.write(fds[0], block)
        clone_ioctl(fds[1], FICLONERANGE, CLONE_RANGE.pack(fds[0], align, align, 0), fds[0])
    except OSError as exc:
        return f"FICLONERANGE of {units.format_size(align)} at {units.format_size(align)}: {exc.strerror}"
    finally:
        for fd in fds:
            os.close(fd)
    return None


def settled_used_bytes(directory: Path) -> int:
    """Bytes in use on the filesystem of `directory` once what was just deleted is freed: XFS
    frees an unlinked file's extents a moment later, in the background, and btrfs at its next
    commit; syncfs and statvfs are read until two readings SETTLE_S apart agree."""
    deadline = time.monotonic() + SETTLE_LIMIT_S
    last = used_bytes(directory)
    while time.monotonic() < deadline:
        time.sleep(SETTLE_S)
        now = used_bytes(directory)
        if now == last:
            return now
        last = now
    return last
