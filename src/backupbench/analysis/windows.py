"""Backup windows and the restore range, from a run's stored effective speeds."""

from __future__ import annotations

from dataclasses import dataclass

from backupbench.disk_model import MODEL_RANDOM, MODEL_SEQUENTIAL
from backupbench.recipe import naming
from backupbench.results.model import COMPLETE, RunRecord

# (operation, what the user calls the job) for which a window is worth printing.
WINDOW_OPERATIONS = (
    ("active-full", "Active full"),
    ("synthetic-full", "Synthetic full (merge)"),
    ("reverse-incremental", "Reverse incremental"),
    ("restore-sequential", "Restore, unfragmented"),
    ("restore-random", "Restore, fully fragmented"),
)


@dataclass(frozen=True)
class RestoreRange:
    """worst: fully fragmented (random reads), best: unfragmented (sequential). On flash the
    random end can be the faster one, so a range is shown low to high, never worst to best."""

    worst_bps: float
    best_bps: float
    # The same restores on the model's spinning disk (disk_model.py), when the run stored them.
    model_worst_bps: float | None = None
    model_best_bps: float | None = None

    @property
    def low_bps(self) -> float:
        return min(self.worst_bps, self.best_bps)

    @property
    def high_bps(self) -> float:
        return max(self.worst_bps, self.best_bps)


@dataclass(frozen=True)
class BackupWindow:
    operation: str
    label: str
    seconds: float
    # The window at the ends of the speed's 95% interval (the slow end is the long window);
    # None for a speed measured once.
    low_seconds: float | None = None
    high_seconds: float | None = None
    method: str = "t"    # of the speed's interval (stats.py)

    def interval_text(self) -> str:
        """'2.1-2.6 h' of a speed measured several times, '' of one measured once."""
        if self.low_seconds is None or self.high_seconds is None:
            return ""
        return f"{self.low_seconds / 3600:,.1f}-{self.high_seconds / 3600:,.1f} h"


def layouts_of(run: RunRecord) -> list[str | None]:
    """The layouts a recipe run measured, in order; [None] for a plain `run`."""
    found: list[str | None] = []
    for op in run.operations:
        layout = (op.layout or None)
        if layout not in found:
            found.append(layout)
    return found or [None]


def effective_speeds(run: RunRecord, layout: str | None = None) -> dict[str, float]:
    """Phase name -> effective speed, for one layout of a recipe run (phase names unprefixed)."""
    return {
        naming.phase_of(op.name): op.figures["effective_bw"]
        for op in run.operations
        if op.status == COMPLETE and op.figures.get("effective_bw") and (op.layout or None) == layout
        and op.state in ("", naming.HEALTHY)  # under a fault: the healthy array's
    }


def restore_range(run: RunRecord, layout: str | None = None) -> RestoreRange | None:
    speeds = effective_speeds(run, layout)
    if "restore-sequential" not in speeds or "restore-random" not in speeds:
        return None
    model = {naming.phase_of(op.name): op.figures for op in run.operations if op.status == COMPLETE
             and (op.layout or None) == layout and op.state in ("", naming.HEALTHY)}
    return RestoreRange(worst_bps=speeds["restore-random"], best_bps=speeds["restore-sequential"],
                        model_worst_bps=model.get("restore-random", {}).get(MODEL_RANDOM),
                        model_best_bps=model.get("restore-sequential", {}).get(MODEL_SEQUENTIAL))


def backup_windows(run: RunRecord, backup_size: int, layout: str | None = None) -> list[BackupWindow]:
    """Time to move `backup_size` bytes of backup data at each operation's effective speed, and
    at the ends of its interval when it was measured several times."""
    speeds = effective_speeds(run, layout)
    spreads = {naming.phase_of(op.name): op.spread("effective_bw") for op in run.operations
               if op.status == COMPLETE and (op.layout or None) == layout and op.state in ("", naming.HEALTHY)
               and op.sample_count > 1}
    windows = []
    for name, label in WINDOW_OPERATIONS:
        if name not in speeds:
            continue
        figure = spreads.get(name)
        slow, fast = (figure.low, figure.high) if figure is not None else (None, None)
        windows.append(BackupWindow(name, label, backup_size / speeds[name],
                                    backup_size / fast if fast else None, backup_size / slow if slow else None,
                                    figure.method if figure is not None else "t"))
    return windows
