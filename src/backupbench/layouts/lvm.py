"""LVM layouts: linear, striped, thin, and an origin with snapshots. Every VG and LV carries
the tags 'backupbench' and 'bb_run_<run id>'; undo removes only what carries them."""

from __future__ import annotations

from backupbench.layouts import filesystem
from backupbench.layouts.actions import Action, Guard, LayoutPlan, Requirement
from backupbench.artefacts import TAG
from backupbench.layouts.naming import Names
from typing import Literal

from pydantic import Field, field_validator, model_validator

from backupbench.layouts.specs import LayoutBase, VolumeSize, power_of_two
from backupbench.schema import Count, DevicePath, Flag, Size

class LvmLinear(LayoutBase):
    kind: Literal["lvm-linear"]
    size: VolumeSize | None = Field(None, description="LV size [default: all free space, -l 100%FREE].")


class LvmStriped(LayoutBase):
    kind: Literal["lvm-striped"]
    devices: tuple[DevicePath, ...] = Field(..., min_length=2, max_length=128,
                                            description="Block devices, all of equal size.")
    stripes: Count | None = Field(None, ge=2, le=128, description="Number of stripes (-i) [default: one per device].")
    stripe_size: Size = Field(64 * 1024, description="Stripe size (-I), e.g. 64k, 128k, 256k; at most 4 MiB, "
                                                     "LVM's extent size.")
    size: VolumeSize | None = Field(None, description="LV size [default: all free space].")

    @field_validator("stripe_size")
    @classmethod
    def _stripe_size(cls, value: int) -> int:
        # lvcreate silently shrinks a stripe size above the extent size (4 MiB by default).
        return power_of_two(value, "stripe_size", 4096, 4 * 2**20, "lvcreate -I, up to the 4 MiB extent")

    @model_validator(mode="after")
    def _stripes_fit(self) -> "LvmStriped":
        if self.stripes is not None and self.stripes > len(self.devices):
            raise ValueError(f"stripes ({self.stripes}) cannot exceed the number of devices ({len(self.devices)})")
        return self


class LvmThin(LayoutBase):
    kind: Literal["lvm-thin"]
    pool_size: VolumeSize | None = Field(None, description="Thin pool size [default: 90% of the VG].")
    chunk_size: Size | None = Field(None, description="Thin pool chunk size (-c), e.g. 64k: 64 KiB to 1 GiB, "
                                                     "a multiple of 64 KiB.")
    virtual_size: VolumeSize = Field(..., description="Virtual size of the thin LV (-V); may exceed the pool.")

    @field_validator("chunk_size")
    @classmethod
    def _thin_chunk(cls, value: int | None) -> int | None:
        if value is not None and (value < 64 * 1024 or value > 2**30 or value % (64 * 1024)):
            raise ValueError(f"chunk_size must be a multiple of 64 KiB from 64 KiB to 1 GiB (lvmthin), "
                             f"not {value:,} bytes")
        return value


class LvmSnapshot(LayoutBase):
    kind: Literal["lvm-snapshot"]
    origin_size: VolumeSize = Field(..., description="Size of the origin LV the workload runs on.")
    snapshots: Count = Field(1, ge=0, le=8, description="Number of snapshots of the origin, taken before the workload.")
    snapshot_size: VolumeSize | None = Field(None, description="Size of each classic (CoW) snapshot; unused with thin.")
    thin: Flag = Field(False, description="Thin origin and thin snapshots instead of classic CoW snapshots.")

    @model_validator(mode="after")
    def _size_given(self) -> "LvmSnapshot":
        if self.snapshots and not self.thin and self.snapshot_size is None:
            raise ValueError("classic snapshots need snapshot_size (e.g. '30GiB')")
        return self


LVM_TOOLS = (Requirement("device-mapper", "kernel:dm"), Requirement("LVM tools (lvm2)", "tool:lvcreate"))


def _k(size: int) -> str:
    """LVM reads a bare number with a unit letter; give it exact KiB."""
    return f"{size // 1024}k"


def _size_args(size: int | None, default_extent: str = "100%FREE") -> tuple[str, ...]:
    return ("-L", _k(size)) if size else ("-l", default_extent)


def _tags(names: Names) -> tuple[str, ...]:
    return ("--addtag", TAG, "--addtag", names.run_tag)


def volume_group(devices: tuple[str, ...], names: Names) -> tuple[Action, ...]:
    return (
        Action(f"make LVM physical volumes on {', '.join(devices)}", (("pvcreate", *devices),),
               (("pvremove", *devices),),
               # After vgremove our PVs belong to no VG; if one joined another VG, leave it.
               Guard(("pvs", "--noheadings", "-o", "vg_name", *devices), ""), destructive=True),
        Action(f"make volume group {names.vg}", (("vgcreate", *_tags(names), names.vg, *devices),),
               (("vgremove", names.vg),), Guard(("vgs", "--noheadings", "-o", "vg_tags", names.vg), names.run_tag)),
    )


def logical_volume(names: Names, lv: str, create_args: tuple[str, ...], description: str) -> Action:
    path = f"{names.vg}/{lv}"
    return Action(description, (("lvcreate", "--yes", *_tags(names), "-n", lv, *create_args),),
                  (("lvremove", "-y", path),), Guard(("lvs", "--noheadings", "-o", "lv_tags", path), names.run_tag))


def _with_filesystem(spec, device: str, names: Names) -> tuple[tuple[Action, ...], object]:
    return filesystem.on_device(spec.filesystem, device, names, raw=False)


def _fs_requirements(spec) -> tuple[Requirement, ...]:
    return filesystem.requirements(spec.filesystem) if spec.filesystem else ()


def plan_linear(spec: LvmLinear, names: Names) -> LayoutPlan:
    lv = logical_volume(names, "lv", (*_size_args(spec.size), names.vg),
                        f"make linear LV {names.vg}/lv over {len(spec.devices)} PV(s), filled one after another")
    fs_actions, mount = _with_filesystem(spec, f"/dev/{names.vg}/lv", names)
    return LayoutPlan(spec.name, spec.kind, spec.devices, (*volume_group(spec.devices, names), lv, *fs_actions),
                      (*LVM_TOOLS, *_fs_requirements(spec)), mount)


def plan_striped(spec: LvmStriped, names: Names) -> LayoutPlan:
    stripes = spec.stripes or len(spec.devices)
    lv = logical_volume(names, "lv", ("-i", str(stripes), "-I", _k(spec.stripe_size), *_size_args(spec.size), names.vg),
                        f"make striped LV {names.vg}/lv: {stripes} stripes of {_k(spec.stripe_size)}")
    fs_actions, mount = _with_filesystem(spec, f"/dev/{names.vg}/lv", names)
    return LayoutPlan(spec.name, spec.kind, spec.devices, (*volume_group(spec.devices, names), lv, *fs_actions),
                      (*LVM_TOOLS, *_fs_requirements(spec)), mount,
                      notes=("all PVs of a stripe set must be the same size",))


THIN = (Requirement("dm-thin-pool", "kernel:dm-thin-pool"), Requirement("thin_check (thin-provisioning-tools)", "tool:thin_check"))


def _thin_pool(names: Names, pool_size: int | None, chunk: int | None) -> Action:
    chunk_args = ("-c", _k(chunk)) if chunk else ()
    return logical_volume(names, "pool", ("--type", "thin-pool", *_size_args(pool_size, "90%VG"), *chunk_args, names.vg),
                          f"make thin pool {names.vg}/pool")


def plan_thin(spec: LvmThin, names: Names) -> LayoutPlan:
    thin = logical_volume(names, "thin", ("--type", "thin", "-V", _k(spec.virtual_size), "--thinpool", "pool", names.vg),
                          f"make thin LV {names.vg}/thin ({_k(spec.virtual_size)} virtual)")
    fs_actions, mount = _with_filesystem(spec, f"/dev/{names.vg}/thin", names)
    return LayoutPlan(spec.name, spec.kind, spec.devices,
                      (*volume_group(spec.devices, names), _thin_pool(names, spec.pool_size, spec.chunk_size), thin,
                       *fs_actions), (*LVM_TOOLS, *THIN, *_fs_requirements(spec)), mount)


def plan_snapshot(spec: LvmSnapshot, names: Names) -> LayoutPlan:
    if spec.thin:
        origin = [_thin_pool(names, None, None),
                  logical_volume(names, "origin", ("--type", "thin", "-V", _k(spec.origin_size), "--thinpool", "pool",
                                                   names.vg), f"make thin origin {names.vg}/origin")]
        snap_args: tuple[str, ...] = ()
        extra = THIN
    else:
        origin = [logical_volume(names, "origin", ("-L", _k(spec.origin_size), names.vg),
                                 f"make origin LV {names.vg}/origin")]
        snap_args = ("-L", _k(spec.snapshot_size or 0))
        extra = (Requirement("dm-snapshot", "kernel:dm-snapshot"),)
    fs_actions, mount = _with_filesystem(spec, f"/dev/{names.vg}/origin", names)
    # Snapshots come after the filesystem is made and mounted: the workload's writes are
    # then first writes after a snapshot, which is what field note E measures.
    snapshots = tuple(
        logical_volume(names, f"snap{i}", ("-s", *snap_args, f"{names.vg}/origin"),
                       f"take {'thin' if spec.thin else 'classic'} snapshot {names.vg}/snap{i}")
        for i in range(1, spec.snapshots + 1)
    )
    watched = () if spec.thin else tuple((names.vg, f"snap{i}") for i in range(1, spec.snapshots + 1))
    return LayoutPlan(spec.name, spec.kind, spec.devices,
                      (*volume_group(spec.devices, names), *origin, *fs_actions, *snapshots),
                      (*LVM_TOOLS, *extra, *_fs_requirements(spec)), mount, watched_snapshots=watched)


def thin_pool_vgs(layout: LayoutPlan) -> tuple[str, ...]:
    """The volume groups in which the layout makes a thin pool: its `lvcreate --type thin-pool`
    actions above, whose last argument is the VG, so an lvm-thin layout and thin snapshots
    are watched alike (monitor/thinwatch.py) and every other layout costs no lvs call."""
    vgs: list[str] = []
    for action in layout.actions:
        for argv in action.do:
            if argv and argv[0] == "lvcreate" and "thin-pool" in argv and argv[-1] not in vgs:
                vgs.append(argv[-1])
    return tuple(vgs)
