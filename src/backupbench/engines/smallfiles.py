"""The small-file engine (field note E): create N files in D folders, rewrite them in place.

A run works inside ONE folder it creates, `<root_parent>/backupbench-smallfiles-<run_id>`,
and touches nothing else: file i is `d<i mod D>/f<i>` in it (e.g. d0007/f000123). Phases:

- "create": the folders, then every file written whole with the first pattern
  (O_CREAT|O_EXCL, write).
- "update-1", "update-2", ...: every file rewritten IN PLACE with the next pattern: opened
  without O_TRUNC and written whole with pwrite at offset 0, so each block of the file is
  overwritten where it lies. That is what field note E measures: after a snapshot the first
  write of each block pays the copy-on-write.
- "verify" (optional): every file read back; a file whose content is not exactly the last
  pattern (or that is missing or unreadable) counts as a mismatch.

Per file the engine times open + write (+ fsync with flush "fsync") + close, or open + read
+ close on verify, and reports p50/p99. A phase's time runs from right after its start
callback (the folders included, for create) to the last worker's last file, plus the
end-of-phase syncfs with flush "sync-end" (also reported alone as sync_seconds). Before
verify, outside its time, the filesystem is synced and every file's cached pages dropped
(posix_fadvise DONTNEED drops clean pages only, hence the sync first), so verify reads what
storage holds, not what the page cache kept of the last pass. Files are split over `threads`
forked worker processes (smallfiles_workers.py says why).

Progress: on_phase(phase, 0.0, "") when a phase starts, then about every POLL_SECONDS with
the files done so far (capped at 0.99, also while the sync runs) and the current rate,
and on_phase(phase, 1.0, final figures) when it has ended. It is called from the thread
that called run(); whatever it raises stops the run (KeyboardInterrupt -> Interrupted).

The engine refuses before creating anything when the filesystem is read-only or lacks free
space or inodes for the run plus headroom. Whatever happens after the tagged folder is
created - success, a full filesystem, Ctrl-C, a failing callback - the folder is removed
(unless keep=True) before the error is raised; errors carry the results of the phases done
so far, the interrupted one marked complete=False, as `.partial`.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import shutil
import threading
import time
from pathlib import Path
from typing import Callable

from backupbench import units
from backupbench.artefacts import TAG, ArtefactName
from backupbench.hostfiles import HostFiles
from backupbench.engines.smallfiles_results import (PhaseFailed, PhaseResult, failure_fix, failure_message, final_detail,
                                                      how_it_ended, path_of, phase_result, progress_detail)
from backupbench.engines.content import BlockSource
from backupbench.engines.smallfiles_workers import Pool, Shared, Task, WorkerReport
from backupbench.errors import EngineError, InputError, Interrupted, RefusedError
from backupbench.engines.smallfiles_job import CREATE_PHASE, VERIFY_PHASE, SmallFilesJob, update_phase

# Called with (phase name, fraction of the phase done 0..1, short detail such as "12,345 files/s").
PhaseCallback = Callable[[str, float, str], None]

FOLDER = ArtefactName(f"{TAG}-smallfiles-{{}}", "small-file folder")
POLL_SECONDS = 0.25
STOP_GRACE_SECONDS = 5.0
# Until a phase has ended (its sync included), progress stays below 1.0.
_RUNNING_CAP = 0.99
# Matched whole (fullmatch): `$` would also match before a final newline.
_RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")

try:
    _LIBC: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover
    _LIBC = None


def folder_name(run_id: str) -> str:
    return FOLDER.of(run_id)


def file_paths(job: SmallFilesJob) -> list[bytes]:
    """Relative path of every file, index = file number: b'd0007/f000123'."""
    fw = max(6, len(str(job.files - 1)))
    dw = max(4, len(str(job.folders - 1)))
    folders = job.folders
    return [b"d%0*d/f%0*d" % (dw, i % folders, fw, i) for i in range(job.files)]


def folder_paths(job: SmallFilesJob) -> list[bytes]:
    dw = max(4, len(str(job.folders - 1)))
    return [b"d%0*d" % (dw, d) for d in range(job.folders)]


def pattern_buffer(pattern: int, size: int) -> bytes:
    return bytes([pattern]) * size


class SmallFilesEngine:
    name = "smallfiles"

    def __init__(self, poll_seconds: float = POLL_SECONDS, stop_grace_seconds: float = STOP_GRACE_SECONDS):
        self.poll_seconds = poll_seconds
        # How long stopped workers get to finish the file in hand before they are killed.
        self.stop_grace_seconds = stop_grace_seconds

    # ---- refusal -------------------------------------------------------------------------
    def check(self, job: SmallFilesJob, root_parent: Path) -> None:
        """Refuse before anything is created: read-only filesystem, too little space or inodes."""
        parent = Path(root_parent)
        if not parent.is_dir():
            raise InputError(f"{parent} is not a folder", fix="name an existing folder on the storage to test")
        stat = os.statvfs(parent)
        if stat.f_flag & os.ST_RDONLY:
            raise RefusedError(f"{parent} is on a read-only filesystem",
                               fix="choose a folder on a writable filesystem")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise RefusedError(f"cannot create files in {parent} (permission denied)",
                               fix="choose a folder you can write to")
        free = stat.f_bavail * stat.f_frsize
        need = job.required_free_bytes()
        if free < need:
            raise RefusedError(
                f"not enough free space in {parent}: {job.files:,} files of "
                f"{units.format_size(job.file_size)} need {units.format_size(need)} with headroom, "
                f"{units.format_size(free)} is free",
                fix="free space, choose another folder, or use fewer or smaller files",
            )
        # f_files == 0: the filesystem has no fixed inode count (btrfs, ZFS).
        if stat.f_files > 0:
            need_inodes = job.required_free_inodes()
            if stat.f_favail < need_inodes:
                raise RefusedError(
                    f"not enough free inodes in {parent}: the run needs {need_inodes:,} "
                    f"({job.inodes_needed():,} files and folders with headroom), {stat.f_favail:,} are free",
                    fix="choose another filesystem or use fewer files",
                )

    # ---- the run -------------------------------------------------------------------------
    def run(self, job: SmallFilesJob, root_parent: Path, run_id: str, on_phase: PhaseCallback,
            keep: bool = False, on_result: Callable[[PhaseResult], None] | None = None) -> list[PhaseResult]:
        """on_result, if given, gets each phase's result as soon as the phase is done."""
        if not _RUN_ID_RE.fullmatch(run_id):
            raise InputError(f"run id {run_id!r} cannot name a folder",
                             fix="use letters, digits, '.', '_' and '-'")
        self.check(job, root_parent)
        root = Path(root_parent) / folder_name(run_id)
        try:
            os.mkdir(root, 0o755)
        except FileExistsError:
            raise RefusedError(f"{root} already exists",
                               fix="remove it (backupbench cleanup) or use another run id") from None
        except OSError as exc:
            if exc.errno == errno.EROFS:
                raise RefusedError(f"{root_parent} is on a read-only filesystem",
                                   fix="choose a folder on a writable filesystem") from None
            raise EngineError(f"cannot create {root}: {exc.strerror}") from exc

        # From here on the folder is ours: every way out removes it (unless keep).
        results: list[PhaseResult] = []
        try:
            self._run_phases(job, root, on_phase, results, on_result)
        except PhaseFailed as failed:
            removed = _remove(root, keep)
            error = EngineError(failure_message(failed, removed), fix=failure_fix(failed.errno))
            error.partial = results  # type: ignore[attr-defined]
            raise error from None
        except (KeyboardInterrupt, Interrupted):
            removed = _remove(root, keep)
            where = results[-1] if results else None
            done = f" in phase {where.name} after {where.files:,} files" if where else ""
            error = Interrupted(f"small-file run interrupted{done}; {removed}")
            error.partial = results  # type: ignore[attr-defined]
            raise error from None
        except BaseException as exc:
            _remove(root, keep)
            try:
                exc.partial = results  # type: ignore[attr-defined]
            except AttributeError:  # pragma: no cover - exceptions with __slots__
                pass
            raise
        removed = _remove(root, keep)
        if not keep and root.exists():
            error = EngineError(f"the run finished but {removed}", fix=f"remove it by hand: rm -r {root}")
            error.partial = results  # type: ignore[attr-defined]
            raise error
        return results

    def _run_phases(self, job: SmallFilesJob, root: Path, on_phase: PhaseCallback,
                    results: list[PhaseResult], on_result: Callable[[PhaseResult], None] | None) -> None:
        paths = file_paths(job)
        workers = min(job.threads, job.files)
        shared = Shared(workers, job.files)
        fsync = job.flush == "fsync"
        phases = [(CREATE_PHASE, "create", 0)]
        phases += [(update_phase(n), "rewrite", n) for n in range(1, len(job.patterns))]
        if job.verify:
            phases.append((VERIFY_PHASE, "verify", len(job.patterns) - 1))
        try:
            for name, kind, number in phases:
                if kind == "verify":
                    _drop_cached(root, paths)
                # The pattern buffer is built once per phase, outside the timed part; fresh
                # data differs per pass (the pass number seeds it) and per file.
                source = None if job.content.constant else BlockSource(job.content, seed=number)
                task = Task(kind, str(root), paths, pattern_buffer(job.patterns[number], job.file_size),
                            fsync and kind != "verify", source)
                self._phase(name, task, job, root, shared, on_phase, results)
                if on_result is not None:
                    on_result(results[-1])
        finally:
            shared.close()

    def _phase(self, name: str, task: Task, job: SmallFilesJob, root: Path, shared: Shared,
               on_phase: PhaseCallback, results: list[PhaseResult]) -> None:
        shared.reset()
        pool = Pool(shared)
        started = time.monotonic_ns()
        sync_ns = 0
        reports: list[WorkerReport] | None = None
        try:
            on_phase(name, 0.0, "")
            started = time.monotonic_ns()
            if task.kind == "create":
                _make_folders(root, job, name)
            pool.start(task)
            last_done, last_at = 0, started
            while not pool.wait(self.poll_seconds):
                now, done = time.monotonic_ns(), shared.done_total()
                rate = (done - last_done) / max(1e-9, (now - last_at) / 1e9)
                last_done, last_at = done, now
                on_phase(name, min(_RUNNING_CAP, done / job.files), progress_detail(rate, task, shared))
            reports = pool.reap()
            failed = next((r for r in reports if r.errno), None)
            if failed is not None:
                raise PhaseFailed(name, failed.errno, path_of(task, failed), sum(r.done for r in reports))
            if any(r.done != r.end - r.start for r in reports):
                raise EngineError(f"a worker of phase {name} {how_it_ended(reports)} "
                                  f"({sum(r.done for r in reports):,} of {job.files:,} files done)",
                                  fix="check the kernel log (dmesg) for the out-of-memory killer")
            ended = max(r.end_ns for r in reports)
            if job.flush == "sync-end" and task.kind != "verify":
                sync_ns = self._sync(root, name, on_phase)
            results.append(phase_result(name, job, task, shared, pool, reports,
                                   ended - started + sync_ns, sync_ns, complete=True))
        except BaseException:
            if reports is None:
                pool.stop(self.stop_grace_seconds)
                reports = pool.reap()
            seconds_ns = time.monotonic_ns() - started
            results.append(phase_result(name, job, task, shared, pool, reports, seconds_ns, sync_ns, complete=False))
            raise
        last = results[-1]
        on_phase(name, 1.0, final_detail(last))

    def _sync(self, root: Path, name: str, on_phase: PhaseCallback) -> int:
        """syncfs() the filesystem holding `root`; returns the nanoseconds it took.

        The call runs in a helper thread so that a long flush (minutes, on a slow disk
        under snapshots) keeps reporting progress and does not hold up Ctrl-C; an
        abandoned flush finishes on its own in the kernel.
        """
        outcome: dict[str, object] = {}
        finished = threading.Event()

        def flush() -> None:
            started = time.monotonic_ns()
            try:
                _syncfs(root)
            except OSError as exc:
                outcome["error"] = exc
            outcome["ns"] = time.monotonic_ns() - started
            finished.set()

        on_phase(name, _RUNNING_CAP, "syncing to storage")
        threading.Thread(target=flush, name="backupbench-syncfs", daemon=True).start()
        while not finished.wait(self.poll_seconds):
            on_phase(name, _RUNNING_CAP, f"syncing to storage, {_dirty_mib():,.0f} MiB to write")
        error = outcome.get("error")
        if isinstance(error, OSError):
            raise PhaseFailed(name, error.errno or 0, None, 0, during="sync")
        return int(outcome["ns"])  # type: ignore[call-overload]


def _syncfs(root: Path) -> None:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        syncfs = getattr(_LIBC, "syncfs", None)
        if syncfs is None:  # pragma: no cover - no syncfs(2): flush everything
            os.sync()
        elif syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
    finally:
        os.close(fd)


def _drop_cached(root: Path, paths: list[bytes]) -> None:
    """Write every file back, then drop its cached pages: verify then reads from storage."""
    _syncfs(root)
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC, dir_fd=folder)
            except OSError:
                continue  # a missing or unreadable file: verify counts it as a mismatch
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    finally:
        os.close(folder)


def _dirty_mib() -> float:
    """Dirty and under-writeback page cache, machine-wide."""
    meminfo = HostFiles().meminfo()
    return (meminfo.get("Dirty", 0) + meminfo.get("Writeback", 0)) / 1024


def _make_folders(root: Path, job: SmallFilesJob, phase: str) -> None:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for folder in folder_paths(job):
            try:
                os.mkdir(folder, 0o755, dir_fd=fd)
            except OSError as exc:
                raise PhaseFailed(phase, exc.errno or 0, folder.decode(), 0) from None
    finally:
        os.close(fd)


def _remove(root: Path, keep: bool) -> str:
    """Remove the run's folder (only it); returns what happened, for messages."""
    if keep:
        return f"kept {root}"
    for _ in range(3):
        try:
            shutil.rmtree(root)
            return f"removed {root}"
        except FileNotFoundError:
            return f"removed {root}"
        except KeyboardInterrupt:
            continue  # finish the cleanup: the run is being stopped already
        except OSError as exc:
            return f"could not remove {root}: {exc.strerror or exc}"
    return f"could not remove {root}: interrupted"
