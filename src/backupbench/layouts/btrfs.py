"""btrfs over one or more devices with data and metadata profiles."""

from __future__ import annotations

from backupbench.layouts import filesystem
from backupbench.layouts.actions import Action, LayoutPlan, Requirement
from backupbench.layouts.naming import Names
from backupbench.recipe.layouts import Btrfs, FilesystemSpec


def plan(spec: Btrfs, names: Names) -> LayoutPlan:
    fs = (spec.filesystem or FilesystemSpec(type="btrfs")).model_copy(update={"type": "btrfs"})
    mkfs = filesystem.mkfs_action(fs, spec.devices, names, wipe_on_undo=True, btrfs_profiles=(spec.data, spec.metadata))
    # Without udev nobody tells the kernel which devices form the filesystem: scan them.
    scan = Action("register the btrfs devices with the kernel", (("btrfs", "device", "scan", *spec.devices),),
                  (("btrfs", "device", "scan", "--forget", *spec.devices),))
    actions = (mkfs, scan, *filesystem.mount_actions(fs, spec.devices[0], names))
    requirements = (*filesystem.requirements(fs), Requirement("btrfs tools", "tool:btrfs"))
    return LayoutPlan(spec.name, spec.kind, spec.devices, actions, requirements, names.mount_point)
