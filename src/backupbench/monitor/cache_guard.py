"""Cache guards: did a phase's bytes reach storage, and could a cache serve the test file at all?

A figure served from memory is not a storage figure: a 256 MiB test on a loop device once
"restored" at 5,343 MiB/s from the page cache of the file behind the loop device (issue 25).

Facts (`storage_facts`, read once per target): the member disks under the target
(monitor/stack.py); for a loop device among them, its backing file, whether the loop does
direct I/O (sysfs loop/dio: without it the host caches the file's pages) and the disks under
the backing file's own filesystem, which are where its bytes land. Counters: the sectors
/proc/diskstats counts for those disks, read at a phase's start and end (`disk_bytes`).

Rules (pure): `judge` marks a phase `cached` when the disks saw under half the bytes the
workload moved, naming the likeliest cause: a loop device's backing file in the page cache,
buffered I/O's page cache, ZFS's ARC, else a layer above the disks (dm-cache, bcache; a thin
or sparse volume answering reads of blocks never written; a filesystem that compressed the
data). A controller's own cache sits below what the kernel counts and cannot be seen this way.
Disks that also carry other traffic (the host's root disk under a loop file) only make the
disks look busier: a cached phase may then go unmarked, a phase that reached storage is never
marked. `pre_run_caution` warns before a run whose test file fits in the RAM that can cache it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from backupbench import units
from backupbench.hostfiles import HostFiles
from backupbench.monitor import sysfs
from backupbench.monitor.procfs import parse_diskstats
from backupbench.monitor.stack import DeviceStack, device_stack

# Disks that saw under this share of the bytes the workload moved: the rest came from a cache.
CACHED_BELOW = 0.5
SECTOR = 512
# A test file under this many times the RAM can be served from it in good part (fio's guidance).
RAM_FACTOR = 2


@dataclass(frozen=True)
class LoopFacts:
    device: str                  # 'loop3'
    backing_file: str
    direct_io: bool | None       # None: unknown (an old kernel)
    disks: tuple[str, ...]       # under the backing file's filesystem; () on tmpfs and the like
    backing_fs: str | None

    @property
    def page_cached(self) -> bool:
        """The host's page cache holds the backing file's pages (no direct I/O, or no disk at all)."""
        return self.direct_io is not True or not self.disks


@dataclass(frozen=True)
class StorageFacts:
    """Where a target's bytes land: the disks whose counters say what reached storage."""

    disks: tuple[str, ...]
    loops: tuple[LoopFacts, ...] = ()
    pool: str | None = None
    memory_bytes: int | None = None

    @property
    def cached_loops(self) -> list[LoopFacts]:
        return [loop for loop in self.loops if loop.page_cached]


def storage_facts(stack: DeviceStack, memory_bytes: int | None, host: HostFiles | None = None) -> StorageFacts:
    """The disks under `stack`, a loop device's member replaced by the disks under its backing file."""
    host = host or HostFiles()
    disks: list[str] = []
    loops: list[LoopFacts] = []
    for member in stack.members:
        backing = stack.backing_files.get(member)
        if backing is None:
            disks += [member] if member not in disks else []
            continue
        below = device_stack(backing, host)
        loop = LoopFacts(member, backing, sysfs.loop_direct_io(host, member), tuple(below.members), below.fs_type)
        loops.append(loop)
        disks += [disk for disk in loop.disks if disk not in disks]
    return StorageFacts(tuple(disks), tuple(loops), stack.pool, memory_bytes)


def disk_bytes(disks: tuple[str, ...], host: HostFiles | None = None) -> int | None:
    """Bytes read plus written so far by `disks` (/proc/diskstats); None when unreadable."""
    try:
        counters = parse_diskstats((host or HostFiles()).read_text("/proc/diskstats"))
    except OSError:
        return None
    found = [counters[disk] for disk in disks if disk in counters]
    return sum((c.rd_sectors + c.wr_sectors) * SECTOR for c in found)


def moved_bytes(figures: Mapping[str, float]) -> float | None:
    """Bytes a phase's workload read and wrote, from its figures: S3's `bytes`; fio's read and
    write rates times the measured runtime; else the effective rate (small files) times it."""
    if figures.get("bytes"):
        return float(figures["bytes"])
    runtime = figures.get("runtime")
    if not runtime:
        return None
    rates = [figures[name] for name in ("read_bw", "write_bw") if name in figures]
    if rates:
        return float(sum(rates)) * runtime
    return float(figures["effective_bw"]) * runtime if "effective_bw" in figures else None


@dataclass(frozen=True)
class CacheCheck:
    seen_fraction: float         # of the bytes moved, the share the disks saw
    reason: str | None           # why the rest did not reach them; None: not cached

    @property
    def cached(self) -> bool:
        return self.reason is not None


def _cause(facts: StorageFacts, buffered: bool | None) -> str:
    for loop in facts.cached_loops:
        if not loop.disks:
            return (f"memory: {loop.backing_file}, the file behind {loop.device}, is on "
                    f"{loop.backing_fs or 'a filesystem without a disk'}")
        return f"the host's page cache of {loop.backing_file}, the file behind {loop.device} (no direct I/O)"
    if buffered:
        return "the page cache (buffered I/O)"
    if buffered is None:   # another program (an S3 server) did the I/O, its own way
        return "the page cache of the server that wrote or read them, or a layer above the disks"
    if facts.pool:
        return f"ZFS's ARC of pool {facts.pool}"
    return ("a layer above the disks (dm-cache or bcache, blocks never written of a thin or sparse volume, "
            "or data the filesystem compressed)")


def judge(moved: float | None, seen: int | None, facts: StorageFacts, buffered: bool | None) -> CacheCheck | None:
    """`cached` when the disks saw under half of what the workload moved; None when either is
    unknown. buffered: the workload's I/O went through the page cache; None: a server's did."""
    if moved is None or moved <= 0 or seen is None or (not facts.disks and not facts.loops):
        return None
    fraction = seen / moved
    if fraction >= CACHED_BELOW:
        return CacheCheck(fraction, None)
    share = f"{fraction:.0%}" if fraction >= 0.01 else "under 1%"
    disks = f" ({', '.join(facts.disks)})" if 0 < len(facts.disks) <= 4 else ""
    return CacheCheck(fraction, f"the disks{disks} saw {share} of the {units.format_size(moved)} moved: "
                                f"served by {_cause(facts, buffered)}")


def pre_run_caution(file_size: int, buffered: bool, facts: StorageFacts) -> str | None:
    """One line before the run when the test file fits in the RAM that can cache it, with the fix."""
    memory = facts.memory_bytes
    if not memory or file_size >= RAM_FACTOR * memory:
        return None
    fix = (f"use a --size of at least {units.format_size(RAM_FACTOR * memory)} "
           f"(twice the {units.format_size(memory)} of RAM)")
    for loop in facts.cached_loops:
        return (f"the test file ({units.format_size(file_size)}) fits in the page cache that holds {loop.backing_file}, "
                f"the file behind {loop.device}: reads may come from memory; {fix}, or attach it with "
                "losetup --direct-io=on")
    if buffered:
        return (f"the test file ({units.format_size(file_size)}) fits in the page cache (buffered I/O): reads may "
                f"come from memory; {fix}")
    return None
