"""What RunSession.measure is told: which run (NewRun), where a workload runs (Where), where its
phases go in the run (Placement) and how often it is measured (Sampling). Kept apart from the
pipeline so that its signatures carry four named values instead of ten loose ones."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


@dataclass(frozen=True)
class Placement:
    """Where a workload's phases go in the run. group: the layout a phase ran on, when one run
    measures several; phases are then stored as '<group>/<phase>' and their raw files kept in a
    sub-folder of that name. Under a fault the group is '<layout>/<state>': `layout` and `state`
    (the array's: healthy, degraded, ...) say which is which."""

    group: str = ""
    layout: str = ""
    state: str = ""

    @property
    def key(self) -> str:
        """The name its target's facts and device stack are stored under in the run's host."""
        return self.layout or self.group or "target"


@dataclass(frozen=True)
class NewRun:
    """What a run is stored as from its start: its id, what it measures and where, its settings
    (what its workloads can do is added: reports read the run, not today's registry), the host."""

    run_id: str
    kind: str
    target: str
    settings: dict[str, Any]
    host: dict[str, Any]
    label: str = ""


@dataclass(frozen=True)
class Where:
    """Where a workload runs: `path`, its directory (None for one that needs none); `storage`,
    where a workload with no directory of its own (S3 through a layout's MinIO) lands its data
    (the monitor follows those paths down to their disks); `checked`: the caller already ran
    workload.check(path)."""

    path: Path | None = None
    storage: tuple[Path, ...] = ()
    checked: bool = False
    # The workload itself does its I/O on `storage` (a restore reading files where they lie),
    # not a server: the cache guard then judges it as the workload's own I/O.
    local_io: bool = False


@dataclass(frozen=True)
class Sampling:
    """How often a workload is measured: `repeat` times, whole (its preparation included, so
    each sample starts as the first did), its phases in turn: write, read, write, read..., so
    drift hits every phase alike; each sample's raw files in `sample-<n>/`. `which`: the samples
    to run now (all by default; a recipe whose layouts alternate runs one per round,
    runner/alternate.py), each joining the phase its first sample opened. `stop_reason`: asked
    before each sample after the first; a reason ends the samples there (a rebuild that ended:
    later samples would measure another state), said in a note."""

    repeat: int = 1
    which: range | None = None
    stop_reason: Callable[[], str | None] | None = None

    @property
    def wanted(self) -> range:
        return self.which if self.which is not None else range(1, self.repeat + 1)


TOP_LEVEL = Placement()   # a plain `run PATH`: phases named as they are, files in the run folder
ONCE = Sampling()
