"""One candidate layout against a backup policy: does it hold the restore points, finish the
day's job within the window, restore within the RTO, and how long does a disk failure leave it
with reduced redundancy. Pure: the policy, the layout, its speeds in; a CandidatePlan out.

- Capacity: usable capacity (sizing/capacity.py) against the retention table's total at the
  horizon (sizing/restore_points.py); the fill at day one and at each year.
- The day's job, at the horizon's sizes, at the effective speeds of the KB2014 operation each
  part moves like (field note C): the full and the increment like an active full, a synthetic full
  and a merge like a synthetic full (1 read + 1 write per block), a reverse increment like the
  reverse-incremental pattern. With block clone a synthetic full or a merge clones blocks: no
  data moves (metadata only, not timed). The longest day must fit the window:
      forward-active       the weekly active full (on its day no increment runs)
      forward-synthetic    the day's increment + the weekly synthetic full
      forever-forward      the day's increment + the merge of the oldest increment
      reverse-incremental  the day's reverse increment
  The first full of a new repository is shown, not held to the window.
- Restore: the repository reads restore size / reduction, between the unfragmented
  (restore-sequential) and fully fragmented (restore-random) speeds; the RTO is met only if the
  fully fragmented restore fits (decompression and the network are not counted). Given an
  aging run of the layout, both are its restores at the age planned for (sizing/aged_speeds.py).
- Rebuild: `size rebuild`'s model at the layout's fill at the horizon (ZFS, btrfs and MinIO
  rebuild only what is allocated, md every byte), onto dRAID's distributed spare when there is
  one, else onto one replacement disk: those hours the layout runs with reduced redundancy (the
  wait for a replacement disk to be put in is not counted).
- Speeds measured on another number of disks are scaled to the candidate's through the per-disk
  model, their intervals widened (sizing/scaled_speeds.py; --no-scale keeps them as measured).
- Each requirement's margin is worked out from the pessimistic bound of each speed (Speed.low),
  and the binding requirement is the one with the smallest margin relative to its limit.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable

from backupbench.errors import InputError
from backupbench.sizing.capacity import LayoutSpec, layout_family, resolve_draid, usable_capacity
from backupbench.sizing.measured_speeds import MeasuredLayout
from backupbench.sizing.operation_model import model_speeds
from backupbench.sizing.plan_model import (AgedSpeeds, CandidatePlan, OperationTime, Rebuild, RepositoryPlan,
                                           Requirement, Restore, Speed)
from backupbench.sizing.policy import BackupPolicy, DiskModel, check_policy, reduction_source
from backupbench.sizing.rebuild import rebuild_time
from backupbench.sizing.restore_points import RetentionTable, retention_table
from backupbench.sizing.scaled_speeds import on_planned_disks
from backupbench.sizing.verdict import verdict

HOURS_PER_YEAR = 8766  # 365.25 days


def needed_operations(policy: BackupPolicy) -> tuple[str, ...]:
    """The KB2014 operations whose speeds the policy's jobs and restores move at."""
    needed = ["active-full"]
    if policy.method == "reverse-incremental":
        needed.append("reverse-incremental")
    elif policy.method in ("forward-synthetic", "forever-forward") and not policy.block_clone:
        needed.append("synthetic-full")
    if policy.restore_size is not None:
        needed += ["restore-sequential", "restore-random"]
    return tuple(needed)


def candidate_speeds(policy: BackupPolicy, spec: LayoutSpec, disk: DiskModel,
                     measured: MeasuredLayout | None) -> tuple[dict[str, Speed], list[str]]:
    """Each needed operation's speed: measured when `measured` has it (on the candidate's disks:
    sizing/scaled_speeds.py), else the per-disk model."""
    taken = {op: found for op in needed_operations(policy)
             if measured is not None and (found := measured.speed(op)) is not None}
    notes = [measured.speeds_refused] if measured is not None and measured.speeds_refused else []
    if measured is not None:
        taken, scaling_notes = on_planned_disks(taken, measured, spec, disk)
        notes += scaling_notes
    speeds: dict[str, Speed] = {}
    model: dict[str, Speed] | None = None
    for operation in needed_operations(policy):
        found = taken.get(operation)
        if found is None:
            if disk.disk_speed is None:
                unmeasured = f"{measured.label} did not measure {operation}" if measured else f"no run measured {operation}"
                raise InputError(f"{spec.layout}: {unmeasured}, and the per-disk model needs --disk-speed",
                                 "give --disk-speed (e.g. 250MB/s for a 7,200 rpm disk) or --from-run a run of it")
            model = model or model_speeds(spec, disk)
            found = model[operation]
        speeds[operation] = found
    return speeds, notes


def rebuild_rate(disk: DiskModel, measured: MeasuredLayout | None) -> Speed:
    if measured is not None and measured.rebuild_rate is not None:
        return Speed.single(measured.rebuild_rate, "measured", f"{measured.label}, {measured.rebuild_how}", samples=1)
    if disk.rebuild_rate is not None:
        return Speed.single(float(disk.rebuild_rate), "given", "--rebuild-rate")
    if disk.disk_speed is not None:
        return Speed.single(float(disk.disk_speed), "model", "each disk rebuilds at its sequential speed")
    raise InputError("no rebuild rate: the model needs --rebuild-rate or --disk-speed",
                     "give one, or --from-run a fault run of the layout")


def _timed(operation: str, speed_of: str, size: int, speeds: dict[str, Speed]) -> OperationTime:
    if not speed_of:  # cloned
        return OperationTime(operation=operation, speed_of="", bytes=size, seconds=0.0, worst_seconds=0.0)
    speed = speeds[speed_of]
    return OperationTime(operation=operation, speed_of=speed_of, bytes=size, seconds=size / speed.value,
                         worst_seconds=size / speed.low)


def operation_times(policy: BackupPolicy, table: RetentionTable,
                    speeds: dict[str, Speed]) -> tuple[list[OperationTime], float]:
    """The jobs' parts at the horizon's sizes, and the longest day at the pessimistic bounds."""
    full, increment = table.full_bytes[-1], table.incremental_bytes[-1]
    cloned = policy.block_clone
    first = _timed("first full", "active-full", full, speeds)
    if policy.method == "forward-active":
        parts = [_timed("weekly active full", "active-full", full, speeds),
                 _timed("daily increment", "active-full", increment, speeds)]
        return [first, *parts], max(part.worst_seconds for part in parts)
    if policy.method == "reverse-incremental":
        part = _timed("daily reverse increment", "reverse-incremental", increment, speeds)
        return [first, part], part.worst_seconds
    daily = _timed("daily increment", "active-full", increment, speeds)
    if policy.method == "forward-synthetic":
        extra = _timed("weekly synthetic full" + (" (cloned)" if cloned else ""),
                       "" if cloned else "synthetic-full", full, speeds)
    else:
        extra = _timed("daily merge of the oldest increment" + (" (cloned)" if cloned else ""),
                       "" if cloned else "synthetic-full", increment, speeds)
    return [first, daily, extra], daily.worst_seconds + extra.worst_seconds


def restore_estimate(policy: BackupPolicy, speeds: dict[str, Speed]) -> Restore | None:
    if policy.restore_size is None:
        return None
    read = math.ceil(policy.restore_size / Fraction(str(policy.reduction)))
    return Restore(restore_size=policy.restore_size, read_bytes=read,
                   best_seconds=read / speeds["restore-sequential"].value,
                   worst_seconds=read / speeds["restore-random"].low)


def rebuild_estimate(spec: LayoutSpec, rate: Speed, fill_percent: float, afr: float | None) -> Rebuild:
    estimate = rebuild_time(spec, max(1, int(rate.low)), max(0.001, min(100.0, fill_percent)))
    spares = layout_family(spec.layout) == "draid" and resolve_draid(spec).spares > 0
    seconds = estimate.distributed.seconds if spares and estimate.distributed else estimate.classic.seconds
    another = None
    if afr is not None:
        exposure = (spec.disks - 1) * afr / 100 * seconds / 3600 / HOURS_PER_YEAR
        another = 100 * (1 - math.exp(-exposure))
    return Rebuild(label="distributed spare" if spares else "one replacement disk",
                   data_bytes=estimate.failed_disk_data, seconds=seconds, rate=rate,
                   failures_meanwhile=estimate.failures_while_rebuilding, another_failure_percent=another)


def requirement(name: str, value: float, limit: float, unit: str) -> Requirement:
    return Requirement(name=name, value=value, limit=limit, unit=unit, met=value <= limit, margin=limit - value,
                       relative_margin=(limit - value) / limit)  # type: ignore[arg-type]


def evaluate(policy: BackupPolicy, table: RetentionTable, spec: LayoutSpec, disk: DiskModel,
             measured: MeasuredLayout | None = None) -> CandidatePlan:
    """`spec` against `policy` (see the module doc)."""
    capacity = usable_capacity(spec)
    speeds, notes = candidate_speeds(policy, spec, disk, measured)
    fill = [100.0 * needed / capacity.usable for needed in table.total_bytes]
    operations, worst_day = operation_times(policy, table, speeds)
    restore = restore_estimate(policy, speeds)
    rebuild = rebuild_estimate(spec, rebuild_rate(disk, measured), fill[-1], disk.afr)
    checks = [requirement("capacity", table.total_bytes[-1], capacity.usable, "B"),
              requirement("window", worst_day, policy.window, "s")]
    if restore is not None and policy.rto is not None:
        checks.append(requirement("restore", restore.worst_seconds, policy.rto, "s"))
    if policy.rebuild_limit is not None:
        checks.append(requirement("rebuild", rebuild.seconds, policy.rebuild_limit, "s"))
    binding = min(checks, key=lambda check: check.relative_margin)
    aged = measured.aged if measured is not None else None
    return CandidatePlan(layout=spec.layout, built=capacity.layout, disks=spec.disks, disk_bytes=min(spec.disk_sizes),
                         usable_bytes=capacity.usable, needed_bytes=table.total_bytes, fill_percent=fill,
                         speeds=speeds, operations=operations, worst_day_seconds=worst_day, restore=restore,
                         rebuild=rebuild, requirements=checks, passed=all(check.met for check in checks),
                         binding=binding.name, notes=[*notes, *_aged_notes(aged), *capacity.notes], aged=aged)


def _aged_notes(aged: AgedSpeeds | None) -> list[str]:
    """What an aging run says against the plan: space past the closed form is space the plan
    does not hold (the capacity is still the closed form's: one run at a small scale is not a
    figure to size by)."""
    if aged is None or not aged.most_space_vs_plan or aged.most_space_vs_plan <= 1:
        return []
    return [f"{aged.which} measured {aged.most_space_vs_plan:.3f}x the closed form's space at its scale: the "
            "capacity above may be short by as much"]


def plan_repository(policy: BackupPolicy, disk: DiskModel, specs: list[LayoutSpec],
                    measured: dict[str, MeasuredLayout] | None = None) -> RepositoryPlan:
    """Every candidate against `policy`, ranked, with the verdict. `measured`: candidate layout
    (as given) -> the stored layout whose speeds it takes (sizing/measured_speeds.assign)."""
    notes = check_policy(policy)
    measured = measured or {}
    by_layout = _candidates(specs)
    tables: dict[BackupPolicy, RetentionTable] = {}

    def table_for(changed: BackupPolicy) -> RetentionTable:
        if changed not in tables:
            tables[changed] = retention_table(changed)
        return tables[changed]

    def evaluate_for(layout: str) -> Callable[[BackupPolicy, LayoutSpec], CandidatePlan]:
        return lambda changed, spec: evaluate(changed, table_for(changed), spec, disk, measured.get(layout))

    plans = [evaluate_for(layout)(policy, spec) for layout, spec in by_layout.items()]
    return RepositoryPlan(policy=policy, disks=disk, reduction_source=reduction_source(policy),
                          retention=table_for(policy), candidates=plans,
                          verdict=verdict(policy, by_layout, plans, evaluate_for), notes=notes)


def _candidates(specs: list[LayoutSpec]) -> dict[str, LayoutSpec]:
    by_layout: dict[str, LayoutSpec] = {}
    for spec in specs:
        if not spec.disk_sizes or min(spec.disk_sizes) <= 0:
            raise InputError(f"--disk-size: {spec.layout}'s disks must be above 0 bytes", "e.g. --disk-size 16TB")
        if spec.layout in by_layout:
            raise InputError(f"--layout lists {spec.layout} twice", "give each candidate once")
        if usable_capacity(spec).failures_tolerated == 0:
            raise InputError(f"{spec.layout} has no redundancy: a failed disk loses the backups",
                             "choose layouts that survive a disk failure (raid6, raidz2, draid2, minio-ec, ...)")
        by_layout[spec.layout] = spec
    return by_layout
