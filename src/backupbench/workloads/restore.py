"""Restores of existing backup files, read-only: Veeam KB2014's restore tests as the article
runs them, on a real backup file (`fio --rw=read` / `--rw=randread --filename=<the .vbk>`).

A fresh test file is a restore's best day: contiguous, just written. A real backup file is laid
out as its repository made it (a full made of merged increments, block-cloned extents, a
filesystem that was full), and that is what a restore meets. For each file named (a chain:
`.vbk` and `.vib`s, or any regular files) this runs restore-sequential (read in order: the upper
bound) and restore-random (512 KiB blocks at random: the lower bound), O_DIRECT, each file as it
lies, and reports beside the speeds the file's extent map (engines/file_map.py: extents, shared
extents, the jumps a read in order makes) and what the same file would take on a spinning disk
(disk_model.py, labelled model).

Nothing is ever written. fio runs with --readonly (it refuses any write) and
allow_file_create=0 (it makes no file); the extent map is read without syncing the file; no
file is made next to the named ones (no O_DIRECT probe file either: the open itself is the
probe). Every file's size and mtime are read before and after each phase: a file that changed
(still being written) ends the run with that said, since its figures would be of another file.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from backupbench import disk_model, process, units
from backupbench.engines import file_map
from backupbench.engines.fio import FioEngine
from backupbench.engines.fio_job import FioJob, command
from backupbench.errors import RefusedError
from backupbench.hostfiles import HostFiles, find_mount
from backupbench.paths import Syntax, for_program
from backupbench.schema import BlockSize, Count, Duration, FilePath, comma_list, no_repeats
from backupbench.workloads.base import Definition, PhaseHooks, RepeatKey, ServedBy, narrowed
from backupbench.workloads.fio_workload import base_figures
from backupbench.workloads.kb2014 import DEFAULT_RAMP_S, IoEngine, KB2014_BLOCK_SIZE
from backupbench.workloads.model_disk_options import ModelDiskOptions

SEQUENTIAL, RANDOM = "restore-sequential", "restore-random"
RestoreName = Literal["restore-sequential", "restore-random"]
# Filesystems whose "disk" is memory: a restore figure from them says nothing of storage.
MEMORY_FILESYSTEMS = ("tmpfs", "ramfs", "devtmpfs")
MAP_SUFFIX = ".map.csv"


class _Files(ModelDiskOptions):
    files: Annotated[tuple[FilePath, ...], BeforeValidator(comma_list), AfterValidator(no_repeats)] = Field(
        (), description="The existing files to restore from, read-only: a backup chain (.vbk and .vib files) or "
        "any regular files (on `run`: the PATHs).", json_schema_extra={"metavar": "FILE,..."})


class RestoreReads(ModelDiskOptions):
    """How each restore reads a file: the keys of every workload that restores existing files
    (this one, and aging's restores of the files it made)."""

    operations: Annotated[tuple[RestoreName, ...], BeforeValidator(comma_list), AfterValidator(no_repeats)] = Field(
        (SEQUENTIAL, RANDOM), min_length=1, description="Comma-separated subset of: restore-sequential, restore-random.",
        json_schema_extra={"metavar": "LIST"})
    runtime: Duration = Field(10.0, ge=0.001, description="How long each operation runs.",
                              json_schema_extra={"metavar": "DURATION", "example": "10s"})
    ramp: Duration = Field(DEFAULT_RAMP_S, le=3600, description="Warm-up before each operation is measured.",
                           json_schema_extra={"metavar": "DURATION", "example": "2s"})
    block_size: BlockSize = Field(KB2014_BLOCK_SIZE, description="I/O block size (Veeam's names too: lan is 512k).",
                                  json_schema_extra={"metavar": "SIZE", "example": "512k"})
    iodepth: Count = Field(1, ge=1, le=4096, description="Queue depth of each restore (1: KB2014's).",
                           json_schema_extra={"metavar": "N"})
    engine: IoEngine = Field("libaio", description="fio ioengine.")


class RestoreOptions(RestoreReads, _Files):
    """`backupbench run --workload restore FILE...` and a recipe's `kind = "restore"` entry."""


@dataclass(frozen=True)
class Stamp:
    """What says a file is still the one measured: its size and its mtime."""

    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> "Stamp":
        info = os.stat(path)
        return cls(info.st_size, info.st_mtime_ns)


def labels(files: tuple[str, ...]) -> dict[str, str]:
    """file -> the name its phases carry: its own name, or with its folder when two share one."""
    names = [Path(f).name for f in files]
    return {f: (Path(f).name if names.count(Path(f).name) == 1 else f"{Path(f).parent.name}/{Path(f).name}")
            for f in files}


def phase_names(options: RestoreOptions) -> tuple[str, ...]:
    """KB2014's names for one file; '<file>:restore-sequential' for each of several."""
    if len(options.files) <= 1:
        return tuple(options.operations)
    named = labels(options.files)
    return tuple(f"{named[f]}:{op}" for f in options.files for op in options.operations)


def refusal(path: Path, block: int, host: HostFiles | None = None) -> str | None:
    """Why `path` cannot be restored from, in one line (with its fix), or None."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return f"{path} does not exist: name an existing backup file"
    except OSError as exc:
        return f"{path} cannot be read: {exc.strerror}"
    if stat.S_ISDIR(info.st_mode):
        return f"{path} is a directory: name the backup files in it (e.g. {path}/*.vbk)"
    if stat.S_ISBLK(info.st_mode) or stat.S_ISCHR(info.st_mode):
        return (f"{path} is a device: --workload restore reads backup files; a device's speed is what "
                "backupbench apply measures on a layout built on it")
    if not stat.S_ISREG(info.st_mode):
        return f"{path} is not a regular file: name a backup file"
    if info.st_size < block:
        return (f"{path} is {units.format_size(info.st_size)}, smaller than one block "
                f"({units.format_size(block)}): name a backup file, or give a smaller --block-size")
    found = fs_type(path, host)
    if found in MEMORY_FILESYSTEMS:
        return f"{path} is on {found}: that is memory, not storage; restore from the repository's disk"
    return _direct_refusal(path)


def fs_type(path: Path, host: HostFiles | None = None) -> str:
    mount = find_mount(os.path.realpath(path), (host or HostFiles()).mounts())
    return mount.fs_type if mount is not None else ""


def _direct_refusal(path: Path) -> str | None:
    """O_DIRECT asked on a read-only open: the probe that makes no file beside the user's."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return f"{path} is on a filesystem that refuses O_DIRECT: restore from the repository's own disk"
        return f"{path} cannot be opened for reading: {exc.strerror}"
    os.close(fd)
    return None


def restore_job(op: str, name: str, path: Path, options: RestoreReads, size: int) -> FioJob:
    """One read-only fio job over the whole file as it lies (whole blocks only)."""
    return FioJob(name=name, filename=path, rw="read" if op == SEQUENTIAL else "randread",
                  block_size=options.block_size, region_size=size - size % options.block_size,
                  iodepth=options.iodepth, ioengine=options.engine, direct=True, runtime_s=options.runtime,
                  ramp_s=options.ramp, content=None, readonly=True,
                  comment=f"{op} of {path.name} as it lies, read only (KB2014 on a real backup file)")


def _map_name(label: str) -> str:
    return label.replace("/", "_") + MAP_SUFFIX


def map_rows(found: file_map.FileMap) -> str:
    """The runs a picture of the file draws, as CSV (logical, physical, length, shared)."""
    lines = ["logical,physical,length,shared"]
    lines += [f"{r.logical},{r.physical},{r.length},{int(r.shared)}" for r in file_map.drawn_runs(found)]
    return "\n".join(lines) + "\n"


@dataclass
class RestoreWorkload:
    """The Workload (workloads/base.py) reading each named file, read-only."""

    options: RestoreOptions
    engine: FioEngine = field(default_factory=FioEngine)
    kind: str = "restore"
    needs_directory: bool = False
    buffered: bool = False
    test_file_cautions: bool = False
    space_fix: str = ""

    def target_label(self, target: Path | None) -> str:
        return ", ".join(self.options.files)

    def engine_versions(self) -> dict[str, str]:
        return {"fio": self.engine.version()}

    def phases(self) -> tuple[str, ...]:
        return phase_names(self.options)

    def settings(self) -> dict[str, Any]:
        return self.options.model_dump(mode="json")

    def space_needed(self) -> int:
        return 0

    def check(self, target: Path | None) -> None:
        process.require_tool(self.engine.binary)
        if not self.options.files:
            raise RefusedError("--workload restore needs the files to restore from",
                               "name them: backupbench run --workload restore /backups/job.vbk")
        for name in self.options.files:
            for_program(name, Syntax.FIO_JOB)  # a name fio would read as something else
            found = refusal(Path(name), self.options.block_size)
            if found is not None:
                raise RefusedError(found)

    def execute(self, target: Path | None, folder: Path, run_id: str, hooks: PhaseHooks) -> None:
        named = labels(self.options.files)
        commands: list[str] = []
        try:
            for name in self.options.files:
                self._restore(Path(name), named[name], folder, hooks, commands)
        finally:
            (folder / "commands.txt").write_text("\n".join(commands) + "\n")

    def _restore(self, path: Path, label: str, folder: Path, hooks: PhaseHooks, commands: list[str]) -> None:
        before = Stamp.of(path)
        facts: dict[str, float] | None = None
        for op in self.options.operations:
            name = op if len(self.options.files) == 1 else f"{label}:{op}"
            job = restore_job(op, name, path, self.options, before.size)
            hooks.started(name, f"{op} of {path} (read only)", job.pattern, warmup_s=job.ramp_s)
            commands.append(process.render(command(folder / f"{name}.fio", folder / f"{name}.json", readonly=True)))
            run = self.engine.run(job, folder, lambda f, d, n=name: hooks.progress(n, f, d))
            if Stamp.of(path) != before:
                raise RefusedError(f"{path} changed during {name} (size {before.size:,} -> {Stamp.of(path).size:,} "
                                   "bytes): it is being written, and its figures would be of another file",
                                   "measure a backup file no job is writing")
            # Mapped after the first read: a file whose last writes were still in the page cache
            # has no place on disk for them yet, and an O_DIRECT read has the kernel write them out.
            facts = facts if facts is not None else self._mapped(path, label, folder)
            figures = {**base_figures(run.summary), "effective_bw": run.summary.read.bw_bytes, **facts}
            hooks.finished(name, figures, {"file": str(path), "fs_type": fs_type(path), "job_file": f"{name}.fio",
                                           "raw": f"{name}.json", "map": _map_name(label),
                                           "model_disk": self.options.model_disk.describe(), "buffered": False})

    def _mapped(self, path: Path, label: str, folder: Path) -> dict[str, float]:
        """The file's map as figures, with the model's restores of it; its runs to the run folder."""
        found = file_map.file_map(path)
        if found.unplaced:
            raise RefusedError(f"{path} has {found.unplaced} extents with no place on disk yet: it is being written",
                               "measure a backup file no job is writing")
        (folder / _map_name(label)).write_text(map_rows(found))
        return {**found.figures(), **disk_model.projected(found.figures(), self.options.block_size,
                                                          self.options.model_disk)}

    def cleanup(self, target: Path | None, run_id: str, hooks: PhaseHooks) -> None:
        """Nothing to remove: a restore makes nothing outside its run folder."""


def workload(options: RestoreOptions, served: ServedBy | None = None, engine: FioEngine | None = None) -> RestoreWorkload:
    return RestoreWorkload(narrowed(RestoreOptions, options), engine or FioEngine())


class RestoreEntry(RestoreOptions, RepeatKey):
    """A recipe's `[[workload]] kind = "restore"` entry."""

    kind: Literal["restore"]


DEFINITION = Definition(
    name="restore",
    description="KB2014's restores of existing backup files, read-only: sequential and random reads of each file as "
                "it lies, its extent map, and the same file on a spinning disk (model)",
    options=RestoreOptions, recipe_entry=RestoreEntry, build=workload, phases=phase_names,
    needs_directory=False, reads_files=True, path_syntax=Syntax.FIO_JOB,
)
