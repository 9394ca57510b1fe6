"""A sweep's grid read back from what was stored, and what it says: per phase, each point's
speed (the median of its samples, with their spread) and p99, the best point, and along each
parallelism axis (a queue depth, jobs, streams, threads: the workload's `parallelism`) the
first step whose gain over the point before is within the noise: where adding more stops
paying. Pure: stored runs in, data out; report/sweep*.py draw it.

"Within the noise" is noise.verdict's between the two neighbouring points' samples (their 95%
intervals overlap), never a bare comparison of medians: a step that looks 5% faster on three
noisy samples has not been shown to pay. A step measured once on either side cannot be judged
(the noise is unknown): the axis then says so and suggests --repeat 3, rather than guessing.
The best point is the highest median; whether it beats the next best beyond noise is said
beside it, and the points it does not beat are named, so a "best" no measurement supports is
never shown alone.

A sweep comes from `backupbench sweep` (one stored run per point, each with the grid and its
point in its settings: `from_runs`) or from a recipe entry's `sweep` key (one run, each point
a group of operations: `from_recipe_run`, the grid from the recipe the run stored).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from backupbench import units
from backupbench.analysis import noise
from backupbench.analysis.compare import phase_p99
from backupbench.recipe import naming
from backupbench.results.model import COMPLETE, SPEED_FIGURES, OperationRecord, RunRecord
from backupbench.stats import Spread, spread
from backupbench.workloads.registry import WORKLOADS
from backupbench.workloads.sweep import STORED_KEY, Point, label_prefix, points

# A speed figure's unit as the sweep's tables and charts say it.
SPEED_UNITS = {"effective_bw": "MiB/s", "files_per_s": "files/s", "objects_per_s": "objects/s"}


@dataclass(frozen=True)
class SweepPoint:
    point: Point
    source: str = ""          # the run (a sweep's) or the group of operations (a recipe's) it is stored as
    status: str = ""          # its run's status; '' when it never ran (a sweep stopped before it)
    operations: dict[str, OperationRecord] = field(default_factory=dict)   # phase -> record


@dataclass(frozen=True)
class SweepData:
    """One sweep as stored: its grid (values as written, in the order given) and its points."""

    sweep_id: str             # 'sweep-1a2b3c4d', or '<layout>/<kind>' for a recipe's
    workload: str
    grid: dict[str, list[str]]
    parallel: tuple[str, ...]
    points: list[SweepPoint]
    repeat: int = 1

    @property
    def x_axis(self) -> str:
        """The parameter the charts run along: the first parallelism axis swept, else the first."""
        return next((name for name in self.grid if name in self.parallel and len(self.grid[name]) > 1),
                    next(iter(self.grid)))

    @property
    def missing(self) -> list[Point]:
        return [p.point for p in self.points if p.status != COMPLETE]


@dataclass(frozen=True)
class Cell:
    point: Point
    speed: Spread | None
    p99: tuple[str, float] | None = None      # (figure, median ns)
    status: str = COMPLETE


@dataclass(frozen=True)
class Step:
    low: str
    high: str
    verdict: noise.Verdict


@dataclass(frozen=True)
class AxisCall:
    """Along `axis` with the other parameters at `fixed`: each step, and the first one that does
    not pay (None: every step paid, or a point is missing before any stopped)."""

    axis: str
    fixed: tuple[tuple[str, str], ...]
    steps: list[Step]
    stop: Step | None
    gap: str = ""        # the value whose point was not measured, where the walk had to end

    @property
    def where(self) -> str:
        return " ".join(f"{name}={value}" for name, value in self.fixed)

    @property
    def text(self) -> str:
        at = f" ({self.where})" if self.fixed else ""
        if self.stop is None and self.gap:
            paid = f"paid up to {self.axis}={self.steps[-1].high}" if self.steps else "cannot be judged"
            return f"adding {self.axis} {paid}{at}; {self.axis}={self.gap} was not measured"
        if self.stop is None:
            last = self.steps[-1].high if self.steps else "-"
            return f"adding {self.axis} paid at every step up to {self.axis}={last}, the most swept{at}"
        if self.stop.verdict.outcome == "unknown":
            return (f"cannot tell where adding {self.axis} stops paying{at}: {self.axis} {self.stop.low}->"
                    f"{self.stop.high} is {self.stop.verdict.text}")
        return (f"adding {self.axis} stops paying at {self.axis} {self.stop.low}->{self.stop.high}{at}: "
                f"{self.stop.verdict.text}")


@dataclass(frozen=True)
class PhaseSweep:
    phase: str
    figure: str                               # the speed figure the points are judged by
    cells: list[Cell]
    best: Cell | None
    best_verdict: noise.Verdict | None         # the best against the next best
    within_noise: list[Point]                  # points the best does not beat beyond noise
    axes: list[AxisCall]

    @property
    def unit(self) -> str:
        return SPEED_UNITS.get(self.figure, "")

    def speed_text(self, value: float) -> str:
        return speed_text(self.figure, value)

    @property
    def best_text(self) -> str:
        if self.best is None or self.best.speed is None:
            return "no point measured this phase"
        said = f"best: {self.best.point.text}, {self.speed_text(self.best.speed.median)}"
        ranked = sorted((c for c in self.cells if c.speed is not None and c is not self.best),
                        key=lambda c: c.speed.median if c.speed else 0, reverse=True)
        if not ranked or self.best_verdict is None:
            return said
        if self.best_verdict.outcome == "better":
            return f"{said} ({self.best_verdict.text} than {ranked[0].point.text}, the next best)"
        if self.best_verdict.outcome == "unknown":
            return f"{said}; against {ranked[0].point.text}: {self.best_verdict.text}"
        tied = ", ".join(point.text for point in self.within_noise)
        return f"{said}; no better beyond noise than {tied}"


def speed_text(figure: str, value: float) -> str:
    if figure == "effective_bw":
        return f"{value / units.MiB:,.1f} MiB/s"
    return f"{value:,.0f} {SPEED_UNITS.get(figure, '')}".rstrip()


# ---- reading a sweep back ----------------------------------------------------------------------

def from_runs(runs: Sequence[RunRecord]) -> SweepData:
    """The sweep the runs of one `backupbench sweep` make (Store.sweep_runs): its grid from
    their settings, each point's phases from its run; points no run measured stay empty."""
    stored = [run.settings[STORED_KEY] for run in runs]
    first = stored[0]
    grid = {name: [str(v) for v in values] for name, values in first["grid"].items()}
    by_point: dict[Point, RunRecord] = {}
    for run, record in zip(runs, stored):
        by_point[Point(tuple((name, str(record["point"][name])) for name in grid))] = run
    measured = []
    for point in points(grid):
        run = by_point.get(point)
        measured.append(SweepPoint(point) if run is None else SweepPoint(
            point, run.run_id, run.status, {op.name: op for op in run.operations}))
    repeat = max((int(run.settings.get("repeat") or 1) for run in runs), default=1)
    return SweepData(label_prefix(first["id"]).strip(), first["workload"], grid, tuple(first.get("parallel", ())),
                     measured, repeat)


def from_recipe_run(run: RunRecord) -> list[SweepData]:
    """Every sweep of a recipe run: per layout, workload entry with a `sweep` and fault state,
    its points' operations as the run stored them (recipe/naming.py names each point's group).
    Which options add parallelism is the workload's declaration (Definition.parallelism)."""
    recipe = run.settings.get("recipe") or {}
    entries = recipe.get("workload") or []
    found = []
    for layout in [layout.get("name", "") for layout in recipe.get("layout") or []]:
        for index, entry in enumerate(entries):
            if entry.get("sweep"):
                found += _entry_sweeps(run, layout, index, entry, len(entries))
    return found


def _entry_sweeps(run: RunRecord, layout: str, index: int, entry: dict[str, Any], count: int) -> list[SweepData]:
    grid = {name: [_text(v) for v in values] for name, values in entry["sweep"].items()}
    kind = str(entry.get("kind"))
    definition = WORKLOADS.get(kind)
    parallel = tuple(name for name in grid if definition is not None and name in definition.parallelism)
    states: dict[str, dict[Point, dict[str, OperationRecord]]] = {}
    groups = {naming.workload_group(layout, index, kind, count, point.key): point for point in points(grid)}
    for op in run.operations:
        group, _, rest = op.name.rpartition("/")
        group, state = (group, "") if group in groups else (naming.group_of(group), naming.phase_of(group))
        if group in groups:
            states.setdefault(state, {}).setdefault(groups[group], {})[rest] = op
    title = naming.joined(layout, naming.workload_group("", index, kind, count) or kind)
    found = []
    for state, by_point in states.items():
        measured = [SweepPoint(point, naming.workload_group(layout, index, kind, count, point.key),
                               COMPLETE if by_point.get(point) else "", by_point.get(point, {}))
                    for point in points(grid)]
        found.append(SweepData(naming.joined(title, state), kind, grid, parallel, measured,
                               int(entry.get("repeat") or 1)))
    return found


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


# ---- what it says -------------------------------------------------------------------------------

def analyse(data: SweepData) -> list[PhaseSweep]:
    """Each phase the sweep's points measured, in the order they ran it."""
    phases = list(dict.fromkeys(phase for p in data.points for phase, op in p.operations.items()
                                if op.status == COMPLETE))
    return [phase_sweep(data, phase) for phase in phases]


def _speed_figure(data: SweepData, phase: str) -> str:
    ops = [p.operations[phase] for p in data.points if phase in p.operations]
    return next((name for name in SPEED_FIGURES if any(op.figures.get(name) for op in ops)), SPEED_FIGURES[1])


def phase_sweep(data: SweepData, phase: str) -> PhaseSweep:
    figure = _speed_figure(data, phase)
    cells = [_cell(p, phase, figure) for p in data.points]
    measured = sorted((c for c in cells if c.speed is not None), key=lambda c: c.speed.median if c.speed else 0,
                      reverse=True)
    best = measured[0] if measured else None
    best_verdict = None
    within: list[Point] = []
    if best is not None and best.speed is not None and len(measured) > 1:
        calls = [(c.point, judged(best.speed, c.speed)) for c in measured[1:] if c.speed is not None]
        best_verdict = calls[0][1]
        within = [point for point, call in calls if call.outcome != "better"]
    axes = [call for axis in data.parallel if len(data.grid[axis]) > 1 for call in _along(data, cells, axis)]
    return PhaseSweep(phase, figure, cells, best, best_verdict, within, axes)


def _cell(point: SweepPoint, phase: str, figure: str) -> Cell:
    op = point.operations.get(phase)
    if op is None or op.status != COMPLETE:
        return Cell(point.point, None, None, op.status if op is not None else (point.status or "not run"))
    values = [v for v in op.sample_values(figure) if v > 0]
    return Cell(point.point, spread(values) if values else None, phase_p99(op.figures))


def judged(current: Spread, reference: Spread) -> noise.Verdict:
    """noise.verdict, except that a tie on one sample is no judgement either: with one sample on
    either side the noise is unknown, so "no difference (1.00x)" cannot say a step stopped paying."""
    call = noise.verdict(current, reference)
    if call.outcome == "same" and (current.one_sample or reference.one_sample):
        return noise.Verdict("unknown", call.factor, call.margin, call.text)
    return call


def _numeric(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def axis_order(values: Sequence[str]) -> list[str]:
    """An axis's values from least to most: by number when all are numbers, else as given."""
    numbers = [_numeric(value) for value in values]
    if all(number is not None for number in numbers):
        return [value for _, value in sorted(zip(numbers, values), key=lambda pair: pair[0])]
    return list(values)


def _along(data: SweepData, cells: list[Cell], axis: str) -> list[AxisCall]:
    """Along `axis`, once for each combination of the other parameters: the first step whose
    gain over the point before is not beyond noise (noise.verdict: 'better' or not)."""
    others = [name for name in data.grid if name != axis]
    lines: dict[tuple[tuple[str, str], ...], dict[str, Cell]] = {}
    for cell in cells:
        values = cell.point.as_dict()
        lines.setdefault(tuple((name, values[name]) for name in others), {})[values[axis]] = cell
    calls = []
    for fixed, by_value in lines.items():
        order = axis_order(data.grid[axis])
        steps: list[Step] = []
        stop, gap = None, ""
        for low, high in zip(order, order[1:]):
            before, after = by_value[low].speed, by_value[high].speed
            if before is None or after is None:
                gap = low if before is None else high   # no step past a point not measured is judged
                break
            step = Step(low, high, judged(after, before))
            steps.append(step)
            if step.verdict.outcome != "better":
                stop = step
                break
        calls.append(AxisCall(axis, fixed, steps, stop, gap))
    return calls


# ---- as the --json document holds it (results/sweep_document.py) ----------------------------

def _step(step: Step | None) -> dict[str, Any] | None:
    if step is None:
        return None
    verdict = step.verdict
    return {"low": step.low, "high": step.high, "outcome": verdict.outcome, "factor": verdict.factor,
            "margin": verdict.margin, "verdict": verdict.text}


def _cell_document(cell: Cell) -> dict[str, Any]:
    figure = cell.speed
    return {"point": cell.point.as_dict(), "status": cell.status, "median": figure.median if figure else None,
            "low": figure.low if figure else None, "high": figure.high if figure else None,
            "cv": figure.cv if figure else None, "samples": figure.n if figure else 0,
            "p99_ns": cell.p99[1] if cell.p99 else None}


def document(data: SweepData) -> dict[str, Any]:
    """The sweep document's payload: the grid, each point's run, and each phase's verdicts."""
    phases = []
    for sweep in analyse(data):
        phases.append({
            "phase": sweep.phase, "figure": sweep.figure, "unit": "B/s" if sweep.figure == "effective_bw" else sweep.unit,
            "cells": [_cell_document(cell) for cell in sweep.cells],
            "best": sweep.best.point.as_dict() if sweep.best else None,
            "best_outcome": sweep.best_verdict.outcome if sweep.best_verdict else None,
            "within_noise": [point.as_dict() for point in sweep.within_noise], "best_text": sweep.best_text,
            "axes": [{"axis": axis.axis, "fixed": dict(axis.fixed), "steps": [_step(step) for step in axis.steps],
                      "stops_at": _step(axis.stop), "text": axis.text} for axis in sweep.axes]})
    return {"sweep": {"id": data.sweep_id, "workload": data.workload, "grid": data.grid, "parallel": list(data.parallel),
                      "x_axis": data.x_axis, "samples_per_point": data.repeat},
            "points": [{"point": p.point.as_dict(), "stored_as": p.source or None, "status": p.status or "not run"}
                       for p in data.points],
            "phases": phases}
