"""The one place cumulative kernel counters become rates.

Two snapshots (taken on the monotonic clock) -> one `Sample`: per-device rates computed
exactly as sysstat's `iostat -x -m` computes them, CPU percentages, and the gauges of the
later snapshot (memory, load).

Request sizes are sysstat's rareq-sz / wareq-sz: sectors / 2 / completed requests over the
interval, in KiB (iostat prints kB and means KiB, with or without -m), 0 when there was no
such request. Merges (rrqm/s, wrqm/s) count requests the block layer joined to a queued one
before it reached the device. So a 512 KiB write cut at a 64 KiB stripe unit counts as 8
writes of wareq-sz 64, and 8 adjacent 4 KiB writes joined into one as 1 write and 7 merges.

Counter wrap and resets: diskstats counters are unsigned long (32 bits on 32-bit kernels)
and the tick fields are unsigned int (32 bits everywhere), so they wrap. A decrease is
taken as a 32-bit wrap when the earlier value fits in 32 bits and the wrapped difference
is plausible (under 2**31); otherwise the device was reset (re-created, re-attached) and
its interval is dropped. A device that is missing from either snapshot (hot-plug) has no
rates in that sample. A change of major:minor under the same name is a reset too.

CPU: %user = user + nice (the kernel counts guest time inside them; this is sar's
%user + %nice), %system = system + irq + softirq (as sar -u and iostat's avg-cpu),
%iowait, %steal, %idle; they add up to 100. A per-field decrease (iowait can go
backwards on tickless kernels, see proc(5)) counts as 0, as sysstat does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from backupbench.monitor.procfs import DiskCounters, CpuTimes, LoadAvg, Memory, Snapshot
from backupbench.units import KiB, MiB

SECTOR_BYTES = 512
_U32 = 1 << 32
_PLAUSIBLE_WRAP = 1 << 31


def counter_delta(prev: int, cur: int) -> int | None:
    """cur - prev for a cumulative counter; None when it was reset rather than wrapped."""
    if cur >= prev:
        return cur - prev
    if prev < _U32:
        wrapped = cur + _U32 - prev
        if wrapped < _PLAUSIBLE_WRAP:
            return wrapped
    return None


@dataclass(frozen=True, slots=True)
class DiskRates:
    """What `iostat -x -m` prints for one device over one interval (MB = MiB, as iostat -m)."""

    r_s: float      # reads completed per second
    w_s: float      # writes completed per second
    rMB_s: float    # MiB read per second (sectors * 512 / 1048576)
    wMB_s: float
    rrqm_s: float   # read requests merged per second (diskstats field 2)
    wrqm_s: float   # write requests merged per second (diskstats field 6)
    r_await: float  # ms per completed read (delta read ticks / delta reads; 0 if none)
    w_await: float
    rareq_sz: float  # KiB per completed read (delta sectors / 2 / delta reads; 0 if none)
    wareq_sz: float
    aqu_sz: float   # delta weighted time in queue (ms) / interval (ms)
    util: float     # delta io_ticks (ms) / interval (ms) * 100, capped at 100


def disk_rates(prev: DiskCounters, cur: DiskCounters, interval_s: float) -> DiskRates | None:
    """Rates between two readings of one device; None when the device was reset."""
    if interval_s <= 0 or (prev.major, prev.minor) != (cur.major, cur.minor):
        return None
    d_rd_ios = counter_delta(prev.rd_ios, cur.rd_ios)
    d_rd_merges = counter_delta(prev.rd_merges, cur.rd_merges)
    d_rd_sectors = counter_delta(prev.rd_sectors, cur.rd_sectors)
    d_rd_ticks = counter_delta(prev.rd_ticks, cur.rd_ticks)
    d_wr_ios = counter_delta(prev.wr_ios, cur.wr_ios)
    d_wr_merges = counter_delta(prev.wr_merges, cur.wr_merges)
    d_wr_sectors = counter_delta(prev.wr_sectors, cur.wr_sectors)
    d_wr_ticks = counter_delta(prev.wr_ticks, cur.wr_ticks)
    d_io_ticks = counter_delta(prev.io_ticks, cur.io_ticks)
    d_queue = counter_delta(prev.time_in_queue, cur.time_in_queue)
    deltas = (d_rd_ios, d_rd_merges, d_rd_sectors, d_rd_ticks, d_wr_ios, d_wr_merges, d_wr_sectors, d_wr_ticks,
              d_io_ticks, d_queue)
    if any(d is None for d in deltas):
        return None
    interval_ms = interval_s * 1000.0
    return DiskRates(
        r_s=d_rd_ios / interval_s,
        w_s=d_wr_ios / interval_s,
        rMB_s=d_rd_sectors * SECTOR_BYTES / MiB / interval_s,
        wMB_s=d_wr_sectors * SECTOR_BYTES / MiB / interval_s,
        rrqm_s=d_rd_merges / interval_s,
        wrqm_s=d_wr_merges / interval_s,
        r_await=d_rd_ticks / d_rd_ios if d_rd_ios else 0.0,
        w_await=d_wr_ticks / d_wr_ios if d_wr_ios else 0.0,
        rareq_sz=d_rd_sectors * SECTOR_BYTES / KiB / d_rd_ios if d_rd_ios else 0.0,
        wareq_sz=d_wr_sectors * SECTOR_BYTES / KiB / d_wr_ios if d_wr_ios else 0.0,
        aqu_sz=d_queue / interval_ms,
        util=min(100.0, d_io_ticks / interval_ms * 100.0),
    )


@dataclass(frozen=True, slots=True)
class CpuPercent:
    user: float
    system: float
    iowait: float
    steal: float
    idle: float


def cpu_percent(prev: CpuTimes, cur: CpuTimes) -> CpuPercent | None:
    """CPU use between two /proc/stat readings; None if no tick passed."""
    def d(name: str) -> int:
        return max(0, getattr(cur, name) - getattr(prev, name))

    user = d("user") + d("nice")
    system = d("system") + d("irq") + d("softirq")
    iowait, steal, idle = d("iowait"), d("steal"), d("idle")
    total = user + system + iowait + steal + idle
    if total <= 0:
        return None
    scale = 100.0 / total
    return CpuPercent(user * scale, system * scale, iowait * scale, steal * scale, idle * scale)


@dataclass(frozen=True)
class Sample:
    """One interval: rates between two snapshots, gauges as of the later one.

    `disks` holds only devices with rates in this interval; a device that was absent
    in either snapshot or was reset is missing (reset ones are also named in `reset`).
    """

    wall: float          # epoch seconds at the end of the interval
    elapsed_s: float     # monotonic seconds from the priming snapshot to the end
    interval_s: float
    cpu: CpuPercent | None
    memory: Memory | None
    load: LoadAvg | None
    disks: dict[str, DiskRates]
    reset: tuple[str, ...] = field(default=())


def compute_sample(prev: Snapshot, cur: Snapshot, devices: Iterable[str], origin_t: float) -> Sample:
    """The sample for the interval prev -> cur, for the named devices."""
    interval = cur.t - prev.t
    disks: dict[str, DiskRates] = {}
    reset: list[str] = []
    if prev.disks is not None and cur.disks is not None and interval > 0:
        for name in devices:
            before, after = prev.disks.get(name), cur.disks.get(name)
            if before is None or after is None:
                continue
            rates = disk_rates(before, after, interval)
            if rates is None:
                reset.append(name)
            else:
                disks[name] = rates
    cpu = cpu_percent(prev.cpu, cur.cpu) if prev.cpu is not None and cur.cpu is not None else None
    return Sample(cur.wall, cur.t - origin_t, interval, cpu, cur.memory, cur.load, disks, tuple(reset))
