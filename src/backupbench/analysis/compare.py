"""Slowdown of each phase against a baseline run (field note E's "29.5x" column)."""

from __future__ import annotations

from dataclasses import dataclass

from backupbench.results.model import COMPLETE, RunRecord

# The figure that says how fast a phase went, first match wins: higher is better for each.
HEADLINE_FIGURES = ("effective_bw", "files_per_s")


@dataclass(frozen=True)
class Slowdown:
    operation: str
    figure: str
    baseline: float
    current: float

    @property
    def factor(self) -> float:
        """Baseline speed / current speed: 2.0 means this run took twice as long."""
        return self.baseline / self.current


def headline(figures: dict[str, float]) -> tuple[str, float] | None:
    for name in HEADLINE_FIGURES:
        value = figures.get(name)
        if value:
            return name, value
    return None


def slowdowns(run: RunRecord, baseline: RunRecord) -> list[Slowdown]:
    base = {op.name: op for op in baseline.operations if op.status == COMPLETE}
    result = []
    for op in run.operations:
        if op.status != COMPLETE or op.name not in base:
            continue
        mine, theirs = headline(op.figures), headline(base[op.name].figures)
        if mine and theirs and mine[0] == theirs[0]:
            result.append(Slowdown(op.name, mine[0], theirs[1], mine[1]))
    return result


def first_write_penalty(run: RunRecord, layout: str | None = None) -> float | None:
    """How many times faster the overwrite went than the first write (1.0 = no allocation cost)."""
    speeds = {op.name.rsplit("/", 1)[-1]: op.figures.get("effective_bw") or 0.0 for op in run.operations
              if op.status == COMPLETE and op.detail.get("layout") == layout}
    first, again = speeds.get("first-write", 0.0), speeds.get("overwrite", 0.0)
    if first <= 0 or again <= 0:
        return None
    return again / first


@dataclass(frozen=True)
class LayoutMatrix:
    """Phases x layouts of one recipe run: which layout should I build?"""

    layouts: tuple[str, ...]
    phases: tuple[str, ...]
    values: dict[tuple[str, str], tuple[str, float]]  # (phase, layout) -> (figure, value)

    def ratio(self, phase: str, layout: str) -> float | None:
        """This layout against the first one that has the phase."""
        mine = self.values.get((phase, layout))
        base = next((self.values[(phase, lay)] for lay in self.layouts if (phase, lay) in self.values), None)
        if mine is None or base is None or base[0] != mine[0] or not base[1]:
            return None
        return mine[1] / base[1]


def layout_matrix(run: RunRecord) -> LayoutMatrix | None:
    layouts: list[str] = []
    phases: list[str] = []
    values: dict[tuple[str, str], tuple[str, float]] = {}
    for op in run.operations:
        group = op.detail.get("layout")
        best = headline(op.figures)
        if not group or op.status != COMPLETE or best is None:
            continue
        phase = op.name.removeprefix(f"{group}/")
        layouts += [group] if group not in layouts else []
        phases += [phase] if phase not in phases else []
        values[(phase, group)] = best
    if len(layouts) < 2:
        return None
    return LayoutMatrix(tuple(layouts), tuple(phases), values)
