"""Workloads made of fio jobs on one tagged test file: KB2014, first-write vs overwrite.

A FioWorkload is a list of phases, each one fio job and a rule turning fio's summary into
figures. Unmeasured phases (laying out the file) run but are not stored as operations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from backupbench import process
from backupbench.disk_model import ModelDisk, projected
from backupbench.engines import file_map
from backupbench.engines.fio import FioEngine
from backupbench.engines.fio_job import FioJob, command
from backupbench.engines.fio_json import FioSummary
from backupbench import artefacts
from backupbench.artefacts import TAG, ArtefactName
from backupbench.paths import Syntax, for_program
from backupbench.workloads.base import PhaseHooks

TEST_FILE = ArtefactName(f"{TAG}-{{}}.dat", "test file")
# 1 when fio's steady-state criterion held over its window before the runtime ran out, else 0.
STEADY_STATE_FIGURE = "steady_state_attained"


def test_file_name(run_id: str) -> str:
    return TEST_FILE.of(run_id)


@dataclass(frozen=True)
class FioPhase:
    job: FioJob
    title: str
    score: Callable[[FioSummary], dict[str, float]] | None  # None: not measured (e.g. layout)
    # A restore: the test file's extent map and the same restore on this disk are added to its
    # figures (engines/file_map.py, disk_model.py).
    maps_file: ModelDisk | None = None


def map_figures(test_file: Path, block: int, disk: ModelDisk) -> dict[str, float]:
    """The test file's map as figures, with the model's restores of it; {} where the filesystem
    has no FIEMAP (tmpfs), which the restore's figures then go without."""
    try:
        found = file_map.file_map(test_file)
    except OSError:
        return {}
    return {**found.figures(), **projected(found.figures(), block, disk)}


def base_figures(summary: FioSummary) -> dict[str, float]:
    figures = {
        "read_bw": summary.read.bw_bytes,
        "write_bw": summary.write.bw_bytes,
        "read_iops": summary.read.iops,
        "write_iops": summary.write.iops,
        "runtime": summary.runtime_ms / 1000.0,
    }
    if summary.read.p99_ns is not None and summary.read.active:
        figures["read_p99_lat"] = summary.read.p99_ns
    if summary.write.p99_ns is not None and summary.write.active:
        figures["write_p99_lat"] = summary.write.p99_ns
    if summary.steady_state is not None:
        figures[STEADY_STATE_FIGURE] = 1.0 if summary.steady_state.attained else 0.0
    return figures


def _detail(job: FioJob, summary: FioSummary) -> dict[str, Any]:
    """What the store keeps beside a phase's figures: its files, and how it warmed up."""
    detail: dict[str, Any] = {"job_file": f"{job.name}.fio", "raw": f"{job.name}.json", "buffered": not job.direct}
    if job.runtime_s is not None:
        detail["ramp_s"] = job.ramp_s
    state = summary.steady_state
    if state is not None:
        detail["steady_state"] = {"criterion": state.criterion, "window_s": state.window_s,
                                  "attained": state.attained, "measured": state.measured}
    return detail


@dataclass
class FioWorkload:
    """The Workload (workloads/base.py) of every fio workload: phases on one tagged test file."""

    kind: str
    options: Any  # the workload's pydantic options, stored with the run
    phases_for: Callable[[Path], list[FioPhase]]  # test file -> phases
    file_size: int
    buffered: bool = False
    engine: FioEngine = field(default_factory=FioEngine)
    space_fix: str = "free some space or use a smaller --size"
    extra_settings: dict[str, Any] = field(default_factory=dict)
    needs_directory: bool = field(default=True, init=False)
    test_file_cautions: bool = field(default=True, init=False)
    _test_file_id: int | None = field(default=None, init=False, repr=False)

    def target_label(self, target: Path | None) -> str:
        return str(target)

    def engine_versions(self) -> dict[str, str]:
        return {"fio": self.engine.version()}

    def phases(self) -> tuple[str, ...]:
        return tuple(phase.job.name for phase in self.phases_for(Path("/phases")))

    def settings(self) -> dict[str, Any]:
        return {**self.options.model_dump(mode="json"), "file_size": self.file_size, **self.extra_settings}

    def space_needed(self) -> int:
        return self.file_size

    def check(self, target: Path) -> None:
        process.require_tool(self.engine.binary)
        # Refuse a directory fio cannot be told about before anything is created in it.
        for_program(target, Syntax.FIO_JOB)

    def execute(self, target: Path, folder: Path, run_id: str, hooks: PhaseHooks) -> None:
        test_file = target / test_file_name(run_id)
        self._test_file_id = hooks.will_create(artefacts.file(test_file, run_id, TEST_FILE.what))
        commands = []
        try:
            for phase in self.phases_for(test_file):
                job = phase.job
                hooks.started(job.name, phase.title, job.pattern, measured=phase.score is not None,
                              warmup_s=job.ramp_s if job.runtime_s is not None else 0.0)
                commands.append(process.render(command(folder / f"{job.name}.fio", folder / f"{job.name}.json")))
                fio_run = self.engine.run(job, folder, lambda f, d, n=job.name: hooks.progress(n, f, d))
                figures = phase.score(fio_run.summary) if phase.score else {}
                if phase.maps_file is not None:
                    figures.update(map_figures(test_file, job.block_size, phase.maps_file))
                hooks.finished(job.name, figures, _detail(job, fio_run.summary))
        finally:
            (folder / "commands.txt").write_text("\n".join(commands) + "\n")

    def cleanup(self, target: Path, run_id: str, hooks: PhaseHooks) -> None:
        (target / test_file_name(run_id)).unlink(missing_ok=True)
        hooks.removed(self._test_file_id)

    @classmethod
    def of(cls, kind: str, options: Any, phases_for: Callable[[Path], list[FioPhase]],
           engine: FioEngine | None = None) -> "FioWorkload":
        """A fio workload over the suite's options (kb2014.SuiteOptions: file size, buffered)."""
        return cls(kind=kind, options=options, phases_for=phases_for, file_size=options.file_size,
                   buffered=options.buffered, engine=engine or FioEngine())
