"""Every figure the monitor records, defined once: summary key, CSV column, unit, how to read it.

Host figures come from a Sample; device figures from a device's DiskRates and are keyed
'<device>.<key>' in the summary and '<device>:<column>' in the CSV.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from backupbench.monitor.rates import DiskRates, Sample


@dataclass(frozen=True)
class HostMetric:
    key: str                                   # summary key, e.g. 'cpu_iowait'
    column: str                                # CSV column (sar's name), e.g. '%iowait'
    unit: str
    read: Callable[[Sample], float | None]


@dataclass(frozen=True)
class DiskMetric:
    key: str                # DiskRates attribute and summary suffix, e.g. 'w_await'
    column: str             # CSV column (iostat's name), e.g. 'w_await', 'aqu-sz', '%util'
    unit: str
    weight_by: str | None   # averaged per I/O (weighted by this rate) rather than per second
    is_latency: bool = False  # held against the r_await / w_await warning threshold

    def read(self, rates: DiskRates) -> float:
        return getattr(rates, self.key)


def _cpu(name: str) -> Callable[[Sample], float | None]:
    return lambda s: getattr(s.cpu, name) if s.cpu is not None else None


HOST_METRICS: tuple[HostMetric, ...] = (
    HostMetric("cpu_user", "%user", "%", _cpu("user")),
    HostMetric("cpu_system", "%system", "%", _cpu("system")),
    HostMetric("cpu_iowait", "%iowait", "%", _cpu("iowait")),
    HostMetric("cpu_steal", "%steal", "%", _cpu("steal")),
    HostMetric("cpu_idle", "%idle", "%", _cpu("idle")),
    HostMetric("mem_used_MiB", "mem_used_MiB", "MiB", lambda s: s.memory.used_mib if s.memory else None),
    HostMetric("mem_used_pct", "%memused", "%", lambda s: s.memory.used_pct if s.memory else None),
    HostMetric("swap_used_MiB", "swap_used_MiB", "MiB", lambda s: s.memory.swap_used_mib if s.memory else None),
    HostMetric("load1", "ldavg-1", "load", lambda s: s.load.load1 if s.load else None),
    HostMetric("load5", "ldavg-5", "load", lambda s: s.load.load5 if s.load else None),
    HostMetric("load15", "ldavg-15", "load", lambda s: s.load.load15 if s.load else None),
)

DISK_METRICS: tuple[DiskMetric, ...] = (
    DiskMetric("r_s", "r/s", "IO/s", None),
    DiskMetric("w_s", "w/s", "IO/s", None),
    DiskMetric("rMB_s", "rMB/s", "MiB/s", None),
    DiskMetric("wMB_s", "wMB/s", "MiB/s", None),
    DiskMetric("rrqm_s", "rrqm/s", "merges/s", None),
    DiskMetric("wrqm_s", "wrqm/s", "merges/s", None),
    DiskMetric("r_await", "r_await", "ms", "r_s", is_latency=True),
    DiskMetric("w_await", "w_await", "ms", "w_s", is_latency=True),
    DiskMetric("aqu_sz", "aqu-sz", "requests", None),
    DiskMetric("rareq_sz", "rareq-sz", "KiB", "r_s"),
    DiskMetric("wareq_sz", "wareq-sz", "KiB", "w_s"),
    DiskMetric("util", "%util", "%", None),
)

UNITS: dict[str, str] = {m.key: m.unit for m in (*HOST_METRICS, *DISK_METRICS)}


def disk_key(device: str, metric: DiskMetric | str) -> str:
    return f"{device}.{metric if isinstance(metric, str) else metric.key}"
