"""The KB2014 suite as a FioWorkload: lay out the file, then each backup operation."""

from __future__ import annotations

from pathlib import Path

from backupbench.engines.fio import FioEngine
from backupbench.engines.fio_job import FioJob
from backupbench.recipe.suite import SuiteOptions
from backupbench.runner.fio_workload import FioPhase, FioWorkload, base_figures
from backupbench.workloads.kb2014 import KB2014_BLOCK_SIZE, Operation, select

LAYOUT = "layout"
# Layout writes the whole file; a little queue depth keeps it from dominating `make run`.
LAYOUT_IODEPTH = 8


def operation_job(op: Operation, options: SuiteOptions, test_file: Path) -> FioJob:
    return FioJob(
        name=op.name, filename=test_file, rw=op.rw, rwmixwrite=op.rwmixwrite,
        block_size=options.block, region_size=options.region_size,
        iodepth=options.iodepth or op.iodepth, numjobs=options.jobs,
        ioengine=options.engine, direct=not options.buffered, runtime_s=options.runtime,
        comment=f"{op.title}: {op.io_per_block_text}",
    )


def layout_job(options: SuiteOptions, test_file: Path) -> FioJob:
    return FioJob(
        name=LAYOUT, filename=test_file, rw="write", block_size=options.block,
        region_size=options.file_size, iodepth=LAYOUT_IODEPTH, ioengine=options.engine,
        direct=not options.buffered,
        comment="writes the whole test file once so that reads find real data",
    )


def needs_layout(operations: list[Operation]) -> bool:
    """Reads need real data under them; a write-only selection lets fio create the file
    itself, exactly as the plain fio command of the knowledge-base article does."""
    return any(op.rw != "write" for op in operations)


def _scorer(op: Operation):
    def score(summary):
        figures = base_figures(summary)
        figures["effective_bw"] = op.effective_rate(summary.read.bw_bytes, summary.write.bw_bytes)
        return figures
    return score


def workload(options: SuiteOptions, engine: FioEngine | None = None) -> FioWorkload:
    options = options.with_block_default(KB2014_BLOCK_SIZE)

    operations = select(options.operations)

    def phases(test_file: Path) -> list[FioPhase]:
        layout = ([FioPhase(layout_job(options, test_file), f"lay out {test_file.name}", None)]
                  if needs_layout(operations) else [])
        return layout + [FioPhase(operation_job(op, options, test_file), op.title, _scorer(op)) for op in operations]
    return FioWorkload(kind="kb2014", options=options, phases_for=phases, file_size=options.file_size,
                       buffered=options.buffered, engine=engine or FioEngine())
