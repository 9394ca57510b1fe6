"""Actions: one provisioning step as data: its commands, the commands that undo it, and the
guard that proves an object is ours before the undo may touch it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backupbench.faults.plan import FaultPlan

Argv = tuple[str, ...]
# The only programs a layout undoes with or checks with. A journal replayed by `cleanup` may
# ask for nothing else (tests/unit/test_layout_plans.py checks every kind keeps to them).
UNDO_PROGRAMS = frozenset({"umount", "rmdir", "lvremove", "vgremove", "pvremove", "mdadm", "wipefs", "zpool", "btrfs", "sysctl"})
GUARD_PROGRAMS = frozenset({"findmnt", "ls", "mountpoint", "test", "vgs", "lvs", "pvs", "mdadm", "blkid", "zfs"})


@dataclass(frozen=True)
class Guard:
    """Run `argv`; the undo may go ahead only if it succeeds and its output contains
    `contains` (or, with contains="", prints nothing at all)."""

    argv: Argv
    contains: str

    def allows(self, returncode: int, stdout: str) -> bool:
        if returncode != 0:
            return False
        return stdout.strip() == "" if self.contains == "" else self.contains in stdout

    def as_dict(self) -> dict[str, Any]:
        return {"argv": list(self.argv), "contains": self.contains}


@dataclass(frozen=True)
class Action:
    description: str
    do: tuple[Argv, ...]
    undo: tuple[Argv, ...] = ()
    guard: Guard | None = None
    # Writes to a user's device: the devices are re-checked right before the first such action.
    destructive: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"description": self.description, "do": [list(a) for a in self.do],
                "undo": [list(a) for a in self.undo], "guard": self.guard.as_dict() if self.guard else None,
                "destructive": self.destructive}

    @staticmethod
    def from_dict(data: dict[str, Any]) -> "Action":
        guard = data.get("guard")
        return Action(
            description=data["description"], do=tuple(tuple(a) for a in data["do"]),
            undo=tuple(tuple(a) for a in data["undo"]),
            guard=Guard(tuple(guard["argv"]), guard["contains"]) if guard else None,
            destructive=data.get("destructive", False),
        )


@dataclass(frozen=True)
class Requirement:
    """Something the kernel or the tools must offer for a layout kind."""

    what: str          # e.g. "device-mapper", "md raid", "zfs", "mkfs.xfs"
    check: str         # "kernel:<feature>" or "tool:<name>"


@dataclass(frozen=True)
class LayoutPlan:
    name: str
    kind: str
    devices: tuple[str, ...]
    actions: tuple[Action, ...]
    requirements: tuple[Requirement, ...]
    mount_point: Path | None
    # Snapshots whose fill level is sampled during the workloads: (vg, lv) pairs.
    watched_snapshots: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = field(default=())
    # Directories a MinIO server is started over for the workloads (empty: no MinIO).
    s3_drives: tuple[Path, ...] = ()
    s3_env: tuple[tuple[str, str], ...] = ()
    # Takes whole disks only (ZFS: zpool partitions them, and teardown clears what it wrote).
    whole_disks: bool = False
    # A member failed and rebuilt during the workloads (recipe key `fault`).
    fault: FaultPlan | None = None
