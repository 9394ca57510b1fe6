"""What the pipeline itself records about a phase, beside the figures: typed, where a `detail`
dict with string keys used to hold it (issue 38).

A phase's record (results/model.OperationRecord) has:
- `layout` and `state`: which layout of a recipe it ran on, and the array's state under a fault;
- `monitor` (MonitorAccount): what the 1 s sampler saw, each sample's CSV, its threshold crossings;
- `cache` (CacheAccount): the cache guard's verdict over every sample;
- `hosts` (HostAccount): each sample's per-host figures, the hosts lost, each host's timeline;
- `notes`: the phase's own notes (its crossings, its cache verdict), written whole for each
  sample from the typed facts above, never edited by matching their words; the run shows them
  after its own (RunRecord.all_notes);
- `detail`: what the workload and its engine say about the phase (the fio job file, a steady
  state, a fault's rebuild), which only they and the report read.

The store keeps the typed part as JSON in `operations.phase_json` and per-host samples in the
`samples` table (a `host` column); `to_stored`/`from_stored` are its shape. A store written
before (schema <= 4) kept all of it in `detail_json`: `from_legacy` reads that shape, and the
store migrates every row once when it opens (results/store.py). `legacy_detail` gives the old
keys back for the `--json` document, whose shape does not change with the record's.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

# The keys a phase's detail held before the record was typed (schema <= 4), and which the
# --json document's `detail` still shows.
LEGACY_KEYS = ("layout", "state", "monitor", "monitor_csv", "monitor_csv_samples", "monitor_crossings",
               "cached", "cached_samples", "cache_checked_samples", "hosts", "host_samples", "lost_hosts",
               "host_timeline")
# What a workload hands the recorder beside its figures that the record owns (PhaseHooks.finished).
HOSTS, LOST_HOSTS, HOST_TIMELINE, UNITS = "hosts", "lost_hosts", "host_timeline", "units"


def medians(samples: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the samples that have it, in the order first measured."""
    names = dict.fromkeys(name for sample in samples for name in sample)
    return {name: statistics.median(s[name] for s in samples if s.get(name) is not None)
            for name in names if any(s.get(name) is not None for s in samples)}


@dataclass
class MonitorAccount:
    """The sampler's summary of the phase's latest sample, every sample's CSV (relative to the
    run folder, first to last) and the threshold crossings of all samples merged."""

    samples: int = 0
    devices: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    left_out: Any = 0
    csv: list[str] = field(default_factory=list)
    crossings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def latest_csv(self) -> str | None:
        return self.csv[-1] if self.csv else None

    def summary(self) -> dict[str, Any]:
        return {"samples": self.samples, "devices": self.devices, "warnings": self.warnings, "notes": self.notes,
                "errors": self.errors, "left_out": self.left_out}


@dataclass
class CacheAccount:
    """The cache guard over a phase's samples: how many were checked, how many the disks saw
    under half the bytes of, and the latest cached sample's cause."""

    checked: int = 0
    cached: int = 0
    reason: str | None = None

    def add(self, reason: str | None) -> None:
        self.checked += 1
        if reason is not None:
            self.cached += 1
            self.reason = reason

    def note(self) -> str | None:
        """'cached: <cause>', or 'cached in 2 of 3 samples: <cause>'; None when no sample was."""
        if not self.cached:
            return None
        how = "" if self.checked == 1 else f" in {self.cached} of {self.checked} samples"
        return f"cached{how}: {self.reason}"


@dataclass
class DisturbAccount:
    """Other processes over a phase's samples (monitor/others.py): how many samples were
    checked, how many they disturbed, and the latest disturbed sample's words."""

    checked: int = 0
    disturbed: int = 0
    reason: str | None = None

    def add(self, reason: str | None) -> None:
        self.checked += 1
        if reason is not None:
            self.disturbed += 1
            self.reason = reason

    def note(self) -> str | None:
        if not self.disturbed:
            return None
        how = "" if self.checked == 1 else f" in {self.disturbed} of {self.checked} samples"
        return f"disturbed{how}: {self.reason}; its figures are not fit for decisions"


@dataclass
class HostAccount:
    """A phase run on several hosts or agents: each sample's {host: figures}, the hosts lost in
    any sample and why, and the per-host timeline of the latest sample (runner/host_monitor.py)."""

    samples: list[dict[str, dict[str, float]]] = field(default_factory=list)
    lost: dict[str, str] = field(default_factory=dict)
    timeline: dict[str, Any] | None = None

    @property
    def per_host(self) -> dict[str, dict[str, float]]:
        """Each host's medians over its samples: with one sample, its figures."""
        names = dict.fromkeys(str(host) for sample in self.samples for host in sample)
        return {host: medians([{k: v for k, v in sample[host].items() if isinstance(v, (int, float))}
                               for sample in self.samples if isinstance(sample.get(host), dict)])
                for host in names}

    def add(self, hosts: dict[str, dict[str, float]], lost: dict[str, str]) -> None:
        self.samples.append({str(host): dict(figures) for host, figures in hosts.items()})
        self.lost.update({str(host): str(why) for host, why in lost.items()})


@dataclass
class PhaseAccount:
    """The typed part of a phase's record (see the module doc)."""

    layout: str = ""
    state: str = ""
    monitor: MonitorAccount | None = None
    cache: CacheAccount = field(default_factory=CacheAccount)
    hosts: HostAccount | None = None
    notes: list[str] = field(default_factory=list)
    others: DisturbAccount = field(default_factory=DisturbAccount)

    def to_stored(self) -> dict[str, Any]:
        """The shape of `operations.phase_json` (host samples go to the samples table)."""
        stored = asdict(self)
        if self.hosts is not None:
            stored["hosts"] = {"lost": self.hosts.lost, "timeline": self.hosts.timeline}
        return stored

    @classmethod
    def from_stored(cls, data: dict[str, Any], host_samples: list[dict[str, dict[str, float]]]) -> PhaseAccount:
        hosts = data.get("hosts")
        return cls(layout=str(data.get("layout") or ""), state=str(data.get("state") or ""),
                   monitor=MonitorAccount(**data["monitor"]) if data.get("monitor") else None,
                   cache=CacheAccount(**(data.get("cache") or {})),
                   hosts=(HostAccount(host_samples, dict(hosts.get("lost") or {}), hosts.get("timeline"))
                          if isinstance(hosts, dict) else None),
                   notes=list(data.get("notes") or []), others=DisturbAccount(**(data.get("others") or {})))

    @classmethod
    def from_legacy(cls, detail: dict[str, Any]) -> tuple[PhaseAccount, dict[str, Any]]:
        """A phase's detail as a store of schema <= 4 kept it: (its typed part, the workload's own
        rest). Its notes stay empty: they were kept in the run's notes then, and still are."""
        rest = {key: value for key, value in detail.items() if key not in LEGACY_KEYS}
        monitor = None
        if isinstance(detail.get("monitor"), dict) or detail.get("monitor_csv"):
            csv = list(detail.get("monitor_csv_samples") or ([detail["monitor_csv"]] if detail.get("monitor_csv") else []))
            summary = {k: v for k, v in (detail.get("monitor") or {}).items()
                       if k in ("samples", "devices", "warnings", "notes", "errors", "left_out")}
            monitor = MonitorAccount(**summary, csv=csv, crossings=list(detail.get("monitor_crossings") or []))
        cache = CacheAccount(int(detail.get("cache_checked_samples") or 0), int(detail.get("cached_samples") or 0),
                             detail.get("cached") or None)
        if cache.reason and not cache.checked:   # stored before the counts were
            cache.checked = cache.cached = 1
        hosts = None
        if isinstance(detail.get("hosts"), dict):
            samples = detail.get("host_samples") or [detail["hosts"]]
            hosts = HostAccount([dict(s) for s in samples], dict(detail.get("lost_hosts") or {}),
                                detail.get("host_timeline"))
        elif isinstance(detail.get("host_timeline"), dict):
            hosts = HostAccount([], {}, detail["host_timeline"])
        return cls(str(detail.get("layout") or ""), str(detail.get("state") or ""), monitor, cache, hosts), rest

    def legacy_detail(self) -> dict[str, Any]:
        """The keys the --json document's `detail` has shown since before the record was typed."""
        shown: dict[str, Any] = {}
        if self.layout:
            shown["layout"] = self.layout
        if self.state:
            shown["state"] = self.state
        if self.monitor is not None:
            if self.monitor.csv:
                shown["monitor_csv"] = self.monitor.latest_csv
            if len(self.monitor.csv) > 1:
                shown["monitor_csv_samples"] = list(self.monitor.csv)
            shown["monitor"] = self.monitor.summary()
            if self.monitor.crossings:
                shown["monitor_crossings"] = list(self.monitor.crossings)
        if self.cache.checked:
            shown["cache_checked_samples"], shown["cached_samples"] = self.cache.checked, self.cache.cached
        if self.cache.reason:
            shown["cached"] = self.cache.reason
        if self.hosts is not None:
            if self.hosts.samples:
                shown["hosts"] = self.hosts.per_host
                shown["lost_hosts"] = dict(self.hosts.lost)
            if len(self.hosts.samples) > 1:
                shown["host_samples"] = list(self.hosts.samples)
            if self.hosts.timeline is not None:
                shown["host_timeline"] = self.hosts.timeline
        return shown
