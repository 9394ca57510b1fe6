"""Options of the backup-operation suite (`backupbench run`), each defined once.

The CLI flags, their help text and later the recipe keys are derived from these fields.
`json_schema_extra["flag_help"]` holds the unit/example shown in --help.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from backupbench import units
from backupbench.schema import Duration, Size, comma_list, no_repeats
from backupbench.schema import validate
from backupbench.workloads.kb2014 import OPERATION_NAMES

OperationName = Literal[OPERATION_NAMES]  # type: ignore[valid-type]
IoEngine = Literal["libaio", "io_uring", "psync"]
# Linux moves at most 2 GiB - 4 KiB in one read or write call: a larger block is split.
MAX_BLOCK_SIZE = units.GiB
MIN_FILE_SIZE = 4 * units.KiB


class SuiteOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

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
    block_size: Size | None = Field(
        None, description="I/O block size, a multiple of 4 KiB up to 1 GiB [default: 512k for kb2014 as in "
        "Veeam KB2014, 1m for first-write].",
        json_schema_extra={"metavar": "SIZE", "example": "512k"},
    )
    jobs: int = Field(
        1, ge=1, le=256, description="Parallel fio jobs; each gets its own region of the file.",
        json_schema_extra={"metavar": "N"},
    )
    iodepth: int | None = Field(
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
    backup_size: Size | None = Field(
        None, description="Size of a full backup; prints the backup windows.",
        json_schema_extra={"metavar": "SIZE", "example": "10TiB"},
    )
    buffered: bool = Field(
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

    @field_validator("backup_size")
    @classmethod
    def _backup(cls, value: int | None) -> int | None:
        if value == 0:
            raise ValueError("a full backup of 0 bytes has no window")
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
        return validate(SuiteOptions, {**self.model_dump(), "block_size": block_size},
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
