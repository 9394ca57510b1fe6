"""How long redundancy stays reduced after one disk fails: a rebuild onto one replacement
disk (classic RAID, raidz, btrfs, MinIO healing) against a rebuild into dRAID's distributed
spare space (field note D chose dRAID because distributed spares rebuild using every disk).

The model, and its one assumption: during a rebuild each disk reads or writes at most
`rate` bytes/s (the per-disk rebuild rate: measured, or a controller / md limit), and
nothing else (CPU, bus, backup I/O competing with the rebuild) is the bottleneck.

Classic: the failed disk's data is rebuilt onto one replacement disk. That disk must write
all of it at `rate`; the survivors read in parallel, none more than one disk's worth. So
    time = data on the failed disk / rate.

dRAID with distributed spares: dRAID spreads every redundancy group (d data + p parity) and
the spare space over all c children. Rebuilding a block of the failed disk reads d blocks of
its group (the fewest that can reconstruct it) and writes 1 block into spare space, and these
reads and writes are spread evenly over the c - 1 surviving disks. So
    time = data on the failed disk x (d + 1) / ((c - 1) x rate)
    speed-up over classic = (c - 1) / (d + 1)
If ZFS reads all d + p - 1 surviving columns instead of d, multiply by (d + p) / (d + 1).
Replacing the failed disk later copies the data back at the classic speed, but redundancy is
already whole then; the scrub ZFS starts after a sequential rebuild is not counted.

What is rebuilt: md RAID rebuilds every member in full however empty the array is; ZFS, btrfs
and MinIO rebuild only allocated data, so `used_percent` scales theirs. A dRAID child keeps
s/c of itself as spare space, which holds no data.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from backupbench.errors import InputError
from backupbench.sizing.capacity import (
    ZFS_DEFAULT_DRAID_DATA,
    Capacity,
    Draid,
    LayoutSpec,
    checked_draid,
    layout_family,
    resolve_draid,
    usable_capacity,
)
from backupbench.sizing.percent import percent_of

# md caps resync/recovery per device at /proc/sys/dev/raid/speed_limit_max, in KiB/s
# (Documentation/admin-guide/md.rst); the kernel default is 200,000.
MD_SPEED_LIMIT_MAX = 200_000 * 1024


@dataclass(frozen=True)
class RebuildTime:
    label: str
    seconds: float


@dataclass(frozen=True)
class RebuildEstimate:
    layout: str
    capacity: Capacity
    failed_disk_data: int  # bytes to reconstruct
    rate: int  # bytes/s per disk
    classic: RebuildTime
    distributed: RebuildTime | None  # None: no distributed spares to compare with
    draid: str | None  # the dRAID vdev `distributed` describes (the layout, or one to compare with)
    failures_while_rebuilding: int  # further failures survivable before the rebuild ends
    notes: tuple[str, ...] = ()

    @property
    def speedup(self) -> float | None:
        if self.distributed is None or not self.distributed.seconds:
            return None
        return self.classic.seconds / self.distributed.seconds

    def as_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["capacity"] = self.capacity.as_dict()
        data["notes"] = list(self.notes)
        data["speedup"] = self.speedup
        return data


def classic_seconds(data: int, rate: int) -> float:
    """One replacement disk writes everything: data / rate."""
    return data / rate


def distributed_seconds(data: int, rate: int, draid: Draid) -> float:
    """dRAID distributed spare: data x (d + 1) I/O shared by c - 1 surviving disks."""
    return data * (draid.data + 1) / ((draid.children - 1) * rate)


def _comparison_draid(spec: LayoutSpec, tolerated: int) -> Draid | None:
    """dRAID over the same disks with the layout's parity (1 to 3), to show the difference."""
    spares = 1 if spec.draid_spares is None else spec.draid_spares
    if spares == 0:
        return None
    parity = min(max(tolerated, 1), 3)
    data = spec.draid_data if spec.draid_data is not None else min(ZFS_DEFAULT_DRAID_DATA, spec.disks - spares - parity)
    draid = Draid(parity, data, spec.disks, spares)
    if spec.draid_data is not None or spec.draid_spares is not None:
        return checked_draid(draid)  # the user chose it: say why it does not fit
    try:
        return checked_draid(draid)
    except InputError:
        return None  # too few disks for a dRAID of the default shape: no comparison


def rebuild_time(spec: LayoutSpec, rate: int, used_percent: float = 100.0) -> RebuildEstimate:
    """Rebuild time of `spec` after one disk fails, classic and distributed (see the module doc).

    For a layout other than dRAID, `spec.draid_data` / `spec.draid_spares` choose the dRAID it
    is compared with [default: the layout's parity, zpool's default d, 1 spare]."""
    if rate <= 0:
        raise InputError("--rebuild-rate must be above 0", "give it per disk, e.g. 100MB/s")
    if not 0 < used_percent <= 100:
        raise InputError(f"--used must be above 0% and at most 100%, not {used_percent:g}%")
    family = layout_family(spec.layout)
    layout_spec = spec if family == "draid" else dataclasses.replace(spec, draid_data=None, draid_spares=None)
    cap = usable_capacity(layout_spec)
    if cap.failures_tolerated == 0:
        raise InputError(f"{cap.layout} has no redundancy: there is nothing to rebuild, a failed disk loses data",
                         "choose a layout with redundancy")
    notes: list[str] = []
    if family == "md":
        per_disk = min(spec.disk_sizes)
        if used_percent != 100:
            notes.append("md rebuilds every member in full, however full the array is: --used is ignored")
        if rate > MD_SPEED_LIMIT_MAX:
            notes.append("md caps recovery at /proc/sys/dev/raid/speed_limit_max (default 200,000 KiB/s "
                         "per device): raise it to reach this rate")
    else:
        per_disk = min(spec.disk_sizes) if family in ("raidz", "draid") else max(spec.disk_sizes)
        per_disk = percent_of(per_disk, used_percent)
    own = resolve_draid(spec) if family == "draid" else None
    if own is not None:
        # A dRAID child keeps s/c of itself as distributed spare space, empty until a rebuild.
        per_disk = -(-per_disk * (own.children - own.spares) // own.children)
    compare = own if own is not None else _comparison_draid(spec, cap.failures_tolerated)
    distributed = None
    if compare is not None and compare.spares > 0:
        if own is not None:
            label, draid_disk = "distributed spare", per_disk
        else:
            # The same disks as dRAID would hold a little less each: s/c of every child is spare space.
            label = f"distributed spare, if the disks were {compare.notation}"
            draid_disk = -(-per_disk * (compare.children - compare.spares) // compare.children)
        distributed = RebuildTime(label, distributed_seconds(draid_disk, rate, compare))
    elif own is not None:
        notes.append("no distributed spares (s = 0): the rebuild waits for a replacement disk and runs at the "
                     "classic speed")
    if own is not None and own.spares > 0:
        classic_label = "replacement disk afterwards (redundancy already whole)"
    else:
        classic_label = "one replacement disk"
    classic = RebuildTime(classic_label, classic_seconds(per_disk, rate))
    return RebuildEstimate(
        layout=cap.layout, capacity=cap, failed_disk_data=per_disk, rate=rate, classic=classic,
        distributed=distributed, draid=compare.notation if distributed is not None and compare else None,
        failures_while_rebuilding=cap.failures_tolerated - 1, notes=tuple(notes),
    )
