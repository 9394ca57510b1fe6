"""What a layout of disks should give for each backup operation, from one disk's figures: the
per-disk model a repository plan uses when a run did not measure the layout ("model").

The sequential figures are sizing/speed_model.py's (a large write moves data + redundancy, every
disk at its sequential speed; a read touches the disks its block spans). The random ones add one
figure of the disk, its access time `a` (seek + rotation; about 8 ms for a 7,200 rpm disk), and
the KB2014 operations' own shape (workloads/kb2014.py: 512 KiB blocks, queue depth, I/Os per block):
- a random 512 KiB read costs a + block / (touched x speed): the disks it touches seek together,
  then share the transfer. I/Os in flight (the operation's queue depth) run side by side on
  disjoint disks, so at most disks // touched of them (one at a time on a raidz vdev);
- a random write on a copy-on-write layout (ZFS, btrfs, MinIO) is allocated like a sequential one
  and moves at the sequential write speed; md writes in place: RAID 5/6 read the old data and
  parity, then write both (2 x (a + block / speed) on p + 1 disks), RAID 1/10 write each copy;
- a mixed operation reads 1 block and writes (ios_per_block - 1) for each block it processes, so
  its effective speed is 1 / (1 / read + (ios_per_block - 1) / write), the speed KB2014 measures.
Nothing else (CPU, network, controller, caches, read-ahead) limits: a model, uncertain by nature.
"""

from __future__ import annotations

from typing import Any

from backupbench.errors import InputError
from backupbench.sizing.capacity import (
    LayoutSpec,
    layout_family,
    minio_default_set_size,
    resolve_draid,
)
from backupbench.sizing.plan_model import Speed
from backupbench.sizing.policy import DiskModel
from backupbench.sizing.speed_model import data_share_of_writes, disks_a_read_touches
from backupbench.workloads.kb2014 import KB2014_BLOCK_SIZE, OPERATIONS

COPY_ON_WRITE = ("raidz", "draid", "btrfs", "minio")


def recipe_entry(spec: LayoutSpec) -> dict[str, Any]:
    """`spec` as the recipe layout entry speed_model reads (the inverse of speed_model.sizing_spec)."""
    devices = [f"disk{i}" for i in range(spec.disks)]
    family = layout_family(spec.layout)
    if family == "md":
        return {"kind": "mdraid", "level": int(spec.layout.removeprefix("raid")), "devices": devices}
    if family == "raidz":
        if spec.vdevs not in (None, 1):
            raise InputError(f"--vdevs {spec.vdevs}: the per-disk model knows one raidz vdev",
                             "leave --vdevs out, or give measured speeds with --from-run")
        return {"kind": "zfs", "vdev": spec.layout, "devices": devices}
    if family == "draid":
        draid = resolve_draid(spec)
        return {"kind": "zfs", "vdev": f"draid{draid.parity}", "draid_data": draid.data,
                "draid_spares": draid.spares, "devices": devices}
    if family == "btrfs":
        return {"kind": "btrfs", "data": spec.layout.removeprefix("btrfs-"), "metadata": spec.btrfs_metadata,
                "devices": devices}
    if family == "minio":
        if spec.set_size is not None and spec.set_size != minio_default_set_size(spec.disks):
            raise InputError(f"--set-size {spec.set_size}: the per-disk model knows MinIO's own set size",
                             "leave --set-size out, or give measured speeds with --from-run")
        return {"kind": "minio-ec", "parity": spec.parity, "devices": devices}
    raise InputError(f"{spec.layout} has no redundancy: not a repository candidate",
                     "choose a layout that survives a disk failure")


def random_read(entry: dict[str, Any], disks: int, speed: float, access: float, depth: int) -> tuple[float, str]:
    touched, why = disks_a_read_touches(entry, KB2014_BLOCK_SIZE)
    side_by_side = max(1, min(depth, disks // max(1, touched)))
    one = KB2014_BLOCK_SIZE / (access + KB2014_BLOCK_SIZE / (touched * speed))
    return side_by_side * one, f"{side_by_side} x random read of {touched} disk(s) ({why})"


def random_write(spec: LayoutSpec, entry: dict[str, Any], speed: float, access: float,
                 depth: int) -> tuple[float, str]:
    if layout_family(spec.layout) in COPY_ON_WRITE:
        share, why = data_share_of_writes(entry)
        return share * speed, f"copy-on-write: written like a sequential write ({why})"
    level = entry["level"]
    one_io = access + KB2014_BLOCK_SIZE / speed
    if level in (5, 6):
        parity = level - 4  # RAID 5: 1, RAID 6: 2
        side_by_side = max(1, min(depth, spec.disks // (parity + 1)))
        return (side_by_side * KB2014_BLOCK_SIZE / (2 * one_io),
                f"RAID {level}: read-modify-write of data + {parity} parity, {side_by_side} at once")
    side_by_side = {0: min(depth, spec.disks), 1: 1, 10: max(1, min(depth, spec.disks // 2))}[level]
    return side_by_side * KB2014_BLOCK_SIZE / one_io, f"RAID {level}: {side_by_side} random write(s) at once"


def model_speeds(spec: LayoutSpec, disk: DiskModel) -> dict[str, Speed]:
    """The five KB2014 operations' effective speeds on `spec`, from one disk's figures."""
    if disk.disk_speed is None:
        raise InputError(f"{spec.layout}: no measured speeds, and the per-disk model needs --disk-speed",
                         "give --disk-speed (e.g. 250MB/s for a 7,200 rpm disk) or --from-run RUN")
    entry = recipe_entry(spec)
    speed, access = float(disk.disk_speed), disk.disk_access_time
    share, write_why = data_share_of_writes(entry)
    touched, read_why = disks_a_read_touches(entry, KB2014_BLOCK_SIZE)
    speeds = {
        "active-full": Speed.single(share * speed, "model", f"{share:g} x disk write ({write_why})"),
        "restore-sequential": Speed.single(touched * speed, "model", f"{touched} x disk read ({read_why})"),
    }
    read, why = random_read(entry, spec.disks, speed, access, OPERATIONS["restore-random"].iodepth)
    speeds["restore-random"] = Speed.single(read, "model", why)
    for name in ("synthetic-full", "reverse-incremental"):
        op = OPERATIONS[name]
        read, read_how = random_read(entry, spec.disks, speed, access, op.iodepth)
        write, write_how = random_write(spec, entry, speed, access, op.iodepth)
        effective = 1 / (1 / read + (op.ios_per_block - 1) / write)
        speeds[name] = Speed.single(effective, "model", f"1 read + {op.ios_per_block - 1} write(s) per block: "
                                                         f"{read_how}; {write_how}")
    return speeds

