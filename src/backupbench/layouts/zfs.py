"""ZFS pools: raidz, mirror, stripe and dRAID vdevs, dataset properties, special and log vdevs.
The pool carries the user property backupbench:run=<run id>; only such a pool is destroyed."""

from __future__ import annotations

from backupbench.layouts.actions import Action, Guard, LayoutPlan, Requirement
from backupbench.layouts.naming import Names
import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from backupbench.layouts.specs import LayoutBase
from backupbench.schema import DevicePath

RUN_PROPERTY = "backupbench:run"


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

    def all_devices(self) -> tuple[str, ...]:
        return (*self.devices, *self.special, *self.log)

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


def vdev_args(spec: Zfs) -> tuple[str, ...]:
    devices = spec.devices
    if spec.vdev == "stripe":
        return devices
    if spec.vdev.startswith("draid"):
        parity = spec.vdev.removeprefix("draid")
        data = f":{spec.draid_data}d" if spec.draid_data else ""
        spares = f":{spec.draid_spares}s" if spec.draid_spares else ""
        return (f"draid{parity}{data}:{len(devices)}c{spares}", *devices)
    return (spec.vdev, *devices)


def plan(spec: Zfs, names: Names) -> LayoutPlan:
    properties = tuple(arg for key, value in sorted(spec.properties.items()) for arg in ("-O", f"{key}={value}"))
    special = ("special", *(("mirror",) if len(spec.special) > 1 else ()), *spec.special) if spec.special else ()
    log = ("log", *spec.log) if spec.log else ()
    create = ("zpool", "create", "-m", str(names.mount_point), "-O", f"{RUN_PROPERTY}={names.run_id}",
              *properties, names.pool, *vdev_args(spec), *special, *log)
    all_devices = (*spec.devices, *spec.special, *spec.log)
    pool = Action(f"make ZFS pool {names.pool} ({spec.vdev})", (create,),
                  (("zpool", "destroy", names.pool), *(("zpool", "labelclear", "-f", d) for d in all_devices)),
                  Guard(("zfs", "get", "-H", "-o", "value", RUN_PROPERTY, names.pool), names.run_id), destructive=True)
    requirements = (Requirement("ZFS kernel module", "kernel:zfs"), Requirement("zpool (zfsutils-linux)", "tool:zpool"))
    return LayoutPlan(spec.name, spec.kind, all_devices, (pool,), requirements, names.mount_point)
