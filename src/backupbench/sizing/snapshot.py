"""Size of a classic (copy-on-write) LVM snapshot, and what it costs, by field note E's rule.

The rule, as the note gives it:
    base   = expected change x factor   (factor 1.5 to 2.0)
    margin = base x margin factor       (1.3 to 1.5)
    size   = base + margin
Both ends are computed, low (smallest factors) and high (largest). "Expected change" is the
data written to the origin over the snapshot's whole life: a classic snapshot copies each
origin chunk the first time it is written, so change is counted once per chunk and can never
exceed the origin. Each classic snapshot has its own copy-on-write area, so N snapshots need N
times the size (field note E: the older of two snapshots filled up faster).

Cost: the first write to a chunk after a snapshot is read old + write it to the snapshot's
CoW area + write new; with N classic snapshots that is 1 + 2N I/Os (3 with one, 5 with two),
so first writes run at about 1 / (1 + 2N) of the speed. That is the worst case (every write a
first write); rewrites of an already copied chunk pay nothing (field note E measured 0.46x of
the MB/s with one snapshot, 0.35x with two). Thin snapshots follow other rules.

Alerts the note suggests while snapshots exist: I/O latency above 100 ms, load above 2.0.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

from backupbench.errors import InputError

LATENCY_ALERT_MS = 100.0
LOAD_ALERT = 2.0
FACTORS = (1.5, 2.0)
MARGIN_FACTORS = (1.3, 1.5)
# dm-snapshot's persistent exception store: one 16-byte entry per copied chunk, so one
# metadata chunk per chunk_size/16 data chunks (256 at LVM's default 4 KiB snapshot chunk),
# plus a header chunk.
SNAPSHOT_CHUNK = 4096
EXCEPTIONS_PER_CHUNK = SNAPSHOT_CHUNK // 16


@dataclass(frozen=True)
class SnapshotSize:
    factor: float
    base: int  # bytes
    margin_factor: float
    margin: int  # bytes
    size: int  # bytes, per snapshot
    total: int  # bytes, all snapshots together


@dataclass(frozen=True)
class SnapshotSizing:
    origin: int
    change: int
    snapshots: int
    low: SnapshotSize
    high: SnapshotSize
    full_cover: int  # a classic snapshot this large can never overflow
    first_write_ios: int  # I/Os per first write to a chunk, 1 + 2N
    write_speed_factor: float  # 1 / (1 + 2N)
    latency_alert_ms: float = LATENCY_ALERT_MS
    load_alert: float = LOAD_ALERT
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "notes": list(self.notes)}


def _times(value: int, factor: float) -> int:
    """value x factor, exact for decimal factors, rounded up to a whole byte."""
    return math.ceil(value * Fraction(str(factor)))


def first_write_ios(snapshots: int) -> int:
    return 1 + 2 * snapshots


def full_cover(origin: int) -> int:
    """Size of a classic snapshot that holds a copy of every origin chunk plus its exception
    table, so it cannot overflow (at the default 4 KiB chunk)."""
    chunks = -(-origin // SNAPSHOT_CHUNK)
    return (chunks + -(-chunks // EXCEPTIONS_PER_CHUNK) + 1) * SNAPSHOT_CHUNK


def size_at(change: int, factor: float, margin_factor: float, snapshots: int) -> SnapshotSize:
    base = _times(change, factor)
    margin = _times(base, margin_factor)
    return SnapshotSize(factor, base, margin_factor, margin, base + margin, (base + margin) * snapshots)


def snapshot_sizing(origin: int, change: int, snapshots: int = 1,
                    factors: tuple[float, float] = FACTORS,
                    margin_factors: tuple[float, float] = MARGIN_FACTORS) -> SnapshotSizing:
    """Field note E's rule for `snapshots` classic snapshots of an `origin`-byte LV that will
    see `change` bytes written (see the module doc)."""
    if origin <= 0:
        raise InputError("--origin must be above 0")
    if not 0 < change <= origin:
        raise InputError(f"--change must be above 0 and at most the origin ({origin:,} bytes), not {change:,}",
                         "a snapshot copies each origin chunk at most once")
    if snapshots < 1:
        raise InputError("--snapshots must be at least 1")
    for (low, high), flag in ((factors, "factor"), (margin_factors, "margin")):
        if not 0 < low <= high:
            raise InputError(f"--{flag}-low ({low:g}) must be above 0 and at most --{flag}-high ({high:g})")
    low = size_at(change, factors[0], margin_factors[0], snapshots)
    high = size_at(change, factors[1], margin_factors[1], snapshots)
    cover = full_cover(origin)
    notes = ["watch each snapshot's Data% (lvs): at 100% a classic snapshot turns Invalid (attr swi-I-s---) "
             "and is lost"]
    if high.size > cover:
        notes.append(f"a classic snapshot of this origin never needs more than {cover:,} bytes (every chunk "
                     "copied, plus its exception table): sizes above that are never used")
    ios = first_write_ios(snapshots)
    return SnapshotSizing(origin, change, snapshots, low, high, cover, ios, 1 / ios, notes=tuple(notes))
