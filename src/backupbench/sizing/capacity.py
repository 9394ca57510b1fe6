"""Usable capacity and fault tolerance of a disk layout, worked out from the disk sizes the way
the layout's own software counts its space (issue 41).

Three figures, exact integer bytes:
- `data_area`: the disks less their redundancy and nothing else ((n - 2) x disk for RAID 6), what
  a vendor's calculator says;
- `reported`: what the storage itself says of the new, empty layout (`reported_by` names the
  command: `df -B1`, `zfs list -p`, `btrfs filesystem usage -b`, MinIO's admin API);
- `usable`: the data it takes before it refuses writes, which the repository plan holds the
  backups against. It differs from `reported` only where the software's own rule says so: a ZFS
  recordsize other than 128 KiB, btrfs's metadata growing with the data, MinIO's 1% fill limit.
Each family's rules and their sources: sizing/capacity_zfs.py (OpenZFS), capacity_fs.py
(xfsprogs, e2fsprogs, the kernel's statfs), capacity_blockdev.py (mdadm, LVM),
capacity_btrfs.py (btrfs-progs, the kernel's chunk allocator), capacity_minio.py (MinIO).
The notes say what each layout loses between the data area and what it holds.

"failures_tolerated" is how many disks may fail at once, whichever they are, without losing
data; "failures_best_case" is how many may fail if the failures fall on the luckiest disks
(one per mirror pair, one parity's worth per vdev or erasure set). Both, the fewest disks and
MinIO's defaults come from layout_model, as the recipe's layouts and the fault rules take them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

from backupbench import layout_model
from backupbench.errors import InputError
from backupbench.sizing import capacity_zfs as zfs
from backupbench.sizing.capacity_blockdev import MD_CHUNK, lvm_lv_bytes, md_array_bytes
from backupbench.sizing.capacity_btrfs import balanced_room, btrfs_space
from backupbench.sizing.capacity_fs import ext4_space, xfs_space
from backupbench.sizing.capacity_minio import minio_space
from backupbench.sizing.capacity_spec import (
    BTRFS_LAYOUTS, DEFAULT_FILESYSTEM, DRAID_PARITY, FILESYSTEMS, LAYOUTS, LVM_KINDS, LVM_STRIPE, MD_LEVELS,
    MINIO_EC, RAIDZ_PARITY, ZFS_DEFAULT_DRAID_DATA, Draid, LayoutSpec, check_applicable, checked_draid,
    is_layout_name, layout_family, option_applies, parse_draid, resolve_draid,
)

# Where the sizing code finds a layout's names and MinIO's defaults; capacity_spec and
# layout_model own them.
__all__ = ["BTRFS_LAYOUTS", "DRAID_PARITY", "LAYOUTS", "LVM_KINDS", "MD_LEVELS", "MINIO_EC", "RAIDZ_PARITY",
           "ZFS_DEFAULT_DRAID_DATA", "Capacity", "Draid", "LayoutSpec", "checked_draid", "is_layout_name",
           "layout_family", "minio_default_parity", "minio_default_set_size", "option_applies", "parse_draid",
           "resolve_draid", "usable_capacity"]
minio_default_parity = layout_model.minio_default_parity
minio_default_set_size = layout_model.minio_set_size


@dataclass(frozen=True)
class Capacity:
    layout: str  # as built, e.g. 'raid6', 'draid2:3d:45c:2s', 'minio-ec EC:4, 3 sets of 15'
    disks: int
    raw: int  # bytes, the sum of the disks
    usable: int  # bytes of data it takes before it refuses writes (see the module doc)
    failures_tolerated: int
    failures_best_case: int
    notes: tuple[str, ...] = ()
    data_area: int = 0  # the disks less their redundancy alone
    reported: int = 0  # what the storage says of the new layout
    reported_by: str = ""  # the command that says it

    @property
    def efficiency(self) -> float:
        """Usable as a percentage of raw."""
        return 100.0 * self.usable / self.raw if self.raw else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "notes": list(self.notes), "efficiency_percent": round(self.efficiency, 4)}


def _uneven_note(sizes: Sequence[int], used_per_disk: int) -> tuple[str, ...]:
    unused = sum(sizes) - used_per_disk * len(sizes)
    if unused <= 0:
        return ()
    return (f"disks differ in size: each contributes only the smallest one's size; {unused:,} bytes unused",)


def _need(count: int, at_least: int, layout: str) -> None:
    if count < at_least:
        raise InputError(f"{layout} needs at least {at_least} disks, got {count}")


def _tb(n_bytes: int) -> str:
    return f"{n_bytes / 10**12:,.2f} TB" if n_bytes >= 10**11 else f"{n_bytes / 10**9:,.2f} GB"


def _binary(n_bytes: int) -> str:
    return f"{n_bytes // 2**30:,} GiB" if n_bytes >= 2**30 else f"{n_bytes // 2**20:,} MiB"


def _shortfall(usable: int, data_area: int, how: str) -> str:
    """The note that says what a layout loses between its data area and what it holds."""
    if data_area <= 0:
        return how
    share = 100.0 * (data_area - usable) / data_area
    return f"holds {_tb(usable)}, {share:.1f}% under its data area of {_tb(data_area)}: {how}"


@dataclass(frozen=True)
class _Held:
    usable: int
    reported: int
    reported_by: str
    how: str


def _on_block_device(device: int, filesystem: str, what: str, stripe: tuple[int, int] = (0, 0)) -> _Held:
    """What a new filesystem on `device` bytes (md's or LVM's) holds; `stripe`: its stripe unit
    and width in bytes, which mkfs.xfs aligns to."""
    if filesystem == "none":
        return _Held(device, device, f"blockdev --getsize64 {what}", f"{what} of {device:,} bytes, no filesystem")
    space = xfs_space(device, *stripe) if filesystem == "xfs" else ext4_space(device)
    return _Held(space.available, space.available, f"df -B1 (available) of the {filesystem} on {what}",
                 f"{what} of {device:,} bytes; {space.detail}")


def _filesystem(spec: LayoutSpec) -> str:
    filesystem = spec.filesystem or DEFAULT_FILESYSTEM
    if filesystem not in FILESYSTEMS:
        raise InputError(f"--filesystem {filesystem}: not one size models", "use xfs, ext4 or none")
    return filesystem


def md_raid(level: str, sizes: Sequence[int], filesystem: str = DEFAULT_FILESYSTEM) -> Capacity:
    """md RAID with a filesystem on the array (capacity_blockdev.md_array_bytes, then
    capacity_fs). RAID 0 concatenates unequal members in zones, so it uses all of them; the others
    use the smallest member's size on every member. RAID 10 is md's default near=2 layout (two
    copies of each chunk, any member count from 2); mkfs.xfs aligns to the chunk and the data
    members, as md reports them."""
    number, n = MD_LEVELS[level], len(sizes)
    _need(n, layout_model.MD_MIN_MEMBERS[number], level)
    smallest, raw = min(sizes), sum(sizes)
    data_area = {0: raw, 1: smallest, 5: (n - 1) * smallest, 6: (n - 2) * smallest, 10: n * smallest // 2}[number]
    # md's io_opt, which mkfs.xfs takes as the stripe width: the chunk times the data members
    # (RAID 10: the members over the 2 copies when they divide evenly; raid10_set_io_opt).
    width = {0: n, 5: n - 1, 6: n - 2, 10: n // 2 if n % 2 == 0 else n}.get(number, 0)
    stripe = (MD_CHUNK, MD_CHUNK * width) if width else (0, 0)
    held = _on_block_device(md_array_bytes(number, sizes), filesystem, f"the md RAID {number} array", stripe)
    notes: tuple[str, ...] = ()
    if number == 0:
        notes = ("no redundancy: any failed disk loses the array",)
    elif number == 10:
        notes = ("2 copies of each chunk: a second failure is survived only if it hits another pair",)
    notes += (_shortfall(held.usable, data_area, held.how),)
    if number:
        notes += _uneven_note(sizes, smallest)
    return Capacity(level, n, raw, held.usable, layout_model.md_survives(number, n),
                    layout_model.md_survives_at_best(number, n), notes, data_area, held.reported, held.reported_by)


def lvm(kind: str, sizes: Sequence[int], stripes: int | None = None,
        filesystem: str = DEFAULT_FILESYSTEM) -> Capacity:
    """LVM over the disks as PVs, with a filesystem on the LV (capacity_blockdev.lvm_lv_bytes).
    Linear: every extent, PVs may differ. Striped (-i stripes, -I 64 KiB): stripes x the smallest
    PV; space beyond that is left over."""
    n, raw = len(sizes), sum(sizes)
    notes: tuple[str, ...] = ("no redundancy of its own: any failed PV loses the LV (build it on RAID LUNs, "
                              "field note A)",)
    if kind == "lvm-linear":
        held = _on_block_device(lvm_lv_bytes(sizes), filesystem, "the linear LV")
        return Capacity(kind, n, raw, held.usable, 0, 0, notes + (_shortfall(held.usable, raw, held.how),), raw,
                        held.reported, held.reported_by)
    _need(n, 2, kind)
    stripes = n if stripes is None else stripes
    if not 2 <= stripes <= n:
        raise InputError(f"--stripes must be from 2 to the number of disks ({n}), not {stripes}")
    data_area = stripes * min(sizes)
    device = lvm_lv_bytes([min(sizes)] * stripes, stripes)
    held = _on_block_device(device, filesystem, "the striped LV", (LVM_STRIPE, LVM_STRIPE * stripes))
    if raw > data_area:
        notes += (f"{raw - data_area:,} bytes left over: a stripe set takes the smallest PV's size from "
                  f"each of {stripes} PVs",)
    return Capacity(f"{kind} (-i {stripes})", n, raw, held.usable, 0, 0,
                    notes + (_shortfall(held.usable, data_area, held.how),), data_area, held.reported,
                    held.reported_by)


def _zfs_notes(space: zfs.PoolSpace, data_area: int, ashift: int, width: str) -> str:
    overhead = data_area - space.reported
    return _shortfall(space.holds, data_area, (
        f"OpenZFS reports {_tb(space.reported)} (zfs list): partitions and labels, {space.metaslabs:,} metaslabs "
        f"of {_binary(2**space.ms_shift)} per vdev, a 128 KiB block on {width} at ashift {ashift} "
        f"counted as {space.deflate_ratio}/512 of its space, slop {space.slop / 2**30:,.1f} GiB, the embedded "
        f"log {space.embedded_log / 2**30:,.1f} GiB ({_tb(overhead)} in all); {space.recordsize // 1024} KiB "
        "records"))


def raidz(kind: str, sizes: Sequence[int], vdevs: int | None = None, ashift: int | None = None,
          recordsize: int | None = None) -> Capacity:
    """ZFS raidz1/2/3: the disks split evenly into `vdevs` raidz vdevs over whole disks, each
    storing (width - parity) disks' worth of data before ZFS's own accounting
    (capacity_zfs.pool_space)."""
    parity, n = RAIDZ_PARITY[kind], len(sizes)
    vdevs = 1 if vdevs is None else vdevs
    if vdevs < 1 or n % vdevs:
        raise InputError(f"{n} disks do not split evenly into {vdevs} raidz vdevs", "give --vdevs a divisor of --disks")
    width = n // vdevs
    _need(width, layout_model.ZFS_MIN_MEMBERS[kind], f"each {kind} vdev")
    smallest, ashift = min(sizes), ashift or zfs.DEFAULT_ASHIFT
    space = zfs.pool_space(zfs.Vdev(width, parity), vdevs, smallest, ashift=ashift,
                           recordsize=recordsize or zfs.DEFAULT_RECORDSIZE)
    data_area = vdevs * (width - parity) * smallest
    notes = (_zfs_notes(space, data_area, ashift, f"a {width}-wide {kind}"),) + _uneven_note(sizes, smallest)
    label = kind if vdevs == 1 else f"{vdevs} x {kind} of {width}"
    return Capacity(label, n, sum(sizes), space.holds, parity, parity * vdevs, notes, data_area, space.reported,
                    "zfs list -p -o used,available (their sum)")


def draid(draid: Draid, sizes: Sequence[int], ashift: int | None = None, recordsize: int | None = None) -> Capacity:
    """ZFS dRAID over whole disks: (children - spares) x d / (d + p) of the disks before ZFS's
    own accounting (capacity_zfs.pool_space). The distributed spares hold no data; a block is
    padded to whole rows of d data sectors, so small records lose much more than 128 KiB ones."""
    smallest, ashift = min(sizes), ashift or zfs.DEFAULT_ASHIFT
    space = zfs.pool_space(zfs.Vdev(draid.children, draid.parity, draid.data, draid.spares), 1, smallest,
                           ashift=ashift, recordsize=recordsize or zfs.DEFAULT_RECORDSIZE)
    data_area = (draid.children - draid.spares) * draid.data * smallest // (draid.data + draid.parity)
    notes = [_zfs_notes(space, data_area, ashift, f"{draid.data} data + {draid.parity} parity")]
    if draid.spares:
        notes.append(f"after each distributed-spare rebuild, one more disk may fail (up to {draid.spares} "
                     "more in turn, until the spares are used)")
    notes.extend(_uneven_note(sizes, smallest))
    return Capacity(draid.notation, len(sizes), sum(sizes), space.holds, draid.parity, draid.parity, tuple(notes),
                    data_area, space.reported, "zfs list -p -o used,available (their sum)")


def btrfs(profile: str, sizes: Sequence[int], metadata: str | None = None) -> Capacity:
    """btrfs: the data profile's copies over the devices as the kernel allocates chunks, less
    the metadata profile's chunks (capacity_btrfs.btrfs_space). A failure the metadata profile
    cannot survive loses the filesystem, whatever the data's copies (layout_model)."""
    data = profile.removeprefix("btrfs-")
    metadata = metadata or layout_model.btrfs_default_metadata(len(sizes))
    if metadata not in layout_model.BTRFS_PROFILES:
        raise InputError(f"--btrfs-metadata {metadata}: not a btrfs profile",
                         "use one of " + ", ".join(layout_model.BTRFS_PROFILES))
    n, raw = len(sizes), sum(sizes)
    _need(n, layout_model.btrfs_min_devices(data, metadata), f"{profile} with metadata {metadata}")
    spec = layout_model.BTRFS_PROFILES[data]
    space = btrfs_space(data, metadata, sizes)
    data_area = balanced_room(data, sizes)
    tolerated = layout_model.btrfs_survives(data, metadata)
    notes = [_shortfall(space.holds, data_area, space.detail)]
    if spec.parity:
        notes.append("btrfs documents raid5/6 as not for production (write hole); keep metadata raid1c3/raid1c4")
    if tolerated < spec.tolerates:
        notes.append(f"metadata {metadata} survives fewer failed devices than data {data}: the layout survives "
                     f"{tolerated}")
    elif tolerated == 0:
        notes.append("no redundancy: a failed device loses the data on it")
    label = profile if metadata == layout_model.btrfs_default_metadata(n) else f"{profile} (metadata {metadata})"
    return Capacity(label, n, raw, space.holds, tolerated, tolerated, tuple(notes), data_area, space.estimated_free,
                    "btrfs filesystem usage -b (Free (estimated))")


def _erasure_sets(n: int, set_size: int | None, parity: int | None) -> layout_model.ErasureSets:
    if set_size is None and layout_model.minio_set_size(n) is None:
        raise InputError(f"MinIO cannot split {n} drives into equal erasure sets of 2 to 16",
                         "give --set-size, or a drive count with such a divisor")
    if set_size is not None and (n % set_size or (set_size not in layout_model.MINIO_SET_SIZES
                                                  and not set_size == n == 1)):
        raise InputError(f"--set-size {set_size} must divide the {n} drives and be from 2 to 16")
    sets = layout_model.minio_sets(n, parity, set_size)
    assert sets is not None
    if not 0 <= sets.parity <= sets.size // 2:
        raise InputError(f"--parity EC:{sets.parity} is more than half of a {sets.size}-drive set",
                         f"MinIO allows EC:0 to EC:{sets.size // 2} here")
    return sets


def minio_erasure(sizes: Sequence[int], set_size: int | None = None, parity: int | None = None,
                  filesystem: str = DEFAULT_FILESYSTEM) -> Capacity:
    """MinIO erasure coding over drives that each hold a filesystem: equal erasure sets of N
    drives, each object split into N - P data and P parity shards (capacity_minio.minio_space).
    A set survives P lost drives for reads; with P = N/2 writes need one more drive than reads."""
    n = len(sizes)
    if filesystem == "none":
        raise InputError("--filesystem none: MinIO's drives are filesystems", "use xfs or ext4")
    sets = _erasure_sets(n, set_size, parity)
    smallest = min(sizes)
    space = minio_space(sets, sizes, filesystem)
    default = layout_model.minio_default_parity(sets.size)
    which = "MinIO's default" if sets.parity == default else f"not MinIO's default (EC:{default})"
    data_area = sets.sets * (sets.size - sets.parity) * smallest
    notes = [f"EC:{sets.parity} is {which} for {sets.size}-drive sets",
             _shortfall(space.holds, data_area, f"MinIO reports {_tb(space.reported)} usable (its data drives' "
                        f"{filesystem} totals) and refuses writes with 1% of its drives left; "
                        f"{space.drive.detail}")]
    if sets.parity and sets.parity * 2 == sets.size:
        notes.append(f"parity is half the set: reads survive {sets.parity} lost drives per set, "
                     f"writes {sets.parity - 1}")
    notes.extend(_uneven_note(sizes, smallest))
    label = f"{MINIO_EC} EC:{sets.parity}, {sets.sets} set{'s' if sets.sets > 1 else ''} of {sets.size}"
    return Capacity(label, n, sum(sizes), space.holds, sets.survives, sets.parity * sets.sets, tuple(notes),
                    data_area, space.reported, "MinIO's admin API storage info (usable capacity)")


def usable_capacity(spec: LayoutSpec) -> Capacity:
    """Usable capacity and fault tolerance of `spec`."""
    if not spec.disk_sizes:
        raise InputError("no disks given")
    if min(spec.disk_sizes) <= 0:
        raise InputError("a disk size must be above 0")
    family = layout_family(spec.layout)
    check_applicable(spec)
    sizes = spec.disk_sizes
    if family == "md":
        return md_raid(spec.layout, sizes, _filesystem(spec))
    if family == "lvm":
        return lvm(spec.layout, sizes, spec.stripes, _filesystem(spec))
    if family == "raidz":
        return raidz(spec.layout, sizes, spec.vdevs, spec.ashift, spec.recordsize)
    if family == "draid":
        return draid(resolve_draid(spec), sizes, spec.ashift, spec.recordsize)
    if family == "btrfs":
        return btrfs(spec.layout, sizes, spec.btrfs_metadata)
    return minio_erasure(sizes, spec.set_size, spec.parity, _filesystem(spec))
