"""PhaseRecorder: the pipeline's side of PhaseHooks.

For each measured phase it opens an operation record, starts the monitor, relays progress,
and on finish stores the workload's figures together with the monitor's summary. The monitor
leaves out the phase's partial first and last seconds and its warm-up (monitor/sampler.py).
With the target's storage known (MonitorPlan.storage) each phase is also held against the
cache guard (monitor/cache_guard.py): the share of the moved bytes the disks saw is stored as
`storage_bytes_pct`, and the phase's CacheAccount counts its samples checked and cached.

What the recorder learns is typed on the record (results/phase.py): its layout and state, the
monitor's account (each sample's CSV, the crossings of all samples merged), the cache verdict,
the hosts. The phase's notes (its crossings, 'cached in 2 of 3 samples: ...') are written whole
from those facts after each sample, and the run shows them after its own (RunRecord.all_notes).

A phase measured several times (`sample` > 1: RunSession.measure's repeats) adds a sample to
the operation its first sample opened: `samples` keeps each sample's figures, `figures` their
medians (results/model.py), and the phase keeps its place among the run's operations.
A multi-host phase (`--hosts`, `--agents`, a recipe's `[hosts]`) hands its per-host figures
and lost hosts in its detail (`hosts`, `lost_hosts`, results/phase.py names the keys): each
sample's join the record's HostAccount, whose per-host medians the report reads.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any, Protocol

from backupbench.journal import Journal
from backupbench.monitor import DeviceStack, Sampler, Thresholds
from backupbench.monitor import cache_guard
from backupbench.monitor.others import OthersWatch
from backupbench.monitor.summary import Crossing, crossing_lines, merged_crossings
from backupbench.monitor.zfs import PoolGauge
from backupbench.recipe import naming
from backupbench.results.model import COMPLETE, FAILED, MONITOR_PREFIX, RUNNING, OperationRecord, RunRecord, medians, now_iso
from backupbench.results.phase import HOST_TIMELINE, HOSTS, LOST_HOSTS, UNITS, HostAccount, MonitorAccount
from backupbench.results.store import Store
from backupbench.runner.placement import TOP_LEVEL, Placement


class Reporter(Protocol):
    def run_started(self, run: RunRecord) -> None: ...
    def stage_started(self, name: str, description: str) -> None: ...
    def stage_progress(self, name: str, fraction: float, detail: str) -> None: ...
    def stage_finished(self, name: str, record: OperationRecord | None) -> None: ...
    def caution(self, text: str) -> None:
        """Before a run: something that may make its figures wrong, with the fix."""


# The share of a phase's bytes its disks saw (monitor/cache_guard.py), in percent.
STORAGE_FIGURE = "storage_bytes_pct"


class MonitorPlan:
    """How to sample: which devices (the target's stack) and when to warn. None: no monitor.
    storage: where the target's bytes land, for the cache guard (None: not checked);
    buffered: the workload goes through the page cache (a phase's detail may say otherwise;
    None: a server does the I/O, its own way)."""

    def __init__(self, stack: DeviceStack | None, interval: float, thresholds: Thresholds,
                 storage: cache_guard.StorageFacts | None = None, buffered: bool | None = False,
                 others: bool = False):
        self.stack = stack
        self.interval = interval
        self.thresholds = thresholds
        self.storage = storage
        self.buffered = buffered
        # Whether other processes are watched (monitor/others.py): they read the real /proc, so a
        # plan of recorded samples (tests) leaves them out.
        self.others = others

    def sampler(self, csv_path: Path, warmup_s: float = 0.0) -> Sampler:
        devices = self.stack.all_names if self.stack is not None else None
        return Sampler(self.interval, devices=devices or None, csv_path=csv_path,
                       thresholds=self.thresholds, measure_after_s=warmup_s)

    def disk_bytes(self) -> int | None:
        return cache_guard.disk_bytes(self.storage.disks) if self.storage is not None else None

    def member_bytes(self) -> int | None:
        """What the disks under the target read and wrote so far (the stack's members); None
        without a known stack: the others watch then counts other processes' I/O anywhere."""
        members = tuple(self.stack.members) if self.stack is not None else ()
        return cache_guard.disk_bytes(members) if members else None

    def pool_gauge(self) -> PoolGauge | None:
        """ZFS's own figures for a phase, when the target is on a pool."""
        if self.stack is None or self.stack.pool is None:
            return None
        return PoolGauge(self.stack.pool)

    def headline(self, summary: Any) -> dict[str, float]:
        """The member disks' averages: %util and w_await, which the run table shows, and the
        MiB/s each read and wrote, which a fault report sets against the member's own speed."""
        if self.stack is None:
            return {}
        members = list(self.stack.members) or self.stack.all_names
        figures = {}
        for name, metric in (("members_util", "util"), ("members_w_await", "w_await"),
                             ("members_rMB_s", "rMB_s"), ("members_wMB_s", "wMB_s")):
            value = summary.mean_over(members, metric)
            if value is not None:
                figures[name] = value
        return figures


class PhaseRecorder:
    """Records the phases of one sample of a workload (`sample`: 1 for the first) at `place`;
    the monitor CSVs and raw files it names are relative to `run_root` (the run folder)."""

    def __init__(self, run: RunRecord, store: Store, folder: Path, reporter: Reporter,
                 monitor: MonitorPlan | None, *, place: Placement = TOP_LEVEL, run_root: Path | None = None,
                 journal: Journal | None = None, sample: int = 1):
        self.run = run
        self.journal = journal
        self.store = store
        self.folder = folder
        self.run_root = run_root or folder  # paths stored in the record are relative to the run folder
        self.reporter = reporter
        self.monitor = monitor
        self.group = place.group
        self.layout = place.layout or place.group
        self.state = place.state
        self._current: OperationRecord | None = None
        self._sampler: Sampler | None = None
        self._gauge: PoolGauge | None = None
        self._others: OthersWatch | None = None
        self._disk_bytes_at_start: int | None = None
        self._ramp_timer: threading.Timer | None = None
        self._seq = 0
        self.sample = sample  # which sample of each phase this recorder measures (1: the first)
        self._earlier: list[dict[str, float]] | None = None  # the phase's earlier samples' figures

    def will_create(self, artefact: dict[str, Any]) -> int | None:
        """Write an artefact into the run's journal before creating it (see journal.py)."""
        return self.journal.will_create(artefact) if self.journal is not None else None

    def removed(self, artefact_id: int | None, how: str = "removed") -> None:
        if self.journal is not None and artefact_id is not None:
            self.journal.removed(artefact_id, how)

    def qualified(self, name: str) -> str:
        return naming.operation(self.group, name)

    def started(self, name: str, title: str, pattern: str, measured: bool = True, warmup_s: float = 0.0) -> None:
        full = self.qualified(name)
        self.reporter.stage_started(full, title)
        if not measured:
            return
        record = self._open(full, pattern)
        self._current = record
        if self.monitor is not None:
            csv_path = self.folder / f"{name}.monitor.csv"
            self._sampler = self.monitor.sampler(csv_path, warmup_s).start()
            self._count_disk_bytes_after(warmup_s)
            record.monitor = record.monitor or MonitorAccount()
            record.monitor.csv.append(str(csv_path.relative_to(self.run_root)))
            gauge = self.monitor.pool_gauge()
            self._gauge = gauge.start() if gauge is not None else None
            self._others = OthersWatch(disk_bytes=self.monitor.member_bytes).start() if self.monitor.others else None

    def _count_disk_bytes_after(self, warmup_s: float) -> None:
        """The disks' counter at the end of the warm-up: the workload's figures leave the ramp
        out, so the bytes the disks saw during it must be left out too (else they would hide a
        cached phase)."""
        monitor = self.monitor
        self._disk_bytes_at_start = None
        if monitor is None:
            return
        if warmup_s <= 0:
            self._disk_bytes_at_start = monitor.disk_bytes()
            return

        def mark() -> None:
            self._disk_bytes_at_start = monitor.disk_bytes()
        self._ramp_timer = threading.Timer(warmup_s, mark)
        self._ramp_timer.daemon = True
        self._ramp_timer.start()

    def _open(self, full: str, pattern: str) -> OperationRecord:
        """The phase's record: a new one, or for a later sample the one its first sample opened."""
        earlier = next((op for op in self.run.operations if op.name == full), None) if self.sample > 1 else None
        if earlier is not None:
            self._earlier = earlier.samples or [dict(earlier.figures)]
            self._seq = self.run.operations.index(earlier)
            earlier.figures, earlier.samples = {}, []
            earlier.status, earlier.finished_at = RUNNING, None
            return earlier
        self._earlier = None
        record = OperationRecord(name=full, pattern=pattern, layout=self.layout, state=self.state)
        self._seq = len(self.run.operations)
        self.store.save_operation(self.run.run_id, self._seq, record)
        return record

    def progress(self, name: str, fraction: float, detail: str) -> None:
        self.reporter.stage_progress(self.qualified(name), fraction, detail)

    def finished(self, name: str, figures: dict[str, float], detail: dict[str, Any] | None = None,
                 failed: bool = False) -> None:
        record = self._current
        if record is None or record.name != self.qualified(name):
            self.reporter.stage_finished(self.qualified(name), None)
            return
        record.figures.update(figures)
        detail = dict(detail or {})
        # Units of a workload's own figures (names FIGURE_UNITS does not know) come in the detail.
        record.units.update(detail.pop(UNITS, {}))
        self._take_hosts(record, detail)
        record.detail.update(detail)
        self._stop_monitor(record)
        record.status, record.finished_at = FAILED if failed else COMPLETE, now_iso()
        self._save(record)
        self.reporter.stage_finished(record.name, record)

    def _take_hosts(self, record: OperationRecord, detail: dict[str, Any]) -> None:
        """A multi-host phase's per-host figures, lost hosts and timeline, out of the workload's
        detail into the record's HostAccount (this sample's joining the earlier ones')."""
        hosts, lost, timeline = detail.pop(HOSTS, None), detail.pop(LOST_HOSTS, None), detail.pop(HOST_TIMELINE, None)
        if not isinstance(hosts, dict) and not isinstance(timeline, dict):
            return
        record.hosts = record.hosts if record.hosts is not None and self._earlier is not None else HostAccount()
        if isinstance(hosts, dict):
            record.hosts.add(hosts, lost if isinstance(lost, dict) else {})
        if isinstance(timeline, dict):
            record.hosts.timeline = self._timeline_in_sample_folder(timeline)

    def _timeline_in_sample_folder(self, timeline: dict[str, Any]) -> dict[str, Any]:
        """A repeated phase's per-host CSVs (runner/host_monitor.py names them bare) are in its
        sample's folder: named from the group's folder, where the report looks for them. The
        phase's timeline is then its latest sample's, as its monitor CSV is."""
        base = self.run_root / self.group if self.group else self.run_root
        if self.folder == base or not self.folder.is_relative_to(base):
            return timeline
        inside = self.folder.relative_to(base)
        hosts = {host: {**where, "csv": str(inside / where["csv"])} if isinstance(where, dict) and where.get("csv")
                 else where for host, where in (timeline.get("hosts") or {}).items()}
        return {**timeline, "hosts": hosts}

    def abort(self, status: str) -> None:
        """The phase under way ends with `status` (failed / incomplete); its samples are kept."""
        record = self._current
        if record is None:
            return
        self._stop_monitor(record)
        if self._earlier is not None:
            record.figures = {}  # a sample cut short is no sample: the phase keeps the earlier ones
        record.status, record.finished_at = status, now_iso()
        self._save(record)

    def _save(self, record: OperationRecord) -> None:
        earlier, self._earlier = self._earlier, None
        if earlier is None:
            self.run.operations.append(record)
        else:
            samples = earlier + ([dict(record.figures)] if record.figures else [])
            record.figures = medians(samples) if len(samples) > 1 else dict(samples[0])
            record.samples = samples if len(samples) > 1 else []
        self.store.save_operation(self.run.run_id, self._seq, record)
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
        account = record.monitor = record.monitor or MonitorAccount()
        account.samples, account.devices, account.warnings = summary.samples, summary.devices, summary.warnings
        account.notes, account.errors, account.left_out = summary.notes, summary.errors, summary.left_out
        # A later sample's crossings join the earlier ones (counts added, the worst kept): said
        # once per phase however many samples it has.
        merged = merged_crossings([Crossing(**c) for c in account.crossings], summary.crossings)
        account.crossings = [dataclasses.asdict(c) for c in merged]
        self._check_cache(record)
        self._check_others(record)
        record.notes = crossing_lines(merged, self.monitor.thresholds, summary.devices) + [
            note for note in (record.cache.note(), record.others.note()) if note]

    def _check_others(self, record: OperationRecord) -> None:
        """What other processes took while the phase ran (monitor/others.py): figures, and the
        phase disturbed when they took more than a decision can ignore."""
        watch, self._others = self._others, None
        found = watch.stop() if watch is not None else None
        if found is None:
            return
        for name, value in found.figures().items():
            record.figures[name] = value
        record.units.update({"others_cpu_cores": "cores", "others_io_bps": "B/s"})
        record.others.add(found.reason(found.disks_bps))

    def _check_cache(self, record: OperationRecord) -> None:
        """The phase against the cache guard: what share of its bytes reached the disks."""
        timer, self._ramp_timer = self._ramp_timer, None
        if timer is not None:
            timer.cancel()   # a phase over before its ramp was: its start is unknown, not checked
            timer.join()
        start, self._disk_bytes_at_start = self._disk_bytes_at_start, None
        storage = self.monitor.storage if self.monitor is not None else None
        end = self.monitor.disk_bytes() if self.monitor is not None else None
        if storage is None or start is None or end is None:
            return
        buffered = record.detail.get("buffered", self.monitor.buffered if self.monitor is not None else False)
        check = cache_guard.judge(cache_guard.moved_bytes(record.figures), end - start, storage, buffered)
        if check is None:
            return
        record.figures[STORAGE_FIGURE] = 100.0 * check.seen_fraction
        record.units[STORAGE_FIGURE] = "%"
        record.cache.add(check.reason)

