"""Layout kind -> its planner."""

from __future__ import annotations

from pathlib import Path

from backupbench.layouts import btrfs, filesystem, lvm, mdraid, minio_plan, zfs
from backupbench.layouts.actions import LayoutPlan
from backupbench.layouts.naming import DEFAULT_MOUNT_ROOT, Names
from backupbench.recipe import layouts as specs


def plan_layout(spec, run_id: str, mount_root: Path = DEFAULT_MOUNT_ROOT) -> LayoutPlan:
    names = Names(run_id, spec.name, mount_root)
    if isinstance(spec, specs.ExistingDirectory):
        return LayoutPlan(spec.name, spec.kind, (), (), (), Path(spec.path))
    if isinstance(spec, specs.FilesystemOnly):
        actions, mount = filesystem.on_device(spec.filesystem, spec.devices[0], names, raw=True)
        reqs = filesystem.requirements(spec.filesystem) if spec.filesystem else ()
        plan = LayoutPlan(spec.name, spec.kind, spec.devices, actions, reqs, mount)
        return minio_plan.with_minio(plan) if spec.minio else plan
    planners = {
        specs.LvmLinear: lvm.plan_linear, specs.LvmStriped: lvm.plan_striped, specs.LvmThin: lvm.plan_thin,
        specs.LvmSnapshot: lvm.plan_snapshot, specs.MdRaid: mdraid.plan, specs.Btrfs: btrfs.plan, specs.Zfs: zfs.plan,
        specs.MinioSingle: minio_plan.plan_single, specs.MinioErasure: minio_plan.plan_erasure,
    }
    plan = planners[type(spec)](spec, names)
    if spec.minio and not plan.s3_drives:
        plan = minio_plan.with_minio(plan)
    return plan
