"""What a workload is to the rest of backupbench: the Workload the pipeline runs, the
PhaseHooks it reports to, and the Definition that names it for `run --workload` and recipes.

A workload runs named phases (layout, active-full, create, update-1, put, ...). It announces
each one to PhaseHooks; the pipeline turns that into progress, monitor samples and stored
figures. Everything it creates outside the run folder it writes into the run's journal
first, through the same hooks. The pipeline asks nothing else of it: every question it
has is a field or a method here, never a probe for an attribute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable, Mapping, Protocol, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt

from backupbench.artefacts import Remover
from backupbench.engines import fio_client
from backupbench.paths import Syntax
from backupbench.schema import Count
from backupbench.workloads.capabilities import Capabilities
from backupbench.workloads.phase_kinds import PhaseKinds


class PhaseHooks(Protocol):
    def started(self, name: str, title: str, pattern: str, measured: bool = True, warmup_s: float = 0.0) -> None:
        """A phase begins; its first `warmup_s` seconds (fio's ramp_time) are run but not measured,
        so the monitor leaves them out of the phase's figures too."""

    def progress(self, name: str, fraction: float, detail: str) -> None: ...

    def finished(self, name: str, figures: dict[str, float], detail: dict[str, Any] | None = None,
                 failed: bool = False) -> None:
        """The phase ended with `figures`; detail["units"] (figure name -> unit) gives the units
        of figures the store does not know by name. `failed`: it ran, but what it measured is a
        failure (every request refused): stored failed, its figures kept."""

    def will_create(self, artefact: dict[str, Any]) -> int | None:
        """Write down something about to be created (a file, a folder, S3 objects) in the
        run's journal, before creating it; returns the id to report its removal with."""

    def removed(self, artefact_id: int | None, how: str = "removed") -> None: ...


class Workload(Protocol):
    kind: str
    needs_directory: bool      # False: the target is not a directory here (an S3 endpoint)
    buffered: bool             # through the page cache: refusals and cautions differ
    test_file_cautions: bool   # one test file that caches could serve: say so when it is small
    space_fix: str             # what to change when the target has too little space

    def target_label(self, target: Path | None) -> str:
        """What the run is stored and shown as having measured."""

    def engine_versions(self) -> dict[str, str]:
        """Engine name -> version, recorded with the run."""

    def phases(self) -> tuple[str, ...]:
        """The phases it will run, in order, by the names every output uses: its Definition's
        phases(options), which know them without building it."""

    def settings(self) -> dict[str, Any]:
        """Everything that shapes the figures, stored with the run."""

    def space_needed(self) -> int: ...

    def check(self, target: Path | None) -> None:
        """Refusals of the workload's own (RefusedError), beyond the directory checks."""

    def execute(self, target: Path | None, folder: Path, run_id: str, hooks: PhaseHooks) -> None: ...

    def cleanup(self, target: Path | None, run_id: str, hooks: PhaseHooks) -> None:
        """Remove what execute created; called on every exit path (the journal sweep follows)."""


@dataclass(frozen=True)
class ServedBy:
    """A layout's own S3 server, for a recipe workload that names no endpoint."""

    layout: str
    endpoint: str
    access_key: str = field(repr=False)
    secret_key: str = field(repr=False)


@dataclass(frozen=True)
class Definition:
    """One kind of workload: what `run --workload NAME` and a recipe's `kind = "NAME"` mean."""

    name: str
    description: str
    options: type[BaseModel]          # flags of `run` and keys of a recipe entry, each defined once
    recipe_entry: type[BaseModel]     # the options plus `kind` (and what a recipe adds)
    build: Callable[[Any, ServedBy | None], Workload]
    # The phases a workload of these options (or recipe entry) runs, in order, by the names
    # every output uses: known without building it (no server, no credentials needed).
    phases: Callable[[Any], tuple[str, ...]]
    # What it can do (where it runs, what its figures mean): asked instead of its name.
    capabilities: Capabilities = Capabilities()
    # What each of its phases measures (the table a report shows it in): fio's I/O unless told.
    phase_kinds: PhaseKinds = PhaseKinds()
    needs_directory: bool = True
    # Its PATHs on `run` are existing files it reads where they lie (a restore): they are its
    # `files` option, and the monitor follows them down to their disks.
    reads_files: bool = False
    # What `run` does when its user names neither --repeat nor --runtime (the main job): that many
    # samples, each with these option values, so every figure and window has an interval.
    sampled_by_default: tuple[int, Mapping[str, Any]] | None = None
    # Its options that add parallelism (queue depth, jobs, streams, threads): along these a sweep
    # says where adding more stops paying (analysis/sweep.py); stored with each swept run.
    parallelism: tuple[str, ...] = ()
    # Named starting points (--preset NAME, preset = "NAME"): option values the given ones override.
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    default_preset: str = ""
    merge_preset: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]] = lambda base, given: {
        **base, **given}
    # Removers for the kinds of artefact it creates beyond files, folders and processes.
    removers: Mapping[str, Remover] = field(default_factory=dict)
    # Whether a recipe entry runs against its layout's own S3 server (it names no endpoint).
    served_by_layout: Callable[[Any], bool] = lambda entry: False
    # How its engine is told the directory it works in (fio: in a job file): plan checks a
    # layout's mount point against it before anything is built.
    path_syntax: Syntax = Syntax.ARGV

    def removers_needed(self) -> dict[str, Remover]:
        """Its own removers, and those its capabilities need: on fio servers, the one that
        removes its test file on a host."""
        needed = {fio_client.REMOTE_FILE: fio_client.remove_remote_file} if self.capabilities.fio_servers else {}
        return {**needed, **self.removers}

    def options_from(self, given: Mapping[str, Any], preset: str | None = None) -> dict[str, Any]:
        """The option values a run gets: a preset's (the default one's if none is named), the
        given ones on top."""
        return self.merge_preset(self.presets.get(preset or self.default_preset, {}), given)


Options = TypeVar("Options", bound=BaseModel)


# How many times a phase may be measured in one run (--repeat, a recipe's `repeat`).
MAX_REPEAT = 100


class RepeatKey(BaseModel):
    """The keys every recipe workload entry has beside its options (not workload options: they
    say how often the pipeline runs the workload, and over which values of its options, the
    same for every kind)."""

    model_config = ConfigDict(defer_build=True)

    repeat: Count = Field(1, ge=1, le=MAX_REPEAT,
                          description="Measure each phase this many times (the whole workload, that many times in "
                                      "turn, on each layout): the figure shown is the median, with min/max, CV and "
                                      "a 95% interval (like `run --repeat N`).")
    # Its names and values are checked against the entry's own options where the recipe is
    # composed (recipe/model.py, workloads/sweep.py): a misspelt name may be another kind's option.
    sweep: dict[str, tuple[Annotated[Union[StrictBool, StrictInt, StrictFloat, str], Field(union_mode="left_to_right")],
                           ...]] | None = Field(
        None, description="Run the workload once per point of a grid of its options' values, e.g. { iodepth = "
                          "[1, 4, 16], jobs = [1, 2] }: each point's phases stored as <layout>/<kind>@iodepth=4,"
                          "jobs=2/<phase>, the grid reported as a table and a chart (like `backupbench sweep`).",
        json_schema_extra={"example": "{ iodepth = [1, 4, 16], jobs = [1, 2] }"})


def narrowed(model: type[Options], options: BaseModel) -> Options:
    """`options` as exactly `model`: a recipe entry carries `kind` (and `preset`) beside the
    options, which the stored settings must not. Secrets are carried over as they are."""
    if type(options) is model:
        return options  # type: ignore[return-value]
    return model.model_validate({name: getattr(options, name) for name in model.model_fields})
