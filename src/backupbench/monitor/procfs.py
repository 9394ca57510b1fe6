"""Pure parsers for the /proc files the monitor reads, and one snapshot of them.

Each `parse_*` takes the file's text and returns plain data; nothing here computes a rate
(that is rates.py). Units are the kernel's: sectors of 512 bytes, milliseconds, USER_HZ
ticks, kB (which /proc/meminfo means as KiB).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from backupbench import hostfiles
from backupbench.hostfiles import HostFiles


@dataclass(frozen=True, slots=True)
class DiskCounters:
    """One /proc/diskstats line (fields 1-14, see the kernel's iostats.rst).

    All are cumulative counters except `in_flight` (a gauge). Ticks are milliseconds.
    Discard and flush fields (15-20) are not kept: iostat's r/s and w/s exclude them.
    """

    major: int
    minor: int
    name: str
    rd_ios: int
    rd_merges: int
    rd_sectors: int
    rd_ticks: int
    wr_ios: int
    wr_merges: int
    wr_sectors: int
    wr_ticks: int
    in_flight: int
    io_ticks: int
    time_in_queue: int


# The cumulative fields, in file order (in_flight is a gauge and is left out).
DISK_COUNTER_FIELDS = (
    "rd_ios", "rd_merges", "rd_sectors", "rd_ticks",
    "wr_ios", "wr_merges", "wr_sectors", "wr_ticks",
    "io_ticks", "time_in_queue",
)


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """The aggregate 'cpu' line of /proc/stat, in USER_HZ ticks.

    The kernel already counts guest time inside user (and guest_nice inside nice).
    """

    user: int = 0
    nice: int = 0
    system: int = 0
    idle: int = 0
    iowait: int = 0
    irq: int = 0
    softirq: int = 0
    steal: int = 0
    guest: int = 0
    guest_nice: int = 0


@dataclass(frozen=True, slots=True)
class Memory:
    """From /proc/meminfo, in KiB. Used memory is MemTotal - MemAvailable."""

    total_kib: int
    available_kib: int
    swap_total_kib: int = 0
    swap_free_kib: int = 0

    @property
    def used_mib(self) -> float:
        return (self.total_kib - self.available_kib) / 1024

    @property
    def used_pct(self) -> float:
        return (self.total_kib - self.available_kib) / self.total_kib * 100 if self.total_kib else 0.0

    @property
    def swap_used_mib(self) -> float:
        return (self.swap_total_kib - self.swap_free_kib) / 1024


@dataclass(frozen=True, slots=True)
class LoadAvg:
    load1: float
    load5: float
    load15: float


def parse_diskstats(text: str) -> dict[str, DiskCounters]:
    """/proc/diskstats -> {name: counters}. Short (pre-2.6.25 partition) or bad lines are skipped."""
    disks: dict[str, DiskCounters] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 14:
            continue
        try:
            values = [int(v) for v in fields[3:14]]
            disks[fields[2]] = DiskCounters(int(fields[0]), int(fields[1]), fields[2], *values)
        except ValueError:
            continue
    return disks


def parse_proc_stat(text: str) -> CpuTimes:
    """/proc/stat -> the aggregate 'cpu' line. Older kernels have fewer columns (0 then)."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            values = [int(v) for v in line.split()[1:11]]
            return CpuTimes(*values)
    raise ValueError("no aggregate 'cpu' line in /proc/stat")


def parse_meminfo(text: str) -> Memory:
    """/proc/meminfo -> Memory. Without MemAvailable (kernels < 3.14) uses MemFree+Buffers+Cached."""
    values = hostfiles.parse_meminfo(text)
    if "MemTotal" not in values:
        raise ValueError("no MemTotal in /proc/meminfo")
    available = values.get("MemAvailable")
    if available is None:
        available = values.get("MemFree", 0) + values.get("Buffers", 0) + values.get("Cached", 0)
    return Memory(values["MemTotal"], available, values.get("SwapTotal", 0), values.get("SwapFree", 0))


def parse_loadavg(text: str) -> LoadAvg:
    """/proc/loadavg: '0.52 0.58 0.59 1/467 12345' -> LoadAvg(0.52, 0.58, 0.59)."""
    parts = text.split()
    if len(parts) < 3:
        raise ValueError(f"unexpected /proc/loadavg: {text!r}")
    return LoadAvg(float(parts[0]), float(parts[1]), float(parts[2]))


@dataclass(frozen=True)
class Snapshot:
    """The counters and gauges read at one moment.

    `t` is the monotonic clock just before /proc/diskstats was read; `wall` is epoch
    seconds for the CSV. A part that could not be read is None and named in `errors`.
    """

    t: float
    wall: float
    disks: dict[str, DiskCounters] | None
    cpu: CpuTimes | None
    memory: Memory | None
    load: LoadAvg | None
    errors: tuple[str, ...] = field(default=())


def read_snapshot(host: HostFiles, clock: Callable[[], float] = time.monotonic,
                  wallclock: Callable[[], float] = time.time) -> Snapshot:
    """Read the four files once. Never raises for a missing or odd file: it is named in errors."""
    errors: list[str] = []

    def read(path: str, parse):
        try:
            return parse(host.read_text(path))
        except (OSError, ValueError) as exc:
            errors.append(f"cannot read {path}: {exc}")
            return None

    t = clock()
    wall = wallclock()
    disks = read("/proc/diskstats", parse_diskstats)
    cpu = read("/proc/stat", parse_proc_stat)
    memory = read("/proc/meminfo", parse_meminfo)
    load = read("/proc/loadavg", parse_loadavg)
    return Snapshot(t, wall, disks, cpu, memory, load, tuple(errors))
