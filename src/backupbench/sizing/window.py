"""Backup windows: hours to move a backup at a speed, and the speed a window needs.

    full hours        = backup size / speed
    incremental bytes = backup size x change rate (rounded up to a byte)
    needed speed      = bytes / window

From a stored run the speeds are the measured effective speeds of the backup operations
(analysis.windows.backup_windows). Per KB2014 (field note C) an incremental moves its changed
data at the speed of its job's pattern: a forward incremental at the active-full speed, a
forever-forward merge at the synthetic-full speed, a reverse incremental at the
reverse-incremental speed; restores are always of the full size. A run of `apply` names its
operations <layout>/<operation>: its windows are worked out layout by layout.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from typing import Any

from backupbench.analysis.windows import backup_windows
from backupbench.errors import InputError
from backupbench.recipe import naming
from backupbench.results.model import RunRecord
from backupbench.sizing.percent import percent_of

# Operations whose pattern also carries incrementals, and what the incremental job is called.
INCREMENTAL_JOBS = {
    "active-full": "forward incremental",
    "synthetic-full": "forever-forward merge",
    "reverse-incremental": "reverse incremental",
}


@dataclass(frozen=True)
class WindowEstimate:
    backup_size: int
    speed: float | None  # bytes/s
    full_seconds: float | None
    change_percent: float | None
    incremental_size: int | None
    incremental_seconds: float | None
    window_seconds: float | None
    needed_full_speed: float | None  # bytes/s to finish a full within the window
    needed_incremental_speed: float | None

    @property
    def full_fits(self) -> bool | None:
        if self.full_seconds is None or self.window_seconds is None:
            return None
        return self.full_seconds <= self.window_seconds

    @property
    def incremental_fits(self) -> bool | None:
        if self.incremental_seconds is None or self.window_seconds is None:
            return None
        return self.incremental_seconds <= self.window_seconds

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "full_fits": self.full_fits, "incremental_fits": self.incremental_fits}


@dataclass(frozen=True)
class MeasuredWindow:
    layout: str | None  # the layout of an `apply` run; None for a `run`
    operation: str
    label: str
    speed: float  # measured effective bytes/s
    full_seconds: float
    incremental_label: str | None
    incremental_seconds: float | None
    window_seconds: float | None

    @property
    def full_fits(self) -> bool | None:
        return None if self.window_seconds is None else self.full_seconds <= self.window_seconds

    @property
    def incremental_fits(self) -> bool | None:
        if self.window_seconds is None or self.incremental_seconds is None:
            return None
        return self.incremental_seconds <= self.window_seconds

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "full_fits": self.full_fits, "incremental_fits": self.incremental_fits}


def seconds_for(size: int, speed: float) -> float:
    if speed <= 0:
        raise InputError("a speed must be above 0")
    return size / speed


def needed_speed(size: int, window_seconds: float) -> float:
    """Bytes/s that move `size` bytes within `window_seconds`."""
    if window_seconds <= 0:
        raise InputError("--window must be above 0")
    return size / window_seconds


def incremental_size(size: int, change_percent: float) -> int:
    if not 0 < change_percent <= 100:
        raise InputError(f"--change-rate must be above 0% and at most 100%, not {change_percent:g}%")
    return percent_of(size, change_percent)


def window_estimate(backup_size: int, speed: float | None = None, change_percent: float | None = None,
                    window_seconds: float | None = None) -> WindowEstimate:
    """Hours for a full (and an incremental) at `speed`, and the speed a window needs."""
    if backup_size <= 0:
        raise InputError("--backup-size must be above 0")
    inc = incremental_size(backup_size, change_percent) if change_percent is not None else None
    if window_seconds is not None and window_seconds <= 0:
        raise InputError("--window must be above 0")
    return WindowEstimate(
        backup_size=backup_size,
        speed=speed,
        full_seconds=seconds_for(backup_size, speed) if speed is not None else None,
        change_percent=change_percent,
        incremental_size=inc,
        incremental_seconds=seconds_for(inc, speed) if speed is not None and inc is not None else None,
        window_seconds=window_seconds,
        needed_full_speed=needed_speed(backup_size, window_seconds) if window_seconds else None,
        needed_incremental_speed=needed_speed(inc, window_seconds) if window_seconds and inc is not None else None,
    )


def _by_layout(run: RunRecord) -> dict[str | None, RunRecord]:
    """The run itself, or for an `apply` run one run per layout with the prefix removed."""
    groups: dict[str | None, list] = {}
    for op in run.operations:
        layout = naming.group_of(op.name)
        groups.setdefault(layout or None, []).append(dataclasses.replace(op, name=naming.phase_of(op.name)))
    return {layout: dataclasses.replace(run, operations=ops) for layout, ops in groups.items()}


def measured_windows(run: RunRecord, backup_size: int, change_percent: float | None = None,
                     window_seconds: float | None = None) -> list[MeasuredWindow]:
    """Windows at a stored run's measured effective speeds (empty: the run measured no
    backup operations)."""
    inc = incremental_size(backup_size, change_percent) if change_percent is not None else None
    rows = []
    for layout, part in _by_layout(run).items():
        for window in backup_windows(part, backup_size):
            incremental = INCREMENTAL_JOBS.get(window.operation) if inc is not None else None
            rows.append(MeasuredWindow(
                layout=layout,
                operation=window.operation,
                label=window.label,
                speed=backup_size / window.seconds,
                full_seconds=window.seconds,
                incremental_label=incremental,
                incremental_seconds=window.seconds * inc / backup_size if incremental and inc is not None else None,
                window_seconds=window_seconds,
            ))
    return rows
