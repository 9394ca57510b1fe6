"""MinIO layouts: one drive (minio-single) or N drives with erasure coding (minio-ec), each
drive a filesystem of its own. The server itself is started by apply around the workloads
(layouts.minio.MinioServer) and stopped before the teardown unmounts its drives.

A `fault` on minio-ec (faults/plan.py minio_fault) stacks mounts on a failed drive's folder
while the server runs: a read-only tmpfs, then the replacement. Their unmounts are planned
here, with the layout, as actions that do nothing when run and whose guards find whether the
fault got that far; the replacement is wiped with the failed drive's filesystem."""

from __future__ import annotations

import dataclasses
from typing import Literal

from pydantic import Field, model_validator

from backupbench.faults.plan import minio_fault
from backupbench.faults.rules import LayoutFacts
from backupbench.layout_model import MINIO_EC_MIN_DRIVES, ErasureSets, minio_sets
from backupbench.layouts import filesystem
from backupbench.layouts.actions import Action, Guard, LayoutPlan, Requirement
from backupbench.layouts.naming import Names

from backupbench.layouts.specs import FilesystemSpec, LayoutBase
from backupbench.schema import Count, DevicePath, Flag, key_error

class MinioSingle(LayoutBase):
    kind: Literal["minio-single"]
    devices: tuple[DevicePath, ...] = Field(..., min_length=1, max_length=1, description="The one drive.")
    minio: Flag = Field(True, description="Always served by MinIO.")


class MinioErasure(LayoutBase):
    kind: Literal["minio-ec"]
    devices: tuple[DevicePath, ...] = Field(..., min_length=MINIO_EC_MIN_DRIVES, max_length=32,
                                            description="Drives; each gets its own filesystem.")
    parity: Count | None = Field(None, ge=0, le=8, description="Parity drives per erasure set "
                                                             "(MINIO_STORAGE_CLASS_STANDARD=EC:N) [default: MinIO's].")
    minio: Flag = Field(True, description="Always served by MinIO.")

    def erasure_sets(self) -> ErasureSets:
        drives = len(self.devices)
        sets = minio_sets(drives, self.parity)
        # A count MinIO cannot split is refused by _sets_fit; the fault rules may ask first.
        return sets if sets is not None else ErasureSets(drives, drives, self.parity or 0)

    @model_validator(mode="after")
    def _sets_fit(self) -> "MinioErasure":
        drives = len(self.devices)
        sets = minio_sets(drives, self.parity)
        if sets is None:
            raise key_error("devices", f"MinIO cannot split {drives} drives into equal erasure sets of 2 to 16 "
                            "(a prime count above 16)", self.devices)
        if sets.parity > sets.size // 2:
            raise key_error("parity", f"EC:{sets.parity} is more than half of a {sets.size}-drive erasure set: "
                            f"MinIO takes EC:0 to EC:{sets.size // 2}", self.parity)
        return self

    def redundancy(self) -> int:
        return self.erasure_sets().survives

    def fault_facts(self) -> LayoutFacts:
        sets = self.erasure_sets()
        return dataclasses.replace(super().fault_facts(), erasure_parity=sets.parity, erasure_set=sets.size)


MINIO = Requirement("MinIO (scripts/install-minio.sh)", "tool:minio")


def plan_single(spec: MinioSingle, names: Names) -> LayoutPlan:
    fs = spec.filesystem or FilesystemSpec()
    actions, mount = filesystem.on_device(fs, spec.devices[0], names, raw=True)
    return LayoutPlan(spec.name, spec.kind, spec.devices, actions, (*filesystem.requirements(fs), MINIO), mount,
                      s3_drives=(mount,))


# The source name of the tmpfs that stands in for a failed drive: the guards look for it.
STAND_IN = "backupbench-failed-drive"


def plan_erasure(spec: MinioErasure, names: Names) -> LayoutPlan:
    fs = spec.filesystem or FilesystemSpec()
    root = names.mount_point
    actions: list[Action] = [Action(f"create {root}", (("mkdir", "-p", str(root)),), (("rmdir", str(root)),),
                                    Guard(("test", "-d", str(root)), ""))]
    drives = []
    replaced = _replaced(spec)
    for index, device in enumerate(spec.devices, 1):
        point = root / f"d{index}"
        # Each drive's filesystem gets its own name, so each wipe is guarded by its own mkfs.
        # A fault leaves a failed drive's filesystem intact: its label guards the wipe of its
        # replacement too.
        drive_names = dataclasses.replace(names, layout=f"{names.layout}-d{index}")
        wiped = (device, replaced[device]) if device in replaced else ()
        actions.append(filesystem.mkfs_action(fs, (device,), drive_names, wipe_on_undo=True, wiped_on_undo=wiped))
        actions += filesystem.mount_actions(fs, device, names, point)
        drives.append(point)
    env = (("MINIO_STORAGE_CLASS_STANDARD", f"EC:{spec.parity}"),) if spec.parity is not None else ()
    fault, undo_fault = _fault(spec, fs, names, tuple(str(d) for d in drives))
    notes = (f"MinIO erasure coding over {len(drives)} drives",)
    if fault is not None:
        notes += ("a fault mounts an empty read-only tmpfs over the failed drive's folder while MinIO runs; "
                  "MinIO finds the replacement by itself (some 10-15 s after it is mounted) and heals it",)
    return LayoutPlan(spec.name, spec.kind, spec.all_devices(), (*actions, *undo_fault),
                      (*filesystem.requirements(fs), MINIO), root, s3_drives=tuple(drives), s3_env=env,
                      notes=notes, fault=fault)


def _replaced(spec: MinioErasure) -> dict[str, str]:
    """Failed device -> its replacement."""
    if spec.fault is None:
        return {}
    return dict(zip(spec.fault.failed(spec.devices), spec.fault.replacements()))


def _fault(spec: MinioErasure, fs: FilesystemSpec, names: Names, drives: tuple[str, ...]):
    """The FaultPlan, and the unmounts of what it stacks on each failed drive's folder:
    actions with nothing to do, journalled with the layout, undone before its own mounts.
    findmnt lists a folder's stacked mounts bottom first: a guard that finds the tmpfs's
    name followed by a device path finds the replacement on top of it."""
    if spec.fault is None:
        return None, ()
    replaced = _replaced(spec)
    mkfs = tuple(filesystem.mkfs_argv(fs, (new,), _replacement_names(names, spec.devices.index(old) + 1).label)
                 for old, new in replaced.items())
    fault = minio_fault(spec.fault, drives=drives, devices=spec.devices, stand_in=STAND_IN, replacement_mkfs=mkfs,
                        mount_options=tuple(fs.mount_options), survives=spec.redundancy())
    undo: list[Action] = []
    for number in fault.member_ids:
        point = drives[number - 1]
        mounts = ("findmnt", "-n", "-o", "SOURCE", "--mountpoint", point)
        undo.append(Action(f"unmount the read-only tmpfs the fault puts on {point} (if it got that far)", (),
                           (("umount", point),), Guard(mounts, f"{STAND_IN}\n")))
        new = replaced.get(spec.devices[number - 1])
        if new is not None:
            undo.append(Action(f"unmount the replacement {new} from {point} (if the fault got that far)", (),
                               (("umount", point),), Guard(mounts, f"{STAND_IN}\n/")))
    return fault, tuple(undo)


def _replacement_names(names: Names, number: int) -> Names:
    return dataclasses.replace(names, layout=f"{names.layout}-r{number}")


def with_minio(plan: LayoutPlan) -> LayoutPlan:
    """`minio = true` on any other layout: serve its mount point with a single-drive MinIO."""
    if plan.mount_point is None:
        return plan
    return dataclasses.replace(plan, requirements=(*plan.requirements, MINIO), s3_drives=(plan.mount_point,))
