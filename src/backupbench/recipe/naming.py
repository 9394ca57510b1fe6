"""Operation naming, one owner: what every measured phase is stored, shown, exported and
gated (--expect) as. The runner names what it stores with these functions, the planner what
it plans, and `apply --expect` checks its expectations against the names planned here.

- `backupbench run`: the workload's phase ('active-full').
- a recipe with layouts: '<layout>/<phase>'; with several workloads, each under
  '<layout>/<n>-<kind>/<phase>'; on a layout with a fault, once per state of the array:
  '<layout>[/<n>-<kind>]/<state>/<phase>', beside '<layout>/member' (one member's baseline)
  and '<layout>/rebuild' (the rebuild's figures).
- a recipe with [hosts]: as `run --hosts` / `--agents` name them ('<phase>'), or
  '<n>-<kind>/<phase>' when there are several workloads.

A workload's phases come from its Definition (`phases(options)`): nothing is built to learn
them, so a layout's MinIO need not be running nor any credential be known.
"""

from __future__ import annotations

from typing import Any, Sequence

from backupbench.faults.plan import FaultPlan
from backupbench.layouts.actions import LayoutPlan
from backupbench.recipe.model import Recipe
from backupbench.workloads.registry import WORKLOADS

# The states of an array under a fault, in the order the workloads run in them
# (runner/faulted.py); a repeated pass while the rebuild lasts is 'rebuilding-<n>', n from 2.
HEALTHY, DEGRADED, REBUILDING, REBUILT = "healthy", "degraded", "rebuilding", "rebuilt"
FAULT_STATES = (HEALTHY, DEGRADED, REBUILDING, REBUILT)
REPEATED_REBUILDING = f"{REBUILDING}-[0-9]*"  # every repeat, as a pattern (apply --expect takes it)
# Operations of a fault layout beside the workloads' phases (detail["state"] says which).
MEMBER, REBUILD = "member", "rebuild"


def joined(*parts: str) -> str:
    """The parts that are not empty, joined by '/'."""
    return "/".join(part for part in parts if part)


def operation(group: str, phase: str) -> str:
    """A phase of the workload stored under `group` ('' for a run's only workload)."""
    return joined(group, phase)


def phase_of(name: str) -> str:
    """The phase of a stored operation's name: 'raid6/2-smallfiles/healthy/create' -> 'create'."""
    return name.rpartition("/")[2]


def group_of(name: str) -> str:
    """The group a stored operation's name is under ('' for a run's only workload)."""
    return name.rpartition("/")[0]


def layout_of(group: str) -> str:
    """The layout of a group as stored in detail["layout"]: 'raid6/2-smallfiles' -> 'raid6'."""
    return group.partition("/")[0]


def workload_group(layout: str, index: int, kind: str, count: int) -> str:
    """What the workload `index` (of `count`) of a recipe is stored under on `layout` ('' for
    a [hosts] recipe): the layout alone for a recipe's only workload, else '<n>-<kind>' below it."""
    return joined(layout, f"{index + 1}-{kind}" if count > 1 else "")


def in_state(group: str, state: str) -> str:
    """A workload's group during a state of the array ('' when there is no fault)."""
    return joined(group, state)


def repeated_rebuilding(number: int) -> str:
    """The state of the workloads' `number`th pass during the rebuild (2, 3, ...)."""
    return f"{REBUILDING}-{number}"


def layout_operation(layout: str, what: str) -> str:
    """An operation or stage of a layout's own: its member baseline, its rebuild, its fill."""
    return joined(layout, what)


def fault_states(fault: FaultPlan | None) -> tuple[str, ...]:
    """The states a fault layout's workloads run in (runner/faulted.py FaultRun.run), ('',)
    without a fault; rebuild_load = "repeat" runs them again as rebuilding-2, -3... while the
    rebuild lasts, a number known only then: REPEATED_REBUILDING stands for every one."""
    if fault is None:
        return ("",)
    if not fault.rebuilds:
        return (HEALTHY, DEGRADED)
    during = {"none": (), "once": (REBUILDING,), "repeat": (REBUILDING, REPEATED_REBUILDING)}
    return (HEALTHY, DEGRADED, *during[fault.spec.rebuild_load], REBUILT)


def phases(entry: Any) -> tuple[str, ...]:
    """The phases of a recipe's workload entry (or a workload's options), from its Definition."""
    return WORKLOADS[entry.kind].phases(entry)


def recipe_operations(recipe: Recipe, layouts: Sequence[LayoutPlan] = ()) -> list[str]:
    """Every operation `apply` stores for `recipe` built as `layouts` (none for [hosts])."""
    workloads, count = recipe.workload, len(recipe.workload)
    if recipe.hosts is not None:
        return [operation(workload_group("", index, entry.kind, count), phase)
                for index, entry in enumerate(workloads) for phase in phases(entry)]
    names = []
    for layout in layouts:
        for index, entry in enumerate(workloads):
            group = workload_group(layout.name, index, entry.kind, count)
            names += [operation(in_state(group, state), phase)
                      for state in fault_states(layout.fault) for phase in phases(entry)]
        if layout.fault is not None:
            names += [layout_operation(layout.name, MEMBER), layout_operation(layout.name, REBUILD)]
    return names
