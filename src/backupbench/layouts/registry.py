"""Every layout kind: its spec (the recipe keys) and its planner. A recipe's `kind = "NAME"`.

Adding a layout kind is one module in this folder (its spec and its planner: actions with
their undo and guard, requirements) and one line here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Callable, Union

from pydantic import BaseModel, Field

from backupbench.layouts import btrfs, directory, filesystem, lvm, mdraid, minio_plan, zfs
from backupbench.layouts.actions import LayoutPlan
from backupbench.layouts.naming import DEFAULT_MOUNT_ROOT, Names

Planner = Callable[[Any, Names], LayoutPlan]

LAYOUTS: dict[str, tuple[type[BaseModel], Planner]] = {
    "lvm-linear": (lvm.LvmLinear, lvm.plan_linear),
    "lvm-striped": (lvm.LvmStriped, lvm.plan_striped),
    "lvm-thin": (lvm.LvmThin, lvm.plan_thin),
    "lvm-snapshot": (lvm.LvmSnapshot, lvm.plan_snapshot),
    "mdraid": (mdraid.MdRaid, mdraid.plan),
    "btrfs": (btrfs.Btrfs, btrfs.plan),
    "zfs": (zfs.Zfs, zfs.plan),
    "filesystem": (filesystem.FilesystemOnly, filesystem.plan),
    "minio-single": (minio_plan.MinioSingle, minio_plan.plan_single),
    "minio-ec": (minio_plan.MinioErasure, minio_plan.plan_erasure),
    "directory": (directory.ExistingDirectory, directory.plan),
}
LAYOUT_KINDS = tuple(LAYOUTS)
# A recipe's [[layout]] entry: the spec its `kind` names.
LayoutSpec = Annotated[Union[tuple(spec for spec, _ in LAYOUTS.values())], Field(discriminator="kind")]


def plan_layout(spec: Any, run_id: str, mount_root: Path = DEFAULT_MOUNT_ROOT) -> LayoutPlan:
    plan = LAYOUTS[spec.kind][1](spec, Names(run_id, spec.name, mount_root))
    if spec.minio and not plan.s3_drives:
        plan = minio_plan.with_minio(plan)
    return plan
