"""Summary of a sampling period: avg / p95 / max per figure, threshold warnings.

Averages are over time (each sample weighted by its interval), so they equal the
total over the period divided by its length, except r_await / w_await and rareq-sz /
wareq-sz, which are averaged per I/O (weighted by the reads or writes of each interval,
i.e. total ticks / total I/Os, total KiB / total I/Os) so that idle seconds do not dilute
them. p95 and max are over the per-interval values (nearest rank, as every percentile here:
stats.py); for those per-I/O figures only intervals that had such I/O count.
A device that did no reads has r_await 0 with count 0, as iostat prints 0.00.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from backupbench.stats import nearest_rank
from backupbench.monitor.metrics import DISK_METRICS, HOST_METRICS, UNITS, disk_key
from backupbench.monitor.rates import Sample
from backupbench.monitor.thresholds import Thresholds


@dataclass(frozen=True)
class FigureStats:
    avg: float
    p95: float
    max: float
    unit: str
    count: int   # intervals that contributed


@dataclass
class MonitorSummary:
    stats: dict[str, FigureStats] = field(default_factory=dict)
    samples: int = 0
    interval_s: float = 0.0
    duration_s: float = 0.0
    devices: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)   # threshold crossings, as words
    crossings: list[Crossing] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)      # devices absent / vanished / reset
    errors: list[str] = field(default_factory=list)     # sampling failures (never raised)
    csv_path: Path | None = None
    sampler_cpu_s: float = 0.0                          # CPU time the sampler itself used
    left_out: int = 0                                   # samples not counted: a phase's start, ramp, end

    def __getitem__(self, key: str) -> FigureStats:
        return self.stats[key]

    def __contains__(self, key: object) -> bool:
        return key in self.stats

    def get(self, key: str) -> FigureStats | None:
        return self.stats.get(key)

    def mean_over(self, devices: Iterable[str], metric: str, stat: str = "avg") -> float | None:
        """Mean of one statistic across devices, e.g. avg %util of the member disks."""
        values = [getattr(self.stats[k], stat) for k in (disk_key(d, metric) for d in devices) if k in self.stats]
        return sum(values) / len(values) if values else None

    def to_figures(self) -> list[tuple[str, float, str]]:
        """(name, value, unit) rows for the results store: '<key>.avg', '<key>.p95', '<key>.max'."""
        rows: list[tuple[str, float, str]] = []
        for key, st in self.stats.items():
            rows += [(f"{key}.avg", st.avg, st.unit), (f"{key}.p95", st.p95, st.unit), (f"{key}.max", st.max, st.unit)]
        return rows


class _Series:
    __slots__ = ("weighted_sum", "weight", "values")

    def __init__(self) -> None:
        self.weighted_sum = 0.0
        self.weight = 0.0
        self.values = array("d")

    def add(self, value: float, weight: float) -> None:
        self.weighted_sum += value * weight
        self.weight += weight
        self.values.append(value)

    def stats(self, unit: str) -> FigureStats:
        if not self.values:
            return FigureStats(0.0, 0.0, 0.0, unit, 0)
        avg = self.weighted_sum / self.weight if self.weight > 0 else sum(self.values) / len(self.values)
        return FigureStats(avg, nearest_rank(sorted(self.values), 95), max(self.values), unit, len(self.values))


@dataclass(frozen=True)
class Crossing:
    """A threshold crossed: by which device's metric (device "" for load1), how often, how far."""
    device: str
    metric: str
    count: int
    worst: float


def merged_crossings(earlier: Iterable[Crossing], later: Iterable[Crossing]) -> list[Crossing]:
    """Two periods' crossings as one (a phase's samples): counts added, the worst kept."""
    found: dict[tuple[str, str], Crossing] = {}
    for c in (*earlier, *later):
        seen = found.get((c.device, c.metric))
        found[c.device, c.metric] = c if seen is None else Crossing(c.device, c.metric, seen.count + c.count,
                                                                     max(seen.worst, c.worst))
    return list(found.values())


def crossing_lines(crossings: Iterable[Crossing], thresholds: Thresholds, devices: Sequence[str]) -> list[str]:
    """The warnings of a period: each device's crossings in the stack's order, load last."""
    rank = {d: i for i, d in enumerate(devices)}
    out = []
    for c in sorted(crossings, key=lambda c: (c.metric == "load1", rank.get(c.device, len(rank)), c.device, c.metric)):
        times = f"{c.count} sample{'s' if c.count != 1 else ''}"
        if c.metric == "load1":
            out.append(f"load1 {c.worst:.2f} above {thresholds.describe_load1()} ({times})")
        else:
            out.append(f"{c.device} {c.metric} {c.worst:.0f} ms above {thresholds.io_await_ms:g} ms ({times})")
    return out


class _Crossing:
    __slots__ = ("count", "worst")

    def __init__(self) -> None:
        self.count = 0
        self.worst = -math.inf


class SummaryBuilder:
    """Folds samples in as they come (no sample list is kept), then builds the summary."""

    def __init__(self, devices: Sequence[str], thresholds: Thresholds | None = None):
        self.devices = list(devices)
        self.thresholds = thresholds or Thresholds()
        self._load_limit = self.thresholds.load1_limit()
        self._host = {m.key: _Series() for m in HOST_METRICS}
        self._disk: dict[str, dict[str, _Series]] = {}
        self._crossings: dict[tuple[str, str], _Crossing] = {}
        self.samples = 0
        self.duration_s = 0.0
        self.notes: list[str] = []

    def add(self, sample: Sample) -> None:
        self.samples += 1
        self.duration_s += sample.interval_s
        dt = sample.interval_s
        for metric in HOST_METRICS:
            value = metric.read(sample)
            if value is not None:
                self._host[metric.key].add(value, dt)
        if sample.load is not None and sample.load.load1 > self._load_limit:
            self._cross("", "load1", sample.load.load1)
        limit = self.thresholds.io_await_ms
        for device, rates in sample.disks.items():
            series = self._disk.get(device)
            if series is None:
                series = self._disk[device] = {m.key: _Series() for m in DISK_METRICS}
            for metric in DISK_METRICS:
                value = metric.read(rates)
                if metric.weight_by is None:
                    series[metric.key].add(value, dt)
                else:
                    ios = getattr(rates, metric.weight_by) * dt
                    if ios > 0:
                        series[metric.key].add(value, ios)
                        if metric.is_latency and value > limit:
                            self._cross(device, metric.key, value)

    def _cross(self, device: str, metric: str, value: float) -> None:
        crossing = self._crossings.setdefault((device, metric), _Crossing())
        crossing.count += 1
        crossing.worst = max(crossing.worst, value)

    def crossings(self) -> list[Crossing]:
        return [Crossing(device, metric, c.count, c.worst) for (device, metric), c in self._crossings.items()]

    def warnings(self) -> list[str]:
        return crossing_lines(self.crossings(), self.thresholds, self.devices)

    def build(self, *, interval_s: float, errors: Sequence[str] = (), csv_path: Path | None = None,
              sampler_cpu_s: float = 0.0) -> MonitorSummary:
        stats: dict[str, FigureStats] = {}
        for metric in HOST_METRICS:
            if self._host[metric.key].values:
                stats[metric.key] = self._host[metric.key].stats(metric.unit)
        ordered = [d for d in self.devices if d in self._disk] + [d for d in self._disk if d not in self.devices]
        for device in ordered:
            for metric in DISK_METRICS:
                stats[disk_key(device, metric)] = self._disk[device][metric.key].stats(UNITS[metric.key])
        return MonitorSummary(
            stats=stats, samples=self.samples, interval_s=interval_s, duration_s=self.duration_s,
            devices=list(self.devices), warnings=self.warnings(), crossings=self.crossings(), notes=list(self.notes),
            errors=list(errors), csv_path=csv_path, sampler_cpu_s=sampler_cpu_s,
        )
