"""Forked workers and their hot loops for the small-file engine.

Why processes and not threads: per file the work is three system calls (open, write or
read, close) of 10-70 us each, and between them a few microseconds of Python. With threads
the GIL changes hands at every one of those calls; measured on 2 cores, threads were on par
with forked workers on tmpfs but fell well behind on ext4 create/rewrite. So each phase
forks `threads` workers; each takes one contiguous chunk of the files and runs a tight
loop of os.open / os.write (or os.pwrite at offset 0, or os.readv) / os.close.

What a worker shares with the parent is one anonymous MAP_SHARED mapping of int64 slots:
a stop flag, per worker (files done, errno of the failure, mismatches, end time) and one
latency slot per file. The parent polls it for progress, and reads latencies and counts
from it when the workers are gone. CLOCK_MONOTONIC (time.monotonic_ns) is system-wide, so
the workers' end stamps and the parent's start stamp are on one clock.

Fork safety: a worker only makes system calls and writes to the shared mapping; it never
takes a lock another thread of the parent could hold, never returns into the parent's code
(it leaves with os._exit in every case), and it dies with the parent (PR_SET_PDEATHSIG).
SIGINT is blocked in the workers: Ctrl-C reaches the parent, which sets the stop flag;
workers stop after the file in hand and the parent reaps them (SIGKILL after a grace time).
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import select
import signal
import time
import warnings
from dataclasses import dataclass
from typing import Literal

from backupbench.engines.content import BlockSource

Kind = Literal["create", "rewrite", "verify"]

# Layout of the shared int64 slots.
STOP = 0
_HEADER = 8
_PER_WORKER = 8
DONE, ERRNO, MISMATCHES, END_NS = range(4)
# errno recorded when a worker failed with something other than OSError.
NOT_AN_OS_ERROR = -1
# A read or open failure that means "this file is not what was written": counted as a mismatch.
_VERIFY_MISMATCH_ERRNOS = frozenset({errno.ENOENT, errno.EIO, errno.EISDIR})

_PR_SET_PDEATHSIG = 1
try:
    _LIBC: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover - no libc to load (not Linux)
    _LIBC = None


@dataclass(frozen=True)
class Task:
    """One phase for the workers. `buffer` is the pattern written, or expected on verify;
    with a `source`, file i gets (or must hold) source.block(i) instead."""

    kind: Kind
    root: str
    paths: list[bytes]
    buffer: bytes
    fsync: bool = False
    # Fresh data per file (its length is the buffer's); None: every file gets `buffer`.
    source: BlockSource | None = None


@dataclass(frozen=True)
class WorkerReport:
    start: int
    end: int
    done: int
    errno: int  # 0: no failure
    mismatches: int
    end_ns: int  # 0: the worker did not get to the end of its loop
    exit_status: int | None  # os.waitpid status; None if it could not be collected

    @property
    def failed_at(self) -> int | None:
        """Index of the file the worker failed on."""
        return self.start + self.done if self.errno else None


def chunks(files: int, workers: int) -> list[tuple[int, int]]:
    """Contiguous [start, end) ranges, sizes differing by at most one file."""
    return [(files * w // workers, files * (w + 1) // workers) for w in range(workers)]


class Shared:
    """The shared mapping: control slots plus one latency slot per file."""

    def __init__(self, workers: int, files: int):
        self.workers = workers
        self.files = files
        self.latency_base = _HEADER + _PER_WORKER * workers
        self._map = mmap.mmap(-1, (self.latency_base + files) * 8)  # anonymous: MAP_SHARED
        self.ints = memoryview(self._map).cast("q")

    def slot(self, worker: int) -> int:
        return _HEADER + _PER_WORKER * worker

    def reset(self) -> None:
        self.ints[0:self.latency_base] = memoryview(bytes(self.latency_base * 8)).cast("q")

    def request_stop(self) -> None:
        self.ints[STOP] = 1

    def done_total(self) -> int:
        return sum(self.ints[self.slot(w) + DONE] for w in range(self.workers))

    def mismatches_total(self) -> int:
        return sum(self.ints[self.slot(w) + MISMATCHES] for w in range(self.workers))

    def latencies(self, ranges: list[tuple[int, int]]) -> list[int]:
        base = self.latency_base
        out: list[int] = []
        for start, end in ranges:
            out.extend(self.ints[base + start:base + end].tolist())
        return out

    def close(self) -> None:
        try:
            self.ints.release()
            self._map.close()
        except BufferError:  # a view is still referenced (a traceback): the GC unmaps it later
            pass


class Pool:
    """`workers` forked processes running one Task over their chunk of files."""

    def __init__(self, shared: Shared):
        self.shared = shared
        self.ranges = chunks(shared.files, shared.workers)
        self._pids: dict[int, int] = {}  # worker -> pid
        self._status: dict[int, int | None] = {}
        self._ready_r: int | None = None

    def start(self, task: Task) -> None:
        """Fork the workers; the caller resets the shared slots before a phase."""
        self._pids.clear()
        self._status.clear()
        read_end, write_end = os.pipe()  # O_CLOEXEC: exec'd programs never hold it
        self._ready_r = read_end
        parent = os.getpid()
        # Block SIGINT across fork so that a worker can never receive it; the parent restores
        # its mask at once, the worker keeps SIGINT blocked for its (short) life.
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            for worker, (start, end) in enumerate(self.ranges):
                with warnings.catch_warnings():
                    # Python >= 3.12 warns about fork() in a threaded process; the worker
                    # only makes system calls (see the module docstring).
                    warnings.simplefilter("ignore", DeprecationWarning)
                    pid = os.fork()
                if pid == 0:  # the worker: never returns
                    status = 1
                    try:
                        os.close(read_end)
                        status = _worker_main(task, self.shared, worker, start, end, parent)
                    finally:
                        os._exit(status)
                self._pids[worker] = pid
        finally:
            os.close(write_end)
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)

    def wait(self, timeout: float) -> bool:
        """True once every worker has exited (the pipe's write ends are all closed)."""
        if self._ready_r is None:
            return True
        readable, _, _ = select.select([self._ready_r], [], [], timeout)
        if readable and os.read(self._ready_r, 1) == b"":
            os.close(self._ready_r)
            self._ready_r = None
            return True
        return False

    def stop(self, grace_s: float = 5.0) -> None:
        """Ask the workers to stop after the file in hand; kill those that do not."""
        self.shared.request_stop()
        deadline = time.monotonic() + grace_s
        while not self.wait(max(0.0, min(0.1, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                for pid in self._pids.values():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                deadline = float("inf")  # now wait for the kills to land

    def reap(self) -> list[WorkerReport]:
        """Collect every worker (they must have exited) and what each reported."""
        if self._ready_r is not None:
            os.close(self._ready_r)
            self._ready_r = None
        for worker, pid in self._pids.items():
            if worker in self._status:
                continue
            try:
                _, status = os.waitpid(pid, 0)
                self._status[worker] = status
            except ChildProcessError:  # SIGCHLD ignored by the host program: reaped already
                self._status[worker] = None
        ints = self.shared.ints
        reports = []
        for worker, (start, end) in enumerate(self.ranges):
            slot = self.shared.slot(worker)
            reports.append(WorkerReport(
                start=start, end=end, done=ints[slot + DONE], errno=ints[slot + ERRNO],
                mismatches=ints[slot + MISMATCHES], end_ns=ints[slot + END_NS],
                exit_status=self._status.get(worker),
            ))
        return reports


def _worker_main(task: Task, shared: Shared, worker: int, start: int, end: int, parent: int) -> int:
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        return 1
    ints = shared.ints
    slot = shared.slot(worker)
    try:
        os.chdir(task.root)
        loop = _LOOPS[task.kind]
        loop(ints, slot, shared.latency_base, task, start, end)
    except OSError as exc:
        ints[slot + ERRNO] = exc.errno or NOT_AN_OS_ERROR
        ints[STOP] = 1
        return 1
    except BaseException:  # noqa: BLE001 - a worker process: any end is reported through shared memory
        ints[slot + ERRNO] = NOT_AN_OS_ERROR
        ints[STOP] = 1
        return 1
    ints[slot + END_NS] = time.monotonic_ns()
    return 0


# The hot loops. Everything they touch is bound to a local first; nothing is allocated per
# file on the normal path (the pattern buffer is built once per phase by the engine), but
# fresh data when the content asks for it.

def _create(ints: memoryview, slot: int, lat: int, task: Task, start: int, end: int) -> None:
    open_, write, close, fsync, clock = os.open, os.write, os.close, os.fsync, time.monotonic_ns
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    paths, buf, per_file_fsync, source = task.paths, task.buffer, task.fsync, task.source
    size = len(buf)
    done_slot = slot + DONE
    i = start
    while i < end:
        if ints[STOP]:
            return
        if source is not None:  # made before the clock starts: the file's latency is the storage's
            buf = source.block(i, size)
        t0 = clock()
        fd = open_(paths[i], flags, 0o644)
        try:
            n = write(fd, buf)
            if n != size:
                _write_rest(fd, buf, n)
            if per_file_fsync:
                fsync(fd)
        finally:
            close(fd)
        ints[lat + i] = clock() - t0
        i += 1
        ints[done_slot] = i - start


def _rewrite(ints: memoryview, slot: int, lat: int, task: Task, start: int, end: int) -> None:
    """Rewrite each file in place: no O_TRUNC, the whole file written at offset 0."""
    open_, pwrite, close, fsync, clock = os.open, os.pwrite, os.close, os.fsync, time.monotonic_ns
    flags = os.O_WRONLY | os.O_CLOEXEC
    paths, buf, per_file_fsync, source = task.paths, task.buffer, task.fsync, task.source
    size = len(buf)
    done_slot = slot + DONE
    i = start
    while i < end:
        if ints[STOP]:
            return
        if source is not None:
            buf = source.block(i, size)
        t0 = clock()
        fd = open_(paths[i], flags)
        try:
            n = pwrite(fd, buf, 0)
            if n != size:
                _write_rest(fd, buf, n)
            if per_file_fsync:
                fsync(fd)
        finally:
            close(fd)
        ints[lat + i] = clock() - t0
        i += 1
        ints[done_slot] = i - start


def _verify(ints: memoryview, slot: int, lat: int, task: Task, start: int, end: int) -> None:
    """Read each file; a mismatch is any file whose content is not exactly the buffer."""
    open_, readv, close, clock = os.open, os.readv, os.close, time.monotonic_ns
    flags = os.O_RDONLY | os.O_CLOEXEC
    paths, expected, source = task.paths, task.buffer, task.source
    size = len(expected)
    got = bytearray(size)
    spare = bytearray(1)  # filled only if the file is longer than expected
    buffers = [got, spare]
    done_slot, mismatch_slot = slot + DONE, slot + MISMATCHES
    mismatches = 0
    i = start
    while i < end:
        if ints[STOP]:
            return
        t0 = clock()
        try:
            fd = open_(paths[i], flags)
        except OSError as exc:
            if exc.errno not in _VERIFY_MISMATCH_ERRNOS:
                raise
            n = -1
        else:
            try:
                n = readv(fd, buffers)
                if 0 < n < size:
                    n = _read_rest(fd, got, spare, n)
            except OSError as exc:
                if exc.errno not in _VERIFY_MISMATCH_ERRNOS:
                    raise
                n = -1
            finally:
                close(fd)
        ints[lat + i] = clock() - t0
        if source is not None:
            expected = source.block(i, size)
        if n != size or got != expected:
            mismatches += 1
            ints[mismatch_slot] = mismatches
        i += 1
        ints[done_slot] = i - start


def _write_rest(fd: int, buf: bytes, written: int) -> None:
    """Finish a short write (a full filesystem gives one before ENOSPC)."""
    view = memoryview(buf)
    while written < len(buf):
        written += os.pwrite(fd, view[written:], written)


def _read_rest(fd: int, got: bytearray, spare: bytearray, n: int) -> int:
    view = memoryview(got)
    while n < len(got):
        more = os.preadv(fd, [view[n:], spare], n)
        if more == 0:
            return n
        n += more
    return n


_LOOPS = {"create": _create, "rewrite": _rewrite, "verify": _verify}
