"""What a stored run looks like. Figures are named numbers with a unit, so later workloads
(monitor summaries, small-file phases) add figures without changing the schema."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from backupbench import process
from backupbench.monitor.metrics import DISK_METRICS
from backupbench.results.phase import CacheAccount, DisturbAccount, HostAccount, MonitorAccount, PhaseAccount, medians
from backupbench.stats import Spread, spread

__all__ = ["medians"]  # kept here for the modules that read it as the model's

# Run and operation states.
RUNNING = "running"
COMPLETE = "complete"
INTERRUPTED = "interrupted"  # a stop signal, or the process died: partial results kept
FAILED = "failed"
VOID = "void"  # finished, but something made the figures meaningless (an Invalid snapshot)

# Well-known figure names and their units.
FIGURE_UNITS = {
    "read_bw": "B/s",
    "write_bw": "B/s",
    "effective_bw": "B/s",
    "read_iops": "IO/s",
    "write_iops": "IO/s",
    "read_p99_lat": "ns",
    "write_p99_lat": "ns",
    "runtime": "s",
    "members_util": "%",
    "members_w_await": "ms",
    "members_rMB_s": "MiB/s",   # what each member disk read, on average over the members
    "members_wMB_s": "MiB/s",
    # The small-file engine's phases.
    "files_per_s": "files/s",
    "file_p50_lat": "ns",
    "file_p99_lat": "ns",
    "files": "files",
    "sync_seconds": "s",
    "mismatches": "files",
    # S3 phases (a mixed phase also has each request kind's, prefixed: put_ops, get_lat_p99_ns).
    "ops": "requests",
    "errors": "requests",
    "retried": "requests",   # sent again after a transient answer (SlowDown), then succeeded or failed
    "retries": "requests",   # the resends themselves
    "bytes": "B",
    "objects_per_s": "objects/s",
    "lat_p50_ns": "ns",
    "lat_p90_ns": "ns",
    "lat_p99_ns": "ns",
    "ttfb_p50_ns": "ns",
    "ttfb_p99_ns": "ns",
    "objects_checked": "objects",
    "multipart_objects": "objects",
    # A file a restore read (engines/file_map.py), and the same file on the model's disk (disk_model.py).
    "file_bytes": "B",
    "file_extents": "extents",
    "file_mean_extent_bytes": "B",
    "file_shared_bytes": "B",
    "file_shared_extents": "extents",
    "file_jumps": "jumps",
    "file_median_jump_bytes": "B",
    "file_holes": "holes",
    "model_seq_bw": "B/s",
    "model_random_bw": "B/s",
    # Per device: the device is a label, not a part of the name (split_device).
    "snapshot.data_pct_max": "%",
    "snapshot.invalid": "1",
    "thinpool.data_pct_max": "%",
    "thinpool.metadata_pct_max": "%",
}
# A mixed S3 phase's per-kind figures are the plain ones prefixed with the request kind.
S3_REQUEST_KINDS = ("put", "get", "list", "delete")


MONITOR_PREFIX = "mon."  # runner/phases.py stores the monitor summary under it
# Figures stored per LV as '<prefix><lv>.<figure>': monitor/snapwatch.py (a snapshot's fill,
# whether it turned Invalid), monitor/thinwatch.py (a thin pool's data and metadata fill).
PER_VOLUME_PREFIXES = ("snapshot.", "thinpool.")
DISK_METRIC_KEYS = frozenset(metric.key for metric in DISK_METRICS)


def split_device(name: str) -> tuple[str, str | None]:
    """A stored figure name -> (figure name, device), the device taken out of the name:
    'mon.vda.w_await.p95' -> ('mon.w_await.p95', 'vda'); 'snapshot.snap1.data_pct_max' ->
    ('snapshot.data_pct_max', 'snap1'); 'effective_bw' -> ('effective_bw', None)."""
    if name.startswith(MONITOR_PREFIX):
        metric_path, dot, stat = name[len(MONITOR_PREFIX):].rpartition(".")
        device, dot_before, metric = metric_path.rpartition(".")
        if dot and dot_before and device and metric in DISK_METRIC_KEYS:
            return f"{MONITOR_PREFIX}{metric}.{stat}", device
    prefix = next((p for p in PER_VOLUME_PREFIXES if name.startswith(p)), None)
    if prefix is not None:
        device, dot, rest = name[len(prefix):].rpartition(".")
        if dot and device:
            return prefix + rest, device
    return name, None


def stored_name(figure: str, device: str | None) -> str:
    """The inverse of split_device: the name the store keeps the figure under."""
    if device is None:
        return figure
    prefix, _, rest = figure.partition(".")
    return f"{prefix}.{device}.{rest}"


def known_unit(name: str) -> str:
    """The unit of a well-known figure name, '' when the name is not one."""
    figure, _ = split_device(name)
    if figure in FIGURE_UNITS:
        return FIGURE_UNITS[figure]
    kind, _, plain = figure.partition("_")
    return FIGURE_UNITS.get(plain, "") if kind in S3_REQUEST_KINDS else ""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# Set by `backupbench lab` for the guest: the guest's runs belong to the host's lab process,
# which outlives them; the guest's own processes mean nothing on the host.
OWNER_ENV = "BACKUPBENCH_RUN_OWNER"


def current_owner() -> str:
    """Who a new run belongs to (process.identity): a run whose owner is gone is not running."""
    return os.environ.get(OWNER_ENV) or process.identity(os.getpid()) or ""


def new_run_id() -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{secrets.token_hex(4)}"


# How fast a phase went, higher better, first match wins: a small-file phase by its files/s (its
# MiB/s follows from the file size), a phase moving no bytes (an S3 DELETE or LIST: effective_bw
# 0) by its request rate. Comparisons, headlines and tables all judge a phase by it.
SPEED_FIGURES = ("files_per_s", "effective_bw", "objects_per_s")
# The figure a phase's table, flags and spread are about: the first of these a phase has, and
# not 0; a block clone by its time per TiB (lower is better there).
HEADLINE_FIGURES = ("clone_s_per_tib", *SPEED_FIGURES)


@dataclass
class OperationRecord:
    name: str
    pattern: str
    status: str = RUNNING
    started_at: str = field(default_factory=now_iso)
    finished_at: str | None = None
    figures: dict[str, float] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)
    # Units of figures whose names are not in FIGURE_UNITS (monitor figures, for one).
    units: dict[str, str] = field(default_factory=dict)
    # A phase measured several times (--repeat, a recipe's `repeat`): each sample's figures, in
    # the order measured; `figures` then holds each figure's median. Empty: measured once.
    samples: list[dict[str, float]] = field(default_factory=list)
    # What the pipeline records beside the figures (results/phase.py); `detail` is the workload's.
    layout: str = ""                      # the recipe layout it ran on ('' for `run PATH`)
    state: str = ""                       # the array's state under a fault (recipe/naming.py)
    monitor: MonitorAccount | None = None
    cache: CacheAccount = field(default_factory=CacheAccount)
    hosts: HostAccount | None = None
    notes: list[str] = field(default_factory=list)   # shown after the run's own: RunRecord.all_notes
    others: DisturbAccount = field(default_factory=DisturbAccount)  # other processes (monitor/others.py)

    def unit(self, name: str) -> str:
        return self.units.get(name) or known_unit(name)

    def figure(self, name: str) -> float | None:
        return self.figures.get(name)

    @property
    def sample_count(self) -> int:
        return len(self.samples) or 1

    def sample_values(self, name: str) -> list[float]:
        """Every sample of one figure (the one stored value of a phase measured once)."""
        if self.samples:
            return [sample[name] for sample in self.samples if sample.get(name) is not None]
        value = self.figures.get(name)
        return [] if value is None else [value]

    def spread(self, name: str) -> Spread | None:
        """The figure's median, min/max, CV and 95% interval (stats.spread); None if not measured."""
        values = self.sample_values(name)
        return spread(values) if values else None

    @property
    def headline_figure(self) -> str | None:
        """The figure a phase is judged by in its table (its bold column), if it has one."""
        present = [name for name in HEADLINE_FIGURES if name in self.figures]
        return next((name for name in present if self.figures[name]), present[0] if present else None)

    @property
    def cached(self) -> str | None:
        """Why the disks saw under half the bytes this phase moved (monitor/cache_guard.py), or None."""
        return self.cache.reason if self.cache.cached and self.cache.reason else None

    @property
    def disturbed(self) -> str | None:
        """What other processes did that makes the phase's figures unfit for decisions, or None."""
        return self.others.reason if self.others.disturbed and self.others.reason else None

    @property
    def monitor_csv(self) -> str | None:
        """The latest sample's monitor CSV, relative to the run folder (runfiles.py finds it)."""
        return self.monitor.latest_csv if self.monitor is not None else None

    @property
    def account(self) -> PhaseAccount:
        return PhaseAccount(self.layout, self.state, self.monitor, self.cache, self.hosts, self.notes, self.others)

    def take(self, account: PhaseAccount) -> None:
        """The typed part of the record from `account` (as the store reads it back)."""
        self.layout, self.state, self.monitor = account.layout, account.state, account.monitor
        self.cache, self.hosts, self.notes, self.others = account.cache, account.hosts, account.notes, account.others

    def document_detail(self) -> dict[str, Any]:
        """The `detail` of the --json document: the workload's, with the keys the pipeline's
        own facts have had there since before they were typed (results/phase.py)."""
        return {**self.detail, **self.account.legacy_detail()}

    @property
    def unstable(self) -> bool:
        """The headline figure's samples vary by a CV over 10% (stats.py); never for one sample."""
        name = self.headline_figure
        figure = self.spread(name) if name is not None else None
        return figure is not None and figure.unstable


@dataclass
class RunRecord:
    run_id: str
    kind: str
    target: str
    settings: dict[str, Any]
    host: dict[str, Any] = field(default_factory=dict)
    status: str = RUNNING
    started_at: str = field(default_factory=now_iso)
    finished_at: str | None = None
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    operations: list[OperationRecord] = field(default_factory=list)
    # The process the run belongs to (process.identity()): a run whose process is gone is
    # not running, whatever its stored status says.
    owner: str = ""
    # The user's name for the run (--label), shown wherever runs are listed or compared.
    label: str = ""

    @property
    def all_notes(self) -> list[str]:
        """The run's own notes, then each phase's ('<phase>: <note>'): what every view shows."""
        return [*self.notes, *(f"{op.name}: {note}" for op in self.operations for note in op.notes)]
