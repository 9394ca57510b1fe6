"""The Veeam KB2014 backup operations (field note C) as a workload: one module, everything.

Each operation says what a backup job does to the repository, the fio access pattern that
stands for it, and how raw read/write throughput becomes the speed the job sees ("effective
speed"). The suite's options (SuiteOptions: the flags of `backupbench run` and the keys of
a recipe's kb2014 entry) are shared with the first-write workload. The workload lays the
test file out when a read operation needs real data, then runs each operation as one fio
job (workloads/fio_workload.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from backupbench import units
from backupbench.engines.fio import FioEngine
from backupbench.engines.fio_job import FioJob
from backupbench.paths import Syntax
from backupbench.schema import BlockSize, Count, Duration, Flag, PositiveSize, Size, comma_list, no_repeats, validate
from backupbench.units import KiB
from backupbench.workloads.base import Definition, RepeatKey, ServedBy, narrowed
from backupbench.workloads.capabilities import Capabilities
from backupbench.workloads.content_options import ContentOptions
from backupbench.workloads.fio_workload import FioPhase, FioWorkload, base_figures
from backupbench.workloads.model_disk_options import ModelDiskOptions

# Veeam KB2014 tests with 512 KiB blocks: the size backup software typically writes.
KB2014_BLOCK_SIZE = 512 * KiB

Effective = Literal["write", "read", "mixed"]


@dataclass(frozen=True)
class Operation:
    name: str
    title: str
    rw: str
    iodepth: int
    effective: Effective
    # For a mixed pattern: I/Os the job issues for each block of backup data it processes.
    # Effective speed = (read + write) / ios_per_block.
    ios_per_block: int = 1
    rwmixwrite: int | None = None
    io_per_block_text: str = ""
    bound: Literal["", "upper", "lower"] = ""

    def effective_rate(self, read_bps: float, write_bps: float) -> float:
        if self.effective == "write":
            return write_bps
        if self.effective == "read":
            return read_bps
        return (read_bps + write_bps) / self.ios_per_block


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation(
            name="active-full", title="Active full / forward incremental",
            rw="write", iodepth=1, effective="write",
            io_per_block_text="1 write: new data is appended sequentially",
        ),
        Operation(
            name="synthetic-full", title="Synthetic full / forever-forward merge",
            rw="randrw", rwmixwrite=50, iodepth=4, effective="mixed", ios_per_block=2,
            io_per_block_text="1 read + 1 write: each block is read from the increment and written into the full",
        ),
        Operation(
            # The old block is read from the full, written to the rollback file, and the
            # new block overwrites it in the full: 2 writes for 1 read, hence 67 % writes.
            name="reverse-incremental", title="Reverse incremental",
            rw="randrw", rwmixwrite=67, iodepth=4, effective="mixed", ios_per_block=3,
            io_per_block_text="1 read + 2 writes: old block read from the full and written to the rollback, new block written into the full",
        ),
        Operation(
            name="restore-sequential", title="Restore, best case (no fragmentation)",
            rw="read", iodepth=1, effective="read", bound="upper",
            io_per_block_text="1 read, sequential",
        ),
        Operation(
            name="restore-random", title="Restore, worst case (fully fragmented)",
            rw="randread", iodepth=1, effective="read", bound="lower",
            io_per_block_text="1 read, random",
        ),
    )
}

OPERATION_NAMES = tuple(OPERATIONS)


def select(names: list[str] | tuple[str, ...]) -> list[Operation]:
    """Operations in suite order (writes before the restores that read their data)."""
    wanted = set(names)
    return [op for op in OPERATIONS.values() if op.name in wanted]


OperationName = Literal[OPERATION_NAMES]  # type: ignore[valid-type]
IoEngine = Literal["libaio", "io_uring", "psync"]
# Linux moves at most 2 GiB - 4 KiB in one read or write call: a larger block is split.
MAX_BLOCK_SIZE = units.GiB
MIN_FILE_SIZE = 4 * units.KiB


class SuiteOptions(ContentOptions):
    """Options of the fio suite: `backupbench run` flags, recipe keys of kb2014 and first-write."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    size: Size = Field(
        units.GiB,
        description="Size of the test file. Make it as large as a real restore point: "
        "small files are served from storage caches.",
        json_schema_extra={"metavar": "SIZE", "example": "1GiB"},
    )
    runtime: Duration = Field(
        10.0, ge=0.001, description="How long each operation runs.",
        json_schema_extra={"metavar": "DURATION", "example": "10s"},
    )
    block_size: BlockSize | None = Field(
        None, description="I/O block size, a multiple of 4 KiB up to 1 GiB, or Veeam's by its storage "
        "optimization: local-16tb (4 MiB), local (1 MiB), lan (512 KiB), wan (256 KiB) [default: 512k for "
        "kb2014 as in Veeam KB2014, 1m for first-write].",
        json_schema_extra={"metavar": "SIZE", "example": "512k"},
    )
    jobs: Count = Field(
        1, ge=1, le=256, description="Parallel fio jobs; each gets its own region of the file.",
        json_schema_extra={"metavar": "N"},
    )
    iodepth: Count | None = Field(
        None, ge=1, le=4096,
        description="Override every operation's queue depth (default: 1 for sequential, 4 for merges).",
        json_schema_extra={"metavar": "N"},
    )
    engine: IoEngine = Field("libaio", description="fio ioengine.")
    operations: Annotated[tuple[OperationName, ...], BeforeValidator(comma_list),  # type: ignore[valid-type]
                          AfterValidator(no_repeats)] = Field(
        OPERATION_NAMES, min_length=1,
        description="Comma-separated subset of: " + ", ".join(OPERATION_NAMES) + ".",
        json_schema_extra={"metavar": "LIST"},
    )
    backup_size: PositiveSize | None = Field(
        None, description="Size of a full backup; prints the backup windows.",
        json_schema_extra={"metavar": "SIZE", "example": "10TiB"},
    )
    buffered: Flag = Field(
        False, description="Use the page cache instead of O_DIRECT (for filesystems that "
        "refuse O_DIRECT, e.g. tmpfs). Results are marked buffered.",
    )

    @field_validator("size")
    @classmethod
    def _size(cls, value: int) -> int:
        if value < MIN_FILE_SIZE:
            raise ValueError(f"the test file must be at least 4 KiB, not {units.format_size(value)}")
        return value

    @field_validator("block_size")
    @classmethod
    def _block(cls, value: int | None) -> int | None:
        if value is not None and (value == 0 or value % 4096 or value > MAX_BLOCK_SIZE):
            raise ValueError(f"must be a multiple of 4 KiB (direct I/O) from 4 KiB to 1 GiB, not {value:,} bytes")
        return value

    @model_validator(mode="after")
    def _fits(self) -> "SuiteOptions":
        if self.block_size is None:
            return self
        if self.region_size < self.block_size:
            raise ValueError(
                f"size {units.format_size(self.size)} is too small for {self.jobs} job(s) of "
                f"{units.format_size(self.block_size)} blocks"
            )
        return self

    def with_block_default(self, block_size: int) -> "SuiteOptions":
        """These options with the workload's own block size where the user gave none."""
        if self.block_size is not None:
            return self
        return validate(type(self), {**self.model_dump(), "block_size": block_size},
                        lambda loc: "--" + str(loc[0]).replace("_", "-") if loc else "options")

    @property
    def block(self) -> int:
        if self.block_size is None:
            raise ValueError("block size not resolved: call with_block_default() first")
        return self.block_size

    @property
    def region_size(self) -> int:
        """Bytes each job works on: the file split evenly, whole blocks only."""
        per_job = self.size // self.jobs
        return per_job - per_job % self.block

    @property
    def file_size(self) -> int:
        return self.region_size * self.jobs


# The ramp before each time-based operation (module docstring of Kb2014Options says why 2 s).
DEFAULT_RAMP_S = 2.0
# `run`'s default: samples of each operation and the runtime of each (Definition.sampled_by_default).
DEFAULT_SAMPLES, DEFAULT_SAMPLE_RUNTIME = 3, "3s"
_STEADY_STATE = re.compile(r"^(iops|iops_slope|bw|bw_slope):(\d+(?:\.\d+)?)(%?)$")


class Kb2014Options(SuiteOptions, ModelDiskOptions):
    """The suite's options and the KB2014 operations' warm-up: every operation is time-based,
    so fio runs it `ramp` seconds before it counts (ramp_time), and the monitor leaves that
    window out too. Default 2 s: what a ramp leaves out is the start of a job (fio's threads and
    queue filling, a disk's write-back cache and readahead settling); 2 s covers the monitor's
    partial first second and a whole one after it, and adds only 20% to the default 10 s
    operation (bench/ramp.py measures each operation's spread with and without it). first-write
    has no ramp: its first seconds are what it measures.
    `steady_state` hands fio's own steady-state stop the criterion: the operation then runs until
    the criterion holds over `steady_state_window` or `runtime` (its ceiling) runs out."""

    ramp: Duration = Field(
        DEFAULT_RAMP_S, le=3600, description="Warm-up before each operation is measured (fio's ramp_time; 0: none).",
        json_schema_extra={"metavar": "DURATION", "example": "2s"},
    )
    steady_state: str | None = Field(
        None, description="Run each operation until fio's steady state holds, e.g. iops_slope:0.3% (also iops, "
        "bw, bw_slope; a limit in % of the mean or absolute); --runtime is then the longest it may run.",
        json_schema_extra={"metavar": "CRITERION:LIMIT", "example": "iops_slope:0.3%"},
    )
    # fio samples the criterion once a second: a window of one sample has no slope (fio 3.33
    # writes -nan and calls it attained), so the window holds at least two.
    steady_state_window: Duration = Field(
        10.0, ge=2, le=3600, description="The rolling window --steady-state must hold over (fio's steadystate_duration; "
        "at least 2 s: fio takes one sample a second).",
        json_schema_extra={"metavar": "DURATION", "example": "10s"},
    )

    @field_validator("steady_state")
    @classmethod
    def _criterion(cls, value: str | None) -> str | None:
        if value is None:
            return None
        found = _STEADY_STATE.match(value.strip().lower())
        if found is None:
            raise ValueError(f"{value!r} is not CRITERION:LIMIT with CRITERION one of iops, iops_slope, bw, "
                             "bw_slope, e.g. iops_slope:0.3%")
        return found.group(0)

    @model_validator(mode="after")
    def _window_fits(self) -> "Kb2014Options":
        if self.steady_state is not None and self.runtime <= self.steady_state_window:
            raise ValueError(f"with steady_state the runtime ({self.runtime:g} s) is the longest an operation may "
                             f"run: make it longer than the window ({self.steady_state_window:g} s), e.g. runtime = "
                             f"{max(60, 6 * self.steady_state_window):g}s")
        return self


def timing_label(settings: dict) -> str:
    """How long each operation ran, for a run's caption: '10 s per operation after a 2 s ramp'."""
    runtime = float(settings.get("runtime") or 0)
    ramp = settings.get("ramp")
    after = "" if ramp is None else (f" after a {float(ramp):g} s ramp" if ramp else ", no ramp")
    if settings.get("steady_state"):
        return (f"each operation until fio's steady state {settings['steady_state']} over "
                f"{float(settings.get('steady_state_window') or 0):g} s, at most {runtime:g} s{after}")
    return f"{runtime:g} s per operation{after}"


LAYOUT = "layout"
# Layout writes the whole file; a little queue depth keeps it from dominating `make run`.
LAYOUT_IODEPTH = 8


def operation_job(op: Operation, options: Kb2014Options, test_file: Path) -> FioJob:
    return FioJob(
        name=op.name, filename=test_file, rw=op.rw, rwmixwrite=op.rwmixwrite,
        block_size=options.block, region_size=options.region_size,
        iodepth=options.iodepth or op.iodepth, numjobs=options.jobs,
        ioengine=options.engine, direct=not options.buffered, runtime_s=options.runtime,
        comment=f"{op.title}: {op.io_per_block_text}", content=options.content(), ramp_s=options.ramp,
        steady_state=options.steady_state,
        steady_state_window_s=options.steady_state_window if options.steady_state else None,
    )


def layout_job(options: SuiteOptions, test_file: Path) -> FioJob:
    return FioJob(
        name=LAYOUT, filename=test_file, rw="write", block_size=options.block,
        region_size=options.file_size, iodepth=LAYOUT_IODEPTH, ioengine=options.engine,
        direct=not options.buffered, content=options.content(),
        comment="writes the whole test file once so that reads find real data",
    )


def needs_layout(operations: list[Operation]) -> bool:
    """Reads need real data under them; a write-only selection lets fio create the file
    itself, exactly as the plain fio command of the knowledge-base article does."""
    return any(op.rw != "write" for op in operations)


def phase_names(options: SuiteOptions) -> tuple[str, ...]:
    """The phases `workload(options)` runs, in order: the layout (unmeasured) when a read
    needs data under it, then the operations."""
    operations = select(options.operations)
    return ((LAYOUT,) if needs_layout(operations) else ()) + tuple(op.name for op in operations)


def _scorer(op: Operation):
    def score(summary):
        figures = base_figures(summary)
        figures["effective_bw"] = op.effective_rate(summary.read.bw_bytes, summary.write.bw_bytes)
        return figures
    return score


def workload(options: Kb2014Options, served: ServedBy | None = None, engine: FioEngine | None = None) -> FioWorkload:
    options = narrowed(Kb2014Options, options).with_block_default(KB2014_BLOCK_SIZE)
    operations = select(options.operations)

    def phases(test_file: Path) -> list[FioPhase]:
        layout = ([FioPhase(layout_job(options, test_file), f"write {test_file.name} in full", None)]
                  if needs_layout(operations) else [])
        # A restore's figure gets the test file's map and its restore on the model's disk beside it.
        return layout + [FioPhase(operation_job(op, options, test_file), op.title, _scorer(op),
                                  options.model_disk if op.bound else None) for op in operations]
    return FioWorkload.of("kb2014", options, phases, engine)


class Kb2014Entry(Kb2014Options, RepeatKey):
    """A recipe's `[[workload]] kind = "kb2014"` entry."""

    kind: Literal["kb2014"]


DEFINITION = Definition(
    name="kb2014",
    description="Veeam KB2014 backup operations: active full, synthetic full, reverse incremental, restores "
                "(field note C)",
    path_syntax=Syntax.FIO_JOB, options=Kb2014Options, recipe_entry=Kb2014Entry, build=workload, phases=phase_names,
    capabilities=Capabilities(fio_servers=True, kb2014_operations=True), parallelism=("iodepth", "jobs"),
    # The main job (`backupbench run`): three samples of 3 s after each operation's ramp, in the
    # time one 10 s sample took within 1.5x (bench/default_run.py), so every figure has an
    # interval and the A/A rate stays under 1 in 10 (bench/aa.py).
    sampled_by_default=(DEFAULT_SAMPLES, {"runtime": DEFAULT_SAMPLE_RUNTIME}),
)
