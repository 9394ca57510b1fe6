"""btrfs over one or more devices with data and metadata profiles; a `fault` fails a member
(the filesystem remounted degraded) and `btrfs replace` rebuilds it onto a replacement."""

from __future__ import annotations

import dataclasses
from typing import Literal

from pydantic import Field, model_validator

from backupbench.faults.plan import btrfs_fault
from backupbench.faults.rules import LayoutFacts
from backupbench.layout_model import btrfs_min_devices, btrfs_survives
from backupbench.layouts import filesystem
from backupbench.layouts.actions import Action, LayoutPlan, Requirement
from backupbench.layouts.naming import Names
from backupbench.layouts.specs import FilesystemSpec, LayoutBase

BTRFS_PROFILES = Literal["single", "dup", "raid0", "raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6"]


class Btrfs(LayoutBase):
    kind: Literal["btrfs"]
    data: BTRFS_PROFILES = Field("single", description="Data profile (-d).")
    metadata: BTRFS_PROFILES = Field("raid1", description="Metadata profile (-m).")
    filesystem: FilesystemSpec | None = Field(default_factory=lambda: FilesystemSpec(type="btrfs"),
                                              description="Mount options, owner and mode of the btrfs.")

    def redundancy(self) -> int:
        return btrfs_survives(self.data, self.metadata)

    @model_validator(mode="after")
    def _enough_devices(self) -> "Btrfs":
        needed = btrfs_min_devices(self.data, self.metadata)
        if len(self.devices) < needed:
            raise ValueError(f"btrfs data {self.data} with metadata {self.metadata} needs at least {needed} "
                             f"devices, got {len(self.devices)}")
        return self

    def fault_facts(self) -> LayoutFacts:
        return dataclasses.replace(super().fault_facts(), shape=f" (data {self.data}, metadata {self.metadata})")


def plan(spec: Btrfs, names: Names) -> LayoutPlan:
    fs = (spec.filesystem or FilesystemSpec(type="btrfs")).model_copy(update={"type": "btrfs"})
    failed = spec.fault.failed(spec.devices) if spec.fault is not None else ()
    # A failed member's superblock is wiped by the fault: the label is checked on a survivor.
    survivor = next(d for d in spec.devices if d not in failed)
    mkfs = filesystem.mkfs_action(fs, spec.devices, names, wipe_on_undo=True, btrfs_profiles=(spec.data, spec.metadata),
                                  wiped_on_undo=spec.all_devices(), guard_device=survivor)
    # Without udev nobody tells the kernel which devices form the filesystem: scan them.
    scan = Action("register the btrfs devices with the kernel", (("btrfs", "device", "scan", *spec.devices),),
                  (("btrfs", "device", "scan", "--forget", *spec.all_devices()),))
    actions = (mkfs, scan, *filesystem.mount_actions(fs, spec.devices[0], names))
    requirements = (*filesystem.requirements(fs), Requirement("btrfs tools", "tool:btrfs"))
    fault = (btrfs_fault(spec.fault, mount_point=str(names.mount_point), devices=spec.devices,
                         mount_options=tuple(fs.mount_options), survives=spec.redundancy())
             if spec.fault is not None else None)
    notes = ("a fault remounts the btrfs -o degraded: chunks written while degraded may be single copies "
             "until a balance",) if fault else ()
    return LayoutPlan(spec.name, spec.kind, spec.all_devices(), actions, requirements, names.mount_point,
                      notes=notes, fault=fault)
