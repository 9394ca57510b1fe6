"""Options of `backupbench lab`, each defined once (CLI flags and help derive from here; a
recipe's `[lab]` table can use the same keys)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from backupbench import units
from backupbench.errors import InputError
from backupbench.lab.diskmodel import DEFAULT_QUEUE_DEPTH, DiskModel
from backupbench.lab.disks import DiskSpec, Throttle, parse_disks, parse_throttle
from backupbench.lab.vm import DEFAULT_WORK_PARENT
from backupbench.schema import Duration, Size

DEFAULT_DISK_RATE = "50MiB/s"
# The disk model's settings: refused without --disk-model hdd, where they would silently do nothing.
MODEL_KEYS = ("seek_time", "track_seek", "rpm", "transfer_rate", "disk_queue_depth")


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
    disk_model: Literal["none", "hdd"] = Field(
        "none", description="'hdd': every disk is served through nbdkit by a model of a spinning disk that "
        "seeks (one request at a time, seek + rotation + transfer, what is queued served in an elevator's "
        "order; --seek-time, --track-seek, --rpm, --transfer-rate, --disk-queue-depth); then no --disk-rate "
        "unless given. 'none': QEMU reads the image files.",
        json_schema_extra={"metavar": "MODEL"})
    seek_time: str = Field("8.5ms", description="The model disk's average seek, over random positions on the "
                           "whole disk (as datasheets quote it).", json_schema_extra={"metavar": "TIME"})
    track_seek: str = Field("0.8ms", description="The model disk's shortest seek (track to track).",
                            json_schema_extra={"metavar": "TIME"})
    rpm: int = Field(7200, ge=1000, le=20000, description="The model disk's spindle speed: each seek also waits "
                     "half a revolution.", json_schema_extra={"metavar": "N"})
    transfer_rate: str = Field("200MB/s", description="The model disk's sequential speed (one rate for the whole "
                               "disk).", json_schema_extra={"metavar": "RATE"})
    disk_queue_depth: int = Field(DEFAULT_QUEUE_DEPTH, ge=1, le=256, description="How many waiting requests the "
                                  "model disk chooses the next among, as a SATA disk's command queue (NCQ: 32); "
                                  "1 serves them in arrival order. QEMU sends an NBD disk at most 16 at once.",
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
        # The default total rate yields to explicit read/write rates instead of clashing, and to
        # the disk model, whose transfer rate is the disk's speed.
        if "disk_rate" not in self.model_fields_set and (self.disk_read_rate or self.disk_write_rate
                                                         or self.disk_model != "none"):
            object.__setattr__(self, "disk_rate", None)
        try:
            self.throttle()
        except InputError as exc:
            raise ValueError(exc.message) from exc
        given = [key for key in MODEL_KEYS if key in self.model_fields_set]
        if given and self.disk_model == "none":
            raise ValueError(f"--{given[0].replace('_', '-')} is a setting of the disk model: add --disk-model hdd")
        self.seeking_model()
        return self

    def seeking_model(self) -> DiskModel | None:
        """The seeking disk model asked for, or None for plain image files."""
        if self.disk_model == "none":
            return None
        values = {}
        for key, parse in (("seek_time", units.parse_duration), ("track_seek", units.parse_duration),
                           ("transfer_rate", units.parse_rate)):
            try:
                values[key] = parse(getattr(self, key))
            except ValueError as exc:
                raise ValueError(f"--{key.replace('_', '-')}: {exc}") from exc
        if values["transfer_rate"] <= 0 or values["track_seek"] <= 0:
            raise ValueError("--track-seek and --transfer-rate must be more than 0")
        try:
            return DiskModel(average_seek_ns=round(values["seek_time"] * 1e9),
                             track_seek_ns=round(values["track_seek"] * 1e9), rpm=self.rpm,
                             transfer_rate=values["transfer_rate"], queue_depth=self.disk_queue_depth)
        except ValueError as exc:
            raise ValueError(f"--seek-time {self.seek_time}, --track-seek {self.track_seek}: {exc}") from exc

    def disk_specs(self) -> list[DiskSpec]:
        return parse_disks(self.disks)

    def throttle(self) -> Throttle:
        return parse_throttle(self.disk_rate, self.disk_iops, read_rate=self.disk_read_rate,
                              write_rate=self.disk_write_rate, read_iops=self.disk_read_iops,
                              write_iops=self.disk_write_iops)
