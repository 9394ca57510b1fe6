"""btrfs's space over some devices: what `btrfs filesystem usage -b` estimates free on a new
filesystem, and the data it takes before it is full.

What mkfs.btrfs (btrfs-progs 6.2) allocates (mkfs/main.c, kernel-shared/volumes.c
btrfs_alloc_chunk): a system chunk of 8 MiB and a metadata chunk of 256 MiB (1 GiB once the
devices hold more than 50 GiB) in the metadata profile, a data chunk of 1 GiB per device
stripe in the data profile, each cut to 10% of the filesystem over its stripes (in whole 64 KiB
stripe lengths) and placed on the last devices given that have room; a profile left `single` keeps
mkfs's bootstrap chunk on the first device instead (4 MiB system, 8 MiB metadata, 8 MiB data).

"Free (estimated)" (cmds/filesystem-usage.c): the data chunks' free space plus the unallocated
bytes over the data profile's ratio (copies, or stripes over data stripes for raid5/6).

The data it holds: the kernel never allocates a device's first 1 MiB
(BTRFS_DEVICE_RANGE_RESERVED) and makes chunk after chunk on the devices with the most room, each
stripe as large as the least roomy of them allows up to 1 GiB, the chunk at most 10% of the
filesystem rounded up to 16 MiB (fs/btrfs/volumes.c gather_device_info,
decide_stripe_size_regular); walked here chunk by chunk, since on small devices that leaves room
on one device a mirror cannot pair, and on devices of terabytes taken as the balanced bound
(mirrored profiles hold the least of (total - the j largest devices) / (copies - j)). Metadata
grows in its own profile by the data checksums (crc32c: 4 bytes per 4 KiB block, in 16 KiB
leaves) and keeps the global reserve free (at most 512 MiB, fs/btrfs/block-rsv.c).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from backupbench.layout_model import BTRFS_PROFILES
from backupbench.units import GiB, KiB, MiB

STRIPE_LEN = 64 * KiB
RANGE_RESERVED = MiB
SYSTEM_STRIPE = 8 * MiB
BOOTSTRAP = {"system": 4 * MiB, "metadata": 8 * MiB, "data": 8 * MiB}
LARGE_FS = 50 * GiB
CSUM_PER_BLOCK, DATA_BLOCK, LEAF, LEAF_HEADER, ITEM_HEADER = 4, 4096, 16 * KiB, 101, 25
GLOBAL_RESERVE_MAX = 512 * MiB


@dataclass(frozen=True)
class BtrfsSpace:
    estimated_free: int     # `btrfs filesystem usage -b`: Free (estimated), on the new filesystem
    holds: int              # data it takes before it is full
    metadata_raw: int       # raw bytes in metadata and system chunks when full
    detail: str


def stripes(profile: str, devices: int) -> tuple[int, int]:
    """(stripes of a chunk, data stripes of it) over `devices` with room (btrfs_raid_array)."""
    spec = BTRFS_PROFILES[profile]
    if profile in ("raid0", "raid5", "raid6"):
        return devices, devices - spec.parity
    if profile == "raid10":
        even = devices - devices % 2
        return even, even // 2
    return spec.copies, 1


def chunk_stripe(profile: str, kind: str, devices: int, total: int) -> int:
    """A new chunk's stripe size: its kind's size, cut to 10% of the filesystem over its stripes."""
    stripe = GiB if kind == "data" else (GiB if total > LARGE_FS else 256 * MiB) if kind == "metadata" \
        else SYSTEM_STRIPE
    count, data = stripes(profile, devices)
    cap = total // 10
    if stripe * data > cap:
        stripe = cap // count // STRIPE_LEN * STRIPE_LEN
    return stripe


def _place_mkfs(free: list[int], count: int, stripe: int) -> None:
    """mkfs.btrfs takes each stripe from the last devices given that have room (it walks its
    device list from the newest added), and both of dup's from the one device."""
    if count > len(free):
        free[-1] -= stripe * count
        return
    chosen = [i for i in reversed(range(len(free))) if free[i] >= stripe][:count]
    for index in chosen:
        free[index] -= stripe


def _place_most_room(free: list[int], count: int, stripe: int) -> None:
    """The kernel takes a new chunk's stripes from the devices with the most room."""
    for index in sorted(range(len(free)), key=lambda i: -free[i])[:count]:
        free[index] -= stripe


def mkfs_chunks(data: str, metadata: str, sizes: Sequence[int]) -> tuple[list[int], int, int]:
    """Each device's room after mkfs, the data chunk's logical size, and the raw bytes of the
    system and metadata chunks."""
    total, free = sum(sizes), [size - RANGE_RESERVED for size in sizes]
    data_bytes = meta_raw = 0
    for kind, profile in (("system", metadata), ("metadata", metadata), ("data", data)):
        if profile == "single":
            free[0] -= BOOTSTRAP[kind]
            data_bytes += BOOTSTRAP[kind] if kind == "data" else 0
            meta_raw += BOOTSTRAP[kind] if kind != "data" else 0
            continue
        count, data_stripes = stripes(profile, len(sizes))
        stripe = chunk_stripe(profile, kind, len(sizes), total)
        _place_mkfs(free, count, stripe)
        if kind == "data":
            data_bytes += stripe * data_stripes
        else:
            meta_raw += stripe * count
    return free, data_bytes, meta_raw


# The kernel's btrfs_raid_array: (devs_max (0: all), devs_increment, dev_stripes).
_ALLOCATION = {"single": (1, 1, 1), "dup": (1, 1, 2), "raid0": (0, 1, 1), "raid1": (2, 2, 1),
               "raid1c3": (3, 3, 1), "raid1c4": (4, 4, 1), "raid10": (0, 2, 1), "raid5": (0, 1, 1),
               "raid6": (0, 1, 1)}
# Past this many chunk stripes the devices hold thousands of chunks each, where the kernel's
# greedy allocation is within a chunk per device of the balanced bound (under 0.01% on disks of
# terabytes): the bound is taken instead of the chunk-by-chunk walk.
SIMULATED_STRIPES = 200_000


def _kernel_chunk(profile: str, free: Sequence[int], max_chunk: int) -> tuple[list[int], int, int]:
    """The next chunk the kernel makes (fs/btrfs/volumes.c gather_device_info,
    decide_stripe_size_regular): (its devices, stripe size, data stripes); no devices: none fits."""
    spec = BTRFS_PROFILES[profile]
    devs_max, increment, dev_stripes = _ALLOCATION[profile]
    order = sorted((i for i, f in enumerate(free) if f >= STRIPE_LEN * dev_stripes), key=lambda i: -free[i])
    ndevs = len(order) if not devs_max else min(len(order), devs_max)
    ndevs -= ndevs % increment
    if ndevs < spec.min_devices or ndevs == 0:
        return [], 0, 0
    chosen = order[:ndevs]
    data_stripes = (ndevs * dev_stripes - spec.parity) // spec.copies
    stripe = min(free[chosen[-1]] // dev_stripes, GiB)
    if stripe * data_stripes > max_chunk:
        stripe = min(-(-(max_chunk // data_stripes) // (16 * MiB)) * 16 * MiB, stripe)
    return chosen, stripe // STRIPE_LEN * STRIPE_LEN, data_stripes


def _data_room(profile: str, free: list[int], total: int) -> int:
    """Data the devices' remaining room takes in `profile`, chunk by chunk as the kernel
    allocates them; the balanced bound past SIMULATED_STRIPES (see the module doc)."""
    max_chunk = min(total // 10, 10 * GiB)
    if sum(max(0, f) for f in free) // GiB * len(free) > SIMULATED_STRIPES:
        return balanced_room(profile, free)
    dev_stripes, room = _ALLOCATION[profile][2], 0
    while True:
        chosen, stripe, data_stripes = _kernel_chunk(profile, free, max_chunk)
        if not stripe:
            return room
        for index in chosen:
            free[index] -= stripe * dev_stripes
        room += stripe * data_stripes


def balanced_room(profile: str, free: Sequence[int]) -> int:
    """The most data the room takes with chunks spread perfectly: mirrored profiles hold the
    least of (total - the j largest devices) / (copies - j), striped ones stripe while enough
    devices have room."""
    spec = BTRFS_PROFILES[profile]
    room = [max(0, f) for f in free]
    if profile in ("single", "raid0"):
        return sum(room)
    if profile in ("raid5", "raid6"):
        usable, left = 0, sorted(room)
        while True:
            left = [f for f in left if f > 0]
            if len(left) < max(spec.min_devices, spec.parity + 1):
                return usable
            step = left[0]
            usable += (len(left) - spec.parity) * step
            left = [f - step for f in left]
    if spec.one_device:
        return sum(room) // spec.copies
    ordered = sorted(room, reverse=True)
    return min((sum(ordered) - sum(ordered[:j])) // (spec.copies - j) for j in range(spec.copies))


def _metadata_needed(data: int) -> int:
    """Metadata bytes a full filesystem of `data` needs: the checksums in full leaves, and the
    global reserve kept free."""
    per_leaf = (LEAF - LEAF_HEADER - ITEM_HEADER) // CSUM_PER_BLOCK
    leaves = -(-(data // DATA_BLOCK) // per_leaf)
    return leaves * LEAF + min(GLOBAL_RESERVE_MAX, leaves * LEAF)


def _holds(data: str, metadata: str, sizes: Sequence[int], free: list[int], data_chunk: int,
           meta_raw: int) -> tuple[int, int]:
    """(data held when full, raw bytes of the metadata chunks added for its checksums). The
    checksums of what it holds need room, which then holds a little less: a few rounds settle it."""
    meta_count, _ = stripes(metadata, len(sizes))
    stripe = chunk_stripe(metadata, "metadata", len(sizes), sum(sizes))
    holds, added = data_chunk + _data_room(data, list(free), sum(sizes)), 0
    for _ in range(3):
        wanted = _metadata_needed(holds) - meta_raw // meta_count
        if wanted <= 0:
            break
        room, chunks = list(free), -(-wanted // stripe)
        for _ in range(chunks):
            _place_most_room(room, meta_count, stripe)
        holds, added = data_chunk + _data_room(data, room, sum(sizes)), chunks * stripe * meta_count
    return holds, added


def btrfs_space(data: str, metadata: str, sizes: Sequence[int]) -> BtrfsSpace:
    free, data_chunk, meta_raw = mkfs_chunks(data, metadata, sizes)
    count, data_stripes = stripes(data, len(sizes))
    # btrfs-progs counts the reserved first MiB of each device as unallocated.
    unallocated = sum(free) + len(sizes) * RANGE_RESERVED
    estimated = data_chunk + unallocated * data_stripes // count
    holds, added = _holds(data, metadata, sizes, free, data_chunk, meta_raw)
    detail = (f"btrfs data {data}, metadata {metadata}: {(meta_raw + added) / 10**9:,.2f} GB of metadata and "
              "system chunks when full")
    return BtrfsSpace(estimated, holds, meta_raw + added, detail)
