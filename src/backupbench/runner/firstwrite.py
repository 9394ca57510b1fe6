"""First write vs overwrite as a FioWorkload: no layout; the first phase is the allocation."""

from __future__ import annotations

from pathlib import Path

from backupbench.engines.fio import FioEngine
from backupbench.engines.fio_job import FioJob
from backupbench.recipe.suite import SuiteOptions
from backupbench.runner.fio_workload import FioPhase, FioWorkload, base_figures
from backupbench.workloads.firstwrite import FIRST_WRITE_BLOCK_SIZE, PHASES, Phase


def phase_job(phase: Phase, options: SuiteOptions, test_file: Path) -> FioJob:
    return FioJob(
        name=phase.name, filename=test_file, rw=phase.rw, block_size=options.block,
        region_size=options.region_size, iodepth=options.iodepth or 1, numjobs=options.jobs,
        ioengine=options.engine, direct=not options.buffered,
        # No fallocate: preallocating would do the allocation before the measured writes.
        fallocate="none", comment=phase.title,
    )


def _score(rw: str):
    def score(summary):
        figures = base_figures(summary)
        figures["effective_bw"] = summary.write.bw_bytes if rw == "write" else summary.read.bw_bytes
        return figures
    return score


def workload(options: SuiteOptions, engine: FioEngine | None = None) -> FioWorkload:
    options = options.with_block_default(FIRST_WRITE_BLOCK_SIZE)

    def phases(test_file: Path) -> list[FioPhase]:
        return [FioPhase(phase_job(p, options, test_file), p.title, _score(p.rw)) for p in PHASES]
    return FioWorkload(kind="first-write", options=options, phases_for=phases, file_size=options.file_size,
                       buffered=options.buffered, engine=engine or FioEngine())
