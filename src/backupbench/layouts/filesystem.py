"""mkfs, mount, owner and mode on top of any block device a layout made."""

from __future__ import annotations

from pathlib import Path

from backupbench.layouts.actions import Action, Guard, LayoutPlan, Requirement
from backupbench.layouts.naming import Names
from typing import Literal

from pydantic import Field

from backupbench.layouts.specs import FilesystemSpec, LayoutBase
from backupbench.schema import DevicePath


class FilesystemOnly(LayoutBase):
    kind: Literal["filesystem"]
    devices: tuple[DevicePath, ...] = Field(..., min_length=1, max_length=1, description="The one device to format.")


def mkfs_argv(spec: FilesystemSpec, devices: tuple[str, ...], label: str, btrfs_profiles: tuple[str, str] | None = None) -> tuple[str, ...]:
    if spec.type == "xfs":
        meta = f"reflink={int(spec.reflink)},crc={int(spec.crc)}"
        block = ("-b", f"size={spec.block_size}") if spec.block_size else ()
        return ("mkfs.xfs", "-f", "-L", label, *block, "-m", meta, *spec.mkfs_options, *devices)
    if spec.type == "ext4":
        block = ("-b", str(spec.block_size)) if spec.block_size else ()
        # lazy init off: background zeroing would otherwise compete with the workload.
        return ("mkfs.ext4", "-F", "-q", "-L", label, "-E", "lazy_itable_init=0,lazy_journal_init=0",
                *block, *spec.mkfs_options, *devices)
    profiles = ("-d", btrfs_profiles[0], "-m", btrfs_profiles[1]) if btrfs_profiles else ()
    return ("mkfs.btrfs", "-f", "-L", label, *profiles, *spec.mkfs_options, *devices)


def requirements(spec: FilesystemSpec) -> tuple[Requirement, ...]:
    tool = {"xfs": "mkfs.xfs", "ext4": "mkfs.ext4", "btrfs": "mkfs.btrfs"}[spec.type]
    return (Requirement(tool, f"tool:{tool}"), Requirement(f"{spec.type} filesystem", f"kernel:fs:{spec.type}"))


def mkfs_action(spec: FilesystemSpec, devices: tuple[str, ...], names: Names, *, wipe_on_undo: bool,
                btrfs_profiles: tuple[str, str] | None = None, wiped_on_undo: tuple[str, ...] = (),
                guard_device: str | None = None) -> Action:
    """mkfs on `devices`. On a raw device we also own the signature and wipe it on undo
    (with `wiped_on_undo`: those devices, e.g. also a fault's replacement; the label is
    checked on `guard_device`, one a fault leaves alone); on an LV or md device removing that
    device is the undo."""
    undo = tuple(("wipefs", "-a", d) for d in wiped_on_undo or devices) if wipe_on_undo else ()
    guard = (Guard(("blkid", "-p", "-o", "value", "-s", "LABEL", guard_device or devices[0]), names.label)
             if wipe_on_undo else None)
    return Action(f"make {spec.type} on {', '.join(devices)}", (mkfs_argv(spec, devices, names.label, btrfs_profiles),),
                  undo, guard, destructive=wipe_on_undo)


def mount_actions(spec: FilesystemSpec, device: str, names: Names, point: Path | None = None) -> tuple[Action, ...]:
    point = str(point or names.mount_point)
    options = ("-o", ",".join(spec.mount_options)) if spec.mount_options else ()
    actions = [
        # After a reboot /run is empty: a mount point that is gone is done, not a failure.
        # Guards answer by exit status: findmnt and ls print a path escaped in some locales.
        Action(f"create mount point {point}", (("mkdir", "-p", point),), (("rmdir", point),),
               Guard(("test", "-d", point), "")),
        Action(f"mount {device} on {point}", (("mount", *options, device, point),), (("umount", point),),
               Guard(("mountpoint", "-q", point), "")),
    ]
    if spec.owner or spec.group:
        owner = f"{spec.owner or ''}{':' + spec.group if spec.group else ''}"
        actions.append(Action(f"chown {owner} {point}", (("chown", owner, point),)))
    if spec.mode:
        actions.append(Action(f"chmod {spec.mode} {point}", (("chmod", spec.mode, point),)))
    return tuple(actions)


def on_device(spec: FilesystemSpec | None, device: str, names: Names, *, raw: bool) -> tuple[tuple[Action, ...], Path | None]:
    if spec is None:
        return (), None
    return (mkfs_action(spec, (device,), names, wipe_on_undo=raw), *mount_actions(spec, device, names)), names.mount_point


def plan(spec: FilesystemOnly, names: Names) -> LayoutPlan:
    """A filesystem straight on one device: the signature is ours, and wiped on undo."""
    actions, mount = on_device(spec.filesystem, spec.devices[0], names, raw=True)
    reqs = requirements(spec.filesystem) if spec.filesystem else ()
    return LayoutPlan(spec.name, spec.kind, spec.devices, actions, reqs, mount)
