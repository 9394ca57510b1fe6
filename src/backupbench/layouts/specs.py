"""What every layout spec shares: strict models, the name, the devices, the filesystem on top.

Each kind's own spec is in its module beside its planner (lvm.py, mdraid.py, ...); the
recipe composes them (layouts/registry.py). Every field has a description: the recipe
reference and the errors are made from here.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from backupbench.faults import rules
from backupbench.faults.rules import LayoutFacts
from backupbench.faults.spec import FaultSpec
from backupbench.schema import DevicePath, Flag, Size
from backupbench.units import format_size

NAME_PATTERN = r"^[a-z][a-z0-9-]{0,23}$"


class Strict(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)


# A user or group name as chown takes it (or a number); never an option such as '--reference=...'.
_ACCOUNT = r"^(?:[0-9]+|[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?)$"
# Block sizes each mkfs makes and this kernel mounts: at most the page size (4 KiB on x86).
_FS_BLOCK_SIZES = {"xfs": (1024, 2048, 4096), "ext4": (1024, 2048, 4096)}


def _tool_arguments(values: tuple[str, ...], what: str) -> tuple[str, ...]:
    """Extra mkfs or mount arguments: options and their values only. A '/' could name
    another device (mke2fs -J device=..., or a second positional argument that mkfs reads
    as a size or a device), so it is refused; so is a value that follows no option."""
    for index, value in enumerate(values):
        if "/" in value or any(ord(c) < 32 for c in value):
            raise ValueError(f"{what} may not contain '/' or control characters ({value!r}): "
                             "backupbench names every device and path itself")
        if not value.startswith("-") and (index == 0 or not values[index - 1].startswith("-")):
            raise ValueError(f"{what}: {value!r} follows no option; give options and their values only, "
                             "e.g. ['-i', 'size=512']")
    return values


class FilesystemSpec(Strict):
    type: Literal["xfs", "ext4", "btrfs"] = Field("xfs", description="Filesystem to make.")
    block_size: Size | None = Field(None, description="Filesystem block size, e.g. 4k (mkfs -b); xfs and ext4: "
                                                      "1k, 2k or 4k.")
    reflink: Flag = Field(True, description="XFS: reflink=1 (block cloning, the backup software's fast clone).")
    crc: Flag = Field(True, description="XFS: crc=1 metadata checksums.")
    mkfs_options: tuple[str, ...] = Field((), max_length=64,
                                          description="Extra mkfs options and their values, e.g. ['-i', 'size=512'].")
    mount_options: tuple[str, ...] = Field((), max_length=64, description="Mount options, e.g. ['noatime'].")
    owner: str | None = Field(None, pattern=_ACCOUNT,
                              description="chown the mounted root to this user (e.g. veeam).")
    group: str | None = Field(None, pattern=_ACCOUNT, description="chgrp the mounted root to this group.")
    mode: str | None = Field(None, description="chmod the mounted root, octal, e.g. '0700'.")

    @field_validator("mode")
    @classmethod
    def _octal(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"0?[0-7]{3,4}", value):
            raise ValueError(f"mode must be octal like '0700', not {value!r}")
        return value

    @field_validator("mkfs_options")
    @classmethod
    def _mkfs_arguments(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        return _tool_arguments(values, "mkfs_options")

    @field_validator("mount_options")
    @classmethod
    def _mount_arguments(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            if not re.fullmatch(r"[A-Za-z0-9_.=:+-]+", value):
                raise ValueError(f"mount option {value!r}: letters, digits and _.=:+- only (one option per entry)")
        return values

    @model_validator(mode="after")
    def _block_size_fits(self) -> "FilesystemSpec":
        if self.block_size is None:
            return self
        allowed = _FS_BLOCK_SIZES.get(self.type)
        if allowed is None:
            raise ValueError(f"block_size does not apply to {self.type} (its block size follows the page size)")
        if self.block_size not in allowed or (self.type == "xfs" and self.crc and self.block_size < 1024):
            raise ValueError(f"block_size {self.block_size} is not one {self.type} takes here: "
                             f"{', '.join(str(b) for b in allowed)} bytes (this kernel mounts blocks up to the "
                             "page size, 4 KiB)")
        return self


def power_of_two(value: int | None, what: str, low: int, high: int, hint: str) -> int | None:
    if value is not None and (value < low or value > high or value & (value - 1)):
        raise ValueError(f"{what} must be a power of two from {format_size(low)} to {format_size(high)} ({hint}), "
                         f"not {value:,} bytes")
    return value


def _whole_kib(value: int) -> int:
    # LVM and mdadm take sizes in KiB: refuse what they would silently round.
    if value % 1024:
        raise ValueError(f"must be a whole number of KiB (e.g. 1GiB), not {value} bytes")
    if value == 0:
        raise ValueError("must be more than 0 bytes")
    return value


# A volume size as LVM and mdadm take it: more than nothing, whole KiB.
VolumeSize = Annotated[Size, AfterValidator(_whole_kib)]


class LayoutBase(Strict):
    name: str = Field(..., pattern=NAME_PATTERN,
                      description="Short name, lower case (used in tags, VG and md names, mount paths).")
    devices: tuple[DevicePath, ...] = Field(..., min_length=1, max_length=256,
                                            description="Block devices to build on (from [devices]).")
    filesystem: FilesystemSpec | None = Field(default_factory=FilesystemSpec,
                                              description="Filesystem on top; mounted for the workloads.")
    minio: Flag = Field(False, description="Also serve the mounted filesystem with a single-drive MinIO "
                                           "(field note D: MinIO on top of RAID); s3 workloads run against it.")
    fault: FaultSpec | None = Field(None, description="Fail member(s) during the workloads and measure the "
                                                      "array healthy, degraded, rebuilding and rebuilt "
                                                      f"({rules.FAILS_MEMBERS_OF_TEXT} layouts).")

    def all_devices(self) -> tuple[str, ...]:
        """Every device the layout writes to (ZFS adds its special and log vdevs; a fault its
        replacement disks)."""
        return (*self.devices, *self.fault_replacements())

    def fault_replacements(self) -> tuple[str, ...]:
        return self.fault.disks_written() if self.fault is not None else ()

    def redundancy(self) -> int:
        """How many members may fail without losing data (0: none)."""
        return 0

    def fault_facts(self) -> LayoutFacts:
        """What the fault rules (faults/rules.py) read of this layout."""
        return LayoutFacts(self.kind, self.devices, self.redundancy(), served_by_minio=self.minio)

    @model_validator(mode="after")
    def _fault_fits(self) -> "LayoutBase":
        if self.fault is not None:
            rules.fits(self.fault, self.fault_facts())
        return self

    @model_validator(mode="after")
    def _each_device_once(self) -> "LayoutBase":
        every = self.all_devices()
        twice = sorted({d for d in every if every.count(d) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} is named twice")
        return self

    @model_validator(mode="after")
    def _fault_fits_kind(self) -> "LayoutBase":
        if self.fault is not None:
            rules.fits_kind(self.fault, self.fault_facts())
        return self
