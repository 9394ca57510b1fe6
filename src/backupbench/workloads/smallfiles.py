"""The snapshot small-file workload of field note E: create many small files, rewrite them.

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
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from backupbench import units
from backupbench.schema import Size, comma_list

Flush = Literal["none", "fsync", "sync-end"]
FLUSH_POLICIES: tuple[str, ...] = ("none", "fsync", "sync-end")

CREATE_PHASE = "create"
VERIFY_PHASE = "verify"
# Filesystem blocks are assumed to be 4 KiB when estimating the space a run occupies.
BLOCK = 4 * units.KiB
# Free space and inodes required on top of what the run occupies: metadata the estimate
# does not see (journal, extent trees, xattrs) and other writers on the filesystem.
HEADROOM_FRACTION = 0.05
HEADROOM_MIN_BYTES = 1 * units.MiB
HEADROOM_MIN_INODES = 16


def _pattern(value: object) -> object:
    """One byte: an int, or text in hex with 0x ('0xff') or decimal ('255')."""
    if isinstance(value, bool):
        raise ValueError(f"not a byte pattern: {value!r}")
    if isinstance(value, str):
        text = value.strip().lower()
        try:
            return int(text, 16) if text.startswith("0x") else int(text, 10)
        except ValueError:
            raise ValueError(f"not a byte pattern: {value!r} (use e.g. 0x00, 0xff, 85)") from None
    return value


def _patterns(value: object) -> object:
    items = comma_list(value)
    if isinstance(items, (list, tuple)):
        return tuple(_pattern(item) for item in items)
    return items


Pattern = Annotated[int, BeforeValidator(_pattern), Field(ge=0, le=255)]


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


class SmallFilesSpec(BaseModel):
    """One small-file run. Field names are the recipe keys; `--kebab-case` are the flags."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    files: int = Field(
        104_857, ge=1, le=10_000_000,
        description="Number of files to create (field note E: 104,857, ~10 GiB at 100 KiB).",
        json_schema_extra={"metavar": "N"},
    )
    file_size: Size = Field(
        100 * units.KiB, ge=1, le=units.GiB,
        description="Size of each file (100KiB = 102,400 bytes; 100KB = 100,000 bytes).",
        json_schema_extra={"metavar": "SIZE", "example": "100KiB"},
    )
    folders: int = Field(
        1_048, ge=1, le=1_000_000,
        description="Folders the files are spread over evenly (file i goes in folder i mod folders).",
        json_schema_extra={"metavar": "N"},
    )
    patterns: Annotated[tuple[Pattern, ...], BeforeValidator(_patterns)] = Field(
        (0x00, 0xFF, 0x55, 0xAA), min_length=1, max_length=256,
        description="Byte written over each whole file: the first creates the files, each "
        "further one is an update pass rewriting every file in place.",
        json_schema_extra={"metavar": "LIST", "example": "0x00,0xff,0x55,0xaa"},
    )
    threads: int = Field(
        default_factory=_default_threads, ge=1, le=256,
        description="Parallel workers (default: one per CPU); each takes an equal share of the files.",
        json_schema_extra={"metavar": "N"},
    )
    flush: Flush = Field(
        "sync-end",
        description="When data is forced to storage: none (page cache only), fsync (each file "
        "before close, counted in its latency), sync-end (one syncfs per phase, counted in the phase time).",
    )
    verify: bool = Field(
        False, description="Read every file back after the last pass and count files that differ from the last pattern.",
    )

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
        if self.folders > self.files:
            raise ValueError(f"folders ({self.folders:,}) cannot exceed files ({self.files:,})")
        return self

    @property
    def update_passes(self) -> int:
        return len(self.patterns) - 1

    @property
    def phases(self) -> tuple[str, ...]:
        """The phase names this spec runs, in order (a subset of PHASES-style names)."""
        return phase_names(self.update_passes, self.verify)

    @property
    def data_bytes(self) -> int:
        """Bytes written by one pass over every file."""
        return self.files * self.file_size


def update_phase(number: int) -> str:
    """Name of update pass `number` (1-based): 'update-1', 'update-2', ..."""
    return f"update-{number}"


def phase_names(update_passes: int, verify: bool) -> tuple[str, ...]:
    return (CREATE_PHASE, *(update_phase(n) for n in range(1, update_passes + 1)),
            *((VERIFY_PHASE,) if verify else ()))


PRESETS: dict[str, SmallFilesSpec] = {
    # Field note E as written: 104,857 x 100 KiB = 10 GiB in 1,048 folders, 0x00 then 3 updates.
    "field-note-e": SmallFilesSpec(),
    # The same shape, 2,000 x 100 KiB (~195 MiB) in 20 folders: a smoke run in seconds.
    "quick": SmallFilesSpec(files=2_000, folders=20),
}

def with_preset(preset: str | None, given: dict[str, Any]) -> dict[str, Any]:
    """A preset's values with the given ones on top. A preset's folder count yields to a
    smaller file count given beside it (a folder per file), as the default one does."""
    base = PRESETS[preset or "field-note-e"].model_dump(exclude_unset=True)
    files = _count(given.get("files"))
    if "folders" not in given and files is not None and base.get("folders", 0) > files:
        base.pop("folders")
    return {**base, **given}


# Phase names of the default spec, in order; every output (live, CSV, JSON, store) uses them.
PHASES: tuple[str, ...] = phase_names(update_passes=3, verify=True)


def bytes_needed(spec: SmallFilesSpec) -> int:
    """Space the run occupies at its peak: every file rounded up to 4 KiB blocks, plus one
    block per folder and the root folder. The refusal check adds headroom (required_free_bytes)."""
    blocks_per_file = -(-spec.file_size // BLOCK)
    return spec.files * blocks_per_file * BLOCK + (spec.folders + 1) * BLOCK


def inodes_needed(spec: SmallFilesSpec) -> int:
    """One inode per file and folder, and the run's root folder."""
    return spec.files + spec.folders + 1


def required_free_bytes(spec: SmallFilesSpec) -> int:
    """Free space the engine requires before it starts: bytes_needed plus headroom."""
    need = bytes_needed(spec)
    return need + max(HEADROOM_MIN_BYTES, int(need * HEADROOM_FRACTION))


def required_free_inodes(spec: SmallFilesSpec) -> int:
    need = inodes_needed(spec)
    return need + max(HEADROOM_MIN_INODES, int(need * HEADROOM_FRACTION))
