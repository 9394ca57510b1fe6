"""ZFS, seen from outside: a pool's member disks and its own figures per phase.

A pool's disks are not holders of anything in sysfs (ZFS opens them directly), so the
monitor asks `zpool list -vHP POOL` for the leaf vdevs' paths and walks from those. Per
phase, ZFS's own figures: the ARC hit ratio over the phase (the hits and misses counters of
/proc/spl/kstat/zfs/arcstats, before and after) and how full the pool is at its end
(`zpool list -Hp`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from backupbench import process
from backupbench.errors import BackupbenchError
from backupbench.hostfiles import HostFiles

ARCSTATS = "/proc/spl/kstat/zfs/arcstats"
FIGURE_PREFIX = "zfs."

Runner = Callable[[list[str]], str]


def zpool_output(argv: list[str]) -> str:
    return process.run(argv, timeout=30).stdout


def pool_of(fs_type: str, source: str) -> str | None:
    """The pool of a mounted ZFS dataset ('tank/backups' -> 'tank'); None for other filesystems."""
    if fs_type != "zfs":
        return None
    return source.split("/", 1)[0] or None


def leaf_paths(zpool_list_vhp: str) -> list[str]:
    """The device paths of a pool's leaf vdevs from `zpool list -vHP`: data, special, log
    and cache devices alike (rows whose name is a path; group rows and dRAID's distributed
    spares are not devices)."""
    paths = []
    for line in zpool_list_vhp.splitlines():
        name = line.strip().split("\t", 1)[0].strip()
        if name.startswith("/") and name not in paths:
            paths.append(name)
    return paths


def pool_vdevs(pool: str, run: Runner = zpool_output) -> list[str]:
    return leaf_paths(run(["zpool", "list", "-vHP", pool]))


def parse_kstat(text: str) -> dict[str, int]:
    """name -> value of an SPL kstat file (two header lines, then `name type data`)."""
    values = {}
    for line in text.splitlines()[2:]:
        fields = line.split()
        if len(fields) == 3 and fields[2].lstrip("-").isdigit():
            values[fields[0]] = int(fields[2])
    return values


@dataclass(frozen=True)
class PoolSpace:
    size: int        # bytes
    allocated: int   # bytes

    @property
    def used_percent(self) -> float:
        return 100.0 * self.allocated / self.size if self.size else 0.0


def parse_pool_space(zpool_list_hp: str) -> PoolSpace:
    """`zpool list -Hp -o name,size,allocated,capacity POOL` -> sizes in bytes."""
    fields = zpool_list_hp.strip().split("\t")
    if len(fields) < 3 or not fields[1].isdigit() or not fields[2].isdigit():
        raise ValueError(f"unexpected zpool list output: {zpool_list_hp.strip()!r}")
    return PoolSpace(int(fields[1]), int(fields[2]))


def hit_percent(before: dict[str, int], after: dict[str, int]) -> float | None:
    """ARC hits over all ARC lookups between two arcstats readings; None if none happened."""
    hits = after.get("hits", 0) - before.get("hits", 0)
    misses = after.get("misses", 0) - before.get("misses", 0)
    return 100.0 * hits / (hits + misses) if hits + misses > 0 else None


class PoolGauge:
    """ZFS's figures for one phase on one pool: start() before, figures() after."""

    UNITS = {"arc_hit": "%", "pool_used": "%", "pool_allocated": "B"}

    def __init__(self, pool: str, host: HostFiles | None = None, run: Runner = zpool_output):
        self.pool = pool
        self.host = host or HostFiles()
        self.run = run
        self._before: dict[str, int] | None = None

    def _arcstats(self) -> dict[str, int] | None:
        try:
            return parse_kstat(self.host.read_text(ARCSTATS))
        except OSError:
            return None

    def start(self) -> "PoolGauge":
        self._before = self._arcstats()
        return self

    def figures(self) -> tuple[dict[str, float], list[str]]:
        """(figures named zfs.*, errors): what could not be read is left out and said why."""
        figures: dict[str, float] = {}
        errors: list[str] = []
        after = self._arcstats()
        if self._before is not None and after is not None:
            ratio = hit_percent(self._before, after)
            if ratio is not None:
                figures[FIGURE_PREFIX + "arc_hit"] = ratio
        elif after is None:
            errors.append(f"cannot read {ARCSTATS}")
        try:
            space = parse_pool_space(self.run(["zpool", "list", "-Hp", "-o", "name,size,allocated,capacity",
                                               self.pool]))
            figures[FIGURE_PREFIX + "pool_used"] = space.used_percent
            figures[FIGURE_PREFIX + "pool_allocated"] = float(space.allocated)
        except BackupbenchError as exc:
            errors.append(f"pool {self.pool}: {exc.message}")
        except ValueError as exc:
            errors.append(f"pool {self.pool}: {exc}")
        return figures, errors

    @classmethod
    def unit(cls, figure: str) -> str:
        return cls.UNITS.get(figure.removeprefix(FIGURE_PREFIX), "")
