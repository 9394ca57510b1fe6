"""Options of `backupbench lab`, each defined once (CLI flags and help derive from here; a
recipe's `[lab]` table can use the same keys)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from backupbench import units
from backupbench.errors import InputError
from backupbench.lab.disks import DiskSpec, Throttle, parse_disks, parse_throttle
from backupbench.lab.vm import DEFAULT_WORK_PARENT
from backupbench.schema import Duration, Size

DEFAULT_DISK_RATE = "50MiB/s"


class LabOptions(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    disks: str = Field(
        "4x4GiB", description="Virtual disks, COUNTxSIZE[:FS] comma-separated; sparse files, "
        "FS (ext4, xfs, btrfs) is made on the host before boot, e.g. 4x4GiB,1x1GiB:xfs.",
        json_schema_extra={"metavar": "SPEC"},
    )
    disk_rate: str | None = Field(
        DEFAULT_DISK_RATE, description="Bandwidth limit of each disk, reads and writes together "
        "('none' for no limit; not with --disk-read-rate/--disk-write-rate).",
        json_schema_extra={"metavar": "RATE"},
    )
    disk_read_rate: str | None = Field(None, description="Read bandwidth limit of each disk, e.g. 100MiB/s.",
                                       json_schema_extra={"metavar": "RATE"})
    disk_write_rate: str | None = Field(None, description="Write bandwidth limit of each disk, e.g. 50MB/s.",
                                        json_schema_extra={"metavar": "RATE"})
    disk_iops: int | None = Field(None, ge=1, description="I/O-per-second limit of each disk, reads and writes together.",
                                  json_schema_extra={"metavar": "N"})
    disk_read_iops: int | None = Field(None, ge=1, description="Read I/O-per-second limit of each disk.",
                                       json_schema_extra={"metavar": "N"})
    disk_write_iops: int | None = Field(None, ge=1, description="Write I/O-per-second limit of each disk.",
                                        json_schema_extra={"metavar": "N"})
    memory: Size = Field(units.GiB, description="Guest memory.", json_schema_extra={"metavar": "SIZE"})
    cpus: int = Field(2, ge=1, le=16, description="Guest vCPUs (TCG runs one host thread each).",
                      json_schema_extra={"metavar": "N"})
    work_dir: Path = Field(DEFAULT_WORK_PARENT, description="Where the disk images go (a folder made and "
                           "removed per run; needs the disks' full size free).", json_schema_extra={"metavar": "DIR"})
    keep_images: bool = Field(False, description="Keep the disk images and the console log after the run (debugging).")
    timeout: Duration | None = Field(None, gt=0, description="Stop the VM if the recipe or command runs longer than "
                                                             "this [default: no limit].",
                                     json_schema_extra={"metavar": "DURATION"})

    @field_validator("disks")
    @classmethod
    def _disks(cls, value: str) -> str:
        try:
            parse_disks(value)
        except InputError as exc:
            raise ValueError(exc.message.removeprefix("--disks: ")) from exc
        return value

    @field_validator("memory")
    @classmethod
    def _memory(cls, value: int) -> int:
        if value % units.MiB or value < 256 * units.MiB:
            raise ValueError("must be whole MiB and at least 256MiB")
        return value

    @model_validator(mode="after")
    def _limits(self) -> "LabOptions":
        # The default total rate yields to explicit read/write rates instead of clashing.
        if "disk_rate" not in self.model_fields_set and (self.disk_read_rate or self.disk_write_rate):
            object.__setattr__(self, "disk_rate", None)
        try:
            self.throttle()
        except InputError as exc:
            raise ValueError(exc.message) from exc
        return self

    def disk_specs(self) -> list[DiskSpec]:
        return parse_disks(self.disks)

    def throttle(self) -> Throttle:
        return parse_throttle(self.disk_rate, self.disk_iops, read_rate=self.disk_read_rate,
                              write_rate=self.disk_write_rate, read_iops=self.disk_read_iops,
                              write_iops=self.disk_write_iops)
