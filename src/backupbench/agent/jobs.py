"""The agent's one job slot: a job runs in a thread, one at a time, and can be stopped.

One at a time because a benchmark host running two loads measures neither. A job is
stopped the way the engines are built to be stopped: their progress callback raises
Interrupted, and the engine stops its workers or its load generator and removes what it
made before the error comes back here.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from backupbench.errors import BackupbenchError, Interrupted, RefusedError

RUNNING, DONE, FAILED, STOPPED = "running", "done", "failed", "stopped"
# Finished jobs remembered for `status`, newest kept.
KEEP_FINISHED = 16


class Busy(RefusedError):
    """Another job is running."""


class UnknownJob(BackupbenchError):
    """No job with that id (never started, or long forgotten)."""


@dataclass
class Job:
    id: str
    kind: str
    started: float
    state: str = RUNNING
    phase: str = ""
    fraction: float = 0.0
    detail: str = ""
    result: dict[str, Any] | None = None
    error: str = ""
    ended: float | None = None
    stop_requested: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"job_id": self.id, "kind": self.kind, "state": self.state, "phase": self.phase,
                "fraction": self.fraction, "detail": self.detail, "result": self.result, "error": self.error,
                "seconds": (self.ended or time.time()) - self.started}


@dataclass
class Control:
    """What a running job is handed: report progress; stop when asked."""

    job: Job
    stop: threading.Event = field(default_factory=threading.Event)

    def progress(self, phase: str, fraction: float, detail: str) -> None:
        # The engines call this every fraction of a second: the place a stop takes effect.
        self.job.phase, self.job.fraction, self.job.detail = phase, fraction, detail
        if self.stop.is_set():
            raise Interrupted("stopped at the controller's request")


Work = Callable[[Control], dict[str, Any]]


class JobSlot:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}
        self._running: tuple[Control, threading.Thread] | None = None

    def start(self, kind: str, work: Work) -> Job:
        with self._lock:
            if self._running is not None and self._running[1].is_alive():
                raise Busy(f"job {self._running[0].job.id} ({self._running[0].job.kind}) is running",
                           "wait for it, or stop it")
            job = Job(secrets.token_hex(8), kind, time.time())
            control = Control(job)
            thread = threading.Thread(target=self._run, args=(control, work), name=f"agent-job-{job.id}",
                                      daemon=True)
            self._jobs[job.id] = job
            self._forget_old()
            self._running = (control, thread)
            thread.start()
            return job

    def _run(self, control: Control, work: Work) -> None:
        job = control.job
        try:
            result = work(control)
            job.result, job.state = result, DONE
        except (Interrupted, KeyboardInterrupt) as exc:
            job.state, job.error = STOPPED, _line(exc)
        except BackupbenchError as exc:
            job.state, job.error = FAILED, exc.one_line()
        except Exception as exc:  # noqa: BLE001 - a job's bug must not take the agent down
            job.state, job.error = FAILED, f"internal error: {exc!r}"
        finally:
            job.ended = time.time()

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise UnknownJob(f"no job {job_id}")
        return job

    def stop(self, job_id: str) -> Job:
        job = self.get(job_id)
        with self._lock:
            if self._running is not None and self._running[0].job is job and job.state == RUNNING:
                job.stop_requested = True
                self._running[0].stop.set()
        return job

    def stop_all(self, timeout: float) -> bool:
        """Stop the running job, if any, and wait up to `timeout` s for it to clean up; True if
        nothing is running any more."""
        with self._lock:
            running = self._running
        if running is None:
            return True
        running[0].stop.set()
        running[1].join(timeout)
        return not running[1].is_alive()

    def _forget_old(self) -> None:
        finished = [j for j in self._jobs.values() if j.state != RUNNING]
        for job in sorted(finished, key=lambda j: j.started)[:-KEEP_FINISHED or None]:
            del self._jobs[job.id]


def _line(exc: BaseException) -> str:
    return exc.one_line() if isinstance(exc, BackupbenchError) else "stopped"
