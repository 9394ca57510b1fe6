"""The `backupbench sweep --json` document (kind backupbench.sweep), as a pydantic model like
every other document (document_models.py says why): the grid, each point and the run it is
stored as, and per phase each point's speed with its spread and p99, the best point and, along
each parallelism axis, the steps up to the first whose gain was within the noise. Speeds are in
the figure's unit (`unit`: B/s, files/s, objects/s), latencies in ns."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from backupbench.results.document_models import Header, Shape

PointValues = dict[str, str]
Outcome = Literal["better", "worse", "same", "unknown"]


class SweepGrid(Shape):
    id: str = Field(min_length=1, description="sweep-<id>: what `report --sweep` takes; each run's label starts with it")
    workload: str
    grid: dict[str, list[str]] = Field(description="each parameter's values as given, in the order given")
    parallel: list[str] = Field(description="the swept parameters that add parallelism (queue depth, jobs, streams)")
    x_axis: str = Field(description="the parameter the charts run along")
    samples_per_point: int = Field(ge=1)


class SweepPointRun(Shape):
    point: PointValues
    stored_as: Optional[str] = Field(description="the run's id; null for a point not measured")
    status: str = Field(description="the run's status; 'not run' for a point the sweep never reached")


class SweepCell(Shape):
    point: PointValues
    status: str
    median: Optional[float] = Field(description="the speed figure's median over the point's samples; null: not measured")
    low: Optional[float] = Field(description="95% interval of the samples (stats.py); null for one sample")
    high: Optional[float]
    cv: Optional[float] = Field(description="coefficient of variation of the samples; null for one sample")
    samples: int = Field(ge=0)
    p99_ns: Optional[float] = Field(description="the phase's p99 latency (the worse of read and write), ns")


class SweepStep(Shape):
    low: str = Field(description="the value stepped from")
    high: str = Field(description="the value stepped to")
    outcome: Outcome = Field(description="the higher value against the lower (analysis/noise.py): better only beyond noise")
    factor: Optional[float]
    margin: Optional[float] = Field(description="the relative difference noise could make; null with one sample")
    verdict: str


class SweepAxis(Shape):
    axis: str
    fixed: PointValues = Field(description="the other parameters' values along this line")
    steps: list[SweepStep]
    stops_at: Optional[SweepStep] = Field(description="the first step that did not pay; null: every step paid")
    text: str


class SweepPhase(Shape):
    phase: str
    figure: str = Field(description="the speed figure: effective_bw, files_per_s or objects_per_s")
    unit: str
    cells: list[SweepCell]
    best: Optional[PointValues] = Field(description="the point with the highest median")
    best_outcome: Optional[Outcome] = Field(description="the best against the next best")
    within_noise: list[PointValues] = Field(description="points the best does not beat beyond noise")
    best_text: str
    axes: list[SweepAxis]


class SweepDocument(Header):
    """`backupbench sweep --json`: a grid of runs of one workload, and what it says."""

    kind: Literal["backupbench.sweep"]
    sweep: SweepGrid
    points: list[SweepPointRun]
    phases: list[SweepPhase]
