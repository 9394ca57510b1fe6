"""Layout specs: each kind of storage a recipe can build, with its parameters.

A layout's `kind` picks the model; every field has a description, so the recipe reference
(`backupbench recipe-help`) is generated from here.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from backupbench.recipe.types import Size

NAME_PATTERN = r"^[a-z][a-z0-9-]{0,23}$"
BTRFS_PROFILES = Literal["single", "dup", "raid0", "raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FilesystemSpec(Strict):
    type: Literal["xfs", "ext4", "btrfs"] = Field("xfs", description="Filesystem to make.")
    block_size: Size | None = Field(None, description="Filesystem block size, e.g. 4k (mkfs -b).")
    reflink: bool = Field(True, description="XFS: reflink=1 (block cloning, the backup software's fast clone).")
    crc: bool = Field(True, description="XFS: crc=1 metadata checksums.")
    mkfs_options: tuple[str, ...] = Field((), description="Extra mkfs arguments, passed as given.")
    mount_options: tuple[str, ...] = Field((), description="Mount options, e.g. ['noatime'].")
    owner: str | None = Field(None, description="chown the mounted root to this user (e.g. veeam).")
    group: str | None = Field(None, description="chgrp the mounted root to this group.")
    mode: str | None = Field(None, description="chmod the mounted root, octal, e.g. '0700'.")

    @field_validator("mode")
    @classmethod
    def _octal(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"0?[0-7]{3,4}", value):
            raise ValueError(f"mode must be octal like '0700', not {value!r}")
        return value


def _power_of_two_kib(value: int | None, what: str) -> int | None:
    if value is not None and (value < 4096 or value & (value - 1)):
        raise ValueError(f"{what} must be a power of two of at least 4 KiB (e.g. 64k), not {value} bytes")
    return value


def _whole_kib(value: int | None, what: str) -> int | None:
    # LVM and mdadm take sizes in KiB: refuse what they would silently round.
    if value is not None and value % 1024:
        raise ValueError(f"{what} must be a whole number of KiB (e.g. 1GiB), not {value} bytes")
    return value


class LayoutBase(Strict):
    name: str = Field(..., pattern=NAME_PATTERN,
                      description="Short name, lower case (used in tags, VG and md names, mount paths).")
    devices: tuple[str, ...] = Field(..., min_length=1, description="Block devices to build on (from [devices]).")
    filesystem: FilesystemSpec | None = Field(default_factory=FilesystemSpec,
                                              description="Filesystem on top; mounted for the workloads.")
    minio: bool = Field(False, description="Also serve the mounted filesystem with a single-drive MinIO "
                                           "(field note D: MinIO on top of RAID); s3 workloads run against it.")

    @model_validator(mode="after")
    def _sizes_and_devices(self) -> "LayoutBase":
        every = [*self.devices, *getattr(self, "special", ()), *getattr(self, "log", ())]
        twice = sorted({d for d in every if every.count(d) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} is named twice")
        for field in ("size", "pool_size", "virtual_size", "origin_size", "snapshot_size"):
            _whole_kib(getattr(self, field, None), field)
        for field in ("stripe_size", "chunk_size", "chunk"):
            _power_of_two_kib(getattr(self, field, None), field)
        return self


class LvmLinear(LayoutBase):
    kind: Literal["lvm-linear"]
    size: Size | None = Field(None, description="LV size [default: all free space, -l 100%FREE].")


class LvmStriped(LayoutBase):
    kind: Literal["lvm-striped"]
    devices: tuple[str, ...] = Field(..., min_length=2, description="Block devices, all of equal size.")
    stripes: int | None = Field(None, ge=2, description="Number of stripes (-i) [default: one per device].")
    stripe_size: Size = Field(64 * 1024, description="Stripe size (-I), e.g. 64k, 128k, 256k.")
    size: Size | None = Field(None, description="LV size [default: all free space].")

    @model_validator(mode="after")
    def _stripes_fit(self) -> "LvmStriped":
        if self.stripes is not None and self.stripes > len(self.devices):
            raise ValueError(f"stripes ({self.stripes}) cannot exceed the number of devices ({len(self.devices)})")
        return self


class LvmThin(LayoutBase):
    kind: Literal["lvm-thin"]
    pool_size: Size | None = Field(None, description="Thin pool size [default: 90% of the VG].")
    chunk_size: Size | None = Field(None, description="Thin pool chunk size (-c), e.g. 64k.")
    virtual_size: Size = Field(..., description="Virtual size of the thin LV (-V); may exceed the pool.")


class LvmSnapshot(LayoutBase):
    kind: Literal["lvm-snapshot"]
    origin_size: Size = Field(..., description="Size of the origin LV the workload runs on.")
    snapshots: int = Field(1, ge=0, le=8, description="Number of snapshots of the origin, taken before the workload.")
    snapshot_size: Size | None = Field(None, description="Size of each classic (CoW) snapshot; unused with thin.")
    thin: bool = Field(False, description="Thin origin and thin snapshots instead of classic CoW snapshots.")

    @model_validator(mode="after")
    def _size_given(self) -> "LvmSnapshot":
        if self.snapshots and not self.thin and self.snapshot_size is None:
            raise ValueError("classic snapshots need snapshot_size (e.g. '30GiB')")
        return self


class MdRaid(LayoutBase):
    kind: Literal["mdraid"]
    level: Literal[0, 1, 5, 6, 10] = Field(..., description="RAID level.")
    chunk: Size | None = Field(None, description="Chunk size, e.g. 64k [default: mdadm's, 512k].")
    assume_clean: bool = Field(True, description="--assume-clean: skip the initial resync, which would "
                                                 "otherwise compete with the workload.")

    @model_validator(mode="after")
    def _enough_devices(self) -> "MdRaid":
        needed = {0: 2, 1: 2, 5: 3, 6: 4, 10: 2}[self.level]
        if len(self.devices) < needed:
            raise ValueError(f"RAID {self.level} needs at least {needed} devices, got {len(self.devices)}")
        return self


class Btrfs(LayoutBase):
    kind: Literal["btrfs"]
    data: BTRFS_PROFILES = Field("single", description="Data profile (-d).")
    metadata: BTRFS_PROFILES = Field("raid1", description="Metadata profile (-m).")
    filesystem: FilesystemSpec | None = Field(default_factory=lambda: FilesystemSpec(type="btrfs"),
                                              description="Mount options, owner and mode of the btrfs.")


class Zfs(LayoutBase):
    kind: Literal["zfs"]
    vdev: Literal["stripe", "mirror", "raidz1", "raidz2", "raidz3", "draid1", "draid2", "draid3"] = Field(
        "raidz2", description="Vdev type.")
    draid_data: int | None = Field(None, ge=1, description="dRAID data disks per redundancy group (d).")
    draid_spares: int = Field(0, ge=0, description="dRAID distributed spares (s).")
    properties: dict[str, str] = Field(default_factory=dict,
                                       description="Dataset properties, e.g. {xattr='sa', atime='off', recordsize='1M'}.")
    special: tuple[str, ...] = Field((), description="Devices for a special (metadata) mirror vdev.")
    log: tuple[str, ...] = Field((), description="Devices for a log (ZIL) vdev.")
    filesystem: None = Field(None, description="ZFS is its own filesystem: leave unset.")


class FilesystemOnly(LayoutBase):
    kind: Literal["filesystem"]
    devices: tuple[str, ...] = Field(..., min_length=1, max_length=1, description="The one device to format.")


class MinioSingle(LayoutBase):
    kind: Literal["minio-single"]
    devices: tuple[str, ...] = Field(..., min_length=1, max_length=1, description="The one drive.")
    minio: bool = Field(True, description="Always served by MinIO.")


class MinioErasure(LayoutBase):
    kind: Literal["minio-ec"]
    devices: tuple[str, ...] = Field(..., min_length=4, description="Drives; each gets its own filesystem.")
    parity: int | None = Field(None, ge=0, le=8, description="Parity drives per erasure set "
                                                           "(MINIO_STORAGE_CLASS_STANDARD=EC:N) [default: MinIO's].")
    minio: bool = Field(True, description="Always served by MinIO.")


class ExistingDirectory(Strict):
    kind: Literal["directory"]
    name: str = Field(..., pattern=NAME_PATTERN, description="Short name.")
    path: str = Field(..., description="An existing directory; nothing is provisioned or formatted.")

    @property
    def devices(self) -> tuple[str, ...]:
        return ()


Layout = Annotated[
    Union[LvmLinear, LvmStriped, LvmThin, LvmSnapshot, MdRaid, Btrfs, Zfs, FilesystemOnly, MinioSingle,
          MinioErasure, ExistingDirectory],
    Field(discriminator="kind"),
]
LAYOUT_KINDS = ("lvm-linear", "lvm-striped", "lvm-thin", "lvm-snapshot", "mdraid", "btrfs", "zfs",
                "filesystem", "minio-single", "minio-ec", "directory")
