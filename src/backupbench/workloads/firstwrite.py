"""First write vs overwrite (field note B) as a workload: the allocation cost of thin LVs,
sparse files and copy-on-write filesystems shows as first-write slower than overwrite.

The same region is written sequentially three ways, each reported on its own, with the
suite's options (kb2014.SuiteOptions) and a 1 MiB block by default. No layout phase: the
first phase is the allocation being measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from backupbench.engines.fio import FioEngine
from backupbench.engines.fio_job import FioJob
from backupbench.paths import Syntax
from backupbench.units import MiB
from backupbench.workloads.base import Definition, RepeatKey, ServedBy, narrowed
from backupbench.workloads.capabilities import Capabilities
from backupbench.workloads.fio_workload import FioPhase, FioWorkload, base_figures
from backupbench.workloads.kb2014 import SuiteOptions

FIRST_WRITE_BLOCK_SIZE = 1 * MiB


@dataclass(frozen=True)
class Phase:
    name: str
    title: str
    rw: Literal["write", "read"]


PHASES = (
    Phase("first-write", "First write (blocks never written: allocation on thin LVs, sparse files, CoW)", "write"),
    Phase("overwrite", "Overwrite (the same blocks again: no allocation)", "write"),
    Phase("read", "Read back", "read"),
)
PHASE_NAMES = tuple(p.name for p in PHASES)


def phase_job(phase: Phase, options: SuiteOptions, test_file: Path) -> FioJob:
    return FioJob(
        name=phase.name, filename=test_file, rw=phase.rw, block_size=options.block,
        region_size=options.region_size, iodepth=options.iodepth or 1, numjobs=options.jobs,
        ioengine=options.engine, direct=not options.buffered,
        # No fallocate: preallocating would do the allocation before the measured writes.
        fallocate="none", comment=phase.title, content=options.content(),
    )


def _score(rw: str):
    def score(summary):
        figures = base_figures(summary)
        figures["effective_bw"] = summary.write.bw_bytes if rw == "write" else summary.read.bw_bytes
        return figures
    return score


def workload(options: SuiteOptions, served: ServedBy | None = None, engine: FioEngine | None = None) -> FioWorkload:
    options = narrowed(SuiteOptions, options).with_block_default(FIRST_WRITE_BLOCK_SIZE)

    def phases(test_file: Path) -> list[FioPhase]:
        return [FioPhase(phase_job(p, options, test_file), p.title, _score(p.rw)) for p in PHASES]
    return FioWorkload.of("first-write", options, phases, engine)


class FirstWriteEntry(SuiteOptions, RepeatKey):
    """A recipe's `[[workload]] kind = "first-write"` entry."""

    kind: Literal["first-write"]


DEFINITION = Definition(
    name="first-write",
    description="first write vs overwrite vs read of one region: thin-provisioning and CoW allocation cost "
                "(field note B)",
    path_syntax=Syntax.FIO_JOB, options=SuiteOptions, recipe_entry=FirstWriteEntry, build=workload,
    phases=lambda options: PHASE_NAMES, capabilities=Capabilities(fio_servers=True), parallelism=("iodepth", "jobs"),
)
