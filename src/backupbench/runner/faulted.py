"""A layout with a fault (recipe key `fault`): the workloads run on the healthy array, then
backupbench fails the member(s) and runs them degraded, gives the array its replacement and
runs them while it rebuilds, and once more when it has rebuilt. Each pass is stored as the
phases of `<layout>/<state>/...`; the array's own rebuild state is sampled every second
beside them (rebuild.csv), and the rebuild's figures are stored as `<layout>/rebuild`.

Every command is journalled before it runs. The fault's commands have no undo of their own:
the layout's teardown (md --stop and --zero-superblock of every member and replacement, zpool
destroy and labelclear, btrfs's umount and wipefs) removes the array from whichever state it
is in. What the teardown could not know about is planned with the layout as guarded undos
(MinIO: the tmpfs and replacement stacked on a failed drive's folder, unmounted only if the
fault got that far); md's speed limits are the one setting changed, and their restore is
journalled like any undo.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from backupbench import stopping
from backupbench.engines.fio import FioEngine
from backupbench.engines.fio_job import FioJob
from backupbench.errors import BackupbenchError
from backupbench.faults.figures import (MIN_IDLE_SECONDS, REBUILD_UNITS, RebuildSpan, copy_back_figures,
                                         rebuild_figures)
from backupbench.faults.plan import FaultPlan
from backupbench.hostfiles import HostFiles
from backupbench.layouts.actions import Action, LayoutPlan
from backupbench.layouts.executor import Provisioner
from backupbench.layouts.minio import S3Connection
from backupbench.monitor.rebuild import MdReader, RebuildWatch, Sample, StateReader, ZpoolReader
from backupbench.monitor.rebuild_btrfs import BtrfsReader
from backupbench.monitor.rebuild_minio import MinioHealReader
from backupbench.recipe import naming
from backupbench.recipe.naming import COPY_BACK, DEGRADED, FILL, HEALTHY, HEALTHY_WAIT, REBUILDING, REBUILT
from backupbench.results.model import COMPLETE, FAILED, INTERRUPTED, OperationRecord, now_iso
from backupbench.runner.fill import fill_file, fill_s3
from backupbench.runner.phases import Reporter
from backupbench.units import MiB, format_rate, format_size

# Bound on the passes of rebuild_load = "repeat": a rebuild that never ends must not run for ever.
MAX_REPEATS = 1000

MeasurePass = Callable[[str], None]  # run every workload once, stored under the state given


def _wait(seconds: float, until: Callable[[], bool] = lambda: False) -> bool:
    """Sleep up to `seconds`, stopping early when `until()` holds or a stop was asked for."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        stopping.check()
        if until():
            return True
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
    return until()


def speed_limit_actions(fault: FaultPlan, host: HostFiles | None = None) -> tuple[Action, ...]:
    """md's rebuild speed limits for the run, each restored to the value read now."""
    host = host or HostFiles()
    actions = []
    for name, kib in fault.sysctls:
        old = host.read_value("/proc/sys/" + name.replace(".", "/"))
        if old is None or not old.isdigit():
            raise BackupbenchError(f"cannot read {name}: is the md driver loaded?", "load md (modprobe raid456)")
        actions.append(Action(f"set {name} to {kib} KiB/s (was {old})", (("sysctl", "-w", f"{name}={kib}"),),
                              (("sysctl", "-w", f"{name}={old}"),)))
    return tuple(actions)


def state_reader(fault: FaultPlan, server: S3Connection | None = None) -> StateReader:
    """What follows the array's own state: md's sysfs, `zpool status`, btrfs replace status,
    MinIO's heal status (from `server`, the layout's running MinIO)."""
    if fault.kind == "md":
        return MdReader(fault.array)
    if fault.kind == "btrfs":
        return BtrfsReader(fault.array, fault.member_ids)
    if fault.kind == "minio":
        if server is None:
            raise BackupbenchError("a MinIO fault is followed through the running server, and none was given")
        # MinIO names its drives by their resolved paths (layouts/minio.py check_drives).
        drives = tuple(str(Path(fault.array, f"d{number}").resolve()) for number in fault.member_ids)
        return MinioHealReader(server.endpoint, server.access_key, server.secret_key, drives)
    return ZpoolReader(fault.array)


class FaultRun:
    def __init__(self, *, layout: LayoutPlan, folder: Path, provisioner: Provisioner,
                 recheck: Callable[[tuple[str, ...]], None], journal, run_id: str, reporter: Reporter,
                 server: S3Connection | None = None):
        assert layout.fault is not None
        self.layout = layout
        self.fault = layout.fault
        self.provisioner = provisioner
        self.recheck = recheck
        self.journal = journal
        self.run_id = run_id
        self.reporter = reporter
        self.rebuild_stage = naming.layout_operation(layout.name, naming.REBUILD)
        self.progress_stage = self.rebuild_stage  # the bar the watch's samples move
        self.rebuild_announced = False
        self.server = server
        self.folder = folder
        self.reader = state_reader(self.fault, server)
        self.watch = RebuildWatch(self.reader, folder / "rebuild.csv", on_sample=self._show_progress)
        self.span: RebuildSpan | None = None
        self.copy_back_span: RebuildSpan | None = None
        self.span_started = 0.0
        self.boundaries: list[list] = []  # [state, elapsed s] as the array's state changed
        self.notes: list[str] = []

    def _do(self, action: Action, written: tuple[str, ...] | None = None) -> None:
        disks = self.fault.replacements if written is None else written
        self.provisioner.apply((action,), lambda: self.recheck(disks))

    def _fill(self) -> None:
        """Data on the layout before the failure, so that a rebuild of allocated data has some."""
        size = self.fault.spec.fill
        if not size or (self.layout.mount_point is None and self.server is None):
            return
        stage = naming.layout_operation(self.layout.name, FILL)
        self.reporter.stage_started(stage, f"write {format_size(size)} before the failure")
        if self.server is not None:
            fill_s3(self.server, size, self.run_id, self.folder / FILL)
        elif self.layout.mount_point is not None:
            fill_file(self.layout.mount_point, size, self.run_id, self.journal, self.folder / FILL)
        self.reporter.stage_finished(stage, None)

    def run(self, measure: MeasurePass) -> None:
        for action in speed_limit_actions(self.fault):
            self._do(action)
        self._fill()
        self.watch.start()
        self._enter(HEALTHY)
        try:
            began = time.monotonic()
            measure(HEALTHY)
            self._hold_healthy(self.fault.spec.after - (time.monotonic() - began))
            self._do(Action(f"fail {', '.join(self.fault.failed)} of {self.fault.array}", self.fault.fail))
            self._enter(DEGRADED)
            measure(DEGRADED)
            if self.fault.rebuilds:
                self._rebuild(measure)
                self._enter(REBUILT)
                measure(REBUILT)
                self._copy_back()
        finally:
            self.watch.stop()

    def _hold_healthy(self, seconds: float) -> None:
        """`after` longer than the healthy pass: the array stays healthy, shown as a stage."""
        if seconds <= 0:
            return
        stage = naming.layout_operation(self.layout.name, HEALTHY_WAIT)
        self.reporter.stage_started(stage, f"healthy until {self.fault.spec.after:g} s (fault.after)")
        _wait(seconds)
        self.reporter.stage_finished(stage, None)

    def _enter(self, state: str) -> None:
        self.watch.phase = state
        self.boundaries.append([state, round(self.watch.elapsed(), 3)])

    def _finished(self) -> bool:
        latest = self.watch.samples[-1] if self.watch.samples else None
        return latest is not None and latest.elapsed >= self.span_started and latest.state.finished

    def _copy_back(self) -> None:
        """dRAID: the failed member replaced by a real disk once the spare holds its data (idle)."""
        if not self.fault.copy_back or self.span is None or self.span.ended is None:
            return
        disk = self.fault.copy_back_disk
        stage = naming.layout_operation(self.layout.name, COPY_BACK)
        self.reporter.stage_started(stage, f"copy the distributed spare back onto {disk}")
        self.progress_stage = stage
        if isinstance(self.reader, ZpoolReader):
            self.reader.since = time.time() - 1
        self.span_started = started = self.watch.elapsed()
        self._do(Action(f"replace {self.fault.failed[0]} of {self.fault.array} by {disk}", self.fault.copy_back,
                        destructive=True), (disk,))
        self._enter(COPY_BACK)
        ended = self._first_finished() if _wait(self.fault.spec.rebuild_timeout, self._sampled_finished) else None
        if ended is None:
            self.notes.append(f"{self.layout.name}: the copy back onto {disk} did not finish within "
                              f"{self.fault.spec.rebuild_timeout:g} s (fault.rebuild_timeout)")
        self.copy_back_span = RebuildSpan(started, None, ended)
        self.reporter.stage_finished(stage, None)

    def _rebuild(self, measure: MeasurePass) -> None:
        if isinstance(self.reader, ZpoolReader):
            self.reader.since = time.time() - 1  # the pool's clock: scans older than this are not ours
        self.span_started = self.watch.elapsed()
        self.reporter.stage_started(self.rebuild_stage, f"rebuild onto {self.fault.target}")
        self.rebuild_announced = True
        self._do(Action(f"rebuild {self.fault.array} onto {self.fault.target}", self.fault.rebuild,
                        destructive=bool(self.fault.replacements)))
        self._enter(REBUILDING)
        load = self.fault.spec.rebuild_load
        load_ended = None
        if load != "none":
            measure(REBUILDING)
            for repeat in range(2, MAX_REPEATS if load == "repeat" else 2):
                self.watch.sample()
                if self._finished():
                    break
                measure(naming.repeated_rebuilding(repeat))
            load_ended = self.watch.elapsed()
        timeout = self.fault.spec.rebuild_timeout - (self.watch.elapsed() - self.span_started)
        ended = self._first_finished() if _wait(max(0.0, timeout), self._sampled_finished) else None
        if ended is None:
            self.notes.append(f"{self.layout.name}: the rebuild did not finish within "
                              f"{self.fault.spec.rebuild_timeout:g} s (fault.rebuild_timeout)")
        elif load == "once" and ended <= load_ended + MIN_IDLE_SECONDS:
            self.notes.append(f"{self.layout.name}: the rebuild ended while the workloads still ran: its idle "
                              "speed is not measured (slow it with speed_limit_max, or rebuild_load = 'repeat')")
        self.span = RebuildSpan(self.span_started, load_ended, ended)

    def _show_progress(self, sample: Sample) -> None:
        """The rebuild's bar, from the watch's thread (rich's Progress takes updates from any)."""
        if not self.rebuild_announced or sample.phase not in (REBUILDING, REBUILT, COPY_BACK):
            return
        state = sample.state
        if state.finished:
            self.reporter.stage_progress(self.progress_stage, 1.0, "done")
        elif state.percent is not None:
            speed = f" at {format_rate(state.speed)}" if state.speed else ""
            self.reporter.stage_progress(self.progress_stage, state.percent / 100, f"{state.percent:.1f}%{speed}")

    def _first_finished(self) -> float | None:
        """When the rebuild was first seen finished (it may have ended while the workloads ran)."""
        return next((s.elapsed for s in self.watch.samples if s.elapsed >= self.span_started and s.state.finished),
                    None)

    def sample_stop_reason(self) -> str | None:
        """Asked between a workload's samples: once the rebuild has ended, the samples of a
        rebuilding state would measure the rebuilt array."""
        if self.watch.phase != REBUILDING or not self._sampled_finished():
            return None
        return ("the rebuild had ended by then (during or after the last one taken): the rest would have "
                "measured the rebuilt array (a slower rebuild, e.g. speed_limit_max, or fewer samples keeps them "
                "all in it)")

    def _sampled_finished(self) -> bool:
        self.watch.sample()
        return self._finished()

    def record(self) -> OperationRecord:
        """The rebuild as an operation of its own: `<layout>/rebuild`."""
        pattern = f"rebuild onto {self.fault.target}" if self.fault.rebuilds else "degraded only (no replacement)"
        record = OperationRecord(name=self.rebuild_stage, pattern=pattern, layout=self.layout.name, state=naming.REBUILD)
        record.detail.update({"kind": self.fault.kind,
                              "failed": list(self.fault.failed),
                              "rebuilds": self.fault.rebuilds,
                              "target": self.fault.target, "rebuild_load": self.fault.spec.rebuild_load,
                              "rebuild_csv": f"{self.layout.name}/rebuild.csv", "array": self.fault.array,
                              "fill": format_size(self.fault.spec.fill) if self.fault.spec.fill else "",
                              "errors": self.watch.errors, "watch_started": self.watch.started_wall,
                              "phases": self.boundaries})
        if self.span is not None:
            record.figures.update(rebuild_figures(self.watch.samples, self.span))
        if self.copy_back_span is not None and self.copy_back_span.ended is not None:
            record.figures.update(copy_back_figures(self.watch.samples, self.copy_back_span))
            record.detail["copy_back"] = self.fault.copy_back_disk
            record.units.update({k: v for k, v in REBUILD_UNITS.items() if k in record.figures})
        if record.figures or not self.fault.rebuilds:
            record.status = COMPLETE
        else:  # stopped before the rebuild ended, or it outlasted rebuild_timeout
            record.status = INTERRUPTED if stopping.requested() is not None else FAILED
        record.finished_at = now_iso()
        return record


def member_job(device: str, rw: str, seconds: float) -> FioJob:
    """1 MiB at queue depth 4 over the whole device for `seconds`, in fio's own buffers: the
    disk's raw speed, whatever content the workloads write. A read is read-only."""
    return FioJob(name=f"{naming.MEMBER}-{rw}", filename=Path(device), rw=rw, block_size=MiB, region_size=None,
                  iodepth=4, runtime_s=seconds, content=None, readonly=rw == "read")


def member_baseline(layout: LayoutPlan, recheck: Callable[[tuple[str, ...]], None], folder: Path,
                    host: HostFiles | None = None, engine: FioEngine | None = None) -> OperationRecord:
    """One member's sequential read and write speed, before the layout is built: the
    single-disk reference the model of the layout's speed and rebuild starts from. The read
    is read-only (fio --readonly); the write goes to a device the layout is about to format
    anyway, so only after the same re-check as the layout's first destructive step. fio's job
    files and results are kept in `folder`."""
    assert layout.fault is not None
    host = host or HostFiles()
    engine = engine or FioEngine()
    folder.mkdir(parents=True, exist_ok=True)
    device = layout.fault.failed[0]
    record = OperationRecord(name=naming.layout_operation(layout.name, naming.MEMBER),
                             pattern=f"read, then write, 1 MiB qd4 of {device}", layout=layout.name, state=naming.MEMBER)
    record.detail["device"] = device
    sectors = host.read_value(f"/sys/class/block/{Path(device).name}/size")
    if sectors and sectors.isdigit():
        record.figures["member_bytes"] = float(int(sectors) * 512)
        record.units["member_bytes"] = "B"
    seconds = layout.fault.spec.member_runtime
    read = engine.run(member_job(device, "read", seconds), folder, timeout_s=120 + seconds).summary
    record.figures["read_bw"] = read.read.bw_bytes
    recheck((device,))
    written = engine.run(member_job(device, "write", seconds), folder, timeout_s=120 + seconds).summary
    record.figures["write_bw"] = written.write.bw_bytes
    record.status, record.finished_at = COMPLETE, now_iso()
    return record
