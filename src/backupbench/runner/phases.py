"""PhaseRecorder: the pipeline's side of PhaseHooks.

For each measured phase it opens an operation record, starts the monitor, relays progress,
and on finish stores the workload's figures together with the monitor's summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from backupbench.journal import Journal
from backupbench.monitor import DeviceStack, Sampler, Thresholds
from backupbench.monitor.zfs import PoolGauge
from backupbench.recipe import naming
from backupbench.results.model import COMPLETE, MONITOR_PREFIX, OperationRecord, RunRecord, now_iso
from backupbench.results.store import Store


class Reporter(Protocol):
    def run_started(self, run: RunRecord) -> None: ...
    def stage_started(self, name: str, description: str) -> None: ...
    def stage_progress(self, name: str, fraction: float, detail: str) -> None: ...
    def stage_finished(self, name: str, record: OperationRecord | None) -> None: ...


class MonitorPlan:
    """How to sample: which devices (the target's stack) and when to warn. None: no monitor."""

    def __init__(self, stack: DeviceStack | None, interval: float, thresholds: Thresholds):
        self.stack = stack
        self.interval = interval
        self.thresholds = thresholds

    def sampler(self, csv_path: Path) -> Sampler:
        devices = self.stack.all_names if self.stack is not None else None
        return Sampler(self.interval, devices=devices or None, csv_path=csv_path,
                       thresholds=self.thresholds)

    def pool_gauge(self) -> PoolGauge | None:
        """ZFS's own figures for a phase, when the target is on a pool."""
        if self.stack is None or self.stack.pool is None:
            return None
        return PoolGauge(self.stack.pool)

    def headline(self, summary: Any) -> dict[str, float]:
        """The figures the run table shows: the member disks' average %util and w_await."""
        if self.stack is None:
            return {}
        members = list(self.stack.members) or self.stack.all_names
        figures = {}
        for name, metric in (("members_util", "util"), ("members_w_await", "w_await")):
            value = summary.mean_over(members, metric)
            if value is not None:
                figures[name] = value
        return figures


class PhaseRecorder:
    """group: the layout a phase ran on, when one run measures several; phases are then
    stored as '<group>/<phase>' and their raw files kept in a sub-folder of that name.
    Under a fault the group is '<layout>/<state>': `layout` and `state` say which is which."""

    def __init__(self, run: RunRecord, store: Store, folder: Path, reporter: Reporter,
                 monitor: MonitorPlan | None, *, group: str = "", run_root: Path | None = None,
                 journal: Journal | None = None, layout: str = "", state: str = ""):
        self.run = run
        self.journal = journal
        self.store = store
        self.folder = folder
        self.run_root = run_root or folder  # paths stored in detail are relative to the run folder
        self.reporter = reporter
        self.monitor = monitor
        self.group = group
        self.layout = layout or group
        self.state = state  # the array's state (healthy, degraded, ...) under a fault
        self._current: OperationRecord | None = None
        self._sampler: Sampler | None = None
        self._gauge: PoolGauge | None = None
        self._seq = 0

    def will_create(self, artefact: dict[str, Any]) -> int | None:
        """Write an artefact into the run's journal before creating it (see journal.py)."""
        return self.journal.will_create(artefact) if self.journal is not None else None

    def removed(self, artefact_id: int | None, how: str = "removed") -> None:
        if self.journal is not None and artefact_id is not None:
            self.journal.removed(artefact_id, how)

    def qualified(self, name: str) -> str:
        return naming.operation(self.group, name)

    def started(self, name: str, title: str, pattern: str, measured: bool = True) -> None:
        full = self.qualified(name)
        self.reporter.stage_started(full, title)
        if not measured:
            return
        record = OperationRecord(name=full, pattern=pattern)
        if self.layout:
            record.detail["layout"] = self.layout
        if self.state:
            record.detail["state"] = self.state
        self._current = record
        self._seq = len(self.run.operations)
        self.store.save_operation(self.run.run_id, self._seq, record)
        if self.monitor is not None:
            csv_path = self.folder / f"{name}.monitor.csv"
            self._sampler = self.monitor.sampler(csv_path).start()
            record.detail["monitor_csv"] = str(csv_path.relative_to(self.run_root))
            gauge = self.monitor.pool_gauge()
            self._gauge = gauge.start() if gauge is not None else None

    def progress(self, name: str, fraction: float, detail: str) -> None:
        self.reporter.stage_progress(self.qualified(name), fraction, detail)

    def finished(self, name: str, figures: dict[str, float], detail: dict[str, Any] | None = None) -> None:
        record = self._current
        if record is None or record.name != self.qualified(name):
            self.reporter.stage_finished(self.qualified(name), None)
            return
        record.figures.update(figures)
        detail = dict(detail or {})
        # Units of a workload's own figures (names FIGURE_UNITS does not know) come in the detail.
        record.units.update(detail.pop("units", {}))
        record.detail.update(detail)
        self._stop_monitor(record)
        record.status, record.finished_at = COMPLETE, now_iso()
        self._save(record)
        self.reporter.stage_finished(record.name, record)

    def abort(self, status: str) -> None:
        """The phase under way ends with `status` (failed / incomplete); its samples are kept."""
        record = self._current
        if record is None:
            return
        self._stop_monitor(record)
        record.status, record.finished_at = status, now_iso()
        self._save(record)

    def _save(self, record: OperationRecord) -> None:
        self.store.save_operation(self.run.run_id, self._seq, record)
        self.run.operations.append(record)
        self._current = None

    def _stop_monitor(self, record: OperationRecord) -> None:
        sampler, self._sampler = self._sampler, None
        if sampler is None or self.monitor is None:
            return
        summary = sampler.stop()
        for key, value, unit in summary.to_figures():
            record.figures[MONITOR_PREFIX + key] = value
            record.units[MONITOR_PREFIX + key] = unit
        gauge, self._gauge = self._gauge, None
        if gauge is not None:
            pool_figures, pool_errors = gauge.figures()
            for key, value in pool_figures.items():
                record.figures[key] = value
                record.units[key] = gauge.unit(key)
            summary.errors.extend(pool_errors)
        record.figures.update(self.monitor.headline(summary))
        warnings = [f"{record.name}: {w}" for w in summary.warnings]
        record.detail["monitor"] = {"samples": summary.samples, "devices": summary.devices,
                                    "warnings": summary.warnings, "notes": summary.notes,
                                    "errors": summary.errors}
        self.run.notes.extend(warnings)

