"""An aging run's measured day in figures: its job (time, effective speed, what it did on the
disks), the repository's space against the plan's closed form, the free space, the newest
full's extent map, and each restore of a file with its map and the model's projection
(the figures of --workload restore: engines/file_map.py, disk_model.py).

The job's effective speed is the backup data it handled over its time: its new blocks, plus
the full it built (synthetic or active) or the increment it merged into the full, as KB2014
counts an operation's speed by the backup data it gets through. Space is the filesystem's used
bytes (statvfs after syncfs, once deletes have settled) over what they were before the run:
at the day's peak (after the job, before any deletion: what the closed form counts) and after
retention; `space_vs_plan` is the peak over the closed form at the run's scale (<= 1 with block
clone, says the closed form: it counts every changed block, and a block changed twice twice).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backupbench import disk_model, retention, units
from backupbench.devices.free_space import UNITS as FREE_UNITS
from backupbench.devices.free_space import FreeSpace
from backupbench.engines import file_map
from backupbench.engines.fio_json import FioSummary
from backupbench.results.model import FIGURE_UNITS
from backupbench.retention import Day, Point
from backupbench.workloads.fio_workload import base_figures
from backupbench.workloads.restore import map_rows

if TYPE_CHECKING:
    from backupbench.workloads.aging import AgingOptions
    from backupbench.workloads.aging_run import Played

UNITS = {
    "simulated_day": "day", "job_s": "s", "retention_s": "s", "job_data_bytes": "B", "write_bytes": "B",
    "read_bytes": "B", "clone_bytes": "B", "clone_calls": "", "clone_s": "s", "clone_s_per_tib": "s/TiB",
    "space_used_bytes": "B", "space_peak_bytes": "B", "fs_used_delta": "B", "planned_bytes": "B",
    "space_vs_plan": "x", "points": "points", "extents": "extents", "unique_bytes": "B", "shared_bytes": "B",
    "full_gap_bytes": "B", "point_day": "day", "point_age_days": "days", **FREE_UNITS,
}
JOBS = {
    retention.ACTIVE_FULL: "active full (every block written anew)",
    retention.INCREMENTAL: "increment",
    retention.SYNTHETIC_FULL: "increment + synthetic full",
    retention.MERGE: "increment + merge of the oldest into the full",
    retention.REVERSE_INCREMENTAL: "reverse incremental (rollback + new blocks into the full)",
}


@dataclass(frozen=True)
class Space:
    used: int       # after retention, over the filesystem's use before the run
    peak: int       # after the job, before any deletion
    job: int        # what the job itself added (peak over the use before it)
    planned: int    # the closed form at the run's scale

    def figures(self) -> dict[str, float]:
        found = {"space_used_bytes": float(self.used), "space_peak_bytes": float(self.peak),
                 "fs_used_delta": float(self.job), "planned_bytes": float(self.planned)}
        if self.planned:
            found["space_vs_plan"] = self.peak / self.planned
        return found


def job_title(day: Day, block_clone: bool) -> str:
    how = " (block clone)" if block_clone and day.job in (retention.SYNTHETIC_FULL, retention.MERGE) else ""
    flags = f", GFS {'+'.join(day.made.flags)}" if day.made.flags else ""
    return f"Day {day.day} ({day.date.isoformat()}): {JOBS.get(day.job, day.job)}{how}{flags}"


def job_figures(day: Day, played: "Played", space: Space, newest: file_map.FileMap | None,
                freed: FreeSpace | None) -> dict[str, float]:
    """The day's job, the space and the newest full's map (as the block-clone workload names them)."""
    tally = played.tally
    handled = played.new_bytes + played.built_bytes
    figures = {
        "simulated_day": float(day.day), "job_s": played.job_s, "retention_s": played.retention_s,
        "runtime": played.job_s, "job_data_bytes": float(handled),
        "effective_bw": handled / played.job_s if played.job_s > 0 else 0.0,
        "bytes": float(tally.written + tally.read), "write_bytes": float(tally.written),
        "read_bytes": float(tally.read), "clone_bytes": float(tally.cloned), "clone_calls": float(tally.clone_calls),
        "clone_s": tally.clone_s, "points": float(len(day.kept)), **space.figures(),
    }
    if newest is not None:
        figures.update({"extents": float(newest.extents), "shared_bytes": float(newest.shared_bytes),
                        "unique_bytes": float(newest.mapped_bytes - newest.shared_bytes)})
    if tally.write_s > 0:
        figures["write_bw"] = tally.written / tally.write_s
    if tally.read_s > 0:
        figures["read_bw"] = tally.read / tally.read_s
    if tally.cloned:
        figures["clone_s_per_tib"] = tally.clone_s * units.TiB / tally.cloned
    if freed is not None:
        figures.update(freed.figures())
    return figures


def map_of(path: Path) -> file_map.FileMap | None:
    """The file's extent map; None where the filesystem has no FIEMAP (ZFS, tmpfs): the figures
    then go without it."""
    try:
        return file_map.file_map(path)
    except OSError:
        return None


def mapped(path: Path, csv: Path, options: "AgingOptions") -> dict[str, float]:
    """A file's map as figures, with the model's restores of it; its runs to `csv`."""
    found = map_of(path)
    if found is None:
        return {}
    csv.write_text(map_rows(found))
    return {**found.figures(), **disk_model.projected(found.figures(), options.block_size, options.model_disk)}


def restore_figures(summary: FioSummary, mapped_figures: dict[str, float], day: Day,
                    point: Point) -> dict[str, float]:
    return {**base_figures(summary), "effective_bw": summary.read.bw_bytes, **mapped_figures,
            "simulated_day": float(day.day), "point_day": float(point.day),
            "point_age_days": float(day.day - point.day)}


def units_of(figures: dict[str, float]) -> dict[str, Any]:
    """The units of the figures the store does not know by name (the detail's `units`)."""
    return {"units": {name: UNITS[name] for name in figures if name not in FIGURE_UNITS and UNITS.get(name)}}
