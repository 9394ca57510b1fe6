"""Operation naming, one owner: what every measured phase is stored, shown, exported and
gated (--expect) as. The runner names what it stores with these functions, the planner what
it plans, and `apply --expect` checks its expectations against the names planned here.

- `backupbench run`: the workload's phase ('active-full').
- a recipe with layouts: '<layout>/<phase>'; with several workloads, each under
  '<layout>/<n>-<kind>/<phase>'; on a layout with a fault, once per state of the array:
  '<layout>[/<n>-<kind>]/<state>/<phase>', beside '<layout>/member' (one member's baseline)
  and '<layout>/rebuild' (the rebuild's figures).
- a point of a workload's sweep: '<layout>/<kind>@iodepth=4,jobs=2/<phase>' (with several
  workloads '<layout>/<n>-<kind>@.../<phase>'), once per point.
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
from backupbench.workloads.sweep import point_entries

# The states of an array under a fault, in the order the workloads run in them
# (runner/faulted.py); a repeated pass while the rebuild lasts is 'rebuilding-<n>', n from 2.
HEALTHY, DEGRADED, REBUILDING, REBUILT = "healthy", "degraded", "rebuilding", "rebuilt"
FAULT_STATES = (HEALTHY, DEGRADED, REBUILDING, REBUILT)
REPEATED_REBUILDING = f"{REBUILDING}-[0-9]*"  # every repeat, as a pattern (apply --expect takes it)
# Operations of a fault layout beside the workloads' phases (the record's `state` says which).
MEMBER, REBUILD = "member", "rebuild"
# A fault layout's stages that are shown as they run but not stored as operations: its data put
# there before the failure, the healthy array held until `fault.after`, and a dRAID's copy back
# onto a real disk (also the array's state then, in rebuild.csv).
FILL, HEALTHY_WAIT, COPY_BACK = "fill", "healthy-wait", "copy-back"
# Between a workload and the point of its sweep a group is: '<layout>/<kind>@iodepth=4,jobs=2'.
POINT = "@"


def joined(*parts: str) -> str:
    """The parts that are not empty, joined by '/'."""
    return "/".join(part for part in parts if part)


def operation(group: str, phase: str) -> str:
    """A phase of the workload stored under `group` ('' for a run's only workload)."""
    return joined(group, phase)


def phase_of(name: str) -> str:
    """The phase of a stored operation's name: 'raid6/2-smallfiles/healthy/create' -> 'create'."""
    return name.rpartition("/")[2]


def tails(name: str) -> list[str]:
    """What a stored operation's name ends with after each '/', longest first:
    'raid6/degraded/restore-random' -> ['degraded/restore-random', 'restore-random']."""
    parts = name.split("/")
    return ["/".join(parts[index:]) for index in range(1, len(parts))]


def group_of(name: str) -> str:
    """The group a stored operation's name is under ('' for a run's only workload)."""
    return name.rpartition("/")[0]


def layout_of(group: str) -> str:
    """The layout of a group as a phase record holds it (`layout`): 'raid6/2-smallfiles' -> 'raid6'."""
    return group.partition("/")[0]


def workload_group(layout: str, index: int, kind: str, count: int, point: str = "") -> str:
    """What the workload `index` (of `count`) of a recipe is stored under on `layout` ('' for
    a [hosts] recipe): the layout alone for a recipe's only workload, else '<n>-<kind>' below it.
    A point of its sweep (workloads/sweep.Point.key) is named after the workload, '<layout>/<kind>
    @iodepth=4,jobs=2' ('<layout>/<n>-<kind>@...' among several), so each point's phases, samples
    and raw files stay apart and the name still says the workload. '@', not brackets: rich reads
    '[iodepth=4]' in a table as markup and drops it, fnmatch (gates) as a character class, a
    shell as a glob; '@' means nothing to any of them."""
    if point:
        return joined(layout, f"{_numbered(index, kind) if count > 1 else kind}{POINT}{point}")
    return joined(layout, _numbered(index, kind) if count > 1 else "")


def _numbered(index: int, kind: str) -> str:
    return f"{index + 1}-{kind}"


def _without_point(part: str) -> str:
    """A group's part without its sweep point: '1-kb2014@iodepth=4' -> '1-kb2014'."""
    return part.partition(POINT)[0]


def workload_of(name: str, kinds: Sequence[str]) -> str | None:
    """The kind of workload a stored operation belongs to, `kinds` being its run's workloads in
    order (one for `run`): the only one, else the one its '<n>-<kind>' part names (None if none)."""
    if len(kinds) == 1:
        return kinds[0]
    numbered = {_numbered(index, kind): kind for index, kind in enumerate(kinds)}
    # From the end: a layout's name, first, may look like '<n>-<kind>'; a state never does.
    parts = [_without_point(part) for part in reversed(group_of(name).split("/"))]
    return next((numbered[part] for part in parts if part in numbered), None)


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
            for point, swept in point_entries(entry):
                group = workload_group(layout.name, index, entry.kind, count, point.key if point else "")
                names += [operation(in_state(group, state), phase)
                          for state in fault_states(layout.fault) for phase in phases(swept)]
        if layout.fault is not None:
            names += [layout_operation(layout.name, MEMBER), layout_operation(layout.name, REBUILD)]
    return names
