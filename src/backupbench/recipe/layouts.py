"""Layout specs: each kind of storage a recipe can build, with its parameters.

A layout's `kind` picks the model; every field has a description, so the recipe reference
(`backupbench recipe-help`) is generated from here.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from backupbench.schema import DevicePath, DirectoryPath, Size

NAME_PATTERN = r"^[a-z][a-z0-9-]{0,23}$"
BTRFS_PROFILES = Literal["single", "dup", "raid0", "raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
    reflink: bool = Field(True, description="XFS: reflink=1 (block cloning, the backup software's fast clone).")
    crc: bool = Field(True, description="XFS: crc=1 metadata checksums.")
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


def _power_of_two(value: int | None, what: str, low: int, high: int, hint: str) -> int | None:
    if value is not None and (value < low or value > high or value & (value - 1)):
        raise ValueError(f"{what} must be a power of two from {_kib(low)} to {_kib(high)} ({hint}), "
                         f"not {value:,} bytes")
    return value


def _kib(n: int) -> str:
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor} {unit}"
    return f"{n} bytes"


def _whole_kib(value: int | None, what: str) -> int | None:
    # LVM and mdadm take sizes in KiB: refuse what they would silently round.
    if value is not None and value % 1024:
        raise ValueError(f"{what} must be a whole number of KiB (e.g. 1GiB), not {value} bytes")
    if value is not None and value == 0:
        raise ValueError(f"{what} must be more than 0 bytes")
    return value


class LayoutBase(Strict):
    name: str = Field(..., pattern=NAME_PATTERN,
                      description="Short name, lower case (used in tags, VG and md names, mount paths).")
    devices: tuple[DevicePath, ...] = Field(..., min_length=1, max_length=256,
                                            description="Block devices to build on (from [devices]).")
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
        return self


class LvmLinear(LayoutBase):
    kind: Literal["lvm-linear"]
    size: Size | None = Field(None, description="LV size [default: all free space, -l 100%FREE].")


class LvmStriped(LayoutBase):
    kind: Literal["lvm-striped"]
    devices: tuple[DevicePath, ...] = Field(..., min_length=2, max_length=128,
                                            description="Block devices, all of equal size.")
    stripes: int | None = Field(None, ge=2, le=128, description="Number of stripes (-i) [default: one per device].")
    stripe_size: Size = Field(64 * 1024, description="Stripe size (-I), e.g. 64k, 128k, 256k; at most 4 MiB, "
                                                     "LVM's extent size.")
    size: Size | None = Field(None, description="LV size [default: all free space].")

    @field_validator("stripe_size")
    @classmethod
    def _stripe_size(cls, value: int) -> int:
        # lvcreate silently shrinks a stripe size above the extent size (4 MiB by default).
        return _power_of_two(value, "stripe_size", 4096, 4 * 2**20, "lvcreate -I, up to the 4 MiB extent")

    @model_validator(mode="after")
    def _stripes_fit(self) -> "LvmStriped":
        if self.stripes is not None and self.stripes > len(self.devices):
            raise ValueError(f"stripes ({self.stripes}) cannot exceed the number of devices ({len(self.devices)})")
        return self


class LvmThin(LayoutBase):
    kind: Literal["lvm-thin"]
    pool_size: Size | None = Field(None, description="Thin pool size [default: 90% of the VG].")
    chunk_size: Size | None = Field(None, description="Thin pool chunk size (-c), e.g. 64k: 64 KiB to 1 GiB, "
                                                     "a multiple of 64 KiB.")
    virtual_size: Size = Field(..., description="Virtual size of the thin LV (-V); may exceed the pool.")

    @field_validator("chunk_size")
    @classmethod
    def _thin_chunk(cls, value: int | None) -> int | None:
        if value is not None and (value < 64 * 1024 or value > 2**30 or value % (64 * 1024)):
            raise ValueError(f"chunk_size must be a multiple of 64 KiB from 64 KiB to 1 GiB (lvmthin), "
                             f"not {value:,} bytes")
        return value


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
    chunk: Size | None = Field(None, description="Chunk size, e.g. 64k [default: mdadm's, 512k]; a power of two "
                                                 "from 4 KiB to 1 GiB.")
    assume_clean: bool = Field(True, description="--assume-clean: skip the initial resync, which would "
                                                 "otherwise compete with the workload.")

    @field_validator("chunk")
    @classmethod
    def _chunk(cls, value: int | None) -> int | None:
        return _power_of_two(value, "chunk", 4096, 2**30, "the md driver's limits")

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
    draid_data: int | None = Field(None, ge=1, le=255, description="dRAID data disks per redundancy group (d).")
    draid_spares: int = Field(0, ge=0, le=100, description="dRAID distributed spares (s).")
    properties: dict[str, str] = Field(default_factory=dict,
                                       description="Dataset properties, e.g. {xattr='sa', atime='off', recordsize='1M'}.")
    special: tuple[DevicePath, ...] = Field((), max_length=8,
                                           description="Devices for a special (metadata) mirror vdev.")
    log: tuple[DevicePath, ...] = Field((), max_length=8, description="Devices for a log (ZIL) vdev.")
    filesystem: None = Field(None, description="ZFS is its own filesystem: leave unset.")

    @field_validator("properties")
    @classmethod
    def _properties(cls, values: dict[str, str]) -> dict[str, str]:
        for key, value in values.items():
            if not re.fullmatch(r"[a-z][a-z0-9_.:]{0,255}", key):
                raise ValueError(f"{key!r} is not a ZFS property name (lower case letters, digits, '_.:')")
            if not re.fullmatch(r"[A-Za-z0-9_.:@+,=-]{1,1024}", value):
                raise ValueError(f"property {key} = {value!r}: letters, digits and _.:@+,=- only")
        return values

    @model_validator(mode="after")
    def _vdev_fits(self) -> "Zfs":
        count = len(self.devices)
        if self.vdev.startswith("draid"):
            parity = int(self.vdev[-1])
            data = self.draid_data or 1
            # zpool: a dRAID vdev needs data + parity + spares children at the least.
            if data + parity + self.draid_spares > count:
                raise ValueError(f"{self.vdev} with {data} data, {parity} parity and {self.draid_spares} spare "
                                 f"disk(s) needs at least {data + parity + self.draid_spares} devices, got {count}")
        elif self.draid_data is not None or self.draid_spares:
            raise ValueError(f"draid_data and draid_spares apply to dRAID vdevs, not {self.vdev}")
        needed = {"mirror": 2, "raidz1": 2, "raidz2": 3, "raidz3": 4}.get(self.vdev, 1)
        if count < needed:
            raise ValueError(f"a {self.vdev} vdev needs at least {needed} devices, got {count}")
        return self


class FilesystemOnly(LayoutBase):
    kind: Literal["filesystem"]
    devices: tuple[DevicePath, ...] = Field(..., min_length=1, max_length=1, description="The one device to format.")


class MinioSingle(LayoutBase):
    kind: Literal["minio-single"]
    devices: tuple[DevicePath, ...] = Field(..., min_length=1, max_length=1, description="The one drive.")
    minio: bool = Field(True, description="Always served by MinIO.")


class MinioErasure(LayoutBase):
    kind: Literal["minio-ec"]
    devices: tuple[DevicePath, ...] = Field(..., min_length=4, max_length=32,
                                            description="Drives; each gets its own filesystem.")
    parity: int | None = Field(None, ge=0, le=8, description="Parity drives per erasure set "
                                                           "(MINIO_STORAGE_CLASS_STANDARD=EC:N) [default: MinIO's].")
    minio: bool = Field(True, description="Always served by MinIO.")


class ExistingDirectory(Strict):
    kind: Literal["directory"]
    name: str = Field(..., pattern=NAME_PATTERN, description="Short name.")
    path: DirectoryPath = Field(..., description="An existing directory (absolute path); nothing is provisioned or "
                                              "formatted.")

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
