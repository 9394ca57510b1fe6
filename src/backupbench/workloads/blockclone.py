"""Block-clone synthetic fulls (issue 14): what months of fast clones do to a reflink repository.

A hardened Linux repository on XFS with reflink (or btrfs) builds a synthetic full by
cloning the previous full's extents (FICLONERANGE) and writing only the changed blocks;
no data is copied, so the clone is fast, but every synthetic full is a patchwork of extents
shared with older files, and restores from it read a fragmented file.

Phases, all on files in one tagged folder (`backupbench-<run>`, journalled before it exists):
- full: the full backup, written once sequentially with fio (fresh random data, O_DIRECT);
- increment-1..N: synthetic full i = a block clone of synthetic full i-1 (the full for i=1),
  then `change_rate` of its blocks rewritten with new data at random block positions (fio
  randwrite, seeded: the same seed changes the same blocks). Figures: clone time, clone
  time per TiB of logical data, the change writes' speed, the space the increment really
  took (statvfs after syncfs, and FIEMAP's unshared bytes), and the file's extents;
- restore-sequential / restore-random over the original, contiguous full
  (`-original`) and over the last synthetic full: the fragmentation cost is the ratio
  original speed / synthetic-full speed.
Filesystems that cannot clone blocks are refused in check(), before anything is written.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator

from backupbench import artefacts, process, stopping, units
from backupbench.artefacts import TAG, ArtefactName
from backupbench.devices import facts
from backupbench.engines import clone
from backupbench.engines.fio import FioEngine
from backupbench.engines.fio_job import FioJob, command
from backupbench.engines.fio_json import FioSummary
from backupbench.errors import RefusedError
from backupbench.paths import Syntax, for_program
from backupbench.schema import Count, Duration, PositiveSize, Size
from backupbench.workloads.content_options import ContentOptions
from backupbench.workloads.base import Definition, RepeatKey, PhaseHooks, ServedBy, narrowed
from backupbench.workloads.fio_workload import base_figures
from backupbench.workloads.phase_kinds import CLONE, FIO, PhaseKinds

KIND = "block-clone"
FULL = "full"
# The folder of the full and its synthetic fulls, in the target.
FOLDER = ArtefactName(f"{TAG}-{{}}", "block-clone files")
MAX_BLOCK_SIZE = 64 * units.MiB
FIGURE_UNITS = {
    "clone_s": "s", "clone_s_per_tib": "s/TiB", "clone_bw": "B/s", "clone_calls": "",
    "change_bytes": "B", "change_write_s": "s", "fs_used_delta": "B", "fs_used_per_change": "x",
    "unique_bytes": "B", "shared_bytes": "B", "extents": "", "fiemap_records": "", "shared_extents": "",
    "logical_bytes": "B",
    "original_bw": "B/s", "fragmentation_cost": "x",
}


def _percent(value: object) -> object:
    """'5%', '5' and 5 all mean five percent."""
    if isinstance(value, str):
        text = value.strip().removesuffix("%").strip()
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"not a percentage: {value!r} (use e.g. 5%)") from None
    return value


Percent = Annotated[float, BeforeValidator(_percent)]


class BlockCloneOptions(ContentOptions):
    """`backupbench run --workload block-clone` flags and the recipe keys of `kind = "block-clone"`."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    full_size: PositiveSize = Field(
        units.GiB, description="Logical size of the full backup file and of each synthetic full, in bytes "
        "(rounded down to whole blocks).", json_schema_extra={"metavar": "SIZE", "example": "10GiB"})
    increments: Count = Field(
        5, ge=1, le=1000, description="Synthetic fulls made in a row, each a block clone of the one before plus "
        "its changed blocks.", json_schema_extra={"metavar": "N"})
    change_rate: Percent = Field(
        5.0, gt=0, le=100, description="Share of the file's blocks written anew in each increment, in percent "
        "of the full size (e.g. 5%).", json_schema_extra={"metavar": "PERCENT", "example": "5%"})
    clone_block_size: Size = Field(
        512 * units.KiB, validate_default=True, description="Block size of the full's writes, the changed blocks and the restores' "
        "reads, in bytes: a multiple of 4 KiB up to 64 MiB.", json_schema_extra={"metavar": "SIZE", "example": "512k"})
    clone_call_size: Size | None = Field(
        None, description="Bytes cloned by each FICLONERANGE call, a multiple of the block size [default: the "
        "whole file in one FICLONE call, as `cp --reflink` does].", json_schema_extra={"metavar": "SIZE", "example": "1GiB"})
    restore_runtime: Duration = Field(
        10.0, ge=0.001, description="How long each restore read runs, in seconds.",
        json_schema_extra={"metavar": "DURATION", "example": "10s"})
    change_seed: Count = Field(
        1, ge=0, le=2**31, description="Seed of the changed blocks' positions and data (increment i uses "
        "seed + i): the same seed changes the same blocks.", json_schema_extra={"metavar": "N"})

    @field_validator("clone_block_size")
    @classmethod
    def _block(cls, block: int, info: ValidationInfo) -> int:
        if block == 0 or block % (4 * units.KiB) or block > MAX_BLOCK_SIZE:
            raise ValueError(f"must be a multiple of 4 KiB from 4 KiB to 64 MiB, not {block:,} bytes")
        full = info.data.get("full_size")
        if full is not None and full < block:
            raise ValueError(f"a {units.format_size(block)} block is larger than the full "
                             f"({units.format_size(full)}): use a larger full size or a smaller block")
        return block

    @field_validator("clone_call_size")
    @classmethod
    def _call(cls, call: int | None, info: ValidationInfo) -> int | None:
        block = info.data.get("clone_block_size")
        if call is not None and block and (call == 0 or call % block):
            raise ValueError(f"must be a whole number of {units.format_size(block)} blocks, not {call:,} bytes")
        return call

    @property
    def file_size(self) -> int:
        return self.full_size - self.full_size % self.clone_block_size

    @property
    def blocks(self) -> int:
        return self.file_size // self.clone_block_size

    @property
    def change_blocks(self) -> int:
        """Blocks rewritten per increment: the rate of the file's blocks, at least one."""
        return min(self.blocks, max(1, round(self.blocks * self.change_rate / 100.0)))

    @property
    def change_bytes(self) -> int:
        return self.change_blocks * self.clone_block_size


@dataclass(frozen=True)
class DataJob(FioJob):
    """A fio job with options FioJob does not carry: fresh random data, a fixed seed, io_size."""

    extra: tuple[tuple[str, str], ...] = ()

    def options(self) -> list[tuple[str, str]]:
        return super().options() + list(self.extra)


def increment_name(index: int | str) -> str:
    """Synthetic full `index`'s phase ('*': every one, as a pattern)."""
    return f"increment-{index}"


def increment_names(increments: int) -> tuple[str, ...]:
    return tuple(increment_name(i) for i in range(1, increments + 1))


RESTORES = (("restore-sequential", "read"), ("restore-random", "randread"))


def restore_names() -> tuple[str, ...]:
    return tuple(name for base, _ in RESTORES for name in (f"{base}-original", base))


def phase_names(options: BlockCloneOptions) -> tuple[str, ...]:
    """The phases a run of `options` goes through, in order."""
    return (FULL, *increment_names(options.increments), *restore_names())


def seeded(seed: int) -> tuple[tuple[str, str], ...]:
    """fio options for offsets and data drawn from `seed`. randrepeat=0 is needed: with
    randrepeat=1 (the default) fio seeds the block offsets with its own constant, whatever
    randseed says, and every increment would change the same blocks."""
    return (("randrepeat", "0"), ("randseed", str(seed)))


def full_job(options: BlockCloneOptions, path: Path) -> DataJob:
    return DataJob(name=FULL, filename=path, rw="write", block_size=options.clone_block_size,
                   region_size=options.file_size, fallocate="none",
                   comment="the full backup: written once, sequentially", content=options.content(),
                   extra=seeded(options.change_seed))


def change_job(options: BlockCloneOptions, index: int, path: Path) -> DataJob:
    return DataJob(
        name=increment_name(index), filename=path, rw="randwrite", block_size=options.clone_block_size,
        region_size=options.file_size, fallocate="none",
        comment=f"the changed blocks of synthetic full {index}: {options.change_rate:g}% of the file, "
                "each block once, new data", content=options.content(),
        extra=(("io_size", units.fio_size(options.change_bytes)), *seeded(options.change_seed + index)))


def restore_job(options: BlockCloneOptions, name: str, rw: str, path: Path, what: str) -> FioJob:
    return FioJob(name=name, filename=path, rw=rw, block_size=options.clone_block_size,
                  region_size=options.file_size, runtime_s=options.restore_runtime,
                  comment=f"restore from {what}")


def write_seconds(summary: FioSummary) -> float:
    """Time the writes took: bytes over fio's bandwidth (finer than its runtime in ms)."""
    if summary.write.bw_bytes > 0:
        return summary.write.io_bytes / summary.write.bw_bytes
    return summary.runtime_ms / 1000.0


def increment_figures(logical: int, cloned: clone.CloneResult, summary: FioSummary, used_before: int,
                      used_after: int, extents: clone.ExtentSummary) -> dict[str, float]:
    """One synthetic full in figures; effective_bw is the synthetic full's logical size over
    the time it took (clone + changed blocks)."""
    change_s = write_seconds(summary)
    delta = used_after - used_before
    figures = base_figures(summary)
    figures.update({
        "logical_bytes": logical,
        "clone_s": cloned.seconds, "clone_calls": cloned.calls,
        "clone_s_per_tib": cloned.seconds * units.TiB / logical,
        "change_bytes": summary.write.io_bytes, "change_write_s": change_s,
        "effective_bw": logical / (cloned.seconds + change_s) if cloned.seconds + change_s > 0 else 0.0,
        "fs_used_delta": delta,
        "unique_bytes": extents.unique_bytes, "shared_bytes": extents.shared_bytes,
        "extents": extents.extents, "fiemap_records": extents.records,
        "shared_extents": extents.shared_extents,
    })
    if cloned.seconds > 0:
        figures["clone_bw"] = logical / cloned.seconds
    if summary.write.io_bytes:
        figures["fs_used_per_change"] = delta / summary.write.io_bytes
    return figures


def restore_figures(summary: FioSummary, extents: int, original_bw: float | None) -> dict[str, float]:
    """A restore read; against the original's speed, its fragmentation cost (x slower)."""
    figures = {**base_figures(summary), "effective_bw": summary.read.bw_bytes, "extents": extents}
    if original_bw is not None:
        figures["original_bw"] = original_bw
        if summary.read.bw_bytes > 0:
            figures["fragmentation_cost"] = original_bw / summary.read.bw_bytes
    return figures


def _units(figures: dict[str, float]) -> dict[str, Any]:
    return {"units": {name: FIGURE_UNITS[name] for name in figures if FIGURE_UNITS.get(name)}}


@dataclass
class BlockCloneWorkload:
    options: BlockCloneOptions
    engine: FioEngine = field(default_factory=FioEngine)
    kind: str = KIND
    needs_directory: bool = True
    buffered: bool = False
    test_file_cautions: bool = True
    space_fix: str = "free some space, or use a smaller --full-size, --change-rate or --increments"
    _tree_id: int | None = field(default=None, init=False, repr=False)
    _commands: list[str] = field(default_factory=list, init=False, repr=False)

    def target_label(self, target: Path | None) -> str:
        return str(target)

    def engine_versions(self) -> dict[str, str]:
        return {"fio": self.engine.version()}

    def phases(self) -> tuple[str, ...]:
        return phase_names(self.options)

    def settings(self) -> dict[str, Any]:
        return {**self.options.model_dump(mode="json"), "file_size": self.options.file_size,
                "change_bytes": self.options.change_bytes}

    def space_needed(self) -> int:
        return self.options.file_size + self.options.increments * self.options.change_bytes

    def check(self, target: Path | None) -> None:
        process.require_tool(self.engine.binary)
        if target is None:
            raise RefusedError("the block-clone workload needs a directory")
        for_program(target, Syntax.FIO_JOB)
        reason = clone.reflink_refusal(target)
        if reason is not None:
            fs_type = facts.collect_directory(target, probe_direct=False).fs_type or "the filesystem"
            raise RefusedError(f"{target} ({fs_type}) cannot hold block clones: {reason}",
                               "use XFS made with reflink=1 (mkfs.xfs -m reflink=1) or btrfs")

    @staticmethod
    def folder_of(target: Path, run_id: str) -> Path:
        return target / FOLDER.of(run_id)

    def execute(self, target: Path | None, folder: Path, run_id: str, hooks: PhaseHooks) -> None:
        assert target is not None
        files = self.folder_of(target, run_id)
        self._tree_id = hooks.will_create(artefacts.tree(files, run_id, FOLDER.what))
        files.mkdir()
        try:
            full = files / "full.dat"
            self._write_full(full, folder, hooks)
            previous = full
            for index in range(1, self.options.increments + 1):
                stopping.check()
                synthetic = files / f"synthetic-{index}.dat"
                self._increment(index, previous, synthetic, target, folder, hooks)
                previous = synthetic
            self._restores(full, previous, folder, hooks)
        finally:
            (folder / "commands.txt").write_text("\n".join(self._commands) + "\n")

    def _fio(self, job: FioJob, folder: Path, hooks: PhaseHooks, start: float = 0.0) -> FioSummary:
        self._commands.append(process.render(command(folder / f"{job.name}.fio", folder / f"{job.name}.json")))
        share = 1.0 - start
        fio_run = self.engine.run(job, folder, lambda f, d: hooks.progress(job.name, start + f * share, d))
        return fio_run.summary

    @staticmethod
    def _detail(name: str) -> dict[str, Any]:
        return {"job_file": f"{name}.fio", "raw": f"{name}.json", "buffered": False}

    def _write_full(self, full: Path, folder: Path, hooks: PhaseHooks) -> None:
        job = full_job(self.options, full)
        hooks.started(FULL, "Full backup (written once, sequentially)", job.pattern)
        summary = self._fio(job, folder, hooks)
        extents = clone.summarize(clone.file_extents(full))
        figures = {**base_figures(summary), "effective_bw": summary.write.bw_bytes, "extents": extents.extents,
                   "unique_bytes": extents.unique_bytes}
        hooks.finished(FULL, figures, {**self._detail(FULL), **_units(figures)})

    def _increment(self, index: int, source: Path, synthetic: Path, target: Path, folder: Path,
                   hooks: PhaseHooks) -> None:
        options = self.options
        job = change_job(options, index, synthetic)
        name = job.name
        call = "FICLONE" if options.clone_call_size is None else \
            f"FICLONERANGE {units.format_size(options.clone_call_size).replace(' ', '')}"
        hooks.started(name, f"Synthetic full {index}: block clone of {source.name}, then "
                            f"{options.change_rate:g}% changed blocks", f"{call} + {job.pattern}")
        used_before = clone.used_bytes(target)
        cloned = clone.clone_file(source, synthetic, options.clone_call_size,
                                  lambda f: hooks.progress(name, f * 0.2, "cloning"), stopping.check)
        summary = self._fio(job, folder, hooks, start=0.2)
        used_after = clone.used_bytes(target)
        extents = clone.summarize(clone.file_extents(synthetic))
        figures = increment_figures(options.file_size, cloned, summary, used_before, used_after, extents)
        hooks.finished(name, figures, {**self._detail(name), "source": source.name, "file": synthetic.name,
                                       **_units(figures)})

    def _restores(self, full: Path, synthetic: Path, folder: Path, hooks: PhaseHooks) -> None:
        extents = {full: clone.summarize(clone.file_extents(full)).extents,
                   synthetic: clone.summarize(clone.file_extents(synthetic)).extents}
        for base, rw in RESTORES:
            original_bw = None
            for path, name, what in ((full, f"{base}-original", "the original full (contiguous)"),
                                     (synthetic, base, f"the last synthetic full ({synthetic.name})")):
                stopping.check()
                job = restore_job(self.options, name, rw, path, what)
                hooks.started(name, f"Restore {'sequentially' if rw == 'read' else 'randomly'} from {what}",
                              job.pattern)
                summary = self._fio(job, folder, hooks)
                figures = restore_figures(summary, extents[path], original_bw)
                original_bw = summary.read.bw_bytes
                hooks.finished(name, figures, {**self._detail(name), "file": path.name, **_units(figures)})

    def cleanup(self, target: Path | None, run_id: str, hooks: PhaseHooks) -> None:
        if target is None:
            return
        files = self.folder_of(target, run_id)
        if files.is_dir() and not files.is_symlink():
            shutil.rmtree(files)
        hooks.removed(self._tree_id)


def workload(options: BlockCloneOptions, served: ServedBy | None = None,
             engine: FioEngine | None = None) -> BlockCloneWorkload:
    return BlockCloneWorkload(narrowed(BlockCloneOptions, options), engine or FioEngine())


class BlockCloneEntry(BlockCloneOptions, RepeatKey):
    """A recipe's `[[workload]] kind = "block-clone"` entry."""

    kind: Literal["block-clone"]


DEFINITION = Definition(
    name=KIND,
    description="synthetic fulls by block clone (XFS reflink, btrfs): clone time, space really used, and the "
                "restore cost of the fragmented full",
    path_syntax=Syntax.FIO_JOB, options=BlockCloneOptions, recipe_entry=BlockCloneEntry, build=workload,
    phases=phase_names,
    # The synthetic fulls are clones; the full and the restores are fio's I/O.
    phase_kinds=PhaseKinds(FIO, ((increment_name("*"), CLONE),)),
)
