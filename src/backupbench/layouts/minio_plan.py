"""MinIO layouts: one drive (minio-single) or N drives with erasure coding (minio-ec), each
drive a filesystem of its own. The server itself is started by apply around the workloads
(layouts.minio.MinioServer) and stopped before the teardown unmounts its drives."""

from __future__ import annotations

import dataclasses

from backupbench.layouts import filesystem
from backupbench.layouts.actions import Action, Guard, LayoutPlan, Requirement
from backupbench.layouts.naming import Names
from typing import Literal

from pydantic import Field

from backupbench.layouts.specs import FilesystemSpec, LayoutBase
from backupbench.schema import DevicePath

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

    def redundancy(self) -> int:
        # Without EC:N MinIO picks the parity by erasure-set size (sizing/capacity.py has its
        # table), never below 1 for 4 drives or more: a safe lower bound here.
        return self.parity if self.parity is not None else 1


MINIO = Requirement("MinIO (scripts/install-minio.sh)", "tool:minio")


def plan_single(spec: MinioSingle, names: Names) -> LayoutPlan:
    fs = spec.filesystem or FilesystemSpec()
    actions, mount = filesystem.on_device(fs, spec.devices[0], names, raw=True)
    return LayoutPlan(spec.name, spec.kind, spec.devices, actions, (*filesystem.requirements(fs), MINIO), mount,
                      s3_drives=(mount,))


def plan_erasure(spec: MinioErasure, names: Names) -> LayoutPlan:
    fs = spec.filesystem or FilesystemSpec()
    root = names.mount_point
    actions: list[Action] = [Action(f"create {root}", (("mkdir", "-p", str(root)),), (("rmdir", str(root)),),
                                    Guard(("test", "-d", str(root)), ""))]
    drives = []
    for index, device in enumerate(spec.devices, 1):
        point = root / f"d{index}"
        # Each drive's filesystem gets its own name, so each wipe is guarded by its own mkfs.
        drive_names = dataclasses.replace(names, layout=f"{names.layout}-d{index}")
        actions.append(filesystem.mkfs_action(fs, (device,), drive_names, wipe_on_undo=True))
        actions += filesystem.mount_actions(fs, device, names, point)
        drives.append(point)
    env = (("MINIO_STORAGE_CLASS_STANDARD", f"EC:{spec.parity}"),) if spec.parity is not None else ()
    return LayoutPlan(spec.name, spec.kind, spec.devices, tuple(actions), (*filesystem.requirements(fs), MINIO),
                      root, s3_drives=tuple(drives), s3_env=env,
                      notes=(f"MinIO erasure coding over {len(drives)} drives",))


def with_minio(plan: LayoutPlan) -> LayoutPlan:
    """`minio = true` on any other layout: serve its mount point with a single-drive MinIO."""
    if plan.mount_point is None:
        return plan
    return dataclasses.replace(plan, requirements=(*plan.requirements, MINIO), s3_drives=(plan.mount_point,))
