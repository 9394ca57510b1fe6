"""What a small-file phase produced, and how a failed one is told: figures and messages.

Pure functions over what the workers reported; the engine (smallfiles.py) runs the phases.
"""

from __future__ import annotations

import errno
import os
import signal
from dataclasses import asdict, dataclass

from backupbench import units
from backupbench.engines.smallfiles_job import SmallFilesJob
from backupbench.engines.smallfiles_workers import Pool, Shared, Task, WorkerReport
from backupbench.stats import nearest_rank


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
    flush: str = "none"  # the job's flush policy, recorded with the figures
    sync_seconds: float = 0.0  # part of `seconds` spent in the end-of-phase syncfs

    def as_dict(self) -> dict:
        return asdict(self)


class PhaseFailed(Exception):
    """A worker reported a system error; the engine turns it into a typed error."""

    def __init__(self, phase: str, err: int, path: str | None, files_done: int, during: str = ""):
        super().__init__(phase, err)
        self.during = during
        self.phase = phase
        self.errno = err
        self.path = path
        self.files_done = files_done


def phase_result(name: str, job: SmallFilesJob, task: Task, shared: Shared, pool: Pool,
            reports: list[WorkerReport], seconds_ns: int, sync_ns: int, *, complete: bool) -> PhaseResult:
    files = sum(r.done for r in reports)
    seconds = max(seconds_ns, 1) / 1e9
    latencies = sorted(shared.latencies([(r.start, r.start + r.done) for r in reports]))
    n_bytes = files * job.file_size
    return PhaseResult(
        name=name, seconds=seconds, files=files, bytes=n_bytes,
        files_per_s=files / seconds, mib_per_s=n_bytes / seconds / units.MiB,
        latency_p50_ns=nearest_rank(latencies, 50), latency_p99_ns=nearest_rank(latencies, 99),
        mismatches=sum(r.mismatches for r in reports) if task.kind == "verify" else None,
        complete=complete, flush=job.flush, sync_seconds=sync_ns / 1e9,
    )


def progress_detail(rate: float, task: Task, shared: Shared) -> str:
    text = f"{rate:,.0f} files/s"
    if task.kind == "verify":
        text += f", {shared.mismatches_total():,} mismatches"
    return text


def final_detail(result: PhaseResult) -> str:
    text = f"{result.files_per_s:,.0f} files/s, {result.mib_per_s:,.1f} MiB/s"
    if result.mismatches is not None:
        text += f", {result.mismatches:,} mismatches"
    return text


def how_it_ended(reports: list[WorkerReport]) -> str:
    for report in reports:
        status = report.exit_status
        if status is not None and os.WIFSIGNALED(status):
            return f"was killed by signal {os.WTERMSIG(status)} ({signal.Signals(os.WTERMSIG(status)).name})"
    return "stopped without saying why"


def path_of(task: Task, report: WorkerReport) -> str | None:
    index = report.failed_at
    if index is None or index >= len(task.paths):
        return None
    return task.paths[index].decode()


def failure_message(failed: PhaseFailed, removed: str) -> str:
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


def failure_fix(err: int) -> str | None:
    if err in (errno.ENOSPC, errno.EDQUOT):
        return "free space or use fewer or smaller files; other writers may have filled the filesystem"
    if err == errno.EROFS:
        return "check the kernel log (dmesg): filesystems turn read-only after I/O errors"
    return None
