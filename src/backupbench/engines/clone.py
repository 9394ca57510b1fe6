"""Block cloning and extent maps through the kernel's own ioctls: FICLONE / FICLONERANGE
(a reflink copy: the new file shares the source's extents until either is written) and
FIEMAP (which extents a file has, and which of them are shared).

No external program: `cp --reflink` would hide the per-call cost, and `filefrag` prints
text. Knows nothing of workloads; the block-clone workload drives it.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import mmap
import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

# linux/fs.h: _IOW(0x94, 9, int), _IOW(0x94, 13, struct file_clone_range),
# _IOWR('f', 11, struct fiemap).
FICLONE = 0x40049409
FICLONERANGE = 0x4020940D
FS_IOC_FIEMAP = 0xC020660B
CLONE_RANGE = struct.Struct("=qQQQ")          # src_fd, src_offset, src_length, dest_offset
FIEMAP_HEADER = struct.Struct("=QQIIII")      # start, length, flags, mapped, count, reserved
FIEMAP_EXTENT = struct.Struct("=QQQQQIIII")   # logical, physical, length, 2 reserved, flags, 3 reserved
FIEMAP_FLAG_SYNC = 0x1
FIEMAP_MAX_OFFSET = 2**64 - 1
FIEMAP_EXTENT_LAST = 0x1
FIEMAP_EXTENT_UNKNOWN = 0x2
FIEMAP_EXTENT_DELALLOC = 0x4
FIEMAP_EXTENT_SHARED = 0x2000
EXTENTS_PER_CALL = 1024
PROBE_BYTES = 64 * 1024  # more than any inline extent (btrfs keeps up to 2 KiB in metadata)
_LIBC = ctypes.CDLL(None, use_errno=True)
BUSY_POLL_S = 0.05
BUSY_LIMIT_S = 30.0


@dataclass(frozen=True)
class Extent:
    logical: int
    physical: int
    length: int
    flags: int

    @property
    def shared(self) -> bool:
        return bool(self.flags & FIEMAP_EXTENT_SHARED)

    @property
    def last(self) -> bool:
        return bool(self.flags & FIEMAP_EXTENT_LAST)


@dataclass(frozen=True)
class ExtentSummary:
    """A file's extent map in figures: how many extents, how many bytes shared with other files."""

    extents: int          # physically contiguous runs, as filefrag counts them
    records: int          # FIEMAP records (split where the shared state changes, too)
    mapped_bytes: int
    shared_bytes: int
    shared_extents: int   # records flagged shared

    @property
    def unique_bytes(self) -> int:
        """Bytes only this file holds: what it costs on disk beyond what it shares."""
        return self.mapped_bytes - self.shared_bytes


@dataclass(frozen=True)
class CloneResult:
    seconds: float   # time in the clone ioctls
    calls: int
    bytes: int       # logical bytes cloned


def parse_fiemap(buffer: bytes) -> list[Extent]:
    """The extents of one FIEMAP answer (header + fm_mapped_extents records)."""
    _, _, _, mapped, _, _ = FIEMAP_HEADER.unpack_from(buffer, 0)
    found = []
    for index in range(mapped):
        logical, physical, length, _, _, flags, _, _, _ = FIEMAP_EXTENT.unpack_from(
            buffer, FIEMAP_HEADER.size + index * FIEMAP_EXTENT.size)
        found.append(Extent(logical, physical, length, flags))
    return found


def fiemap_request(start: int, count: int = EXTENTS_PER_CALL, flags: int = FIEMAP_FLAG_SYNC) -> bytearray:
    buffer = bytearray(FIEMAP_HEADER.size + count * FIEMAP_EXTENT.size)
    FIEMAP_HEADER.pack_into(buffer, 0, start, FIEMAP_MAX_OFFSET - start, flags, 0, count, 0)
    return buffer


def extents(fd: int) -> list[Extent]:
    """Every extent of the open file, first flushing its dirty data (FIEMAP_FLAG_SYNC)."""
    found: list[Extent] = []
    start = 0
    while True:
        request = fiemap_request(start)
        fcntl.ioctl(fd, FS_IOC_FIEMAP, request, True)  # the kernel fills the buffer in place
        answer = parse_fiemap(bytes(request))
        found += answer
        if not answer or answer[-1].last:
            return found
        start = answer[-1].logical + answer[-1].length


def file_extents(path: Path) -> list[Extent]:
    fd = os.open(path, os.O_RDONLY)
    try:
        return extents(fd)
    finally:
        os.close(fd)


def contiguous_runs(found: Iterable[Extent]) -> int:
    """Extents once records that continue each other on disk (logically and physically) are
    joined: the number of places a sequential read must seek to."""
    runs, end = 0, None
    for extent in sorted(found, key=lambda e: e.logical):
        if end != (extent.logical, extent.physical):
            runs += 1
        end = (extent.logical + extent.length, extent.physical + extent.length)
    return runs


def summarize(found: Iterable[Extent]) -> ExtentSummary:
    found = list(found)
    shared = [extent for extent in found if extent.shared]
    return ExtentSummary(extents=contiguous_runs(found), records=len(found), mapped_bytes=sum(e.length for e in found),
                         shared_bytes=sum(e.length for e in shared), shared_extents=len(shared))


def clone_range(src_fd: int, dst_fd: int, offset: int, length: int) -> None:
    """FICLONERANGE: `length` bytes of the source at `offset` into the destination, same offset."""
    clone_ioctl(dst_fd, FICLONERANGE, CLONE_RANGE.pack(src_fd, offset, length, offset), src_fd)


def syncfs(fd: int) -> None:
    """syncfs(2) of the filesystem holding `fd`."""
    if _LIBC.syncfs(fd) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def clone_ioctl(dst_fd: int, request: int, argument: int | bytes, src_fd: int) -> None:
    """FICLONE or FICLONERANGE. ZFS refuses to clone a block its open transaction group still
    holds (EAGAIN; syncfs only commits its intent log): the call is made again until the group is
    written out, every BUSY_POLL_S, at most BUSY_LIMIT_S (zfs_txg_timeout is 5 s), as ZFS itself
    waits with zfs_bclone_wait_dirty=1. The wait is part of the call's time: there a clone costs it."""
    deadline = None
    while True:
        try:
            fcntl.ioctl(dst_fd, request, argument)
            return
        except BlockingIOError:
            if deadline is None:
                syncfs(src_fd)   # what other filesystems would need, were they ever busy
                deadline = time.monotonic() + BUSY_LIMIT_S
            elif time.monotonic() >= deadline:
                raise
            time.sleep(BUSY_POLL_S)


def ranges(size: int, per_call: int | None) -> list[tuple[int, int]]:
    """(offset, length) of each FICLONERANGE call covering `size` bytes; None: one call."""
    step = per_call or size
    return [(offset, min(step, size - offset)) for offset in range(0, size, step)] if size else []


def clone_file(source: Path, dest: Path, per_call: int | None = None,
               progress: Callable[[float], None] = lambda fraction: None,
               between: Callable[[], None] = lambda: None) -> CloneResult:
    """A new file `dest` sharing every extent of `source`, cloned `per_call` bytes at a time
    with FICLONERANGE (None: the whole file in one FICLONE call). Only the ioctls are timed; `between` runs between
    calls (a stop check), outside the timing."""
    size = source.stat().st_size
    src_fd = os.open(source, os.O_RDONLY)
    try:
        dst_fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            spent, done = 0.0, ranges(size, per_call)
            for index, (offset, length) in enumerate(done):
                between()
                started = time.perf_counter()
                if per_call is None:  # the whole file: FICLONE, exactly what `cp --reflink` asks
                    clone_ioctl(dst_fd, FICLONE, src_fd, src_fd)
                else:
                    clone_range(src_fd, dst_fd, offset, length)
                spent += time.perf_counter() - started
                progress((index + 1) / len(done))
        finally:
            os.close(dst_fd)
    finally:
        os.close(src_fd)
    return CloneResult(seconds=spent, calls=len(done), bytes=size)


def reflink_refusal(directory: Path) -> str | None:
    """Why files in `directory` cannot be block-cloned, or None if they can. Probes with two
    anonymous O_TMPFILE files: nothing is left behind, whatever happens to this process."""
    try:
        source = os.open(directory, os.O_TMPFILE | os.O_RDWR, 0o600)
    except OSError as exc:
        return f"cannot create a probe file there ({exc.strerror})"
    try:
        with mmap.mmap(-1, PROBE_BYTES) as block:
            os.write(source, block)
        dest = os.open(directory, os.O_TMPFILE | os.O_RDWR, 0o600)
        try:
            clone_ioctl(dest, FICLONE, source, source)
        except OSError as exc:
            if exc.errno in (errno.EOPNOTSUPP, errno.ENOTTY, errno.EINVAL, errno.EXDEV):
                return f"the filesystem cannot clone blocks (FICLONE: {exc.strerror})"
            return f"FICLONE failed: {exc.strerror}"
        finally:
            os.close(dest)
    finally:
        os.close(source)
    return None




def used_bytes(directory: Path) -> int:
    """Bytes in use on the filesystem holding `directory`, after syncfs(): delayed allocation
    and (btrfs) the open transaction are on disk, so statvfs counts them."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        syncfs(fd)
        stats = os.fstatvfs(fd)
    finally:
        os.close(fd)
    return (stats.f_blocks - stats.f_bfree) * stats.f_frsize
