"""ZFS pools: stripe, mirror, raidz1/2/3 and dRAID vdevs, special and log vdevs, ashift and
dataset properties (field note D chose `draid2:3g:2s`).

The pool carries the user property backupbench:run=<run id>; only such a pool is destroyed.
zpool partitions every whole disk it is given (data in partition 1, 8 MiB reserved in 9), so
teardown is `zpool destroy`, then `zpool labelclear` on each partition 1 and `wipefs -a` on each
disk: the disks end as empty as they were checked to be, ready for the next layout.
"""

from __future__ import annotations

import re
import dataclasses
from typing import Literal

from pydantic import Field, field_validator, model_validator

from backupbench.faults.plan import zfs_fault
from backupbench.faults.rules import LayoutFacts
from backupbench.layout_model import ZFS_MIN_MEMBERS, draid_min_children, zfs_survives
from backupbench.layouts import zfs_properties
from backupbench.layouts.actions import Action, Guard, LayoutPlan, Requirement
from backupbench.layouts.naming import Names
from backupbench.layouts.specs import LayoutBase
from backupbench.schema import Count, DevicePath, key_error

RUN_PROPERTY = "backupbench:run"
DRAID_MAX_CHILDREN = 255
# zpool(8): symlinks under these take a "-partN" suffix, other paths "N" or "pN".
UDEV_ROOTS = ("/dev/disk/", "/dev/zvol/")


class Zfs(LayoutBase):
    kind: Literal["zfs"]
    vdev: Literal["stripe", "mirror", "raidz1", "raidz2", "raidz3", "draid1", "draid2", "draid3"] = Field(
        "raidz2", description="Vdev type.")
    draid_data: Count | None = Field(None, ge=1, le=255, description="dRAID data disks per redundancy group (d).")
    draid_spares: Count = Field(0, ge=0, le=100, description="dRAID distributed spares (s).")
    ashift: Count | None = Field(None, ge=9, le=16, description="Pool sector size as a power of two "
                                                              "(12: 4 KiB); unset: ZFS asks the disks.")
    properties: dict[str, str] = Field(default_factory=dict,
                                       description="Dataset properties, e.g. {xattr='sa', atime='off', recordsize='1M'}.")
    special: tuple[DevicePath, ...] = Field((), max_length=8,
                                           description="Devices for a special (metadata) vdev, a mirror if 2 or more.")
    log: tuple[DevicePath, ...] = Field((), max_length=8,
                                       description="Devices for a log (ZIL) vdev, a mirror if 2 or more.")
    filesystem: None = Field(None, description="ZFS is its own filesystem: leave unset.")

    def pool_devices(self) -> tuple[str, ...]:
        return (*self.devices, *self.special, *self.log)

    def all_devices(self) -> tuple[str, ...]:
        return (*self.pool_devices(), *self.fault_replacements())

    def redundancy(self) -> int:
        return redundancy(self)

    def fault_facts(self) -> LayoutFacts:
        return dataclasses.replace(super().fault_facts(), shape=f" ({self.vdev})", draid_parity=self.draid_parity(),
                                   distributed_spares=self.draid_spares)

    def draid_parity(self) -> int | None:
        return int(self.vdev[-1]) if self.vdev.startswith("draid") else None

    @field_validator("properties")
    @classmethod
    def _properties(cls, values: dict[str, str]) -> dict[str, str]:
        for key, value in values.items():
            if not re.fullmatch(r"[a-z][a-z0-9_.:-]{0,255}", key):
                raise ValueError(f"{key!r} is not a ZFS property name (lower case letters, digits, '_.:-')")
            if not re.fullmatch(r"[A-Za-z0-9_.:@+,=-]{1,1024}", value):
                raise ValueError(f"property {key} = {value!r}: letters, digits and _.:@+,=- only")
            if key == RUN_PROPERTY:
                raise ValueError(f"{RUN_PROPERTY} is backupbench's own tag: leave it out")
            why = zfs_properties.problem(key, value)
            if why:
                raise ValueError(why)
        return values

    @model_validator(mode="after")
    def _each_device_once(self) -> "Zfs":
        data = set(self.devices)
        for role, devices in (("special", self.special), ("log", self.log)):
            shared = sorted(data & set(devices))
            if shared:
                raise ValueError(f"{', '.join(shared)} is in the data vdev and in the {role} vdev: "
                                 f"give the {role} vdev its own devices")
        both = sorted(set(self.special) & set(self.log))
        if both:
            raise ValueError(f"{', '.join(both)} is in the special and in the log vdev")
        return super()._each_device_once()

    @model_validator(mode="after")
    def _vdev_fits(self) -> "Zfs":
        """Each refusal names the key it is about (layout[3].draid_data, not layout[3])."""
        count = len(self.devices)
        if self.vdev.startswith("draid"):
            self._draid_fits(count)
        elif self.draid_data is not None or self.draid_spares:
            key = "draid_data" if self.draid_data is not None else "draid_spares"
            raise key_error(key, f"draid_data and draid_spares apply to dRAID vdevs, not {self.vdev}",
                            getattr(self, key))
        needed = ZFS_MIN_MEMBERS.get(self.vdev, 1)
        if count < needed:
            raise key_error("devices", f"a {self.vdev} vdev needs at least {needed} devices, got {count}",
                            self.devices)
        # zpool refuses (without -f, which would also override its in-use checks) a special
        # vdev less or more redundant than the data: a mirror of redundancy + 1 devices.
        copies = redundancy(self) + 1
        if self.special and len(self.special) != copies:
            raise key_error("special", f"a special vdev next to {self.vdev} needs {copies} device(s) "
                            f"({'a ' + str(copies) + '-way mirror, ' if copies > 1 else ''}as redundant as the "
                            f"data), got {len(self.special)}", self.special)
        return self

    def _draid_fits(self, count: int) -> None:
        parity = int(self.vdev[-1])
        if count > DRAID_MAX_CHILDREN:
            raise key_error("devices", f"a dRAID vdev takes at most {DRAID_MAX_CHILDREN} devices, got {count}",
                            self.devices)
        data = self.draid_data or 1
        needed = draid_min_children(parity, data, self.draid_spares)
        if needed > count:
            # The key to change: the data disks if given, else the spares, else the devices.
            key = "draid_data" if self.draid_data is not None else "draid_spares" if self.draid_spares else "devices"
            raise key_error(key, f"{draid_spec(self)} does not fit {count} devices: {data} data + {parity} parity"
                            f" + {self.draid_spares} spare need at least {needed}",
                            getattr(self, key))


def redundancy(spec: Zfs) -> int:
    """How many devices of the data vdev may fail."""
    return zfs_survives(spec.vdev, len(spec.devices))


def draid_spec(spec: Zfs) -> str:
    """zpool's dRAID vdev: draid<p>[:<d>d][:<c>c][:<s>s]."""
    parity = spec.vdev.removeprefix("draid")
    data = f":{spec.draid_data}d" if spec.draid_data else ""
    spares = f":{spec.draid_spares}s" if spec.draid_spares else ""
    return f"draid{parity}{data}:{len(spec.devices)}c{spares}"


def vdev_args(spec: Zfs) -> tuple[str, ...]:
    devices = spec.devices
    if spec.vdev == "stripe":
        return devices
    if spec.vdev.startswith("draid"):
        return (draid_spec(spec), *devices)
    return (spec.vdev, *devices)


def _group(role: str, devices: tuple[str, ...]) -> tuple[str, ...]:
    if not devices:
        return ()
    return (role, *(("mirror",) if len(devices) > 1 else ()), *devices)


def first_partition(device: str) -> str:
    """The partition zpool puts a whole disk's data in, named as zpool names it."""
    if device.startswith(UDEV_ROOTS):
        return f"{device}-part1"
    return f"{device}p1" if device[-1:].isdigit() else f"{device}1"


def plan(spec: Zfs, names: Names) -> LayoutPlan:
    properties = tuple(arg for key, value in sorted(spec.properties.items()) for arg in ("-O", f"{key}={value}"))
    pool_options = ("-o", f"ashift={spec.ashift}") if spec.ashift else ()
    create = ("zpool", "create", *pool_options, "-m", str(names.mount_point), "-O", f"{RUN_PROPERTY}={names.run_id}",
              *properties, names.pool, *vdev_args(spec), *_group("special", spec.special), *_group("log", spec.log))
    pool_devices = spec.pool_devices()
    undo = (("zpool", "destroy", names.pool),
            *(("zpool", "labelclear", "-f", first_partition(d)) for d in pool_devices),
            *(("wipefs", "-a", d) for d in pool_devices))
    pool = Action(f"make ZFS pool {names.pool} ({draid_spec(spec) if spec.vdev.startswith('draid') else spec.vdev})",
                  (create,), undo,
                  Guard(("zfs", "get", "-H", "-o", "value", RUN_PROPERTY, names.pool), names.run_id), destructive=True)
    # zpool makes a missing mount point itself and leaves it behind on destroy: made and
    # removed here, like every other layout's.
    point = str(names.mount_point)
    mount_point = Action(f"create mount point {point}", (("mkdir", "-p", point),), (("rmdir", point),),
                         Guard(("test", "-d", point), ""))
    requirements = (Requirement("ZFS kernel module", "kernel:zfs"), Requirement("zpool (zfsutils-linux)", "tool:zpool"))
    fault = None
    if spec.fault is not None:
        fault = zfs_fault(spec.fault, pool=names.pool, devices=spec.devices, draid_parity=spec.draid_parity(),
                          draid_spares=spec.draid_spares, survives=spec.redundancy())
    return LayoutPlan(spec.name, spec.kind, spec.all_devices(),
                      (mount_point, *_replacement_clears(spec), pool), requirements, names.mount_point,
                      whole_disks=True, fault=fault)


def _replacement_clears(spec: Zfs) -> tuple[Action, ...]:
    """A fault's replacement disk is partitioned by `zpool replace` only if the run got that
    far: its labels are cleared after the pool is destroyed, when its partition exists."""
    return tuple(Action(f"clear the pool label of replacement {device}", (),
                        (("zpool", "labelclear", "-f", first_partition(device)), ("wipefs", "-a", device)),
                        Guard(("test", "-b", first_partition(device)), ""))
                 for device in spec.fault_replacements())
