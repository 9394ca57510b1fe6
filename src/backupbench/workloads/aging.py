"""The repository over its life (issue 40): a backup policy's retention cycle played day by day
on the real filesystem, at a scale the user sets, and measured as the repository ages.

A new repository is a restore's best day; the engineer plans for year three, when fulls are
patchworks of block-cloned extents and the free space is cut up by deleted restore points.
This workload plays the policy (the repository plan's own fields and rules: retention.py,
whose calendar says what each day makes and deletes) for `days` simulated days on a first
full of `full_size`: every day's changed blocks (`change_rate` of them, seeded, optionally
skewed to a hot share) written as an increment of compressed blocks of varying size; synthetic
fulls built by block clone or by copy; forever-forward's oldest increment merged into the full;
reverse incremental's rollbacks; GFS flags; and every point retention expires deleted the day
it does (engines/backup_repository.py does the I/O). Day 0, every `measure_every` days and the
last day are measured (workloads/aging_run.py): the day's job, the space against the plan's
closed form, the free space, and KB2014's restores of the newest full and the oldest point.

Phases, by simulated day ('day-035:...'; the day is also the figure `simulated_day`):
- `day-035:job`: that day's backup job (increment and transform), its space and free space;
- `day-035:restore-sequential:newest`, `...:restore-random:newest`: the newest full, read only;
- `...:oldest`: the file of the oldest point kept, when that is another file than the newest
  full (a GFS or chain full; a reverse incremental's oldest rollback; never for forever-forward,
  whose oldest point is its one full).
Everything lives in one tagged folder in the target (`backupbench-aging-<run>`), journalled
before it exists and removed at the end, whatever ends the run.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from backupbench import artefacts, process, retention, units
from backupbench.artefacts import TAG, ArtefactName
from backupbench.engines import backup_files, clone
from backupbench.engines.backup_repository import BlockShape
from backupbench.engines.fio import FioEngine
from backupbench.errors import InputError, RefusedError
from backupbench.paths import Syntax, for_program
from backupbench.retention import RetentionPolicy, gfs_contradiction
from backupbench.retention_space import peak_bytes
from backupbench.schema import BlockSize, Count, Percent, PositiveSize, Ratio, Size
from backupbench.workloads.base import Definition, PhaseHooks, RepeatKey, ServedBy, narrowed
from backupbench.workloads.phase_kinds import CLONE, FIO, PhaseKinds
from backupbench.workloads.aging_run import JOB, AgingRun, day_label, measured_days, restored
from backupbench.workloads.restore import RestoreReads

KIND = "aging"
# The repository folder in the target: every backup file of the run is in it.
FOLDER = ArtefactName(f"{TAG}-aging-{{}}", "aging repository")
MAX_DAYS = 3650
MAX_BACKUP_BLOCK = 16 * units.MiB


class _Scale(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    full_size: PositiveSize = Field(
        units.GiB, description="Size of the full backup file as stored (after compression): the scale the policy "
        "is played at; the protected data is this times the reduction.",
        json_schema_extra={"metavar": "SIZE", "example": "2GiB"})
    days: Count = Field(28, ge=1, le=MAX_DAYS, description="Simulated days played after the first full (day 0): "
                        "one backup job a day.", json_schema_extra={"metavar": "N"})
    measure_every: Count = Field(
        7, ge=1, le=MAX_DAYS, description="Measure the day's job, the space and the restores every N simulated "
        "days, and on day 0 and the last day.", json_schema_extra={"metavar": "N"})
    change_rate: Percent = Field(5.0, gt=0, le=100, description="Share of the data that changes each day (of the "
                                 "full's blocks), in percent.", json_schema_extra={"metavar": "PERCENT"})
    reduction: Ratio = Field(2.0, ge=1, le=100, description="Data reduction of the backups: each stored block is "
                             "drawn around the backup block size over it (2:1: half).",
                             json_schema_extra={"metavar": "RATIO"})


class _Blocks(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    backup_block_size: BlockSize = Field(
        units.MiB, validate_default=True, description="Block size of the backups before compression (Veeam's "
        "storage optimization: local is 1 MiB, lan 512 KiB, wan 256 KiB, local-16tb 4 MiB), up to 16 MiB.",
        json_schema_extra={"metavar": "SIZE", "example": "1MiB"})
    compression_spread: Percent = Field(
        25.0, ge=0, lt=100, description="How far each stored block's size strays from the mean, at most, in "
        "percent (drawn evenly).", json_schema_extra={"metavar": "PERCENT"})
    align: Size = Field(
        4 * units.KiB, validate_default=True, description="Every stored block starts on this boundary, so block "
        "clone can share it: the filesystem's block (XFS, btrfs: 4 KiB), ZFS's recordsize.",
        json_schema_extra={"metavar": "SIZE", "example": "4KiB"})
    hot_share: Percent = Field(0.0, ge=0, lt=100, description="Share of the blocks that are hot and take "
                               "--hot-changes of each day's changes (0: changes spread evenly).",
                               json_schema_extra={"metavar": "PERCENT"})
    hot_changes: Percent = Field(80.0, ge=0, le=100, description="Share of each day's changes that land on the hot "
                                 "blocks (with --hot-share).", json_schema_extra={"metavar": "PERCENT"})
    change_seed: Count = Field(1, ge=0, le=2**31, description="Seed of the changed blocks, their sizes and data: "
                               "the same seed changes the same blocks.", json_schema_extra={"metavar": "N"})

    @field_validator("backup_block_size")
    @classmethod
    def _block(cls, block: int) -> int:
        if block % (4 * units.KiB) or not 4 * units.KiB <= block <= MAX_BACKUP_BLOCK:
            raise ValueError(f"must be a multiple of 4 KiB from 4 KiB to 16 MiB, not {block:,} bytes")
        return block

    @field_validator("align")
    @classmethod
    def _align(cls, align: int) -> int:
        if align == 0 or align % (4 * units.KiB) or align > MAX_BACKUP_BLOCK:
            raise ValueError(f"must be a multiple of 4 KiB up to 16 MiB, not {align:,} bytes")
        return align


class AgingOptions(RestoreReads, _Blocks, RetentionPolicy, _Scale):
    """`backupbench run --workload aging` flags and the recipe keys of `kind = "aging"`."""

    @model_validator(mode="after")
    def _fits(self) -> "AgingOptions":
        mean = self.backup_block_size / self.reduction
        if self.align > mean:
            raise ValueError(f"a stored block of about {units.format_size(mean)} would be padded to --align "
                             f"{units.format_size(self.align)}: use a smaller --align or a larger --backup-block-size")
        if self.full_size < self.align:
            raise ValueError(f"a full of {units.format_size(self.full_size)} holds no block of "
                             f"{units.format_size(self.align)}: use a larger --full-size")
        smallest = int(self.per_day) * self.shape.length_bounds[0]
        if self.method == "reverse-incremental" and smallest < self.block_size:
            raise ValueError(f"a day's rollback (at least {units.format_size(smallest)}) may be smaller than one "
                             f"restore read of {units.format_size(self.block_size)}: use a larger --full-size or "
                             "--change-rate, or a smaller --block-size")
        return self

    @property
    def blocks(self) -> int:
        return max(1, round(self.full_size * self.reduction / self.backup_block_size))

    @property
    def protected(self) -> int:
        return self.blocks * self.backup_block_size

    @property
    def per_day(self) -> float:
        """Blocks changed a day, on average: the rate of the blocks (engines/backup_repository.Changes
        changes its whole part and, by chance, one more)."""
        return self.blocks * self.change_rate / 100.0

    @property
    def shape(self) -> BlockShape:
        return BlockShape(self.blocks, round(self.backup_block_size / self.reduction), self.compression_spread / 100.0,
                          self.align, backup_files.align_up(self.backup_block_size, self.align))

    def planned_bytes(self) -> int:
        """The repository plan's closed form at this scale: the restore points at their peak (no
        workspace; retention_space.py), for a full and an increment of the blocks as this run
        stores them on average: aligned, as the reduction a real repository is sized by is
        measured from what it stored (the alignment's ~0.4% at 2:1 of 1 MiB blocks included)."""
        stored = self.shape.mean_length()
        return peak_bytes(self, math.ceil(self.blocks * stored), math.ceil(self.per_day * stored))


def phase_names(options: AgingOptions) -> tuple[str, ...]:
    """The phases a run of `options` goes through, in order (from the calendar: no I/O)."""
    calendar = retention.play(options, options.days)
    names: list[str] = []
    for day in measured_days(options):
        names.append(f"{day_label(day)}:{JOB}")
        names += [f"{day_label(day)}:{op}:{role}" for role, _ in restored(calendar[day]) for op in options.operations]
    return tuple(names)


def space_needed(options: AgingOptions) -> int:
    """The most the run holds on any day, by the calendar: every file on disk at its peak (a
    block at its mean size, half its spread and a whole alignment above), the synthetic full's
    transient increment, a full's worth of gaps in a full rewritten in place; with block clone
    never more than everything written so far (fulls and merges share the rest)."""
    shape = options.shape
    block = round(shape.mean * (1 + shape.spread / 2)) + shape.align
    full, increment = options.blocks * block, math.ceil(options.per_day) * block
    gaps = full if options.method in retention.TRANSFORMS else 0
    shares = options.block_clone and options.method in ("forward-synthetic", "forever-forward")
    most = 0
    for day in retention.play(options, options.days):
        held = sum(full if point.kind == retention.FULL else increment for point in day.on_disk) + gaps
        held += increment if day.job == retention.SYNTHETIC_FULL else 0
        most = max(most, min(held, full + increment * (day.day + 1)) if shares else held)
    return most


@dataclass
class AgingWorkload:
    options: AgingOptions
    engine: FioEngine = field(default_factory=FioEngine)
    kind: str = KIND
    needs_directory: bool = True
    buffered: bool = False
    test_file_cautions: bool = True
    space_fix: str = ("free some space, or use a smaller --full-size or fewer --days, or keep fewer points "
                      "(--dailies, --weeklies, --monthlies, --yearlies)")
    _tree_id: int | None = field(default=None, init=False, repr=False)

    def target_label(self, target: Path | None) -> str:
        return str(target)

    def engine_versions(self) -> dict[str, str]:
        return {"fio": self.engine.version()}

    def phases(self) -> tuple[str, ...]:
        return phase_names(self.options)

    def settings(self) -> dict[str, Any]:
        options = self.options
        return {**options.model_dump(mode="json"), "blocks": options.blocks, "protected": options.protected,
                "changed_blocks_per_day": options.per_day, "planned_bytes": options.planned_bytes(),
                "space_needed": self.space_needed(), "start_date": retention.START.isoformat(),
                "measured_days": measured_days(options)}

    def space_needed(self) -> int:
        return space_needed(self.options)

    def check(self, target: Path | None) -> None:
        process.require_tool(self.engine.binary)
        if target is None:
            raise RefusedError("the aging workload needs a directory")
        for_program(target, Syntax.FIO_JOB)
        if self.options.block_clone:
            reason = clone.reflink_refusal(target) or backup_files.range_clone_refusal(target, self.options.align)
            if reason is not None:
                raise RefusedError(f"{target} cannot hold block clones of --align {units.format_size(self.options.align)}"
                                   f" blocks: {reason}", "drop --block-clone (fulls and merges are then copied), use "
                                   "XFS made with reflink=1 or btrfs, or set --align to ZFS's recordsize")

    @staticmethod
    def folder_of(target: Path, run_id: str) -> Path:
        return target / FOLDER.of(run_id)

    def execute(self, target: Path | None, folder: Path, run_id: str, hooks: PhaseHooks) -> None:
        assert target is not None
        files = self.folder_of(target, run_id)
        self._tree_id = hooks.will_create(artefacts.tree(files, run_id, FOLDER.what))
        files.mkdir()
        AgingRun(self.options, self.engine, target, files, folder, hooks).play()

    def cleanup(self, target: Path | None, run_id: str, hooks: PhaseHooks) -> None:
        if target is None:
            return
        files = self.folder_of(target, run_id)
        if files.is_dir() and not files.is_symlink():
            shutil.rmtree(files)
        hooks.removed(self._tree_id)


def workload(options: AgingOptions, served: ServedBy | None = None, engine: FioEngine | None = None) -> AgingWorkload:
    """The workload; a policy the repository plan refuses is refused with the plan's own line."""
    found = gfs_contradiction(options)
    if found is not None:
        raise InputError(*found)
    return AgingWorkload(narrowed(AgingOptions, options), engine or FioEngine())


class AgingEntry(AgingOptions, RepeatKey):
    """A recipe's `[[workload]] kind = "aging"` entry."""

    kind: Literal["aging"]

    @model_validator(mode="after")
    def _consistent(self) -> "AgingEntry":
        found = gfs_contradiction(self, retention.key)
        if found is not None:
            raise ValueError(f"{found[0]} ({found[1]})")
        return self


DEFINITION = Definition(
    name=KIND,
    description="a backup policy's retention cycle played day by day (increments, synthetic fulls by block clone "
                "or copy, merges, rollbacks, GFS, deletions): the day's job, space against the plan, free space and "
                "restores as the repository ages",
    path_syntax=Syntax.FIO_JOB, options=AgingOptions, recipe_entry=AgingEntry, build=workload, phases=phase_names,
    # The day's job is block clones and changed blocks, as the block-clone workload's increments;
    # the restores are fio's I/O.
    phase_kinds=PhaseKinds(FIO, ((f"day-*:{JOB}", CLONE),)),
)
