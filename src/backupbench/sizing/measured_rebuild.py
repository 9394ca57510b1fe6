"""The rebuild rate a fault run measured, in the units of `size rebuild`'s model: per disk.

The model says a layout rebuilds `work` bytes-per-disk at `rate` (sizing/rebuild.py: data on
the failed disk for one replacement disk; x (d + 1) / (c - 1) for dRAID's distributed spare).
A measured rebuild of `seconds` therefore ran at an effective per-disk rate of
work / seconds; fed back into the model for the layout measured, it gives the time measured,
and for larger disks or another layout it scales the way the model scales. Under load and
idle are rated apart: a rebuild that ran partly while the workloads did has
`rebuild_percent_loaded` of its work done in `rebuild_loaded_seconds`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backupbench.recipe import naming
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.sizing.capacity import LayoutSpec
from backupbench.sizing.rebuild import rebuild_time
from backupbench.sizing.speed_model import sizing_spec


@dataclass(frozen=True)
class MeasuredRebuild:
    layout: str                 # the recipe layout's name
    spec: LayoutSpec            # as `size` models it: kind and member sizes
    used_percent: float
    distributed: bool           # onto a dRAID distributed spare
    seconds: float
    rates: dict[str, float]     # "whole", "loaded", "idle" -> effective bytes/s per disk

    def as_dict(self) -> dict[str, Any]:
        return {"layout": self.layout, "sizing_layout": self.spec.layout, "disks": self.spec.disks,
                "disk_bytes": min(self.spec.disk_sizes), "used_percent": self.used_percent,
                "distributed": self.distributed, "rebuild_seconds": self.seconds, "rates_bps": self.rates}


def recipe_layout(run: RunRecord, name: str) -> dict[str, Any]:
    """A layout's recipe entry as stored with the run ({} when the run has none of that name)."""
    layouts = (run.settings.get("recipe") or {}).get("layout") or []
    return next((entry for entry in layouts if entry.get("name") == name), {})


def layout_operations(run: RunRecord, name: str) -> list[OperationRecord]:
    return [op for op in run.operations if naming.layout_of(op.layout) == name]


def member_record(ops: list[OperationRecord]) -> OperationRecord | None:
    """The failed member read alone before the layout was built."""
    return next((op for op in ops if op.state == naming.MEMBER and op.status == COMPLETE), None)


def used_percent(ops: list[OperationRecord], rebuild: OperationRecord, member_bytes: float) -> float:
    """How full the failed member was: what ZFS and btrfs rebuild (md rebuilds it all). ZFS: the
    pool's fill; btrfs: the bytes its allocation table says the replace copies."""
    healthy = next((op for op in ops if op.state == naming.HEALTHY and "zfs.pool_used" in op.figures), None)
    if healthy is not None:
        return healthy.figures["zfs.pool_used"]
    if rebuild.detail.get("kind") == "btrfs" and rebuild.figures.get("rebuild_bytes") and member_bytes:
        return min(100.0, 100.0 * rebuild.figures["rebuild_bytes"] / member_bytes)
    return 100.0


def _rates(work: float, figures: dict[str, float]) -> dict[str, float]:
    rates = {"whole": work / figures["rebuild_seconds"]}
    share = figures.get("rebuild_percent_loaded")
    loaded, idle = figures.get("rebuild_loaded_seconds"), figures.get("rebuild_idle_seconds")
    if share is not None and loaded:
        rates["loaded"] = work * share / 100 / loaded
    if share is not None and idle and share < 100:
        rates["idle"] = work * (100 - share) / 100 / idle
    elif share is None:
        rates["idle"] = rates["whole"]  # an idle rebuild (rebuild_load = "none")
    return rates


def measured_rebuild(run: RunRecord, rebuild: OperationRecord) -> MeasuredRebuild | None:
    """None when the rebuild did not finish, or the layout is one `size` does not model."""
    name = rebuild.layout
    ops = layout_operations(run, name)
    member = member_record(ops)
    seconds = rebuild.figures.get("rebuild_seconds")
    if member is None or not seconds or not member.figures.get("member_bytes"):
        return None
    member_bytes = int(member.figures["member_bytes"])
    spec = sizing_spec(recipe_layout(run, name), member_bytes)
    if spec is None:
        return None
    used = used_percent(ops, rebuild, member_bytes)
    distributed = "distributed" in rebuild.detail.get("target", "")
    at_one = rebuild_time(spec, 1, max(0.001, used))  # seconds at 1 B/s per disk = the work in bytes
    work = at_one.distributed.seconds if distributed and at_one.distributed else at_one.classic.seconds
    return MeasuredRebuild(name, spec, used, distributed, seconds, _rates(work, rebuild.figures))


def measured_rebuilds(run: RunRecord) -> list[MeasuredRebuild]:
    found = (measured_rebuild(run, op) for op in run.operations
             if op.state == naming.REBUILD and op.status == COMPLETE)
    return [m for m in found if m is not None]
