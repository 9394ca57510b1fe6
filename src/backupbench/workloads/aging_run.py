"""One aging run, day by day: the calendar's job on the repository's files, the space at the
day's peak and after retention, what retention deletes, and on the measured days the phases
(workloads/aging.py names them; workloads/aging_measure.py turns what was seen into figures).

Each day, in order: the changed blocks are drawn; the job runs (timed: the increment and its
transform, nothing else); on a measured day the space is read (syncfs, statvfs) at the day's
peak, before anything is deleted; then the job's own leftovers (the increment a synthetic full
was built from, the increment merged into the full) and every point retention expires are
deleted (timed apart); the space is read again; the day is written to `aging.jsonl` in the run
folder (also on the days not measured); and a measured day's phase ends with its figures, its
restores follow.
"""

from __future__ import annotations

import errno
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from backupbench import process, retention, stopping
from backupbench.devices import free_space
from backupbench.engines.backup_files import Buffers, Tally, settled_used_bytes
from backupbench.engines.backup_repository import Changes, Repository
from backupbench.engines.fio import FioEngine
from backupbench.engines.fio_job import command
from backupbench.errors import EngineError
from backupbench.retention import Day, Point
from backupbench.workloads import aging_measure
from backupbench.workloads.base import PhaseHooks
from backupbench.workloads.restore import restore_job

if TYPE_CHECKING:
    from backupbench.workloads.aging import AgingOptions

JOB, NEWEST, OLDEST = "job", "newest", "oldest"
LOG = "aging.jsonl"
EXTENSIONS = {retention.FULL: "vbk", retention.INCREMENT: "vib", retention.ROLLBACK: "vrb"}


def day_label(day: int) -> str:
    return f"day-{day:03d}"


def parse_phase(phase: str) -> tuple[int, str, str] | None:
    """A phase's name read back: 'day-035:restore-random:oldest' -> (35, 'restore-random',
    'oldest'), 'day-035:job' -> (35, 'job', ''); None for a name this workload does not make."""
    label, _, rest = phase.partition(":")
    number = label.removeprefix("day-")
    if number == label or not number.isdigit() or not rest:
        return None
    what, _, role = rest.partition(":")
    if (what == JOB) != (role == "") or role not in ("", NEWEST, OLDEST):
        return None
    return int(number), what, role


def file_name(point: Point) -> str:
    """The file a restore point is: 'full-0007.vbk', 'increment-0003.vib', 'rollback-0005.vrb'."""
    return f"{point.kind}-{point.made:04d}.{EXTENSIONS[point.kind]}"


def measured_days(options: "AgingOptions") -> list[int]:
    return sorted({0, options.days, *range(0, options.days + 1, options.measure_every)})


def restored(day: Day) -> list[tuple[str, Point]]:
    """(role, point) of the files a measured day restores: the newest full, and the oldest point
    when it is another file."""
    newest, oldest = day.newest_full(), day.oldest()
    return [(NEWEST, newest)] + ([(OLDEST, oldest)] if oldest.ident != newest.ident else [])


@dataclass(frozen=True)
class Played:
    """What one day's job did, as the log and the figures say it."""

    job_s: float
    retention_s: float
    new_bytes: int       # the day's changed blocks, stored
    built_bytes: int     # the full it built (synthetic), the rest of the full it wrote (active), or
                         # the increment it merged into the full in
    tally: Tally         # on the disks: written, read, cloned
    deleted: tuple[str, ...]


def _failed(day: Day, exc: OSError) -> EngineError:
    """A file operation that failed, said as the day and the job it failed in."""
    fix = ("free some space, or use a smaller --full-size or fewer --days" if exc.errno == errno.ENOSPC
           else None)
    where = f" ({exc.filename})" if exc.filename else ""
    return EngineError(f"day {day.day} ({day.job}) failed: {exc.strerror or exc}{where}", fix)


class AgingRun:
    """`measured`: the days measured (the options' by default; bench/aging.py times the days alone)."""

    def __init__(self, options: "AgingOptions", engine: FioEngine, target: Path, files: Path, folder: Path,
                 hooks: PhaseHooks, measured: set[int] | None = None):
        self.options, self.engine, self.target, self.files = options, engine, target, files
        self.folder, self.hooks = folder, hooks
        self.calendar = retention.play(options, options.days)
        self.measured = set(measured_days(options)) if measured is None else measured
        self.changes = Changes(options.shape, options.per_day, options.change_seed, options.hot_share / 100.0,
                               options.hot_changes / 100.0)
        self.commands: list[str] = []
        self.baseline = 0
        self._stretch: str | None = None

    def play(self) -> None:
        buffers = Buffers(self.options.change_seed)
        repository = Repository(self.files, self.options.shape, self.options.block_clone, buffers, stopping.check)
        self.baseline = settled_used_bytes(self.target)
        try:
            with open(self.folder / LOG, "w") as log:
                for day in self.calendar:
                    stopping.check()
                    try:
                        self._day(day, repository, log)
                    except OSError as exc:
                        raise _failed(day, exc) from exc
            self._end_stretch()
        finally:
            repository.close()
            buffers.close()
            (self.folder / "commands.txt").write_text("\n".join(self.commands) + "\n")

    def _announce(self, day: Day) -> str | None:
        """The day's phase when it is measured (None otherwise: its stretch's progress moves on)."""
        if day.day in self.measured:
            self._end_stretch()
            name = f"{day_label(day.day)}:{JOB}"
            self.hooks.started(name, aging_measure.job_title(day, self.options.block_clone), day.job)
            return name
        if self._stretch is None:
            upto = min((d for d in self.measured if d > day.day), default=self.options.days + 1) - 1
            self._stretch = f"{day_label(day.day)}..{upto:03d}"
            self.hooks.started(self._stretch, f"Days {day.day}-{upto} (played, not measured)", "days",
                               measured=False)
        self.hooks.progress(self._stretch, 0.0, f"day {day.day}: {day.job}")
        return None

    def _end_stretch(self) -> None:
        if self._stretch is not None:
            self.hooks.finished(self._stretch, {})
            self._stretch = None

    def _day(self, day: Day, repository: Repository, log: TextIO) -> None:
        name = self._announce(day)
        before = asdict(repository.tally)
        used_before = settled_used_bytes(self.target) if name else None
        started = time.perf_counter()
        new_bytes, built_bytes, leftovers = self._job(day, repository)
        job_s = time.perf_counter() - started
        peak = settled_used_bytes(self.target) if name else None
        started = time.perf_counter()
        deleted = tuple(leftovers) + tuple(file_name(point) for point in day.expired)
        for file in deleted:
            repository.delete(file)
        retention_s = time.perf_counter() - started
        after = asdict(repository.tally)
        played = Played(job_s, retention_s, new_bytes, built_bytes,
                        Tally(**{key: after[key] - before[key] for key in after}), deleted)
        used = settled_used_bytes(self.target) if name else None
        self._log(log, day, played, used, peak)
        if name is None:
            return
        assert used is not None and peak is not None and used_before is not None
        space = aging_measure.Space(used - self.baseline, peak - self.baseline, peak - used_before,
                                    self.options.planned_bytes())
        self._finish_job(name, day, played, space, repository)
        self._restores(day)

    def _job(self, day: Day, repository: Repository) -> tuple[int, int, list[str]]:
        """The day's job: (its new blocks' bytes, the full it built or increment it merged, the
        files it leaves to delete)."""
        made = file_name(day.made)
        if day.day == 0:
            repository.write(made, list(enumerate(self.changes.first_full())))
            if self.options.method in retention.TRANSFORMS:
                repository.keep_in_place(made)
            return repository.files[made].end, 0, []
        changes = self.changes.of_day(day.day)
        new = sum(length for _, length in changes)
        full = file_name(Point(retention.FULL, 0, 0))
        if day.job == retention.ACTIVE_FULL:
            repository.active_full(made, changes)
            return new, repository.files[made].end - new, []
        if day.job == retention.SYNTHETIC_FULL:
            increment = file_name(Point(retention.INCREMENT, day.day, day.day))
            repository.write(increment, changes)
            repository.synthetic_full(made)
            return new, repository.files[made].end, [increment]
        if day.job == retention.REVERSE_INCREMENTAL:
            repository.rollback(full, made, changes)
            return new, 0, []
        repository.write(made, changes)
        if day.merged is None:
            return new, 0, []
        merged = file_name(day.merged)
        size = repository.files[merged].end
        repository.merge(full, merged)
        return new, size, [merged]

    def _log(self, log: TextIO, day: Day, played: Played, used: int | None, peak: int | None) -> None:
        """One line a day: what the calendar said and what is on disk, for anyone to check."""
        line: dict[str, Any] = {
            "day": day.day, "date": day.date.isoformat(), "job": day.job, "made": file_name(day.made),
            "flags": list(day.made.flags), "merged": file_name(day.merged) if day.merged else None,
            "deleted": list(played.deleted), "expected": sorted(file_name(p) for p in day.kept),
            "files": sorted(os.listdir(self.files)), "job_s": played.job_s, "retention_s": played.retention_s,
            "new_bytes": played.new_bytes, "built_bytes": played.built_bytes, **asdict(played.tally)}
        if used is not None:
            line.update({"space_used_bytes": used - self.baseline, "space_peak_bytes": (peak or 0) - self.baseline})
        log.write(json.dumps(line, sort_keys=True) + "\n")
        log.flush()

    def _finish_job(self, name: str, day: Day, played: Played, space: "aging_measure.Space",
                    repository: Repository) -> None:
        newest = repository.files[file_name(day.newest_full())]
        freed, why = free_space.measure(self.target)
        figures = aging_measure.job_figures(day, played, space, aging_measure.map_of(newest.path), freed)
        full = repository.files.get(file_name(Point(retention.FULL, 0, 0)))
        if self.options.method in retention.TRANSFORMS and full is not None:
            figures["full_gap_bytes"] = float(full.gap_bytes)
        detail = {"simulated_date": day.date.isoformat(), "made": file_name(day.made), "deleted": list(played.deleted),
                  "newest_full": newest.path.name, "free_space": freed.tool if freed else why, "log": LOG,
                  "buffered": False, **aging_measure.units_of(figures)}
        self.hooks.finished(name, figures, detail)

    def _restores(self, day: Day) -> None:
        label = day_label(day.day)
        for role, point in restored(day):
            path = self.files / file_name(point)
            size = path.stat().st_size
            mapped = aging_measure.mapped(path, self.folder / f"{label}-{role}.map.csv", self.options)
            for op in self.options.operations:
                stopping.check()
                name = f"{label}:{op}:{role}"
                job = restore_job(op, name, path, self.options, size)
                self.hooks.started(name, f"Day {day.day}: {op} of the {role} "
                                         f"{'full' if role == NEWEST else 'point'} ({path.name}, read only)",
                                   job.pattern, warmup_s=job.ramp_s)
                self.commands.append(process.render(command(self.folder / f"{name}.fio", self.folder / f"{name}.json",
                                                            readonly=True)))
                run = self.engine.run(job, self.folder, lambda f, d, n=name: self.hooks.progress(n, f, d))
                figures = aging_measure.restore_figures(run.summary, mapped, day, point)
                drawn = {"map": f"{label}-{role}.map.csv"} if mapped else {}
                self.hooks.finished(name, figures, {"file": path.name, "role": role, "job_file": f"{name}.fio",
                                                    "raw": f"{name}.json", **drawn,
                                                    "model_disk": self.options.model_disk.describe(),
                                                    "simulated_date": day.date.isoformat(), "buffered": False,
                                                    **aging_measure.units_of(figures)})
