"""btrfs over one or more devices with data and metadata profiles."""

from __future__ import annotations

from backupbench.layouts import filesystem
from backupbench.layouts.actions import Action, LayoutPlan, Requirement
from backupbench.layouts.naming import Names
from typing import Literal

from pydantic import Field

from backupbench.layouts.specs import FilesystemSpec, LayoutBase

BTRFS_PROFILES = Literal["single", "dup", "raid0", "raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6"]


class Btrfs(LayoutBase):
    kind: Literal["btrfs"]
    data: BTRFS_PROFILES = Field("single", description="Data profile (-d).")
    metadata: BTRFS_PROFILES = Field("raid1", description="Metadata profile (-m).")
    filesystem: FilesystemSpec | None = Field(default_factory=lambda: FilesystemSpec(type="btrfs"),
                                              description="Mount options, owner and mode of the btrfs.")

    def redundancy(self) -> int:
        copies = {"raid1": 1, "raid10": 1, "raid1c3": 2, "raid1c4": 3, "raid5": 1, "raid6": 2}
        return min(copies.get(self.data, 0), copies.get(self.metadata, 0))


def plan(spec: Btrfs, names: Names) -> LayoutPlan:
    fs = (spec.filesystem or FilesystemSpec(type="btrfs")).model_copy(update={"type": "btrfs"})
    mkfs = filesystem.mkfs_action(fs, spec.devices, names, wipe_on_undo=True, btrfs_profiles=(spec.data, spec.metadata))
    # Without udev nobody tells the kernel which devices form the filesystem: scan them.
    scan = Action("register the btrfs devices with the kernel", (("btrfs", "device", "scan", *spec.devices),),
                  (("btrfs", "device", "scan", "--forget", *spec.devices),))
    actions = (mkfs, scan, *filesystem.mount_actions(fs, spec.devices[0], names))
    requirements = (*filesystem.requirements(fs), Requirement("btrfs tools", "tool:btrfs"))
    return LayoutPlan(spec.name, spec.kind, spec.devices, actions, requirements, names.mount_point)
