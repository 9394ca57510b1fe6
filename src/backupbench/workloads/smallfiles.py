"""The snapshot small-file workload of field note E, whole: options, presets, phases, figures,
and the adapter to the pipeline over the native engine (engines/smallfiles.py).

N files of S bytes spread evenly over D folders are created with the first byte pattern,
then every file is rewritten in place once per further pattern ("update passes"). Against a
classic (CoW) snapshot, the create phase and the first update of each block pay the
copy-on-write; later rewrites do not. Optionally every file is read back and compared with
the last pattern.

Decisions, so that the figures mean one thing:
- file size: field note E says "104,857 files of 100 KB (~10 GB)". 104,857 x 100 KiB is
  exactly 10 GiB (104,857 x 102,400 = 10,737,356,800 bytes; 10 GiB / 100 KiB = 104,857.6),
  so the note's "KB" is KiB: the default is 100 KiB = 102,400 bytes.
- flush: the default is "sync-end": files are written through the page cache like an
  application would, and one syncfs() at the end of each phase is counted in the phase
  time, so a phase's time includes getting its data onto storage. With "none" the create
  phase measures the page cache whenever the data fits in RAM; that is what the note's
  tool did (its 9,236 files/s create = ~920 MB/s, while its disk wrote 271 MB/s), and it
  charges the create's write-back to update-1. "fsync" fsyncs each file before closing it
  (counted in that file's latency): a database- or mail-store-like worst case.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping

from pydantic import BeforeValidator, ConfigDict, Field, model_validator

from backupbench import artefacts, units
from backupbench.engines.content import DataContent
from backupbench.engines.smallfiles import FOLDER, SmallFilesEngine, folder_name
from backupbench.engines.smallfiles_job import SmallFilesJob, phase_names
from backupbench.engines.smallfiles_results import PhaseResult
from backupbench.schema import Count, Flag, Pattern, Size, comma_list, parse_byte
from backupbench.workloads.base import Definition, RepeatKey, PhaseHooks, ServedBy, narrowed
from backupbench.workloads.content_options import ContentOptions
from backupbench.workloads.phase_kinds import FILES, PhaseKinds

Flush = Literal["none", "fsync", "sync-end"]  # engines.smallfiles_job.FLUSH_POLICIES

def _patterns(value: object) -> object:
    items = comma_list(value)
    if isinstance(items, (list, tuple)):
        return tuple(parse_byte(item) for item in items)
    return items



def _count(value: Any) -> int | None:
    """A count as a flag ('10') or a recipe (10) gives it; None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _default_threads() -> int:
    return os.cpu_count() or 1


class SmallFilesSpec(ContentOptions):
    """One small-file run. Field names are the recipe keys; `--kebab-case` are the flags."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    files: Count = Field(
        104_857, ge=1, le=10_000_000,
        description="Number of files to create (field note E: 104,857, ~10 GiB at 100 KiB).",
        json_schema_extra={"metavar": "N"},
    )
    file_size: Size = Field(
        100 * units.KiB, ge=1, le=units.GiB,
        description="Size of each file (100KiB = 102,400 bytes; 100KB = 100,000 bytes).",
        json_schema_extra={"metavar": "SIZE", "example": "100KiB"},
    )
    folders: Count = Field(
        1_048, ge=1, le=1_000_000,
        description="Folders the files are spread over evenly (file i goes in folder i mod folders).",
        json_schema_extra={"metavar": "N"},
    )
    patterns: Annotated[tuple[Pattern, ...], BeforeValidator(_patterns)] = Field(
        (0x00, 0xFF, 0x55, 0xAA), min_length=1, max_length=256,
        description="One entry per pass: the first creates the files, each further one is an update pass "
        "rewriting every file in place. With data = 'pattern' each pass writes its byte over the whole file "
        "(field note E); otherwise each pass writes fresh data of the chosen kind.",
        json_schema_extra={"metavar": "LIST", "example": "0x00,0xff,0x55,0xaa"},
    )
    threads: Count = Field(
        default_factory=_default_threads, ge=1, le=256,
        description="Parallel workers (default: one per CPU); each takes an equal share of the files.",
        json_schema_extra={"metavar": "N"},
    )
    flush: Flush = Field(
        "sync-end",
        description="When data is forced to storage: none (page cache only), fsync (each file "
        "before close, counted in its latency), sync-end (one syncfs per phase, counted in the phase time).",
    )
    verify: Flag = Field(
        False, description="Read every file back after the last pass and count files that differ from the last pattern.",
    )
    keep: Flag = Field(False, description="Keep the tagged folder of files after the run (to inspect it).")

    @model_validator(mode="before")
    @classmethod
    def _default_folders_fit(cls, data: Any) -> Any:
        # The default folder count is a default, not a request: fewer files than that get a
        # folder each. Only folders the user named are checked against the files.
        files = _count(data.get("files")) if isinstance(data, dict) else None
        if files is not None and data.get("folders") is None:
            default = cls.model_fields["folders"].default
            if 0 < files < default:
                data = {**data, "folders": files}
        return data

    @model_validator(mode="after")
    def _sane(self) -> "SmallFilesSpec":
        if self.pattern is not None:
            raise ValueError("pattern: the small-file workload takes one byte per pass: set patterns = "
                             "[0x00, 0xff, ...] with data = 'pattern'")
        if self.folders > self.files:
            raise ValueError(f"folders ({self.folders:,}) cannot exceed files ({self.files:,})")
        return self

    @property
    def update_passes(self) -> int:
        return len(self.patterns) - 1

    @property
    def phases(self) -> tuple[str, ...]:
        """The phase names this spec runs, in order."""
        return phase_names(self.update_passes, self.verify)

    @property
    def data_bytes(self) -> int:
        """Bytes written by one pass over every file."""
        return self.files * self.file_size

    def content(self) -> DataContent:
        """With data = 'pattern' each pass writes its own byte of `patterns`: the content says so."""
        content = super().content()
        return replace(content, pattern=self.patterns[0], passes=self.patterns) if content.constant else content

    def job(self) -> SmallFilesJob:
        """What the engine is asked to do."""
        return SmallFilesJob(self.files, self.file_size, self.folders, self.patterns, self.threads, self.flush,
                             self.verify, self.content())


PRESETS: dict[str, SmallFilesSpec] = {
    # Field note E as written: 104,857 x 100 KiB = 10 GiB in 1,048 folders, 0x00 then 3 updates.
    "field-note-e": SmallFilesSpec(data="pattern"),
    # The same shape, 2,000 x 100 KiB (~195 MiB) in 20 folders: a smoke run in seconds.
    "quick": SmallFilesSpec(files=2_000, folders=20),
}

# Phase names of the default spec with verify, in order; every output (live, CSV, JSON, store) uses them.
PHASES: tuple[str, ...] = phase_names(update_passes=3, verify=True)


def with_preset(base: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """A preset's values with the given ones on top. A preset's folder count yields to a
    smaller file count given beside it (a folder per file), as the default one does."""
    base = dict(base)
    files = _count(given.get("files"))
    if "folders" not in given and files is not None and base.get("folders", 0) > files:
        base.pop("folders")
    return {**base, **given}


PHASE_TITLES = {"create": "create every file", "verify": "read back and compare"}


def figures_of(result: PhaseResult) -> dict[str, float]:
    figures = {
        "files_per_s": result.files_per_s,
        "effective_bw": result.mib_per_s * 2**20,
        "file_p50_lat": result.latency_p50_ns,
        "file_p99_lat": result.latency_p99_ns,
        "files": float(result.files),
        "runtime": result.seconds,
        "sync_seconds": result.sync_seconds,
    }
    if result.mismatches is not None:
        figures["mismatches"] = float(result.mismatches)
    return figures


@dataclass
class SmallFilesWorkload:
    spec: SmallFilesSpec
    engine: SmallFilesEngine = field(default_factory=SmallFilesEngine)
    kind: str = "smallfiles"
    needs_directory: bool = True
    buffered: bool = True  # page cache on purpose: an application's view (module docstring)
    test_file_cautions: bool = False  # thousands of files, cached on purpose
    space_fix: str = "free some space, or use fewer or smaller files (--files, --file-size)"

    def target_label(self, target: Path | None) -> str:
        return str(target)

    def engine_versions(self) -> dict[str, str]:
        return {}  # the engine is this package's own Python

    def phases(self) -> tuple[str, ...]:
        return self.spec.phases

    def settings(self) -> dict[str, Any]:
        # keep decides what is left afterwards, not what is measured
        return self.spec.model_dump(mode="json", exclude={"keep"})

    def space_needed(self) -> int:
        return self.spec.job().bytes_needed()

    def check(self, target: Path) -> None:
        self.engine.check(self.spec.job(), target)

    def execute(self, target: Path, folder: Path, run_id: str, hooks: PhaseHooks) -> None:
        pattern = f"{self.spec.files:,} x {self.spec.file_size // 1024} KiB, {self.spec.threads} thr, {self.spec.flush}"
        started: set[str] = set()

        def on_phase(name: str, fraction: float, detail: str) -> None:
            if name not in started:
                started.add(name)
                title = PHASE_TITLES.get(name, f"rewrite every file in place ({name})")
                hooks.started(name, title, pattern)
            hooks.progress(name, fraction, detail)

        def on_result(result: PhaseResult) -> None:
            hooks.finished(result.name, figures_of(result), {"flush": result.flush})

        folder_id = hooks.will_create(artefacts.tree(tagged_folder(target, run_id), run_id, FOLDER.what))
        try:
            self.engine.run(self.spec.job(), target, run_id, on_phase, keep=self.spec.keep, on_result=on_result)
        finally:
            # The engine removes the folder on every exit path (the run's sweep makes sure);
            # with --keep it is the user's now.
            if self.spec.keep:
                hooks.removed(folder_id, "kept (--keep)")

    def cleanup(self, target: Path, run_id: str, hooks: PhaseHooks) -> None:
        # The engine removes its folder on every exit path; the run's journal sweep makes sure.
        return None


def tagged_folder(target: Path, run_id: str) -> Path:
    return target / folder_name(run_id)


class SmallFilesEntry(SmallFilesSpec, RepeatKey):
    """A recipe's `[[workload]] kind = "smallfiles"` entry; `preset` picks a starting point."""

    kind: Literal["smallfiles"]
    preset: Literal["field-note-e", "quick"] | None = Field(
        None, description="Start from this preset; keys given beside it override it.")

    @model_validator(mode="before")
    @classmethod
    def _from_preset(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("preset") in PRESETS:
            return with_preset(PRESETS[data["preset"]].model_dump(exclude_unset=True), data)
        return data


def workload(spec: SmallFilesSpec, served: ServedBy | None = None) -> SmallFilesWorkload:
    return SmallFilesWorkload(narrowed(SmallFilesSpec, spec))


DEFINITION = Definition(
    name="smallfiles",
    description="many small files created, then rewritten in place pass by pass (field note E)",
    options=SmallFilesSpec, recipe_entry=SmallFilesEntry, build=workload, phases=lambda spec: spec.phases,
    phase_kinds=PhaseKinds(FILES), parallelism=("threads",),
    # No default preset: without one the shape is field note E's (the options' defaults) and the
    # data fresh and incompressible like every workload's; --preset field-note-e adds its patterns.
    presets={name: spec.model_dump(exclude_unset=True) for name, spec in PRESETS.items()},
    merge_preset=with_preset,
)
