"""The repository plan as data: what `backupbench size repository` works out and `--json` prints.

Every model here is frozen pydantic; the document is `RepositoryPlan.model_dump(mode="json")`
under the header every document has (RepositoryDocument), and its JSON Schema is generated from
these models with every other document's (cli/documents.py), shipped as
results/schema/size.repository.schema.json. Sizes in bytes, speeds in bytes/s, times in seconds.

A speed is an interval: `value` is the figure used (a median once runs give several samples),
`low` and `high` its bounds; a margin is worked out from the pessimistic bound (`low`). One run's
figure or the model: low = value = high. Several runs of one layout (sizing/measured_speeds.py):
the median, and the 95% interval of their mean (stats.spread). Under three samples it is `uncertain`.
A measured speed says which disks it came from (`scaling`): measured on as many disks as planned,
scaled to the planned count through the per-disk model (sizing/scaled_speeds.py, which widens
its interval), kept as measured (--no-scale, or a figure the model cannot scale), or from disks
not known (a plain directory).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from backupbench.results.document_models import Header
from backupbench.sizing.policy import BackupPolicy, DiskModel
from backupbench.sizing.restore_points import RetentionTable

Source = Literal["measured", "model", "given"]
# A measured speed against the plan's disks: as many as planned, scaled to them, kept as measured
# (--no-scale, or a figure the model cannot scale), or measured on disks not known.
ScalingHow = Literal["same", "scaled", "not-scaled", "unknown"]


class _Frozen(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)


class Scaling(_Frozen):
    """The disks a measured speed came from, against the candidate's (sizing/scaled_speeds.py)."""

    how: ScalingHow
    measured_disks: int | None    # None: not known (a plain run of a directory)
    planned_disks: int
    factor: float | None          # model(planned) / model(measured) when scaled, else None
    disk_speed: float | None      # the per-disk speed (bytes/s) the model was worked out at
    disk_speed_from: str          # "member baseline", "monitor", "--disk-speed", or "" (none needed/known)
    why: str


class Speed(_Frozen):
    value: float              # bytes/s
    low: float
    high: float
    source: Source
    samples: int              # 0: a model or a given figure
    why: str                  # how it was modelled, or which run measured it
    scaling: Scaling | None = None  # a measured speed's disks against the plan's (None: not measured)

    @classmethod
    def single(cls, value: float, source: Source, why: str, samples: int = 0) -> "Speed":
        return cls(value=value, low=value, high=value, source=source, samples=samples, why=why)

    @property
    def uncertain(self) -> bool:
        """A model, fewer than three samples (no spread to judge a margin by), or a figure
        extrapolated to other disks."""
        return self.source != "given" and (self.samples < 3 or self.scaled)

    @property
    def scaled(self) -> bool:
        return self.scaling is not None and self.scaling.how == "scaled"

    @property
    def label(self) -> str:
        """Where the figure comes from, as the plan's "from" column says it: "model", "given",
        "measured", "measured on 6, scaled to 24" or "measured on 6, not scaled"."""
        scaling = self.scaling
        if self.source != "measured" or scaling is None or scaling.how in ("same", "unknown"):
            return self.source
        done = f"scaled to {scaling.planned_disks}" if scaling.how == "scaled" else "not scaled"
        return f"measured on {scaling.measured_disks}, {done}"


class OperationTime(_Frozen):
    operation: str            # what the backup job does, e.g. "weekly synthetic full"
    speed_of: str             # the KB2014 operation whose speed it moves at, or "" (cloned)
    bytes: int
    seconds: float            # at the speed's value
    worst_seconds: float      # at its low bound


class Requirement(_Frozen):
    name: Literal["capacity", "window", "restore", "rebuild"]
    value: float              # what the candidate needs (bytes or seconds), at the pessimistic bound
    limit: float              # what the policy allows
    unit: Literal["B", "s"]
    met: bool
    margin: float             # limit - value
    relative_margin: float    # margin / limit: the smallest is the binding constraint


class Restore(_Frozen):
    restore_size: int         # protected bytes restored
    read_bytes: int           # what the repository reads: restore size / reduction
    best_seconds: float       # unfragmented (restore-sequential)
    worst_seconds: float      # fully fragmented (restore-random), at its low bound


class Rebuild(_Frozen):
    label: str                # "distributed spare" or "one replacement disk"
    data_bytes: int           # on the failed disk
    seconds: float            # at reduced redundancy
    rate: Speed               # per disk, in the rebuild model's units
    failures_meanwhile: int   # further failures the layout survives during it
    another_failure_percent: float | None  # with --afr: chance another disk fails meanwhile


class AgedSpeeds(_Frozen):
    """The restores an aging run measured at the age planned for, and its space there."""

    run_id: str
    day: int                          # the measured day taken
    last_day: int                     # the run's last measured day
    asked_days: int | None            # --at-age in days; None: the last day, by default
    speeds: dict[str, Speed]          # restore-sequential, restore-random at that day
    day_one: dict[str, float]         # the same restores on the first measured day (medians, bytes/s)
    space_vs_plan: float | None       # that day's peak over the closed form at the run's scale
    most_space_vs_plan: float | None  # the most it reached up to that day

    @property
    def which(self) -> str:
        asked = f"--at-age {self.asked_days}d" if self.asked_days is not None else "its last day, by default"
        return f"aging run {self.run_id}, day {self.day} of {self.last_day} ({asked})"


class CandidatePlan(_Frozen):
    layout: str               # as given, e.g. "draid2"
    built: str                # as built, e.g. "draid2:8d:24c:1s"
    disks: int
    disk_bytes: int
    usable_bytes: int
    needed_bytes: list[int]   # per year of the horizon (the retention table's totals)
    fill_percent: list[float]
    speeds: dict[str, Speed]
    operations: list[OperationTime]
    worst_day_seconds: float  # the longest day's job at the pessimistic bounds
    restore: Restore | None
    rebuild: Rebuild
    requirements: list[Requirement]
    passed: bool
    binding: str              # the requirement with the smallest relative margin
    notes: list[str]
    aged: AgedSpeeds | None = None   # an aging run's restores and space at the age planned for

    def requirement(self, name: str) -> Requirement | None:
        return next((r for r in self.requirements if r.name == name), None)


class Change(_Frozen):
    layout: str
    kind: Literal["disks", "disk size", "policy"]
    text: str                 # "26 disks of 16 TB (2 more)"
    binding: str
    relative_margin: float


class Verdict(_Frozen):
    ranking: list[str]        # candidates' layouts, best first
    recommended: str | None
    sentence: str
    changes: list[Change]     # what would make a rejected candidate pass
    uncertain: list[str]      # sentences naming the uncertain inputs


class RepositoryPlan(_Frozen):
    policy: BackupPolicy
    disks: DiskModel
    reduction_source: str
    retention: RetentionTable
    candidates: list[CandidatePlan]
    verdict: Verdict
    notes: list[str]


class RepositoryDocument(RepositoryPlan, Header):
    """`backupbench size repository --json`: sizes in bytes, speeds in bytes/s, times in seconds."""

    kind: Literal["backupbench.size.repository"]
