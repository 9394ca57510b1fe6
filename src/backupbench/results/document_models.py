"""The shape of every `--json` document, as pydantic models: what is printed is validated
through them (cli/documents.py), and the JSON Schemas in results/schema/ are generated from
them, so the schema a reader validates against is the shape backupbench checks before it prints.

Here: the header every document starts with, the run document (`run`, `apply`, `show`), the
history and the error document. The other commands' documents are in command_documents.py;
`size repository`'s is sizing/plan_model.py's RepositoryPlan.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from backupbench.results.latency_models import PhaseLatency

SCHEMA_VERSION = "1"

Status = Literal["running", "complete", "interrupted", "failed", "void"]


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def sometimes(description: str, **constraints: Any) -> Any:
    """A key that is absent when it does not apply (never null): not required, no default shown."""
    return Field(None, description=description, json_schema_extra=_no_default, **constraints)


class Shape(BaseModel):
    """A document's part: every key it may have is declared."""

    model_config = ConfigDict(defer_build=True, extra="forbid")


class Header(Shape):
    schema_version: Literal[SCHEMA_VERSION] = Field(description="The version of the document's shape (docs/results.md, "
                                                     "Versioning).")
    kind: str = Field(description="backupbench.<command>: which document this is, and which schema describes it.")
    backupbench_version: str = Field(min_length=1, description="The version of backupbench that wrote it.")


Timestamp = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}",
                                 description="ISO 8601, UTC, seconds")]
Unit = Annotated[str, Field(min_length=1, description="B, B/s, ns, ms, s, %, IO/s, files/s, ...; 1 for a count, "
                                                      "flag or ratio stored without one")]


class Run(Shape):
    id: str = Field(min_length=1)
    label: str = Field(description="--label, '' when none was given")
    kind: str = Field(min_length=1, description="the workload (kb2014, smallfiles, s3, ...) or 'recipe' for apply")
    target: str
    status: Status
    started_at: Timestamp
    finished_at: Optional[Timestamp]
    error: Optional[str]
    owner: str
    settings: dict[str, Any]
    host: dict[str, Any]
    notes: list[str]


class Interval(Shape):
    """The 95% confidence interval of the samples' mean (Student's t; stats.py), or of their
    geometric mean on the log scale where the t interval would reach 0 for a figure that cannot."""

    low: float
    high: float
    method: Literal["t", "log-t", "min-max"] = Field(
        "t", description="t: mean +- t s / sqrt(n); log-t: the same on the log scale, always above 0; min-max: the "
        "samples' range, where even the log scale leaves the floats (stats.py)")


class Figure(Shape):
    name: str = Field(min_length=1, description="the figure, without a device: mon.w_await.p95, effective_bw")
    device: str = sometimes("the block device (or snapshot LV) the figure was measured on", min_length=1)
    value: float = Field(description="the figure; for a phase measured several times, the median of its samples")
    unit: Unit
    samples: list[float] = sometimes("each sample, in the order measured (--repeat, a recipe's repeat); absent for "
                                     "a phase measured once", min_length=2)
    min: float = sometimes("the smallest sample (absent for one sample)")
    max: float = sometimes("the largest sample (absent for one sample)")
    cv: float = sometimes("the coefficient of variation: sample standard deviation / mean (absent for one sample)",
                          ge=0)
    interval: Interval = sometimes("the 95% confidence interval of the mean (absent for one sample)")
    unstable: bool = sometimes("true when the CV is over 10% (absent for one sample)")


class Phase(Shape):
    name: str = Field(min_length=1, description="the phase; '<layout>/<phase>' in a recipe run")
    pattern: str
    status: Status
    started_at: Timestamp
    finished_at: Optional[Timestamp]
    figures: list[Figure]
    cached: bool = Field(description="true when the member disks saw under half the bytes the phase moved (the "
                                     "cache guard): the figure is the cache's, not the storage's")
    cached_reason: str = sometimes("why, with the likeliest cache (absent when not cached)", min_length=1)
    disturbed: bool = Field(False, description="true when other processes took more than a quarter of a core "
                            "or moved more than 4 MiB/s (and a tenth of the disks' traffic) while the phase ran "
                            "(monitor/others.py): its figures are not fit for decisions")
    disturbed_reason: str = sometimes("what they took, and which took most (absent when not disturbed)", min_length=1)
    unstable: bool = Field(description="true when the phase's headline figure (effective_bw, files_per_s, "
                                       "clone_s_per_tib) varies over its samples by a CV over 10%; false for one sample")
    detail: dict[str, Any] = Field(description="what the workload recorded beside its figures (raw file names, "
                                               "monitor summary, layout, state)")
    latency: PhaseLatency = sometimes("the phase's latency per kind of request: histogram, percentiles and course "
                                      "over time (absent for a phase without latencies, in history, and where the "
                                      "run folder's raw files are not at hand)")


class WindowItem(Shape):
    layout: Optional[str]
    phase: str
    job: str
    duration: float = Field(ge=0)
    interval: Interval = sometimes("the window at the ends of the speed's 95% interval (absent for a speed "
                                   "measured once)")
    unit: Literal["s"]


class Windows(Shape):
    """Backup windows for backup_size bytes (--backup-size, or the size the run recorded)."""

    backup_size: int
    size_unit: Literal["B"]
    items: list[WindowItem]


class RestoreRange(Shape):
    layout: Optional[str] = Field(description="null for a plain run")
    low: float
    high: float
    sequential: float = Field(description="unfragmented restore (restore-sequential)")
    random: float = Field(description="fully fragmented restore (restore-random)")
    model_sequential: Optional[float] = sometimes("the same restore-sequential on the model's spinning disk "
                                                  "(the file's bytes at its speed plus an access per jump)")
    model_random: Optional[float] = sometimes("the same restore-random on the model's spinning disk")
    unit: Literal["B/s"]


class Baseline(Shape):
    """The run given with --baseline, its figures as stored."""

    run: Run
    phases: list[Phase]


class RunBody(Shape):
    """A stored run without the document header: one entry of `history --json`."""

    run: Run
    phases: list[Phase]
    windows: Optional[Windows] = Field(description="null when there is no backup size")
    restore_ranges: list[RestoreRange]
    baseline: Optional[Baseline] = Field(description="null without --baseline")


class Expectation(Shape):
    expectation: str = Field(description="as given: restore-random>=300MiB/s")
    operation: str = Field(description="the operation checked: raid6/restore-random")
    figure: str = Field(description="the stored figure checked, without a device (as a phase's figures name it): "
                                    "effective_bw, write_p99_lat, mon.w_await.p95; the figure asked for when the "
                                    "operation has none")
    device: str = sometimes("the block device (or snapshot LV) the figure was measured on; absent for a figure not "
                            "measured per device", min_length=1)
    operator: Literal[">=", "<=", ">", "<"]
    threshold: float = Field(description="the expectation's value, in unit")
    measured: Optional[float] = Field(description="the figure's value, in unit; null when the operation did not "
                                                  "measure it")
    unit: str = Field(min_length=1, description="of measured and threshold: the figure's stored unit (B/s, ns, ms, "
                                                "%, IO/s, ...); when nothing was measured and the figure's unit is "
                                                "not known, the base unit of the value's kind (B/s, s, %, B)")
    measured_text: str = Field(description="for people: 205.0 MiB/s, 40.00 ms (write p99), run is void: <why> "
                                           "(measured 205.0 MiB/s)")
    met: bool = Field(description="false whenever the run is not complete (void, interrupted, failed)")


class RunDocument(RunBody, Header):
    """One stored run: `backupbench run --json`, `apply --json`, `show --json`. Units are as stored
    (bandwidth B/s, latency ns) and named beside every value."""

    kind: Literal["backupbench.run"]
    expectations: list[Expectation] = sometimes(
        "run/apply/show --expect: each expectation checked against each operation it names, and whether it was "
        "met (absent without --expect); exit 5 when one is missed")


class HistoryDocument(Header):
    """`backupbench history --json`: the stored runs, newest first, each as in a run document
    without its header."""

    kind: Literal["backupbench.history"]
    runs: list[RunBody]


class ErrorDocument(Header):
    """Printed on stdout instead of a result when a command given --json fails (the same line
    still goes to stderr). exit_code is the process's exit status: see docs/results.md."""

    kind: Literal["backupbench.error"]
    error: str = Field(min_length=1, description="what went wrong, one line")
    fix: Optional[str] = Field(description="what to do about it, when there is something")
    exit_code: Literal[1, 2, 3, 4, 5, 70, 130]
