"""A recipe's [policy] as a repository plan: its layouts are the candidates, planned on the
table's disks (the lab measures small disks; the plan is for the repository's own), and a run
of the recipe gives each candidate its measured speeds.

A recipe layout is a candidate when `size` models its kind (speed_model.sizing_spec: mdraid,
zfs, btrfs, minio-ec) and it survives a disk failure; the others (an lvm layout, a stripe) are
named in the plan's notes, not refused: a recipe may measure them for comparison. Two recipe
layouts of one kind (two raidz2 with different record sizes) plan as one candidate, the first.

`size repository --recipe` takes the speeds from --from-run; `report` of a run whose recipe has
a [policy] takes them from that run itself (`plan_of_run`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from backupbench.errors import InputError
from backupbench.recipe.keys import key_path
from backupbench.recipe.policy import PolicyTable
from backupbench.results.model import RunRecord
from backupbench.schema import TYPED, validate
from backupbench.sizing.capacity import LayoutSpec, usable_capacity
from backupbench.sizing.measured_speeds import MeasuredLayout, layout_kind, measured_layouts
from backupbench.sizing.plan_model import RepositoryPlan
from backupbench.sizing.repository_plan import plan_repository
from backupbench.sizing.speed_model import sizing_spec


def recipe_candidates(layouts: list[dict[str, Any]], disks: int, disk_size: int) -> tuple[list[LayoutSpec], list[str]]:
    """The recipe's layout entries (as dumped) as candidates on `disks` x `disk_size`, and a note
    for each layout that is not one."""
    specs: dict[str, LayoutSpec] = {}
    notes = []
    for entry in layouts:
        name = entry.get("name", "?")
        spec = sizing_spec(entry, disk_size)
        if spec is None:
            notes.append(f"layout {name} ({entry.get('kind', '?')}) is not a candidate: size does not model its kind")
            continue
        spec = dataclasses.replace(spec, disk_sizes=(disk_size,) * disks)
        try:
            tolerated = usable_capacity(spec).failures_tolerated
        except InputError as exc:
            notes.append(f"layout {name} ({spec.layout}) is not a candidate on {disks} disks: {exc.message}")
            continue
        if tolerated == 0:
            notes.append(f"layout {name} ({spec.layout}) is not a candidate: a failed disk loses the backups")
        elif spec.layout in specs:
            notes.append(f"layout {name} plans as {spec.layout}, like an earlier layout: planned once")
        else:
            specs[spec.layout] = spec
    if not specs:
        raise InputError(f"none of the recipe's layouts ({', '.join(e.get('name', '?') for e in layouts)}) is a "
                         "candidate: " + "; ".join(notes), "add a raid6, raidz2, draid or minio-ec layout")
    return list(specs.values()), notes


def recipe_table(recipe: dict[str, Any]) -> PolicyTable | None:
    """The [policy] of a recipe as dumped (a run's settings), or None. A run stored before a
    bound of today (a disk of 1 KB, a speed of 0) is refused in one line, as its recipe would be."""
    stored = recipe.get("policy")
    return None if not stored else validate(PolicyTable, stored, lambda loc: key_path(("policy", *loc)),
                                            source="the run's recipe", context={TYPED: True})


def own_speeds(run: RunRecord, specs: list[LayoutSpec]) -> dict[str, MeasuredLayout]:
    """Candidate -> the layout of `run` that measured it (only those with figures)."""
    by_kind = {layout_kind(spec.layout): spec.layout for spec in specs}
    found: dict[str, MeasuredLayout] = {}
    for measured in measured_layouts(run):
        candidate = by_kind.get(measured.kind or "")
        if candidate is not None and candidate not in found and (measured.speeds or measured.rebuild_rate
                                                                  or measured.speeds_refused):
            found[candidate] = measured
    return found


def plan_of_run(run: RunRecord) -> RepositoryPlan | None:
    """The plan of a run whose recipe has a [policy], at the speeds the run measured (the model's
    for what it did not measure, when the table gives disk_speed); None without a [policy]."""
    recipe = run.settings.get("recipe") or {}
    table = recipe_table(recipe)
    if table is None:
        return None
    specs, notes = recipe_candidates(recipe.get("layout") or [], table.disks, table.disk_size)
    plan = plan_repository(table.policy(), table.disk(), specs, own_speeds(run, specs))
    return plan.model_copy(update={"notes": [*plan.notes, *notes]})
