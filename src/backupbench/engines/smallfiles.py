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
end-of-phase syncfs with flush "sync-end" (also reported alone as sync_seconds). Verify
reads through the page cache: it checks content, it does not measure read speed. Files
are split over `threads` forked worker processes (smallfiles_workers.py says why).

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
import signal
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from backupbench import units
from backupbench.hostfiles import HostFiles
from backupbench.engines.smallfiles_workers import Pool, Shared, Task, WorkerReport
from backupbench.stats import nearest_rank
from backupbench.errors import EngineError, InputError, Interrupted, RefusedError
from backupbench.workloads.smallfiles import (
    CREATE_PHASE,
    VERIFY_PHASE,
    SmallFilesSpec,
    inodes_needed,
    required_free_bytes,
    required_free_inodes,
    update_phase,
)

# Called with (phase name, fraction of the phase done 0..1, short detail such as "12,345 files/s").
PhaseCallback = Callable[[str, float, str], None]

FOLDER_PREFIX = "backupbench-smallfiles-"
POLL_SECONDS = 0.25
STOP_GRACE_SECONDS = 5.0
# Until a phase has ended (its sync included), progress stays below 1.0.
_RUNNING_CAP = 0.99
_RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")

try:
    _LIBC: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover
    _LIBC = None


@dataclass(frozen=True)
class PhaseResult:
    name: str
    seconds: float
    files: int
    bytes: int
    files_per_s: float
    mib_per_s: float
    latency_p50_ns: float
    latency_p99_ns: float
    mismatches: int | None  # verify only
    complete: bool  # False: interrupted or failed part way
    flush: str = "none"  # the spec's flush policy, recorded with the figures
    sync_seconds: float = 0.0  # part of `seconds` spent in the end-of-phase syncfs

    def as_dict(self) -> dict:
        return asdict(self)


def folder_name(run_id: str) -> str:
    return f"{FOLDER_PREFIX}{run_id}"


def file_paths(spec: SmallFilesSpec) -> list[bytes]:
    """Relative path of every file, index = file number: b'd0007/f000123'."""
    fw = max(6, len(str(spec.files - 1)))
    dw = max(4, len(str(spec.folders - 1)))
    folders = spec.folders
    return [b"d%0*d/f%0*d" % (dw, i % folders, fw, i) for i in range(spec.files)]


def folder_paths(spec: SmallFilesSpec) -> list[bytes]:
    dw = max(4, len(str(spec.folders - 1)))
    return [b"d%0*d" % (dw, d) for d in range(spec.folders)]


def pattern_buffer(pattern: int, size: int) -> bytes:
    return bytes([pattern]) * size


class _PhaseFailed(Exception):
    """A worker reported a system error; the engine turns it into a typed error."""

    def __init__(self, phase: str, err: int, path: str | None, files_done: int, during: str = ""):
        super().__init__(phase, err)
        self.during = during
        self.phase = phase
        self.errno = err
        self.path = path
        self.files_done = files_done


class SmallFilesEngine:
    name = "smallfiles"
    capabilities = frozenset({"file", "small-files", "rewrite-in-place", "verify", "per-file-latency"})

    def __init__(self, poll_seconds: float = POLL_SECONDS, stop_grace_seconds: float = STOP_GRACE_SECONDS):
        self.poll_seconds = poll_seconds
        # How long stopped workers get to finish the file in hand before they are killed.
        self.stop_grace_seconds = stop_grace_seconds

    # ---- refusal -------------------------------------------------------------------------
    def check(self, spec: SmallFilesSpec, root_parent: Path) -> None:
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
        need = required_free_bytes(spec)
        if free < need:
            raise RefusedError(
                f"not enough free space in {parent}: {spec.files:,} files of "
                f"{units.format_size(spec.file_size)} need {units.format_size(need)} with headroom, "
                f"{units.format_size(free)} is free",
                fix="free space, choose another folder, or use fewer or smaller files",
            )
        # f_files == 0: the filesystem has no fixed inode count (btrfs, ZFS).
        if stat.f_files > 0:
            need_inodes = required_free_inodes(spec)
            if stat.f_favail < need_inodes:
                raise RefusedError(
                    f"not enough free inodes in {parent}: the run needs {need_inodes:,} "
                    f"({inodes_needed(spec):,} files and folders with headroom), {stat.f_favail:,} are free",
                    fix="choose another filesystem or use fewer files",
                )

    # ---- the run -------------------------------------------------------------------------
    def run(self, spec: SmallFilesSpec, root_parent: Path, run_id: str, on_phase: PhaseCallback,
            keep: bool = False, on_result: Callable[[PhaseResult], None] | None = None) -> list[PhaseResult]:
        """on_result, if given, gets each phase's result as soon as the phase is done."""
        if not _RUN_ID_RE.match(run_id):
            raise InputError(f"run id {run_id!r} cannot name a folder",
                             fix="use letters, digits, '.', '_' and '-'")
        self.check(spec, root_parent)
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
            self._run_phases(spec, root, on_phase, results, on_result)
        except _PhaseFailed as failed:
            removed = _remove(root, keep)
            error = EngineError(_failure_message(failed, removed), fix=_failure_fix(failed.errno))
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

    def _run_phases(self, spec: SmallFilesSpec, root: Path, on_phase: PhaseCallback,
                    results: list[PhaseResult], on_result: Callable[[PhaseResult], None] | None) -> None:
        paths = file_paths(spec)
        workers = min(spec.threads, spec.files)
        shared = Shared(workers, spec.files)
        fsync = spec.flush == "fsync"
        phases = [(CREATE_PHASE, "create", spec.patterns[0])]
        phases += [(update_phase(n), "rewrite", p) for n, p in enumerate(spec.patterns[1:], start=1)]
        if spec.verify:
            phases.append((VERIFY_PHASE, "verify", spec.patterns[-1]))
        try:
            for name, kind, pattern in phases:
                # The pattern buffer is built once per phase, outside the timed part.
                task = Task(kind, str(root), paths, pattern_buffer(pattern, spec.file_size),
                            fsync and kind != "verify")
                self._phase(name, task, spec, root, shared, on_phase, results)
                if on_result is not None:
                    on_result(results[-1])
        finally:
            shared.close()

    def _phase(self, name: str, task: Task, spec: SmallFilesSpec, root: Path, shared: Shared,
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
                _make_folders(root, spec, name)
            pool.start(task)
            last_done, last_at = 0, started
            while not pool.wait(self.poll_seconds):
                now, done = time.monotonic_ns(), shared.done_total()
                rate = (done - last_done) / max(1e-9, (now - last_at) / 1e9)
                last_done, last_at = done, now
                on_phase(name, min(_RUNNING_CAP, done / spec.files), _detail(rate, task, shared))
            reports = pool.reap()
            failed = next((r for r in reports if r.errno), None)
            if failed is not None:
                raise _PhaseFailed(name, failed.errno, _path_of(task, failed), sum(r.done for r in reports))
            if any(r.done != r.end - r.start for r in reports):
                raise EngineError(f"a worker of phase {name} {_how_it_ended(reports)} "
                                  f"({sum(r.done for r in reports):,} of {spec.files:,} files done)",
                                  fix="check the kernel log (dmesg) for the out-of-memory killer")
            ended = max(r.end_ns for r in reports)
            if spec.flush == "sync-end" and task.kind != "verify":
                sync_ns = self._sync(root, name, on_phase)
            results.append(_result(name, spec, task, shared, pool, reports,
                                   ended - started + sync_ns, sync_ns, complete=True))
        except BaseException:
            if reports is None:
                pool.stop(self.stop_grace_seconds)
                reports = pool.reap()
            seconds_ns = time.monotonic_ns() - started
            results.append(_result(name, spec, task, shared, pool, reports, seconds_ns, sync_ns, complete=False))
            raise
        last = results[-1]
        on_phase(name, 1.0, _final_detail(last))

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
            raise _PhaseFailed(name, error.errno or 0, None, 0, during="sync")
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


def _dirty_mib() -> float:
    """Dirty and under-writeback page cache, machine-wide."""
    meminfo = HostFiles().meminfo()
    return (meminfo.get("Dirty", 0) + meminfo.get("Writeback", 0)) / 1024


def _make_folders(root: Path, spec: SmallFilesSpec, phase: str) -> None:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for folder in folder_paths(spec):
            try:
                os.mkdir(folder, 0o755, dir_fd=fd)
            except OSError as exc:
                raise _PhaseFailed(phase, exc.errno or 0, folder.decode(), 0) from None
    finally:
        os.close(fd)


def _result(name: str, spec: SmallFilesSpec, task: Task, shared: Shared, pool: Pool,
            reports: list[WorkerReport], seconds_ns: int, sync_ns: int, *, complete: bool) -> PhaseResult:
    files = sum(r.done for r in reports)
    seconds = max(seconds_ns, 1) / 1e9
    latencies = sorted(shared.latencies([(r.start, r.start + r.done) for r in reports]))
    n_bytes = files * spec.file_size
    return PhaseResult(
        name=name, seconds=seconds, files=files, bytes=n_bytes,
        files_per_s=files / seconds, mib_per_s=n_bytes / seconds / units.MiB,
        latency_p50_ns=nearest_rank(latencies, 50), latency_p99_ns=nearest_rank(latencies, 99),
        mismatches=sum(r.mismatches for r in reports) if task.kind == "verify" else None,
        complete=complete, flush=spec.flush, sync_seconds=sync_ns / 1e9,
    )


def _detail(rate: float, task: Task, shared: Shared) -> str:
    text = f"{rate:,.0f} files/s"
    if task.kind == "verify":
        text += f", {shared.mismatches_total():,} mismatches"
    return text


def _final_detail(result: PhaseResult) -> str:
    text = f"{result.files_per_s:,.0f} files/s, {result.mib_per_s:,.1f} MiB/s"
    if result.mismatches is not None:
        text += f", {result.mismatches:,} mismatches"
    return text


def _how_it_ended(reports: list[WorkerReport]) -> str:
    for report in reports:
        status = report.exit_status
        if status is not None and os.WIFSIGNALED(status):
            return f"was killed by signal {os.WTERMSIG(status)} ({signal.Signals(os.WTERMSIG(status)).name})"
    return "stopped without saying why"


def _path_of(task: Task, report: WorkerReport) -> str | None:
    index = report.failed_at
    if index is None or index >= len(task.paths):
        return None
    return task.paths[index].decode()


def _failure_message(failed: _PhaseFailed, removed: str) -> str:
    where = f"after {failed.files_done:,} files in phase {failed.phase}"
    if failed.during == "sync":
        where = f"while syncing phase {failed.phase} to storage"
    if failed.errno == errno.ENOSPC:
        return f"filesystem full {where}; {removed}"
    if failed.errno == errno.EDQUOT:
        return f"disk quota exceeded {where}; {removed}"
    if failed.errno == errno.EROFS:
        return f"filesystem became read-only {where}; {removed}"
    reason = os.strerror(failed.errno) if failed.errno > 0 else "unexpected failure in a worker"
    on = f" on {failed.path}" if failed.path else ""
    return f"{reason}{on} {where}; {removed}"


def _failure_fix(err: int) -> str | None:
    if err in (errno.ENOSPC, errno.EDQUOT):
        return "free space or use fewer or smaller files; other writers may have filled the filesystem"
    if err == errno.EROFS:
        return "check the kernel log (dmesg): filesystems turn read-only after I/O errors"
    return None


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
