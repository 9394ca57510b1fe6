"""The fio engine: lays out a test file, runs job files, parses their JSON (json+, with latency logs).

fio runs in its own session so that Ctrl-C reaches only backupbench, which then stops fio
(SIGINT first, as fio finishes cleanly on it) and removes the test file.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from backupbench import process
from backupbench.engines import fio_json, fio_progress
from backupbench.engines.base import ProgressCallback, no_progress
from backupbench.engines.fio_job import FioJob, command
from backupbench.errors import EngineError, ProcessError

POLL_SECONDS = 0.25


@dataclass(frozen=True)
class FioRun:
    job: FioJob
    summary: fio_json.FioSummary
    job_file: Path
    output_json: Path
    command: list[str]
    elapsed_s: float


class FioEngine:
    name = "fio"

    def __init__(self, binary: str = "fio"):
        self.binary = binary

    def version(self) -> str:
        return process.run([self.binary, "--version"], timeout=10).stdout.strip()

    def run(self, job: FioJob, out_dir: Path, progress: ProgressCallback = no_progress,
            timeout_s: float | None = None) -> FioRun:
        # Its 1 s latency logs beside its JSON: what the report's latency over time is drawn from.
        job = job.logged()
        job_file = job.write(out_dir / f"{job.name}.fio")
        output_json = out_dir / f"{job.name}.json"
        eta_file = out_dir / f"{job.name}.eta"
        argv = [self.binary, *command(job_file, output_json, job.readonly)[1:]]
        started = time.monotonic()
        child = process.Background(argv, cwd=out_dir, stdout_path=eta_file)
        try:
            while child.running():
                time.sleep(POLL_SECONDS)
                status = fio_progress.last_status(eta_file.read_text(errors="replace"))
                if status.fraction is not None:
                    progress(status.fraction, status.rates)
                if timeout_s is not None and time.monotonic() - started > timeout_s:
                    raise EngineError(f"fio did not finish {job.name} within {timeout_s:g} s")
            result = child.wait()
        finally:
            child.stop()
        elapsed = time.monotonic() - started
        eta_file.unlink(missing_ok=True)
        if result.returncode != 0:
            raise _failure(argv, result.returncode, result.stderr, output_json)
        try:
            summary = fio_json.parse_text(output_json.read_text())
        except FileNotFoundError as exc:
            raise EngineError(f"fio wrote no result for {job.name}") from exc
        progress(1.0, "")
        return FioRun(job, summary, job_file, output_json, argv, elapsed)


def _failure(argv: list[str], returncode: int, stderr: str, output_json: Path) -> ProcessError:
    # fio reports some failures only in its --output file, not on stderr.
    said = stderr.strip()
    if not said and output_json.exists():
        said = output_json.read_text(errors="replace").strip()
    lines = [line for line in said.splitlines() if line.strip() and not line.startswith("{")]
    reason = lines[-1].strip() if lines else f"exit code {returncode}"
    return ProcessError(argv, returncode, said, f"fio failed: {reason}")
