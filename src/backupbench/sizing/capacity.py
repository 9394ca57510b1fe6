"""Usable capacity and fault tolerance of a disk layout, worked out from the disk sizes alone.

Figures are exact integer bytes of the data area a layout offers, before any filesystem.
Not subtracted anywhere (expect a few percent less in practice): member metadata (md
superblock and bitmap, LVM PV header and extent rounding, ZFS labels and slop space, btrfs
metadata chunks and global reserve, MinIO's xl.meta). Where a layout loses more than that in
ways that depend on the data (ZFS raidz/dRAID allocation padding), the result says so.

"failures_tolerated" is how many disks may fail at once, whichever they are, without losing
data; "failures_best_case" is how many may fail if the failures fall on the luckiest disks
(one per mirror pair, one parity's worth per vdev or erasure set).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from backupbench.errors import InputError

MD_LEVELS = {"raid0": 0, "raid1": 1, "raid5": 5, "raid6": 6, "raid10": 10}
# Same minimum member counts as the mdraid layout of a recipe (recipe/layouts.py, MdRaid).
MD_MIN_DISKS = {"raid0": 2, "raid1": 2, "raid5": 3, "raid6": 4, "raid10": 2}
LVM_KINDS = ("lvm-linear", "lvm-striped")
RAIDZ_PARITY = {"raidz1": 1, "raidz2": 2, "raidz3": 3}
DRAID_PARITY = {"draid1": 1, "draid2": 2, "draid3": 3}
# btrfs data profiles: (copies, parity, fewest devices) as in the kernel's btrfs_raid_array
# (fs/btrfs/volumes.c, Linux >= 5.15). copies > 1: mirrored; parity > 0: striped with parity.
BTRFS_PROFILES = {
    "btrfs-single": (1, 0, 1),
    "btrfs-raid0": (1, 0, 1),
    "btrfs-raid1": (2, 0, 2),
    "btrfs-raid1c3": (3, 0, 3),
    "btrfs-raid1c4": (4, 0, 4),
    "btrfs-raid10": (2, 0, 2),
    "btrfs-raid5": (1, 1, 2),
    "btrfs-raid6": (1, 2, 3),
}
MINIO_EC = "minio-ec"
LAYOUTS = (*MD_LEVELS, *LVM_KINDS, *RAIDZ_PARITY, *DRAID_PARITY, *BTRFS_PROFILES, MINIO_EC)

# zpool's dRAID notation: draid[<parity>][:<data>d][:<children>c][:<spares>s] (zpoolconcepts(7)).
_DRAID_RE = re.compile(r"^draid([123])?((?::\d+[dcs])*)$")
_DRAID_PART = re.compile(r":(\d+)([dcs])")
ZFS_DEFAULT_DRAID_DATA = 8  # zpoolconcepts(7): "Defaults to 8, unless N-P-S is less than 8."

# MinIO erasure coding. Erasure sets hold 2 to 16 drives ("By default, each erasure set can
# contain 2 to 16 drives", https://docs.min.io/community/minio-object-store/operations/concepts/
# erasure-coding.html); MinIO picks the largest set size that divides the drive count
# (cmd/endpoint-ellipses.go, commonSetDriveCount). Default STANDARD parity by set size, from
# https://docs.min.io/community/minio-object-store/reference/minio-server/settings/storage-class.html
# (4-5 drives EC:2, 6-7 EC:3, 8-16 EC:4) and the source it documents,
# internal/config/storageclass/storage-class.go DefaultParityBlocks (1: 0, 2-3: 1, 4-5: 2,
# 6-7: 3, otherwise 4). Releases may change these defaults: --set-size and --parity override.
MINIO_SET_SIZES = range(2, 17)


def minio_default_parity(set_size: int) -> int:
    if set_size <= 1:
        return 0
    if set_size <= 3:
        return 1
    if set_size <= 5:
        return 2
    if set_size <= 7:
        return 3
    return 4


def minio_default_set_size(drives: int) -> int | None:
    """The set size MinIO chooses for one pool of `drives`: all of them up to 16, else the
    largest size from 2 to 16 that divides the count (None: MinIO cannot split it evenly)."""
    if drives <= MINIO_SET_SIZES.stop - 1:
        return drives
    fitting = [size for size in MINIO_SET_SIZES if drives % size == 0]
    return max(fitting) if fitting else None


@dataclass(frozen=True)
class LayoutSpec:
    """A layout as the user describes it. `layout` is one of LAYOUTS or a zpool dRAID spec
    such as 'draid2:3d:45c:2s'; `disk_sizes` holds one size per disk."""

    layout: str
    disk_sizes: tuple[int, ...]
    stripes: int | None = None  # lvm-striped: -i
    vdevs: int | None = None  # raidz: how many raidz vdevs the disks are split into
    draid_data: int | None = None  # dRAID: data disks per redundancy group (d)
    draid_spares: int | None = None  # dRAID: distributed spares (s)
    set_size: int | None = None  # minio-ec: drives per erasure set
    parity: int | None = None  # minio-ec: parity drives per set (EC:N)

    @property
    def disks(self) -> int:
        return len(self.disk_sizes)


@dataclass(frozen=True)
class Draid:
    """A dRAID vdev: parity p, data disks per group d, children c, distributed spares s."""

    parity: int
    data: int
    children: int
    spares: int

    @property
    def notation(self) -> str:
        return f"draid{self.parity}:{self.data}d:{self.children}c:{self.spares}s"


@dataclass(frozen=True)
class Capacity:
    layout: str  # as built, e.g. 'raid6', 'draid2:3d:45c:2s', 'minio-ec EC:4, 3 sets of 15'
    disks: int
    raw: int  # bytes, the sum of the disks
    usable: int  # bytes the layout offers for data
    failures_tolerated: int
    failures_best_case: int
    notes: tuple[str, ...] = ()

    @property
    def efficiency(self) -> float:
        """Usable as a percentage of raw."""
        return 100.0 * self.usable / self.raw if self.raw else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "notes": list(self.notes), "efficiency_percent": round(self.efficiency, 4)}


def is_layout_name(text: str) -> bool:
    return text in LAYOUTS or bool(_DRAID_RE.match(text) and ":" in text)


def layout_family(text: str) -> str:
    """'md', 'lvm', 'raidz', 'draid', 'btrfs' or 'minio' for a layout name or dRAID spec."""
    if text in MD_LEVELS:
        return "md"
    if text in LVM_KINDS:
        return "lvm"
    if text in RAIDZ_PARITY:
        return "raidz"
    if text in BTRFS_PROFILES:
        return "btrfs"
    if text == MINIO_EC:
        return "minio"
    if text.startswith("draid") and _DRAID_RE.match(text):
        return "draid"
    raise InputError(f"unknown layout {text!r}", "use one of " + ", ".join(LAYOUTS)
                     + ", or a zpool dRAID spec such as draid2:3d:45c:2s")


def parse_draid(text: str) -> tuple[int, dict[str, int]]:
    """'draid2:3d:45c:2s' -> (2, {'d': 3, 'c': 45, 's': 2}). Plain 'draid' is parity 1, as zpool has it."""
    match = _DRAID_RE.match(text)
    if not match:
        raise InputError(f"{text!r} is not a dRAID spec",
                         "write it as zpool does: draid<parity>[:<data>d][:<children>c][:<spares>s], "
                         "e.g. draid2:3d:45c:2s")
    parts: dict[str, int] = {}
    for number, letter in _DRAID_PART.findall(match.group(2)):
        if letter in parts:
            raise InputError(f"{text!r} gives '{letter}' twice")
        parts[letter] = int(number)
    return int(match.group(1) or 1), parts


def resolve_draid(spec: LayoutSpec) -> Draid:
    """The dRAID vdev a dRAID layout spec describes, with zpool's defaults filled in and checked."""
    parity, parts = parse_draid(spec.layout)
    for letter, given, flag in (("d", spec.draid_data, "--draid-data"), ("s", spec.draid_spares, "--draid-spares")):
        if given is not None and letter in parts and parts[letter] != given:
            raise InputError(f"{flag} {given} contradicts {spec.layout!r}", "give it in one place only")
    children = parts.get("c", spec.disks)
    if children != spec.disks:
        raise InputError(f"{spec.layout!r} has {children} children but {spec.disks} disks were given",
                         "dRAID's children are the disks: make --disks match")
    spares = parts.get("s", spec.draid_spares if spec.draid_spares is not None else 0)
    data = parts.get("d", spec.draid_data if spec.draid_data is not None
                     else min(ZFS_DEFAULT_DRAID_DATA, children - spares - parity))
    return checked_draid(Draid(parity, data, children, spares))


def checked_draid(draid: Draid) -> Draid:
    if draid.data < 1:
        raise InputError(f"dRAID{draid.parity} with {draid.spares} spare(s) needs more than {draid.children} disks",
                         "add disks or use fewer spares")
    if draid.data + draid.parity > draid.children - draid.spares:
        raise InputError(
            f"a dRAID redundancy group of {draid.data} data + {draid.parity} parity does not fit in "
            f"{draid.children} children minus {draid.spares} spare(s)",
            "lower --draid-data or --draid-spares, or add disks")
    return draid


def _uneven_note(sizes: Sequence[int], used_per_disk: int) -> tuple[str, ...]:
    unused = sum(sizes) - used_per_disk * len(sizes)
    if unused <= 0:
        return ()
    return (f"disks differ in size: each contributes only the smallest one's size; {unused:,} bytes unused",)


def _need(count: int, at_least: int, layout: str) -> None:
    if count < at_least:
        raise InputError(f"{layout} needs at least {at_least} disks, got {count}")


def md_raid(level: str, sizes: Sequence[int]) -> Capacity:
    """md (or hardware) RAID. RAID 0 concatenates unequal members in zones, so it uses all
    of them; the others use the smallest member's size on every member. RAID 10 is md's
    default near=2 layout (two copies of each chunk, any member count from 2)."""
    n = len(sizes)
    _need(n, MD_MIN_DISKS[level], level)
    smallest = min(sizes)
    raw = sum(sizes)
    if level == "raid0":
        return Capacity(level, n, raw, raw, 0, 0, ("no redundancy: any failed disk loses the array",))
    if level == "raid1":
        return Capacity(level, n, raw, smallest, n - 1, n - 1, _uneven_note(sizes, smallest))
    if level == "raid10":
        notes = ("2 copies of each chunk: a second failure is survived only if it hits another pair",)
        return Capacity(level, n, raw, n * smallest // 2, 1, n // 2, notes + _uneven_note(sizes, smallest))
    parity = 1 if level == "raid5" else 2
    return Capacity(level, n, raw, (n - parity) * smallest, parity, parity, _uneven_note(sizes, smallest))


def lvm(kind: str, sizes: Sequence[int], stripes: int | None = None) -> Capacity:
    """LVM over the disks as PVs. Linear: the sum, PVs may differ. Striped (-i stripes): one
    stripe set, so stripes x the smallest PV; space beyond that is left over."""
    n = len(sizes)
    raw = sum(sizes)
    notes = ("no redundancy of its own: any failed PV loses the LV (build it on RAID LUNs, field note A)",)
    if kind == "lvm-linear":
        return Capacity(kind, n, raw, raw, 0, 0, notes)
    _need(n, 2, kind)
    stripes = n if stripes is None else stripes
    if not 2 <= stripes <= n:
        raise InputError(f"--stripes must be from 2 to the number of disks ({n}), not {stripes}")
    usable = stripes * min(sizes)
    if raw > usable:
        notes += (f"{raw - usable:,} bytes left over: a stripe set takes the smallest PV's size from "
                  f"each of {stripes} PVs",)
    return Capacity(f"{kind} (-i {stripes})", n, raw, usable, 0, 0, notes)


def raidz(kind: str, sizes: Sequence[int], vdevs: int | None = None) -> Capacity:
    """ZFS raidz1/2/3: the disks split evenly into `vdevs` raidz vdevs; each stores
    (width - parity) disks' worth of data. Approximate: raidz also loses space to allocation
    padding and per-block parity (more with small records and awkward widths) and ZFS keeps
    1/32 of the pool as slop space; none of that is subtracted."""
    parity = RAIDZ_PARITY[kind]
    n = len(sizes)
    vdevs = 1 if vdevs is None else vdevs
    if vdevs < 1 or n % vdevs:
        raise InputError(f"{n} disks do not split evenly into {vdevs} raidz vdevs", "give --vdevs a divisor of --disks")
    width = n // vdevs
    _need(width, parity + 1, f"each {kind} vdev")
    smallest = min(sizes)
    notes = ("approximate: raidz allocation padding, per-block parity of small records and ZFS slop space "
             "(1/32) are not subtracted",) + _uneven_note(sizes, smallest)
    label = kind if vdevs == 1 else f"{vdevs} x {kind} of {width}"
    return Capacity(label, n, sum(sizes), vdevs * (width - parity) * smallest, parity, parity * vdevs, notes)


def draid(draid: Draid, sizes: Sequence[int]) -> Capacity:
    """ZFS dRAID: usable = (children - spares) x d / (d + p) x disk size. The distributed
    spares hold no data; every redundancy group stores d data + p parity sectors.
    Approximate: dRAID's stripes have a fixed width, so blocks smaller than d sectors are
    padded to a full stripe; that padding (large for small records) is not subtracted."""
    smallest = min(sizes)
    usable = (draid.children - draid.spares) * draid.data * smallest // (draid.data + draid.parity)
    notes = [f"approximate: fixed-width stripes pad small blocks to {draid.data} data sectors; "
             "padding and ZFS slop space (1/32) are not subtracted"]
    if draid.spares:
        notes.append(f"after each distributed-spare rebuild, one more disk may fail (up to {draid.spares} "
                     "more in turn, until the spares are used)")
    notes.extend(_uneven_note(sizes, smallest))
    return Capacity(draid.notation, len(sizes), sum(sizes), usable, draid.parity, draid.parity, tuple(notes))


def _mirrored_usable(sizes: Sequence[int], copies: int) -> int:
    """Most data that `copies` copies on distinct devices can hold (btrfs allocates each chunk
    on the devices with the most free space, which reaches this bound): the smallest of
    (total - the j largest devices) / (copies - j) for j = 0 .. copies-1."""
    ordered = sorted(sizes, reverse=True)
    total = sum(ordered)
    return min((total - sum(ordered[:j])) // (copies - j) for j in range(copies))


def _striped_usable(sizes: Sequence[int], parity: int, fewest: int) -> int:
    """btrfs raid0/5/6: each chunk stripes over every device with free space left; repeat
    while enough devices have space."""
    free = sorted(sizes)
    usable = 0
    while True:
        free = [f for f in free if f > 0]
        if len(free) < max(fewest, parity + 1):
            return usable
        step = free[0]
        usable += (len(free) - parity) * step
        free = [f - step for f in free]


def btrfs(profile: str, sizes: Sequence[int]) -> Capacity:
    """btrfs data profiles; unequal devices are filled the way btrfs allocates chunks.
    Metadata chunks (raid1 by default) and the global reserve take a further share."""
    copies, parity, fewest = BTRFS_PROFILES[profile]
    n = len(sizes)
    _need(n, fewest, profile)
    raw = sum(sizes)
    if profile == "btrfs-single":
        usable = raw
    elif copies > 1:
        usable = _mirrored_usable(sizes, copies)
    else:
        usable = _striped_usable(sizes, parity, fewest)
    tolerated = max(copies - 1, parity)
    notes = ["data profile only: metadata chunks and the global reserve are not subtracted"]
    if parity:
        notes.append("btrfs documents raid5/6 as not for production (write hole); keep metadata raid1c3/raid1c4")
    if tolerated == 0:
        notes.append("no redundancy: a failed device loses the data on it")
    return Capacity(profile, n, raw, usable, tolerated, tolerated, tuple(notes))


def minio_erasure(sizes: Sequence[int], set_size: int | None = None, parity: int | None = None) -> Capacity:
    """MinIO erasure coding: the drives form equal erasure sets of N drives; each object is
    split into N - P data and P parity shards, so usable = (N - P) / N of each set. A set
    survives P lost drives for reads; with P = N/2 writes need one more drive than reads."""
    n = len(sizes)
    default_size = minio_default_set_size(n)
    if set_size is None:
        if default_size is None:
            raise InputError(f"MinIO cannot split {n} drives into equal erasure sets of 2 to 16",
                             "give --set-size, or a drive count with such a divisor")
        set_size = default_size
    if n % set_size or (set_size not in MINIO_SET_SIZES and not (set_size == n == 1)):
        raise InputError(f"--set-size {set_size} must divide the {n} drives and be from 2 to 16")
    default_parity = minio_default_parity(set_size)
    parity = default_parity if parity is None else parity
    if not 0 <= parity <= set_size // 2:
        raise InputError(f"--parity EC:{parity} is more than half of a {set_size}-drive set",
                         f"MinIO allows EC:0 to EC:{set_size // 2} here")
    sets = n // set_size
    smallest = min(sizes)
    which = "MinIO's default" if parity == default_parity else f"not MinIO's default (EC:{default_parity})"
    notes = [f"EC:{parity} is {which} for {set_size}-drive sets"]
    if parity and parity * 2 == set_size:
        notes.append(f"parity is half the set: reads survive {parity} lost drives per set, writes {parity - 1}")
    notes.extend(_uneven_note(sizes, smallest))
    label = f"{MINIO_EC} EC:{parity}, {sets} set{'s' if sets > 1 else ''} of {set_size}"
    return Capacity(label, n, sum(sizes), sets * (set_size - parity) * smallest, parity, parity * sets, tuple(notes))


# The layout-specific options and the layouts they belong to; a stray one is an error, not ignored.
_OPTION_FLAGS = {"stripes": "--stripes", "vdevs": "--vdevs", "draid_data": "--draid-data",
                 "draid_spares": "--draid-spares", "set_size": "--set-size", "parity": "--parity"}


def option_applies(option: str, layout: str) -> bool:
    """Whether a layout-specific option (a LayoutSpec field name) belongs to `layout`."""
    family = layout_family(layout)
    return {"stripes": layout == "lvm-striped", "vdevs": family == "raidz", "draid_data": family == "draid",
            "draid_spares": family == "draid", "set_size": family == "minio", "parity": family == "minio"}[option]


def _check_applicable(spec: LayoutSpec) -> None:
    for name, flag in _OPTION_FLAGS.items():
        if getattr(spec, name) is not None and not option_applies(name, spec.layout):
            raise InputError(f"{flag} does not apply to layout {spec.layout}",
                             "drop it, or choose the layout it belongs to")


def usable_capacity(spec: LayoutSpec) -> Capacity:
    """Usable capacity and fault tolerance of `spec`."""
    if not spec.disk_sizes:
        raise InputError("no disks given")
    if min(spec.disk_sizes) <= 0:
        raise InputError("a disk size must be above 0")
    family = layout_family(spec.layout)
    _check_applicable(spec)
    sizes = spec.disk_sizes
    if family == "md":
        return md_raid(spec.layout, sizes)
    if family == "lvm":
        return lvm(spec.layout, sizes, spec.stripes)
    if family == "raidz":
        return raidz(spec.layout, sizes, spec.vdevs)
    if family == "draid":
        return draid(resolve_draid(spec), sizes)
    if family == "btrfs":
        return btrfs(spec.layout, sizes)
    return minio_erasure(sizes, spec.set_size, spec.parity)
