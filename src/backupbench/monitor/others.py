"""What processes other than the run's own did while a phase ran: the CPU they took and the
bytes they read and wrote. A phase measured beside a backup job, an updatedb or a compile is
not a figure to decide with, and the monitor's %util cannot tell whose I/O it saw.

Two snapshots, at the phase's start and end (no thread: /proc holds cumulative counters):
- CPU: every busy tick of the machine's processes (/proc/stat's user, nice and system) less the
  run's own and the kernel's threads'. The run's own are this process's utime + stime + cutime +
  cstime (a reaped child's ticks, fio's, land in cutime) and those of its live descendants: a
  child alive at the start and reaped by the end is counted once, its ticks moving from
  "descendant" to "cutime". What is left is other processes', those that started and ended
  within the phase included. Kernel threads (kthreadd's children), interrupts and steal count as
  no one's, as writeback does for I/O: they are mostly the storage serving the run itself (btrfs
  verifying checksums in its endio workers, ZFS's z_rd_int and txg_sync, a lab guest's 9p flush),
  which flagged half of a lab run's phases "disturbed" at 0.5 cores.
- I/O: the bytes other processes read from and wrote to storage (/proc/<pid>/io read_bytes,
  write_bytes: what reached a block device, not the page cache), summed over the processes
  seen at both ends (one that lived only inside the phase is missed: its bytes show only in
  the disks' counters). Kernel threads (writeback) count as no one's.
- On the target: with the disks under the target known, the other processes' share of their
  traffic is what the disks moved less what the run's own processes sent to storage (this
  process's read_bytes + write_bytes, a reaped child's, fio's, included, and its live
  descendants'): I/O elsewhere on the machine does not disturb the target's figures. Both are
  read at the same two moments (the disks' /proc/diskstats beside the processes): the monitor's
  mean rate leaves the ramp out and covers only the seconds fio moved data, so set against the
  run's bytes over the whole phase it read a restore at 187 MiB/s as 45 MiB/s of "others" in the
  lab, where fio takes seconds to start.
- Who: the few other processes that took the most, by name, for the phase's note.
Reading /proc/<pid>/io of another user's process needs root, as the run's own commands do;
what cannot be read is left out and the result says how many were.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable

from backupbench.hostfiles import HostFiles
from backupbench.monitor.procfs import parse_proc_stat

# A phase is disturbed when other processes took more than this share of one core on average,
# or moved more than this many bytes a second (and more than this share of what its disks did).
CPU_CORES_LIMIT = 0.25
IO_BPS_LIMIT = 4 * 2**20
IO_SHARE_LIMIT = 0.10
TOP = 3
KTHREADD = 2   # the kernel threads' parent


@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    name: str
    ticks: int          # utime + stime
    child_ticks: int    # cutime + cstime: reaped children's
    io_bytes: int | None  # read_bytes + write_bytes; None: not readable


@dataclass(frozen=True)
class Snapshot:
    at: float
    busy_ticks: int
    processes: dict[int, Process] = field(default_factory=dict)
    disk_bytes: int | None = None   # what the target's disks read and wrote so far; None: unknown


@dataclass(frozen=True)
class Disturbance:
    """Other processes over a phase: CPU in cores (1.0 = one core busy), I/O in B/s."""

    seconds: float
    cpu_cores: float
    io_bps: float
    top: tuple[tuple[str, float, float], ...]   # (name, cores, B/s), most first
    unreadable: int = 0
    own_io_bps: float = 0.0   # what the run's own processes sent to storage
    disks_bps: float | None = None   # what the target's disks moved over the same seconds

    def figures(self) -> dict[str, float]:
        return {"others_cpu_cores": self.cpu_cores, "others_io_bps": self.io_bps}

    def on_target(self, disks_bps: float | None) -> float:
        """Other processes' traffic on the target's disks: what the disks moved less the run's own,
        when the disks are known; else what other processes sent to storage anywhere."""
        return max(0.0, disks_bps - self.own_io_bps) if disks_bps is not None else self.io_bps

    def reason(self, disks_bps: float | None) -> str | None:
        """Why the phase is disturbed, in words; None when it is not."""
        others = self.on_target(disks_bps)
        busy_io = others > IO_BPS_LIMIT and (not disks_bps or others > IO_SHARE_LIMIT * disks_bps)
        if self.cpu_cores <= CPU_CORES_LIMIT and not busy_io:
            return None
        parts = []
        if self.cpu_cores > CPU_CORES_LIMIT:
            parts.append(f"other processes took {self.cpu_cores:.2f} cores")
        if busy_io:
            where = " on the target's disks" if disks_bps is not None else ""
            parts.append(f"moved {others / 2**20:,.1f} MiB/s{where}")
        who = ", ".join(f"{name} ({cores:.2f} cores, {bps / 2**20:,.1f} MiB/s)" for name, cores, bps in self.top)
        return " and ".join(parts) + (f": {who}" if who else "")


def _parse_stat(pid: int, text: str) -> tuple[str, int, int, int]:
    """(name, ppid, utime + stime, cutime + cstime) from /proc/<pid>/stat (the name may hold spaces)."""
    name = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return name, int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def _io_bytes(text: str | None) -> int | None:
    if text is None:
        return None
    values = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    try:
        return int(values["read_bytes"]) + int(values["write_bytes"])
    except (KeyError, ValueError):
        return None


def read(host: HostFiles | None = None, clock: Callable[[], float] = time.monotonic,
         disk_bytes: Callable[[], int | None] | None = None) -> Snapshot:
    host = host or HostFiles()
    disks = disk_bytes() if disk_bytes is not None else None
    cpu = parse_proc_stat(host.read_text("/proc/stat"))
    busy = cpu.user + cpu.nice + cpu.system
    processes = {}
    for entry in host.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = host.read_value(f"/proc/{entry}/stat")
        if stat is None:
            continue  # gone between the listing and the read
        try:
            name, ppid, ticks, child_ticks = _parse_stat(int(entry), stat)
        except (ValueError, IndexError):
            continue
        processes[int(entry)] = Process(int(entry), ppid, name, ticks, child_ticks,
                                        _io_bytes(host.read_value(f"/proc/{entry}/io")))
    return Snapshot(clock(), busy, processes, disks)


def own(processes: dict[int, Process], root: int) -> set[int]:
    """`root` and every live descendant of it."""
    children: dict[int, list[int]] = {}
    for process in processes.values():
        children.setdefault(process.ppid, []).append(process.pid)
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


def _own_ticks(snapshot: Snapshot, root: int) -> int:
    mine = own(snapshot.processes, root)
    head = snapshot.processes.get(root)
    return (head.child_ticks if head else 0) + sum(snapshot.processes[pid].ticks for pid in mine
                                                    if pid in snapshot.processes)


def between(start: Snapshot, end: Snapshot, root: int | None = None, ticks_per_s: float | None = None) -> Disturbance:
    """Other processes' CPU and I/O from `start` to `end`; `root` the run's process (this one)."""
    root = root if root is not None else os.getpid()
    hz = ticks_per_s or float(os.sysconf("SC_CLK_TCK"))
    seconds = max(end.at - start.at, 1e-9)
    others_ticks = max(0, (end.busy_ticks - start.busy_ticks) - (_own_ticks(end, root) - _own_ticks(start, root))
                       - _kernel_ticks(start, end))
    mine = own(start.processes, root) | own(end.processes, root)
    per_process: list[tuple[str, float, float]] = []
    io_total, unreadable = 0, 0
    for pid, after in end.processes.items():
        before = start.processes.get(pid)
        if pid in mine or before is None or before.name != after.name or pid == KTHREADD or after.ppid == KTHREADD:
            continue
        if after.io_bytes is None or before.io_bytes is None:
            unreadable += 1
            moved = 0
        else:
            moved = max(0, after.io_bytes - before.io_bytes)
        io_total += moved
        cores = max(0, after.ticks - before.ticks) / hz / seconds
        if cores > 0.01 or moved:
            per_process.append((after.name, cores, moved / seconds))
    top = tuple(sorted(per_process, key=lambda p: (p[1] * IO_BPS_LIMIT + p[2]), reverse=True)[:TOP])
    own_io = max(0, _own_io(end, root) - _own_io(start, root))
    disks = (max(0, end.disk_bytes - start.disk_bytes) / seconds
             if start.disk_bytes is not None and end.disk_bytes is not None else None)
    return Disturbance(seconds, others_ticks / hz / seconds, io_total / seconds, top, unreadable, own_io / seconds,
                       disks)


def _kernel_ticks(start: Snapshot, end: Snapshot) -> int:
    """The ticks kernel threads (kthreadd and its children) took between the two snapshots. Names
    are not compared: a kworker's says what it is working on at the moment (kworker/u4:0-btrfs-endio),
    and one that was not there at the start was started inside the phase (a workqueue grows its
    workers when work arrives), so all its ticks count."""
    ticks = 0
    for pid, after in end.processes.items():
        if pid == KTHREADD or after.ppid == KTHREADD:
            before = start.processes.get(pid)
            ticks += max(0, after.ticks - (before.ticks if before is not None else 0))
    return ticks


def _own_io(snapshot: Snapshot, root: int) -> int:
    """The run's own bytes to storage: its process's counter (reaped children's added by the
    kernel) and its live descendants'."""
    return sum(snapshot.processes[pid].io_bytes or 0 for pid in own(snapshot.processes, root)
               if pid in snapshot.processes)


class OthersWatch:
    """`start()` at a phase's start, `stop()` at its end: the Disturbance over it. `disk_bytes`:
    the target's disks' bytes so far, read beside each snapshot."""

    def __init__(self, host: HostFiles | None = None, root: int | None = None,
                 disk_bytes: Callable[[], int | None] | None = None):
        self._host = host or HostFiles()
        self._root = root
        self._disk_bytes = disk_bytes
        self._start: Snapshot | None = None

    def start(self) -> "OthersWatch":
        self._start = read(self._host, disk_bytes=self._disk_bytes)
        return self

    def stop(self) -> Disturbance | None:
        start, self._start = self._start, None
        if start is None:
            return None
        return between(start, read(self._host, disk_bytes=self._disk_bytes), self._root)
