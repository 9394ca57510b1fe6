"""What a layout's members should give, from one member measured alone: the model set next to
what a fault run measured (issue 13), so that a layout far from its model is said to be.

A bandwidth model, and its assumption: each disk a read touches delivers the member's measured
sequential speed, and nothing else (CPU, seeks, caches) limits. A read touches:
  md RAID 0/5/6/10: as many members as it spans chunks (parity chunks are skipped, not read),
      at most all of them; RAID 1: one member per stream;
  ZFS raidz: the record's data columns (disks - parity); dRAID: its d data disks; and with
      primarycache=metadata (or none) a read smaller than the record reads the whole record
      each time, so only block / recordsize of what the disks deliver is the workload's;
  btrfs raid1/raid1c3/raid1c4: one copy per stream (the mirror is picked per process);
      raid10: half the devices' 64 KiB stripes it spans; raid5/6: the data stripes it spans;
  and once it spans them all, the whole layout.
A large sequential write (active-full, S3 PUT) moves data + redundancy, every member writing
at the member's measured write speed; the data part is what the workload sees:
  md RAID 0: all members; RAID 1: one member's worth (every mirror writes it all); RAID 10:
      half of them; RAID 5/6: members - parity (full stripes, parity computed, not read);
  ZFS stripe/mirror/raidz: likewise; dRAID: (c - s) x d / (d + p) (spares take no writes);
  btrfs raid1/1c3/1c4: one copy's worth per chunk; raid10: half; raid5/6: devices - parity;
  MinIO EC:N over n drives: n - N (the parity shards are written beside the data).

The rebuild model is `size rebuild`'s (sizing/rebuild.py) at the member's speed, or at md's
speed_limit_max when that is lower.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from backupbench.layout_model import minio_default_parity, minio_set_size
from backupbench.sizing.capacity import LayoutSpec
from backupbench.sizing.rebuild import rebuild_time
from backupbench.units import parse_size

MD_DEFAULT_CHUNK = 512 * 1024
ZFS_DEFAULT_RECORDSIZE = 128 * 1024
# btrfs stripes raid0/10/5/6 chunks in 64 KiB pieces (BTRFS_STRIPE_LEN).
BTRFS_STRIPE = 64 * 1024
# Beyond this the model is said to be off (the threshold).
MODEL_TOLERANCE = 0.25


@dataclass(frozen=True)
class Expected:
    value: float
    why: str


def _filesystem(layout: dict[str, Any]) -> str:
    """The filesystem a recipe layout makes: its `filesystem.type`; none without one."""
    return (layout.get("filesystem") or {}).get("type") or "none"


def _zfs_spec(layout: dict[str, Any], sizes: tuple[int, ...]) -> LayoutSpec:
    vdev = layout.get("vdev", "raidz2")
    if vdev in ("stripe", "mirror"):
        # size models no ZFS stripe or mirror: md's RAID 0 and 1 stand for them, bare.
        return LayoutSpec({"stripe": "raid0", "mirror": "raid1"}[vdev], sizes, filesystem="none")
    record = (layout.get("properties") or {}).get("recordsize")
    zfs = {"ashift": layout.get("ashift"), "recordsize": parse_size(record) if record else None}
    if vdev.startswith("draid"):
        return LayoutSpec(vdev, sizes, draid_data=layout.get("draid_data"),
                          draid_spares=layout.get("draid_spares") or 0, **zfs)
    return LayoutSpec(vdev, sizes, **zfs)


def sizing_spec(layout: dict[str, Any], disk_bytes: int) -> LayoutSpec | None:
    """A recipe's layout entry (as stored with the run) as `size`'s layout, or None."""
    count = len(layout.get("devices") or ())
    sizes = (disk_bytes,) * count
    if layout.get("kind") == "mdraid":
        return LayoutSpec(f"raid{layout['level']}", sizes, filesystem=_filesystem(layout))
    if layout.get("kind") == "zfs":
        return _zfs_spec(layout, sizes)
    if layout.get("kind") == "btrfs":
        return LayoutSpec(f"btrfs-{layout.get('data', 'single')}", sizes, btrfs_metadata=layout.get("metadata"))
    if layout.get("kind") == "minio-ec":
        filesystem = _filesystem(layout)
        return LayoutSpec("minio-ec", sizes, parity=layout.get("parity"),
                          filesystem=filesystem if filesystem != "none" else None)
    return None


def _btrfs_read(layout: dict[str, Any], count: int, block: int) -> tuple[int, str]:
    profile = layout.get("data", "single")
    spans = math.ceil(block / BTRFS_STRIPE)
    if profile.startswith("raid1") and profile != "raid10":
        return 1, f"btrfs {profile}: one copy per stream"
    data_disks = {"raid10": count // 2, "raid5": count - 1, "raid6": count - 2}.get(profile, count)
    touched = max(1, min(data_disks, spans))
    return touched, f"btrfs {profile}: a {block // 1024} KiB read spans {touched} of {data_disks} data stripes"


def disks_a_read_touches(layout: dict[str, Any], block: int) -> tuple[int, str]:
    count = len(layout.get("devices") or ())
    if layout.get("kind") == "mdraid":
        level = layout["level"]
        if level == 1:
            return 1, "RAID 1: one member per stream"
        chunk = layout.get("chunk") or MD_DEFAULT_CHUNK
        touched = min(count, math.ceil(block / chunk))
        return touched, f"a {block // 1024} KiB read spans {touched} of {count} members ({chunk // 1024} KiB chunks)"
    if layout.get("kind") == "btrfs":
        return _btrfs_read(layout, count, block)
    if layout.get("kind") == "minio-ec":
        data, parity, set_size = _minio_shards(layout, count)
        return data, f"EC:{parity}: an object is read from its {data} data shards"
    vdev = layout.get("vdev", "raidz2")
    if vdev.startswith("draid"):
        data = layout.get("draid_data") or 8
        return data, f"dRAID: a record is spread over its {data} data disks"
    if vdev.startswith("raidz"):
        data = count - int(vdev[-1])
        return data, f"raidz: a record is spread over {data} data columns"
    if vdev == "mirror":
        return 1, "mirror: one side per stream"
    return count, "stripe: every disk"


def record_read_share(layout: dict[str, Any], block: int) -> tuple[float, str]:
    """The share of the bytes a ZFS layout reads that the workload asked for: a record is read
    whole (its checksum covers it all), so a read smaller than `recordsize` reads the whole
    record; with primarycache=metadata (or none) the rest is not kept, and the next read of
    the same record reads it again. 1.0 and '' where that cannot happen."""
    properties = layout.get("properties") or {}
    if layout.get("kind") != "zfs" or properties.get("primarycache", "all") == "all":
        return 1.0, ""
    record = parse_size(properties.get("recordsize", ZFS_DEFAULT_RECORDSIZE))
    if block >= record:
        return 1.0, ""
    return block / record, (f"each {block // 1024} KiB read reads its whole {record // 1024} KiB record, which "
                            f"primarycache={properties['primarycache']} does not keep: x {block / record:.2g}")


def expected_read(layout: dict[str, Any], member_bw: float, block: int) -> Expected:
    touched, why = disks_a_read_touches(layout, block)
    share, reread = record_read_share(layout, block)
    if share < 1.0:
        return Expected(touched * member_bw * share, f"{touched} x member x {share:.2g} ({why}; {reread})")
    return Expected(touched * member_bw, f"{touched} x member ({why})")


def _minio_shards(layout: dict[str, Any], count: int) -> tuple[int, int, int]:
    """(data, parity, set size) of a minio-ec layout's erasure sets."""
    set_size = minio_set_size(count) or count
    parity = layout["parity"] if layout.get("parity") is not None else minio_default_parity(set_size)
    return set_size - parity, parity, set_size


def data_share_of_writes(layout: dict[str, Any]) -> tuple[float, str]:
    """How many members' worth of a sequential write is the workload's data (see the module doc)."""
    count = len(layout.get("devices") or ())
    kind = layout.get("kind")
    if kind == "mdraid":
        level = layout["level"]
        disks = {0: count, 1: 1, 10: count / 2, 5: count - 1, 6: count - 2}[level]
        return disks, f"RAID {level}: {disks:g} of {count} members carry data"
    if kind == "btrfs":
        profile = layout.get("data", "single")
        disks = {"raid10": count / 2, "raid5": count - 1, "raid6": count - 2, "raid0": count}.get(profile, 1)
        return disks, f"btrfs {profile}: {disks:g} members' worth of data"
    if kind == "minio-ec":
        data, parity, set_size = _minio_shards(layout, count)
        return count * data / set_size, f"EC:{parity} in sets of {set_size}: {data} of {set_size} shards data"
    vdev = layout.get("vdev", "raidz2")
    if vdev.startswith("draid"):
        parity, data, spares = int(vdev[5]), layout.get("draid_data") or 8, layout.get("draid_spares") or 0
        disks = (count - spares) * data / (data + parity)
        return disks, f"dRAID: {count - spares} disks write, {data} of {data + parity} columns data"
    if vdev.startswith("raidz"):
        return count - int(vdev[-1]), f"raidz: {count - int(vdev[-1])} data columns"
    return (1, "mirror: every side writes it all") if vdev == "mirror" else (count, "stripe: every disk")


def expected_write(layout: dict[str, Any], member_write_bw: float) -> Expected:
    disks, why = data_share_of_writes(layout)
    return Expected(disks * member_write_bw, f"{disks:g} x member write ({why})")


def expected_rebuild_seconds(layout: dict[str, Any], member_bytes: int, member_bw: float, *,
                             used_percent: float, distributed: bool, speed_limit_max: int | None) -> Expected | None:
    spec = sizing_spec(layout, member_bytes)
    if spec is None:
        return None
    rate = min(member_bw, speed_limit_max) if speed_limit_max else member_bw
    estimate = rebuild_time(spec, max(1, int(rate)), max(0.001, min(100.0, used_percent)))
    if distributed and estimate.distributed is not None:
        return Expected(estimate.distributed.seconds, f"size rebuild: {estimate.distributed.label}")
    return Expected(estimate.classic.seconds, f"size rebuild: {estimate.classic.label}")


def error(measured: float, model: float) -> float | None:
    """(measured - model) / model: +0.30 = 30% more than the model."""
    return (measured - model) / model if model else None


def off(relative_error: float | None) -> bool:
    return relative_error is not None and abs(relative_error) > MODEL_TOLERANCE
