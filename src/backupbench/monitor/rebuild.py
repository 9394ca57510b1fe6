"""An array's own rebuild state, read once a second: md from sysfs (sync_action,
sync_completed in 512-byte sectors, sync_speed in KiB/s, degraded), ZFS from
`zpool status -j --json-int` (a healing resilver in scan_stats, a dRAID sequential rebuild in
scan_stats.rebuild_stats). The watch keeps every sample with the phase it fell in, for the
timeline, and writes them to a CSV as they come."""

from __future__ import annotations

import csv
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from backupbench.errors import BackupbenchError
from backupbench.hostfiles import HostFiles
from backupbench.monitor.zfs import zpool_output

SECTOR = 512


@dataclass(frozen=True)
class RebuildState:
    rebuilding: bool          # a rebuild (recovery, resilver, sequential rebuild) is under way
    degraded: bool            # redundancy is short (a member missing or not yet rebuilt)
    percent: float | None     # of the rebuild, when one is under way or just ended
    done_bytes: int | None    # rebuilt so far (md: per member; ZFS: resilvered/rebuilt bytes)
    speed: float | None       # bytes/s the array reports (md: per device), None if it says none
    finished: bool = False    # the rebuild asked for has ended (not: has not begun yet)


class StateReader(Protocol):
    def __call__(self) -> RebuildState: ...


def md_state(values: dict[str, str | None]) -> RebuildState:
    """From an md array's sysfs attributes (md/sync_action, sync_completed, sync_speed, degraded)."""
    action = values.get("sync_action") or "idle"
    completed = values.get("sync_completed") or "none"
    done = total = None
    if "/" in completed:
        left, right = (part.strip() for part in completed.split("/", 1))
        if left.isdigit() and right.isdigit():
            done, total = int(left), int(right)
    speed = values.get("sync_speed") or "none"
    degraded = (values.get("degraded") or "0").strip() not in ("0", "")
    rebuilding = action in ("recover", "resync", "repair", "reshape")
    # md starts the recovery a moment after --add: finished only once nothing is short.
    return RebuildState(rebuilding, degraded, 100.0 * done / total if done is not None and total else None,
                        done * SECTOR if done is not None else None,
                        float(speed) * 1024 if speed.isdigit() else None, finished=not rebuilding and not degraded)


class MdReader:
    ATTRIBUTES = ("sync_action", "sync_completed", "sync_speed", "degraded")

    def __init__(self, md_device: str, host: HostFiles | None = None):
        self.host = host or HostFiles()
        self.md_device = md_device

    def _sysfs(self) -> str:
        # /dev/md/NAME is a link to /dev/mdN, whose attributes are in /sys/block/mdN/md.
        kernel_name = os.path.basename(os.path.realpath(self.host.path(self.md_device)))
        return f"/sys/block/{kernel_name}/md"

    def __call__(self) -> RebuildState:
        folder = self._sysfs()
        return md_state({name: self.host.read_value(f"{folder}/{name}") for name in self.ATTRIBUTES})


def zpool_state(status: dict, pool: str, since: float = 0.0) -> RebuildState:
    """From `zpool status -j --json-int POOL`. A scan that began before `since` (epoch
    seconds) is an earlier one: its figures are not this rebuild's."""
    found = (status.get("pools") or {}).get(pool)
    if found is None:
        raise ValueError(f"zpool status does not list pool {pool}")
    degraded = found.get("state") != "ONLINE"
    scan = found.get("scan_stats") or {}
    sequential = [r for r in (scan.get("rebuild_stats") or {}).values() if r.get("start_time", 0) >= since]
    if sequential:
        to_scan = sum(r.get("to_scan", 0) for r in sequential)
        scanned = sum(r.get("scanned", 0) for r in sequential)
        active = any(r.get("state") == "ACTIVE" for r in sequential)
        elapsed = max(r.get("scan_time", 0) for r in sequential) / 1e9
        rebuilt = sum(r.get("rebuilt", 0) for r in sequential)
        # A completed sequential rebuild may have scanned less than its first estimate.
        percent = 100.0 if not active else 100.0 * min(scanned, to_scan) / to_scan if to_scan else None
        return RebuildState(active, degraded, percent,
                            rebuilt, rebuilt / elapsed if active and elapsed > 0 else None, finished=not active)
    if scan.get("function") != "RESILVER" or scan.get("start_time", 0) < since:
        return RebuildState(False, degraded, None, None, None)
    total = scan.get("to_examine", 0) - scan.get("skipped", 0)
    issued = scan.get("issued", 0)
    active = scan.get("state") == "SCANNING"
    elapsed = (scan.get("end_time") or time.time()) - scan.get("pass_start", scan.get("start_time", 0))
    return RebuildState(active, degraded, 100.0 * min(issued, total) / total if total > 0 else None,
                        scan.get("processed"), issued / elapsed if active and elapsed > 0 else None,
                        finished=scan.get("state") == "FINISHED")


def _zpool_json(pool: str) -> dict:
    return json.loads(zpool_output(["zpool", "status", "-j", "--json-int", pool]))


class ZpoolReader:
    def __init__(self, pool: str, run: Callable[[str], dict] = _zpool_json):
        self.pool = pool
        self.run = run
        self.since = 0.0

    def __call__(self) -> RebuildState:
        return zpool_state(self.run(self.pool), self.pool, self.since)


@dataclass(frozen=True)
class Sample:
    elapsed: float
    phase: str
    state: RebuildState


CSV_FIELDS = ("elapsed_s", "phase", "rebuilding", "degraded", "percent", "done_bytes", "speed_bps")


class RebuildWatch:
    """Samples `read` every `interval` s in a thread, labelled with the current phase."""

    def __init__(self, read: StateReader, csv_path: Path, interval: float = 1.0,
                 on_sample: Callable[[Sample], None] | None = None):
        self.read = read
        self.csv_path = csv_path
        self.interval = interval
        self.phase = "healthy"
        self.on_sample = on_sample
        self.samples: list[Sample] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = 0.0
        self.started_wall = 0.0  # epoch seconds of elapsed 0, to place the phases on the timeline
        self._lock = threading.Lock()  # the thread and a waiting caller both sample

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def start(self) -> "RebuildWatch":
        self._started, self.started_wall = time.monotonic(), time.time()
        self.csv_path.parent.mkdir(parents=True, exist_ok=True)
        with self.csv_path.open("w", newline="") as handle:
            csv.writer(handle).writerow(CSV_FIELDS)
        self._thread = threading.Thread(target=self._loop, name="rebuild-watch", daemon=True)
        self._thread.start()
        return self

    def sample(self) -> Sample | None:
        with self._lock:
            return self._sample()

    def _sample(self) -> Sample | None:
        try:
            state = self.read()
        except (BackupbenchError, OSError, ValueError) as exc:
            message = exc.message if isinstance(exc, BackupbenchError) else str(exc)
            if message not in self.errors:
                self.errors.append(message)
            return None
        found = Sample(round(self.elapsed(), 3), self.phase, state)
        self.samples.append(found)
        with self.csv_path.open("a", newline="") as handle:
            csv.writer(handle).writerow((found.elapsed, found.phase, int(state.rebuilding), int(state.degraded),
                                         "" if state.percent is None else f"{state.percent:.2f}",
                                         "" if state.done_bytes is None else state.done_bytes,
                                         "" if state.speed is None else f"{state.speed:.0f}"))
        if self.on_sample is not None:
            self.on_sample(found)
        return found

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
            self._thread = None


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))
